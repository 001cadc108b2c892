package cpu

import (
	"math"
	"slices"

	"github.com/structgen/structgen/internal/minheap"
)

// candidate is llama.cpp's llama_token_data: a token id, its (transformed)
// logit and, once a step computed it, its probability.
type candidate struct {
	id    int32
	logit float32
	p     float32
}

// candidates is llama.cpp's llama_token_data_array: the working set a chain
// step narrows or rewrites. data is a window into the chain's workspace;
// sorted says data is in descending logit order; selected is the index (into
// data) of the chosen token once a final step picked one, else -1.
//
// identity says data[i].id == i for every i (nothing reordered or dropped
// yet); steps that touch a few known ids (penalties, DRY, logit bias) use it
// to index instead of searching.
type candidates struct {
	data     []candidate
	sorted   bool
	identity bool
	selected int
}

// byLogitDesc orders candidates by descending logit (llama.cpp's comparator).
func byLogitDesc(a, b candidate) int {
	switch {
	case a.logit > b.logit:
		return -1
	case a.logit < b.logit:
		return 1
	}
	return 0
}

// exp32 is expf: e^x rounded to float32.
func exp32(x float32) float32 { return float32(math.Exp(float64(x))) }

// log32 is logf: ln x rounded to float32.
func log32(x float32) float32 { return float32(math.Log(float64(x))) }

// softmax is llama_sampler_softmax_impl: optionally sort (descending logit),
// then p_i = e^(l_i - max) / Σ, with llama.cpp's float32 arithmetic and
// summation order.
func (w *workspace) softmax(c *candidates, doSort bool) {
	if len(c.data) == 0 {
		return
	}
	if doSort && !c.sorted {
		w.sortAll(c)
	}
	d := c.data
	maxL := d[0].logit
	if !c.sorted {
		for i := 1; i < len(d); i++ {
			maxL = max(maxL, d[i].logit)
		}
	}
	var sum float32
	for i := range d {
		p := exp32(d[i].logit - maxL)
		d[i].p = p
		sum += p
	}
	for i := range d {
		d[i].p /= sum
	}
}

// sortAll sorts the whole window in descending logit order.
func (w *workspace) sortAll(c *candidates) {
	w.partialSortInPlace(c, len(c.data))
}

// partialSortInPlace is llama_token_data_array_partial_sort_inplace: keep the
// n largest candidates, sorted, at the front and shrink the window to them.
func (w *workspace) partialSortInPlace(c *candidates, n int) {
	n = min(n, len(c.data))
	w.selectTop(c.data, n)
	c.data = c.data[:n]
	c.sorted = true
	c.identity = false
}

// heapSelectMax is the largest n for which selectTop keeps a bounded heap of
// the best n while scanning (O(V + n·log n·log(V/n)) expected); above it a
// quickselect partition plus a sort of the front is faster. Measured on
// random 128k logits: a heap of 256 costs about the same as one partition pass.
const heapSelectMax = 256

// selectTop moves the n largest elements of d (by logit) to d[:n], sorted in
// descending order. The order of the rest is unspecified. Allocation-free
// once the workspace has grown.
func (w *workspace) selectTop(d []candidate, n int) {
	if n <= 0 {
		return
	}
	if n >= len(d) {
		slices.SortFunc(d, byLogitDesc)
		return
	}
	if n <= heapSelectMax {
		w.heapSelect(d, n)
		return
	}
	quickselect(d, n)
	slices.SortFunc(d[:n], byLogitDesc)
}

// heapSelect is selectTop for small n: one read-mostly scan keeping a
// min-heap of the best n positions, then a permutation that brings them,
// sorted, to the front (the displaced elements take their old places).
func (w *workspace) heapSelect(d []candidate, n int) {
	h := w.heap[:0]
	for i := range d {
		if len(h) < n {
			h = append(h, minheap.Entry{X: d[i].logit, I: int32(i)})
			minheap.Up(h, len(h)-1)
			continue
		}
		if d[i].logit > h[0].X {
			h[0] = minheap.Entry{X: d[i].logit, I: int32(i)}
			minheap.Down(h, 0)
		}
	}
	// Pop in ascending order, filling top from the back.
	top := w.top[:n]
	inFront := w.inFront[:n]
	clear(inFront)
	for k := n - 1; k >= 0; k-- {
		pos := h[0].I
		top[k] = d[pos]
		w.topPos[k] = pos
		if int(pos) < n {
			inFront[pos] = true
		}
		h[0] = h[len(h)-1]
		h = h[:len(h)-1]
		minheap.Down(h, 0)
	}
	// Elements of d[:n] that are not selected move to the selected
	// positions at or beyond n.
	j := 0
	for _, pos := range w.topPos[:n] {
		if int(pos) < n {
			continue
		}
		for inFront[j] {
			j++
		}
		d[pos] = d[j]
		j++
	}
	copy(d[:n], top)
}

// selectTopFrom is the lazy top-k: it selects the n largest logits straight
// from the raw logits (n < len(logits)) into the workspace, sorted, and
// makes them the candidate set. NaN never enters (it is below everything).
func (w *workspace) selectTopFrom(logits []float32, n int, c *candidates) {
	h := w.heap[:0]
	if n > heapSelectMax {
		if cap(w.bigHeap) < n {
			w.bigHeap = make([]minheap.Entry, 0, n)
		}
		h = w.bigHeap[:0]
	}
	i := 0
	for ; i < len(logits) && len(h) < n; i++ {
		x := logits[i]
		if x != x {
			x = negInf
		}
		h = append(h, minheap.Entry{X: x, I: int32(i)})
		minheap.Up(h, len(h)-1)
	}
	thr := h[0].X
	for ; i < len(logits); i++ {
		if x := logits[i]; x > thr {
			h[0] = minheap.Entry{X: x, I: int32(i)}
			minheap.Down(h, 0)
			thr = h[0].X
		}
	}
	d := w.cands[:n]
	for k := n - 1; k >= 0; k-- {
		d[k] = candidate{id: h[0].I, logit: h[0].X}
		h[0] = h[len(h)-1]
		h = h[:len(h)-1]
		minheap.Down(h, 0)
	}
	c.data = d
	c.sorted = true
	c.identity = false
}

// quickselect partitions d so that d[:n] holds the n largest logits (in no
// particular order). Median-of-three pivots; ranges of equal keys are
// handled by three-way partitioning, so it cannot degrade on ties.
func quickselect(d []candidate, n int) {
	lo, hi := 0, len(d) // the n-th largest lies in d[lo:hi]
	for hi-lo > 16 {
		mid := lo + (hi-lo)/2
		a, b, c := d[lo].logit, d[mid].logit, d[hi-1].logit
		pivot := max(min(a, b), min(max(a, b), c))
		// Three-way partition: > pivot | == pivot | < pivot.
		gt, i, lt := lo, lo, hi
		for i < lt {
			switch v := d[i].logit; {
			case v > pivot:
				d[gt], d[i] = d[i], d[gt]
				gt++
				i++
			case v < pivot:
				lt--
				d[lt], d[i] = d[i], d[lt]
			default:
				i++
			}
		}
		switch {
		case n < gt:
			hi = gt
		case n <= lt:
			return // the boundary falls inside the run of pivots
		default:
			lo = lt
		}
	}
	// Small range: a selection sort on the rest is enough.
	slices.SortFunc(d[lo:hi], byLogitDesc)
}
