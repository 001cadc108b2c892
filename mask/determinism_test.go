package mask_test

import (
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

// TestCompileDeterministic compiles each bench grammar several times: the
// automaton (state numbers, transitions, calls) must come out the same
// every time, since the eager precomputation follows state order.
func TestCompileDeterministic(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases {
		g, err := gbnf.Parse(grammarOf(t, bc))
		if err != nil {
			t.Fatal(err)
		}
		var first string
		for i := range 4 {
			c, err := mask.CompileWith(g, v, mask.Options{EagerBudget: 1})
			if err != nil {
				t.Fatal(err)
			}
			d := c.Dump()
			if i == 0 {
				first = d
			} else if d != first {
				t.Fatalf("%s: compilation %d gives another automaton than the first", bc.ID, i)
			}
		}
	}
}
