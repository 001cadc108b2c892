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
// frame (as a string body's classes do: several labels in one group);
// every fourth of those keeps its edges inside their frames, which
// minimalPartition then minimizes one by one. Every fifth has 60-209
// byte classes, so that a group's label set takes several words. Every
// other pair of automata keeps the label sets as interval lists
// (sparseLabelWords 0), as a root frame calling hundreds of rules does.
// In every other quadruple refine's hash of the label sets takes two
// values only, so that sets that differ collide (psiHash).
func TestMinimalPartitionRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	ms := new(minScratch) // reused, as minimize reuses them across automata
	defer func(old int) { sparseLabelWords = old }(sparseLabelWords)
	defer func(old func([]uint64) uint64) { psiHash = old }(psiHash)
	for iter := range 3000 {
		sparseLabelWords = []int{4, 0}[iter/2%2]
		psiHash = hashWords
		if iter/4%2 == 1 {
			psiHash = func(ws []uint64) uint64 { return hashWords(ws) & 1 }
		}
		n := 1 + r.IntN(60)
		nc := 1 + r.IntN(4)
		if iter%5 == 4 {
			nc = 60 + r.IntN(150)
		}
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
					// runs of classes, not always the longest (minimization
					// leaves runs of one target apart)
					if k := len(a.sTarget) - 1; t == prev && k >= int(a.sStart[q]) && r.IntN(2) == 0 {
						a.sHi[k] = uint8(c)
					} else {
						a.sLo = append(a.sLo, uint8(c))
						a.sHi = append(a.sHi, uint8(c))
						a.sTarget = append(a.sTarget, t)
					}
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
		want, wn := a.moorePartition(a.edges(nil))
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

// TestMinimalPartitionWideLabels: two states that differ only in a label
// 64 classes apart (the same bit of different words of refine's label
// sets) must stay apart, and two with the same labels must merge.
func TestMinimalPartitionWideLabels(t *testing.T) {
	for _, tc := range []struct {
		c0, c1 uint8
		merged bool
	}{
		{1, 65, false},
		{65, 129, false},
		{3, 3, true},
		{130, 130, true},
	} {
		// The start q0 goes on every class to q1, except class 7 to q2;
		// q1 -c0-> q3, q2 -c1-> q3, q3 final.
		a := &automaton{nc: 200, frames: make([]frame, 1), states: make([]state, 4), sStart: []int32{0}}
		a.states[3].flags = stFinal
		var start [][2]int32
		for c := range int32(200) {
			start = append(start, [2]int32{c, 1 + min(c/7, 1) - min(c/8, 1)})
		}
		for _, edges := range [][][2]int32{start, {{int32(tc.c0), 3}}, {{int32(tc.c1), 3}}, nil} {
			for _, e := range edges {
				a.sLo = append(a.sLo, uint8(e[0]))
				a.sHi = append(a.sHi, uint8(e[0]))
				a.sTarget = append(a.sTarget, e[1])
			}
			a.sStart = append(a.sStart, int32(len(a.sTarget)))
		}
		block, _ := a.minimalPartition(new(minScratch))
		if got := block[1] == block[2]; got != tc.merged {
			t.Errorf("classes %d and %d: merged %v, want %v (blocks %v)", tc.c0, tc.c1, got, tc.merged, block)
		}
	}
}

// TestClassRuns checks the helpers of the construction's runs of classes
// against byte-by-byte versions: byteBits.addRange, and segmentCuts'
// count, rank and next for random sets of boundaries.
func TestClassRuns(t *testing.T) {
	for lo := range 256 {
		for hi := lo; hi < 256; hi++ {
			var got, want byteBits
			got.addRange(byte(lo), byte(hi))
			for b := lo; b <= hi; b++ {
				want.add(byte(b))
			}
			if got != want {
				t.Fatalf("addRange(%d, %d) = %x, want %x", lo, hi, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var x segmentCuts
		var in [258]bool
		for range r.IntN(12) {
			c := r.IntN(257)
			if r.IntN(4) == 0 {
				c = 64 * r.IntN(5) // word boundaries
			}
			c = min(c, 256)
			x.add(c)
			in[c] = true
		}
		n := 0
		for c := range 258 {
			if c <= 256 {
				if got := x.rank(c); got != n {
					t.Fatalf("%v: rank(%d) = %d, want %d", x, c, got, n)
				}
			}
			next := 257
			for d := c; d <= 256; d++ {
				if in[d] {
					next = d
					break
				}
			}
			if c <= 256 {
				if got := x.next(c); got != next {
					t.Fatalf("%v: next(%d) = %d, want %d", x, c, got, next)
				}
			}
			if c <= 256 && in[c] {
				n++
			}
		}
		if got := x.count(); got != n {
			t.Fatalf("%v: count = %d, want %d", x, got, n)
		}
	}
}

// TestBuildRows checks the shared rows of the dense transition table
// against the sparse runs they are made from, on random runs whose
// targets are often relative (the next state, the state itself: rows
// that repeat) and otherwise anywhere: every state's step by every
// class decodes to its run's target, and two states share a row exactly
// when their runs are equal up to their own numbers. The scratch is
// reused, as minimize reuses it.
func TestBuildRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	ms := new(minScratch)
	for iter := range 500 {
		n := 1 + r.IntN(300)
		nc := 1 + r.IntN(40)
		a := &automaton{nc: nc, states: make([]state, n), sStart: []int32{0}}
		want := make([][]int32, n) // per state and class: the target, -1 if none
		for q := range n {
			want[q] = make([]int32, nc)
			for c := 0; c < nc; {
				hi := c + r.IntN(min(4, nc-c))
				t := int32(-1)
				switch r.IntN(4) {
				case 0:
					t = int32(min(q+1, n-1))
				case 1:
					t = int32(q)
				case 2:
					t = int32(r.IntN(n))
				}
				switch k := len(a.sTarget) - 1; {
				case t < 0:
				case k >= int(a.sStart[q]) && a.sTarget[k] == t && int(a.sHi[k])+1 == c:
					a.sHi[k] = uint8(hi) // runs are maximal, as minimize leaves them
				default:
					a.sLo, a.sHi, a.sTarget = append(a.sLo, uint8(c)), append(a.sHi, uint8(hi)), append(a.sTarget, t)
				}
				for ; c <= hi; c++ {
					want[q][c] = t
				}
			}
			a.sStart = append(a.sStart, int32(len(a.sTarget)))
		}
		a.buildRows(ms)
		if len(a.rows) != len(a.rows)/nc*nc || len(a.rows)/nc > n {
			t.Fatalf("iter %d: %d cells for %d states of %d classes", iter, len(a.rows), n, nc)
		}
		for q := range n {
			for c := range nc {
				if got := max(a.step(int32(q), c), -1); got != want[q][c] {
					t.Fatalf("iter %d: state %d class %d goes to %d, want %d", iter, q, c, got, want[q][c])
				}
			}
		}
		for q := range n {
			for p := range q {
				equal := true
				for c := range nc {
					dq, dp := want[q][c]-int32(q), want[p][c]-int32(p)
					if (want[q][c] < 0) != (want[p][c] < 0) || want[q][c] >= 0 && dq != dp {
						equal = false
					}
				}
				if equal != (a.rowOf[q] == a.rowOf[p]) {
					t.Fatalf("iter %d: states %d and %d: relative runs equal %v, same row %v", iter, p, q, equal, !equal)
				}
			}
		}
	}
}
