package mask

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
)

// Minimization merges the automaton's states that no continuation tells
// apart: the coarsest partition of the states that refines the initial one
// (frame, frame start or not, the final and no-pop flags) and is stable
// under every edge label (byte class, call of a frame, token reference).
// minimalPartition computes it with Hopcroft's "process the smaller
// half" on the edges grouped by state and target, each group carrying
// the set of its labels (see refine); moorePartition is the simple
// reference.

// labeledEdges is the automaton's edges with dense labels, by tail state:
// edges of state q are start[q]..start[q+1]-1. An edge of a run of byte
// classes has the labels label..hi; a call's or a token's, one (hi =
// label).
type labeledEdges struct {
	start             []int32
	label, hi, target []int32
	numLabels         int
	numClasses        int  // labels below it are byte classes
	deterministic     bool // no state has two edges with the same label
	// inFrames: each frame's states are contiguous and every edge stays
	// inside its frame (as the construction makes them: byte and token
	// edges lead to a state of the same frame, a call's edge to its
	// return state), so that each frame can be minimized on its own.
	inFrames bool
}

// edges returns the automaton's edges. Labels: byte classes 0..nc-1, then
// one per callee frame, then one per (token, negated) pair in use. The
// lists reuse those of reuse, if not nil.
func (a *automaton) edges(reuse *labeledEdges) *labeledEdges {
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
	e.label, e.hi, e.target = slices.Grow(e.label[:0], m), slices.Grow(e.hi[:0], m), slices.Grow(e.target[:0], m)
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
	lo, hi := 0, 0 // the frame of q: states lo..hi-1 (if contiguous)
	for q := range a.states {
		if contiguous && q == hi {
			lo, hi = q, q+1
			for hi < n && a.states[hi].frame == a.states[q].frame {
				hi++
			}
		}
		for i := a.sStart[q]; i < a.sStart[q+1]; i++ {
			if t := a.sTarget[i]; t >= 0 {
				e.label = append(e.label, int32(a.sLo[i]))
				e.hi = append(e.hi, int32(a.sHi[i]))
				e.target = append(e.target, t)
			}
		}
		st := &a.states[q]
		for _, c := range st.calls {
			l := int32(callBase) + c.callee
			use(q, l)
			e.label = append(e.label, l)
			e.hi = append(e.hi, l)
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
			e.hi = append(e.hi, l)
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
	e.numClasses = a.nc
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
	edges          labeledEdges
	blocks         refinable
	inStart, in    []int32 // groups by target state
	count, id      []int32 // minScratch.refinable's
	init           []int32 // one frame's initial blocks, renumbered
	labelID        []int32 // per label: its number in the frame, plus one (0: not used)
	labels         []int32 // the labels with labelID set
	block          []int32 // minimalPartition's result
	gSrc, gTgt, at []int32 // groups' source and target; per target the current state's group, plus one
	eg             []int32 // per edge of the frame: its group
	gBits, psi     []uint64
	work, stamp    []int32
	blkRound       []int32
	blkFirst       []int32
	touchedStates  []sortKey
	grouped        []sortKey // groupTouched's result (swapped with touchedStates)
	blkSeen        []int32   // groupTouched's per block: the round it was counted in
	blkCnt         []int32   // groupTouched's per block: its count, then its place
	blkOrder       []int32   // groupTouched's blocks in order of first appearance
	partTab        []int32   // groupParts's hash table: part plus one
	partOf         []int32   // groupParts's per state: its part
	partRep        []int32   // groupParts's per part: its first state
	partH          []uint64  // groupParts's per part: the hash
	partCnt        []int32   // groupParts's per part: its count, then its place
	partBuf        []sortKey // groupParts's copy of a block's states
	gIvStart       []int32   // sparse label sets: per group, its intervals in gIv
	gIv            []uint64  // sparse label sets: intervals, first label << 32 | last
	pend           []psiPart
	psiStart       []int32 // sparse label sets: per state, its ψ's place in psi
	psiLen         []int32
	rowSlots       []int32 // automaton.buildRows's hash table
	rowHash        []int32 // per distinct row: its hash
	rowFirst       []int32 // per distinct row: the first state with it
}

var minScratches stickyPool[minScratch]

// keepSize returns the bytes of ms's largest lists (the label sets are
// words of 8 bytes) and whether ms is small enough for minScratches'
// kept slot (keepBytes).
func (ms *minScratch) keepSize() (int, bool) {
	n := 3*cap(ms.edges.label) + 2*(cap(ms.gBits)+cap(ms.psi)+cap(ms.gIv)) + 4*cap(ms.pend) + cap(ms.eg) + 2*cap(ms.gSrc) + 8*cap(ms.block) + cap(ms.rowSlots) + 2*cap(ms.rowHash)
	return 4 * n, 4*n <= keepBytes
}

// resize returns s with length n, reallocated if too short (the contents
// are not kept).
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// countStarts prepares a counting sort of items by key (keys[i] in
// 0..n-1) in start (reused; n+2 entries): item i goes to place
// start[keys[i]+1], which then moves on by one; once all are placed, key
// k's items are at start[k]:start[k+1].
func countStarts(start, keys []int32, n int) []int32 {
	start = resize(start, n+2)
	clear(start)
	for _, k := range keys {
		start[k+2]++
	}
	for k := 2; k <= n+1; k++ {
		start[k] += start[k-1]
	}
	return start
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
	e := a.edges(&ms.edges)
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
				for l := e.label[i]; l <= e.hi[i]; l++ {
					sig = binary.LittleEndian.AppendUint32(sig, uint32(l))
					sig = binary.LittleEndian.AppendUint32(sig, uint32(block[e.target[i]]))
				}
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

// refine computes the coarsest stable partition of states lo..hi-1, whose
// edges (e.start[lo]..e.start[hi]-1) all lead to states in lo..hi-1,
// refining the initial blocks init[lo:hi]: it sets out[q-lo] to the block
// of q (0, 1, …) and returns the number of blocks. It works on the edges
// grouped by state and target: one group per (state, target) pair, with
// the set of its labels as a bitset. A JSON string's body state has an edge for
// each of tens of byte classes but only a few targets, so there are 2-3
// times fewer groups than edges. It is Hopcroft's algorithm for
// automata whose transitions carry sets of labels (D'Antoni and Veanes,
// "Minimization of symbolic automata", POPL 2014): a splitter block B
// gives every state p with edges into B the set ψ(p) of their labels,
// and each block is split into its states with equal ψ (those without
// edges into B forming one more part). Of each split, the smaller part
// joins the worklist (the other is implied: the automaton is
// deterministic, so ψ for the rest of a processed parent is ψ for the
// parent minus ψ for the part).
func (ms *minScratch) refine(e *labeledEdges, lo, hi int, init, out []int32) int {
	n := hi - lo
	first, last := int(e.start[lo]), int(e.start[hi])
	// Labels numbered from 0 in the range, w words per label set: the
	// byte classes in use in class order (so that a run of classes has
	// consecutive numbers), then the calls and tokens.
	if len(ms.labelID) < e.numLabels {
		ms.labelID = make([]int32, e.numLabels)
	}
	var used byteBits
	for i := first; i < last; i++ {
		if l := e.label[i]; l < int32(e.numClasses) {
			used.addRange(byte(l), byte(e.hi[i]))
		}
	}
	ms.labels = ms.labels[:0]
	for k, x := range used {
		for ; x != 0; x &= x - 1 {
			l := int32(64*k + bits.TrailingZeros64(x))
			ms.labels = append(ms.labels, l)
			ms.labelID[l] = int32(len(ms.labels))
		}
	}
	for _, l := range e.label[first:last] {
		if ms.labelID[l] == 0 {
			ms.labels = append(ms.labels, l)
			ms.labelID[l] = int32(len(ms.labels))
		}
	}
	w := max(1, (len(ms.labels)+63)/64)
	// Groups: source state, and target state's incoming groups; eg is
	// each edge's group. The label sets are made once the groups are
	// counted: a root frame that calls hundreds of rules has tens of
	// words per set (Github_ultra/o48661: 109,825 groups of 22 words),
	// and growing them group by group copied them over and over.
	ms.gSrc, ms.gTgt = ms.gSrc[:0], ms.gTgt[:0]
	eg := resize(ms.eg, last-first)
	ms.eg = eg
	at := resize(ms.at, n) // per target: its group of the current state, plus one
	ms.at = at
	clear(at)
	for q := range n {
		g0 := int32(len(ms.gSrc))
		for i := e.start[lo+q]; i < e.start[lo+q+1]; i++ {
			t := e.target[i] - int32(lo)
			g := at[t] - 1
			if g < g0 {
				g = int32(len(ms.gSrc))
				at[t] = g + 1
				ms.gSrc = append(ms.gSrc, int32(q))
				ms.gTgt = append(ms.gTgt, t)
			}
			eg[int(i)-first] = g
		}
	}
	m := len(ms.gSrc)
	sparse := w > sparseLabelWords
	if sparse {
		// Each group's labels as intervals (a run of classes is one), by
		// counting sort into gIv[gIvStart[g]:gIvStart[g+1]].
		start := countStarts(ms.gIvStart, eg, m)
		if cap(ms.gIv) < len(eg) {
			ms.gIv = make([]uint64, len(eg))
		}
		iv := ms.gIv[:len(eg)]
		for i, g := range eg {
			l, h := ms.labelID[e.label[first+i]]-1, ms.labelID[e.hi[first+i]]-1
			iv[start[g+1]] = uint64(l)<<32 | uint64(h)
			start[g+1]++
		}
		ms.gIvStart, ms.gIv = start, iv
	} else {
		ms.gBits = append(ms.gBits[:0], make([]uint64, m*w)...)
		for i, g := range eg {
			bs := ms.gBits[int(g)*w : int(g+1)*w]
			l, h := ms.labelID[e.label[first+i]]-1, ms.labelID[e.hi[first+i]]-1
			if l == h {
				bs[l>>6] |= 1 << (l & 63)
				continue
			}
			setBits(bs, int(l), int(h))
		}
	}
	for _, l := range ms.labels {
		ms.labelID[l] = 0
	}
	// Incoming groups by target state: in[inStart[q]:inStart[q+1]].
	inStart := countStarts(ms.inStart, ms.gTgt, n)
	ms.inStart = inStart
	in := resize(ms.in, m)
	ms.in = in
	for g, t := range ms.gTgt {
		in[inStart[t+1]] = int32(g)
		inStart[t+1]++
	}
	// Initial blocks numbered from 0 in the range.
	bLo, bHi := init[lo], init[lo]
	for _, b := range init[lo:hi] {
		bLo, bHi = min(bLo, b), max(bHi, b)
	}
	ms.init = resize(ms.init, n)
	for i, b := range init[lo:hi] {
		ms.init[i] = b - bLo
	}
	blocks := ms.refinable(&ms.blocks, n, ms.init, int(bHi-bLo)+1)
	// Every initial block is a splitter (transitions are partial: no
	// block's ψ is implied by the others').
	work := ms.work[:0]
	for b := range blocks.sets {
		work = append(work, int32(b))
	}
	psi := ms.psi[:0]
	if !sparse {
		psi = append(psi, make([]uint64, n*w)...)
	} else {
		ms.psiStart, ms.psiLen = resize(ms.psiStart, n), resize(ms.psiLen, n)
	}
	// ψ(p): w words from p*w, or (sparse) the canonical interval list
	// psi[psiStart[p]:][:psiLen[p]] made in each round.
	psiOf := func(p int32) []uint64 {
		if sparse {
			i := ms.psiStart[p]
			return psi[i : i+ms.psiLen[p]]
		}
		return psi[int(p)*w : int(p+1)*w]
	}
	stamp := resize(ms.stamp, n)
	clear(stamp)
	// Per block: the round it was last touched in, and its first touched
	// state then.
	blkRound, blkFirst := resize(ms.blkRound, n), resize(ms.blkFirst, n)
	clear(blkRound)
	// groupTouched's: per block, the round it was last counted in, and
	// its count, then where its states go.
	blkSeen, blkCnt := resize(ms.blkSeen, n), resize(ms.blkCnt, n)
	clear(blkSeen)
	round := int32(0)
	touched := ms.touchedStates[:0]
	for len(work) > 0 {
		b := work[len(work)-1]
		work = work[:len(work)-1]
		round++
		touched = touched[:0]
		if sparse {
			touched, psi = ms.sparsePsi(blocks, in, inStart, b, round, stamp, touched, psi)
		} else {
			for _, q := range blocks.elems[blocks.first[b]:blocks.end[b]] {
				for _, g := range in[inStart[q]:inStart[q+1]] {
					p := ms.gSrc[g]
					ps := psi[int(p)*w : int(p+1)*w]
					if stamp[p] != round {
						stamp[p] = round
						clear(ps)
						touched = append(touched, sortKey{block: blocks.setOf[p], p: p})
					}
					for k, x := range ms.gBits[int(g)*w : int(g+1)*w] {
						ps[k] |= x
					}
				}
			}
		}
		// Mostly every touched state of a block has the same ψ: then the
		// touched states are that block's one part, and one split does.
		uniform := true
		for _, k := range touched {
			c := k.block
			if blkRound[c] != round {
				blkRound[c], blkFirst[c] = round, k.p
			} else if !slices.Equal(psiOf(k.p), psiOf(blkFirst[c])) {
				uniform = false
				break
			}
		}
		if uniform {
			before := blocks.sets
			for _, k := range touched {
				blocks.mark(k.p)
			}
			blocks.split()
			for z := before; z < blocks.sets; z++ {
				work = append(work, int32(z)) // the smaller parts
			}
			continue
		}
		// Group the touched states by block and ψ, in time linear in
		// them (groupTouched; a sort comparing the sets was 25% of
		// refine on the automata of the compile p95 band). Where two
		// different sets of one block share a hash, sort by the sets.
		for i := range touched {
			touched[i].h = psiHash(psiOf(touched[i].p))
		}
		if grouped, ok := ms.groupTouched(touched, blkSeen, blkCnt, round, psiOf); ok {
			touched, ms.grouped = grouped, touched // (two lists, swapped)
		} else {
			slices.SortFunc(touched, func(x, y sortKey) int {
				// (not cmp.Or: it would compare the label sets of
				// states of different blocks too)
				if x.block != y.block {
					return cmp.Compare(x.block, y.block)
				}
				if c := slices.Compare(psiOf(x.p), psiOf(y.p)); c != 0 {
					return c
				}
				return cmp.Compare(x.p, y.p)
			})
		}
		// Split each block with touched states into its parts of equal ψ.
		for i := 0; i < len(touched); {
			c := touched[i].block
			j := i
			for j < len(touched) && touched[j].block == c {
				j++
			}
			all := j-i == int(blocks.end[c]-blocks.first[c])
			for k := i; k < j; {
				r := k + 1
				for r < j && slices.Equal(psiOf(touched[r].p), psiOf(touched[k].p)) {
					r++
				}
				if all && r == j {
					break // the last part of a block all touched: the rest
				}
				for _, x := range touched[k:r] {
					blocks.mark(x.p)
				}
				before := blocks.sets
				blocks.split()
				if blocks.sets > before {
					// The new set is the smaller part: it joins the
					// worklist (and so does the rest, if s was there
					// already: it still is).
					work = append(work, int32(before))
				}
				k = r
			}
			i = j
		}
	}
	ms.work, ms.psi, ms.stamp, ms.touchedStates = work, psi, stamp, touched
	ms.blkRound, ms.blkFirst, ms.blkSeen, ms.blkCnt = blkRound, blkFirst, blkSeen, blkCnt
	copy(out, blocks.setOf[:n])
	return blocks.sets
}

// groupTouched orders the states a splitter touched (in a round where
// some block splits in more than one part; k.h is the hash of ψ(k.p)) by
// block, the blocks in order of first appearance, and within a block by
// part of equal ψ (groupParts), in time linear in them: by counting, and
// a hash table of the parts per block. It returns the ordered list (in
// ms.grouped's memory) and false if two different label sets of one
// block share a hash (the caller then sorts by the sets).
func (ms *minScratch) groupTouched(touched []sortKey, blkSeen, blkCnt []int32, round int32, psiOf func(int32) []uint64) ([]sortKey, bool) {
	order := ms.blkOrder[:0]
	for _, k := range touched {
		if blkSeen[k.block] != round {
			blkSeen[k.block], blkCnt[k.block] = round, 0
			order = append(order, k.block)
		}
		blkCnt[k.block]++
	}
	ms.blkOrder = order
	at := int32(0)
	for _, c := range order {
		at, blkCnt[c] = at+blkCnt[c], at
	}
	out := resize(ms.grouped, len(touched))
	for _, k := range touched {
		out[blkCnt[k.block]] = k
		blkCnt[k.block]++
	}
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].block == out[i].block {
			j++
		}
		if j-i > 1 && !ms.groupParts(out[i:j], psiOf) {
			return out, false
		}
		i = j
	}
	return out, true
}

// groupParts orders the touched states of one block by part of equal ψ,
// parts in order of first appearance, through a hash table of their
// hashes; false if two different sets share a hash.
func (ms *minScratch) groupParts(seg []sortKey, psiOf func(int32) []uint64) bool {
	size := 4
	for size < 2*len(seg) {
		size <<= 1
	}
	mask := uint64(size - 1)
	tab := resize(ms.partTab, size)
	clear(tab)
	ms.partTab = tab
	partOf := resize(ms.partOf, len(seg))
	ms.partOf = partOf
	ms.partRep, ms.partH, ms.partCnt = ms.partRep[:0], ms.partH[:0], ms.partCnt[:0]
	for i, k := range seg {
		slot := k.h & mask
		for {
			pi := tab[slot] - 1
			if pi < 0 {
				pi = int32(len(ms.partRep))
				tab[slot] = pi + 1
				ms.partRep, ms.partH, ms.partCnt = append(ms.partRep, k.p), append(ms.partH, k.h), append(ms.partCnt, 0)
			} else if ms.partH[pi] != k.h {
				slot = (slot + 1) & mask
				continue
			} else if !slices.Equal(psiOf(k.p), psiOf(ms.partRep[pi])) {
				return false
			}
			partOf[i] = pi
			ms.partCnt[pi]++
			break
		}
	}
	if len(ms.partCnt) == 1 {
		return true
	}
	at := int32(0)
	for pi, c := range ms.partCnt {
		at, ms.partCnt[pi] = at+c, at
	}
	buf := append(ms.partBuf[:0], seg...)
	ms.partBuf = buf
	for i, k := range buf {
		seg[ms.partCnt[partOf[i]]] = k
		ms.partCnt[partOf[i]]++
	}
	return true
}

// sortKey is a state touched by a splitter, with its block (and, once
// refine groups them, the hash of its ψ).
type sortKey struct {
	block, p int32
	h        uint64
}

// psiHash is the hash refine groups label sets by: hashWords (a test
// makes it collide).
var psiHash = hashWords

// hashWords hashes a label set (dense words or sparse intervals).
func hashWords(ws []uint64) uint64 {
	h := uint64(len(ws))
	for _, w := range ws {
		h = (h ^ w) * 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	return h
}

// sparseLabelWords is the widest label set refine keeps as a bitset per
// group and state: past it (a root frame that calls hundreds of rules:
// Github_ultra/o48661's has 1,357 labels, 22 words, in 109,825 groups,
// 26 MB of bitsets for its groups and states, cleared and ORed word by
// word where most groups hold one label) the sets are lists of label
// intervals (sparsePsi). The lists cost a sort per splitter: on the
// frames of 71 large grammars they took 1.4 times the bitsets' time at
// one word, 2.4 times at two, 1.9 at four (the widest there); on
// o48661's root frame 0.76 times, and its compile no longer touches the
// 26 MB (a cold compile: 700-750 → 540-550 ms).
var sparseLabelWords = 8

// psiPart is an interval of labels on an edge from p into the splitter.
type psiPart struct {
	p  int32
	iv uint64 // first label << 32 | last
}

// sparsePsi computes ψ for the states with edges into splitter block b as
// canonical lists of label intervals (sorted, overlapping and adjacent
// ones merged: equal sets have equal lists), appended to psi from 0 and
// placed by ms.psiStart/psiLen; it stamps and appends the touched states
// as refine's dense loop does.
func (ms *minScratch) sparsePsi(blocks *refinable, in, inStart []int32, b, round int32, stamp []int32, touched []sortKey, psi []uint64) ([]sortKey, []uint64) {
	pend := ms.pend[:0]
	for _, q := range blocks.elems[blocks.first[b]:blocks.end[b]] {
		for _, g := range in[inStart[q]:inStart[q+1]] {
			p := ms.gSrc[g]
			if stamp[p] != round {
				stamp[p] = round
				touched = append(touched, sortKey{block: blocks.setOf[p], p: p})
			}
			for _, iv := range ms.gIv[ms.gIvStart[g]:ms.gIvStart[g+1]] {
				pend = append(pend, psiPart{p, iv})
			}
		}
	}
	slices.SortFunc(pend, func(x, y psiPart) int {
		return cmp.Or(cmp.Compare(x.p, y.p), cmp.Compare(x.iv, y.iv))
	})
	psi = psi[:0]
	for i := 0; i < len(pend); {
		p := pend[i].p
		ms.psiStart[p] = int32(len(psi))
		lo, hi := pend[i].iv>>32, pend[i].iv&(1<<32-1)
		for i++; i < len(pend) && pend[i].p == p; i++ {
			l, h := pend[i].iv>>32, pend[i].iv&(1<<32-1)
			if l <= hi+1 {
				hi = max(hi, h)
				continue
			}
			psi = append(psi, lo<<32|hi)
			lo, hi = l, h
		}
		psi = append(psi, lo<<32|hi)
		ms.psiLen[p] = int32(len(psi)) - ms.psiStart[p]
	}
	ms.pend = pend
	return touched, psi
}
