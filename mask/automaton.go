package mask

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// The automaton: every frame's expression is compiled to a deterministic
// automaton over byte classes, calls of other frames and token
// references. All frames' states live in one table; a state belongs to
// exactly one frame.
//
// A frame is entered only to consume at least one byte (or token): its
// start state is never re-entered and never pops, except for the root
// frame, whose start state ends the grammar when the root is nullable.
// References to nullable frames were lowered to (call)? for that reason.

type callEdge struct {
	callee int32 // frame
	ret    int32 // state of the caller to return to
}

type tokEdge struct {
	tok  int32
	neg  bool
	next int32
}

// State flags.
const (
	stFinal     = 1 << iota // the frame's expression accepts here (pop, or iteration end in a repetition frame)
	stPureFinal             // final, no outgoing edges, not a repetition frame: a call returning here is a tail call
	stSimple                // no calls, no token edges, not final, not a repetition boundary: stepping is one table lookup
	stTop                   // can be the top of a stack after a byte or token (gets an eager level-1 walk)
	stNoPop                 // final, but only as the end of an iteration: the repetition may not end here
	stReachPop              // repetition frame: the current iteration can end where the repetition may end
	stTight                 // no calls, no token edges, not a frame start, and (in a repetition frame) mid-iteration: stepping keeps the counter and the predecessors
	stIterOnly              // repetition frame, iteration complete, no edges of its own, body start without calls or token edges: a byte can only start the next iteration
	stRepeat                // the state's frame is a repetition frame
)

type state struct {
	frame int32
	flags uint16
	calls []callEdge
	toks  []tokEdge
}

type frame struct {
	name          string
	start         int32
	repeat        bool
	min, max      int32 // repetition bounds; max < 0 means unbounded
	root          bool
	nullable      bool // the frame's expression accepts ""; for the root, the grammar accepts ""
	minLen        int64
	bodyKey       string // repetition frames: canonical body (see frameDef)
	first_, last_ int32  // the frame's states are first_ .. last_-1
}

type automaton struct {
	nc      int        // number of byte classes
	classOf [256]uint8 // byte → class
	classLo []byte     // first byte of each class (classes are byte intervals)
	classHi []byte     // last byte of each class
	// rows and rowOf are the dense transition table (after
	// minimization), by rows shared between states: state q's row is
	// rows[rowOf[q]*nc:][:nc], whose entry for class c is the next state
	// less q plus rowBias, or 0 if none (step and row.next decode it: the
	// table is made zeroed and only its transitions are written). Relative
	// targets make the rows of different states equal: a key's next
	// character, a string body, a digit run look alike wherever they
	// are, and a large grammar has five or six times fewer distinct rows
	// than states (Github_ultra/o48661: 30,206 of 167,567, a 62 MB table
	// become 11 MB; the memory was a third of its compile, most of it the
	// first touch of fresh pages).
	rows  []int32
	rowOf []int32
	// During the construction, transitions are also sparse (most states
	// have few) and by runs of classes: state q's runs are
	// sLo/sHi/sTarget[sStart[q]:sStart[q+1]], in class order, each the
	// classes sLo..sHi (inclusive) leading to sTarget (a JSON string's
	// body takes tens of classes to one state: one run); before
	// minimization a pruned one has target -1, after it there are none
	// such (and the dense table has the same rows).
	sStart   []int32
	sLo, sHi []uint8
	sTarget  []int32
	states   []state    // all states of all frames
	frames   []frame    // frame 0 is the root
	minLen   []int64    // per state: fewest bytes to finish its frame (pop), calls included (saturated: see MaxMinLen)
	follow   []byteBits // per frame: bytes that can come right after the frame pops, in any context
	first    []byteBits // per frame: bytes a visit of the frame can start with
	// firstRoot is per frame: a root frame's start is among the starts its
	// start calls, directly or through their starts (see entersOn).
	firstRoot []bool
	limit     int // state budget of this construction

	// flags is states[q].flags for every q, final once buildAutomaton
	// returns: the walks' inner loops read a state's flags for every trie
	// node they step, and a state is 56 bytes, so a line of this table
	// serves 32 states where the state table's serves one.
	flags []uint16

	unminimized int // states before minimization

	scratch *frameScratch // buildFrame's buffers (during buildAutomaton only)

	done <-chan struct{} // Options.Done: stops the construction
}

// byteBits is a set of bytes.
type byteBits [4]uint64

func (b *byteBits) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *byteBits) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }

// addRange adds the bytes lo..hi.
func (b *byteBits) addRange(lo, hi byte) { setBits(b[:], int(lo), int(hi)) }

// setBits sets the bits lo..hi (lo <= hi) of the bitset bs.
func setBits(bs []uint64, lo, hi int) {
	for i := lo >> 6; i <= hi>>6; i++ {
		m := ^uint64(0)
		if i == lo>>6 {
			m &^= 1<<(lo&63) - 1
		}
		if i == hi>>6 && hi&63 != 63 {
			m &= 1<<(hi&63+1) - 1
		}
		bs[i] |= m
	}
}

// union adds o to b and reports whether b changed.
func (b *byteBits) union(o *byteBits) bool {
	changed := false
	for i := range b {
		if n := b[i] | o[i]; n != b[i] {
			b[i] = n
			changed = true
		}
	}
	return changed
}

func (a *automaton) final(q int32) bool { return a.states[q].flags&stFinal != 0 }

// Limits of the automaton construction.
const (
	// MaxPositions bounds the positions (byte ranges, calls, token
	// references) of one frame after inlining and unrolling. JSON Schema
	// grammars of the 47 KB "ultra" schemas in JSONSchemaBench stay below
	// 50,000; 2^20 is the point where construction time reaches seconds.
	MaxPositions = 1 << 20
	// MaxStates bounds the automaton states of a grammar. Subset
	// construction can blow up exponentially on adversarial grammars
	// (e.g. [ab]* "a" followed by twenty explicit [ab]); this limit turns
	// that into an error after about 0.2 s of work (that grammar: 170 to
	// 190 ms on the development machine, both attempts of CompileWith
	// included; BenchmarkBuildAutomaton measures it). The largest real
	// grammar of JSONSchemaBench (Github_ultra/o48661, 1.4 MB) needs
	// 258,531 states before minimization (186,727 after), most need a
	// few hundred; every top state also costs a trie walk, at compile
	// time or on first use.
	MaxStates = 1 << 18
)

// maxStates is MaxStates, lowered by tests.
var maxStates = MaxStates

// cancelCheckEvery is how many new automaton states pass between two
// checks of Options.Done during construction (a state costs about a
// microsecond: the check is cheap and the delay small).
const cancelCheckEvery = 1024

// buildAutomaton compiles the lowered frames with at most limit states;
// closing done stops it with ErrCanceled.
func buildAutomaton(defs []*frameDef, limit int, done <-chan struct{}) (*automaton, error) {
	a := &automaton{limit: limit, sStart: []int32{0}, done: done}
	// A frame's subset construction makes at most one state per
	// position (plus its start) on most grammars: reserve that many, so
	// that the state table is not regrown (and copied) a dozen times;
	// and two byte edges per state.
	est := 0
	for _, d := range defs {
		est += d.body.size() + 1
	}
	a.states = make([]state, 0, min(est, limit))
	s := frameScratches.Get()
	if s == nil {
		s = new(frameScratch)
	}
	a.scratch = s
	defer func() {
		if a.sTarget != nil { // (stopped before minimization)
			s.sStart, s.sLo, s.sHi, s.sTarget = a.sStart, a.sLo, a.sHi, a.sTarget
		}
		frameScratches.Put(s)
		a.scratch = nil
	}()
	a.sStart = append(s.sStart[:0], 0)
	a.sLo = slices.Grow(s.sLo[:0], 2*cap(a.states))
	a.sHi = slices.Grow(s.sHi[:0], 2*cap(a.states))
	a.sTarget = slices.Grow(s.sTarget[:0], 2*cap(a.states))
	a.computeClasses(defs)
	a.frames = make([]frame, len(defs))
	for i, d := range defs {
		a.frames[i] = frame{name: d.name, repeat: d.repeat, min: int32(d.min), max: int32(d.max), root: d.root, bodyKey: d.bodyKey}
	}
	for i, d := range defs {
		if err := a.buildFrame(int32(i), d); err != nil {
			return nil, err
		}
	}
	if canceled(done) {
		return nil, ErrCanceled
	}
	if err := a.prune(); err != nil {
		return nil, err
	}
	if err := a.checkLeftRecursion(); err != nil {
		return nil, err
	}
	a.unminimized = len(a.states)
	s.sStart, s.sLo, s.sHi, s.sTarget = a.sStart, a.sLo, a.sHi, a.sTarget
	a.minimize()
	// The edges after minimization, forwards and backwards: the flags
	// and the minimum lengths both follow them back.
	succ := a.successors()
	rev, callers := a.reverseEdges(succ)
	a.computeFlags(rev)
	a.computeMinLen(succ, rev, callers)
	a.computeFollow()
	a.flags = make([]uint16, len(a.states))
	for q := range a.states {
		a.flags[q] = a.states[q].flags
	}
	// The sparse rows (minimize's compacted copy, which the passes above
	// read) go back to the scratch with it.
	a.sStart, a.sLo, a.sHi, a.sTarget = nil, nil, nil, nil
	return a, nil
}

// computeClasses partitions the bytes into intervals that every byte range
// of the grammar either contains or avoids.
func (a *automaton) computeClasses(defs []*frameDef) {
	var cut [257]bool
	cut[0], cut[256] = true, true
	var visit func(r *rx)
	pass := rxPasses.Add(1) // nodes with subexpressions may be shared: each is visited once
	visit = func(r *rx) {
		if r.op == rxByte {
			r.eachRange(func(lo, hi byte) {
				cut[lo] = true
				cut[int(hi)+1] = true
			})
		}
		if r.op == rxGoto && r.visited != pass {
			r.visited = pass
			visit(r.lbl.body)
		}
		if len(r.subs) == 0 || r.visited == pass {
			return
		}
		r.visited = pass
		for _, s := range r.subs {
			visit(s)
		}
	}
	for _, d := range defs {
		visit(d.body)
	}
	c := -1
	for b := 0; b < 256; b++ {
		if cut[b] {
			c++
			a.classLo = append(a.classLo, byte(b))
			a.classHi = append(a.classHi, byte(b))
		}
		a.classOf[b] = uint8(c)
		a.classHi[c] = byte(b)
	}
	a.nc = c + 1
}

// A Glushkov position: one occurrence of a byte range, call or token
// reference in a frame's expression.
type gpos struct {
	kind   rxOp // rxByte, rxCall or rxTok
	lo, hi byte
	neg    bool
	rng    int32 // a byte position of several ranges: 1 + its index in glushkov.rngs (see rx.rng)
	frame  int32
	tok    int32
}

type glushkov struct {
	pos    []gpos
	rngs   [][]byte // the ranges of the byte positions that take several
	noPop  []bool   // position is inside rxNoPop
	follow [][]int32
	last   []bool
	inNo   int
	err    error
	free   [][]int32 // empty lists for visit (see buf)

	// Gotos: a goto's first position is a pseudo-position -(k+1), which
	// its region replaces by the label's first positions once it has
	// visited them (labels may go to each other in cycles).
	region *gRegion
	pseudo []pseudoPos
	depth  int // regions being visited
}

// maxRegionDepth bounds the nesting of regions (a set's labels nest
// regions of other sets only, and sets refer to each other without
// cycles; the bound turns a lowering bug into an error, not a stack
// overflow).
const maxRegionDepth = 1000

// gRegion is a region being visited: the labels its gotos reach.
type gRegion struct {
	labels []*rxLabel
	ids    []int32 // pseudo-position numbers of labels
	index  map[*rxLabel]int32
}

// pseudoPos is what a pseudo-position stands for: a region's label.
type pseudoPos struct {
	reg *gRegion
	i   int32 // index in reg.labels
}

// buf returns an empty list of positions; visit gives it back to
// g.free when done (lists are reused across nodes and frames).
func (g *glushkov) buf() []int32 {
	n := len(g.free)
	if n == 0 {
		return nil
	}
	b := g.free[n-1][:0]
	g.free = g.free[:n-1]
	return b
}

// reset empties g for the next frame, keeping its memory (the follow
// lists' too).
func (g *glushkov) reset() {
	g.pos, g.noPop, g.follow = g.pos[:0], g.noPop[:0], g.follow[:0]
	clear(g.rngs)
	g.rngs = g.rngs[:0]
	g.inNo, g.err = 0, nil
	g.region, g.pseudo, g.depth = nil, g.pseudo[:0], 0
}

// byteRanges returns the ranges of byte position gp (lo0, hi0, lo1, hi1,
// …): its one range in *one, or its several.
func (g *glushkov) byteRanges(gp *gpos, one *[2]byte) []byte {
	if gp.rng == 0 {
		one[0], one[1] = gp.lo, gp.hi
		return one[:]
	}
	return g.rngs[gp.rng-1]
}

// visit adds the positions of r and the follow pairs inside it, and
// appends r's first and last positions to *first and *last (appending,
// rather than returning fresh lists, keeps nested alternations linear).
// It reports whether r matches "".
func (g *glushkov) visit(r *rx, first, last *[]int32) (nullable bool) {
	switch r.op {
	case rxNone:
		return false
	case rxEmpty:
		return true
	case rxByte, rxCall, rxTok:
		if len(g.pos) >= MaxPositions {
			if g.err == nil {
				g.err = fmt.Errorf("more than %d automaton positions (limit MaxPositions)", MaxPositions)
			}
			return false
		}
		p := int32(len(g.pos))
		gp := gpos{kind: r.op, lo: r.lo, hi: r.hi, frame: r.frame, tok: r.tok, neg: r.neg}
		if r.rng != nil {
			g.rngs = append(g.rngs, *r.rng)
			gp.rng = int32(len(g.rngs))
		}
		g.pos = append(g.pos, gp)
		g.noPop = append(g.noPop, g.inNo > 0)
		if len(g.follow) < cap(g.follow) {
			g.follow = g.follow[:p+1]
			g.follow[p] = g.follow[p][:0]
		} else {
			g.follow = append(g.follow, nil)
		}
		*first = append(*first, p)
		*last = append(*last, p)
		return false
	case rxSeq:
		// cur holds the last positions of the prefix so far; the first
		// positions of a nullable prefix go straight to *first.
		nullable = true
		cur, f2, l2 := g.buf(), g.buf(), g.buf() // (f2 and l2 are reused: what they hold is copied)
		for _, s := range r.subs {
			f2, l2 = f2[:0], l2[:0]
			n2 := g.visit(s, &f2, &l2)
			for _, p := range cur {
				g.follow[p] = append(g.follow[p], f2...)
			}
			if nullable {
				*first = append(*first, f2...)
			}
			if !n2 {
				cur = cur[:0]
			}
			cur = append(cur, l2...)
			nullable = nullable && n2
		}
		*last = append(*last, cur...)
		g.free = append(g.free, cur, f2, l2)
		return nullable
	case rxAlt:
		for _, s := range r.subs {
			if g.visit(s, first, last) {
				nullable = true
			}
		}
		return nullable
	case rxNoPop:
		g.inNo++
		nullable = g.visit(r.subs[0], first, last)
		g.inNo--
		return nullable
	case rxGoto:
		reg := g.region
		if reg == nil {
			if g.err == nil {
				g.err = errors.New("internal error: goto outside a region")
			}
			return false
		}
		i, ok := reg.index[r.lbl]
		if !ok {
			i = int32(len(reg.labels))
			reg.index[r.lbl] = i
			reg.labels = append(reg.labels, r.lbl)
			reg.ids = append(reg.ids, int32(len(g.pseudo)))
			g.pseudo = append(g.pseudo, pseudoPos{reg, i})
		}
		*first = append(*first, -reg.ids[i]-1)
		return r.lbl.nullable
	case rxRegion:
		return g.visitRegion(r, first, last)
	case rxStar, rxOpt:
		f, l := g.buf(), g.buf()
		g.visit(r.subs[0], &f, &l)
		if r.op == rxStar {
			for _, p := range l {
				g.follow[p] = append(g.follow[p], f...)
			}
		}
		*first = append(*first, f...)
		*last = append(*last, l...)
		g.free = append(g.free, f, l)
		return true
	}
	panic("mask: unknown rx op")
}

// visitRegion visits a region: its body, then every label its gotos
// reach (each once), whose last positions are the region's too; then it
// replaces the pseudo-positions of its gotos by the labels' first
// positions, in the follow lists of the positions it added and in its
// own first positions.
func (g *glushkov) visitRegion(r *rx, first, last *[]int32) bool {
	outer := g.region
	if g.depth++; g.depth > maxRegionDepth {
		if g.err == nil {
			g.err = fmt.Errorf("internal error: regions nested more than %d deep", maxRegionDepth)
		}
		g.depth--
		return false
	}
	defer func() { g.depth-- }()
	reg := &gRegion{index: map[*rxLabel]int32{}}
	g.region = reg
	start := int32(len(g.pos))
	f := g.buf()
	nullable := g.visit(r.subs[0], &f, last)
	var firsts [][]int32
	for i := 0; i < len(reg.labels) && g.err == nil; i++ {
		lf := g.buf()
		g.visit(reg.labels[i].body, &lf, last)
		firsts = append(firsts, lf)
	}
	g.region = outer
	if g.err != nil {
		return false
	}
	// Resolve the labels' first positions through gotos at their start
	// (a label that begins with a goto: r1 ::= r2 | "x"); a cycle of such
	// gotos is left recursion.
	resolved := make([][]int32, len(reg.labels))
	state := make([]uint8, len(reg.labels)) // 0 new, 1 resolving, 2 done
	var resolve func(i int32) []int32
	resolve = func(i int32) []int32 {
		switch state[i] {
		case 2:
			return resolved[i]
		case 1:
			if g.err == nil {
				g.err = &Error{Msg: leftRecursionMsg + "rule " + reg.labels[i].name + " reaches itself without consuming input"}
			}
			return nil
		}
		state[i] = 1
		var out []int32
		for _, p := range firsts[i] {
			if q := g.own(reg, p); q >= 0 {
				out = append(out, resolve(q)...)
			} else {
				out = append(out, p)
			}
		}
		state[i] = 2
		resolved[i] = sortUnique(out)
		return resolved[i]
	}
	subst := func(list []int32) []int32 {
		has := false
		for _, p := range list {
			if g.own(reg, p) >= 0 {
				has = true
				break
			}
		}
		if !has {
			return list
		}
		out := list[:0:0]
		for _, p := range list {
			if q := g.own(reg, p); q >= 0 {
				out = append(out, resolve(q)...)
			} else {
				out = append(out, p)
			}
		}
		return out
	}
	for p := start; p < int32(len(g.pos)); p++ {
		g.follow[p] = subst(g.follow[p])
	}
	*first = append(*first, subst(f)...)
	g.free = append(g.free, f)
	g.free = append(g.free, firsts...)
	return nullable
}

// own returns the index in reg of the label pseudo-position p stands for,
// or -1 if p is a position or another region's.
func (g *glushkov) own(reg *gRegion, p int32) int32 {
	if p >= 0 {
		return -1
	}
	if e := g.pseudo[-p-1]; e.reg == reg {
		return e.i
	}
	return -1
}

func sortUnique(s []int32) []int32 {
	slices.Sort(s)
	return slices.Compact(s)
}

// frameScratch holds the buffers of buildFrame, reused from one frame to
// the next (a grammar has up to thousands of frames) and, through
// frameScratches, from one compilation to the next.
type frameScratch struct {
	g       glushkov
	first   []int32
	last    []int32
	states  setTable  // (flags, position set) → state; entry i is the frame's i-th state
	targets setTable  // position set (of two or more) → state reached (memo of target)
	single  []int32   // per position p: the state reached by {p}, plus one (0: not yet); target's memo of one position
	stamp   []uint32  // per position: gen when last added to next
	gen     uint32    // stamp generation
	next    []int32   // the positions after a set (target's buffer)
	buckets [][]int32 // per segment of the byte classes: the positions that take it
	bytePos []int32   // the byte positions of the state being expanded
	calls   []edgeKey
	toks    []edgeKey
	ps      []int32

	// The automaton's sparse rows (sStart, sLo, sHi, sTarget), kept for the
	// next construction once minimization has made the dense table.
	sStart   []int32
	sLo, sHi []uint8
	sTarget  []int32

	// successors' and reverseEdges' lists. (Not the states before
	// minimization: they hold pointers, and a large table kept in the
	// pool is scanned by every garbage collection.)
	succStart, succTo, seen []int32
	revStart, revTo         []int32
}

// frameScratches holds the frameScratch of finished constructions.
var frameScratches stickyPool[frameScratch]

// keepSize returns the bytes of s's largest lists (counted in 4-byte
// words) and whether s is small enough for frameScratches' kept slot
// (keepBytes).
func (s *frameScratch) keepSize() (int, bool) {
	n := cap(s.g.pos)*4 + cap(s.g.follow)*6 + cap(s.states.arena) + cap(s.targets.arena) +
		cap(s.sTarget)*2 + cap(s.succTo) + cap(s.revTo)
	for _, f := range s.g.follow[:cap(s.g.follow)] {
		n += cap(f)
	}
	return 4 * n, 4*n <= keepBytes
}

// edgeKey is a call or token position of a state being expanded: a call
// has key (callee, 0), a token reference (token, negated).
type edgeKey struct {
	a, b int32
	p    int32 // the position
}

func byEdgeKey(x, y edgeKey) int {
	if x.a != y.a {
		return int(x.a - y.a)
	}
	if x.b != y.b {
		return int(x.b - y.b)
	}
	return int(x.p - y.p)
}

// reset prepares s for a frame of n positions and nc byte classes.
func (s *frameScratch) reset(n, nc int) {
	s.states.reset()
	s.targets.reset()
	if cap(s.single) < n {
		s.single = make([]int32, n)
		s.stamp = make([]uint32, n)
		s.gen = 0
	} else {
		s.single = s.single[:n]
		clear(s.single)
		s.stamp = s.stamp[:n]
	}
	if len(s.buckets) < nc+1 {
		s.buckets = make([][]int32, nc+1)
	}
}

// segmentCuts is a set of class boundaries 0..256 (a boundary c starts a
// segment at class c).
type segmentCuts [5]uint64

func (x *segmentCuts) add(c int) { x[c>>6] |= 1 << (c & 63) }

// count returns the number of boundaries.
func (x *segmentCuts) count() int {
	n := 0
	for _, w := range x {
		n += bits.OnesCount64(w)
	}
	return n
}

// rank returns the number of boundaries below c: for a boundary, the
// index of the segment it starts.
func (x *segmentCuts) rank(c int) int {
	n := 0
	for i := range c >> 6 {
		n += bits.OnesCount64(x[i])
	}
	if r := c & 63; r != 0 {
		n += bits.OnesCount64(x[c>>6] & (1<<r - 1))
	}
	return n
}

// next returns the first boundary at or after c (257 if none).
func (x *segmentCuts) next(c int) int {
	for i := c >> 6; i < len(x); i++ {
		w := x[i]
		if i == c>>6 {
			w &^= 1<<(c&63) - 1
		}
		if w != 0 {
			return 64*i + bits.TrailingZeros64(w)
		}
	}
	return 257
}

// State-set tags of the subset construction (frameScratch.states).
const (
	tagFinal = 1 << iota
	tagStart
	tagNoPop
)

// buildFrame runs the subset construction for one frame. A DFA state is
// the set of positions that may match next, plus whether the expression
// accepts here; the start state is kept distinct from every other state.
func (a *automaton) buildFrame(fi int32, d *frameDef) error {
	s := a.scratch
	g := &s.g
	g.reset()
	s.first, s.last = s.first[:0], s.last[:0]
	nullable := g.visit(d.body, &s.first, &s.last)
	if g.err != nil {
		var e *Error
		if errors.As(g.err, &e) {
			return e
		}
		return &Error{Pos: d.pos, Msg: fmt.Sprintf("frame %s: %v", d.name, g.err)}
	}
	np := len(g.pos)
	g.last = slices.Grow(g.last[:0], np)[:np]
	clear(g.last)
	for _, p := range s.last {
		g.last[p] = true
	}
	for p := range g.follow {
		g.follow[p] = sortUnique(g.follow[p])
	}
	a.frames[fi].nullable = nullable
	s.reset(np, a.nc)
	base := int32(len(a.states)) // the frame's states are base, base+1, …

	intern := func(next []int32, tag uint8) (int32, error) {
		id, ok, h := s.states.lookup(tag, next)
		if ok {
			return id, nil
		}
		if len(a.states) >= a.limit {
			return 0, &Error{Pos: d.pos, Msg: fmt.Sprintf("grammar needs more than %d automaton states (limit MaxStates)", maxStates), limit: "MaxStates"}
		}
		if len(a.states)%cancelCheckEvery == 0 && canceled(a.done) {
			return 0, ErrCanceled
		}
		id = int32(len(a.states))
		s.states.insert(tag, next, h, id)
		var fl uint16
		if tag&tagFinal != 0 {
			fl = stFinal
		}
		if tag&tagNoPop != 0 {
			fl |= stNoPop
		}
		a.states = append(a.states, state{frame: fi, flags: fl})
		return id, nil
	}
	start, err := intern(sortUnique(s.first), boolTag(nullable, tagFinal)|tagStart)
	if err != nil {
		return err
	}
	a.frames[fi].start = start

	// target returns the state after the positions ps (sorted) match:
	// the union of their follow sets. It depends only on ps, so it is
	// memoized for the whole frame.
	target := func(ps []int32) (int32, error) {
		if len(ps) == 1 {
			// One position (most targets): memoized by position, its
			// follow set is the state's (sorted, without duplicates).
			p := ps[0]
			if s.single[p] > 0 {
				return s.single[p] - 1, nil
			}
			final := g.last[p]
			t, err := intern(g.follow[p], boolTag(final, tagFinal)|boolTag(final && g.noPop[p], tagNoPop))
			if err != nil {
				return 0, err
			}
			s.single[p] = t + 1
			return t, nil
		}
		t, ok, h := s.targets.lookup(0, ps)
		if ok {
			return t, nil
		}
		s.gen++
		if s.gen == 0 {
			clear(s.stamp)
			s.gen = 1
		}
		next := s.next[:0]
		final, popOK := false, false
		for _, p := range ps {
			for _, f := range g.follow[p] {
				if s.stamp[f] != s.gen {
					s.stamp[f] = s.gen
					next = append(next, f)
				}
			}
			final = final || g.last[p]
			popOK = popOK || (g.last[p] && !g.noPop[p])
		}
		slices.Sort(next)
		s.next = next
		t, err := intern(next, boolTag(final, tagFinal)|boolTag(final && !popOK, tagNoPop))
		if err != nil {
			return 0, err
		}
		s.targets.insert(0, ps, h, t)
		return t, nil
	}
	// group calls f with the positions of each run of equal keys of es
	// (sorted by key, then position).
	group := func(es []edgeKey, f func(k edgeKey, ps []int32) error) error {
		slices.SortFunc(es, byEdgeKey)
		ps := s.ps[:0]
		for i, e := range es {
			ps = append(ps, e.p)
			if i+1 == len(es) || es[i+1].a != e.a || es[i+1].b != e.b {
				if err := f(e, ps); err != nil {
					return err
				}
				ps = ps[:0]
			}
		}
		s.ps = ps
		return nil
	}
	// States are processed in the order of their ids (frames one after
	// the other, each breadth-first), so rows are appended.
	for e := int32(0); int(base+e) < len(a.states); e++ {
		id := base + e
		if int(id) != len(a.sStart)-1 {
			panic("mask: automaton states processed out of order")
		}
		// Most states (71% on the compile p95 band) are one position;
		// one of one byte range has one run, to the state after it.
		if set := s.states.set(e); len(set) == 1 && g.pos[set[0]].kind == rxByte && g.pos[set[0]].rng == 0 {
			gp := &g.pos[set[0]]
			s.ps = append(s.ps[:0], set[0]) // (set is in the table target may grow)
			t, err := target(s.ps)
			if err != nil {
				return err
			}
			a.sLo = append(a.sLo, a.classOf[gp.lo])
			a.sHi = append(a.sHi, a.classOf[gp.hi])
			a.sTarget = append(a.sTarget, t)
			a.sStart = append(a.sStart, int32(len(a.sTarget)))
			continue
		}
		s.calls, s.toks, s.bytePos = s.calls[:0], s.toks[:0], s.bytePos[:0]
		// The byte positions' class ranges cut the classes into segments
		// in which every class is taken by the same positions: each
		// position goes into the bucket of each segment of its range.
		var cuts segmentCuts
		var one [2]byte
		for _, p := range s.states.set(e) {
			gp := &g.pos[p]
			switch gp.kind {
			case rxByte:
				rs := g.byteRanges(gp, &one)
				for i := 0; i < len(rs); i += 2 {
					cuts.add(int(a.classOf[rs[i]]))
					cuts.add(int(a.classOf[rs[i+1]]) + 1)
				}
				s.bytePos = append(s.bytePos, p)
			case rxCall:
				s.calls = append(s.calls, edgeKey{gp.frame, 0, p})
			case rxTok:
				neg := int32(0)
				if gp.neg {
					neg = 1
				}
				s.toks = append(s.toks, edgeKey{gp.tok, neg, p})
			}
		}
		nseg := max(cuts.count()-1, 0)
		for i := range nseg {
			s.buckets[i] = s.buckets[i][:0]
		}
		for _, p := range s.bytePos {
			gp := &g.pos[p]
			rs := g.byteRanges(gp, &one)
			for j := 0; j < len(rs); j += 2 {
				lo, hi := cuts.rank(int(a.classOf[rs[j]])), cuts.rank(int(a.classOf[rs[j+1]])+1)
				for i := lo; i < hi; i++ {
					s.buckets[i] = append(s.buckets[i], p)
				}
			}
		}
		// Targets in class order (as a class-by-class expansion would
		// make them), adjacent segments with the same target one run.
		var prevPs []int32
		prevT := int32(-1)
		runs := len(a.sTarget)
		c := cuts.next(0)
		for i := range nseg {
			end := cuts.next(c + 1)
			ps := s.buckets[i]
			if len(ps) > 0 {
				t := prevT
				if !slices.Equal(ps, prevPs) {
					var err error
					if t, err = target(ps); err != nil {
						return err
					}
					prevPs, prevT = ps, t
				}
				if k := len(a.sTarget) - 1; k >= runs && a.sTarget[k] == t && int(a.sHi[k])+1 == c {
					a.sHi[k] = uint8(end - 1)
				} else {
					a.sLo = append(a.sLo, uint8(c))
					a.sHi = append(a.sHi, uint8(end-1))
					a.sTarget = append(a.sTarget, t)
				}
			}
			c = end
		}
		a.sStart = append(a.sStart, int32(len(a.sTarget)))
		// Targets are created in sorted order (callee, token; positions
		// in order), so that state numbers, and with them the eager
		// precomputation, do not change from one compilation to the next.
		var st state
		err := group(s.calls, func(k edgeKey, ps []int32) error {
			t, err := target(ps)
			st.calls = append(st.calls, callEdge{callee: k.a, ret: t})
			return err
		})
		if err == nil {
			err = group(s.toks, func(k edgeKey, ps []int32) error {
				t, err := target(ps)
				st.toks = append(st.toks, tokEdge{tok: k.a, neg: k.b == 1, next: t})
				return err
			})
		}
		if err != nil {
			return err
		}
		a.states[id].calls = st.calls
		a.states[id].toks = st.toks
	}
	return nil
}

// boolTag returns tag if b, else 0.
func boolTag(b bool, tag uint8) uint8 {
	if b {
		return tag
	}
	return 0
}

// canPopState reports whether a node in state q may leave its frame (for
// a repetition frame: end an iteration) — without counters.
func (a *automaton) canPopState(q int32) bool {
	st := &a.states[q]
	if st.flags&stFinal == 0 || st.flags&stNoPop != 0 {
		return false
	}
	f := &a.frames[st.frame]
	return q != f.start || f.root
}

// adjacency is a list of states per state, end to end: q's are
// to[start[q]:start[q+1]].
type adjacency struct {
	start, to []int32
}

func (g *adjacency) of(q int32) []int32 { return g.to[g.start[q]:g.start[q+1]] }

// successors returns, per state, the distinct targets of its byte and
// token edges (call returns excluded), in order of first appearance.
func (a *automaton) successors() adjacency {
	n := len(a.states)
	var g adjacency
	var seen []int32 // q+1 where q last added the state
	if s := a.scratch; s != nil {
		// (The lists are the construction's scratch: prune and
		// computeMinLen drop them before they ask again.)
		g.start, g.to, seen = resize(s.succStart, n+1), s.succTo[:0], resize(s.seen, n)
		clear(seen)
		defer func() { s.succStart, s.succTo, s.seen = g.start, g.to, seen }()
	} else {
		g.start, seen = make([]int32, n+1), make([]int32, n)
	}
	g.start[0] = 0
	for q := range a.states {
		tag := int32(q) + 1
		for _, t := range a.byteTargets(q) {
			if t >= 0 && seen[t] != tag {
				seen[t] = tag
				g.to = append(g.to, t)
			}
		}
		for _, e := range a.states[q].toks {
			if seen[e.next] != tag {
				seen[e.next] = tag
				g.to = append(g.to, e.next)
			}
		}
		g.start[q+1] = int32(len(g.to))
	}
	return g
}

// reverseEdges returns the automaton's edges backwards, given its
// successors: for each state the states with a byte, token or
// call-return edge into it (rev; a state may be listed more than once),
// and for each frame the states that call it (callers).
func (a *automaton) reverseEdges(succ adjacency) (rev adjacency, callers [][]int32) {
	n := len(a.states)
	if s := a.scratch; s != nil {
		rev.start = resize(s.revStart, n+2)
		clear(rev.start)
		defer func() { s.revStart, s.revTo = rev.start[:cap(rev.start)], rev.to }()
	} else {
		rev.start = make([]int32, n+2)
	}
	callers = make([][]int32, len(a.frames))
	// Count into start[t+2], sum, then fill through start[t+1].
	for q := range a.states {
		for _, t := range succ.of(int32(q)) {
			rev.start[t+2]++
		}
		for _, e := range a.states[q].calls {
			rev.start[e.ret+2]++
			callers[e.callee] = append(callers[e.callee], int32(q))
		}
	}
	for t := 2; t <= n+1; t++ {
		rev.start[t] += rev.start[t-1]
	}
	if s := a.scratch; s != nil {
		rev.to = resize(s.revTo, int(rev.start[n+1]))
	} else {
		rev.to = make([]int32, rev.start[n+1])
	}
	for q := range a.states {
		for _, t := range succ.of(int32(q)) {
			rev.to[rev.start[t+1]] = int32(q)
			rev.start[t+1]++
		}
		for _, e := range a.states[q].calls {
			rev.to[rev.start[e.ret+1]] = int32(q)
			rev.start[e.ret+1]++
		}
	}
	rev.start = rev.start[:n+1]
	return rev, callers
}

// prune removes everything that cannot lead to the end of its frame:
// calls of frames that cannot finish, and states from which the frame's
// end is unreachable. Then every reachable configuration can be
// completed to a sentence (no dead ends).
func (a *automaton) prune() error {
	n := len(a.states)
	productive := make([]bool, len(a.frames))
	coreach := make([]bool, n)
	rev, callers := a.reverseEdges(a.successors())
	// A frame's states are contiguous (frames are built one at a time).
	frameLo := make([]int32, len(a.frames))
	frameHi := make([]int32, len(a.frames))
	for q := n - 1; q >= 0; q-- {
		fi := a.states[q].frame
		if frameHi[fi] == 0 {
			frameHi[fi] = int32(q) + 1
		}
		frameLo[fi] = int32(q)
	}
	var work []int32
	mark := func(q int32) {
		if !coreach[q] {
			coreach[q] = true
			work = append(work, q)
		}
	}
	// check re-evaluates q (for predecessors through edges that may have
	// become usable).
	check := func(q int32) {
		if coreach[q] {
			return
		}
		for _, t := range a.sTarget[a.sStart[q]:a.sStart[q+1]] {
			if t >= 0 && coreach[t] {
				mark(q)
				return
			}
		}
		st := &a.states[q]
		for _, e := range st.toks {
			if coreach[e.next] {
				mark(q)
				return
			}
		}
		for _, e := range st.calls {
			if productive[e.callee] && coreach[e.ret] {
				mark(q)
				return
			}
		}
	}
	for q := range a.states {
		if a.canPopState(int32(q)) {
			mark(int32(q))
		}
	}
	for len(work) > 0 {
		q := work[len(work)-1]
		work = work[:len(work)-1]
		for _, p := range rev.of(q) {
			check(p)
		}
		fi := a.states[q].frame
		if q == a.frames[fi].start && !productive[fi] {
			productive[fi] = true
			for _, p := range callers[fi] {
				check(p)
			}
			// An iteration end that may not end the repetition can start
			// another iteration.
			if a.frames[fi].repeat {
				for p := frameLo[fi]; p < frameHi[fi]; p++ {
					if a.states[p].flags&stNoPop != 0 {
						mark(p)
					}
				}
			}
		}
	}
	root := &a.frames[0]
	if !productive[0] {
		return &Error{Msg: fmt.Sprintf("the grammar has no finite sentence: rule %s can never be completed", root.name)}
	}
	for q := range a.states {
		row := a.sTarget[a.sStart[q]:a.sStart[q+1]]
		for i, t := range row {
			if t >= 0 && !coreach[t] {
				row[i] = -1
			}
		}
		st := &a.states[q]
		st.calls = slices.DeleteFunc(st.calls, func(e callEdge) bool { return !productive[e.callee] || !coreach[e.ret] })
		st.toks = slices.DeleteFunc(st.toks, func(e tokEdge) bool { return !coreach[e.next] })
	}
	return nil
}

// checkLeftRecursion rejects grammars in which a frame can call itself
// before consuming a byte (left recursion that lowering could not remove:
// indirect, or through nullable prefixes). Such a grammar has no
// finite stack for some prefixes.
func (a *automaton) checkLeftRecursion() error {
	n := len(a.frames)
	edges := make([][]int32, n)
	for fi := range a.frames {
		for _, e := range a.states[a.frames[fi].start].calls {
			edges[fi] = append(edges[fi], e.callee)
		}
	}
	color := make([]uint8, n)
	var path []int32
	var cycle []int32
	var dfs func(u int32) bool
	dfs = func(u int32) bool {
		color[u] = 1
		path = append(path, u)
		for _, w := range edges[u] {
			if color[w] == 1 {
				i := slices.Index(path, w)
				cycle = append(slices.Clone(path[i:]), w)
				return true
			}
			if color[w] == 0 && dfs(w) {
				return true
			}
		}
		path = path[:len(path)-1]
		color[u] = 2
		return false
	}
	for fi := range n {
		if color[fi] == 0 && dfs(int32(fi)) {
			names := make([]string, len(cycle))
			for i, f := range cycle {
				names[i] = a.frames[f].name
			}
			return &Error{Msg: leftRecursionMsg + strings.Join(names, " -> ")}
		}
	}
	return nil
}

// computeFlags sets stPureFinal, stSimple and stTop (and each frame's
// state range: states of a frame are contiguous), and stReachPop given
// the reversed edges (reverseEdges).
func (a *automaton) computeFlags(rev adjacency) {
	for fi := range a.frames {
		a.frames[fi].first_, a.frames[fi].last_ = -1, -1
	}
	for q := range a.states {
		f := &a.frames[a.states[q].frame]
		if f.first_ < 0 {
			f.first_ = int32(q)
		}
		f.last_ = int32(q) + 1
	}
	for q := range a.states {
		st := &a.states[q]
		f := &a.frames[st.frame]
		row := a.sTarget[a.sStart[q]:a.sStart[q+1]] // (sparse: all present)
		hasTrans := len(row) > 0
		for _, t := range row {
			a.states[t].flags |= stTop
		}
		for _, e := range st.toks {
			a.states[e.next].flags |= stTop
		}
		final := st.flags&stFinal != 0
		if f.repeat {
			st.flags |= stRepeat
		}
		if final && !hasTrans && len(st.calls) == 0 && len(st.toks) == 0 && !f.repeat && int32(q) != f.start {
			st.flags |= stPureFinal
		}
		if len(st.calls) == 0 && len(st.toks) == 0 && !final && int32(q) != f.start {
			st.flags |= stSimple
		}
		if len(st.calls) == 0 && len(st.toks) == 0 && int32(q) != f.start && (!f.repeat || !final) {
			st.flags |= stTight
		}
		if f.repeat && final && !hasTrans && len(st.calls) == 0 && len(st.toks) == 0 && int32(q) != f.start &&
			len(a.states[f.start].calls) == 0 && len(a.states[f.start].toks) == 0 {
			st.flags |= stIterOnly
		}
	}
	a.states[a.frames[0].start].flags |= stTop
	a.computeReachPop(rev)
}

// computeReachPop sets stReachPop on the states of repetition frames from
// which the current iteration can end where the repetition may end (on
// every state of other frames).
func (a *automaton) computeReachPop(rev adjacency) {
	var work []int32
	for q := range a.states {
		st := &a.states[q]
		f := &a.frames[st.frame]
		switch {
		case !f.repeat:
			st.flags |= stReachPop
		case st.flags&stFinal != 0 && st.flags&stNoPop == 0 && int32(q) != f.start:
			st.flags |= stReachPop
			work = append(work, int32(q))
		}
	}
	for len(work) > 0 {
		q := work[len(work)-1]
		work = work[:len(work)-1]
		for _, p := range rev.of(q) {
			if a.states[p].flags&stReachPop == 0 && p != a.frames[a.states[p].frame].start {
				a.states[p].flags |= stReachPop
				work = append(work, p)
			}
		}
	}
}

// computeMinLen computes, per state, the fewest bytes that finish its
// frame, and per frame the fewest bytes of a visit (≥ 1 byte for frames
// other than the root). Token references count as one byte. For a
// repetition frame the state values finish the current iteration; the
// frame's minimum includes its minimum number of iterations.
func (a *automaton) computeMinLen(succ, rev adjacency, callers [][]int32) {
	const inf = MaxMinLen + 1
	n := len(a.states)
	a.minLen = make([]int64, n)
	for q := range a.minLen {
		a.minLen[q] = inf
	}
	for fi := range a.frames {
		a.frames[fi].minLen = inf
	}
	// eval recomputes minLen[q] from its edges (for repetition frames: to
	// the end of the current iteration).
	eval := func(q int32) int64 {
		best := inf
		if a.canPopState(q) || (a.states[q].flags&stFinal != 0 && a.frames[a.states[q].frame].repeat && q != a.frames[a.states[q].frame].start) {
			best = 0
		}
		for _, t := range succ.of(q) { // byte and token edges
			if a.minLen[t] < inf {
				best = min(best, satAdd(1, a.minLen[t]))
			}
		}
		for _, e := range a.states[q].calls {
			if fm := a.frames[e.callee].minLen; fm < inf && a.minLen[e.ret] < inf {
				best = min(best, satAdd(fm, a.minLen[e.ret]))
			}
		}
		return best
	}
	// A queue in rounds: the states pushed while a round is evaluated
	// are the next round (the order of a FIFO queue, in two lists that
	// are reused instead of one that slides through new allocations).
	var work, next []int32
	inWork := make([]bool, n)
	push := func(q int32) {
		if !inWork[q] {
			inWork[q] = true
			next = append(next, q)
		}
	}
	for q := range a.states {
		push(int32(q))
	}
	for len(next) > 0 {
		work, next = next, work[:0]
		for _, q := range work {
			inWork[q] = false
			v := eval(q)
			if v >= a.minLen[q] {
				continue
			}
			a.minLen[q] = v
			for _, p := range rev.of(q) {
				push(p)
			}
			fi := a.states[q].frame
			f := &a.frames[fi]
			if q == f.start {
				m := v
				if f.repeat {
					m = satMul(m, int64(max(f.min, 1)))
				}
				if m < f.minLen {
					f.minLen = m
					for _, p := range callers[fi] {
						push(p)
					}
				}
			}
		}
	}
}

// MaxMinLen is the largest length the automaton's shortest-completion
// arithmetic represents (Matcher.MinCompletion): lengths saturate there
// instead of wrapping, so a grammar whose shortest sentence is longer
// (nested counted repetitions across rules multiply: 2^62 bytes is four
// levels of {100000}) reports at least MaxMinLen.
const MaxMinLen = int64(1)<<62 - 1

// satAdd returns a+b, at most MaxMinLen (a, b ≤ MaxMinLen).
func satAdd(a, b int64) int64 { return min(a+b, MaxMinLen) }

// satMul returns a·k, at most MaxMinLen (0 ≤ a ≤ MaxMinLen, k ≥ 0).
func satMul(a, k int64) int64 {
	if k != 0 && a > MaxMinLen/k {
		return MaxMinLen
	}
	return a * k
}

// entersOn reports whether a push of frame f (its start, and the starts
// of the frames that calls from there push in turn) can take a byte of
// class c. Where it cannot, stepping the pushed node emits nothing: a
// frame's start does not pop (canPop) unless it is a root's with the
// bottom of the stack below, which firstRoot leaves to the step. A state
// that calls a chain of frames each of whose starts calls the next (an
// object's optional properties in order, "root-rest-k ::= (, key value)?
// root-rest-k+1": Github_ultra/o76155 has 83) then steps the chain only
// on the bytes that enter it, not on every byte (the level below a string's
// end there stepped 222 nodes per trie node: 25,368 of its 25,584 units).
// (The pop of a root's start is kept, though the node that pushed the
// chain pops to the same nodes where the root is nullable: its state is
// final then.)
func (a *automaton) entersOn(f int32, c int) bool {
	return noEnterSkip || a.firstRoot[f] || a.first[f].has(a.classLo[c])
}

// noEnterSkip makes entersOn true for every frame and byte (tests compare
// with and without).
var noEnterSkip = false

// computeFollow computes, per frame, the bytes it can start with and the
// bytes that can follow it in any context (for a repetition frame, after
// it pops). A walk records a cross point only where the token goes on
// with a byte of the frame's follow set.
func (a *automaton) computeFollow() {
	a.first = make([]byteBits, len(a.frames))
	a.follow = make([]byteBits, len(a.frames))
	// stateBytes adds the bytes that can be consumed next from q, locally
	// or by callees (not by popping).
	stateBytes := func(b *byteBits, q int32) bool {
		changed := false
		var local byteBits
		for k := a.sStart[q]; k < a.sStart[q+1]; k++ {
			local.addRange(a.classLo[a.sLo[k]], a.classHi[a.sHi[k]])
		}
		for _, e := range a.states[q].calls {
			local.union(&a.first[e.callee])
		}
		if b.union(&local) {
			changed = true
		}
		return changed
	}
	for changed := true; changed; {
		changed = false
		for fi := range a.frames {
			if stateBytes(&a.first[fi], a.frames[fi].start) {
				changed = true
			}
		}
	}
	// firstRoot: a root frame's start is reached by calls from the start
	// (where its stack may pop without input: see entersOn).
	a.firstRoot = make([]bool, len(a.frames))
	for changed := true; changed; {
		changed = false
		for fi := range a.frames {
			if a.firstRoot[fi] {
				continue
			}
			r := a.frames[fi].root
			for _, e := range a.states[a.frames[fi].start].calls {
				r = r || a.firstRoot[e.callee]
			}
			if r {
				a.firstRoot[fi], changed = true, true
			}
		}
	}
	// after(q): bytes after returning to q, possibly popping q's frame.
	var after func(b *byteBits, q int32, depth int) bool
	after = func(b *byteBits, q int32, depth int) bool {
		changed := stateBytes(b, q)
		st := &a.states[q]
		f := &a.frames[st.frame]
		if f.repeat && st.flags&stFinal != 0 && q != f.start {
			// The next iteration.
			if b.union(&a.first[st.frame]) {
				changed = true
			}
		}
		if a.canPopState(q) {
			// (Also the root's: what follows it where the grammar
			// calls it again; at the bottom of the stack nothing does.
			// Left out, a frame called last in the root lost the bytes
			// after the root's recursive calls from its follow set, and
			// a token going on past both pops was not allowed: "cb"
			// after "aa" in root ::= "a" root "b" | "a" z | "", with z
			// a frame that can take "c".)
			if b.union(&a.follow[st.frame]) {
				changed = true
			}
		}
		return changed
	}
	for changed := true; changed; {
		changed = false
		for q := range a.states {
			for _, e := range a.states[q].calls {
				if after(&a.follow[e.callee], e.ret, 0) {
					changed = true
				}
			}
		}
	}
}

// minimize merges equivalent states of each frame (partition refinement,
// see minimalPartition): inlined copies of the same rule, and unrolled
// repetitions, often leave many states with the same future. Fewer
// states mean fewer trie walks at compile time and more sharing in the
// mask cache. States of different frames, the start state of a frame and
// final/non-final states are never merged.
func (a *automaton) minimize() {
	ms := minScratches.Get()
	if ms == nil {
		ms = new(minScratch)
	}
	defer minScratches.Put(ms)
	block, numBlocks := a.minimalPartition(ms)
	if verifyMinimize {
		if ref, _ := a.moorePartition(a.edges(nil)); !samePartition(block, ref) {
			panic("mask: minimalPartition disagrees with moorePartition")
		}
	}
	// Renumber: keep the first state of each block, in order.
	newID := make([]int32, numBlocks)
	for i := range newID {
		newID[i] = -1
	}
	states := make([]state, 0, numBlocks)
	rep := make([]int32, 0, numBlocks)
	for q := range a.states {
		b := block[q]
		if newID[b] < 0 {
			newID[b] = int32(len(rep))
			rep = append(rep, int32(q))
		}
	}
	// The sparse rows of the kept states, renumbered and without absent
	// transitions, are compacted in place for the passes after
	// minimization (a few entries per state instead of nc): kept states
	// are in order, so a row's new place never comes after its old one.
	// Adjacent runs whose targets became one state are merged, so that
	// equal rows have equal runs (buildRows).
	w := int32(0)
	for nq, q := range rep {
		st := a.states[q]
		for i := range st.calls {
			st.calls[i].ret = newID[block[st.calls[i].ret]]
		}
		for i := range st.toks {
			st.toks[i].next = newID[block[st.toks[i].next]]
		}
		states = append(states, st)
		lo, hi := a.sStart[q], a.sStart[q+1]
		a.sStart[nq] = w
		for k := lo; k < hi; k++ {
			t := a.sTarget[k]
			if t < 0 {
				continue
			}
			t = newID[block[t]]
			if w > a.sStart[nq] && a.sTarget[w-1] == t && int(a.sHi[w-1])+1 == int(a.sLo[k]) {
				a.sHi[w-1] = a.sHi[k]
				continue
			}
			a.sLo[w], a.sHi[w], a.sTarget[w] = a.sLo[k], a.sHi[k], t
			w++
		}
	}
	a.sStart[len(rep)] = w
	a.sStart, a.sLo, a.sHi, a.sTarget = a.sStart[:len(rep)+1], a.sLo[:w], a.sHi[:w], a.sTarget[:w]
	for fi := range a.frames {
		a.frames[fi].start = newID[block[a.frames[fi].start]]
	}
	a.states = states
	a.buildRows(ms)
}

// rowBias is added to the relative targets of the transition table
// (automaton.rows), so that 0, the entry of no transition, decodes to a
// negative state for any state (fewer than MaxStates < rowBias).
const rowBias = 1 << 30

var _ [rowBias - MaxStates]struct{} // (MaxStates < rowBias)

// buildRows builds the dense transition table from the sparse runs of
// the minimized states, one row per distinct list of runs with relative
// targets (see automaton.rows): a state's runs are looked up by their
// hash in a table of open addressing, and only the distinct rows are
// written (each a pass over nc entries).
func (a *automaton) buildRows(ms *minScratch) {
	n := len(a.states)
	size := 1
	for size < 2*n {
		size <<= 1
	}
	slots := resize(ms.rowSlots, size) // row number plus one, 0: empty
	clear(slots)
	ms.rowSlots = slots
	hashes := resize(ms.rowHash, n) // per row (its first state's runs)
	ms.rowHash = hashes
	first := resize(ms.rowFirst, n) // per row: the state it was first seen at
	ms.rowFirst = first
	rowOf := make([]int32, n)
	numRows := int32(0)
	same := func(q, r int32) bool {
		if a.sStart[q+1]-a.sStart[q] != a.sStart[r+1]-a.sStart[r] {
			return false
		}
		for i, j := a.sStart[q], a.sStart[r]; i < a.sStart[q+1]; i, j = i+1, j+1 {
			if a.sLo[i] != a.sLo[j] || a.sHi[i] != a.sHi[j] || a.sTarget[i]-q != a.sTarget[j]-r {
				return false
			}
		}
		return true
	}
	for q := int32(0); q < int32(n); q++ {
		h := uint32(2166136261)
		for k := a.sStart[q]; k < a.sStart[q+1]; k++ {
			h = (h ^ uint32(a.sLo[k]) ^ uint32(a.sHi[k])<<8) * 16777619
			h = (h ^ uint32(a.sTarget[k]-q)) * 16777619
		}
		i := int(h) & (size - 1)
		for {
			r := slots[i] - 1
			if r < 0 {
				slots[i] = numRows + 1
				hashes[numRows], first[numRows] = int32(h), q
				rowOf[q] = numRows
				numRows++
				break
			}
			if hashes[r] == int32(h) && same(q, first[r]) {
				rowOf[q] = r
				break
			}
			i = (i + 1) & (size - 1)
		}
	}
	rows := make([]int32, int(numRows)*a.nc) // (zeroed: no transitions)
	for r := range numRows {
		row := rows[int(r)*a.nc:][:a.nc]
		q := first[r]
		for k := a.sStart[q]; k < a.sStart[q+1]; k++ {
			for c := int(a.sLo[k]); c <= int(a.sHi[k]); c++ {
				row[c] = a.sTarget[k] - q + rowBias
			}
		}
	}
	a.rows, a.rowOf = rows, rowOf
}

// byteTargets returns the byte-class targets of state q during the
// construction: its sparse targets (one per run of classes, without the
// classes); -1 entries are pruned transitions.
func (a *automaton) byteTargets(q int) []int32 {
	return a.sTarget[a.sStart[q]:a.sStart[q+1]]
}

// step returns the state q goes to on byte class c, negative if none
// (after minimization).
func (a *automaton) step(q int32, c int) int32 {
	return q - rowBias + a.rows[int(a.rowOf[q])*a.nc+c]
}

// row is a state's transitions by byte class (after minimization).
type row struct {
	cells []int32 // automaton.rows's encoding; nil: no transitions at all
	base  int32   // the state the row is of, less rowBias: cells are relative to it
}

// next returns the state the row goes to on class c, negative if none.
func (r row) next(c int) int32 { return r.base + r.cells[c] }

// row returns q's transition row.
func (a *automaton) row(q int32) row {
	i := int(a.rowOf[q]) * a.nc
	return row{a.rows[i : i+a.nc], q - rowBias}
}
