package minheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopK keeps the k largest of random keys with the heap, the way the
// samplers do, and checks them against a sort.
func TestTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, k int }{{1, 1}, {10, 3}, {100, 40}, {1000, 1}, {1000, 999}, {50, 50}} {
		xs := make([]float32, tc.n)
		for i := range xs {
			xs[i] = float32(r.IntN(20)) // many ties
		}
		var h []Entry
		for i, x := range xs {
			switch {
			case len(h) < tc.k:
				h = append(h, Entry{x, int32(i)})
				Up(h, len(h)-1)
			case x > h[0].X:
				h[0] = Entry{x, int32(i)}
				Down(h, 0)
			}
		}
		var got []float32
		for len(h) > 0 {
			if xs[h[0].I] != h[0].X {
				t.Fatalf("n=%d k=%d: entry %v lost its position", tc.n, tc.k, h[0])
			}
			got = append(got, h[0].X)
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
			Down(h, 0)
		}
		want := slices.Clone(xs)
		slices.Sort(want)
		want = want[tc.n-tc.k:]
		if !slices.Equal(got, want) {
			t.Errorf("n=%d k=%d: popped %v, want %v", tc.n, tc.k, got, want)
		}
	}
}
