package mask

import (
	"slices"
	"testing"
)

// heavyFirst puts heavy states first, keeps every borrower after its
// donor, and keeps the order within each group.
func TestHeavyFirst(t *testing.T) {
	const h, l = heavyWalk + 1, heavyWalk
	// donors 10..13, borrowers 20..22 (main successors: their donors)
	todo := []int32{10, 11, 12, 13, 20, 21, 22}
	est := []int{l, h, l, l, l, h, h}
	mainSucc := map[int32]int32{20: 10, 21: 12, 22: 11}
	got, gotEst := heavyFirst(todo, est, 4, mainSucc)
	want := []int32{11, 12, 21, 22, 10, 13, 20}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i, q := range got {
		if gotEst[i] != est[slices.Index(todo, q)] {
			t.Errorf("estimate of %d: %d, want %d", q, gotEst[i], est[slices.Index(todo, q)])
		}
		if d, ok := mainSucc[q]; ok && slices.Index(got, d) > i {
			t.Errorf("borrower %d before its donor %d", q, d)
		}
	}
}
