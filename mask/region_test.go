package mask_test

import (
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

// TestRegions: states that lead each other on the characters of a string
// (a key that additionalProperties allows where it does not match a
// bounded pattern; a string that must contain a name or a pattern; a
// string whose states may end it before a quote)
// take their level 1 from a region of the class's slice, eagerly and on
// first use, with masks bit for bit those of the walks without slices on
// the Llama-3 vocabulary, and an eager compile does less work than
// without regions.
func TestRegions(t *testing.T) {
	_, v := loadBench(t)
	grammars := map[string]string{
		"contains": sliceGrammars["contains"],
		"dll-path": sliceGrammars["dll-path"],
		// A string with an "=" (a frame of its own: it may be between
		// tabs): its state after one may pop, before a quote or a
		// backslash (outside the class), so the exits' parents are cross
		// points (Llama-3 has tokens such as `="` and `="#`).
		"pops": `root ::= "[" "\"" word "\"" ("," "\"" word "\"")* "]"` + "\n" +
			`word ::= [^"\\\x00-\x1F]* "=" [^"\\\x00-\x1F]* | "\\t" word "\\t"`,
	}
	addSchemas(t, grammars, map[string]string{
		"not-pattern":     `{"type":"object","properties":{"out":{"type":"object","patternProperties":{"^[a-zA-Z0-9-_ ().]{3,45}$":{"type":"integer"}},"additionalProperties":{"type":"string"}}},"required":["out"]}`,
		"contains-schema": `{"type":"array","items":{"type":"string","pattern":"(foo|bar)[0-9]"}}`,
	})
	for name, src := range grammars {
		t.Run(name, func(t *testing.T) {
			ref, eager, lazy := compileSliced(t, src, v)
			n := eager.RegionStates()
			t.Logf("%d of %d states use a region", n, eager.Stats().TopStates)
			if n == 0 {
				t.Errorf("no state uses a region")
			}
			sameMasks(t, ref, eager, nil, 8, 80, 5)
			sameMasks(t, ref, lazy, nil, 8, 80, 6)
			g, err := gbnf.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			offc := compileFull(t, g, v, func() func() { return mask.SetNoRegions(true) })
			if on, off := eager.Stats().EagerWork, offc.Stats().EagerWork; on >= off {
				t.Errorf("eager work %d with regions, %d without: want less; states %d / %d nodes %d / %d", on, off, eager.Stats().EagerStates, offc.Stats().EagerStates, eager.Stats().EagerNodes, offc.Stats().EagerNodes)
			} else {
				t.Logf("eager work %d with regions, %d without; states %d / %d nodes %d / %d", on, off, eager.Stats().EagerStates, offc.Stats().EagerStates, eager.Stats().EagerNodes, offc.Stats().EagerNodes)
			}
		})
	}
}
