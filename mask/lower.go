package mask

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/chunks"
)

// Lowering turns a *gbnf.Grammar into frames: regular expressions over
// bytes, token references and calls of other frames. A frame is what the
// matcher keeps on its stack:
//
//   - the root rule, and every rule that is recursive (directly or
//     through other rules), or large and used in several places;
//   - a counted repetition X{m,n} whose bound is large (repetition frames
//     count their iterations instead of unrolling them, so {0,5000} costs
//     what {0,5} does).
//
// Every other rule is inlined where it is used, and small repetitions are
// unrolled; both give the automaton more context-independent states.

// rxOp is the kind of an rx node.
type rxOp uint8

const (
	rxNone  rxOp = iota // matches nothing
	rxEmpty             // matches ""
	rxByte              // one byte in lo..hi, or in one of the ranges rng
	rxSeq
	rxAlt
	rxStar
	rxOpt
	rxCall // a frame, entered only to consume at least one byte
	rxTok  // one token by id (neg: any token but that one)
	// rxNoPop marks its sub-expression, the body of a repetition frame:
	// an iteration ending in it may not end the repetition (see
	// lowerRepeat's last class).
	rxNoPop
	// rxGoto continues with the body of a rule of a right-linear set (see
	// lowerer.label), lowered once as a label; the innermost enclosing
	// rxRegion holds one copy of each label its gotos reach, so the
	// references among the set's rules cost no frame call.
	rxGoto
	// rxRegion is a scope whose sub-expression contains gotos: what its
	// labels end with is what the region ends with.
	rxRegion
)

// rxLabel is a rule of a right-linear set lowered once, for its gotos.
type rxLabel struct {
	rule     int32
	name     string
	body     *rx
	nullable bool
	node     *rx     // the goto to this label (one per label: gotos hold no positions)
	gotos    []int32 // rules of the labels its body goes to (outside nested regions)
}

// rx is a regular expression over bytes, calls and token references. A
// subtree may be shared by several parents: the automaton construction
// gives each visit its own positions.
type rx struct {
	op     rxOp
	lo, hi byte
	neg    bool
	frame  int32
	tok    int32
	// visited is the pass (rxPasses) that last visited this node, in
	// passes over a lowering's expressions that visit each node with
	// subexpressions once (computeClasses). Only such nodes are marked:
	// they belong to one lowering, while leaves may be shared (byteNodes).
	visited uint32
	subs    []*rx
	lbl     *rxLabel // rxGoto: its label
	// rng, when not nil, holds the ranges of a byte position that takes
	// several (lo0, hi0, lo1, hi1, …, ascending and apart; lo and hi are
	// the first and the last byte): a class's one-byte characters are one
	// position (see classRx). (A pointer: rx stays 64 bytes.)
	rng    *[]byte
	leaves int // positions one visit creates (capped), for size limits
}

// rxPasses numbers the passes that mark rx.visited.
var rxPasses atomic.Uint32

func (r *rx) size() int { return r.leaves }

// eachRange calls f with each byte range of a byte position.
func (r *rx) eachRange(f func(lo, hi byte)) {
	if r.rng == nil {
		f(r.lo, r.hi)
		return
	}
	for i, rs := 0, *r.rng; i < len(rs); i += 2 {
		f(rs[i], rs[i+1])
	}
}

var (
	rxNoneNode  = &rx{op: rxNone}
	rxEmptyNode = &rx{op: rxEmpty}
	// byteNodes[c] matches byte c: literals share these leaves (rx nodes
	// are never changed once built) instead of allocating one per byte.
	byteNodes = func() (t [256]rx) {
		for c := range t {
			t[c] = rx{op: rxByte, lo: byte(c), hi: byte(c), leaves: 1}
		}
		return t
	}()
)

// flattenMax is the most children a nested sequence or alternation may
// have and still be spliced into its parent. Splicing keeps expressions
// shallow, but a chain of rules each wrapping the next (r0 ::= "a" r1 "b",
// r1 ::= "a" r2 "b", …) would copy the whole inner list at every level:
// quadratic in the chain's length. Larger children stay nested, which
// the automaton construction handles in linear time.
const flattenMax = 16

// rxArena hands out the lowering's rx nodes and their lists of
// subexpressions from larger allocations (chunks): a lowering makes
// thousands of small ones (on the compile p95 band, a quarter of the
// allocations of convert and compile together). A list has room for
// exactly what it was asked for, so an append past it copies it
// elsewhere.
type rxArena struct {
	nodes chunks.Chunks[rx]
	lists chunks.Chunks[*rx]
}

func (a *rxArena) node(r rx) *rx {
	n := &a.nodes.Take(1)[0]
	*n = r
	return n
}

// list returns an empty list with room for k entries.
func (a *rxArena) list(k int) []*rx { return a.lists.Take(k)[:0] }

func (a *rxArena) seq(subs []*rx) *rx {
	n := 0 // the length of out, counted first: one allocation
	for _, s := range subs {
		switch {
		case s.op == rxNone:
			return rxNoneNode
		case s.op == rxEmpty:
		case s.op == rxSeq && len(s.subs) <= flattenMax:
			n += len(s.subs)
		default:
			n++
		}
	}
	if n <= 1 {
		for _, s := range subs {
			if s.op != rxEmpty {
				return s
			}
		}
		return rxEmptyNode
	}
	out := a.list(n)
	for _, s := range subs {
		switch s.op {
		case rxNone:
			return rxNoneNode
		case rxEmpty:
			continue
		case rxSeq:
			if len(s.subs) <= flattenMax {
				out = append(out, s.subs...)
				continue
			}
		}
		out = append(out, s)
	}
	switch len(out) {
	case 0:
		return rxEmptyNode
	case 1:
		return out[0]
	}
	return a.node(rx{op: rxSeq, subs: out, leaves: sumLeaves(out)})
}

func (a *rxArena) alt(subs []*rx) *rx {
	n := 0
	for _, s := range subs {
		if s.op == rxAlt && len(s.subs) <= flattenMax {
			n += len(s.subs)
		} else {
			n++
		}
	}
	out := a.list(n)
	empty := false
	for _, s := range subs {
		switch s.op {
		case rxNone:
			continue
		case rxEmpty:
			empty = true
			continue
		case rxAlt:
			if len(s.subs) <= flattenMax {
				out = append(out, s.subs...)
				continue
			}
		}
		out = append(out, s)
	}
	var r *rx
	switch len(out) {
	case 0:
		if empty {
			return rxEmptyNode
		}
		return rxNoneNode
	case 1:
		r = out[0]
	default:
		r = a.node(rx{op: rxAlt, subs: out, leaves: sumLeaves(out)})
	}
	if empty {
		return a.opt(r)
	}
	return r
}

func (a *rxArena) opt(s *rx) *rx {
	switch s.op {
	case rxNone, rxEmpty:
		return rxEmptyNode
	case rxOpt, rxStar:
		return s
	}
	return a.node(rx{op: rxOpt, subs: append(a.list(1), s), leaves: s.leaves})
}

func (a *rxArena) star(s *rx) *rx {
	switch s.op {
	case rxNone, rxEmpty:
		return rxEmptyNode
	case rxOpt, rxStar:
		s = s.subs[0]
	}
	return a.node(rx{op: rxStar, subs: append(a.list(1), s), leaves: s.leaves})
}

func sumLeaves(subs []*rx) int {
	n := 0
	for _, s := range subs {
		n += s.leaves
		if n > MaxPositions {
			return MaxPositions + 1
		}
	}
	return n
}

// rxKeyOpen starts the key of an operator node.
var rxKeyOpen = [...]string{rxSeq: "(s", rxAlt: "(a", rxStar: "(*", rxOpt: "(?", rxNoPop: "(n", rxRegion: "(R"}

// key returns a canonical text form of r, used to share repetition frames
// with the same body.
func (r *rx) key(b *strings.Builder) {
	const hex = "0123456789abcdef"
	var num [24]byte
	switch r.op {
	case rxNone:
		b.WriteString("!")
	case rxEmpty:
		b.WriteString("e")
	case rxByte:
		b.WriteByte('[')
		r.eachRange(func(lo, hi byte) {
			b.Write([]byte{hex[lo>>4], hex[lo&15], hex[hi>>4], hex[hi&15]})
		})
		b.WriteByte(']')
	case rxCall:
		b.WriteByte('c')
		b.Write(strconv.AppendInt(num[:0], int64(r.frame), 10))
	case rxTok:
		b.WriteByte('t')
		b.Write(strconv.AppendBool(strconv.AppendInt(num[:0], int64(r.tok), 10), r.neg))
	case rxGoto:
		b.WriteByte('g')
		b.Write(strconv.AppendInt(num[:0], int64(r.lbl.rule), 10))
	default:
		b.WriteString(rxKeyOpen[r.op])
		for _, s := range r.subs {
			b.WriteByte(' ')
			s.key(b)
		}
		b.WriteByte(')')
	}
}

// byteWidth returns how many distinct byte values the positions of r can
// match (capped at 256).
func (r *rx) byteWidth() int {
	var seen [256]bool
	n := 0
	var visit func(*rx)
	visit = func(r *rx) {
		if r.op == rxGoto {
			n = 256 // (labels are not followed: counted as wide)
		}
		if r.op == rxByte {
			r.eachRange(func(lo, hi byte) {
				for c := int(lo); c <= int(hi); c++ {
					if !seen[c] {
						seen[c] = true
						n++
					}
				}
			})
		}
		for _, s := range r.subs {
			visit(s)
		}
	}
	visit(r)
	return min(n, 256)
}

// frameDef is a frame before automaton construction.
type frameDef struct {
	bodyKey  string // repetition frames: canonical form of the body (frames with equal keys share level-1 data)
	name     string
	repeat   bool
	min, max int // repetition bounds; max == gbnf.Unbounded for none
	body     *rx
	rule     gbnf.RuleID // rule frames: the rule
	root     bool
	pos      gbnf.Pos
}

// lowerer holds the state of lowering one grammar.
type lowerer struct {
	g      *gbnf.Grammar
	v      *Vocab
	bodies []*gbnf.Node // rule bodies, left recursion removed

	nullable  []bool
	reachable []bool
	recursive []bool
	refs      []int
	heavy     []bool
	inline    []bool
	ruleFrame []int32
	inlined   []*rx // lowered body of inlined rules (memo)
	inlining  []bool
	atoms     []int8 // per rule: 1 an atom (see atom), 2 not, 0 not known yet, 3 being decided
	loopDepth int    // repetitions around the node being lowered
	positions int    // of the frames made so far (see lowerGrammar's maxPositions)

	// label marks the rules of right-linear sets: sets of mutually
	// recursive rules that refer to each other only in tail position
	// (r1 ::= "0" r1 | "1" r2 | "", r2 ::= "0" r2 | "1" r1: the states of
	// a DFA, as the converter writes a multipleOf or a pattern). Each
	// such rule is lowered once as a label (labels), and every reference
	// to it is a goto: the set becomes part of whatever frame uses it,
	// with no call per state change (a frame call per digit made the
	// walks below its states cost millions of work units).
	label      []bool
	labelSize  []int // the positions of the label's whole set (estimate)
	labels     []*rxLabel
	scopeGotos []int32 // labels gone to in the scope being lowered (see lowerScope)

	frames    []*frameDef
	repKeys   map[string]int32
	noUnroll  bool
	frameSize int            // positions of shared rules inlined into the frame being lowered
	classes   map[string]*rx // classRx's memo
	ar        rxArena        // the rx nodes and lists
	stack     []*rx          // lowerNode's subexpressions being lowered (each node's above its parent's)
	err       error
}

// popSeq returns the sequence of l.stack[base:], which it pops.
func (l *lowerer) popSeq(base int) *rx {
	r := l.ar.seq(l.stack[base:])
	l.stack = l.stack[:base]
	return r
}

// Unrolling thresholds for X{m,n}: small repetitions are unrolled into
// plain states (more context-independent masks); large ones become
// counting frames. Narrow bodies (few distinct bytes, e.g. [0-9]{1,15}
// or [ \t]{0,20}) are unrolled further than wide ones (e.g. [^"]{0,80}),
// because every unrolled state of a wide body costs a walk over most of
// the token trie at compile time.
const (
	unrollAlways      = 4   // X{m,n} with n ≤ 4 (or X{m,} with m ≤ 4) is always unrolled
	unrollNarrowMax   = 32  // a narrow body is unrolled up to this count
	unrollNarrowWidth = 16  // at most this many distinct bytes makes a body narrow
	unrollMaxLeaves   = 256 // unrolling must not create more positions than this
)

// Inlining thresholds: a non-recursive rule is inlined if it is used
// once, or if it is small or an atom and does not loop over a wide byte
// class (such a loop costs a walk over most of the token trie per copy),
// or while the copies of shared rules add up to at most inlineDupBudget
// positions in the whole grammar. Any larger rule used in several
// places is a frame: copies of it cost subset construction and
// minimization at compile time (which merge most of them again) and a
// level-1 set per copied state; a frame's states and sets are made once.
// The budget was 16,384 positions plus the size of the grammar up to
// stop 26 (the copies could double a large automaton): the automata of
// the JSONSchemaBench grammars ranked 60th to 200th by compile time had
// 1.8 times the states before minimization and 1.4 times after. A small
// grammar keeps its shared rules inlined (fewer frames: faster masks;
// the arithmetic bench grammar's masks took 1.5-2 times as long with
// term and unary as frames).
const (
	inlineSmallLeaves = 16
	heavyWidth        = 96
	// frameInlineBudget bounds the positions that inlined copies of shared
	// rules add to one frame.
	frameInlineBudget = 4096
	// A shared rule that is an atom (see lowerer.atom) of at most this
	// many positions is inlined into a repetition's body whatever the
	// frame's budget (elsewhere it may stay a call): a JSON
	// string's character with its escapes (kchar, char) takes 41-80
	// positions with UTF-8, and called as a frame from a loop (kchar*)
	// it makes the loop one of calls instead of a byte-class loop that a
	// vocabulary slice serves, whose states each walk the trie:
	// Snowplow/sp_137's key loop had a state of 1.3 million work units.
	inlineAtomLeaves = 128
	// inlineDupBudget bounds the positions that copies of shared rules
	// (other than small ones and atoms) add to the whole grammar.
	inlineDupBudget = 2048
)

// errPositionCap is lowerGrammar's error when the frames' positions
// pass its maxPositions.
var errPositionCap = errors.New("mask: more automaton positions than the unrolled lowering is tried with")

// lowerGrammar lowers g. With noUnroll, only repetitions up to one copy
// are unrolled (the fallback when unrolling blows up the automaton). The
// rules' rewritten bodies and their analysis, which do not depend on
// noUnroll, are taken from prev if it is not nil (the fallback's second
// lowering: a quarter of Handwritten/allany20's); the lowerer is returned
// for that, also with errPositionCap: with maxPositions > 0 the lowering
// stops after the first rule frame at which its frames (with the
// repetition frames made so far) hold more positions than that, which
// happens exactly when the finished lowering would hold more.
func lowerGrammar(g *gbnf.Grammar, v *Vocab, noUnroll bool, prev *lowerer, maxPositions int) ([]*frameDef, *lowerer, error) {
	n := len(g.Rules)
	l := &lowerer{
		g:         g,
		v:         v,
		ruleFrame: make([]int32, n),
		inlined:   make([]*rx, n),
		inlining:  make([]bool, n),
		atoms:     make([]int8, n),
		repKeys:   map[string]int32{},
		noUnroll:  noUnroll,
	}
	for i := range g.Rules {
		l.ruleFrame[i] = -1
	}
	if prev != nil {
		l.bodies, l.nullable, l.reachable, l.recursive = prev.bodies, prev.nullable, prev.reachable, prev.recursive
		l.refs, l.heavy, l.inline = prev.refs, prev.heavy, prev.inline
		l.label, l.labelSize = prev.label, prev.labelSize
	} else {
		l.bodies = make([]*gbnf.Node, n)
		for i, r := range g.Rules {
			l.bodies[i] = removeDirectLeftRecursion(r)
		}
		l.analyze() // (it also removes tail recursion from the bodies)
	}
	if !l.reachable[g.Root] {
		return nil, nil, fmt.Errorf("root rule %d out of range", g.Root)
	}
	// Frames for the root and every rule that is not inlined; the root is
	// frame 0.
	l.labels = make([]*rxLabel, n)
	l.newRuleFrame(g.Root)
	for id := range g.Rules {
		if l.reachable[id] && !l.inline[id] && !l.label[id] && gbnf.RuleID(id) != g.Root {
			l.newRuleFrame(gbnf.RuleID(id))
		}
	}
	// Lower the rule frames (repetition frames are added as they are met).
	for fi := 0; fi < len(l.frames); fi++ {
		f := l.frames[fi]
		if f.repeat || f.body != nil {
			continue
		}
		id := f.rule
		l.frameSize = 0
		f.body = l.lowerScope(l.bodies[id])
		if l.err != nil {
			return nil, nil, l.err
		}
		if f.body.size() > MaxPositions {
			return nil, nil, &Error{Pos: f.pos, Msg: fmt.Sprintf("rule %s is too large: more than %d automaton positions after inlining (limit MaxPositions)", f.name, MaxPositions)}
		}
		l.positions += f.body.size()
		if maxPositions > 0 && l.positions > maxPositions {
			return nil, l, errPositionCap
		}
	}
	return l.frames, l, l.err
}

// leftRecursionMsg starts the error of a grammar with left recursion.
const leftRecursionMsg = "left recursion is not supported (only direct left recursion r ::= r α | β is rewritten): "

// ruleLeftRecursion names the cycle of rules behind the left recursion
// the automaton found: after the rewriting of direct left recursion, the
// left corners of the reachable rules (the automaton only sees the
// frames the cycle's rules were inlined into). It returns nil if it
// finds none.
func ruleLeftRecursion(g *gbnf.Grammar) error {
	h := &gbnf.Grammar{Root: g.Root, Rules: make([]*gbnf.Rule, len(g.Rules))}
	reachable := make([]bool, len(g.Rules))
	stack := []gbnf.RuleID{g.Root}
	reachable[g.Root] = true
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		walkRefs(g.Rules[id].Body, func(to gbnf.RuleID) {
			if !reachable[to] {
				reachable[to] = true
				stack = append(stack, to)
			}
		})
	}
	for i, r := range g.Rules {
		body := &gbnf.Node{Op: gbnf.OpEmpty}
		if reachable[i] {
			body = removeTailRecursion(r.ID, removeDirectLeftRecursion(r))
		}
		h.Rules[i] = &gbnf.Rule{ID: r.ID, Name: r.Name, Pos: r.Pos, Body: body}
	}
	var ge *gbnf.Error
	if !errors.As(h.LeftRecursion(), &ge) {
		return nil
	}
	return &Error{Pos: ge.Pos, Msg: leftRecursionMsg + strings.TrimPrefix(ge.Msg, "left recursion: ")}
}

func (l *lowerer) newRuleFrame(id gbnf.RuleID) {
	r := l.g.Rules[id]
	l.ruleFrame[id] = int32(len(l.frames))
	l.frames = append(l.frames, &frameDef{name: r.Name, rule: id, root: id == l.g.Root, pos: r.Pos})
}

func (l *lowerer) fail(pos gbnf.Pos, format string, args ...any) *rx {
	if l.err == nil {
		l.err = &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	return rxNoneNode
}

// removeDirectLeftRecursion rewrites r ::= r α1 | … | r αk | β1 | … | βj
// into r ::= (β1 | … | βj) (α1 | … | αk)*, which generates the same
// language. Indirect left recursion is left alone (and rejected later).
func removeDirectLeftRecursion(r *gbnf.Rule) *gbnf.Node {
	alts := []*gbnf.Node{r.Body}
	if r.Body.Op == gbnf.OpAlt {
		alts = r.Body.Subs
	}
	leftRec := func(a *gbnf.Node) bool {
		return a.Op == gbnf.OpRule && a.Rule == r.ID || a.Op == gbnf.OpSeq && a.Subs[0].Op == gbnf.OpRule && a.Subs[0].Rule == r.ID
	}
	if !slices.ContainsFunc(alts, leftRec) {
		return r.Body // (most rules: nothing to rewrite, nothing to allocate)
	}
	var rec, base []*gbnf.Node
	for _, a := range alts {
		switch {
		case !leftRec(a):
			base = append(base, a)
		case a.Op == gbnf.OpRule: // r alone
			rec = append(rec, &gbnf.Node{Op: gbnf.OpEmpty, Pos: a.Pos})
		default: // r α
			rest := a.Subs[1:]
			if len(rest) == 1 {
				rec = append(rec, rest[0])
			} else {
				rec = append(rec, &gbnf.Node{Op: gbnf.OpSeq, Pos: rest[0].Pos, Subs: rest})
			}
		}
	}
	if len(base) == 0 {
		return r.Body // (no alternative to start from: nothing to rewrite)
	}
	alt := func(ns []*gbnf.Node) *gbnf.Node {
		if len(ns) == 1 {
			return ns[0]
		}
		return &gbnf.Node{Op: gbnf.OpAlt, Pos: ns[0].Pos, Subs: ns}
	}
	return &gbnf.Node{Op: gbnf.OpSeq, Pos: r.Body.Pos, Subs: []*gbnf.Node{
		alt(base),
		{Op: gbnf.OpRepeat, Pos: rec[0].Pos, Min: 0, Max: gbnf.Unbounded, Subs: []*gbnf.Node{alt(rec)}},
	}}
}

// removeTailRecursion rewrites a rule whose references to itself are all
// in tail position — r ::= α r | β, also through trailing optional
// groups as in r ::= x (y r)? — into the loop r ::= α* β. Such rules
// (unary minus chains, right-recursive lists, factor ::= unary (^ factor)?)
// then need no stack frame of their own and can be inlined.
func removeTailRecursion(id gbnf.RuleID, body *gbnf.Node) *gbnf.Node {
	if !mentions(body, id) {
		return body
	}
	rec, base, ok := splitTail(body, id)
	if !ok || rec == nil || base == nil {
		return body
	}
	return &gbnf.Node{Op: gbnf.OpSeq, Pos: body.Pos, Subs: []*gbnf.Node{
		{Op: gbnf.OpRepeat, Pos: rec.Pos, Min: 0, Max: gbnf.Unbounded, Subs: []*gbnf.Node{rec}},
		base,
	}}
}

// mentions reports whether nd references rule id.
func mentions(nd *gbnf.Node, id gbnf.RuleID) bool {
	if nd.Op == gbnf.OpRule && nd.Rule == id {
		return true
	}
	for _, s := range nd.Subs {
		if mentions(s, id) {
			return true
		}
	}
	return false
}

// splitTail writes L(nd) as L(rec)·L(id) ∪ L(base), where id occurs in nd
// only in tail position (ok is false otherwise). rec or base is nil when
// that part is empty (the empty set, not the empty string).
func splitTail(nd *gbnf.Node, id gbnf.RuleID) (rec, base *gbnf.Node, ok bool) {
	empty := &gbnf.Node{Op: gbnf.OpEmpty, Pos: nd.Pos}
	if !mentions(nd, id) {
		return nil, nd, true
	}
	switch nd.Op {
	case gbnf.OpRule:
		return empty, nil, true
	case gbnf.OpAlt:
		var recs, bases []*gbnf.Node
		for _, a := range nd.Subs {
			r, b, ok := splitTail(a, id)
			if !ok {
				return nil, nil, false
			}
			if r != nil {
				recs = append(recs, r)
			}
			if b != nil {
				bases = append(bases, b)
			}
		}
		return altOf(recs, nd.Pos), altOf(bases, nd.Pos), true
	case gbnf.OpSeq:
		last := len(nd.Subs) - 1
		for _, s := range nd.Subs[:last] {
			if mentions(s, id) {
				return nil, nil, false
			}
		}
		r, b, ok := splitTail(nd.Subs[last], id)
		if !ok {
			return nil, nil, false
		}
		prefix := nd.Subs[:last]
		seqWith := func(x *gbnf.Node) *gbnf.Node {
			if x == nil {
				return nil
			}
			subs := append(append([]*gbnf.Node(nil), prefix...), x)
			return &gbnf.Node{Op: gbnf.OpSeq, Pos: nd.Pos, Subs: subs}
		}
		return seqWith(r), seqWith(b), true
	case gbnf.OpRepeat:
		if nd.Min == 0 && nd.Max == 1 {
			r, b, ok := splitTail(nd.Subs[0], id)
			if !ok {
				return nil, nil, false
			}
			if b == nil {
				return r, empty, true
			}
			return r, altOf([]*gbnf.Node{b, empty}, nd.Pos), true
		}
	}
	return nil, nil, false
}

func altOf(ns []*gbnf.Node, pos gbnf.Pos) *gbnf.Node {
	switch len(ns) {
	case 0:
		return nil
	case 1:
		return ns[0]
	}
	return &gbnf.Node{Op: gbnf.OpAlt, Pos: pos, Subs: ns}
}

// analyze removes tail recursion from the bodies, and computes
// reachability, nullability, recursion, use counts and the inlining
// decision of every rule.
func (l *lowerer) analyze() {
	n := len(l.g.Rules)
	// Reference graph, and each rule's size with references counting 1
	// (for the inlining budget below): one pass over the bodies. A body
	// that refers to its own rule has its tail recursion removed
	// (removeTailRecursion) and is measured again: found by this pass
	// rather than by a pass of its own over every body (that one was
	// 2-3% of the automaton's construction).
	edges := make([][]int32, n)
	own := make([]int, n)
	plain := make([]bool, n)
	for id := range n {
		own[id], plain[id] = refSize(l.bodies[id], &edges[id])
		if !slices.Contains(edges[id], int32(id)) {
			continue
		}
		if b := removeTailRecursion(gbnf.RuleID(id), l.bodies[id]); b != l.bodies[id] {
			l.bodies[id] = b
			edges[id] = edges[id][:0]
			own[id], plain[id] = refSize(b, &edges[id])
		}
	}
	// Nullability: one pass over the bodies, then only the rules that
	// refer to a rule found nullable are looked at again.
	l.nullable = make([]bool, n)
	var work []int32
	for id := range n {
		if l.nodeNullable(l.bodies[id]) {
			l.nullable[id] = true
			work = append(work, int32(id))
		}
	}
	if len(work) > 0 {
		callers := make([][]int32, n)
		for id := range n {
			for _, w := range edges[id] {
				if w >= 0 && int(w) < n {
					callers[w] = append(callers[w], int32(id))
				}
			}
		}
		for len(work) > 0 {
			w := work[len(work)-1]
			work = work[:len(work)-1]
			for _, id := range callers[w] {
				if !l.nullable[id] && l.nodeNullable(l.bodies[id]) {
					l.nullable[id] = true
					work = append(work, id)
				}
			}
		}
	}

	// Reachability and use counts.
	l.refs = make([]int, n)
	l.reachable = make([]bool, n)
	stack := []int32{int32(l.g.Root)}
	l.reachable[l.g.Root] = true
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range edges[u] {
			if !l.reachable[w] {
				l.reachable[w] = true
				stack = append(stack, w)
			}
		}
	}
	for id := range n {
		if l.reachable[id] {
			for _, w := range edges[id] {
				l.refs[w]++
			}
		}
	}

	// Recursive rules must be frames, but not all of them: enough that
	// every cycle of references passes through a frame (a feedback vertex
	// set). The others are inlined into those frames, which keeps more of
	// each token's path inside one frame (context-independent masks) and
	// the stacks short. l.recursive marks the chosen frames.
	l.recursive = make([]bool, n)
	removed := make([]bool, n)
	preds := make([][]int32, n) // reachable callers, once per reference
	for v := range n {
		if l.reachable[v] {
			for _, w := range edges[v] {
				preds[w] = append(preds[w], int32(v))
			}
		}
	}
	inComp := make([]bool, n)
	var sc sccScratch
	comps := l.markRightLinear(edges, own, &sc, inComp)
	if !noTailGroups {
		l.markTailGroups(edges, own, plain, comps)
	}
	for id := range n {
		removed[id] = l.label[id] // their references to each other are gotos
	}
	// Each round removes one member of every cyclic component and looks
	// for cycles again, only inside the components of the round before
	// (removing rules only splits them): a component that loses one
	// rule per round (274 rounds in Handwritten/allany1) costs its own
	// size per round, not the whole grammar's. Within a round, a
	// component's choice depends only on the rules removed before the
	// round (the components that reach it come later in Tarjan's order),
	// so the order in which they are found does not matter.
	var active []int32
	for id := range n {
		if l.reachable[id] && !l.label[id] {
			active = append(active, int32(id))
		}
	}
	// (The first round's components are the cyclic ones markRightLinear
	// found and did not make labels: labels are whole components.)
	for round := 0; ; round++ {
		if round > 0 {
			comps = sc.sccs(edges, removed, active)
		}
		if len(comps) == 0 {
			break
		}
		active = active[:0]
		for _, comp := range comps {
			// Pick the member that breaks the most cycles: the largest
			// product of in- and out-degree inside the component; ties go
			// to rules used from outside the component, then to the
			// lowest id.
			for _, u := range comp {
				inComp[u] = true
			}
			best, bestScore, bestEntry := int32(-1), -1, false
			for _, u := range comp {
				in, out, entry := 0, 0, false
				for _, w := range edges[u] {
					if inComp[w] {
						out++
					}
				}
				for _, v := range preds[u] {
					if removed[v] {
						continue
					}
					if inComp[v] {
						in++
					} else {
						entry = true
					}
				}
				score := in * out
				if score > bestScore || (score == bestScore && entry && !bestEntry) {
					best, bestScore, bestEntry = u, score, entry
				}
			}
			for _, u := range comp {
				inComp[u] = false
			}
			l.recursive[best] = true
			removed[best] = true
			for _, u := range comp {
				if u != best {
					active = append(active, u)
				}
			}
		}
	}

	// Inlining: decide callees first (a post-order of the non-recursive
	// part of the reference graph), estimating each rule's size with its
	// inlined callees. A rule used in several places is a candidate if
	// it is small or an atom, or within the budget for copies (see
	// inlineDupBudget): sizes include the inlined callees, so copies grow
	// linearly with the references, never exponentially (a counted
	// object's rules per position and count each refer to two others).
	l.inline = make([]bool, n)
	l.heavy = make([]bool, n)
	size := make([]int, n)
	dup := 0                  // positions the copies of shared rules add
	state := make([]uint8, n) // 0 new, 1 visiting, 2 done
	var decide func(id int32)
	decide = func(id int32) {
		if state[id] != 0 {
			return
		}
		state[id] = 1
		for _, w := range edges[id] {
			if !l.recursive[w] {
				decide(w)
			}
		}
		state[id] = 2
		size[id], l.heavy[id] = l.estimate(l.bodies[id], size)
		few := size[id]*l.refs[id] <= inlineDupBudget && dup+(l.refs[id]-1)*size[id] <= inlineDupBudget
		shared := !l.heavy[id] && (size[id] <= inlineSmallLeaves || size[id] <= inlineAtomLeaves && l.atom(gbnf.RuleID(id)) || few)
		l.inline[id] = !l.recursive[id] && !l.label[id] && gbnf.RuleID(id) != l.g.Root && (l.refs[id] <= 1 || shared)
		if l.inline[id] && l.refs[id] > 1 && size[id] > inlineSmallLeaves {
			dup += (l.refs[id] - 1) * size[id]
		}
	}
	for id := range n {
		if l.reachable[id] {
			decide(int32(id))
		}
	}
}

// labelMaxLeaves bounds the positions of a right-linear set lowered as
// labels: each region that goes to it copies the part it reaches.
// Larger sets stay frames that call each other. At 2^13 (stops 24-34) a
// multipleOf 770 (770 rules, about 15,000 positions) stayed 770 frames,
// each remainder's state walking the digits through them on first use
// (Handwritten/allany1, 2, 4, allone1: 8,052 units, 104-131 µs); as
// labels those four compile faster (automaton 6-13 ms against 11-30)
// and precompute everything (0.3-4 ms against 13-16), and no other
// grammar of the corpus changes.
const labelMaxLeaves = 1 << 15

// labelWideMaxLeaves bounds the positions of a right-linear set with
// wide loops (see wideLoop) lowered as labels.
const labelWideMaxLeaves = 128

// markRightLinear sets l.label for the rules of the reachable cyclic
// components of the reference graph whose references to each other are
// all in tail position (see lowerer.label), except the root's. It
// returns the other cyclic components.
func (l *lowerer) markRightLinear(edges [][]int32, own []int, sc *sccScratch, inComp []bool) (rest [][]int32) {
	n := len(edges)
	l.label = make([]bool, n)
	l.labelSize = make([]int, n)
	var verts []int32
	for id := range n {
		if l.reachable[id] {
			verts = append(verts, int32(id))
		}
	}
	var tails []int32
	for _, comp := range sc.sccs(edges, make([]bool, n), verts) {
		for _, u := range comp {
			inComp[u] = true
		}
		ok, size, wide := true, 0, false
		for _, u := range comp {
			if gbnf.RuleID(u) == l.g.Root {
				ok = false
				break
			}
			size += own[u]
			inner := 0
			for _, w := range edges[u] {
				if inComp[w] {
					inner++
				}
			}
			tails = tailRefs(l.bodies[u], tails[:0])
			for _, w := range tails {
				if inComp[w] {
					inner--
				}
			}
			if inner != 0 {
				ok = false
				break
			}
			wide = wide || l.wideLoop(l.bodies[u])
		}
		for _, u := range comp {
			inComp[u] = false
		}
		if !ok || size > labelMaxLeaves || wide && size > labelWideMaxLeaves {
			rest = append(rest, comp)
			continue
		}
		for _, u := range comp {
			l.label[u] = true
			l.labelSize[u] = size
		}
	}
	return rest
}

// markTailGroups sets l.label for groups of acyclic plain rules (see
// refSize) that refer to each other only in tail position, elsewhere
// only to small atoms (a JSON string's escapes) and other rules only in
// tail position (the frames of a pattern's loops), and that the rest of
// the grammar enters from one rule: the rules a JSON Schema pattern's
// automaton is written as, one per state, each continuing into the next.
// With a length bound there is a rule per state and character count
// (Github_medium/o17563's ".+[@].+[.]___" of 10 to 200 characters is 964
// rules): as frames, each character of the string was a call, so the
// stack grew by a frame a character and the mask of each new depth
// walked the cross points of every frame below it on first use (770,000
// units a step; 390,000 as labels, one frame whose states are the
// pattern's); and a pattern's acyclic rules copied into the frames of
// its cycles made Handwritten/string3 109 frames and 58,737 states (1
// frame and 1,127 states as labels, compiled in 2.5 ms instead of 60).
// cyclic are the cyclic components that are not labels.
func (l *lowerer) markTailGroups(edges [][]int32, own []int, plain []bool, cyclic [][]int32) {
	n := len(edges)
	inC := make([]bool, n) // candidates
	for u := range n {
		inC[u] = plain[u] && l.reachable[u] && !l.label[u] && gbnf.RuleID(u) != l.g.Root
	}
	for _, c := range cyclic {
		for _, u := range c {
			inC[u] = false
		}
	}
	leaf := func(w int32) bool { return own[w] <= inlineAtomLeaves && l.atom(gbnf.RuleID(w)) }
	// The references of each candidate other than in tail position, and
	// the candidates that refer to each candidate so, and at all (once
	// per reference).
	nonTail := make([][]int32, n)
	preds := make([][]int32, n)
	refBy := make([][]int32, n) // the candidates that refer to each, in any position
	cnt := make([]int32, n)
	var tails []int32
	for u := range n {
		if !inC[u] {
			continue
		}
		tails = tailRefs(l.bodies[u], tails[:0])
		for _, w := range tails {
			cnt[w]++
		}
		for _, w := range edges[u] {
			if inC[w] {
				refBy[w] = append(refBy[w], int32(u))
			}
			if cnt[w] > 0 {
				cnt[w]--
				continue
			}
			nonTail[u] = append(nonTail[u], w)
			if inC[w] {
				preds[w] = append(preds[w], int32(u))
			}
		}
		for _, w := range tails {
			cnt[w] = 0
		}
	}
	// A candidate that refers to a rule other than a candidate or a leaf
	// other than in tail position (a call in tail position is fine: into
	// the frames of the pattern's loops) is out, and so, transitively, are
	// the candidates that refer to it so.
	var queue []int32
	remove := func(u int32) {
		if inC[u] {
			inC[u] = false
			queue = append(queue, u)
		}
	}
	drain := func() {
		for len(queue) > 0 {
			w := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			if leaf(w) {
				continue
			}
			for _, v := range preds[w] {
				remove(v)
			}
		}
	}
	for u := range n {
		if !inC[u] {
			continue
		}
		for _, w := range nonTail[u] {
			if !inC[w] && !leaf(w) {
				remove(int32(u))
				break
			}
		}
	}
	drain()
	// Candidates in components too small for a group are out (leaving
	// takes along referrers of the same component only).
	comp := newUnionFind(n)
	groups := func() {
		comp.reset()
		for u := range n {
			if inC[u] {
				for _, w := range edges[u] {
					if inC[w] {
						comp.union(int32(u), w)
					}
				}
			}
		}
		clear(comp.count)
		for u := range n {
			if inC[u] {
				comp.count[comp.find(int32(u))]++
			}
		}
		for u := range n {
			if inC[u] && comp.count[comp.find(int32(u))] < minTailGroup {
				inC[u] = false
			}
		}
	}
	groups()
	if !slices.Contains(inC, true) {
		return
	}
	// Inside a group references are tail references. Where a candidate
	// refers to another elsewhere, the referrer leaves if no candidate
	// refers to it (it is the group's entry: a string's quotes around its
	// pattern's rules), else the rule referred to leaves (a leaf that
	// many states use, such as a JSON string's escapes).
	top := func(u int32) bool {
		for _, v := range refBy[u] {
			if inC[v] {
				return false
			}
		}
		return true
	}
	for u := range n {
		for _, w := range nonTail[u] {
			if !inC[u] {
				break
			}
			if !inC[w] {
				continue
			}
			if top(int32(u)) {
				remove(int32(u))
			} else {
				remove(w)
			}
			drain()
		}
	}
	groups()
	// Each group must be entered from one rule outside it; each scope of
	// that rule that goes to the group copies it (see lowerScope), and so
	// does each place that inlines the rule.
	entry := make([]int32, n) // per group: the rule entering it (-1 none yet, -2 several)
	size := make([]int, n)
	for u := range n {
		entry[u] = -1
	}
	for u := range n {
		if inC[u] {
			r := comp.find(int32(u))
			size[r] = min(size[r]+own[u], MaxPositions)
			continue
		}
		if !l.reachable[u] {
			continue
		}
		for _, w := range edges[u] {
			if inC[w] {
				r := comp.find(w)
				if entry[r] == -1 {
					entry[r] = int32(u)
				} else if entry[r] != int32(u) {
					entry[r] = -2
				}
			}
		}
	}
	verdict := make([]uint8, n) // per group: 1 labels, 2 frames
	for u := range n {
		if !inC[u] {
			continue
		}
		r := comp.find(int32(u))
		if verdict[r] == 0 {
			verdict[r] = 2
			if e := entry[r]; e >= 0 {
				copies := l.groupScopes(l.bodies[e], inC) * max(l.refs[e], 1)
				if copies*size[r] <= tailGroupMax {
					verdict[r] = 1
				}
			}
		}
		if verdict[r] == 1 {
			l.label[u] = true
			l.labelSize[u] = size[r]
		}
	}
}

// unionFind is a disjoint-set forest over 0..n-1, with a count per set
// for its user.
type unionFind struct {
	parent []int32
	count  []int32
}

func newUnionFind(n int) *unionFind {
	return &unionFind{parent: make([]int32, n), count: make([]int32, n)}
}

func (f *unionFind) reset() {
	for i := range f.parent {
		f.parent[i] = int32(i)
	}
}

func (f *unionFind) find(x int32) int32 {
	for f.parent[x] != x {
		f.parent[x] = f.parent[f.parent[x]]
		x = f.parent[x]
	}
	return x
}

func (f *unionFind) union(x, y int32) { f.parent[f.find(x)] = f.find(y) }

// noTailGroups turns markTailGroups off (tests compare with and without).
var noTailGroups = false

// minTailGroup is the fewest rules a group of markTailGroups needs:
// smaller ones gain little from being one frame.
const minTailGroup = 8

// tailGroupMax bounds the positions that the copies of a group of
// markTailGroups add up to (Github_medium/o17563's is 48,305).
const tailGroupMax = 1 << 16

// groupScopes returns how many scopes (see lowerScope) of nd, itself one,
// refer to a rule in group.
func (l *lowerer) groupScopes(nd *gbnf.Node, group []bool) int {
	n, here := l.scopesIn(nd, group)
	if here {
		n++
	}
	return n
}

// scopesIn returns the scopes inside nd that refer to group, and whether
// nd refers to it outside them.
func (l *lowerer) scopesIn(nd *gbnf.Node, group []bool) (n int, here bool) {
	switch nd.Op {
	case gbnf.OpRule:
		return 0, group[nd.Rule]
	case gbnf.OpSeq:
		last := len(nd.Subs) - 1
		for _, s := range nd.Subs[:last] {
			n += l.groupScopes(s, group)
		}
		m, h := l.scopesIn(nd.Subs[last], group)
		return n + m, h
	case gbnf.OpAlt:
		for _, s := range nd.Subs {
			m, h := l.scopesIn(s, group)
			n += m
			here = here || h
		}
		return n, here
	case gbnf.OpRepeat:
		if nd.Max == 1 {
			return l.scopesIn(nd.Subs[0], group)
		}
		copies := 1
		if nd.Max != gbnf.Unbounded {
			copies = nd.Max // (unrolled: a copy of the body each)
		}
		return copies * l.groupScopes(nd.Subs[0], group), false
	}
	return 0, false
}

// wideLoop reports whether nd repeats, more than once, something that
// starts with a wide set of bytes. Larger sets of rules with such loops
// (a pattern's DFA with [^"]* between its states) are left to frames
// (labelWideMaxLeaves): as labels they made larger frames, slower to
// minimize (Handwritten/allany23 2.5 times), and their walks no cheaper.
func (l *lowerer) wideLoop(nd *gbnf.Node) bool {
	if nd.Op == gbnf.OpRepeat && nd.Max != 1 && l.classWidth(nd.Subs[0], 0) > heavyWidth {
		return true
	}
	for _, s := range nd.Subs {
		if l.wideLoop(s) {
			return true
		}
	}
	return false
}

// tailRefs appends the rules nd refers to in tail position: nothing of
// nd follows them.
func tailRefs(nd *gbnf.Node, out []int32) []int32 {
	switch nd.Op {
	case gbnf.OpRule:
		return append(out, int32(nd.Rule))
	case gbnf.OpAlt:
		for _, s := range nd.Subs {
			out = tailRefs(s, out)
		}
	case gbnf.OpSeq:
		if len(nd.Subs) > 0 {
			out = tailRefs(nd.Subs[len(nd.Subs)-1], out)
		}
	case gbnf.OpRepeat:
		if nd.Min == 0 && nd.Max == 1 {
			out = tailRefs(nd.Subs[0], out)
		}
	}
	return out
}

// atom reports whether rule id matches one short piece of text of a
// fixed shape: its body has no token reference, no repetition but a few
// copies that are always unrolled (hex{4}), and refers only to atoms (not
// recursive, so its strings are bounded).
func (l *lowerer) atom(id gbnf.RuleID) bool {
	switch l.atoms[id] {
	case 1:
		return true
	case 2, 3:
		return false
	}
	l.atoms[id] = 3
	ok := l.atomNode(l.bodies[id])
	l.atoms[id] = 2
	if ok {
		l.atoms[id] = 1
	}
	return ok
}

func (l *lowerer) atomNode(nd *gbnf.Node) bool {
	switch nd.Op {
	case gbnf.OpEmpty, gbnf.OpLiteral, gbnf.OpClass:
		return true
	case gbnf.OpSeq, gbnf.OpAlt:
		for _, sub := range nd.Subs {
			if !l.atomNode(sub) {
				return false
			}
		}
		return true
	case gbnf.OpRule:
		return !l.recursive[nd.Rule] && l.atom(nd.Rule)
	case gbnf.OpRepeat:
		// A few copies, always unrolled (hex{4} in a JSON escape).
		return !l.noUnroll && nd.Max != gbnf.Unbounded && nd.Max <= unrollAlways && l.atomNode(nd.Subs[0])
	}
	return false
}

// estimate returns the number of positions of a node with inlined rules
// expanded (frames count 1), and whether it loops over a wide class.
func (l *lowerer) estimate(nd *gbnf.Node, size []int) (int, bool) {
	switch nd.Op {
	case gbnf.OpLiteral:
		n := 0
		for _, r := range nd.Runes {
			n += utf8.RuneLen(max(r, 0))
		}
		return n, false
	case gbnf.OpClass:
		return 4, false
	case gbnf.OpRule:
		if l.label[nd.Rule] {
			return l.labelSize[nd.Rule], false
		}
		if l.inline[nd.Rule] {
			return size[nd.Rule], l.heavy[nd.Rule]
		}
		return 1, false
	case gbnf.OpToken:
		return 1, false
	case gbnf.OpRepeat:
		s, h := l.estimate(nd.Subs[0], size)
		if nd.Max == gbnf.Unbounded || nd.Max > unrollNarrowMax {
			if l.classWidth(nd.Subs[0], 0) > heavyWidth {
				h = true
			}
			return s, h
		}
		return min(s*max(nd.Max, 1), MaxPositions), h
	}
	total, heavy := 0, false
	for _, s := range nd.Subs {
		n, h := l.estimate(s, size)
		total = min(total+n, MaxPositions)
		heavy = heavy || h
	}
	return total, heavy
}

// refSize appends the rules nd refers to (as walkRefs finds them) to
// *refs and returns estimate's size of nd with no rule inlined
// (references count 1), in one pass, and whether nd is plain: made of
// characters and references only, with no repetition but an optional
// part and no token reference (see markTailGroups).
func refSize(nd *gbnf.Node, refs *[]int32) (size int, plain bool) {
	sum := false
	plain = true
	switch nd.Op {
	case gbnf.OpLiteral:
		for _, r := range nd.Runes {
			size += utf8.RuneLen(max(r, 0))
		}
	case gbnf.OpClass:
		size = 4
	case gbnf.OpRule:
		*refs = append(*refs, int32(nd.Rule))
		size = 1
	case gbnf.OpToken:
		size = 1
		plain = false
	case gbnf.OpRepeat:
		plain = nd.Max == 1
	default:
		sum = true
	}
	for i, s := range nd.Subs {
		n, p := refSize(s, refs)
		plain = plain && p
		switch {
		case sum:
			size = min(size+n, MaxPositions)
		case nd.Op == gbnf.OpRepeat && i == 0:
			size = n
		}
	}
	if nd.Op == gbnf.OpRepeat && nd.Max != gbnf.Unbounded && nd.Max <= unrollNarrowMax {
		size = min(size*max(nd.Max, 1), MaxPositions)
	}
	return size, plain
}

// classWidth is a cheap upper estimate of the number of first bytes of a
// repeated node: classes count their ASCII members (or 256 if negated or
// non-ASCII), references count their rule's body, anything else counts 1
// per alternative.
func (l *lowerer) classWidth(nd *gbnf.Node, depth int) int {
	if depth > 16 {
		return 256
	}
	switch nd.Op {
	case gbnf.OpClass:
		if nd.Negated {
			return 256
		}
		w := 0
		for i := 0; i < len(nd.Ranges); i += 2 {
			lo, hi := nd.Ranges[i], nd.Ranges[i+1]
			if hi >= 0x80 {
				return 256
			}
			w += int(hi - lo + 1)
		}
		return w
	case gbnf.OpAlt:
		w := 0
		for _, s := range nd.Subs {
			w += l.classWidth(s, depth+1)
		}
		return w
	case gbnf.OpSeq, gbnf.OpRepeat:
		return l.classWidth(nd.Subs[0], depth+1)
	case gbnf.OpRule:
		return l.classWidth(l.bodies[nd.Rule], depth+1)
	}
	return 1
}

func walkRefs(nd *gbnf.Node, f func(gbnf.RuleID)) {
	if nd.Op == gbnf.OpRule {
		f(nd.Rule)
	}
	for _, s := range nd.Subs {
		walkRefs(s, f)
	}
}

func (l *lowerer) nodeNullable(nd *gbnf.Node) bool {
	switch nd.Op {
	case gbnf.OpEmpty:
		return true
	case gbnf.OpLiteral, gbnf.OpClass, gbnf.OpToken:
		return false
	case gbnf.OpSeq:
		for _, s := range nd.Subs {
			if !l.nodeNullable(s) {
				return false
			}
		}
		return true
	case gbnf.OpAlt:
		for _, s := range nd.Subs {
			if l.nodeNullable(s) {
				return true
			}
		}
		return false
	case gbnf.OpRepeat:
		return nd.Min == 0 || l.nodeNullable(nd.Subs[0])
	case gbnf.OpRule:
		return l.nullable[nd.Rule]
	}
	return false
}

// lowerNode lowers one IR node inside a frame body.
func (l *lowerer) lowerNode(nd *gbnf.Node) *rx {
	if l.err != nil {
		return rxNoneNode
	}
	switch nd.Op {
	case gbnf.OpEmpty:
		return rxEmptyNode
	case gbnf.OpLiteral:
		var buf [utf8.UTFMax]byte
		base := len(l.stack)
		for _, r := range nd.Runes {
			if !utf8.ValidRune(r) {
				l.stack = l.stack[:base]
				return l.fail(nd.Pos, "literal holds code point U+%04X, which is not a Unicode scalar value", r)
			}
			k := utf8.EncodeRune(buf[:], r)
			for _, c := range buf[:k] {
				l.stack = append(l.stack, &byteNodes[c])
			}
		}
		return l.popSeq(base)
	case gbnf.OpClass:
		return l.classRx(nd.Ranges, nd.Negated)
	case gbnf.OpSeq:
		base := len(l.stack)
		for i := 0; i < len(nd.Subs); i++ {
			s := nd.Subs[i]
			// C1{m,n} C2 with C2 ⊆ C1 (e.g. a hostname label
			// [-0-9A-Za-z]{0,61} [0-9A-Za-z]): one counting frame whose
			// last iteration must be in C2, instead of a frame that could
			// end before every character the next class also takes.
			var x *rx // (lowered before the append: it uses the stack too)
			switch {
			case s.Op == gbnf.OpRepeat && s.Subs[0].Op == gbnf.OpClass && i+1 < len(nd.Subs) && nd.Subs[i+1].Op == gbnf.OpClass &&
				classSubset(nd.Subs[i+1], s.Subs[0]):
				x = l.lowerRepeat(s, nd.Subs[i+1])
				i++
			case i < len(nd.Subs)-1:
				// What follows s is not what follows the sequence: s is
				// a scope of its own for the gotos in it.
				x = l.lowerScope(s)
			default:
				x = l.lowerNode(s)
			}
			l.stack = append(l.stack, x)
		}
		return l.popSeq(base)
	case gbnf.OpAlt:
		base := len(l.stack)
		for _, s := range nd.Subs {
			x := l.lowerNode(s)
			l.stack = append(l.stack, x)
		}
		r := l.ar.alt(l.stack[base:])
		l.stack = l.stack[:base]
		return r
	case gbnf.OpRepeat:
		return l.lowerRepeat(nd, nil)
	case gbnf.OpRule:
		id := nd.Rule
		if int(id) < 0 || int(id) >= len(l.g.Rules) {
			return l.fail(nd.Pos, "reference to unknown rule %d", id)
		}
		if l.label[id] {
			return l.gotoLabel(id)
		}
		if l.inline[id] {
			if l.inlined[id] == nil {
				if l.inlining[id] {
					return l.fail(nd.Pos, "internal error: rule %s inlined recursively", l.g.Rules[id].Name)
				}
				l.inlining[id] = true
				l.inlined[id] = l.lowerScope(l.bodies[id])
				l.inlining[id] = false
			}
			r := l.inlined[id]
			// A rule used once, or small, is always inlined; a larger
			// shared one (an atom, or within the grammar's inlineDupBudget)
			// only while the frame stays within frameInlineBudget, or, an
			// atom, inside a loop. Otherwise it is called as a frame.
			if l.refs[id] <= 1 || r.size() <= inlineSmallLeaves || l.frameSize+r.size() <= frameInlineBudget ||
				l.loopDepth > 0 && r.size() <= inlineAtomLeaves && l.atom(id) {
				if l.refs[id] > 1 && r.size() > inlineSmallLeaves {
					l.frameSize += r.size()
				}
				return r
			}
			if l.ruleFrame[id] < 0 {
				l.newRuleFrame(id)
			}
		}
		call := l.ar.node(rx{op: rxCall, frame: l.ruleFrame[id], leaves: 1})
		if l.nullable[id] {
			return l.ar.opt(call)
		}
		return call
	case gbnf.OpToken:
		tok := nd.Token
		if nd.TokenText != "" {
			// As in llama.cpp, <|text|> names the token whose text is
			// "<|text|>" (brackets included).
			id, ok := l.v.Lookup("<|" + nd.TokenText + "|>")
			if !ok {
				return l.fail(nd.Pos, "token <|%s|> is not in the vocabulary", nd.TokenText)
			}
			tok = id
		}
		if tok < 0 || int(tok) >= l.v.Size() {
			return l.fail(nd.Pos, "token id %d out of range: the vocabulary has %d tokens", tok, l.v.Size())
		}
		if l.v.IsEOG(tok) {
			return l.fail(nd.Pos, "token %d is an end-of-generation token; the end of the grammar allows it instead of a token reference", tok)
		}
		if l.v.Kind(tok) == TokenUnused && !nd.Negated {
			return l.fail(nd.Pos, "token %d is unused in this vocabulary and can never be produced", tok)
		}
		return l.ar.node(rx{op: rxTok, tok: tok, neg: nd.Negated, leaves: 1})
	}
	return l.fail(nd.Pos, "internal error: unknown node kind %d", nd.Op)
}

// lowerScope lowers nd as a scope: a node whose gotos (see rxGoto) end
// with what follows nd, so that the labels they reach, and the labels
// those reach, are copied once into a region around nd. The nodes that
// are scopes are those that what follows them does not follow their
// parent: a sequence's members but the last, the body of a repetition of
// more than one copy, a frame's body, an inlined rule's body.
func (l *lowerer) lowerScope(nd *gbnf.Node) *rx {
	outer := l.scopeGotos
	l.scopeGotos = nil
	r := l.lowerNode(nd)
	if gotos := l.scopeGotos; len(gotos) > 0 && r.op != rxNone {
		r = l.ar.node(rx{op: rxRegion, subs: append(l.ar.list(1), r), leaves: min(r.leaves+l.closureSize(gotos), MaxPositions+1)})
	}
	l.scopeGotos = outer
	return r
}

// gotoLabel returns the goto to label rule id, lowering the label's body
// the first time.
func (l *lowerer) gotoLabel(id gbnf.RuleID) *rx {
	lb := l.labels[id]
	if lb == nil {
		lb = &rxLabel{rule: int32(id), name: l.g.Rules[id].Name, nullable: l.nullable[id]}
		lb.node = l.ar.node(rx{op: rxGoto, lbl: lb})
		l.labels[id] = lb
		// The body's gotos belong to whichever region copies the label.
		outer := l.scopeGotos
		l.scopeGotos = nil
		lb.body = l.lowerNode(l.bodies[id])
		lb.gotos = l.scopeGotos
		l.scopeGotos = outer
	}
	if !slices.Contains(l.scopeGotos, int32(id)) {
		l.scopeGotos = append(l.scopeGotos, int32(id))
	}
	return lb.node
}

// closureSize returns the positions of the labels reachable from gotos.
func (l *lowerer) closureSize(gotos []int32) int {
	seen := map[int32]bool{}
	stack := append([]int32(nil), gotos...)
	n := 0
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		lb := l.labels[id]
		if lb.body != nil {
			n += lb.body.leaves
		}
		stack = append(stack, lb.gotos...)
	}
	return n
}

// maxFoldedCount bounds the counts of a repetition folded by
// foldRepeat: counters are int32, and unboundedCount stands for "no
// bound".
const maxFoldedCount = int(unboundedCount) - 1

// foldRepeat rewrites a repetition of a repetition, (X{a,b}){c,d}, as
// the one repetition X{c·a, d·b} when the two match the same strings:
// when the iteration counts they allow, the union over k in c..d of
// k·a..k·b, form one interval. An alternation of repetitions of the same
// X whose bounds form one interval (X{1000} | X{999}) counts as one
// repetition. Nested counted repetitions are the most ambiguous
// grammars there are — (("a"|"b"){0,50}){0,50}{0,50} splits a string of
// 100 bytes into iterations in thousands of ways, which the matcher
// would track as separate counter configurations at every byte — and
// this rewriting turns the common ones into a single counter (here
// ("a"|"b"){0,125000}), exactly.
func (l *lowerer) foldRepeat(nd *gbnf.Node) *gbnf.Node {
	for {
		x, a, b, ok := l.asRepeat(nd.Subs[0], 0)
		if !ok {
			return nd
		}
		if l.nodeNullable(x) {
			a = 0 // empty iterations make up any minimum
		}
		lo, hi, ok := foldBounds(a, b, nd.Min, nd.Max)
		if !ok {
			return nd
		}
		nd = &gbnf.Node{Op: gbnf.OpRepeat, Pos: nd.Pos, Min: lo, Max: hi, Subs: []*gbnf.Node{x}}
	}
}

// asRepeat reports whether nd matches exactly X{a,b} for some X: a
// repetition, an alternation of repetitions of equal bodies (or of the
// body itself, X = X{1,1}) whose bounds join into one interval, or a
// reference to an inlined rule that is one.
func (l *lowerer) asRepeat(nd *gbnf.Node, depth int) (x *gbnf.Node, a, b int, ok bool) {
	if depth > 16 {
		return nil, 0, 0, false
	}
	switch nd.Op {
	case gbnf.OpRepeat:
		if nd.Max == 0 {
			return nil, 0, 0, false
		}
		return nd.Subs[0], nd.Min, nd.Max, true
	case gbnf.OpRule:
		if int(nd.Rule) >= 0 && int(nd.Rule) < len(l.bodies) && l.inline != nil && l.inline[nd.Rule] {
			return l.asRepeat(l.bodies[nd.Rule], depth+1)
		}
	case gbnf.OpAlt:
		type iv struct{ lo, hi int }
		var ivs []iv
		for _, s := range nd.Subs {
			if s.Op == gbnf.OpEmpty {
				ivs = append(ivs, iv{0, 0})
				continue
			}
			sx, sa, sb := s, 1, 1
			if s.Op == gbnf.OpRepeat && s.Max != 0 {
				sx, sa, sb = s.Subs[0], s.Min, s.Max
			}
			if x == nil {
				x = sx
			} else if !gbnf.NodeEqual(x, sx) {
				return nil, 0, 0, false
			}
			if sb == gbnf.Unbounded {
				sb = maxFoldedCount + 1
			}
			ivs = append(ivs, iv{sa, sb})
		}
		if x == nil {
			return nil, 0, 0, false
		}
		slices.SortFunc(ivs, func(p, q iv) int { return p.lo - q.lo })
		a, b = ivs[0].lo, ivs[0].hi
		for _, v := range ivs[1:] {
			if v.lo > b+1 {
				return nil, 0, 0, false
			}
			b = max(b, v.hi)
		}
		if b > maxFoldedCount {
			b = gbnf.Unbounded
		}
		return x, a, b, true
	}
	return nil, 0, 0, false
}

// foldBounds returns the bounds of (X{a,b}){c,d} as one repetition of X,
// if the counts it allows form the interval c·a .. d·b (Unbounded bounds
// included) within maxFoldedCount.
func foldBounds(a, b, c, d int) (lo, hi int, ok bool) {
	const inf = gbnf.Unbounded
	if b == 0 || d == 0 {
		return 0, 0, false
	}
	// Consecutive k, k+1 in c..d give adjacent or overlapping intervals
	// iff (k+1)·a ≤ k·b + 1; the slack grows with k, so k = c decides.
	// An unbounded b makes every interval unbounded but the one of k = 0,
	// which is {0}: then a ≤ 1 is needed.
	switch {
	case c == d:
	case b == inf:
		if c == 0 && a > 1 {
			return 0, 0, false
		}
	case (c+1)*a > c*b+1:
		return 0, 0, false
	}
	if c*a > maxFoldedCount {
		return 0, 0, false
	}
	lo = c * a
	switch {
	case b == inf || d == inf:
		hi = inf
	case d*b > maxFoldedCount:
		return 0, 0, false
	default:
		hi = d * b
	}
	return lo, hi, true
}

// lowerRepeat lowers X{m,n}, followed by the class last if last is not
// nil (then X is a class that contains last: see the OpSeq case).
func (l *lowerer) lowerRepeat(nd *gbnf.Node, last *gbnf.Node) *rx {
	if last == nil {
		nd = l.foldRepeat(nd)
	}
	m, n := nd.Min, nd.Max
	var lastRx *rx = rxEmptyNode
	if last != nil {
		lastRx = l.lowerNode(last)
	}
	if n == 0 {
		return lastRx
	}
	// The body is a scope of its own when it may be followed by another
	// copy of itself; X? and X{1} end with what follows them (and
	// tailRefs counts their references as tail ones: lowering them as a
	// scope would nest a region of a right-linear set inside its own
	// labels, endlessly).
	l.loopDepth++
	var sub *rx
	if n == 1 {
		sub = l.lowerNode(nd.Subs[0])
	} else {
		sub = l.lowerScope(nd.Subs[0])
	}
	l.loopDepth--
	switch sub.op {
	case rxNone:
		if m == 0 {
			return lastRx
		}
		return rxNoneNode
	case rxEmpty:
		return lastRx
	}
	subNullable := l.nodeNullable(nd.Subs[0])
	if subNullable {
		// Empty iterations can make up any minimum.
		m = 0
	}
	bounded := n != gbnf.Unbounded
	count := m
	if bounded {
		count = n
	}
	unroll := count <= unrollAlways ||
		(count <= unrollNarrowMax && sub.byteWidth() <= unrollNarrowWidth && sub.size()*count <= unrollMaxLeaves)
	if l.noUnroll {
		unroll = count <= 1
	}
	if unroll {
		parts := make([]*rx, 0, m+2)
		for range m {
			parts = append(parts, sub)
		}
		if !bounded {
			parts = append(parts, l.ar.star(sub))
		} else {
			// (X (X (X)?)?)? for the optional n-m copies: unambiguous.
			var tail *rx = rxEmptyNode
			for range n - m {
				tail = l.ar.opt(l.ar.seq([]*rx{sub, tail}))
			}
			parts = append(parts, tail)
		}
		parts = append(parts, lastRx)
		r := l.ar.seq(parts)
		if r.size() > MaxPositions {
			return l.fail(nd.Pos, "repetition is too large: more than %d automaton positions (limit MaxPositions)", MaxPositions)
		}
		return r
	}
	body := sub
	if last != nil {
		// One more iteration, the last one in the last class.
		m++
		if bounded {
			n++
		}
		rest := classDiff(nd.Subs[0], last)
		noPop := l.ar.node(rx{op: rxNoPop, subs: append(l.ar.list(1), l.classRx(rest, false)), leaves: 4})
		body = l.ar.alt([]*rx{noPop, lastRx})
	}
	// A counting frame. Frames with the same body and bounds are shared.
	var kb strings.Builder
	body.key(&kb)
	bodyKey := kb.String()
	kb.WriteString("{" + strconv.Itoa(m) + "," + strconv.Itoa(n) + "}")
	key := kb.String()
	fi, ok := l.repKeys[key]
	if !ok {
		fi = int32(len(l.frames))
		l.repKeys[key] = fi
		name := fmt.Sprintf("repeat@%d:%d{%d,%d}", nd.Pos.Line, nd.Pos.Col, m, n)
		if !bounded {
			name = fmt.Sprintf("repeat@%d:%d{%d,}", nd.Pos.Line, nd.Pos.Col, m)
		}
		l.frames = append(l.frames, &frameDef{name: name, repeat: true, min: m, max: n, body: body, pos: nd.Pos, bodyKey: bodyKey})
		l.positions += body.size()
	}
	call := l.ar.node(rx{op: rxCall, frame: fi, leaves: 1})
	if m == 0 {
		return l.ar.opt(call)
	}
	return call
}

// classSubset reports whether every scalar value of class node b is in
// class node a.
func classSubset(b, a *gbnf.Node) bool {
	return len(classDiffRanges(scalarRanges(b.Ranges, b.Negated), scalarRanges(a.Ranges, a.Negated))) == 0
}

// classDiff returns the scalar ranges of class a minus class b.
func classDiff(a, b *gbnf.Node) []rune {
	return classDiffRanges(scalarRanges(a.Ranges, a.Negated), scalarRanges(b.Ranges, b.Negated))
}

// classDiffRanges returns x minus y for sorted, disjoint inclusive ranges.
func classDiffRanges(x, y []rune) []rune {
	var out []rune
	j := 0
	for i := 0; i < len(x); i += 2 {
		lo, hi := x[i], x[i+1]
		for j < len(y) && y[j+1] < lo {
			j += 2
		}
		for k := j; k < len(y) && y[k] <= hi; k += 2 {
			if y[k] > lo {
				out = append(out, lo, y[k]-1)
			}
			lo = max(lo, y[k+1]+1)
		}
		if lo <= hi {
			out = append(out, lo, hi)
		}
	}
	return out
}

// classRx returns rxArena.classRx(ranges, negated), memoized for the lowering: a
// grammar repeats its classes (a JSON grammar's string characters in
// every string rule), and expressions, never changed once built, can be
// shared.
func (l *lowerer) classRx(ranges []rune, negated bool) *rx {
	key := make([]byte, 0, 1+4*len(ranges))
	if negated {
		key = append(key, 1)
	} else {
		key = append(key, 0)
	}
	for _, r := range ranges {
		key = binary.LittleEndian.AppendUint32(key, uint32(r))
	}
	if r, ok := l.classes[string(key)]; ok {
		return r
	}
	r := l.ar.classRx(ranges, negated)
	if l.classes == nil {
		l.classes = map[string]*rx{}
	}
	l.classes[string(key)] = r
	return r
}

// classRx builds the byte-level expression of a code point class: the
// UTF-8 encodings of the class's scalar values (surrogates excluded).
// The one-byte characters are one position whatever their ranges: the
// character classes of a JSON key's trie (any character but the next
// ones of the names, e.g. [ !#-\[\]-gi-\x7F]) were four or five
// positions each, a position per range, and each of them a target to
// compute in the subset construction.
func (a *rxArena) classRx(ranges []rune, negated bool) *rx {
	pos := scalarRanges(ranges, negated)
	var alts []*rx
	var one []byte // the one-byte characters' ranges
	for i := 0; i < len(pos); i += 2 {
		utf8Sequences(pos[i], pos[i+1], func(seq []byteRange) {
			if len(seq) == 1 {
				one = append(one, seq[0].lo, seq[0].hi)
				return
			}
			parts := a.list(len(seq))
			for _, br := range seq {
				parts = append(parts, a.node(rx{op: rxByte, lo: br.lo, hi: br.hi, leaves: 1}))
			}
			alts = append(alts, a.seq(parts))
		})
	}
	switch {
	case len(one) == 2:
		alts = append([]*rx{a.node(rx{op: rxByte, lo: one[0], hi: one[1], leaves: 1})}, alts...)
	case len(one) > 2:
		alts = append([]*rx{a.node(rx{op: rxByte, lo: one[0], hi: one[len(one)-1], rng: &one, leaves: 1})}, alts...)
	}
	return a.alt(alts)
}

// scalarRanges returns the sorted inclusive ranges of Unicode scalar
// values matched by a class: its ranges, or their complement if negated,
// in both cases without the surrogates U+D800–U+DFFF and clipped to
// U+10FFFF.
func scalarRanges(ranges []rune, negated bool) []rune {
	// Normalize: sort and merge (the parser already does; be defensive).
	type iv struct{ lo, hi rune }
	var ivs []iv
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := max(ranges[i], 0), min(ranges[i+1], utf8.MaxRune)
		if lo <= hi {
			ivs = append(ivs, iv{lo, hi})
		}
	}
	for i := 1; i < len(ivs); i++ {
		for j := i; j > 0 && ivs[j].lo < ivs[j-1].lo; j-- {
			ivs[j], ivs[j-1] = ivs[j-1], ivs[j]
		}
	}
	var merged []iv
	for _, x := range ivs {
		if k := len(merged); k > 0 && x.lo <= merged[k-1].hi+1 {
			merged[k-1].hi = max(merged[k-1].hi, x.hi)
			continue
		}
		merged = append(merged, x)
	}
	if negated {
		var comp []iv
		next := rune(0)
		for _, x := range merged {
			if x.lo > next {
				comp = append(comp, iv{next, x.lo - 1})
			}
			next = x.hi + 1
		}
		if next <= utf8.MaxRune {
			comp = append(comp, iv{next, utf8.MaxRune})
		}
		merged = comp
	}
	var out []rune
	for _, x := range merged {
		// Cut out the surrogates.
		if x.lo < 0xD800 && x.hi >= 0xD800 {
			out = append(out, x.lo, 0xD7FF)
			if x.hi > 0xDFFF {
				out = append(out, 0xE000, x.hi)
			}
			continue
		}
		if x.lo >= 0xD800 && x.lo <= 0xDFFF {
			if x.hi > 0xDFFF {
				out = append(out, 0xE000, x.hi)
			}
			continue
		}
		out = append(out, x.lo, x.hi)
	}
	return out
}

type byteRange struct{ lo, hi byte }

// utf8Sequences calls f with sequences of byte ranges whose concatenations
// are exactly the UTF-8 encodings of the scalar values lo..hi (no
// surrogates in lo..hi). The split follows the classic construction used
// by RE2 and Rust's regex-syntax: first by encoded length, then until
// every continuation byte ranges over its full 0x80–0xBF span or lo and
// hi share the leading bytes.
func utf8Sequences(lo, hi rune, f func([]byteRange)) {
	if lo > hi {
		return
	}
	for _, lim := range [...]rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= lim && hi > lim {
			utf8Sequences(lo, lim, f)
			utf8Sequences(lim+1, hi, f)
			return
		}
	}
	if hi <= 0x7F {
		f([]byteRange{{byte(lo), byte(hi)}})
		return
	}
	for i := uint(1); i < 4; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Sequences(lo, lo|m, f)
				utf8Sequences((lo|m)+1, hi, f)
				return
			}
			if hi&m != m {
				utf8Sequences(lo, (hi&^m)-1, f)
				utf8Sequences(hi&^m, hi, f)
				return
			}
		}
	}
	var a, b [utf8.UTFMax]byte
	na := utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([]byteRange, na)
	for i := range na {
		seq[i] = byteRange{a[i], b[i]}
	}
	f(seq)
}

// sccScratch holds the lists of sccs, kept from one round of analyze's
// feedback-vertex choice to the next.
type sccScratch struct {
	index, low []int32
	inSet      []bool // the vertices sccs looks at
	onStack    []bool
	stack      []int32
}

// sccs returns the strongly connected components with a cycle (several
// members, or one with a self-reference) of the reference graph
// restricted to the vertices verts that are not removed (Tarjan's
// algorithm); each component's members are sorted. The components use
// fresh lists; verts may be reused by the caller.
func (sc *sccScratch) sccs(edges [][]int32, removed []bool, verts []int32) [][]int32 {
	n := len(edges)
	if len(sc.index) < n {
		sc.index, sc.low = make([]int32, n), make([]int32, n)
		sc.inSet, sc.onStack = make([]bool, n), make([]bool, n)
	}
	index, low, onStack := sc.index, sc.low, sc.onStack
	for _, u := range verts {
		if !removed[u] {
			sc.inSet[u] = true
			index[u] = -1
		}
	}
	stack := sc.stack[:0]
	var out [][]int32
	next := int32(0)
	var strong func(u int32)
	strong = func(u int32) {
		index[u], low[u] = next, next
		next++
		stack = append(stack, u)
		onStack[u] = true
		self := false
		for _, w := range edges[u] {
			if !sc.inSet[w] {
				continue
			}
			if w == u {
				self = true
			}
			if index[w] < 0 {
				strong(w)
				low[u] = min(low[u], low[w])
			} else if onStack[w] {
				low[u] = min(low[u], index[w])
			}
		}
		if low[u] == index[u] {
			var comp []int32
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == u {
					break
				}
			}
			if len(comp) > 1 || self {
				slices.Sort(comp)
				out = append(out, comp)
			}
		}
	}
	for _, u := range verts {
		if sc.inSet[u] && index[u] < 0 {
			strong(u)
		}
	}
	for _, u := range verts {
		sc.inSet[u] = false
	}
	sc.stack = stack
	return out
}
