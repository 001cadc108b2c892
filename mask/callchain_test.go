package mask_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// TestCallChains checks grammars where a state calls a chain of frames
// each of whose starts calls the next: an object's optional properties in
// order, as the converter writes them (root-rest-k ::= ("," key value)?
// root-rest-k+1, each a frame when the object has many). The stepper
// pushes a frame only on the bytes that can enter it (entersOn): the
// masks along random walks are the Earley reference's, and on Llama-3
// the first mask after a property's value (the level below the string's
// end, a walk of the trie nodes after its quote) costs at most 60% of the
// work units it costs with every call pushed on every byte (the work is
// counted, so the comparison is exact, not timed).
func TestCallChains(t *testing.T) {
	_, llama := loadBench(t)
	v := testVocab(t, append([]string{"\"property", "_number", "_1", "2\":", ",\"", "\"}", "\",\"", "x\",\"property_number_3\":\"", "\",\"prop"}, commonExtra...)...)
	props := make([]string, 40)
	for i := range props {
		props[i] = fmt.Sprintf(`"property_number_%d":{"type":"string"}`, i)
	}
	for _, tc := range []struct{ name, schema, grammar, prefix string }{
		{name: "schema", schema: `{"type":"object","properties":{` + strings.Join(props, ",") + `},"additionalProperties":false}`, prefix: `{"property_number_0":"x`},
		{name: "nested", schema: `{"type":"array","items":{"type":"object","properties":{` + strings.Join(props, ",") + `}}}`, prefix: `[{"property_number_1":"x`},
		// A chain whose frames end in a call of the root's frame (the
		// root may pop at its start: firstRoot).
		{name: "root", grammar: "root ::= \"a\" | \"(\" r1 \")\" root\nr1 ::= \"b\"? r2\nr2 ::= \"c\"? r3\nr3 ::= \"d\"? root\n", prefix: "(b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, prefix := tc.grammar, tc.prefix
			if tc.schema != "" {
				var err error
				if src, err = jsonschema2gbnf.Convert([]byte(tc.schema)); err != nil {
					t.Fatal(err)
				}
			}
			g, err := gbnf.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			// The first mask after the first property's value, on a
			// compilation that leaves every state to first use: the level
			// below the string's end steps the chain at every trie node.
			work := func() int64 {
				c, err := mask.CompileWith(g, llama, mask.Options{EagerWork: 1})
				if err != nil {
					t.Fatal(err)
				}
				m := c.NewMatcher()
				if err := m.AcceptBytes([]byte(prefix)); err != nil {
					t.Fatal(err)
				}
				_, u0 := c.LazyWork()
				m.FillMask(make([]uint32, c.Words()))
				_, u1 := c.LazyWork()
				return u1 - u0
			}
			without := func() int64 {
				defer mask.SetNoEnterSkip(true)()
				return work()
			}()
			with := work()
			t.Logf("first-use work units after %q: %d, %d with every call pushed", prefix, with, without)
			if tc.schema != "" && 10*with > 6*without {
				t.Errorf("first-use work %d units, %d with every call pushed: want at most 60%%", with, without)
			}
			crossCheck(t, g, v, 20, 60, 3)
		})
	}
}
