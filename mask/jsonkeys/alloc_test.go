package jsonkeys_test

import (
	"testing"
)

// TestHotPathCost runs the bench's JSON documents (Llama-3 tokens, the
// cases' grammars) through FillMask, Filter, Accept and Check. After
// warm-up the guard allocates nothing per token, and Filter scans at most
// 100 tokens one by one in any step (a work count, not a time).
func TestHotPathCost(t *testing.T) {
	wv := llama3(t)
	for _, bc := range jsonBenchCases(t) {
		c := benchCaseGrammar(t, wv, bc)
		m := c.NewMatcher()
		g := wv.t.NewGuard()
		bits := make([]uint32, c.Words())
		maxTrials := 0
		run := func(guard bool) func() {
			return func() {
				m.Reset()
				g.Reset()
				for _, tok := range bc.Tokens {
					m.FillMask(bits)
					if guard {
						before := g.Trials()
						if err := g.Filter(bits); err != nil {
							t.Fatal(err)
						}
						maxTrials = max(maxTrials, g.Trials()-before)
					}
					if err := m.Accept(tok); err != nil {
						t.Fatal(err)
					}
					if guard {
						if err := g.Accept(tok); err != nil {
							t.Fatal(err)
						}
						if err := g.Check(m); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
		run(true)() // warm-up: the matcher's caches, the guard's buffers
		without := testing.AllocsPerRun(3, run(false))
		with := testing.AllocsPerRun(3, run(true))
		if with > without {
			t.Errorf("%s: %.0f allocations per document with the guard, %.0f without", bc.ID, with, without)
		}
		if maxTrials > 100 {
			t.Errorf("%s: Filter scanned %d tokens in one step", bc.ID, maxTrials)
		}
		t.Logf("%s: %d tokens, at most %d scanned by Filter in a step", bc.ID, len(bc.Tokens), maxTrials)
	}
}
