package mask

import (
	"math/bits"
	"slices"
)

// A parallel walk computes level 1 for up to 64 top states at once: it
// walks the trie a single time, carrying groups of start states that have
// reached the same configuration. Start states converge after a byte or
// two (most continuations are shared), so the cost is close to one walk
// per distinct configuration instead of one walk per start state.

type pgroup struct {
	lo, hi int32  // configuration in walker.buf
	mask   uint64 // start states (bit i = starts[i]) in this configuration
}

// pwalkState is the per-walk data of a parallel walk.
type pwalkState struct {
	accs  []*setBuilder // per start
	cross [][]crossPt   // per start
	gbuf  []pgroup
	fs    [][]fastStep // per depth
	lock  []lockItem   // plockstep's stack
	lbuf  []node       // plockstep's configurations
	lgrp  []lockGroup  // plockstep's groups

	skip     []byteBits // per start: byte classes skipped at depth 0 (borrowed), or empty
	accMask  []uint64   // per token: the starts that accept it (bit i = starts[i])
	touched  []int32    // tokens with a non-zero accMask
	patIndex map[uint64]int32
	rec      *subResult // recording the walk of one memoized subtree
	recCross bool
	patCount []int
	work     int64 // work units (added to the walker's after the walk)
	nodes    int64 // of which: trie nodes stepped
}

// addCross records cross point u for start i (and in the recording, once
// per node: every start of a recorded walk has the same base frame).
func (ps *pwalkState) addCross(i int, u int32) {
	if ps.rec != nil {
		if n := len(ps.rec.cross); n == 0 || ps.rec.cross[n-1] != u {
			ps.rec.cross = append(ps.rec.cross, u)
		}
		return
	}
	ps.cross[i] = append(ps.cross[i], crossPt{u, 0})
}

// accept records that the starts in mask accept the tokens toks.
func (ps *pwalkState) accept(toks []int32, mask uint64) {
	ps.work += int64(len(toks))
	if ps.rec != nil {
		ps.rec.toks = append(ps.rec.toks, toks...)
	}
	if mask&(mask-1) == 0 {
		// One start: straight into its set (a bitset that stays in cache).
		acc := ps.accs[bits.TrailingZeros64(mask)]
		for _, id := range toks {
			acc.add(id)
		}
		return
	}
	for _, id := range toks {
		if ps.accMask[id] == 0 {
			ps.touched = append(ps.touched, id)
		}
		ps.accMask[id] |= mask
	}
}

// runLevel1Batch computes level 1 for the non-repetition top states qs
// (at most 64).
func (w *walker) runLevel1Batch(qs []int32, ps *pwalkState) ([]*level1, error) {
	w.symbolic = false
	w.st.ar.reset()
	w.st.overflow = false
	ps.accs = w.scr.starts(len(qs))
	for len(ps.cross) < len(qs) {
		ps.cross = append(ps.cross, nil)
	}
	if len(qs) > 1 {
		// (A single start accepts straight into its builder.)
		ps.accMask = w.scr.marks()
	}
	w.buf = w.buf[:0]
	ps.gbuf = ps.gbuf[:0]
	for i, q := range qs {
		ps.cross[i] = ps.cross[i][:0]
		base := node{q, 0, predsBoundary}
		// Token references at the start of a token.
		w.acc = ps.accs[i]
		w.baseFrame = w.a.states[q].frame
		w.tokRefs(base)
		w.acc = w.scr.acc
		w.buf = append(w.buf, base)
		ps.gbuf = append(ps.gbuf, pgroup{int32(i), int32(i + 1), 1 << uint(i)})
	}
	w.pvisit(ps, qs, 0, 0, len(ps.gbuf), 0)
	w.work += ps.work + int64(len(ps.touched)) + StateWorkUnits*int64(len(qs))
	w.nodes += ps.nodes
	ps.work, ps.nodes = 0, 0
	if w.st.overflow {
		return nil, ErrTooAmbiguous
	}
	// Split the accepted tokens by the exact set of starts that accept
	// them: starts with similar futures mostly accept the same tokens, so
	// there are few distinct patterns; a large pattern is built once as a
	// shared set and ORed into each of its starts.
	if ps.patIndex == nil {
		ps.patIndex = map[uint64]int32{}
	}
	clear(ps.patIndex)
	ps.patCount = ps.patCount[:0]
	for _, id := range ps.touched {
		m := ps.accMask[id]
		k, ok := ps.patIndex[m]
		if !ok {
			k = int32(len(ps.patCount))
			ps.patIndex[m] = k
			ps.patCount = append(ps.patCount, 0)
		}
		ps.patCount[k]++
	}
	shared := make([]*setBuilder, len(ps.patCount))
	thr := denseThreshold(w.c.prep.words)
	for _, id := range ps.touched {
		m := ps.accMask[id]
		ps.accMask[id] = 0
		k := ps.patIndex[m]
		if ps.patCount[k] > thr && m&(m-1) != 0 {
			if shared[k] == nil {
				shared[k] = w.scr.builder()
			}
			shared[k].add(id)
			continue
		}
		for ; m != 0; m &= m - 1 {
			ps.accs[bits.TrailingZeros64(m)].add(id)
		}
	}
	for m, k := range ps.patIndex {
		if shared[k] == nil {
			continue
		}
		set := w.build(shared[k])
		w.scr.putBuilder(shared[k])
		for ; m != 0; m &= m - 1 {
			ps.accs[bits.TrailingZeros64(m)].addSet(&set)
		}
	}
	ps.touched = ps.touched[:0]
	out := make([]*level1, len(qs))
	// (The batch's levels and their entries in one allocation.)
	les := make([]level1Entry, len(qs))
	for i := range qs {
		le := &les[i]
		le.l.full = w.build(ps.accs[i])
		le.e = ctxEntry{in: &le.l.full, cross: uniqueNodes(ps.cross[i])}
		le.l.plain = &le.e
		out[i] = &le.l
	}
	return out, nil
}

// level1Entry is a plain state's level 1 with its entry, allocated
// together (runLevel1Batch).
type level1Entry struct {
	l level1
	e ctxEntry
}

// pvisit explores trie node u with the groups ps.gbuf[glo:ghi].
func (w *walker) pvisit(ps *pwalkState, qs []int32, u int32, glo, ghi, depth int) {
	if depth == 1 && ps.rec == nil && w.c.subMemo != nil {
		glo = w.memoGroups(ps, qs, u, glo, ghi)
		if glo == ghi {
			return
		}
	}
	w.pvisitAt(ps, qs, u, glo, ghi, depth)
}

// subKey identifies the walk of the trie subtree of a depth-1 node from a
// base node (predecessors: boundary).
type subKey struct {
	u int32
	n node
}

// subResult is such a walk's result: the tokens accepted in the subtree
// and the cross points (already filtered by the base frame's follow set).
type subResult struct {
	toks  []int32
	cross []int32
}

// memoGroups handles the groups gbuf[glo:ghi] at depth-1 node u whose
// configuration is a single base node: from the compile-wide memo if this
// (u, node) was walked before, else by walking it alone and recording the
// result. It moves the other groups to the front of the range and returns
// where they start... (the remaining groups are gbuf[newGlo:ghi]).
func (w *walker) memoGroups(ps *pwalkState, qs []int32, u int32, glo, ghi int) int {
	rest := ghi
	for gi := ghi - 1; gi >= glo; gi-- {
		g := ps.gbuf[gi]
		if g.hi-g.lo != 1 || w.buf[g.lo].preds != predsBoundary {
			continue
		}
		k := subKey{u, w.buf[g.lo]}
		r := w.c.subMemo[k]
		if r == nil {
			r = &subResult{}
			ps.rec, ps.recCross = r, true
			w.pvisitAt(ps, qs, u, gi, gi+1, 1)
			ps.rec = nil
			w.c.subMemo[k] = r
		} else {
			ps.accept(r.toks, g.mask)
		}
		for m := g.mask; m != 0; m &= m - 1 {
			i := bits.TrailingZeros64(m)
			for _, x := range r.cross {
				ps.cross[i] = append(ps.cross[i], crossPt{x, 0})
			}
		}
		// Move the group out of the range.
		rest--
		ps.gbuf[gi], ps.gbuf[rest] = ps.gbuf[rest], ps.gbuf[gi]
	}
	// The groups not handled are now gbuf[glo:rest]; callers take
	// [glo, rest) by swapping the bounds.
	n := rest - glo
	copy(ps.gbuf[ghi-n:ghi], ps.gbuf[glo:rest])
	return ghi - n
}

// pvisitAt is pvisit without the depth-1 memo.
func (w *walker) pvisitAt(ps *pwalkState, qs []int32, u int32, glo, ghi, depth int) {
	t, a := w.t, w.a
	ps.work += int64(ghi - glo)
	ps.nodes += int64(ghi - glo)
	if depth > 0 {
		if toks := t.TokensAt(u); len(toks) > 0 {
			for _, g := range ps.gbuf[glo:ghi] {
				ps.accept(toks, g.mask)
			}
		}
	}
	es, ee := t.Children(u)
	if es == ee {
		return
	}
	// Cross points, filtered by each start's frame follow set.
	for _, g := range ps.gbuf[glo:ghi] {
		for _, n := range w.buf[g.lo:g.hi] {
			if w.st.canCross(n) {
				for m := g.mask; m != 0; m &= m - 1 {
					i := bits.TrailingZeros64(m)
					w.baseFrame = a.states[qs[i]].frame
					if w.crossCheck(u, es, ee) {
						ps.addCross(i, u)
					}
				}
				break
			}
		}
	}
	topB := len(w.buf)
	topG := len(ps.gbuf)
	if ghi-glo == 1 && depth > 0 {
		g := ps.gbuf[glo]
		if g.hi-g.lo == 1 && w.tightOK(w.buf[g.lo]) {
			w.scan(ps, qs, u, w.buf[g.lo], g.mask, depth)
			return
		}
	}
	if depth > 0 {
		total, ok := 0, true
		for _, g := range ps.gbuf[glo:ghi] {
			total += int(g.hi - g.lo)
			if !w.lockstepOK(w.buf[g.lo:g.hi]) {
				ok = false
				break
			}
		}
		if ok && total <= maxLockstep {
			w.plockstep(ps, qs, u, glo, ghi, depth)
			return
		}
	}
	// Are all groups single nodes with fast steps (and, at depth 0, the
	// start states, whose calls are accounted for separately)? Then
	// stepping is a lookup except where a byte may pop a frame.
	for len(ps.fs) <= depth {
		ps.fs = append(ps.fs, nil)
	}
	if cap(ps.fs[depth]) < ghi-glo {
		ps.fs[depth] = make([]fastStep, ghi-glo)
	}
	fast := true
	fsl := ps.fs[depth][:ghi-glo]
	for i, g := range ps.gbuf[glo:ghi] {
		if g.hi-g.lo != 1 {
			fast = false
			break
		}
		n := w.buf[g.lo]
		if depth == 0 {
			st := &a.states[n.state]
			if len(st.toks) != 0 || a.frames[st.frame].repeat {
				fast = false
				break
			}
			fsl[i] = fastStep{ok: true, frame: st.frame, row: a.row(n.state), cnt: n.cnt}
			continue
		}
		fsl[i] = w.fastStepper(n)
		if !fsl[i].ok {
			fast = false
			break
		}
	}
	if fast {
		for e := es; e < ee; e++ {
			b := t.EdgeByte[e]
			c := int(a.classOf[b])
			w.buf = w.buf[:topB]
			ps.gbuf = ps.gbuf[:topG]
			for gi := glo; gi < ghi; gi++ {
				g := ps.gbuf[gi]
				n := w.buf[g.lo]
				fs := &fsl[gi-glo]
				if depth == 0 && len(ps.skip) != 0 && ps.skip[bits.TrailingZeros64(g.mask)].has(byte(c)) {
					// This start borrows its tokens of class c from its
					// main successor (Compiled.level1Plain).
					continue
				}
				if fs.pop && a.follow[fs.frame].has(b) {
					next := w.st.stepAll([]node{n}, c)
					if len(next) == 0 {
						continue
					}
					w.addGroup(ps, topG, next, g.mask)
					continue
				}
				nx := fs.row.next(c)
				if nx < 0 || !w.st.live(nx, fs.cnt) {
					continue
				}
				w.addGroup(ps, topG, []node{{nx, fs.cnt, n.preds}}, g.mask)
			}
			if len(ps.gbuf) > topG {
				w.pvisit(ps, qs, t.EdgeNode[e], topG, len(ps.gbuf), depth+1)
			}
		}
		w.buf = w.buf[:topB]
		ps.gbuf = ps.gbuf[:topG]
		return
	}
	// General case: step each group's configuration per child byte class
	// (memoized per class at this node) and merge equal configurations.
	memo, _ := w.memoRow(depth)
	for e := es; e < ee; e++ {
		memo[a.classOf[t.EdgeByte[e]]] = 0
	}
	for e := es; e < ee; e++ {
		c := int(a.classOf[t.EdgeByte[e]])
		if memo[c] == 0 {
			// Compute the next groups for class c and keep them at the
			// end of gbuf; memo records their range.
			gStart := len(ps.gbuf)
			for gi := glo; gi < ghi; gi++ {
				g := ps.gbuf[gi]
				next := w.st.stepAll(w.buf[g.lo:g.hi], c)
				if len(next) == 0 {
					continue
				}
				if len(next) > MaxConfig {
					w.st.overflow = true
					continue
				}
				merged := false
				for k := gStart; k < len(ps.gbuf); k++ {
					o := ps.gbuf[k]
					if slices.Equal(w.buf[o.lo:o.hi], next) {
						ps.gbuf[k].mask |= g.mask
						merged = true
						break
					}
				}
				if !merged {
					lo := len(w.buf)
					w.buf = append(w.buf, next...)
					ps.gbuf = append(ps.gbuf, pgroup{int32(lo), int32(len(w.buf)), g.mask})
				}
			}
			memo[c] = int32(gStart)<<16 | int32(len(ps.gbuf)-gStart) + 1
			if len(ps.gbuf)-gStart >= 1<<16-1 || gStart >= 1<<15 {
				// Too many groups to pack; fall back to no memo.
				memo[c] = 0
			}
		}
	}
	for e := es; e < ee; e++ {
		c := int(a.classOf[t.EdgeByte[e]])
		v := memo[c] - 1
		if v < 0 {
			continue
		}
		gs, gn := int(v>>16), int(v&0xffff)
		if gn == 0 {
			continue
		}
		w.pvisit(ps, qs, t.EdgeNode[e], gs, gs+gn, depth+1)
	}
	w.buf = w.buf[:topB]
	ps.gbuf = ps.gbuf[:topG]
}

// addGroup adds configuration next for the starts in mask to the groups
// from gStart on, merging it into an equal configuration if there is one.
func (w *walker) addGroup(ps *pwalkState, gStart int, next []node, mask uint64) {
	for k := gStart; k < len(ps.gbuf); k++ {
		o := ps.gbuf[k]
		if slices.Equal(w.buf[o.lo:o.hi], next) {
			ps.gbuf[k].mask |= mask
			return
		}
	}
	lo := len(w.buf)
	w.buf = append(w.buf, next...)
	ps.gbuf = append(ps.gbuf, pgroup{int32(lo), int32(len(w.buf)), mask})
}

// tightOK reports whether n can be walked by the tight loops: its state
// steps by table lookup keeping counter and predecessors, and popping is
// irrelevant (n is the base, or its state cannot pop).
func (w *walker) tightOK(n node) bool {
	return w.a.states[n.state].flags&(stTight|stIterOnly) != 0
}

// tightRow returns the transition row that a tight node in state q with
// counter cnt steps by, and the counter after the step (an iteration end
// starts the next iteration from the body start); ok is false if no step
// is possible (the repetition's bound is reached).
func (w *walker) tightRow(q, cnt int32) (r row, next int32, ok bool) {
	a := w.a
	st := &a.states[q]
	if st.flags&stIterOnly != 0 {
		f := &a.frames[st.frame]
		if cnt >= 0 && f.max >= 0 && cnt >= f.max {
			return row{}, 0, false
		}
		return a.row(f.start), nextIteration(cnt), true
	}
	return a.row(q), cnt, true
}

// scanLevel is what a linear scan keeps per trie depth: the node
// reached at that depth and how its children step.
type scanLevel struct {
	q, cnt  int32
	row     row   // transition row its children step by (cells nil: none)
	nextCnt int32 // counter after that step
	pops    bool  // it may pop: bytes of its frame's follow set need a full step
}

// setLevel records at depth d the tight node (q, cnt) and how its
// children step.
func (w *walker) setLevel(lv []scanLevel, d int, q, cnt, preds int32, base bool) {
	r, ncnt, ok := w.tightRow(q, cnt)
	if !ok {
		r = row{}
	}
	lv[d] = scanLevel{q: q, cnt: cnt, row: r, nextCnt: ncnt, pops: !base && w.st.canPop(node{q, cnt, preds})}
}

// scan walks the subtree below trie node u (whose own tokens and cross
// points are done) from the tight node n. The trie's nodes are in
// preorder, so the subtree is a range of node numbers, scanned in order
// with the state of each depth kept in a scanLevel; dead subtrees are
// skipped, and nodes that are not tight go back to the descent (visit,
// or pvisit for the starts in mask when ps is not nil) with their
// subtree. It serves both walkers: with ps nil, the single walker's
// (costs in symbolic walks), else the parallel walk's.
func (w *walker) scan(ps *pwalkState, qs []int32, u int32, n node, mask uint64, depth int) {
	t, a := w.t, w.a
	base := n.preds == predsBoundary
	follow := &a.follow[a.states[n.state].frame]
	// In a symbolic walk, the cost of a token ending in this region: for
	// the base, its iterations (see below); above it, the base's, which
	// stays fixed here.
	var fixedCost int32
	if ps == nil && w.symbolic && !base {
		fixedCost = w.st.baseIt(n)
	}
	var crossMask uint64
	if base {
		if ps == nil {
			crossMask = frameBuckets(&w.bm.crossF, w.c.crossFollow, w.baseFrame)
		} else {
			for m := mask; m != 0; m &= m - 1 {
				crossMask |= frameBuckets(&w.bm.crossF, w.c.crossFollow, a.states[qs[bits.TrailingZeros64(m)]].frame)
			}
		}
	}
	// (A scan within a scan, from a deeper node, overwrites only the
	// levels below that node, which the outer scan does not read again.)
	if need := int(w.c.maxLen) + 2; len(w.levels) < need {
		w.levels = make([]scanLevel, need)
	}
	lv := w.levels
	w.setLevel(lv, int(t.Nodes[u].Depth), n.state, n.cnt, n.preds, base)
	// descend hands the subtree of v, reached with the configuration
	// w.buf[top:], back to the descent.
	descend := func(v int32, top, d int) {
		if ps == nil {
			w.visit(v, top, len(w.buf), d, false)
			return
		}
		topG := len(ps.gbuf)
		ps.gbuf = append(ps.gbuf, pgroup{int32(top), int32(len(w.buf)), mask})
		w.pvisit(ps, qs, v, topG, topG+1, d)
		ps.gbuf = ps.gbuf[:topG]
	}
	// Levels are indexed by trie depth; the descent takes depths relative
	// to the walk's start.
	nodes := t.Nodes
	rel := depth - int(nodes[u].Depth)
	end := nodes[u].SubtreeEnd
	for v := u + 1; v < end; {
		w.work++
		w.nodes++
		nd := &nodes[v]
		d := int(nd.Depth)
		p := &lv[d-1]
		b := nd.InByte
		if p.pops && follow.has(b) {
			// The parent may pop on this byte: step it in full.
			top := len(w.buf)
			w.buf = append(w.buf, w.st.stepAll([]node{{p.q, p.cnt, n.preds}}, int(a.classOf[b]))...)
			if len(w.buf) > top {
				descend(v, top, d+rel)
			}
			w.buf = w.buf[:top]
			v = nd.SubtreeEnd
			continue
		}
		if p.row.cells == nil {
			v = nd.SubtreeEnd
			continue
		}
		nx := p.row.next(int(a.classOf[b]))
		if nx < 0 {
			v = nd.SubtreeEnd
			continue
		}
		fl := a.flags[nx]
		if fl&stRepeat != 0 && fl&stReachPop == 0 && !w.st.live(nx, p.nextCnt) {
			v = nd.SubtreeEnd
			continue
		}
		if fl&(stTight|stIterOnly) == 0 {
			top := len(w.buf)
			w.buf = append(w.buf, node{nx, p.nextCnt, n.preds})
			descend(v, top, d+rel)
			w.buf = w.buf[:top]
			v = nd.SubtreeEnd
			continue
		}
		if ts, te := nd.TokStart, nodes[v+1].TokStart; ts != te {
			if ps != nil {
				ps.accept(t.Toks[ts:te], mask)
			} else {
				cost := int32(0)
				if w.symbolic {
					if base {
						// Its iterations, one more where the iteration
						// cannot end the repetition.
						cost = iterations(p.nextCnt)
						if p.nextCnt < 0 && fl&stReachPop == 0 {
							cost++
						}
					} else {
						cost = fixedCost
					}
				}
				for _, id := range t.Toks[ts:te] {
					w.accept(id, cost)
				}
			}
		}
		if nd.SubtreeEnd == v+1 {
			v++
			continue
		}
		if base && fl&stFinal != 0 {
			nn := node{nx, p.nextCnt, n.preds}
			if w.st.canPop(nn) {
				es, ee := t.Children(v)
				if ps == nil {
					if w.crossCheck(v, es, ee) {
						w.cross = append(w.cross, crossPt{v, iterations(min(p.nextCnt, 0))})
						w.crossMark = len(w.cross)
					}
				} else {
					for m := mask; m != 0; m &= m - 1 {
						i := bits.TrailingZeros64(m)
						w.baseFrame = a.states[qs[i]].frame
						if w.crossCheck(v, es, ee) {
							ps.addCross(i, v)
						}
					}
				}
			}
		}
		if w.bulkOK(v, nx, p.nextCnt, base, crossMask) {
			below := t.TokensBelow(v)
			switch {
			case ps != nil:
				ps.accept(below, mask)
			case !w.symbolic:
				w.work += int64(len(below))
				for _, id := range below {
					w.acc.add(id)
				}
			case base:
				w.bulkCosts(v, nx, p.nextCnt)
			default:
				for _, id := range below {
					w.accept(id, fixedCost)
				}
			}
			v = nd.SubtreeEnd
			continue
		}
		w.setLevel(lv, d, nx, p.nextCnt, n.preds, base)
		v++
	}
}

// maxLockstep bounds the nodes (over all groups) plockstep steps
// together; larger configurations take pvisit's general path.
const maxLockstep = 32

// lockstepOK reports whether every node of cfg can step by table lookup.
func (w *walker) lockstepOK(cfg []node) bool {
	for _, n := range cfg {
		if !w.tightOK(n) {
			return false
		}
	}
	return true
}

// lockGroup is one group of a plockstep item: its starts and its nodes
// at ps.lbuf[lo:lo+n].
type lockGroup struct {
	mask  uint64
	lo, n int32
}

// lockItem is a pending trie node of plockstep with its groups at
// ps.lgrp[glo:glo+gn]; full marks groups already stepped in full, for
// pvisit.
type lockItem struct {
	u, depth int32
	glo, gn  int32
	full     bool
}

// plockstep walks the subtree below trie node u for the groups
// gbuf[glo:ghi], whose nodes all step by table lookup, iteratively and
// in lockstep: a child whose byte may pop a node (a byte of its frame's
// follow set) is stepped in full and handed back to pvisit, as are
// configurations that stop being tight.
func (w *walker) plockstep(ps *pwalkState, qs []int32, u int32, glo, ghi, depth int) {
	t, a := w.t, w.a
	stack := ps.lock
	floor := len(stack)
	lfloor, gfloor := len(ps.lbuf), len(ps.lgrp)
	// stepGroups steps the groups of item (glo, gn) over byte b and
	// pushes the child item; full reports a byte that may pop.
	pushChild := func(child int32, b byte, glo, gn int32, d int) {
		c := int(a.classOf[b])
		gStart := int32(len(ps.lgrp))
		full := false
	groups:
		for gi := glo; gi < glo+gn; gi++ {
			g := ps.lgrp[gi]
			for i := g.lo; i < g.lo+g.n; i++ {
				nd := ps.lbuf[i]
				if nd.preds != predsBoundary && a.follow[a.states[nd.state].frame].has(b) && w.st.canPop(nd) {
					full = true
					break groups
				}
			}
		}
		for gi := glo; gi < glo+gn; gi++ {
			g := ps.lgrp[gi]
			start := int32(len(ps.lbuf))
			if full {
				ps.lbuf = append(ps.lbuf, w.st.stepAll(ps.lbuf[g.lo:g.lo+g.n], c)...)
			} else {
				for i := g.lo; i < g.lo+g.n; i++ {
					nd := ps.lbuf[i]
					r, ncnt, ok := w.tightRow(nd.state, nd.cnt)
					if !ok {
						continue
					}
					nx := r.next(c)
					if nx < 0 || (a.frames[a.states[nx].frame].repeat && !w.st.live(nx, ncnt)) {
						continue
					}
					ps.lbuf = append(ps.lbuf, node{nx, ncnt, nd.preds})
				}
				if k := len(ps.lbuf) - int(start); k > 1 {
					merged := w.st.merge(ps.lbuf[start:])
					ps.lbuf = ps.lbuf[:int(start)+len(merged)]
				}
			}
			k := int32(len(ps.lbuf)) - start
			if k == 0 {
				continue
			}
			// Merge with an equal group of this child.
			cfg := ps.lbuf[start:]
			merged := false
			for oi := gStart; oi < int32(len(ps.lgrp)); oi++ {
				o := ps.lgrp[oi]
				if slices.Equal(ps.lbuf[o.lo:o.lo+o.n], cfg) {
					ps.lgrp[oi].mask |= g.mask
					ps.lbuf = ps.lbuf[:start]
					merged = true
					break
				}
			}
			if !merged {
				ps.lgrp = append(ps.lgrp, lockGroup{g.mask, start, k})
			}
		}
		if gn := int32(len(ps.lgrp)) - gStart; gn > 0 {
			stack = append(stack, lockItem{child, int32(d + 1), gStart, gn, full})
		}
	}
	// The initial item.
	g0 := int32(len(ps.lgrp))
	for _, g := range ps.gbuf[glo:ghi] {
		lo := int32(len(ps.lbuf))
		ps.lbuf = append(ps.lbuf, w.buf[g.lo:g.hi]...)
		ps.lgrp = append(ps.lgrp, lockGroup{g.mask, lo, g.hi - g.lo})
	}
	es, ee := t.Children(u)
	for e := ee - 1; e >= es; e-- {
		pushChild(t.EdgeNode[e], t.EdgeByte[e], g0, int32(ghi-glo), depth)
	}
	for len(stack) > floor {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		groups := ps.lgrp[it.glo : it.glo+it.gn]
		ps.work += int64(it.gn)
		ps.nodes += int64(it.gn)
		total, tight := 0, true
		for _, g := range groups {
			total += int(g.n)
			if tight && !w.lockstepOK(ps.lbuf[g.lo:g.lo+g.n]) {
				tight = false
			}
		}
		end := groups[len(groups)-1]
		endL := end.lo + end.n
		if it.full || !tight || total > maxLockstep {
			ps.lock = stack
			topB, topG := len(w.buf), len(ps.gbuf)
			for _, g := range groups {
				lo := len(w.buf)
				w.buf = append(w.buf, ps.lbuf[g.lo:g.lo+g.n]...)
				ps.gbuf = append(ps.gbuf, pgroup{int32(lo), int32(len(w.buf)), g.mask})
			}
			w.pvisit(ps, qs, it.u, topG, len(ps.gbuf), int(it.depth))
			w.buf = w.buf[:topB]
			ps.gbuf = ps.gbuf[:topG]
			stack = ps.lock
			ps.lgrp = ps.lgrp[:it.glo+it.gn]
			ps.lbuf = ps.lbuf[:endL]
			continue
		}
		ps.lgrp = ps.lgrp[:it.glo+it.gn]
		ps.lbuf = ps.lbuf[:endL]
		if toks := t.TokensAt(it.u); len(toks) > 0 {
			for _, g := range groups {
				ps.accept(toks, g.mask)
			}
		}
		es, ee := t.Children(it.u)
		if es == ee {
			continue
		}
		for _, g := range groups {
			for _, nd := range ps.lbuf[g.lo : g.lo+g.n] {
				if nd.preds == predsBoundary && w.st.canPop(nd) {
					for m := g.mask; m != 0; m &= m - 1 {
						i := bits.TrailingZeros64(m)
						w.baseFrame = a.states[qs[i]].frame
						if w.crossCheck(it.u, es, ee) {
							ps.addCross(i, it.u)
						}
					}
					break
				}
			}
		}
		for e := ee - 1; e >= es; e-- {
			pushChild(t.EdgeNode[e], t.EdgeByte[e], it.glo, it.gn, int(it.depth))
		}
	}
	ps.lock = stack[:floor]
	ps.lbuf = ps.lbuf[:lfloor]
	ps.lgrp = ps.lgrp[:gfloor]
}
