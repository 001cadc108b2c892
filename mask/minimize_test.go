package mask

import (
	"math/rand/v2"
	"testing"
)

// TestMinimalPartitionRandom compares the O(m log n) minimization with
// Moore's rounds on random deterministic automata: few labels and few
// targets make many equivalent states, chains make many rounds. (Every
// grammar compiled by the other tests is checked too: see TestMain.)
// Every third automaton has contiguous frames, as the construction makes
// them, and classes that copy their neighbor's edges in every state of a
// frame, which minimalPartition leaves out (edges' compress); every
// fourth of those keeps its edges inside their frames, which
// minimalPartition then minimizes one by one.
func TestMinimalPartitionRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	ms := new(minScratch) // reused, as minimize reuses them across automata
	for iter := range 3000 {
		n := 1 + r.IntN(60)
		nc := 1 + r.IntN(4)
		nf := 1 + r.IntN(3)
		a := &automaton{nc: nc, frames: make([]frame, nf), states: make([]state, n), sStart: []int32{0}}
		for f := range a.frames {
			a.frames[f].start = int32(r.IntN(n))
		}
		density := r.Float64()
		contiguous := iter%3 == 0
		copies := make([][]bool, nf) // per frame and class: copy the class before
		for f := range copies {
			copies[f] = make([]bool, nc)
			for c := 1; c < nc; c++ {
				copies[f][c] = contiguous && r.IntN(2) == 0
			}
		}
		local := contiguous && iter%4 == 3
		for q := range n {
			st := &a.states[q]
			st.frame = int32(r.IntN(nf))
			if contiguous {
				st.frame = int32(q * nf / n)
			}
			target := func() int32 { return int32(r.IntN(n)) }
			if local {
				lo, hi := q, q+1 // q's frame
				for lo > 0 && (lo-1)*nf/n == q*nf/n {
					lo--
				}
				for hi < n && hi*nf/n == q*nf/n {
					hi++
				}
				target = func() int32 { return int32(lo + r.IntN(hi-lo)) }
			}
			prev := int32(-1)
			if r.IntN(3) == 0 {
				st.flags |= stFinal
			}
			if r.IntN(5) == 0 {
				st.flags |= stNoPop
			}
			for c := range nc {
				t := int32(-1)
				if copies[st.frame][c] {
					t = prev
				} else if r.Float64() < density {
					t = target()
					if iter%2 == 0 && q+1 < n && (!local || (q+1)*nf/n == q*nf/n) {
						t = int32(q + 1) // chains: many rounds
					}
				}
				if t >= 0 {
					a.sClass = append(a.sClass, uint8(c))
					a.sTarget = append(a.sTarget, t)
				}
				prev = t
			}
			a.sStart = append(a.sStart, int32(len(a.sTarget)))
			if r.IntN(4) == 0 {
				st.calls = append(st.calls, callEdge{callee: int32(r.IntN(nf)), ret: target()})
			}
			if r.IntN(4) == 0 {
				st.toks = append(st.toks, tokEdge{tok: int32(r.IntN(3)), neg: r.IntN(2) == 0, next: target()})
			}
		}
		got, gn := a.minimalPartition(ms)
		if local && !ms.edges.inFrames {
			t.Fatalf("iteration %d: edges inside frames not recognized", iter)
		}
		want, wn := a.moorePartition(a.edges(false, nil))
		if gn != wn || !samePartition(got, want) {
			t.Fatalf("iteration %d (%d states): %d blocks %v, Moore %d blocks %v", iter, n, gn, got, wn, want)
		}
	}
}

func TestSamePartition(t *testing.T) {
	for _, tc := range []struct {
		x, y []int32
		want bool
	}{
		{[]int32{0, 0, 1}, []int32{5, 5, 2}, true},
		{[]int32{0, 0, 1}, []int32{0, 1, 1}, false},
		{[]int32{0, 1, 2}, []int32{0, 0, 2}, false},
		{[]int32{0, 0}, []int32{0, 1}, false},
		{[]int32{0}, []int32{0, 1}, false},
	} {
		if got := samePartition(tc.x, tc.y); got != tc.want {
			t.Errorf("samePartition(%v, %v) = %v", tc.x, tc.y, got)
		}
	}
}
