package jsonschema2gbnf

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"unicode"
)

// Patterns are Go regular expressions (regexp/syntax with syntax.Perl,
// the dialect santhosh-tekuri validates with), matched unanchored against
// the decoded string. They become grammar in one of two ways:
//
//   - structurally, node by node (classes, literals, counted repetition
//     kept as {m,n}), when anchors appear only at the two ends: the
//     grammar stays small and readable and a {1,1000} stays a counter;
//   - through a DFA (dfa.go) otherwise: anchors or \b inside the
//     expression, intersections with formats, other patterns or length
//     bounds, complements.

// MaxPatternBytes bounds a pattern's source. The longest pattern of the
// corpus is about 2 KB; 64 KB keeps regexp/syntax and the DFA bounded.
const MaxPatternBytes = 64 << 10

// errNoMatch marks a sub-expression that matches nothing.
var errNoMatch = errors.New("matches nothing")

// errNeedDFA marks an expression the structural translation cannot
// express (an anchor or word boundary inside it).
var errNeedDFA = errors.New("needs the automaton")

// parsePattern parses a pattern exactly as regexp.Compile does.
func parsePattern(src string) (*syntax.Regexp, error) {
	if len(src) > MaxPatternBytes {
		return nil, &LimitError{Limit: "MaxPatternBytes", Value: len(src), Max: MaxPatternBytes}
	}
	// Not simplified: Simplify expands x{1,64} into 64 nested optionals;
	// the structural translation keeps counted repetition, and regexDFA
	// simplifies its own copy.
	return syntax.Parse(src, syntax.Perl)
}

// regexParts splits a top-level expression into its search form:
// anchored-start, the middle, anchored-end.
type searchForm struct {
	begin, end bool
	middle     []*syntax.Regexp // concatenated
}

func splitSearch(re *syntax.Regexp) searchForm {
	var items []*syntax.Regexp
	var flat func(r *syntax.Regexp)
	flat = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpConcat:
			for _, s := range r.Sub {
				flat(s)
			}
		case syntax.OpCapture:
			if r.Sub[0].Op == syntax.OpConcat {
				flat(r.Sub[0])
			} else {
				items = append(items, r)
			}
		default:
			items = append(items, r)
		}
	}
	flat(re)
	var f searchForm
	for len(items) > 0 && items[0].Op == syntax.OpBeginText {
		f.begin = true
		items = items[1:]
	}
	for len(items) > 0 && items[len(items)-1].Op == syntax.OpEndText {
		f.end = true
		items = items[:len(items)-1]
	}
	f.middle = items
	return f
}

// altOf converts each alternative with conv and joins the results; an
// alternative that matches nothing drops out, and errNoMatch is returned
// when all do.
func altOf(subs []*syntax.Regexp, conv func(*syntax.Regexp) (string, error)) (string, error) {
	var alts []string
	for _, s := range subs {
		x, err := conv(s)
		if err == errNoMatch {
			continue
		}
		if err != nil {
			return "", err
		}
		alts = append(alts, x)
	}
	if len(alts) == 0 {
		return "", errNoMatch
	}
	return alt(alts...), nil
}

// structural translates a pattern into a grammar expression over the
// canonical encoding, with search semantics. It returns errNeedDFA when
// anchors appear elsewhere than at the ends, errNoMatch when nothing
// matches.
func structural(re *syntax.Regexp) (string, error) {
	if re.Op == syntax.OpAlternate {
		return structuralAlt(re.Sub)
	}
	if re.Op == syntax.OpCapture {
		return structural(re.Sub[0])
	}
	f := splitSearch(re)
	return searchExpr(f, !f.begin, !f.end)
}

// searchExpr translates a search form, with kchar* at the open ends
// asked for.
func searchExpr(f searchForm, openStart, openEnd bool) (string, error) {
	var parts []string
	if openStart {
		parts = append(parts, ruleKChar+"*")
	}
	for _, m := range f.middle {
		x, err := reExpr(m)
		if err != nil {
			return "", err
		}
		parts = append(parts, x)
	}
	if openEnd {
		parts = append(parts, ruleKChar+"*")
	}
	return seq(parts...), nil
}

// structuralAlt translates the alternatives of a search pattern, writing
// an unanchored end that every alternative has once: kchar* (a | b) kchar*
// rather than kchar* a kchar* | kchar* b kchar*, whose automaton holds a
// copy of kchar* per alternative (JsonSchemaStore/config_schema, "one of
// a hundred zone ids anywhere": 23,810 subset states for one list item).
func structuralAlt(subs []*syntax.Regexp) (string, error) {
	shareStart, shareEnd := true, true
	for _, sub := range subs {
		b := sub
		for b.Op == syntax.OpCapture {
			b = b.Sub[0]
		}
		if b.Op == syntax.OpAlternate {
			return altOf(subs, structural)
		}
		f := splitSearch(sub)
		shareStart = shareStart && !f.begin
		shareEnd = shareEnd && !f.end
	}
	if !shareStart && !shareEnd {
		return altOf(subs, structural)
	}
	x, err := altOf(subs, func(sub *syntax.Regexp) (string, error) {
		f := splitSearch(sub)
		return searchExpr(f, !f.begin && !shareStart, !f.end && !shareEnd)
	})
	if err != nil {
		return "", err
	}
	var parts []string
	if shareStart {
		parts = append(parts, ruleKChar+"*")
	}
	parts = append(parts, paren(x))
	if shareEnd {
		parts = append(parts, ruleKChar+"*")
	}
	return seq(parts...), nil
}

// searchLengthRange returns the shortest and longest length (in
// characters; longest -1 when unbounded) of the strings that structural's
// translation of re matches. ok is false when it matches nothing.
func searchLengthRange(re *syntax.Regexp) (min, max int, ok bool) {
	switch re.Op {
	case syntax.OpCapture:
		return searchLengthRange(re.Sub[0])
	case syntax.OpAlternate:
		min, max = -1, 0
		for _, s := range re.Sub {
			a, b, sok := searchLengthRange(s)
			if !sok {
				continue
			}
			if min < 0 || a < min {
				min = a
			}
			if max >= 0 && (b < 0 || b > max) {
				max = b
			}
			ok = true
		}
		return min, max, ok
	}
	f := splitSearch(re)
	min, max, ok = reLengthRange(&syntax.Regexp{Op: syntax.OpConcat, Sub: f.middle})
	if !f.begin || !f.end {
		max = -1
	}
	return min, max, ok
}

// reExpr translates an anchor-free expression.
func reExpr(re *syntax.Regexp) (string, error) {
	switch re.Op {
	case syntax.OpNoMatch:
		return "", errNoMatch
	case syntax.OpEmptyMatch:
		return `""`, nil
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			var parts []string
			for _, r := range re.Rune {
				parts = append(parts, encClass(foldRunes(runeSet{r, r})))
			}
			return seq(parts...), nil
		}
		if !validRunes(re.Rune) {
			return "", errNoMatch
		}
		enc := encodeJSONString(string(re.Rune))
		return lit(enc[1 : len(enc)-1]), nil
	case syntax.OpCharClass:
		s := normRunes(re.Rune)
		if s.empty() {
			return "", errNoMatch
		}
		return classExpr(s), nil
	case syntax.OpAnyCharNotNL:
		return classExpr(anyRune.minus(runeSet{'\n', '\n'})), nil
	case syntax.OpAnyChar:
		return ruleKChar, nil
	case syntax.OpCapture:
		return reExpr(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		min, max := repeatBounds(re)
		x, err := reExpr(re.Sub[0])
		if err == errNoMatch {
			if min == 0 {
				return `""`, nil
			}
			return "", errNoMatch
		}
		if err != nil {
			return "", err
		}
		if x == `""` {
			return `""`, nil
		}
		return rep(x, min, max), nil
	case syntax.OpConcat:
		var parts []string
		for _, s := range re.Sub {
			x, err := reExpr(s)
			if err != nil {
				return "", err
			}
			parts = append(parts, x)
		}
		return seq(parts...), nil
	case syntax.OpAlternate:
		return altOf(re.Sub, reExpr)
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return "", errNeedDFA
	}
	return "", fmt.Errorf("unknown regexp op %v", re.Op)
}

func validRunes(rs []rune) bool {
	for _, r := range rs {
		if r > unicode.MaxRune || (r >= surrogateLo && r <= surrogateHi) {
			return false
		}
	}
	return true
}

// classExpr renders a class; the full canonical character set is the
// shared kchar rule.
func classExpr(s runeSet) string {
	if s.equal(anyRune) {
		return ruleKChar
	}
	return encClass(s)
}

// lengthRange returns the shortest and longest length (in characters)
// of the strings an anchor-free expression matches; max is -1 when
// unbounded. ok is false when it matches nothing.
func reLengthRange(re *syntax.Regexp) (min, max int, ok bool) {
	switch re.Op {
	case syntax.OpNoMatch:
		return 0, 0, false
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, 0, true
	case syntax.OpLiteral:
		return len(re.Rune), len(re.Rune), true
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0, 0, false
		}
		return 1, 1, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1, 1, true
	case syntax.OpCapture:
		return reLengthRange(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := repeatBounds(re)
		a, b, ok := reLengthRange(re.Sub[0])
		if !ok {
			if lo == 0 {
				return 0, 0, true
			}
			return 0, 0, false
		}
		mx := -1
		if hi >= 0 && b >= 0 {
			mx = hi * b
		} else if hi == 0 || b == 0 {
			mx = 0
		}
		return lo * a, mx, true
	case syntax.OpConcat:
		mn, mx := 0, 0
		for _, s := range re.Sub {
			a, b, ok := reLengthRange(s)
			if !ok {
				return 0, 0, false
			}
			mn += a
			if mx >= 0 {
				if b < 0 {
					mx = -1
				} else {
					mx += b
				}
			}
		}
		return mn, mx, true
	case syntax.OpAlternate:
		mn, mx, any := 0, 0, false
		for _, s := range re.Sub {
			a, b, ok := reLengthRange(s)
			if !ok {
				continue
			}
			if !any || a < mn {
				mn = a
			}
			if !any {
				mx = b
			} else if mx >= 0 && (b < 0 || b > mx) {
				mx = b
			}
			any = true
		}
		return mn, mx, any
	}
	return 0, -1, true
}

// lengthPushdown expresses "pattern and minLength/maxLength" structurally
// when the search form of the pattern has exactly one part of variable
// length and that part is a repetition of a single character class (or
// the unanchored `.*` at an end): the length budget then goes into that
// repetition's bounds. ok is false when the shape does not fit.
func lengthPushdown(re *syntax.Regexp, minLen, maxLen int) (string, bool, error) {
	if re.Op == syntax.OpCapture {
		return lengthPushdown(re.Sub[0], minLen, maxLen)
	}
	if re.Op == syntax.OpAlternate {
		return "", false, nil
	}
	f := splitSearch(re)
	type part struct {
		fixed   string // expression of a fixed-length part
		n       int    // its length
		cls     runeSet
		lo, hi  int // variable part: class repeated lo..hi (-1 unbounded)
		isVar   bool
		isEmpty bool
	}
	var parts []part
	if !f.begin {
		parts = append(parts, part{cls: anyRune, lo: 0, hi: -1, isVar: true})
	}
	for _, m := range f.middle {
		a, b, ok := reLengthRange(m)
		if !ok {
			return "", false, errNoMatch
		}
		if a == b {
			x, err := reExpr(m)
			if err != nil {
				return "", false, err
			}
			parts = append(parts, part{fixed: x, n: a})
			continue
		}
		cls, lo, hi, ok := singleClassRepeat(m)
		if !ok {
			return "", false, nil
		}
		parts = append(parts, part{cls: cls, lo: lo, hi: hi, isVar: true})
	}
	if !f.end {
		parts = append(parts, part{cls: anyRune, lo: 0, hi: -1, isVar: true})
	}
	nvar, fixed := 0, 0
	vi := -1
	for i, p := range parts {
		if p.isVar {
			nvar++
			vi = i
		} else {
			fixed += p.n
		}
	}
	if nvar > 1 {
		// two unanchored ends around a fixed middle: fine only when the
		// bounds do not bind.
		return "", false, nil
	}
	if nvar == 0 {
		if fixed < minLen || (maxLen >= 0 && fixed > maxLen) {
			return "", false, errNoMatch
		}
		x, err := structural(re)
		return x, err == nil, err
	}
	p := parts[vi]
	lo, hi := p.lo, p.hi
	if m := minLen - fixed; m > lo {
		lo = m
	}
	if maxLen >= 0 {
		m := maxLen - fixed
		if m < 0 {
			return "", false, errNoMatch // the fixed parts alone are too long
		}
		if hi < 0 || m < hi {
			hi = m
		}
	}
	if hi >= 0 && lo > hi {
		return "", false, errNoMatch
	}
	var out []string
	for i, q := range parts {
		if i == vi {
			out = append(out, rep(classExpr(q.cls), lo, hi))
		} else {
			out = append(out, q.fixed)
		}
	}
	return seq(out...), true, nil
}

// repeatBounds returns the bounds of a repetition (Star, Plus, Quest or
// Repeat); max is -1 when unbounded.
func repeatBounds(re *syntax.Regexp) (min, max int) {
	switch re.Op {
	case syntax.OpPlus:
		return 1, -1
	case syntax.OpQuest:
		return 0, 1
	case syntax.OpRepeat:
		return re.Min, re.Max
	}
	return 0, -1
}

// singleClassRepeat recognizes C*, C+, C?, C{m,n} for a character class
// (or a single literal character, or .).
func singleClassRepeat(re *syntax.Regexp) (runeSet, int, int, bool) {
	if re.Op == syntax.OpCapture {
		return singleClassRepeat(re.Sub[0])
	}
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
	default:
		return nil, 0, 0, false
	}
	lo, hi := repeatBounds(re)
	sub := re.Sub[0]
	for sub.Op == syntax.OpCapture {
		sub = sub.Sub[0]
	}
	var cls runeSet
	switch sub.Op {
	case syntax.OpCharClass:
		cls = normRunes(sub.Rune)
	case syntax.OpAnyChar:
		cls = anyRune
	case syntax.OpAnyCharNotNL:
		cls = anyRune.minus(runeSet{'\n', '\n'})
	case syntax.OpLiteral:
		if len(sub.Rune) != 1 {
			return nil, 0, 0, false
		}
		cls = runeSet{sub.Rune[0], sub.Rune[0]}
		if sub.Flags&syntax.FoldCase != 0 {
			cls = foldRunes(cls)
		}
	default:
		return nil, 0, 0, false
	}
	if cls.empty() {
		return nil, 0, 0, false
	}
	return cls, lo, hi, true
}

// minChain is the shortest chain of states stepping by one class that
// dfaExpr writes as a counted repetition (shorter ones stay nested groups,
// which mask unrolls anyway).
const minChain = 5

// dfaExpr writes an automaton as grammar rules named base-N and returns
// the expression for its start state. States referenced once and not on
// a cycle are inlined; a self-loop becomes C* in front of the state's
// other alternatives.
//
// Where several states lead into the universal state u (any string from
// there on: what the complement of a pattern or of a set of names is
// made of, e.g. a key that must not match a UUID pattern leaves it at
// every character), the language is written as P kchar* | F, as
// notInSet writes its tries: P the paths that end entering u, F the
// accepted paths that never enter it (disjoint: the automaton is
// deterministic); and P as P' | W wide, where W is the paths to the
// states that every non-ASCII or escaped character takes into u, and P'
// the other paths into u (with the ASCII characters only, at those
// states). Written in place, the tail kchar* appeared once per edge into
// u, and a character of it (non-ASCII or escaped: tens of positions)
// once per state: copies that the mask automaton's construction made
// into tens of states each, merged again only by its minimization
// (JsonSchemaStore/bower: 98 copies, its root frame 4,679 states before
// minimization, 454 after; Github_ultra/o3625's key-3, 1,852 and 53).
func (c *conv) dfaExpr(d *dfa, base string) (string, error) {
	d = d.minimize()
	if d.isEmpty() {
		return "", errNoMatch
	}
	n := len(d.states)
	if n > MaxDFAStates {
		return "", errDFATooBig
	}
	// universal states: accept, all runes to self
	universal := make([]bool, n)
	for i, st := range d.states {
		if st.accept {
			var self []rune
			for _, e := range st.edges {
				if e.to == i {
					self = append(self, e.lo, e.hi)
				}
			}
			universal[i] = normRunes(self).equal(anyRune)
		}
	}
	// references from other states
	refs := make([]int, n)
	refs[0]++ // the caller
	// seen[t] == i+1: state i's edges into t are counted
	seen := make([]int, n)
	for i, st := range d.states {
		for _, e := range st.edges {
			if e.to != i && seen[e.to] != i+1 {
				seen[e.to] = i + 1
				refs[e.to]++
			}
		}
	}
	w := dfaWriter{c: c, d: d, base: base, universal: universal, refs: refs, onCycle: sccCycles(d), u: -1}
	for i := 1; i < n; i++ {
		if universal[i] && refs[i] >= 2 {
			w.u = i // (a minimal automaton has at most one)
		}
	}
	if w.u < 0 || universal[0] {
		return w.write(viewAll), nil
	}
	w.split()
	var leave []string
	if w.reach[viewInto][0] {
		leave = append(leave, w.write(viewInto))
	}
	if w.reach[viewWide][0] {
		leave = append(leave, seq(w.write(viewWide), paren(c.classExpr(kwideFirst))))
	}
	var alts []string
	if len(leave) > 0 {
		alts = append(alts, seq(paren(alt(leave...)), ruleKChar+"*"))
	}
	if w.reach[viewAvoid][0] {
		alts = append(alts, w.write(viewAvoid))
	}
	return paren(alt(alts...)), nil
}

// The views of an automaton that dfaWriter writes (see dfaExpr).
const (
	viewAll   = iota // the automaton's language
	viewInto         // P': the paths that end entering the universal state u (with an ASCII character where viewWide covers the others)
	viewWide         // W: the paths to the states that every non-ASCII or escaped character takes into u
	viewAvoid        // F: the accepted paths that never enter u
	numViews
)

// dfaWriter writes the views of an automaton as grammar rules (dfaExpr).
type dfaWriter struct {
	c         *conv
	d         *dfa
	base      string
	universal []bool
	refs      []int
	onCycle   []bool
	u         int              // the universal state the views other than viewAll split on, or -1
	wideExit  []bool           // per state: every non-ASCII or escaped character takes it into u
	reach     [numViews][]bool // per view other than viewAll and state: the view's language from it is not empty
	names     [numViews][]string
}

// split computes wideExit and reach for u.
func (w *dfaWriter) split() {
	d, u := w.d, w.u
	n := len(d.states)
	// (u's edges all lead back to u, which is never a seed: the searches
	// back from the seeds never reach it)
	at, rev := d.reverse()
	w.wideExit = make([]bool, n)
	var into, wide, acc []int32
	for i, st := range d.states {
		if i == u {
			continue
		}
		if st.accept {
			acc = append(acc, int32(i))
		}
		cls := w.intoU(i)
		if kwideFirst.minus(cls).empty() {
			w.wideExit[i] = true
			wide = append(wide, int32(i))
			cls = cls.minus(kwideFirst)
		}
		if !cls.empty() {
			into = append(into, int32(i))
		}
	}
	if len(wide) < 2 {
		// (one such state: nothing to share)
		for _, i := range wide {
			w.wideExit[i] = false
			into = append(into, i)
		}
		slices.Sort(into)
		into = slices.Compact(into)
		wide = nil
	}
	w.reach[viewInto] = reachBack(at, rev, into)
	w.reach[viewWide] = reachBack(at, rev, wide)
	w.reach[viewAvoid] = reachBack(at, rev, acc)
}

// intoU returns the characters that take state i into u.
func (w *dfaWriter) intoU(i int) runeSet {
	var rs []rune
	for _, e := range w.d.states[i].edges {
		if e.to == w.u {
			rs = append(rs, e.lo, e.hi)
		}
	}
	return normRunes(rs)
}

// write defines the rules of view v and returns the expression for the
// start state.
func (w *dfaWriter) write(v int) string {
	n := len(w.d.states)
	w.names[v] = make([]string, n)
	suffix := [numViews]string{"", "-in", "-wide", "-out"}[v]
	for i := 0; i < n; i++ {
		if w.live(v, i) && (!w.inline(i) || i == 0 && w.onCycle[0]) {
			w.names[v][i] = w.c.rules.fresh(fmt.Sprintf("%s-%d%s", w.base, i, suffix))
		}
	}
	for i := 0; i < n; i++ {
		if w.names[v][i] != "" {
			w.c.rules.define(w.names[v][i], w.body(v, i))
		}
	}
	if w.names[v][0] != "" {
		return w.names[v][0]
	}
	return paren(w.body(v, 0))
}

func (w *dfaWriter) inline(i int) bool {
	return w.universal[i] || (w.refs[i] <= 1 && !w.onCycle[i])
}

// live reports whether view v's language from state i is not empty (u
// itself is no state of the views other than viewAll).
func (w *dfaWriter) live(v, i int) bool {
	if v == viewAll {
		return true
	}
	return i != w.u && w.reach[v][i]
}

// accepts reports whether view v's language from state i has the empty
// string.
func (w *dfaWriter) accepts(v, i int) bool {
	switch v {
	case viewInto:
		return false
	case viewWide:
		return w.wideExit[i]
	}
	return w.d.states[i].accept
}

// edge returns the expression of state i's edges to t (characters cls)
// in view v, "" where the view has none.
func (w *dfaWriter) edge(v, i int, cls runeSet, t int) string {
	if v != viewAll && t == w.u {
		if v != viewInto {
			return ""
		}
		if w.wideExit[i] {
			cls = cls.minus(kwideFirst) // (viewWide's)
		}
		if cls.empty() {
			return ""
		}
		return w.c.classExpr(cls) // the path ends entering u
	}
	if !w.live(v, t) {
		return ""
	}
	return seq(w.c.classExpr(cls), w.expr(v, t))
}

func (w *dfaWriter) expr(v, i int) string {
	if v == viewAll && w.universal[i] {
		return ruleKChar + "*"
	}
	if w.names[v][i] != "" {
		return w.names[v][i]
	}
	return paren(w.body(v, i))
}

// chainStep returns the class and target of a state whose only edges in
// view v go by one class to one other state (ok false otherwise).
func (w *dfaWriter) chainStep(v, i int) (runeSet, int, bool) {
	st := w.d.states[i]
	if len(st.edges) == 0 || w.universal[i] || v == viewInto {
		return nil, 0, false
	}
	to := -1
	var cls []rune
	for _, e := range st.edges {
		if !w.live(v, e.to) {
			continue // (not in the view)
		}
		if to >= 0 && e.to != to || e.to == i {
			return nil, 0, false
		}
		to = e.to
		cls = append(cls, e.lo, e.hi)
	}
	if to < 0 {
		return nil, 0, false
	}
	return normRunes(cls), to, true
}

// kept reports whether view v has an edge of state i (a self-loop
// included).
func (w *dfaWriter) kept(v, i int) bool {
	for _, e := range w.d.states[i].edges {
		if w.live(v, e.to) {
			return true
		}
	}
	return false
}

func (w *dfaWriter) body(v, i int) string {
	st := w.d.states[i]
	// A chain of inlined states that step by the same class, all
	// accepting or none (what a maxLength or minLength makes of a
	// class): a counted repetition, not one nested group per
	// character, so that the grammar keeps one state per class and
	// count instead of one per character.
	if cls, t, ok := w.chainStep(v, i); ok {
		k := 1
		for w.inline(t) && w.names[v][t] == "" && w.accepts(v, t) == w.accepts(v, i) {
			cls2, t2, ok := w.chainStep(v, t)
			if !ok || !cls2.equal(cls) {
				break
			}
			k, t = k+1, t2
		}
		if k >= minChain {
			c1 := w.c.classExpr(cls)
			switch {
			case !w.accepts(v, i):
				return seq(rep(c1, k, k), w.expr(v, t))
			case w.accepts(v, t) && !w.kept(v, t):
				return rep(c1, 0, k)
			default:
				return alt(rep(c1, 0, k-1), seq(rep(c1, k, k), w.expr(v, t)))
			}
		}
	}
	// the edges to other states grouped by target, ascending, each
	// group in edge order
	var self []rune
	out := make([]dfaEdge, 0, len(st.edges))
	for _, e := range st.edges {
		if e.to == i {
			self = append(self, e.lo, e.hi)
			continue
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b dfaEdge) int { return a.to - b.to })
	var alts []string
	for k := 0; k < len(out); {
		t := out[k].to
		var rs []rune
		for ; k < len(out) && out[k].to == t; k++ {
			rs = append(rs, out[k].lo, out[k].hi)
		}
		if x := w.edge(v, i, normRunes(rs), t); x != "" {
			alts = append(alts, x)
		}
	}
	if w.accepts(v, i) {
		alts = append(alts, `""`)
	}
	rest := alt(alts...)
	if len(self) > 0 {
		loop := paren(w.c.classExpr(normRunes(self))) + "*"
		if len(alts) == 1 && alts[0] == `""` {
			return loop
		}
		return seq(loop, paren(rest))
	}
	if rest == "" {
		return `""`
	}
	return rest
}

// sccCycles marks states that lie on a cycle of length ≥ 2 (Tarjan).
func sccCycles(d *dfa) []bool {
	n := len(d.states)
	index := make([]int, n)
	low := make([]int, n)
	on := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	out := make([]bool, n)
	next := 0
	var strong func(v int)
	strong = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		for _, e := range d.states[v].edges {
			w := e.to
			if w == v {
				continue
			}
			if index[w] < 0 {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 {
				for _, w := range comp {
					out[w] = true
				}
			}
		}
	}
	for i := 0; i < n; i++ {
		if index[i] < 0 {
			strong(i)
		}
	}
	return out
}
