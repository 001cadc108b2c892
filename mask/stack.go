package mask

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// Configurations are graph-structured stacks (as in GLR parsing): a node
// is a state with its repetition counter and the set of nodes that can
// lie below it. Stacks whose tops agree are merged into one node whose
// predecessor set is the union of theirs, so an ambiguous grammar keeps
// at most one node per (state, counter) at the top instead of one per
// parse — nesting k ambiguous constructs costs k nodes, not 2^k.
//
// Predecessor sets are interned in an arena, as are the nodes they hold.
// The sentinels bottom (below the root frame: popping onto it ends the
// sentence) and boundary (below the part of the stack a walk knows) are
// members of sets like nodes.
type node struct {
	state int32
	cnt   int32 // repetition frames: iterations started; symbolic walks encode the base's count as -(it+1)
	preds int32 // interned predecessor set
}

const (
	bottom   = int32(-1)
	boundary = int32(-2)

	predsBottom   = int32(0) // the set {bottom}
	predsBoundary = int32(1) // the set {boundary}
)

// MaxConfig bounds the number of nodes of a configuration (distinct
// (state, counter) tops). Real grammars stay below 10; the bound turns a
// pathological grammar into an error instead of unbounded work.
const MaxConfig = 4096

// unboundedCount stands for "no upper bound" in counter arithmetic.
const unboundedCount = int32(1 << 30)

type arena struct {
	nodes    []node
	table    []int32   // open addressing over nodes: node id + 1, 0 empty
	sets     [][]int32 // sorted members (sentinels first)
	setIndex map[string]int32
	single   []int32 // node id → id of the set {node}, or -1
	key      []byte
	members  int // total members of sets (the arena's size is len(nodes) + members)
}

func newArena() *arena {
	ar := &arena{setIndex: map[string]int32{}, table: make([]int32, 1024)}
	ar.reset()
	return ar
}

func (ar *arena) reset() {
	ar.nodes = ar.nodes[:0]
	clear(ar.table)
	clear(ar.setIndex)
	ar.single = ar.single[:0]
	ar.sets = append(ar.sets[:0], []int32{bottom}, []int32{boundary})
	ar.members = 2
}

// size is the arena's size in the unit of MaxStackSize: nodes plus set
// members.
func (ar *arena) size() int { return len(ar.nodes) + ar.members }

func hashNode(n node) uint64 {
	h := uint64(uint32(n.state))*0x9E3779B97F4A7C15 ^ uint64(uint32(n.cnt))*0xC2B2AE3D27D4EB4F ^ uint64(uint32(n.preds))*0x165667B19E3779F9
	return h ^ h>>29
}

func (ar *arena) intern(n node) int32 {
	mask := uint64(len(ar.table) - 1)
	for i := hashNode(n) & mask; ; i = (i + 1) & mask {
		slot := ar.table[i]
		if slot == 0 {
			id := int32(len(ar.nodes))
			ar.nodes = append(ar.nodes, n)
			ar.single = append(ar.single, -1)
			ar.table[i] = id + 1
			if 2*len(ar.nodes) > len(ar.table) {
				ar.grow()
			}
			return id
		}
		if ar.nodes[slot-1] == n {
			return slot - 1
		}
	}
}

func (ar *arena) grow() { ar.rehash(2 * len(ar.table)) }

// rehash rebuilds the node table with size slots (a power of two).
func (ar *arena) rehash(size int) {
	ar.table = make([]int32, size)
	mask := uint64(size - 1)
	for id, n := range ar.nodes {
		i := hashNode(n) & mask
		for ar.table[i] != 0 {
			i = (i + 1) & mask
		}
		ar.table[i] = int32(id) + 1
	}
}

// singleton returns the id of the set {id}.
func (ar *arena) singleton(id int32) int32 {
	if s := ar.single[id]; s >= 0 {
		return s
	}
	s := ar.internSet([]int32{id})
	ar.single[id] = s
	return s
}

// internSet returns the id of the set with the given sorted, unique
// members (the slice is copied if new).
func (ar *arena) internSet(members []int32) int32 {
	ar.key = ar.key[:0]
	for _, m := range members {
		ar.key = binary.LittleEndian.AppendUint32(ar.key, uint32(m))
	}
	if s, ok := ar.setIndex[string(ar.key)]; ok {
		return s
	}
	s := int32(len(ar.sets))
	ar.sets = append(ar.sets, slices.Clone(members))
	ar.setIndex[string(ar.key)] = s
	ar.members += len(members)
	return s
}

// compact drops the nodes and sets that the configurations roots do not
// reach (through predecessor sets), renumbers the rest in their old
// order (so sets stay sorted) and rewrites the predecessor sets of
// roots. It returns the new id of every old set, -1 for dropped ones.
// Its cost is linear in the arena.
func (ar *arena) compact(roots []node) []int32 {
	nodeMap := make([]int32, len(ar.nodes))
	setMap := make([]int32, len(ar.sets))
	for i := range nodeMap {
		nodeMap[i] = -1
	}
	for i := range setMap {
		setMap[i] = -1
	}
	var stack []int32
	mark := func(s int32) {
		if setMap[s] < 0 {
			setMap[s] = 0
			stack = append(stack, s)
		}
	}
	mark(predsBottom)
	mark(predsBoundary)
	for _, n := range roots {
		mark(n.preds)
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range ar.sets[s] {
			if p >= 0 && nodeMap[p] < 0 {
				nodeMap[p] = 0
				mark(ar.nodes[p].preds)
			}
		}
	}
	numNodes := renumber(nodeMap)
	numSets := renumber(setMap)
	nodes := make([]node, 0, numNodes)
	single := make([]int32, 0, numNodes)
	for i, n := range ar.nodes {
		if nodeMap[i] >= 0 {
			n.preds = setMap[n.preds]
			nodes = append(nodes, n)
			s := ar.single[i]
			if s >= 0 {
				s = setMap[s]
			}
			single = append(single, s)
		}
	}
	sets := make([][]int32, 0, numSets)
	clear(ar.setIndex)
	ar.members = 0
	for i, members := range ar.sets {
		if setMap[i] < 0 {
			continue
		}
		out := members[:0] // members of a set are not shared: rewrite in place
		for _, p := range members {
			if p >= 0 {
				p = nodeMap[p]
			}
			out = append(out, p)
		}
		ar.key = ar.key[:0]
		for _, p := range out {
			ar.key = binary.LittleEndian.AppendUint32(ar.key, uint32(p))
		}
		ar.setIndex[string(ar.key)] = int32(len(sets))
		ar.members += len(out)
		sets = append(sets, out)
	}
	ar.nodes, ar.sets, ar.single = nodes, sets, single
	ar.rehash(max(1024, 1<<bits.Len(uint(4*len(nodes)))))
	for i := range roots {
		roots[i].preds = setMap[roots[i].preds]
	}
	return setMap
}

// renumber gives the marked entries of ids (those ≥ 0) consecutive new
// ids in their order and returns how many there are.
func renumber(ids []int32) int {
	k := int32(0)
	for i, x := range ids {
		if x >= 0 {
			ids[i] = k
			k++
		}
	}
	return int(k)
}

// has reports whether set s holds m.
func (ar *arena) has(s, m int32) bool {
	for _, x := range ar.sets[s] {
		if x == m {
			return true
		}
		if x > m {
			return false
		}
	}
	return false
}

// stepper advances nodes over one byte class or one token.
//
// Predecessor sets are shared, so the paths of a graph-structured stack
// can be exponentially many while its nodes are few: every recursion over
// predecessors visits each arena node once per step or query (the marks
// below), never once per path.
type stepper struct {
	a        *automaton
	v        *Vocab
	ar       *arena
	out      []node
	overflow bool  // a step produced more than MaxConfig nodes
	steps    int64 // nodes stepped (stepByte calls): work units of walks

	// Work accounting (see MaxStepWork): work counts the units spent
	// since the caller last reset it — one per node merged and per
	// predecessor or set member looked at (a node steps into a bounded
	// number of others without popping, so these bound the whole step).
	// With a budget (matchers; the compile-time walks have none), a step
	// stops as soon as work exceeds it and sets spent.
	work   int
	budget int
	spent  bool

	members []int32 // merge's scratch

	gen   uint32   // current step (begin)
	mark  []uint32 // per arena node: the step it was popped into
	qgen  uint32   // current query (canEnd, canCross, crossIts, baseIt)
	qmark []uint32 // per arena node: the query that visited it
	qval  []int64  // per arena node: memoized baseIt or stackMinLen in the current query
}

// charge adds n units of work and reports whether the step may go on.
func (s *stepper) charge(n int) bool {
	s.work += n
	if s.work > s.budget && s.budget > 0 {
		s.spent = true
		return false
	}
	return true
}

// begin starts a step: the nodes stepped from here on pop into each
// predecessor at most once.
func (s *stepper) begin() {
	s.gen++
	if s.gen == 0 {
		clear(s.mark)
		s.gen = 1
	}
}

// firstPop reports whether arena node p has not been popped into in this
// step, and marks it.
func (s *stepper) firstPop(p int32) bool {
	if int(p) >= len(s.mark) {
		s.mark = append(s.mark, make([]uint32, len(s.ar.nodes)-len(s.mark)+64)...)
	}
	if s.mark[p] == s.gen {
		return false
	}
	s.mark[p] = s.gen
	return true
}

// query starts a query over predecessors.
func (s *stepper) query() {
	s.qgen++
	if s.qgen == 0 {
		clear(s.qmark)
		s.qgen = 1
	}
}

// firstVisit reports whether arena node p has not been visited in this
// query, and marks it.
func (s *stepper) firstVisit(p int32) bool {
	if int(p) >= len(s.qmark) {
		grow := len(s.ar.nodes) - len(s.qmark) + 64
		s.qmark = append(s.qmark, make([]uint32, grow)...)
		s.qval = append(s.qval, make([]int64, grow)...)
	}
	if s.qmark[p] == s.qgen {
		return false
	}
	s.qmark[p] = s.qgen
	return true
}

// bounds returns the iteration bounds for node n of repetition frame f.
// A symbolic base (cnt < 0, in level-1 walks) has none.
func (s *stepper) bounds(n node, f *frame) (lo, hi int32) {
	if n.cnt < 0 {
		return 0, unboundedCount
	}
	hi = f.max
	if hi < 0 {
		hi = unboundedCount
	}
	return f.min, hi
}

// canPop reports whether n may leave its frame now (for a repetition
// frame: whether enough iterations are complete).
func (s *stepper) canPop(n node) bool {
	a := s.a
	st := &a.states[n.state]
	if st.flags&stFinal == 0 || st.flags&stNoPop != 0 {
		return false
	}
	f := &a.frames[st.frame]
	if n.state == f.start {
		return f.root && s.ar.has(n.preds, bottom)
	}
	if f.repeat {
		lo, _ := s.bounds(n, f)
		return iterations(n.cnt) >= lo
	}
	return true
}

// live reports whether a repetition-frame node in state q with counter
// cnt can still end its repetition: its iteration can end where the
// repetition may end, or another iteration may start.
func (s *stepper) live(q, cnt int32) bool {
	st := &s.a.states[q]
	if st.flags&stReachPop != 0 || cnt < 0 {
		return true
	}
	f := &s.a.frames[st.frame]
	return f.max < 0 || cnt < f.max
}

// iterations returns the iterations started, decoding symbolic counts.
func iterations(cnt int32) int32 {
	if cnt < 0 {
		return -cnt - 1
	}
	return cnt
}

// nextIteration returns the counter after starting one more iteration.
func nextIteration(cnt int32) int32 {
	if cnt < 0 {
		return cnt - 1
	}
	return cnt + 1
}

// canEnd reports whether some stack of n can pop all the way to bottom.
func (s *stepper) canEnd(n node) bool {
	s.query()
	return s.canEndRec(n)
}

// anyCanEnd reports whether some node of cfg can end.
func (s *stepper) anyCanEnd(cfg []node) bool {
	s.query()
	for _, n := range cfg {
		if s.canEndRec(n) {
			return true
		}
	}
	return false
}

func (s *stepper) canEndRec(n node) bool {
	if !s.canPop(n) {
		return false
	}
	for _, p := range s.ar.sets[n.preds] {
		if p == bottom {
			return true
		}
		if p >= 0 && s.firstVisit(p) && s.canEndRec(s.ar.nodes[p]) {
			return true
		}
	}
	return false
}

// crossIts calls f with the iterations of the base node for each way the
// stacks of n can pop down to boundary (symbolic walks; 0 otherwise).
func (s *stepper) crossIts(n node, f func(it int32)) {
	s.query()
	s.crossItsRec(n, f)
}

func (s *stepper) crossItsRec(n node, f func(it int32)) {
	if !s.canPop(n) {
		return
	}
	for _, p := range s.ar.sets[n.preds] {
		if p == boundary {
			f(iterations(min(n.cnt, 0)))
		} else if p >= 0 && s.firstVisit(p) {
			s.crossItsRec(s.ar.nodes[p], f)
		}
	}
}

// canCross reports whether some stack of n can pop down to boundary.
func (s *stepper) canCross(n node) bool {
	s.query()
	return s.canCrossRec(n)
}

func (s *stepper) canCrossRec(n node) bool {
	if !s.canPop(n) {
		return false
	}
	for _, p := range s.ar.sets[n.preds] {
		if p == boundary {
			return true
		}
		if p >= 0 && s.firstVisit(p) && s.canCrossRec(s.ar.nodes[p]) {
			return true
		}
	}
	return false
}

// baseIt returns the fewest iterations started by the base of any stack
// of n (symbolic walks; 0 for concrete bases).
func (s *stepper) baseIt(n node) int32 {
	s.query()
	return s.baseItRec(n)
}

func (s *stepper) baseItRec(n node) int32 {
	best := unboundedCount
	for _, p := range s.ar.sets[n.preds] {
		switch {
		case p == boundary || p == bottom:
			if n.cnt < 0 {
				// A state whose iteration cannot end the repetition needs
				// one more iteration to be completed.
				it := iterations(n.cnt)
				if s.a.states[n.state].flags&stReachPop == 0 {
					it++
				}
				best = min(best, it)
			} else {
				best = 0
			}
		case p >= 0:
			if s.firstVisit(p) {
				s.qval[p] = int64(s.baseItRec(s.ar.nodes[p]))
			}
			best = min(best, int32(s.qval[p]))
		}
	}
	return best
}

func (s *stepper) emit(n node) {
	if len(s.out) >= MaxConfig*4 {
		s.overflow = true
		return
	}
	s.out = append(s.out, n)
}

// stepByte appends to s.out the nodes that n becomes after consuming a
// byte of class c.
func (s *stepper) stepByte(n node, c int) {
	s.steps++
	a := s.a
	st := &a.states[n.state]
	f := &a.frames[st.frame]
	if !f.repeat {
		if t := a.step(n.state, c); t >= 0 {
			s.emit(node{t, 0, n.preds})
		}
		for _, e := range st.calls {
			if a.entersOn(e.callee, c) {
				s.stepByte(s.pushed(e, n, 0), c)
			}
		}
	} else {
		_, hi := s.bounds(n, f)
		if n.state != f.start {
			if t := a.step(n.state, c); t >= 0 && s.live(t, n.cnt) {
				s.emit(node{t, n.cnt, n.preds})
			}
			for _, e := range st.calls {
				if a.entersOn(e.callee, c) {
					s.stepByte(s.pushed(e, n, n.cnt), c)
				}
			}
		}
		if (n.state == f.start || st.flags&stFinal != 0) && iterations(n.cnt) < hi {
			s0 := f.start
			nc := nextIteration(n.cnt)
			if t := a.step(s0, c); t >= 0 && s.live(t, nc) {
				s.emit(node{t, nc, n.preds})
			}
			for _, e := range a.states[s0].calls {
				if a.entersOn(e.callee, c) {
					s.stepByte(s.pushed(e, n, nc), c)
				}
			}
		}
	}
	if s.canPop(n) && s.charge(len(s.ar.sets[n.preds])) {
		for _, p := range s.ar.sets[n.preds] {
			if p >= 0 && s.firstPop(p) {
				s.stepByte(s.ar.nodes[p], c)
			}
		}
	}
}

// pushed returns the node entering the callee of e from n, returning to
// e.ret with counter cnt.
func (s *stepper) pushed(e callEdge, n node, cnt int32) node {
	var preds int32
	if s.a.states[e.ret].flags&stPureFinal != 0 {
		// Tail call: returning to a state that can only pop is the same
		// as returning to the nodes below.
		preds = n.preds
	} else {
		preds = s.ar.singleton(s.ar.intern(node{e.ret, cnt, n.preds}))
	}
	return node{s.a.frames[e.callee].start, 0, preds}
}

// tokMatches reports whether token tok matches token edge e.
func (s *stepper) tokMatches(e *tokEdge, tok int32) bool {
	if !e.neg {
		return e.tok == tok
	}
	return e.tok != tok && !s.v.IsEOG(tok) && s.v.Kind(tok) != TokenUnused
}

// stepTok appends to s.out the nodes that n becomes when token tok is
// matched by a token reference.
func (s *stepper) stepTok(n node, tok int32) {
	s.forTokEdges(n, func(e *tokEdge, succ node) {
		if s.tokMatches(e, tok) {
			s.emit(succ)
		}
	})
}

// forTokEdges calls f for every token edge reachable from n without
// consuming input, with the node the edge leads to.
func (s *stepper) forTokEdges(n node, f func(e *tokEdge, succ node)) {
	a := s.a
	st := &a.states[n.state]
	fr := &a.frames[st.frame]
	if !fr.repeat {
		for i := range st.toks {
			f(&st.toks[i], node{st.toks[i].next, 0, n.preds})
		}
		for _, e := range st.calls {
			s.forTokEdges(s.pushed(e, n, 0), f)
		}
	} else {
		_, hi := s.bounds(n, fr)
		if n.state != fr.start {
			for i := range st.toks {
				f(&st.toks[i], node{st.toks[i].next, n.cnt, n.preds})
			}
			for _, e := range st.calls {
				s.forTokEdges(s.pushed(e, n, n.cnt), f)
			}
		}
		if (n.state == fr.start || st.flags&stFinal != 0) && iterations(n.cnt) < hi {
			s0 := &a.states[fr.start]
			nc := nextIteration(n.cnt)
			for i := range s0.toks {
				f(&s0.toks[i], node{s0.toks[i].next, nc, n.preds})
			}
			for _, e := range s0.calls {
				s.forTokEdges(s.pushed(e, n, nc), f)
			}
		}
	}
	if s.canPop(n) && s.charge(len(s.ar.sets[n.preds])) {
		for _, p := range s.ar.sets[n.preds] {
			if p >= 0 && s.firstPop(p) {
				s.forTokEdges(s.ar.nodes[p], f)
			}
		}
	}
}

// stepAll returns the configuration that cfg becomes after consuming a
// byte of class c (empty where no node can take it). The result lives in
// s.out until the next step.
func (s *stepper) stepAll(cfg []node, c int) []node {
	s.begin()
	s.out = s.out[:0]
	for _, n := range cfg {
		s.stepByte(n, c)
	}
	return s.merge(s.out)
}

// merge sorts the nodes of out and merges those with the same state and
// counter (uniting their predecessor sets). It returns the result, in
// place.
func (s *stepper) merge(out []node) []node {
	if len(out) <= 1 {
		return out
	}
	slices.SortFunc(out, func(x, y node) int {
		if x.state != y.state {
			return int(x.state - y.state)
		}
		if x.cnt != y.cnt {
			return int(x.cnt - y.cnt)
		}
		return int(x.preds - y.preds)
	})
	s.charge(len(out))
	k := 0
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].state == out[i].state && out[j].cnt == out[i].cnt {
			j++
		}
		n := out[i]
		if out[j-1].preds != n.preds {
			// Several predecessor sets: one union of all of them (sorted
			// by set id, so equal sets are adjacent), interned once —
			// pairwise unions would cost the square of the group.
			s.members = s.members[:0]
			for x := i; x < j; x++ {
				if x == i || out[x].preds != out[x-1].preds {
					s.members = append(s.members, s.ar.sets[out[x].preds]...)
				}
			}
			s.charge(len(s.members))
			slices.Sort(s.members)
			n.preds = s.ar.internSet(slices.Compact(s.members))
		}
		out[k] = n
		k++
		i = j
	}
	return out[:k]
}

// stepConfig steps every node of cfg over byte b and returns the merged
// configuration (in s.out's memory).
func (s *stepper) stepConfig(cfg []node, b byte) []node {
	s.begin()
	s.out = s.out[:0]
	c := int(s.a.classOf[b])
	for _, n := range cfg {
		s.stepByte(n, c)
	}
	s.out = s.merge(s.out)
	return s.out
}

// ErrTooAmbiguous is returned when a configuration would hold more than
// MaxConfig nodes in a compile-time or first-use walk. A Matcher returns
// a *LimitError instead, for which errors.Is(err, ErrTooAmbiguous) holds
// too, whichever of its limits (MaxConfig, MaxStepWork, MaxStackSize) was
// reached.
var ErrTooAmbiguous = fmt.Errorf("mask: grammar too ambiguous: more than %d simultaneous parse states (limit MaxConfig)", MaxConfig)
