package mask

import (
	"fmt"
	"slices"
)

// A node is the top of one stack: a state, its repetition counter, and
// the rest of the stack (an interned node of an arena) below it. A
// configuration — what the matcher knows after a prefix — is a set of
// nodes. Nodes below the top are interned, so equal stacks share memory
// and compare by index.
type node struct {
	state  int32
	cnt    int32 // repetition frames: iterations started so far (relative to the walk's base in symbolic walks)
	parent int32 // arena index of the node below, or bottom / boundary
}

const (
	// bottom is below the root frame: popping onto it ends the sentence.
	bottom = int32(-1)
	// boundary is below the part of the stack a walk knows: popping onto
	// it means the rest of the token is up to the frames below.
	boundary = int32(-2)
)

// MaxConfig bounds the number of stacks a configuration may hold. Each
// stack is one way the output so far can be parsed; a grammar ambiguous
// enough to exceed this (exponentially many parses of a prefix) is
// rejected instead of slowing every step down without bound. Real
// grammars stay below 10.
const MaxConfig = 4096

// unboundedCount stands for "no upper bound" in counter arithmetic.
const unboundedCount = int32(1 << 30)

type arena struct {
	nodes []node
	index map[node]int32
}

func newArena() *arena { return &arena{index: make(map[node]int32)} }

func (ar *arena) intern(n node) int32 {
	if i, ok := ar.index[n]; ok {
		return i
	}
	i := int32(len(ar.nodes))
	ar.nodes = append(ar.nodes, n)
	ar.index[n] = i
	return i
}

func (ar *arena) reset() {
	ar.nodes = ar.nodes[:0]
	clear(ar.index)
}

// stepper advances nodes over one byte class or one token.
type stepper struct {
	a        *automaton
	v        *Vocab
	ar       *arena
	symbolic bool // the base frame (just above boundary) is a repetition walked with unknown counter
	out      []node
	overflow bool // a step produced more than MaxConfig nodes
}

// bounds returns the iteration bounds of the repetition frame of n.
func (s *stepper) bounds(n node, f *frame) (lo, hi int32) {
	if s.symbolic && n.parent == boundary {
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
	if st.flags&stFinal == 0 {
		return false
	}
	f := &a.frames[st.frame]
	if n.state == f.start {
		return f.root && n.parent == bottom
	}
	if f.repeat {
		lo, _ := s.bounds(n, f)
		return n.cnt >= lo
	}
	return true
}

// canEnd reports whether the stack of n can pop all the way to bottom.
func (s *stepper) canEnd(n node) bool {
	for {
		if !s.canPop(n) {
			return false
		}
		if n.parent < 0 {
			return n.parent == bottom
		}
		n = s.ar.nodes[n.parent]
	}
}

// crossIt reports whether the stack of n can pop down to boundary, and
// the counter of the base node when it does.
func (s *stepper) crossIt(n node) (bool, int32) {
	for {
		if !s.canPop(n) {
			return false, 0
		}
		if n.parent < 0 {
			return n.parent == boundary, n.cnt
		}
		n = s.ar.nodes[n.parent]
	}
}

// baseCnt returns the counter of the node just above boundary (or bottom).
func (s *stepper) baseCnt(n node) int32 {
	for n.parent >= 0 {
		n = s.ar.nodes[n.parent]
	}
	return n.cnt
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
	a := s.a
	st := &a.states[n.state]
	f := &a.frames[st.frame]
	if !f.repeat {
		if t := a.trans[int(n.state)*a.nc+c]; t >= 0 {
			s.emit(node{t, 0, n.parent})
		}
		for _, e := range st.calls {
			s.pushByte(e, n, 0, c)
		}
	} else {
		_, hi := s.bounds(n, f)
		if n.state != f.start {
			if t := a.trans[int(n.state)*a.nc+c]; t >= 0 {
				s.emit(node{t, n.cnt, n.parent})
			}
			for _, e := range st.calls {
				s.pushByte(e, n, n.cnt, c)
			}
		}
		if (n.state == f.start || st.flags&stFinal != 0) && n.cnt < hi {
			s0 := f.start
			if t := a.trans[int(s0)*a.nc+c]; t >= 0 {
				s.emit(node{t, n.cnt + 1, n.parent})
			}
			for _, e := range a.states[s0].calls {
				s.pushByte(e, n, n.cnt+1, c)
			}
		}
	}
	if n.parent >= 0 && s.canPop(n) {
		s.stepByte(s.ar.nodes[n.parent], c)
	}
}

func (s *stepper) pushed(e callEdge, n node, cnt int32) node {
	var pid int32
	if s.a.states[e.ret].flags&stPureFinal != 0 {
		// Tail call: returning to a state that can only pop is the same
		// as returning to the node below.
		pid = n.parent
	} else {
		pid = s.ar.intern(node{e.ret, cnt, n.parent})
	}
	return node{s.a.frames[e.callee].start, 0, pid}
}

func (s *stepper) pushByte(e callEdge, n node, cnt int32, c int) {
	s.stepByte(s.pushed(e, n, cnt), c)
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
			f(&st.toks[i], node{st.toks[i].next, 0, n.parent})
		}
		for _, e := range st.calls {
			s.forTokEdges(s.pushed(e, n, 0), f)
		}
	} else {
		_, hi := s.bounds(n, fr)
		if n.state != fr.start {
			for i := range st.toks {
				f(&st.toks[i], node{st.toks[i].next, n.cnt, n.parent})
			}
			for _, e := range st.calls {
				s.forTokEdges(s.pushed(e, n, n.cnt), f)
			}
		}
		if (n.state == fr.start || st.flags&stFinal != 0) && n.cnt < hi {
			s0 := &a.states[fr.start]
			for i := range s0.toks {
				f(&s0.toks[i], node{s0.toks[i].next, n.cnt + 1, n.parent})
			}
			for _, e := range s0.calls {
				s.forTokEdges(s.pushed(e, n, n.cnt+1), f)
			}
		}
	}
	if n.parent >= 0 && s.canPop(n) {
		s.forTokEdges(s.ar.nodes[n.parent], f)
	}
}

// normalize sorts and deduplicates nodes in place.
func normalize(cfg []node) []node {
	slices.SortFunc(cfg, func(x, y node) int {
		if x.state != y.state {
			return int(x.state - y.state)
		}
		if x.cnt != y.cnt {
			return int(x.cnt - y.cnt)
		}
		return int(x.parent - y.parent)
	})
	return slices.Compact(cfg)
}

// stepConfig steps every node of cfg over byte b and returns the new
// configuration in s.out (normalized).
func (s *stepper) stepConfig(cfg []node, b byte) []node {
	s.out = s.out[:0]
	c := int(s.a.classOf[b])
	for _, n := range cfg {
		s.stepByte(n, c)
	}
	return normalize(s.out)
}

// ErrTooAmbiguous is returned when a configuration would hold more than
// MaxConfig stacks.
var ErrTooAmbiguous = fmt.Errorf("mask: grammar too ambiguous: more than %d simultaneous parses (limit MaxConfig)", MaxConfig)
