// Package minheap is the min-heap on float32 keys that the samplers' top-k
// selections keep: the heap's root is the weakest of the best k seen so far,
// the one a better candidate replaces.
package minheap

// Entry is a heap element: a key and the position it came from.
type Entry struct {
	X float32
	I int32
}

// Up restores the heap order after h[i] got smaller (or was appended).
func Up(h []Entry, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !(h[i].X < h[p].X) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// Down restores the heap order after h[i] got larger (typically the root,
// replaced by a better candidate or by the last element on a pop).
func Down(h []Entry, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].X < h[l].X {
			m = r
		}
		if !(h[m].X < h[i].X) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
