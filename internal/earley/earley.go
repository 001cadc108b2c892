// Package earley is the reference recognizer for GBNF grammars: a plain
// Earley recognizer over bytes, written for clarity, used as the oracle
// that faster matchers (the mask automaton) are checked against.
//
// # What it recognizes
//
// A sentence is a sequence of bytes and tokens. Code point terminals
// (literals, classes, ".") match the UTF-8 encoding of Unicode scalar
// values, byte by byte, so a byte string may stop inside a multi-byte
// character and still be a viable prefix; invalid UTF-8 (overlong forms,
// surrogates, bytes that cannot start or continue a character) never
// matches. A negated class matches every scalar value outside its ranges,
// whatever its UTF-8 length.
//
// Token terminals (<[id]>, !<[id]>, <|text|>, !<|text|>) match tokens fed
// with NextToken; bytes fed with Next never match them. NextToken follows
// llama.cpp's llama_grammar_accept_token: for each way the grammar can go
// on, either the next terminal is a token reference and the token matches
// it by id (!<[id]> matches any single token except id), or the next
// terminal is an ordinary one and the token's text is matched as bytes,
// all of it, by ordinary terminals (a token's text never runs into a
// token reference). A <|text|> reference, which has no id without a
// vocabulary, matches a token whose text is exactly "<|text|>". A token
// with empty text matches only token references (llama.cpp's mask never
// allows a token with an empty piece).
//
// Algorithm: Earley items walk the IR directly. An item is a node of a
// rule body, a position inside it (the index in a sequence, the count of a
// repetition, the byte of a literal, the partial UTF-8 character of a
// class) and its origin. Repetition counts are kept in the items, so
// {m,n} costs no expansion; counts past the minimum of an unbounded
// repetition are merged, and for a repetition whose body can be empty the
// item with the smallest count subsumes the others of its origin (it can
// pad with empty iterations). Nodes that derive no sentence are never
// predicted, so every live item can complete: a non-empty item set means
// the input so far is a viable prefix. Empty completions use the usual
// fix: a node completed at the current position with origin there
// advances items that start waiting for it later in the same set.
//
// Cost: one item set per input byte, of a size proportional to the
// grammar for typical grammars, so a few KB take milliseconds
// (BenchmarkAccepts); right recursion and heavy ambiguity (nested
// repetitions that can split a string many ways) make it quadratic or
// worse. A Recognizer and its States are immutable and safe for
// concurrent use.
package earley

import (
	"bytes"
	"sync/atomic"

	"github.com/structgen/structgen/gbnf"
)

// In this package, r is always a *Recognizer, st a *State, s a *set and
// it an item.

// node is a compiled IR node.
type node struct {
	op      gbnf.Op
	subs    []int32 // OpSeq, OpAlt, OpRepeat: children; OpRule: the rule's body
	lit     []byte  // OpLiteral: UTF-8 bytes
	ranges  []rune  // OpClass: matched scalar values (negation applied)
	min     int     // OpRepeat
	max     int     // OpRepeat; gbnf.Unbounded
	tok     int32   // OpToken: id (when tokText is nil)
	tokText []byte  // OpToken by text: "<|text|>"
	neg     bool    // OpToken: !<...>

	productive bool // derives at least one sentence (tokens count)
	nullable   bool // derives the empty string
}

// Recognizer recognizes the sentences of one grammar.
type Recognizer struct {
	g     *gbnf.Grammar
	nodes []node
	root  int32 // the root rule's body
}

// New compiles g for recognition. g must be a grammar returned by
// gbnf.Parse (or built to the same invariants).
func New(g *gbnf.Grammar) *Recognizer {
	r := &Recognizer{g: g}
	bodies := make([]int32, len(g.Rules))
	var refs []int32
	var compile func(n *gbnf.Node) int32
	compile = func(n *gbnf.Node) int32 {
		idx := int32(len(r.nodes))
		r.nodes = append(r.nodes, node{op: n.Op})
		c := node{op: n.Op, min: n.Min, max: n.Max}
		switch n.Op {
		case gbnf.OpLiteral:
			c.lit = []byte(string(n.Runes))
		case gbnf.OpClass:
			if n.Negated {
				c.ranges = gbnf.ComplementRanges(n.Ranges)
			} else {
				c.ranges = n.Ranges
			}
		case gbnf.OpToken:
			c.tok, c.neg = n.Token, n.Negated
			if n.Token < 0 {
				c.tokText = []byte("<|" + n.TokenText + "|>")
			}
		case gbnf.OpRule:
			c.subs = []int32{int32(n.Rule)} // fixed below
			refs = append(refs, idx)
		}
		for _, s := range n.Subs {
			c.subs = append(c.subs, compile(s))
		}
		r.nodes[idx] = c
		return idx
	}
	for i, rule := range g.Rules {
		bodies[i] = compile(rule.Body)
	}
	for _, idx := range refs {
		r.nodes[idx].subs[0] = bodies[r.nodes[idx].subs[0]]
	}
	r.root = bodies[g.Root]

	// Productivity and nullability: least fixpoints.
	for changed := true; changed; {
		changed = false
		for i := range r.nodes {
			n := &r.nodes[i]
			if !n.productive && r.derives(n) {
				n.productive = true
				changed = true
			}
			if !n.nullable && r.derivesEmpty(n) {
				n.nullable = true
				changed = true
			}
		}
	}
	return r
}

func (r *Recognizer) derivesEmpty(n *node) bool {
	switch n.op {
	case gbnf.OpEmpty:
		return true
	case gbnf.OpSeq:
		for _, s := range n.subs {
			if !r.nodes[s].nullable {
				return false
			}
		}
		return true
	case gbnf.OpAlt:
		for _, s := range n.subs {
			if r.nodes[s].nullable {
				return true
			}
		}
		return false
	case gbnf.OpRepeat:
		return n.min == 0 || r.nodes[n.subs[0]].nullable
	case gbnf.OpRule:
		return r.nodes[n.subs[0]].nullable
	}
	return false
}

// emptyBody reports whether node i is a repetition whose body derives
// the empty string. Such a repetition can pad its count with empty
// iterations, so with c iterations done it derives exactly what Max-c
// more iterations derive (or body* when unbounded): an item for it is
// always complete, and among items with the same origin the one with the
// smallest count subsumes the others.
func (r *Recognizer) emptyBody(i int32) bool {
	n := &r.nodes[i]
	return n.op == gbnf.OpRepeat && r.nodes[n.subs[0]].nullable
}

func (r *Recognizer) derives(n *node) bool {
	switch n.op {
	case gbnf.OpEmpty, gbnf.OpLiteral, gbnf.OpToken:
		return true
	case gbnf.OpClass:
		return len(n.ranges) > 0
	case gbnf.OpSeq:
		for _, s := range n.subs {
			if !r.nodes[s].productive {
				return false
			}
		}
		return true
	case gbnf.OpAlt:
		for _, s := range n.subs {
			if r.nodes[s].productive {
				return true
			}
		}
		return false
	case gbnf.OpRepeat:
		return n.min == 0 || r.nodes[n.subs[0]].productive
	case gbnf.OpRule:
		return r.nodes[n.subs[0]].productive
	}
	return false
}

// item is an Earley item. dot is the position inside the node: the index
// of the next child (OpSeq), 0/1 (OpAlt, OpRule, OpToken: done when 1),
// the count so far (OpRepeat), the next byte (OpLiteral), or for OpClass 0
// (start), classDone, or remaining<<4 | length of a partial character
// whose bits so far are in cp.
type item struct {
	node   int32
	dot    int32
	origin int32
	cp     int32
}

const classDone = 1 << 20

// set is the Earley set at one input position.
type set struct {
	items   []item
	index   map[item]int32
	waiting map[int32][]int32 // node -> items of this set waiting for it to complete
	nulled  map[int32]bool    // nodes that completed here with origin here
	canEnd  bool              // the root completed with origin 0
}

func (r *Recognizer) done(it item) bool {
	n := &r.nodes[it.node]
	switch n.op {
	case gbnf.OpEmpty:
		return true
	case gbnf.OpLiteral:
		return int(it.dot) == len(n.lit)
	case gbnf.OpClass:
		return it.dot == classDone
	case gbnf.OpSeq:
		return int(it.dot) == len(n.subs)
	case gbnf.OpRepeat:
		return int(it.dot) >= n.min || r.emptyBody(it.node)
	default: // OpAlt, OpRule, OpToken
		return it.dot == 1
	}
}

// waitsFor calls f for each child node that item it waits for.
func (r *Recognizer) waitsFor(it item, f func(child int32)) {
	n := &r.nodes[it.node]
	switch n.op {
	case gbnf.OpSeq:
		if int(it.dot) < len(n.subs) {
			f(n.subs[it.dot])
		}
	case gbnf.OpAlt:
		if it.dot == 0 {
			for _, s := range n.subs {
				f(s)
			}
		}
	case gbnf.OpRepeat:
		if n.max == gbnf.Unbounded || int(it.dot) < n.max {
			f(n.subs[0])
		}
	case gbnf.OpRule:
		if it.dot == 0 {
			f(n.subs[0])
		}
	}
}

// advance moves it past one completed child.
func (r *Recognizer) advance(it item) item {
	n := &r.nodes[it.node]
	switch n.op {
	case gbnf.OpSeq:
		it.dot++
	case gbnf.OpRepeat:
		it.dot++
		switch {
		case n.max != gbnf.Unbounded:
		case r.emptyBody(it.node):
			it.dot = 0 // body* whatever the count
		case int(it.dot) > n.min:
			it.dot = int32(n.min) // counts past the minimum are all alike
		}
	default: // OpAlt, OpRule
		it.dot = 1
	}
	return it
}

// closure builds the set at position pos from its kernel (the items that
// scanned into it): completion and prediction to a fixpoint. chart holds
// the sets at positions 0..pos-1.
func (r *Recognizer) closure(chart []*set, pos int32, kernel []item) *set {
	s := &set{index: map[item]int32{}, waiting: map[int32][]int32{}, nulled: map[int32]bool{}}
	// minCount: the smallest count of the items of repetitions with an
	// empty-deriving body, per node and origin (see emptyBody).
	minCount := map[[2]int32]int32{}
	add := func(it item) {
		if r.emptyBody(it.node) {
			key := [2]int32{it.node, it.origin}
			if c, ok := minCount[key]; ok && c <= it.dot {
				return
			}
			minCount[key] = it.dot
		}
		if _, ok := s.index[it]; !ok {
			s.index[it] = int32(len(s.items))
			s.items = append(s.items, it)
		}
	}
	for _, it := range kernel {
		add(it)
	}
	for i := 0; i < len(s.items); i++ {
		it := s.items[i]
		if r.done(it) {
			if it.node == r.root && it.origin == 0 {
				s.canEnd = true
			}
			var parents []int32
			var from *set
			if it.origin == pos {
				s.nulled[it.node] = true
				from = s
			} else {
				from = chart[it.origin]
			}
			parents = from.waiting[it.node]
			for _, p := range parents {
				add(r.advance(from.items[p]))
			}
		}
		r.waitsFor(it, func(child int32) {
			if !r.nodes[child].productive {
				return
			}
			s.waiting[child] = append(s.waiting[child], int32(i))
			add(item{node: child, origin: pos})
			if s.nulled[child] {
				add(r.advance(it))
			}
		})
	}
	return s
}

// scan returns the items of s that move over byte c.
func (r *Recognizer) scan(s *set, c byte) []item {
	var out []item
	for _, it := range s.items {
		n := &r.nodes[it.node]
		switch n.op {
		case gbnf.OpLiteral:
			if int(it.dot) < len(n.lit) && n.lit[it.dot] == c {
				it.dot++
				out = append(out, it)
			}
		case gbnf.OpClass:
			if it.dot != classDone {
				if next, ok := classStep(n.ranges, it, c); ok {
					out = append(out, next)
				}
			}
		}
	}
	return out
}

// utf8Bounds are the smallest and largest code points of each UTF-8
// length (index = length).
var utf8Bounds = [5][2]rune{{}, {0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xFFFF}, {0x10000, 0x10FFFF}}

// classStep moves a class item over byte c. It keeps a partial character
// only if some completion of it is a scalar value in ranges, so that a
// live item can always complete.
func classStep(ranges []rune, it item, c byte) (item, bool) {
	var length, remain int32
	cp := it.cp
	if it.dot == 0 {
		switch {
		case c < 0x80:
			length, cp = 1, int32(c)
		case 0xC2 <= c && c <= 0xDF:
			length, cp = 2, int32(c&0x1F)
		case 0xE0 <= c && c <= 0xEF:
			length, cp = 3, int32(c&0x0F)
		case 0xF0 <= c && c <= 0xF4:
			length, cp = 4, int32(c&0x07)
		default:
			return it, false
		}
		remain = length - 1
	} else {
		length, remain = it.dot&0xF, it.dot>>4
		if c&0xC0 != 0x80 {
			return it, false
		}
		cp = cp<<6 | int32(c&0x3F)
		remain--
	}
	lo := rune(cp) << (6 * remain)
	hi := lo | (1<<(6*remain) - 1)
	lo = max(lo, utf8Bounds[length][0])
	hi = min(hi, utf8Bounds[length][1])
	if lo > hi || !overlaps(ranges, lo, hi) {
		return it, false
	}
	it.cp = cp
	if remain == 0 {
		it.dot = classDone
	} else {
		it.dot = remain<<4 | length
	}
	return it, true
}

// overlaps reports whether a normalized scalar-value range list has a
// member in [lo, hi]. (Surrogates are never in ranges.)
func overlaps(ranges []rune, lo, hi rune) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i] <= hi && lo <= ranges[i+1] {
			return true
		}
	}
	return false
}

// State is the recognizer after some input: immutable, so a caller can
// feed different continuations to the same State.
type State struct {
	r     *Recognizer
	chart []*set // the sets at positions 0..len-1; the last is current
	// grown is set once a successor has appended its set to chart's
	// spare capacity; later successors must copy.
	grown atomic.Bool
}

// Start returns the state before any input, or nil if the grammar has no
// sentence at all.
func (r *Recognizer) Start() *State {
	var kernel []item
	if r.nodes[r.root].productive {
		kernel = []item{{node: r.root}}
	}
	s := r.closure(nil, 0, kernel)
	if len(s.items) == 0 {
		return nil
	}
	return &State{r: r, chart: []*set{s}}
}

func (st *State) cur() *set { return st.chart[len(st.chart)-1] }

// extend returns a new State whose chart is st's plus sets.
func (st *State) extend(sets ...*set) *State {
	var chart []*set
	if st.grown.CompareAndSwap(false, true) {
		chart = append(st.chart, sets...) // first successor: may use spare capacity
	} else {
		chart = append(st.chart[:len(st.chart):len(st.chart)], sets...) // copy
	}
	return &State{r: st.r, chart: chart}
}

// Next returns the state after byte c, or nil if the input so far plus c
// is not a prefix of any sentence.
func (st *State) Next(c byte) *State {
	kernel := st.r.scan(st.cur(), c)
	if len(kernel) == 0 {
		return nil
	}
	return st.extend(st.r.closure(st.chart, int32(len(st.chart)), kernel))
}

// CanEnd reports whether the input so far is a complete sentence.
func (st *State) CanEnd() bool { return st.cur().canEnd }

// Pos returns the number of input positions consumed (bytes, plus one or
// len(text) positions per token, see NextToken).
func (st *State) Pos() int { return len(st.chart) - 1 }

// NextToken returns the state after token id with the given text, or nil
// if no sentence continues so (see the package doc for the rule). A token
// advances the input position by max(1, len(text)).
func (st *State) NextToken(id int32, text []byte) *State {
	r := st.r
	pos := int32(len(st.chart) - 1)
	steps := max(1, len(text))

	// The token matched by a token reference.
	var tokKernel []item
	for _, it := range st.cur().items {
		n := &r.nodes[it.node]
		if n.op != gbnf.OpToken || it.dot != 0 {
			continue
		}
		var same bool
		if n.tokText != nil {
			same = bytes.Equal(text, n.tokText)
		} else {
			same = id == n.tok
		}
		if same != n.neg {
			it.dot = 1
			tokKernel = append(tokKernel, it)
		}
	}

	// The token's text matched by ordinary terminals: the intermediate
	// sets become chart positions pos+1 .. pos+steps-1 (empty where the
	// text path died, or for the token path alone).
	chart := append([]*set(nil), st.chart...)
	var textKernel []item
	if len(text) > 0 {
		cur := st.cur()
		for k := 0; k < len(text); k++ {
			var kernel []item
			if cur != nil {
				kernel = r.scan(cur, text[k])
			}
			if k == len(text)-1 {
				textKernel = kernel
				break
			}
			if len(kernel) == 0 {
				cur = nil
				chart = append(chart, &set{})
				continue
			}
			cur = r.closure(chart, int32(len(chart)), kernel)
			chart = append(chart, cur)
		}
	}
	kernel := append(textKernel, tokKernel...)
	if len(kernel) == 0 {
		return nil
	}
	final := r.closure(chart, pos+int32(steps), kernel)
	chart = append(chart, final)
	return &State{r: r, chart: chart}
}

// Accepts reports whether b is a sentence of the grammar.
func (r *Recognizer) Accepts(b []byte) bool {
	st := r.feed(b)
	return st != nil && st.CanEnd()
}

// Viable reports whether b is a prefix of some sentence (possibly a
// sentence that goes on with tokens). b may end inside a multi-byte
// character.
func (r *Recognizer) Viable(b []byte) bool {
	return r.feed(b) != nil
}

func (r *Recognizer) feed(b []byte) *State {
	st := r.Start()
	for _, c := range b {
		if st == nil {
			return nil
		}
		st = st.Next(c)
	}
	return st
}
