package jsonschema2gbnf

import (
	"encoding/binary"
	"regexp/syntax"
	"slices"
	"sort"
	"unicode"
)

// This file holds a small deterministic automaton over decoded characters
// (Unicode scalar values). It is the exact tool for string languages the
// structural regex translation cannot express: a pattern intersected with
// a format or another pattern or length bounds, the complement of a
// pattern (`not`), the keys that are not declared properties, and Go
// regexp features such as \b or anchors inside the expression. Every
// operation is exact; the only failure is size (MaxDFAStates).

// MaxDFAStates bounds every automaton the converter builds (and so the
// number of rules one string language adds to the grammar). Subset and
// product constructions can grow exponentially; 4096 states keep a
// construction under a few milliseconds and the grammar under ~1 MB.
const MaxDFAStates = 4096

// MaxDFAWork bounds the automaton states one conversion builds, over all
// string languages (intermediate products included): it keeps a
// pathological schema (nested not/anyOf of patterns) to about a second of
// work. Real schemas build a few thousand.
const MaxDFAWork = 100000

type dfaEdge struct {
	lo, hi rune
	to     int
}

type dfaState struct {
	accept bool
	edges  []dfaEdge // sorted by lo, disjoint; missing runes go to the dead state
}

type dfa struct {
	states []dfaState // state 0 is the start state
	// trimmed and minimal mark the outputs of trim and minimize, which
	// then return the automaton itself (an automaton is never changed
	// once built, so it may be shared).
	trimmed, minimal bool
	completed        *dfa // complete's result, once asked for
}

var errDFATooBig = &LimitError{Limit: "MaxDFAStates", Max: MaxDFAStates}

// step returns the target of r from st, or -1.
func (d *dfa) step(st int, r rune) int {
	es := d.states[st].edges
	i := sort.Search(len(es), func(i int) bool { return es[i].hi >= r })
	if i < len(es) && es[i].lo <= r {
		return es[i].to
	}
	return -1
}

// matches runs the automaton on s (used by tests and by the converter to
// check declared keys against key languages).
func (d *dfa) matches(s string) bool {
	st := 0
	for _, r := range s {
		st = d.step(st, r)
		if st < 0 {
			return false
		}
	}
	return d.states[st].accept
}

// dfaStrings builds the automaton accepting exactly the given strings.
func dfaStrings(ss []string) *dfa {
	d := &dfa{states: []dfaState{{}}}
	type key struct {
		st int
		r  rune
	}
	next := map[key]int{}
	for _, s := range ss {
		st := 0
		for _, r := range s {
			k := key{st, r}
			t, ok := next[k]
			if !ok {
				t = len(d.states)
				d.states = append(d.states, dfaState{})
				next[k] = t
				d.states[st].edges = append(d.states[st].edges, dfaEdge{r, r, t})
			}
			st = t
		}
		d.states[st].accept = true
	}
	for i := range d.states {
		sort.Slice(d.states[i].edges, func(a, b int) bool { return d.states[i].edges[a].lo < d.states[i].edges[b].lo })
	}
	return d
}

// dfaAll accepts every string over s (s* ), or every string when s is nil.
func dfaAll(s runeSet) *dfa {
	if s == nil {
		s = anyRune
	}
	st := dfaState{accept: true}
	for i := 0; i+1 < len(s); i += 2 {
		st.edges = append(st.edges, dfaEdge{s[i], s[i+1], 0})
	}
	return &dfa{states: []dfaState{st}}
}

// dfaLength accepts every string whose length (in characters) is in
// [min, max]; max < 0 means unbounded.
func dfaLength(min, max int) (*dfa, error) {
	n := max
	if max < 0 {
		n = min
	}
	if n+1 > MaxDFAStates {
		return nil, errDFATooBig
	}
	d := &dfa{}
	for i := 0; i <= n; i++ {
		st := dfaState{accept: i >= min && (max < 0 || i <= max)}
		switch {
		case i < n:
			st.edges = edgesFor(anyRune, i+1)
		case max < 0:
			st.edges = edgesFor(anyRune, i)
		}
		d.states = append(d.states, st)
	}
	return d, nil
}

func edgesFor(s runeSet, to int) []dfaEdge {
	var es []dfaEdge
	for i := 0; i+1 < len(s); i += 2 {
		es = append(es, dfaEdge{s[i], s[i+1], to})
	}
	return es
}

// complete adds a dead state so that every rune has a transition. The
// result is kept on d (automata do not change once built).
func (d *dfa) complete() *dfa {
	if d.completed != nil {
		return d.completed
	}
	out := &dfa{states: make([]dfaState, len(d.states), len(d.states)+1)}
	dead := len(d.states)
	var es []dfaEdge // one backing array for all states
	for i, st := range d.states {
		start := len(es)
		// the edges are sorted and disjoint: the gaps between them,
		// less the surrogates, go to the dead state
		next := rune(0)
		for _, e := range st.edges {
			es = appendGap(es, next, e.lo-1, dead)
			es = append(es, e)
			next = e.hi + 1
		}
		es = appendGap(es, next, unicode.MaxRune, dead)
		out.states[i] = dfaState{accept: st.accept, edges: es[start:len(es):len(es)]}
	}
	out.states = append(out.states, dfaState{edges: edgesFor(anyRune, dead)})
	d.completed = out
	return out
}

// appendGap appends the edges [lo,hi]→to without the surrogates.
func appendGap(es []dfaEdge, lo, hi rune, to int) []dfaEdge {
	if lo > hi {
		return es
	}
	if lo <= surrogateHi && hi >= surrogateLo {
		if lo < surrogateLo {
			es = append(es, dfaEdge{lo, surrogateLo - 1, to})
		}
		if hi > surrogateHi {
			es = append(es, dfaEdge{surrogateHi + 1, hi, to})
		}
		return es
	}
	return append(es, dfaEdge{lo, hi, to})
}

// complement accepts exactly the strings d rejects.
func (d *dfa) complement() *dfa {
	c := d.complete()
	out := &dfa{states: make([]dfaState, len(c.states))}
	for i, st := range c.states {
		out.states[i] = dfaState{accept: !st.accept, edges: st.edges}
	}
	return out
}

// product combines two automata; acc decides acceptance of a pair.
func product(a, b *dfa, acc func(x, y bool) bool) (*dfa, error) {
	a, b = a.complete(), b.complete()
	// pair (x, y) is x*nb+y; its state is idx[pair]-1 (0: not yet),
	// in a dense table when it is small, else in a map
	nb := len(b.states)
	var dense []int32
	var sparse map[int]int32
	if len(a.states)*nb <= maxDenseProduct {
		dense = make([]int32, len(a.states)*nb)
	} else {
		sparse = map[int]int32{}
	}
	lookup := func(p int) int32 {
		if dense != nil {
			return dense[p]
		}
		return sparse[p]
	}
	set := func(p int, v int32) {
		if dense != nil {
			dense[p] = v
		} else {
			sparse[p] = v
		}
	}
	set(0, 1)
	queue := []int{0}
	out := &dfa{states: []dfaState{{}}}
	var es []dfaEdge // one backing array for all states
	for k := 0; k < len(queue); k++ {
		p := queue[k]
		sa, sb := a.states[p/nb], b.states[p%nb]
		start := len(es)
		ea, eb := sa.edges, sb.edges
		ia, ib := 0, 0
		for ia < len(ea) && ib < len(eb) {
			lo := max(ea[ia].lo, eb[ib].lo)
			hi := min(ea[ia].hi, eb[ib].hi)
			if lo <= hi {
				q := ea[ia].to*nb + eb[ib].to
				t := int(lookup(q)) - 1
				if t < 0 {
					if len(out.states) >= MaxDFAStates {
						return nil, errDFATooBig
					}
					t = len(out.states)
					set(q, int32(t+1))
					out.states = append(out.states, dfaState{})
					queue = append(queue, q)
				}
				es = appendEdgeFrom(es, start, lo, hi, t)
			}
			if ea[ia].hi < eb[ib].hi {
				ia++
			} else {
				ib++
			}
		}
		out.states[k] = dfaState{accept: acc(sa.accept, sb.accept), edges: es[start:len(es):len(es)]}
	}
	return out.trim(), nil
}

// maxDenseProduct is the most pairs product indexes in a table (4 bytes
// each) rather than a map.
const maxDenseProduct = 1 << 18

// appendEdge appends [lo,hi]→to, merging with the previous edge when
// adjacent with the same target.
func appendEdge(es []dfaEdge, lo, hi rune, to int) []dfaEdge {
	return appendEdgeFrom(es, 0, lo, hi, to)
}

// appendEdgeFrom is appendEdge for the edges es[start:] of one state.
func appendEdgeFrom(es []dfaEdge, start int, lo, hi rune, to int) []dfaEdge {
	if n := len(es); n > start && es[n-1].to == to && (es[n-1].hi+1 == lo || (es[n-1].hi == surrogateLo-1 && lo == surrogateHi+1)) {
		es[n-1].hi = hi
		return es
	}
	return append(es, dfaEdge{lo, hi, to})
}

// disjointDFA reports whether no string is accepted by both a and b. It
// explores the pairs of live states only (a missing edge leads to the
// dead state, where no pair can accept), and stops at the first
// accepting pair: two patterns that differ early (keys "^name:…" and
// "^url:…") are told apart in a few pairs, where their product or
// difference would copy one of them whole. Past MaxDFAStates live pairs
// it answers false (not shown disjoint): the product, which callers then
// build, has at least as many states and fails with the size error it
// always did, so the exploration is bounded like the products.
func disjointDFA(a, b *dfa) bool {
	nb := len(b.states)
	seen := make(map[int]bool, 64)
	seen[0] = true
	queue := []int{0}
	for k := 0; k < len(queue); k++ {
		p := queue[k]
		sa, sb := a.states[p/nb], b.states[p%nb]
		if sa.accept && sb.accept {
			return false
		}
		ea, eb := sa.edges, sb.edges
		ia, ib := 0, 0
		for ia < len(ea) && ib < len(eb) {
			if max(ea[ia].lo, eb[ib].lo) <= min(ea[ia].hi, eb[ib].hi) {
				q := ea[ia].to*nb + eb[ib].to
				if !seen[q] {
					if len(queue) >= MaxDFAStates {
						return false
					}
					seen[q] = true
					queue = append(queue, q)
				}
			}
			if ea[ia].hi < eb[ib].hi {
				ia++
			} else {
				ib++
			}
		}
	}
	return true
}

func intersectDFA(a, b *dfa) (*dfa, error) {
	return product(a, b, func(x, y bool) bool { return x && y })
}

func minusDFA(a, b *dfa) (*dfa, error) {
	return product(a, b, func(x, y bool) bool { return x && !y })
}

func unionDFA(a, b *dfa) (*dfa, error) {
	return product(a, b, func(x, y bool) bool { return x || y })
}

// reverse returns the edges reversed, in one array: the sources of the
// edges into state t are rev[at[t]:at[t+1]] (with repeats).
func (d *dfa) reverse() (at, rev []int32) {
	n := len(d.states)
	at = make([]int32, n+1)
	for _, st := range d.states {
		for _, e := range st.edges {
			at[e.to+1]++
		}
	}
	for t := 0; t < n; t++ {
		at[t+1] += at[t]
	}
	rev = make([]int32, at[n])
	fill := append([]int32(nil), at[:n]...)
	for i, st := range d.states {
		for _, e := range st.edges {
			rev[fill[e.to]] = int32(i)
			fill[e.to]++
		}
	}
	return at, rev
}

// reachBack returns, per state, whether it is one of seeds or has a
// path to one, given the reversed edges (reverse); it takes seeds for
// its stack.
func reachBack(at, rev []int32, seeds []int32) []bool {
	live := make([]bool, len(at)-1)
	for _, i := range seeds {
		live[i] = true
	}
	stack := seeds
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range rev[at[x]:at[x+1]] {
			if !live[p] {
				live[p] = true
				stack = append(stack, p)
			}
		}
	}
	return live
}

// trim removes states that are unreachable or cannot reach an accepting
// state, renumbering so that the start is 0. The empty language becomes
// a single non-accepting state without edges.
func (d *dfa) trim() *dfa {
	if d.trimmed {
		return d
	}
	n := len(d.states)
	// co-reachability
	at, rev := d.reverse()
	var accepting []int32
	for i, st := range d.states {
		if st.accept {
			accepting = append(accepting, int32(i))
		}
	}
	live := reachBack(at, rev, accepting)
	if !live[0] {
		return &dfa{states: []dfaState{{}}, trimmed: true}
	}
	// reachability from 0 through live states, in BFS order
	newID := make([]int, n)
	for i := range newID {
		newID[i] = -1
	}
	order := []int{0}
	newID[0] = 0
	for k := 0; k < len(order); k++ {
		for _, e := range d.states[order[k]].edges {
			if live[e.to] && newID[e.to] < 0 {
				newID[e.to] = len(order)
				order = append(order, e.to)
			}
		}
	}
	out := &dfa{states: make([]dfaState, len(order))}
	var es []dfaEdge // one backing array for all states
	for k, old := range order {
		st := d.states[old]
		start := len(es)
		for _, e := range st.edges {
			if live[e.to] {
				es = appendEdgeFrom(es, start, e.lo, e.hi, newID[e.to])
			}
		}
		out.states[k] = dfaState{accept: st.accept, edges: es[start:len(es):len(es)]}
	}
	out.trimmed = true
	return out
}

func (d *dfa) isEmpty() bool {
	t := d.trim()
	return !t.states[0].accept && len(t.states[0].edges) == 0
}

// minimize merges equivalent states. The result is trimmed.
//
// The partition refinement starts from accepting / not accepting and
// splits a class whenever its states' signatures differ: a signature is
// a state's edges with their targets' classes (adjacent edges to one
// class merged, as appendEdge would). Only the states with a successor
// that changed class are looked at again, and the largest part of a
// split class keeps its number (Hopcroft's rule), so the work is about
// the edges times the log of the states, rather than one pass over every
// state per round (Moore's algorithm: 81 rounds over 2,800 states on the
// longest corpus conversions). The coarsest stable partition is unique,
// so the order of the splits does not change the result.
func (d *dfa) minimize() *dfa {
	if d.minimal {
		return d
	}
	d = d.trim()
	n := len(d.states)
	cls := make([]int32, n)
	var members [][]int32 // class → its states, ascending
	{
		var acc, rej []int32
		for i, st := range d.states {
			if st.accept {
				acc = append(acc, int32(i))
			} else {
				rej = append(rej, int32(i))
			}
		}
		for _, m := range [][]int32{rej, acc} {
			if len(m) > 0 {
				for _, i := range m {
					cls[i] = int32(len(members))
				}
				members = append(members, m)
			}
		}
	}
	at, rev := d.reverse()
	sig := func(i int32, f func(lo, hi rune, to int32)) {
		var lo, hi rune
		to := int32(-1)
		for _, e := range d.states[i].edges {
			c := cls[e.to]
			if to == c && (hi+1 == e.lo || (hi == surrogateLo-1 && e.lo == surrogateHi+1)) {
				hi = e.hi
				continue
			}
			if to >= 0 {
				f(lo, hi, to)
			}
			lo, hi, to = e.lo, e.hi, c
		}
		if to >= 0 {
			f(lo, hi, to)
		}
	}
	var h uint64
	mix := func(x uint64) { h = (h ^ x) * 0x100000001b3 }
	addSig := func(lo, hi rune, to int32) {
		mix(uint64(lo)<<32 | uint64(uint32(hi)))
		mix(uint64(to))
	}
	var sa, sb []int32
	appendA := func(lo, hi rune, to int32) { sa = append(sa, lo, hi, to) }
	appendB := func(lo, hi rune, to int32) { sb = append(sb, lo, hi, to) }
	sameSig := func(i, j int32) bool {
		sa, sb = sa[:0], sb[:0]
		sig(i, appendA)
		sig(j, appendB)
		return slices.Equal(sa, sb)
	}
	// touched[i]: i's signature may have changed since its class was last
	// looked at (a successor changed class); such states wait in
	// pend[cls[i]]. The untouched members of a class share one signature.
	touched := make([]bool, n)
	pend := make([][]int32, len(members))
	queued := make([]bool, len(members))
	var work []int32
	for c, m := range members {
		for _, i := range m {
			touched[i] = true
		}
		pend[c] = append([]int32(nil), m...)
		queued[c] = true
		work = append(work, int32(c))
	}
	byHash := map[uint64]int{}
	var groups [][]int32 // of touched states; groups[0] also holds the untouched ones when there are
	var groupHash []uint64
	var groupRep []int32
	var moved []int32
	for len(work) > 0 {
		c := work[0]
		work = work[1:]
		queued[c] = false
		ts := pend[c]
		pend[c] = nil
		m := members[c]
		if len(m) < 2 {
			for _, i := range ts {
				touched[i] = false
			}
			continue
		}
		clear(byHash)
		groups, groupHash, groupRep = groups[:0], groupHash[:0], groupRep[:0]
		find := func(i int32) int {
			h = 0xcbf29ce484222325
			sig(i, addSig)
			if g, ok := byHash[h]; ok {
				if sameSig(i, groupRep[g]) {
					return g
				}
				for k := range groups { // a hash collision
					if groupHash[k] == h && sameSig(i, groupRep[k]) {
						return k
					}
				}
			} else {
				byHash[h] = len(groups)
			}
			groups = append(groups, nil)
			groupHash = append(groupHash, h)
			groupRep = append(groupRep, i)
			return len(groups) - 1
		}
		hasUntouched := len(ts) < len(m)
		if hasUntouched {
			for _, i := range m {
				if !touched[i] {
					find(i) // group 0: the untouched states' signature
					break
				}
			}
		}
		for _, i := range ts {
			g := find(i)
			groups[g] = append(groups[g], i)
		}
		if len(groups) == 1 {
			for _, i := range ts {
				touched[i] = false
			}
			continue
		}
		if hasUntouched {
			// group 0 is the untouched members and the touched ones
			// that matched them
			g0 := groups[0]
			groups[0] = make([]int32, 0, len(m)-len(ts)+len(g0))
			for _, i := range m {
				if !touched[i] {
					groups[0] = append(groups[0], i)
				}
			}
			groups[0] = append(groups[0], g0...)
		}
		for _, i := range ts {
			touched[i] = false
		}
		// the largest group keeps the class, the others get new ones;
		// the predecessors of the states that changed class are touched
		keep := 0
		for g := range groups {
			if len(groups[g]) > len(groups[keep]) {
				keep = g
			}
		}
		moved = moved[:0]
		for g, states := range groups {
			if g == keep {
				members[c] = states
				continue
			}
			nc := int32(len(members))
			members = append(members, states)
			pend = append(pend, nil)
			queued = append(queued, false)
			for _, i := range states {
				cls[i] = nc
			}
			moved = append(moved, states...)
		}
		for _, i := range moved {
			for _, p := range rev[at[i]:at[i+1]] {
				if touched[p] {
					continue
				}
				touched[p] = true
				pc := cls[p]
				pend[pc] = append(pend[pc], p)
				if !queued[pc] {
					queued[pc] = true
					work = append(work, pc)
				}
			}
		}
		groups = nil // its lists now belong to members
	}
	nClasses := len(members)
	// build the quotient, start class first
	newID := make([]int32, nClasses)
	for i := range newID {
		newID[i] = -1
	}
	newID[cls[0]] = 0
	order := []int{0}
	for i := 0; i < n; i++ {
		if newID[cls[i]] < 0 {
			newID[cls[i]] = int32(len(order))
			order = append(order, i)
		}
	}
	out := &dfa{states: make([]dfaState, len(order))}
	var es []dfaEdge // one backing array for all states
	for k, rep := range order {
		st := d.states[rep]
		start := len(es)
		for _, e := range st.edges {
			es = appendEdgeFrom(es, start, e.lo, e.hi, int(newID[cls[e.to]]))
		}
		out.states[k] = dfaState{accept: st.accept, edges: es[start:len(es):len(es)]}
	}
	out = out.trim()
	out.minimal = true
	return out
}

// lengthRange returns the shortest and longest accepted length (max -1
// when unbounded); ok is false for the empty language.
func (d *dfa) lengthRange() (lo, hi int, ok bool) {
	d = d.trim()
	if d.isEmpty() {
		return 0, 0, false
	}
	n := len(d.states)
	// BFS for the shortest
	dist := make([]int, n)
	for i := range dist {
		dist[i] = -1
	}
	dist[0] = 0
	q := []int{0}
	lo = -1
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		if d.states[x].accept && lo < 0 {
			lo = dist[x]
		}
		for _, e := range d.states[x].edges {
			if dist[e.to] < 0 {
				dist[e.to] = dist[x] + 1
				q = append(q, e.to)
			}
		}
	}
	// longest: a cycle among trimmed states means unbounded
	color := make([]int, n)
	longest := make([]int, n)
	var cyc bool
	var dfs func(x int) int
	dfs = func(x int) int {
		if color[x] == 2 {
			return longest[x]
		}
		if color[x] == 1 {
			cyc = true
			return 0
		}
		color[x] = 1
		best := -1
		if d.states[x].accept {
			best = 0
		}
		for _, e := range d.states[x].edges {
			if l := dfs(e.to); l >= 0 && l+1 > best {
				best = l + 1
			}
		}
		color[x] = 2
		longest[x] = best
		return best
	}
	hi = dfs(0)
	if cyc {
		hi = -1
	}
	return lo, hi, true
}

// Regex → DFA by subset construction over Go's compiled program
// (regexp/syntax.Prog), with JSON Schema's search semantics: the string is
// accepted when the pattern matches anywhere in it. Empty-width
// assertions (^ $ \A \z \b \B and their multi-line forms) are exact: a
// DFA state remembers the class of the previous character, and the
// closure is taken for each class of the next character.

// position classes of the character before / after a position
const (
	ctxStart   = iota // no previous character (start of text)
	ctxNL             // '\n'
	ctxWord           // [0-9A-Za-z_]
	ctxOther          // anything else
	ctxEnd            // next: no next character (end of text)
	numPrevCtx = 4
)

func ctxOf(r rune) int {
	switch {
	case r == '\n':
		return ctxNL
	case r < unicode.MaxASCII && syntax.IsWordChar(r):
		return ctxWord
	}
	return ctxOther
}

// emptyOps returns the empty-width assertions that hold between a
// previous character of class prev and a next one of class next.
func emptyOps(prev, next int) syntax.EmptyOp {
	var op syntax.EmptyOp
	if prev == ctxStart {
		op |= syntax.EmptyBeginText | syntax.EmptyBeginLine
	}
	if prev == ctxNL {
		op |= syntax.EmptyBeginLine
	}
	if next == ctxEnd {
		op |= syntax.EmptyEndText | syntax.EmptyEndLine
	}
	if next == ctxNL {
		op |= syntax.EmptyEndLine
	}
	if (prev == ctxWord) != (next == ctxWord) {
		op |= syntax.EmptyWordBoundary
	} else {
		op |= syntax.EmptyNoWordBoundary
	}
	return op
}

// wordAndNL are the boundaries every transition partition respects, so
// that each elementary interval has one next-character class.
var wordAndNL = []rune{'\n', '\n', '0', '9', 'A', 'Z', '_', '_', 'a', 'z'}

// instRunes returns the characters an InstRune* instruction consumes.
func instRunes(in *syntax.Inst) runeSet {
	switch in.Op {
	case syntax.InstRune1:
		return runeSet{in.Rune[0], in.Rune[0]}
	case syntax.InstRuneAny:
		return anyRune
	case syntax.InstRuneAnyNotNL:
		return normRunes([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})
	case syntax.InstRune:
		if len(in.Rune) == 1 {
			s := runeSet{in.Rune[0], in.Rune[0]}
			if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
				s = foldRunes(s)
			}
			return s
		}
		return normRunes(in.Rune)
	}
	return nil
}

// regexDFA compiles a Go regular expression (already parsed) into a DFA.
// search selects JSON Schema's unanchored semantics.
func regexDFA(re *syntax.Regexp, search bool) (*dfa, error) {
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	// the characters each consuming instruction takes, computed once
	runes := make([]runeSet, len(prog.Inst))
	for pc := range prog.Inst {
		runes[pc] = instRunes(&prog.Inst[pc])
	}
	// closure of a pc set under the empty ops that hold
	seen := make([]bool, len(prog.Inst))
	var stack, touched []int
	closure := func(pcs []int, ops syntax.EmptyOp) (set []int, match bool) {
		stack = append(stack[:0], pcs...)
		touched = touched[:0]
		for len(stack) > 0 {
			pc := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[pc] {
				continue
			}
			seen[pc] = true
			touched = append(touched, pc)
			in := &prog.Inst[pc]
			switch in.Op {
			case syntax.InstAlt, syntax.InstAltMatch:
				stack = append(stack, int(in.Out), int(in.Arg))
			case syntax.InstCapture, syntax.InstNop:
				stack = append(stack, int(in.Out))
			case syntax.InstEmptyWidth:
				if syntax.EmptyOp(in.Arg)&^ops == 0 {
					stack = append(stack, int(in.Out))
				}
			case syntax.InstMatch:
				match = true
			case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
				set = append(set, pc)
			}
		}
		for _, pc := range touched {
			seen[pc] = false
		}
		sort.Ints(set)
		return set, match
	}
	type skey struct {
		pcs     string
		prev    int
		matched bool
	}
	type sval struct {
		pcs     []int
		prev    int
		matched bool
	}
	var kb []byte
	keyOf := func(v sval) skey {
		kb = kb[:0]
		for _, pc := range v.pcs {
			kb = binary.AppendUvarint(kb, uint64(pc))
		}
		return skey{string(kb), v.prev, v.matched}
	}
	idx := map[skey]int{}
	var vals []sval
	d := &dfa{}
	add := func(v sval) (int, error) {
		if v.matched {
			v.pcs, v.prev = nil, 0
		}
		k := keyOf(v)
		if i, ok := idx[k]; ok {
			return i, nil
		}
		if len(vals) >= MaxDFAStates {
			return 0, errDFATooBig
		}
		i := len(vals)
		idx[k] = i
		vals = append(vals, v)
		d.states = append(d.states, dfaState{})
		return i, nil
	}
	if _, err := add(sval{pcs: []int{prog.Start}, prev: ctxStart}); err != nil {
		return nil, err
	}
	var pts []rune // the boundaries of a state's transition partition
	for i := 0; i < len(vals); i++ {
		v := vals[i]
		if v.matched {
			d.states[i] = dfaState{accept: true, edges: edgesFor(anyRune, i)}
			continue
		}
		pcs := v.pcs
		if search && v.prev != ctxStart {
			pcs = append(append([]int{}, pcs...), prog.Start)
		}
		// acceptance: a match at the end of the text
		_, endMatch := closure(pcs, emptyOps(v.prev, ctxEnd))
		st := dfaState{accept: endMatch}
		// partition the alphabet by the consumable ranges of the closures
		// for each next-character class.
		type cl struct {
			set   []int
			match bool
		}
		var cls [4]cl
		for next := ctxNL; next <= ctxOther; next++ {
			s, m := closure(pcs, emptyOps(v.prev, next))
			cls[next] = cl{s, m}
		}
		pts := append(pts[:0], 0, unicode.MaxRune+1, surrogateLo, surrogateHi+1)
		for k := 0; k+1 < len(wordAndNL); k += 2 {
			pts = append(pts, wordAndNL[k], wordAndNL[k+1]+1)
		}
		for next := ctxNL; next <= ctxOther; next++ {
			for _, pc := range cls[next].set {
				rs := runes[pc]
				for k := 0; k+1 < len(rs); k += 2 {
					pts = append(pts, rs[k], rs[k+1]+1)
				}
			}
		}
		slices.Sort(pts)
		pts = slices.Compact(pts)
		for k := 0; k+1 < len(pts); k++ {
			lo, hi := pts[k], pts[k+1]-1
			if lo >= surrogateLo && lo <= surrogateHi {
				continue
			}
			next := ctxOf(lo)
			c := cls[next]
			var nv sval
			if search && c.match {
				nv = sval{matched: true}
			} else {
				var to []int
				for _, pc := range c.set {
					if runes[pc].has(lo) {
						to = append(to, int(prog.Inst[pc].Out))
					}
				}
				if len(to) == 0 && !search {
					continue
				}
				sort.Ints(to)
				to = dedupInts(to)
				nv = sval{pcs: to, prev: next}
			}
			t, err := add(nv)
			if err != nil {
				return nil, err
			}
			st.edges = appendEdge(st.edges, lo, hi, t)
		}
		if search && !st.accept {
			// a match already complete before the end (e.g. "a" in "ab")
			// was caught above as matched; nothing else to do.
		}
		d.states[i] = st
	}
	return d.minimize(), nil
}

func dedupInts(xs []int) []int {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}
