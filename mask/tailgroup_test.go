package mask_test

import (
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// TestTailGroups checks grammars whose rules form tail groups (a
// pattern's automaton, with a rule per state and, under a length bound,
// per character count; see markTailGroups): lowered as labels they make
// fewer frames, and the masks along random walks are the Earley
// reference's. Grammars whose tail references are not such a group (a
// choice of objects) keep their frames.
func TestTailGroups(t *testing.T) {
	v := testVocab(t, append([]string{"@", "a@", "@b", ".c", "b.c", "___", "_\"", "x@y", "1a", "a1", "t8", "8t"}, commonExtra...)...)
	for _, tc := range []struct {
		name, schema string
		grouped      bool // fewer frames with the groups than without
	}{
		{"email", `{"type":"string","pattern":"^[a-z]+@[a-z]+\\.[a-z]+$","maxLength":64}`, true},
		{"search", `{"type":"string","pattern":".+[@].+[.]___","minLength":10,"maxLength":24}`, true},
		// Handwritten/string3 of JSONSchemaBench (lenient: its minLength
		// needs too many states).
		{"cycles", `{"type":"string","allOf":[{"pattern":"^([a-z][0-9])+$"},{"pattern":"((c1d3g3).{4,8}){6,6}"},{"pattern":"(t|8){10,10}$"},` +
			`{"anyOf":[{"not":{"pattern":"^([a-z][0-9])+$"}},{"not":{"pattern":"^((c1d3g3).{4,8}){6,6}"}},{"not":{"pattern":"(t|8){10,10}$"}}]}],"minLength":100}`, true},
		{"objects", `{"type":"array","items":{"anyOf":[` +
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"],"additionalProperties":false},` +
			`{"type":"object","properties":{"c":{"type":"boolean"},"d":{"type":"string"}},"required":["c"],"additionalProperties":false},` +
			`{"type":"object","properties":{"e":{"type":"null"}},"required":["e"],"additionalProperties":false}]}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warnings []jsonschema2gbnf.Warning
			src, err := jsonschema2gbnf.Convert([]byte(tc.schema), jsonschema2gbnf.Lenient(&warnings))
			if err != nil {
				t.Fatal(err)
			}
			g, err := gbnf.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			without := func() int {
				defer mask.SetNoTailGroups(true)()
				c, err := mask.Compile(g, v)
				if err != nil {
					t.Fatal(err)
				}
				return c.Stats().Frames
			}()
			c := crossCheck(t, g, v, 20, 40, 1)
			with := c.Stats().Frames
			if grouped := with < without; grouped != tc.grouped {
				t.Errorf("%d frames with tail groups, %d without; want grouped=%v", with, without, tc.grouped)
			}
		})
	}
}
