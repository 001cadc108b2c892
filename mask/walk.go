package mask

import (
	"slices"
	"time"
	"unsafe"

	"github.com/structgen/structgen/vocab"
)

// The mask of a configuration is computed from the top of each stack
// down, one level at a time, and every level is cached in the Compiled:
//
//   - level 1 of a top state q: walk the token trie from q, allowing
//     pushes of other frames above q but not popping below q. Tokens
//     that end inside are allowed whatever lies below (IN(q)); the trie
//     nodes where q's frame can pop and the token goes on are cross
//     points, whose subtrees depend on the frame below.
//   - level k+1: from the cross points of level k, walk their subtrees
//     in the frame below (its return state), with the same rule.
//
// The sets are exact: a token is in the union of its stack's levels iff
// its bytes are a viable continuation. Level 1 is computed for every
// possible top state at compile time; deeper levels on first use, keyed
// by the states (and counter classes) of the frames they looked at.
//
// In a repetition frame, level 1 is walked once with a symbolic counter
// and records for each token the number of iterations it starts (its
// cost) and for each cross point the iterations before the pop; the sets
// for a concrete counter (iterations still allowed, iterations still
// needed) are derived from those by filtering.

type crossPt struct {
	node int32 // trie node
	it   int32 // iterations started before the pop (symbolic walks)
}

type walker struct {
	c         *Compiled
	a         *automaton
	t         *vocab.Trie
	st        stepper
	acc       *setBuilder
	cost      []uint16 // per token: fewest iterations started (symbolic walks); valid for acc.ids
	cross     []crossPt
	buf       []node
	baseFrame int32 // frame of the walk's base node
	crossMark int   // cross points before this index belong to earlier trie nodes
	levels    []scanLevel
	symbolic  bool    // the base is a repetition node with a symbolic counter (costs are tracked)
	memo      []int32 // per (depth, class): offset+1 of the successor configuration in buf, 0 if not computed
	memoN     []int32 // its length
	bm        bulkMasks
	scr       *scratch // borrowed from the vocabulary's pool between take and release
	work      int64    // work units done (see DefaultEagerWork; with st.steps: units)
	gathered  int64    // what vocab.Trie.Gather read (unused: it keeps the reads)
	nodes     int64    // of which: trie nodes stepped (a unit each; CompileStats.EagerNodes)
	sliceWork int64    // work of the slices below nodes made by walks (belowSlice): not in units, the caller books it (takeSliceWork)
	chainBuf  []int32  // an open chain's states (openExits)
	regionBuf []int32  // the states at a region's exit tree (regionExits)

	ps pwalkState // level1Plain's parallel walks (see there)

	// deep: a matcher's walk of a level below the top (deepWalkers),
	// which runs without lazyMu beside the first uses that write the
	// compilation's region memo: it reads none of it (regionBuckets).
	deep bool
}

// newWalker returns a walker for c; it needs a scratch (take) to walk.
func newWalker(c *Compiled) *walker {
	w := &walker{
		c: c,
		a: c.a,
		t: c.prep.trie,
	}
	w.st = stepper{a: c.a, v: c.v, ar: newArena()}
	return w
}

// heldBytes estimates the memory the walker's buffers hold (their
// capacities: a walker kept for first uses keeps them).
func (w *walker) heldBytes() int {
	n := int(unsafe.Sizeof(*w)) + capBytes(w.cross) + capBytes(w.buf) + capBytes(w.levels) + capBytes(w.chainBuf) + capBytes(w.regionBuf) +
		capBytes(w.memo) + capBytes(w.memoN) + capBytes(w.bm.loop) + capBytes(w.bm.follow) + capBytes(w.bm.crossF)
	if ar := w.st.ar; ar != nil {
		n += capBytes(ar.nodes) + capBytes(ar.table) + capBytes(ar.sets) + capBytes(ar.single) + capBytes(ar.key)
		for _, s := range ar.sets {
			n += capBytes(s)
		}
		// (a map entry: its string header and value, and the key's bytes
		// are those of a set: about twice a set's)
		n += len(ar.setIndex) * 48
	}
	ps := &w.ps
	n += capBytes(ps.cross) + capBytes(ps.gbuf) + capBytes(ps.fs) + capBytes(ps.lock) +
		capBytes(ps.lbuf) + capBytes(ps.lgrp) + capBytes(ps.skip) + capBytes(ps.touched) + capBytes(ps.patCount) +
		len(ps.patIndex)*16
	for _, x := range ps.cross {
		n += capBytes(x)
	}
	for _, x := range ps.fs {
		n += capBytes(x)
	}
	return n
}

// capBytes is the memory of s's backing array.
func capBytes[T any](s []T) int {
	var z T
	return cap(s) * int(unsafe.Sizeof(z))
}

// take borrows the vocabulary-sized buffers for a computation.
func (w *walker) take() {
	w.scr = w.c.prep.getScratch()
	w.acc = w.scr.acc
}

// release gives them back, with the parallel walk's references into
// them (a walker kept for first uses must not pin a scratch the pool let
// go: its per-token marks are 8 bytes a token).
func (w *walker) release() {
	w.c.prep.putScratch(w.scr)
	w.scr, w.acc, w.cost = nil, nil, nil
	w.ps.accs, w.ps.accMask = nil, nil
}

// walk explores the trie from each start node with the configuration
// {base}. Tokens ending strictly below a start node (or, from the root,
// anywhere) and reachable are added to w.acc; cross points to w.cross.
func (w *walker) walk(base node, symbolic bool, starts []int32) {
	w.begin(base, symbolic)
	if len(starts) > 1 {
		// Starts are scattered over the trie (cross points): read their
		// records up front, with overlapping misses (vocab.Trie.Gather).
		w.gathered += w.t.Gather(starts)
	}
	for _, u := range starts {
		w.buf = append(w.buf[:0], base)
		if u == 0 {
			w.tokRefs(base)
		} else if w.belowSlice(u, base) {
			continue
		}
		w.visit(u, 0, 1, 0, true)
	}
}

// begin prepares a walk from base (the walker's set builder must be
// empty; visit takes the configurations from w.buf).
func (w *walker) begin(base node, symbolic bool) {
	w.symbolic = symbolic
	w.baseFrame = w.a.states[base.state].frame
	w.st.ar.reset()
	w.st.overflow = false
	w.cross = w.cross[:0]
	w.crossMark = 0
	if symbolic && w.cost == nil {
		w.cost = w.scr.costs()
	}
}

// memoRows is the rows of memo and memoN a walker starts with: most walks
// on first use stay a few bytes deep, and the rows of every depth a token
// can reach ((maxLen+2)·classes, 80 KB on Llama-3) cost a first use more
// to allocate and clear than its walk (a fixed 20 µs per grammar).
const memoRows = 8

// memoRow returns the rows of memo and memoN for trie depth depth,
// growing them as a walk goes deeper. (A visit further up keeps the row
// it took from the old arrays, which only it uses.)
func (w *walker) memoRow(depth int) (memo, memoN []int32) {
	nc := w.a.nc
	if need := (depth + 1) * nc; len(w.memo) < need {
		n := max(need, 2*len(w.memo), memoRows*nc)
		w.memo = append(w.memo, make([]int32, n-len(w.memo))...)
		w.memoN = append(w.memoN, make([]int32, n-len(w.memoN))...)
	}
	return w.memo[depth*nc : (depth+1)*nc], w.memoN[depth*nc : (depth+1)*nc]
}

// units returns the work units done so far (see DefaultEagerWork).
func (w *walker) units() int64 { return w.work + w.st.steps }

// build builds b's set, counting the work.
func (w *walker) build(b *setBuilder) tokenSet {
	s := b.build()
	w.work += s.work()
	return s
}

// addSet adds s to b, counting the work.
//
// In a symbolic walk, w.acc's ids are the tokens the walk accepted, each
// with its cost (w.cost; symbolicLevel1 sorts them by it): a set added
// whole has no costs, so its tokens go into w.acc's bits only. (A
// slice's tokens as a list once came in as ids with the cost 0 or an
// earlier walk's, and a bounded repetition allowed them whatever the
// characters left: [!-/:-@\[-`{-~]{1,5} allowed "--------" after "!".)
func (w *walker) addSet(b *setBuilder, s *tokenSet) {
	w.work += s.work()
	if w.symbolic && b == w.acc {
		b.addSetBits(s)
		return
	}
	b.addSet(s)
}

// accept records token id as allowed with the given cost.
func (w *walker) accept(id int32, cost int32) {
	w.work++
	if w.symbolic {
		c := uint16(min(cost, 65535))
		if w.acc.bits[id>>5]&(1<<(uint32(id)&31)) == 0 {
			w.cost[id] = c
		} else if c < w.cost[id] {
			w.cost[id] = c
		}
	}
	w.acc.add(id)
}

// tokRefs accepts the tokens matched by token references reachable from
// the base configuration at the start of a token.
func (w *walker) tokRefs(base node) {
	w.st.begin()
	w.st.forTokEdges(base, func(e *tokEdge, succ node) {
		cost := int32(0)
		if w.symbolic {
			cost = w.st.baseIt(succ)
		}
		if !e.neg {
			w.accept(e.tok, cost)
			return
		}
		for _, id := range w.c.prep.normal {
			if id != e.tok {
				w.accept(id, cost)
			}
		}
		for _, id := range w.c.prep.special {
			if id != e.tok {
				w.accept(id, cost)
			}
		}
	})
}

// visit explores trie node u, reached at the given depth with the
// configuration buf[lo:hi]. Successor configurations are appended past
// the end of buf, which visit restores before returning.
func (w *walker) visit(u int32, lo, hi, depth int, start bool) {
	t, a := w.t, w.a
	w.work++
	w.nodes++
	top := len(w.buf)
	cfg := w.buf[lo:hi]
	if !start {
		if toks := t.TokensAt(u); len(toks) > 0 {
			cost := int32(0)
			if w.symbolic {
				cost = unboundedCount
				for _, n := range cfg {
					cost = min(cost, w.st.baseIt(n))
				}
			}
			for _, id := range toks {
				w.accept(id, cost)
			}
		}
	}
	es, ee := t.Children(u)
	if es == ee {
		return
	}
	// A cross point is worth recording only if some child byte can follow
	// the base frame, or at the root (token references).
	if w.crossCheck(u, es, ee) {
		w.crossAt(u, cfg)
	}
	if len(cfg) == 1 && depth > 0 && w.tightOK(cfg[0]) {
		w.scan(nil, nil, u, cfg[0], 0, depth)
		return
	}
	// Fast path: one node whose step is a table lookup for every byte that
	// cannot pop its frame (see fastStep).
	if len(cfg) == 1 {
		n := cfg[0]
		if fs := w.fastStepper(n); fs.ok {
			for e := es; e < ee; e++ {
				b := t.EdgeByte[e]
				var nn node
				if fs.pop && a.follow[fs.frame].has(b) {
					// The frame may pop here: step in full.
					next := w.st.stepAll([]node{n}, int(a.classOf[b]))
					if len(next) == 0 {
						continue
					}
					w.buf = append(w.buf[:top], next...)
					w.visit(t.EdgeNode[e], top, top+len(next), depth+1, false)
					continue
				}
				nx := fs.row.next(int(a.classOf[b]))
				if nx < 0 || !w.st.live(nx, fs.cnt) {
					continue
				}
				nn = node{nx, fs.cnt, n.preds}
				w.buf = append(w.buf[:top], nn)
				w.visit(t.EdgeNode[e], top, top+1, depth+1, false)
			}
			w.buf = w.buf[:top]
			return
		}
	}
	// General case: step the configuration once per byte class present
	// among the children; the successors are stored at buf[top:end].
	memo, memoN := w.memoRow(depth)
	for e := es; e < ee; e++ {
		memo[a.classOf[t.EdgeByte[e]]] = 0
	}
	end := top
	for e := es; e < ee; e++ {
		c := int(a.classOf[t.EdgeByte[e]])
		if memo[c] == 0 {
			next := w.st.stepAll(w.buf[lo:hi], c)
			if len(next) > MaxConfig {
				w.st.overflow = true
				next = next[:0]
			}
			memo[c] = int32(end) + 1
			memoN[c] = int32(len(next))
			w.buf = append(w.buf[:end], next...)
			end += len(next)
		}
	}
	for e := es; e < ee; e++ {
		c := int(a.classOf[t.EdgeByte[e]])
		off, n := int(memo[c]-1), int(memoN[c])
		if n == 0 {
			continue
		}
		w.visit(t.EdgeNode[e], off, off+n, depth+1, false)
		w.buf = w.buf[:end]
	}
	w.buf = w.buf[:top]
}

// crossAt records the cross points at trie node u of the configuration
// cfg (where crossCheck says they are worth it).
func (w *walker) crossAt(u int32, cfg []node) {
	for _, n := range cfg {
		w.st.crossIts(n, func(it int32) {
			for _, c := range w.cross[w.crossMark:] {
				if c.node == u && c.it == it {
					return
				}
			}
			w.cross = append(w.cross, crossPt{u, it})
		})
	}
	w.crossMark = len(w.cross)
}

// crossCheck reports whether a cross point at trie node u (children
// es..ee) can lead anywhere: u is the root, or a child byte is in the
// follow set of the walk's base frame (of all its twins, which share its
// level-1 data: see Compiled.crossFollow).
func (w *walker) crossCheck(u, es, ee int32) bool {
	if u == 0 {
		return true
	}
	fs := &w.c.crossFollow[w.baseFrame]
	for e := es; e < ee; e++ {
		if fs.has(w.t.EdgeByte[e]) {
			return true
		}
	}
	return false
}

// level1 is the compile-time result for one top state.
type level1 struct {
	full  tokenSet  // every token allowed at level 1 (any cost)
	cross []crossPt // cross points (with iterations, for repetition frames)

	// Repetition frames only: the allowed tokens sorted by cost, and
	// costOff[k] = number of them with cost < k; where the state uses a
	// slice, byCost has the tokens not in the slice, whose cost is the
	// characters they start (vocabPrep.upToChars).
	byCost  []int32
	costOff []int32
	slice   *vocab.Slice
	byN     map[int]*tokenSet // the bitsets of byCost[:n] made so far (costFiltered; guarded by Compiled.mu)

	plain *ctxEntry // the entry of a non-repetition state
}

// ctxEntry is one level of the mask of a stack: the tokens allowed at
// this level and the cross points left for the next.
type ctxEntry struct {
	in    *tokenSet
	also  []*tokenSet // more tokens allowed at this level (shared sets of other entries)
	cross []int32
	next  map[ctxKey]*ctxEntry // guarded by Compiled.mu
}

type ctxKey struct{ state, cls int32 }

// runLevel1 computes the level-1 data of top state q.
func (w *walker) runLevel1(q int32) (*level1, error) {
	a := w.a
	f := &a.frames[a.states[q].frame]
	symbolic := f.repeat
	base := node{q, 0, predsBoundary}
	if symbolic {
		base.cnt = -1 // no iteration started yet
	}
	w.work += StateWorkUnits
	w.walk(base, symbolic, []int32{0})
	if w.st.overflow {
		return nil, ErrTooAmbiguous
	}
	if symbolic {
		return w.symbolicLevel1(nil), nil
	}
	l := &level1{}
	l.full = w.build(w.acc)
	l.plain = &ctxEntry{in: &l.full, cross: uniqueNodes(w.cross)}
	return l, nil
}

// symbolicLevel1 returns the level-1 data of the symbolic walk just done:
// its tokens, those the walk accepted (w.acc.ids, not those added as a
// set) sorted by cost, and its cross points.
func (w *walker) symbolicLevel1(in *tokenSet) *level1 {
	l := &level1{}
	// Counting sort of the accepted ids by cost.
	l.costOff = make([]int32, int(w.c.maxLen)+3)
	for _, id := range w.acc.ids {
		c := min(int(w.cost[id]), len(l.costOff)-2)
		l.costOff[c+1]++
	}
	for i := 1; i < len(l.costOff); i++ {
		l.costOff[i] += l.costOff[i-1]
	}
	ids := make([]int32, len(w.acc.ids))
	fill := slices.Clone(l.costOff)
	for _, id := range w.acc.ids {
		c := min(int(w.cost[id]), len(l.costOff)-2)
		ids[fill[c]] = id
		fill[c]++
	}
	w.work += int64(2 * len(ids))
	l.byCost = ids
	l.cross = slices.Clone(w.cross)
	l.full = w.buildWith(w.acc, in)
	return l
}

// runLevel walks the cross points of a level in the frame below, whose
// node is p (p.preds is ignored).
func (w *walker) runLevel(cross []int32, p node) (*ctxEntry, error) {
	w.walk(node{p.state, p.cnt, predsBoundary}, false, cross)
	if w.st.overflow {
		return nil, ErrTooAmbiguous
	}
	s := w.build(w.acc)
	return &ctxEntry{in: &s, cross: uniqueNodes(w.cross)}, nil
}

func uniqueNodes(cs []crossPt) []int32 {
	if len(cs) == 0 {
		return nil
	}
	out := make([]int32, len(cs))
	for i, c := range cs {
		out[i] = c.node
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// counterClass returns the class of a repetition node's counter: the
// iterations it still needs and may still start, each capped at
// maxLen+1 (a token of at most maxLen bytes starts at most maxLen
// iterations, so larger values behave alike).
func (c *Compiled) counterClass(n node) (need, avail int32) {
	f := &c.a.frames[c.a.states[n.state].frame]
	if !f.repeat {
		return 0, 0
	}
	capv := c.maxLen + 1
	need = min(max(f.min-n.cnt, 0), capv)
	if f.max < 0 {
		avail = capv
	} else {
		avail = min(max(f.max-n.cnt, 0), capv)
	}
	return need, avail
}

func (c *Compiled) classKey(n node) ctxKey {
	need, avail := c.counterClass(n)
	return ctxKey{n.state, need*(c.maxLen+2) + avail}
}

// entryFor returns the level-1 entry of node n (concrete counter).
func (c *Compiled) entryFor(n node) *ctxEntry { return c.entryBooked(n, nil) }

// entryBooked is entryFor with the work of making a repetition state's
// entry counted as eager work in *eager (the eager phase: see
// precomputeDeeper), or, where eager is nil, as first-use work.
func (c *Compiled) entryBooked(n node, eager *int64) *ctxEntry {
	l := c.getLevel1(n.state)
	if l == nil {
		l = c.lazyLevel1(n.state)
	}
	if l.plain != nil {
		return l.plain
	}
	k := c.classKey(n)
	c.mu.Lock()
	e := c.repEntries[k]
	c.mu.Unlock()
	if e != nil {
		return e
	}
	if eager == nil {
		defer c.addLazyTime(time.Now())
	}
	need, avail := c.counterClass(n)
	e = &ctxEntry{in: c.costFiltered(l, avail, eager)}
	if l.slice != nil && avail <= c.maxLen {
		// The slice's tokens, as many characters as avail allows.
		// Making a slice's sets is vocabulary work, once per process,
		// counted as first-use work where it happens, or in the eager
		// phase as its slice work (not its budget: whether it happens
		// depends on the grammars compiled before).
		var work int64
		e.also = []*tokenSet{c.prep.upToChars(l.slice, avail, &work)}
		if eager != nil {
			c.sliceWork += work
		} else {
			c.lazyWork.Add(work)
		}
	}
	var cross []int32
	for _, cp := range l.cross {
		if cp.it >= need && cp.it <= avail {
			cross = append(cross, cp.node)
		}
	}
	slices.Sort(cross)
	e.cross = slices.Compact(cross)
	c.mu.Lock()
	if old := c.repEntries[k]; old != nil {
		e = old
	} else {
		c.repEntries[k] = e
	}
	c.mu.Unlock()
	return e
}

// costFiltered returns the level-1 tokens of l whose cost is at most
// avail (capped at maxLen+1, which means no limit). Making a set is
// booked as entryBooked says.
func (c *Compiled) costFiltered(l *level1, avail int32, eager *int64) *tokenSet {
	if avail > c.maxLen {
		return &l.full
	}
	n := int(l.costOff[avail+1])
	thr := denseThreshold(c.prep.words)
	switch {
	case l.slice != nil && n <= thr:
		// (byCost lists the tokens not in the slice: full is no help.)
		return &tokenSet{list: l.byCost[:n:n], n: n}
	case l.slice != nil:
		// (Falls through to a builder below.)
	case n == l.full.n:
		return &l.full
	case n <= thr:
		return &tokenSet{list: l.byCost[:n:n], n: n}
	case l.full.bits != nil && l.full.list == nil && l.full.n-n <= thr:
		return &tokenSet{bits: l.full.bits, excl: l.byCost[n:], n: n}
	}
	// A bitset of the n cheapest: shared by every counter class with the
	// same n (l.byN), its making counted as first-use work.
	c.mu.Lock()
	s := l.byN[n]
	c.mu.Unlock()
	if s != nil {
		return s
	}
	// (n is more than denseThreshold here: the bits are set directly. A
	// set builder also lists the ids and clears them again, three times
	// the memory traffic: Github_hard/o21072–6 made a set of 66,077 of
	// their 123,009 tokens on a first use, 200 µs and more.)
	// (byCost's ids are distinct: a walk's accepted ids.)
	bits := make([]uint32, c.prep.words)
	for _, id := range l.byCost[:n] {
		setBit(bits, id)
	}
	built := tokenSet{bits: bits, n: n}
	if eager != nil {
		*eager += int64(n) + built.work()
	} else {
		c.lazyWork.Add(int64(n) + built.work())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := l.byN[n]; s != nil {
		return s
	}
	if l.byN == nil {
		l.byN = map[int]*tokenSet{}
	}
	l.byN[n] = &built
	return &built
}

// A fastStep describes how a single node steps without calls or token
// edges: by the transition row (the body start's for an iteration end),
// keeping the counter cnt; if pop, bytes in the frame's follow set may
// also pop it and need a full step.
type fastStep struct {
	ok    bool
	pop   bool
	frame int32
	row   row
	cnt   int32
}

// fastStepper returns n's fast step, if it has one.
func (w *walker) fastStepper(n node) fastStep {
	a := w.a
	st := &a.states[n.state]
	if len(st.calls) != 0 || len(st.toks) != 0 {
		return fastStep{}
	}
	f := &a.frames[st.frame]
	fs := fastStep{ok: true, frame: st.frame, cnt: n.cnt}
	switch {
	case !f.repeat:
		if n.state == f.start {
			return fastStep{}
		}
		fs.row = a.row(n.state)
	case st.flags&stSimple != 0:
		fs.row = a.row(n.state)
	case st.flags&stIterOnly != 0:
		if _, hi := w.st.bounds(n, f); iterations(n.cnt) >= hi {
			return fastStep{}
		}
		fs.row = a.row(f.start)
		fs.cnt = nextIteration(n.cnt)
	default:
		return fastStep{}
	}
	// Popping matters only above known frames (onto boundary it is a cross
	// point, recorded separately).
	fs.pop = n.preds != predsBoundary && w.st.canPop(n)
	return fs
}

// getLevel1 returns the level-1 data of q, or nil if not computed yet.
func (c *Compiled) getLevel1(q int32) *level1 {
	if !c.done {
		return c.level1[q]
	}
	c.mu.Lock()
	l := c.level1[q]
	c.mu.Unlock()
	return l
}

// lazyLevel1 computes the level-1 data of a state that the eager phase of
// compilation left out (see DefaultEagerWork), as the compiler would.
// Computations are serialized; the result is shared by every matcher.
func (c *Compiled) lazyLevel1(q int32) *level1 {
	c.lazyWaiting.Add(1)
	c.lazyMu.Lock()
	c.lazyWaiting.Add(-1)
	defer c.lazyMu.Unlock()
	if l := c.getLevel1(q); l != nil {
		return l
	}
	if c.lazyWalker == nil {
		c.lazyWalker = newWalker(c)
	}
	t0 := time.Now()
	c.walker = c.lazyWalker
	c.walker.take()
	u0 := c.walker.units()
	c.subMemo = map[subKey]*subResult{}
	defer func() {
		c.addLazyTime(t0)
		c.lazyWork.Add(c.walker.units() - u0)

		c.lazyCount.Add(1)
		c.walker.release()
		c.walkerBytes.Store(int64(c.walker.heldBytes()))
		c.walker, c.subMemo, c.firstBits, c.firstDone = nil, nil, nil, nil
	}()
	var err error
	if c.a.frames[c.a.states[q].frame].repeat {
		err = c.level1Repeat(q)
	} else {
		err = c.level1Plain([]int32{q}, false)
	}
	l := c.getLevel1(q)
	if err != nil || l == nil {
		// Too ambiguous to enumerate: nothing is allowed from here (Accept
		// reports the error).
		l = &level1{}
		l.plain = &ctxEntry{in: &l.full}
		c.setLevel1(q, l)
	}
	return l
}

// bulkMasks caches, per state and frame, bucket masks (see trie.Below)
// for bulk: the buckets on which a tight state loops back to itself, and
// the buckets that meet a frame's follow set or cross-point filter.
// Entries are computed on first use; maskDone marks them.
type bulkMasks struct {
	loop   []uint64 // per state
	region []uint64 // per region (Compiled.regions): regionBuckets
	follow []uint64 // per frame: buckets meeting automaton.follow
	crossF []uint64 // per frame: buckets meeting Compiled.crossFollow
}

const maskDone = 1 << 63

// noBulk turns bulk acceptance off (tests compare with and without).
var noBulk = false

// loopBuckets returns the buckets all of whose bytes step the tight state
// q (by its tightRow) back to q: over a trie subtree whose edges are all
// in them, the walk stays in q.
func (w *walker) loopBuckets(q int32) uint64 {
	if w.bm.loop == nil {
		w.bm.loop = make([]uint64, len(w.a.states))
	}
	if m := w.bm.loop[q]; m != 0 {
		return m &^ maskDone
	}
	a := w.a
	row := q
	if st := &a.states[q]; st.flags&stIterOnly != 0 {
		row = a.frames[st.frame].start
	}
	m := loopBucketsOf(a, q, a.row(row))
	w.bm.loop[q] = m | maskDone
	return m
}

// loopBucketsOf returns the buckets all of whose bytes row steps to q.
// Classes are byte intervals and buckets grow with the byte, so a class
// covers the buckets from its first byte's to its last's: one test per
// class, not per byte (a first use computes it for every tight state it
// scans).
func loopBucketsOf(a *automaton, q int32, tr row) uint64 {
	m := uint64(1)<<(vocab.Bucket(255)+1) - 1
	for c := 0; c < a.nc; c++ {
		if tr.next(c) != q {
			lo, hi := vocab.Bucket(a.classLo[c]), vocab.Bucket(a.classHi[c])
			m &^= (uint64(2)<<hi - 1) &^ (uint64(1)<<lo - 1)
		}
	}
	return m
}

// regionBuckets returns the buckets all of whose bytes are ASCII
// characters of the class of q's region (0 if q has none, or none that a
// level 1 has found: knownRegionIndex): over a trie subtree whose edges are
// all in them, the walk goes from state to state of the region, every
// one of which takes all of them, so the subtree's tokens are all
// allowed, as a loop state takes a subtree of its class whole (a walk
// that enters a region inside a token; a key that must not match a
// bounded pattern: eager work 1,076,562 -> 897,493 units). Off with the
// slices (the tests' reference walks).
//
// Memoized per region, not per state: a table per state would be 1.3
// MB for Github_ultra/o48661's 161,000, cleared by whichever walk first
// asks (a first use, possibly).
func (w *walker) regionBuckets(q int32) uint64 {
	if w.c == nil || w.deep || noSlices || noRegions {
		return 0
	}
	r := w.c.knownRegionIndex(q)
	if r < 0 {
		return 0
	}
	if r >= len(w.bm.region) {
		w.bm.region = append(w.bm.region, make([]uint64, r+1-len(w.bm.region))...)
	}
	if m := w.bm.region[r]; m != 0 {
		return m &^ maskDone
	}
	ri := &w.c.regions[r]
	out := [4]uint64{^ri.class.ASCII[0], ^ri.class.ASCII[1], ^uint64(0), ^uint64(0)}
	m := ^vocab.BucketMask(&out) & (uint64(1)<<(vocab.Bucket(255)+1) - 1)
	w.bm.region[r] = m | maskDone
	return m
}

// frameBuckets returns the buckets meeting per-frame byte set sets[f],
// cached in cache (allocated on first use).
func frameBuckets(cache *[]uint64, sets []byteBits, f int32) uint64 {
	if *cache == nil {
		*cache = make([]uint64, len(sets))
	}
	if m := (*cache)[f]; m != 0 {
		return m &^ maskDone
	}
	m := vocab.BucketMask((*[4]uint64)(&sets[f]))
	(*cache)[f] = m | maskDone
	return m
}

// bulkOK reports whether the subtree below trie node v, reached in the
// tight state q with counter cnt (the counter of q at v), can be accepted
// in bulk: every edge below v steps q back to q, so no byte below leaves
// the loop, pops the frame (for a node above the base: no byte of its
// frame's follow set) or makes a cross point (for the base: no byte of
// the cross-point filter crossMask), and the repetition count, if any,
// cannot run out.
func (w *walker) bulkOK(v, q, cnt int32, base bool, crossMask uint64) bool {
	if noBulk {
		return false
	}
	below := w.t.Nodes[v].Below
	a := w.a
	if below&^w.loopBuckets(q) != 0 {
		if below&^w.regionBuckets(q) != 0 {
			return false
		}
		// (In q's region: the states the bytes below lead to differ, so
		// neither q's final flag nor its frame's follow set may allow a
		// pop or a cross point below: the bytes must avoid them all. A
		// region that may pop keeps them out of its class anyway.)
		if base {
			return below&crossMask == 0
		}
		return below&frameBuckets(&w.bm.follow, a.follow, a.states[q].frame) == 0
	}
	st := &a.states[q]
	if st.flags&stIterOnly != 0 && cnt >= 0 && a.frames[st.frame].max >= 0 {
		return false
	}
	if base {
		return st.flags&stFinal == 0 || below&crossMask == 0
	}
	return below&frameBuckets(&w.bm.follow, a.follow, st.frame) == 0
}

// bulkCosts accepts, in a symbolic walk, the tokens of the subtree below
// v accepted in bulk from the base state q with counter cnt at v: each
// byte below starts one more iteration if q is an iteration end.
func (w *walker) bulkCosts(v, q, cnt int32) {
	t, a := w.t, w.a
	st := &a.states[q]
	iter := st.flags&stIterOnly != 0
	dv := int32(t.Nodes[v].Depth)
	for x := v + 1; x < t.Nodes[v].SubtreeEnd; x++ {
		ts, te := t.Nodes[x].TokStart, t.Nodes[x+1].TokStart
		if ts == te {
			continue
		}
		c := cnt
		if iter {
			k := int32(t.Nodes[x].Depth) - dv
			if c < 0 {
				c -= k
			} else {
				c += k
			}
		}
		cost := iterations(c)
		if c < 0 && st.flags&stReachPop == 0 {
			cost++
		}
		for _, id := range t.Toks[ts:te] {
			w.accept(id, cost)
		}
	}
}
