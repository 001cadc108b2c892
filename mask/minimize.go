package mask

import (
	"encoding/binary"
	"slices"
	"sync"
)

// Minimization merges the automaton's states that no continuation tells
// apart: the coarsest partition of the states that refines the initial one
// (frame, frame start or not, the final and no-pop flags) and is stable
// under every edge label (byte class, call of a frame, token reference).
// minimalPartition computes it in O(m log n) for m edges and n states with
// Valmari and Lehtinen's algorithm for partial DFAs ("Efficient
// minimization of DFAs with partial transition functions", STACS 2008):
// Hopcroft's "process the smaller half" on two refinable partitions, one
// of the states (blocks) and one of the edges (cords: edges with the same
// label into the same block). moorePartition is the simple reference.

// labeledEdges is the automaton's edges with dense labels, by tail state:
// edges of state q are start[q]..start[q+1]-1.
type labeledEdges struct {
	start         []int32
	label, target []int32
	numLabels     int
	deterministic bool // no state has two edges with the same label
	// inFrames: each frame's states are contiguous and every edge stays
	// inside its frame (as the construction makes them: byte and token
	// edges lead to a state of the same frame, a call's edge to its
	// return state), so that each frame can be minimized on its own.
	inFrames bool
}

// edges returns the automaton's edges. Labels: byte classes 0..nc-1, then
// one per callee frame, then one per (token, negated) pair in use. With
// compress, a byte class whose edges in every state of the frame are
// those of a smaller class (same target, or none, in every state; see
// classReps.compute) is left out: it cannot tell two states apart that the
// smaller class does not, and states of different frames are never
// merged (the frames' states must be contiguous, as the construction
// makes them, or nothing is left out). Wide byte ranges (string bodies)
// cover tens of classes with one target, so this cuts minimization's
// edges several times over. The lists reuse those of reuse, if not nil.
func (a *automaton) edges(compress bool, reuse *labeledEdges) *labeledEdges {
	n := len(a.states)
	e := reuse
	if e == nil {
		e = &labeledEdges{}
	}
	e.deterministic = true
	e.start = resize(e.start, n+1)
	e.start[0] = 0
	m := len(a.sTarget)
	for q := range a.states {
		m += len(a.states[q].calls) + len(a.states[q].toks)
	}
	e.label, e.target = slices.Grow(e.label[:0], m), slices.Grow(e.target[:0], m)
	callBase := a.nc
	tokBase := callBase + len(a.frames)
	tokLabel := map[int64]int32{}
	var seen []int32 // per label ≥ callBase: q+1 where q last used it
	use := func(q int, l int32) {
		i := int(l) - callBase
		if i >= len(seen) {
			seen = append(seen, make([]int32, i+1-len(seen))...)
		}
		if seen[i] == int32(q)+1 {
			e.deterministic = false
		}
		seen[i] = int32(q) + 1
	}
	contiguous := a.framesContiguous()
	e.inFrames = contiguous
	compress = compress && contiguous
	var rep []uint8 // per class: its representative in the frame of q
	if compress {
		rep = make([]uint8, a.nc)
	}
	var cr classReps
	lo, hi := 0, 0 // the frame of q: states lo..hi-1 (if contiguous)
	for q := range a.states {
		if contiguous && q == hi {
			lo, hi = q, q+1
			for hi < n && a.states[hi].frame == a.states[q].frame {
				hi++
			}
			if compress {
				cr.compute(a, lo, hi, rep)
			}
		}
		for i := a.sStart[q]; i < a.sStart[q+1]; i++ {
			if t := a.sTarget[i]; t >= 0 && (!compress || rep[a.sClass[i]] == a.sClass[i]) {
				e.label = append(e.label, int32(a.sClass[i]))
				e.target = append(e.target, t)
			}
		}
		st := &a.states[q]
		for _, c := range st.calls {
			l := int32(callBase) + c.callee
			use(q, l)
			e.label = append(e.label, l)
			e.target = append(e.target, c.ret)
		}
		for _, t := range st.toks {
			k := int64(t.tok) << 1
			if t.neg {
				k |= 1
			}
			l, ok := tokLabel[k]
			if !ok {
				l = int32(tokBase + len(tokLabel))
				tokLabel[k] = l
			}
			use(q, l)
			e.label = append(e.label, l)
			e.target = append(e.target, t.next)
		}
		e.start[q+1] = int32(len(e.label))
		if e.inFrames {
			for _, t := range e.target[e.start[q]:e.start[q+1]] {
				if int(t) < lo || int(t) >= hi {
					e.inFrames = false
				}
			}
		}
	}
	e.numLabels = tokBase + len(tokLabel)
	return e
}

// framesContiguous reports whether each frame's states are contiguous
// (as the construction makes them).
func (a *automaton) framesContiguous() bool {
	seen := make([]bool, len(a.frames))
	for q := range a.states {
		f := a.states[q].frame
		if q == 0 || f != a.states[q-1].frame {
			if seen[f] {
				return false
			}
			seen[f] = true
		}
	}
	return true
}

// classReps holds the buffers of classReps.compute.
type classReps struct {
	hash    [256]uint64
	touched []uint8
	byHash  map[uint64]uint8
	size    [256]int32 // per representative: classes it stands for
	row     [256]int32 // the state being checked: target per class, or -1
	cnt     [256]int32 // per representative: its classes in the row
}

// compute sets rep[c], for every byte class c of states lo..hi-1 (one
// frame's, before minimization), to the smallest class whose edges in
// these states are c's: the same target in every state, or none. Classes
// are grouped by a hash of their column, then the grouping is checked
// exactly; if a hash collision made it wrong, every class stands for
// itself. A class no state has an edge on stands for itself (it labels
// no edge). Cost: the frame's edges.
func (cr *classReps) compute(a *automaton, lo, hi int, rep []uint8) {
	for c := range rep {
		rep[c] = uint8(c)
	}
	for _, c := range cr.touched {
		cr.hash[c] = 0
	}
	cr.touched = cr.touched[:0]
	for q := lo; q < hi; q++ {
		for i := a.sStart[q]; i < a.sStart[q+1]; i++ {
			t := a.sTarget[i]
			if t < 0 {
				continue
			}
			c := a.sClass[i]
			if cr.hash[c] == 0 {
				cr.touched = append(cr.touched, c)
			}
			x := uint64(q-lo)<<32 | uint64(uint32(t))
			x = (x ^ x>>31) * 0x9e3779b97f4a7c15
			x = (x ^ x>>29) * 0xbf58476d1ce4e5b9
			cr.hash[c] += x ^ x>>32 | 1
		}
	}
	if len(cr.touched) < 2 {
		return
	}
	if cr.byHash == nil {
		cr.byHash = map[uint64]uint8{}
	}
	clear(cr.byHash)
	slices.Sort(cr.touched)
	for _, c := range cr.touched {
		r, ok := cr.byHash[cr.hash[c]]
		if !ok {
			r = c
			cr.byHash[cr.hash[c]] = c
			cr.size[c] = 0
		}
		rep[c] = r
		cr.size[r]++
	}
	// Check: in every state, a class has an edge iff its representative
	// has one, to the same target. A row is in class order (as the
	// construction appends it) and a representative is the smallest
	// class of its group, so it comes before the classes it stands for.
	for i := range cr.row {
		cr.row[i] = -1
	}
	for q := lo; q < hi; q++ {
		row := a.sTarget[a.sStart[q]:a.sStart[q+1]]
		cls := a.sClass[a.sStart[q]:a.sStart[q+1]]
		ok := true
		for i, t := range row {
			if t >= 0 {
				c := cls[i]
				if r := rep[c]; r == c {
					cr.row[c], cr.cnt[c] = t, 1
				} else {
					ok = ok && cr.row[r] == t
					cr.cnt[r]++
				}
			}
		}
		for i, t := range row {
			if c := cls[i]; t >= 0 && rep[c] == c {
				ok = ok && cr.cnt[c] == cr.size[c]
				cr.row[c] = -1
			}
		}
		if !ok {
			for c := range rep {
				rep[c] = uint8(c)
			}
			return
		}
	}
}

// initialBlocks returns the initial partition: states with the same frame,
// the same "is the frame's start" and the same final and no-pop flags
// share a block.
func (a *automaton) initialBlocks() (block []int32, numBlocks int) {
	// ids[8·frame + 4·start + 2·final + noPop]: block number plus one.
	ids := make([]int32, 8*len(a.frames))
	block = make([]int32, len(a.states))
	for q := range a.states {
		st := &a.states[q]
		k := 8 * int(st.frame)
		if int32(q) == a.frames[st.frame].start {
			k += 4
		}
		if st.flags&stFinal != 0 {
			k += 2
		}
		if st.flags&stNoPop != 0 {
			k++
		}
		if ids[k] == 0 {
			numBlocks++
			ids[k] = int32(numBlocks)
		}
		block[q] = ids[k] - 1
	}
	return block, numBlocks
}

// minScratch holds the lists of minimalPartition, kept for the next
// minimization (minScratches): they are several times the size of the
// automaton's edges.
type minScratch struct {
	edges             labeledEdges
	blocks, cords     refinable
	tail, inStart, in []int32
	count, id         []int32 // minScratch.refinable's
	init, label       []int32 // one frame's initial blocks and edge labels, renumbered
	labelID           []int32 // per label: its number in the frame, plus one (0: not used)
	labels            []int32 // the labels with labelID set
	block             []int32 // minimalPartition's result
}

var minScratches = sync.Pool{New: func() any { return new(minScratch) }}

// resize returns s with length n, reallocated if too short (the contents
// are not kept).
func resize(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// minimalPartition returns the block of every state in the coarsest stable
// partition, and the number of blocks; block may be part of ms.
//
// States of different frames are never merged and, as the construction
// makes them, no edge leaves its frame: then each frame is minimized on
// its own, which gives the same partition (the coarsest stable one is
// unique, and a frame's blocks depend only on its own states and edges)
// with lists the size of one frame, not of the whole automaton (o48661:
// 258,532 states in 1,902 frames, 33,355 in the largest after
// minimization), so that the refinement's random accesses stay in the
// cache: on o48661 the partition's profile share drops from 29% to 18%.
func (a *automaton) minimalPartition(ms *minScratch) (block []int32, numBlocks int) {
	e := a.edges(true, &ms.edges)
	if !e.deterministic {
		// Hopcroft's smaller-half argument needs one edge per label and
		// state; lowering never builds anything else, but stay exact.
		return a.moorePartition(e)
	}
	n := len(a.states)
	init, _ := a.initialBlocks()
	block = resize(ms.block, n)
	ms.block = block
	if !e.inFrames {
		return block, ms.refine(e, 0, n, init, block)
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && a.states[hi].frame == a.states[lo].frame {
			hi++
		}
		k := ms.refine(e, lo, hi, init, block[lo:hi])
		for q := lo; q < hi; q++ {
			block[q] += int32(numBlocks)
		}
		numBlocks += k
		lo = hi
	}
	return block, numBlocks
}

// refine computes the coarsest stable partition of states lo..hi-1, whose
// edges (e.start[lo]..e.start[hi]-1) all lead to states in lo..hi-1,
// refining the initial blocks init[lo:hi]: it sets out[q-lo] to the block
// of q (0, 1, …) and returns the number of blocks.
func (ms *minScratch) refine(e *labeledEdges, lo, hi int, init, out []int32) int {
	n := hi - lo
	first, last := int(e.start[lo]), int(e.start[hi])
	m := last - first
	// Initial blocks and labels numbered from 0 in the range.
	bLo, bHi := init[lo], init[lo]
	for _, b := range init[lo:hi] {
		bLo, bHi = min(bLo, b), max(bHi, b)
	}
	ms.init = resize(ms.init, n)
	for i, b := range init[lo:hi] {
		ms.init[i] = b - bLo
	}
	if len(ms.labelID) < e.numLabels {
		ms.labelID = make([]int32, e.numLabels)
	}
	ms.label = resize(ms.label, m)
	ms.labels = ms.labels[:0]
	for i, l := range e.label[first:last] {
		if ms.labelID[l] == 0 {
			ms.labels = append(ms.labels, l)
			ms.labelID[l] = int32(len(ms.labels))
		}
		ms.label[i] = ms.labelID[l] - 1
	}
	for _, l := range ms.labels {
		ms.labelID[l] = 0
	}
	blocks := ms.refinable(&ms.blocks, n, ms.init, int(bHi-bLo)+1)
	// Edges by label: the initial cords.
	tail := resize(ms.tail, m)
	ms.tail = tail
	for q := range n {
		for i := e.start[lo+q]; i < e.start[lo+q+1]; i++ {
			tail[int(i)-first] = int32(q)
		}
	}
	cords := ms.refinable(&ms.cords, m, ms.label, len(ms.labels))
	// Incoming edges by head state: in[inStart[q]:inStart[q+1]] (filled
	// through inStart[q+1], then shifted back).
	inStart := resize(ms.inStart, n+2)
	ms.inStart = inStart
	clear(inStart)
	targets := e.target[first:last]
	for _, t := range targets {
		inStart[int(t)-lo+2]++
	}
	for q := 2; q <= n+1; q++ {
		inStart[q] += inStart[q-1]
	}
	in := resize(ms.in, m)
	ms.in = in
	for i, t := range targets {
		t := int(t) - lo
		in[inStart[t+1]] = int32(i)
		inStart[t+1]++
	}
	// Every cord, and every block but the first, splits the blocks once;
	// new parts (the smaller half of a split set) are appended and so
	// processed in turn.
	b := 1
	for c := 0; c < cords.sets; c++ {
		for _, i := range cords.elems[cords.first[c]:cords.end[c]] {
			blocks.mark(tail[i])
		}
		blocks.split()
		for ; b < blocks.sets; b++ {
			for _, q := range blocks.elems[blocks.first[b]:blocks.end[b]] {
				for _, i := range in[inStart[q]:inStart[q+1]] {
					cords.mark(i)
				}
			}
			cords.split()
		}
	}
	copy(out, blocks.setOf[:n])
	return blocks.sets
}

// refinable is a refinable partition of 0..n-1: the elements of a set are
// contiguous in elems (set s holds elems[first[s]:end[s]]); mark moves an
// element to the marked front of its set, and split cuts every set with
// marked elements in two, the smaller part becoming a new set.
type refinable struct {
	sets              int
	elems, loc, setOf []int32
	first, end        []int32 // per set
	marked            []int32 // per set: how many of its elements are marked
	touched           []int32 // sets with marked elements
}

// refinable makes p the partition of 0..n-1 into the sets given by setOf
// (values 0..numSets-1; empty sets are dropped), reusing p's lists.
func (ms *minScratch) refinable(p *refinable, n int, setOf []int32, numSets int) *refinable {
	p.sets, p.touched = 0, p.touched[:0]
	p.elems, p.loc, p.setOf = resize(p.elems, n), resize(p.loc, n), resize(p.setOf, n)
	p.first, p.end, p.marked = resize(p.first, n+1), resize(p.end, n+1), resize(p.marked, n+1)
	clear(p.marked)
	// Counting sort by the given set, renumbering the non-empty sets.
	count := resize(ms.count, numSets+1)
	ms.count = count
	clear(count)
	for _, s := range setOf[:n] {
		count[s+1]++
	}
	id := resize(ms.id, numSets)
	ms.id = id
	for s := range numSets {
		if count[s+1] > 0 {
			id[s] = int32(p.sets)
			p.first[p.sets] = count[s]
			p.end[p.sets] = count[s] + count[s+1]
			p.sets++
		}
		count[s+1] += count[s]
	}
	for x := range n {
		s := setOf[x]
		i := count[s]
		count[s]++
		p.elems[i], p.loc[x], p.setOf[x] = int32(x), i, id[s]
	}
	return p
}

func (p *refinable) mark(x int32) {
	s := p.setOf[x]
	i := p.loc[x]
	j := p.first[s] + p.marked[s]
	if i < j {
		return // already marked
	}
	p.elems[i] = p.elems[j]
	p.loc[p.elems[i]] = i
	p.elems[j] = x
	p.loc[x] = j
	if p.marked[s] == 0 {
		p.touched = append(p.touched, s)
	}
	p.marked[s]++
}

func (p *refinable) split() {
	for _, s := range p.touched {
		j := p.first[s] + p.marked[s]
		p.marked[s] = 0
		if j == p.end[s] {
			continue // all of s marked: nothing to split
		}
		z := int32(p.sets)
		p.sets++
		if j-p.first[s] <= p.end[s]-j {
			// The marked part is the smaller: it becomes z.
			p.first[z], p.end[z] = p.first[s], j
			p.first[s] = j
		} else {
			p.first[z], p.end[z] = j, p.end[s]
			p.end[s] = j
		}
		for _, x := range p.elems[p.first[z]:p.end[z]] {
			p.setOf[x] = z
		}
	}
	p.touched = p.touched[:0]
}

// moorePartition is the simple reference for minimalPartition (and its
// fallback for non-deterministic edges): Moore's rounds, each giving
// every state the signature (block, its edges' labels and target blocks)
// until no block splits. A round costs the edges, but a chain of k states
// needs k rounds, so long chains make it quadratic.
func (a *automaton) moorePartition(e *labeledEdges) (block []int32, numBlocks int) {
	n := len(a.states)
	block, numBlocks = a.initialBlocks()
	var sig []byte
	index := map[string]int32{}
	next := make([]int32, n)
	for {
		clear(index)
		for q := range n {
			sig = binary.LittleEndian.AppendUint32(sig[:0], uint32(block[q]))
			for i := e.start[q]; i < e.start[q+1]; i++ {
				sig = binary.LittleEndian.AppendUint32(sig, uint32(e.label[i]))
				sig = binary.LittleEndian.AppendUint32(sig, uint32(block[e.target[i]]))
			}
			b, ok := index[string(sig)]
			if !ok {
				b = int32(len(index))
				index[string(sig)] = b
			}
			next[q] = b
		}
		block, next = next, block
		if len(index) == numBlocks {
			return block, numBlocks
		}
		numBlocks = len(index)
	}
}

// verifyMinimize makes minimize check minimalPartition against
// moorePartition on every automaton (set by the package's tests, so that
// every grammar they compile is a test case).
var verifyMinimize bool

// samePartition reports whether two block assignments describe the same
// partition (block numbers may differ).
func samePartition(x, y []int32) bool {
	if len(x) != len(y) {
		return false
	}
	xy := map[int32]int32{}
	yx := map[int32]int32{}
	for i := range x {
		if b, ok := xy[x[i]]; ok && b != y[i] {
			return false
		}
		if b, ok := yx[y[i]]; ok && b != x[i] {
			return false
		}
		xy[x[i]], yx[y[i]] = y[i], x[i]
	}
	return true
}
