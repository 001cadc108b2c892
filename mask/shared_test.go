package mask_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// corpusGrammar converts JSONSchemaBench schema dataset/id (lenient) and
// parses the grammar.
func corpusGrammar(t *testing.T, dataset, id string) *gbnf.Grammar {
	t.Helper()
	raw, err := os.ReadFile(sharedtest.Path(t, "corpus", "jsonschemabench", dataset, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var warns []jsonschema2gbnf.Warning
	src, err := jsonschema2gbnf.Convert(doc.Schema, jsonschema2gbnf.Lenient(&warns))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Level-1 sets computed on first use are shared between grammars whose
// frames (and their callees, and what may follow them) are the same
// (shared.go): the masks of a grammar that takes them from the grammars
// compiled before are those it computes itself. With an eager budget of
// one unit nearly every state is computed on first use, so most of the
// states of these grammars' shared frames (strings, uri formats, numbers)
// are looked up, not walked, in all but the first grammar that has them.
func TestSharedLevel1(t *testing.T) {
	_, v := loadBench(t)
	mask.ResetShared(v)
	defer mask.ResetShared(v)
	lazy := mask.Options{EagerWork: 1}
	var shared int64
	// Two grammars whose str frame is the same but is followed by other
	// bytes ("," "]" and ";" ")"): its cross points differ, so it must
	// not be shared between them; their str is a frame (called from 40
	// places), and the third grammar shares the first one's.
	items := func(sep, end string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "root ::= \"[\" item (%q item)* %q\nitem ::= ", sep, end)
		for i := range 40 {
			if i > 0 {
				b.WriteString(" | ")
			}
			fmt.Fprintf(&b, "%q str", fmt.Sprint(i))
		}
		b.WriteString("\nstr ::= \"\\\"\" ([a-z ] | \"\\\\\" [\"\\\\nt] | \"\\\\u\" [0-9a-f]{4})* \"\\\"\"\n")
		return b.String()
	}
	grammars := []struct {
		name, src string
		corpus    [2]string
	}{
		{name: "str-comma", src: items(",", "]")},
		{name: "str-semicolon", src: items(";", ")")},
		{name: "str-comma-again", src: items(",", "]") + "other ::= \"x\"\n"},
	}
	for _, id := range [][2]string{
		{"Github_ultra", "o39230"}, {"Github_ultra", "o42127"}, {"Github_ultra", "o54621"},
		{"Github_hard", "o21199"}, {"Github_ultra", "o17072"}, {"Github_easy", "o10013"},
	} {
		grammars = append(grammars, struct {
			name, src string
			corpus    [2]string
		}{name: id[1], corpus: id})
	}
	for i, gr := range grammars {
		t.Run(gr.name, func(t *testing.T) {
			var g *gbnf.Grammar
			if gr.src != "" {
				var err error
				if g, err = gbnf.Parse(gr.src); err != nil {
					t.Fatalf("%v\n%s", err, gr.src)
				}
			} else {
				g = corpusGrammar(t, gr.corpus[0], gr.corpus[1])
			}
			restore := mask.SetShareLevel1(false)
			own, err := mask.CompileWith(g, v, lazy)
			restore()
			if err != nil {
				t.Fatal(err)
			}
			looked, err := mask.CompileWith(g, v, lazy)
			if err != nil {
				t.Fatal(err)
			}
			sameMasks(t, own, looked, nil, 8, 100, uint64(i))
			n, units := looked.LazyWork()
			t.Logf("%d computations on first use, %d units, %d shared", n, units, looked.LazyShared())
			shared += looked.LazyShared()
		})
	}
	if shared == 0 {
		t.Errorf("no level-1 set was shared between the grammars")
	}
}
