package gbnf_test

import (
	"math/rand"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/grammartest"
)

// run feeds s to r the way grammartest documents it and returns the
// final state (nil when dead).
func run(r *earley.Recognizer, s grammartest.String) *earley.State {
	st := r.Start()
	if s.HasTokens() {
		for _, tk := range s.Tokens() {
			if st == nil {
				return nil
			}
			st = st.NextToken(tk.ID, tk.Text)
		}
		return st
	}
	for _, c := range s.Bytes() {
		if st == nil {
			return nil
		}
		st = st.Next(c)
	}
	return st
}

// TestSuite runs testdata/grammars/*.txtar through the parser, the
// printer and the reference recognizer. Failures point at file:line.
func TestSuite(t *testing.T) {
	cases := grammartest.Cases(t)
	if len(cases) < 30 {
		t.Errorf("only %d cases in testdata/grammars, want at least 30", len(cases))
	}
	nStrings := 0
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			g, err := gbnf.ParseWithRoot(c.Grammar, c.Root)
			if err != nil {
				t.Fatalf("%s:%d: grammar: %v", c.File, c.GrammarLine, err)
			}
			roundTrip(t, c.File, g, c.Root)
			if lr := g.LeftRecursion(); (lr != nil) != c.LeftRecursive {
				t.Errorf("%s:%d: LeftRecursion() = %v, but the case says left-recursive=%v", c.File, c.GrammarLine, lr, c.LeftRecursive)
			}
			if len(c.Accept) == 0 || len(c.Reject) == 0 {
				t.Errorf("%s: needs accept and reject strings", c.File)
			}
			r := earley.New(g)
			for _, s := range c.Accept {
				nStrings++
				if st := run(r, s); st == nil || !st.CanEnd() {
					t.Errorf("%s: %s: not accepted (viable prefix: %v)", s.Pos(), s.Src, st != nil)
				}
			}
			for _, s := range c.Prefix {
				nStrings++
				if st := run(r, s); st == nil || st.CanEnd() {
					t.Errorf("%s: %s: want a viable prefix that is not a sentence; viable=%v", s.Pos(), s.Src, st != nil)
				}
			}
			for _, s := range c.Reject {
				nStrings++
				if st := run(r, s); st != nil {
					t.Errorf("%s: %s: want rejected mid-way; it is a viable prefix (complete: %v)", s.Pos(), s.Src, st.CanEnd())
				}
			}
			// What the grammar generates, it accepts.
			rng := rand.New(rand.NewSource(int64(len(c.Name))))
			for i := 0; i < 5; i++ {
				if s, ok := earley.Generate(g, rng, 300); ok && !r.Accepts(s) {
					t.Errorf("%s: generated %q is not accepted", c.File, s)
				}
			}
		})
	}
	t.Logf("%d grammars, %d strings", len(cases), nStrings)
}
