package jsonkeys_test

import (
	"testing"

	"github.com/structgen/structgen/mask"
)

// TestHotPathCost runs the bench's JSON documents (Llama-3 tokens, the
// cases' grammars) through FillMask, Filter, Accept and Check. After
// warm-up the guard allocates nothing per token, and Filter scans at most
// 100 tokens one by one in any step (a work count, not a time).
func TestHotPathCost(t *testing.T) {
	wv := llama3(t)
	for _, bc := range jsonBenchCases(t) {
		m, g, bits := docSetup(t, wv, bc)
		st := &docStats{}
		runDoc(t, wv, bc, m, g, bits, st) // warm-up: the matcher's caches, the guard's buffers
		for range mask.DenseAfter {       // and the masks the matcher keeps dense
			runDoc(t, wv, bc, m, g, bits, nil)
		}
		without := testing.AllocsPerRun(3, func() { runDoc(t, wv, bc, m, nil, bits, nil) })
		with := testing.AllocsPerRun(3, func() { runDoc(t, wv, bc, m, g, bits, nil) })
		if with > without {
			t.Errorf("%s: %.0f allocations per document with the guard, %.0f without", bc.ID, with, without)
		}
		if st.maxTrials > 100 {
			t.Errorf("%s: Filter scanned %d tokens in one step", bc.ID, st.maxTrials)
		}
		t.Logf("%s: %d tokens, at most %d scanned by Filter in a step", bc.ID, len(bc.Tokens), st.maxTrials)
	}
}
