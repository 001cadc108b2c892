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
	onCycle := sccCycles(d)
	names := make([]string, n)
	inline := func(i int) bool {
		return universal[i] || (refs[i] <= 1 && !onCycle[i])
	}
	for i := 0; i < n; i++ {
		if !inline(i) || i == 0 && onCycle[0] {
			names[i] = c.rules.fresh(fmt.Sprintf("%s-%d", base, i))
		}
	}
	var body func(i int) string
	expr := func(i int) string {
		if universal[i] {
			return ruleKChar + "*"
		}
		if names[i] != "" {
			return names[i]
		}
		return paren(body(i))
	}
	// chainStep returns the class and target of a state whose only edges
	// go by one class to one other state (ok false otherwise).
	chainStep := func(i int) (runeSet, int, bool) {
		st := d.states[i]
		if len(st.edges) == 0 || universal[i] {
			return nil, 0, false
		}
		to := st.edges[0].to
		var cls []rune
		for _, e := range st.edges {
			if e.to != to || e.to == i {
				return nil, 0, false
			}
			cls = append(cls, e.lo, e.hi)
		}
		return normRunes(cls), to, true
	}
	body = func(i int) string {
		st := d.states[i]
		// A chain of inlined states that step by the same class, all
		// accepting or none (what a maxLength or minLength makes of a
		// class): a counted repetition, not one nested group per
		// character, so that the grammar keeps one state per class and
		// count instead of one per character.
		if cls, t, ok := chainStep(i); ok {
			k := 1
			for inline(t) && names[t] == "" && d.states[t].accept == st.accept {
				cls2, t2, ok := chainStep(t)
				if !ok || !cls2.equal(cls) {
					break
				}
				k, t = k+1, t2
			}
			if k >= minChain {
				c1 := c.classExpr(cls)
				end := d.states[t]
				switch {
				case !st.accept:
					return seq(rep(c1, k, k), expr(t))
				case end.accept && len(end.edges) == 0:
					return rep(c1, 0, k)
				default:
					return alt(rep(c1, 0, k-1), seq(rep(c1, k, k), expr(t)))
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
			alts = append(alts, seq(c.classExpr(normRunes(rs)), expr(t)))
		}
		if st.accept {
			alts = append(alts, `""`)
		}
		rest := alt(alts...)
		if len(self) > 0 {
			loop := paren(c.classExpr(normRunes(self))) + "*"
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
	for i := 0; i < n; i++ {
		if names[i] != "" {
			c.rules.define(names[i], body(i))
		}
	}
	if names[0] != "" {
		return names[0], nil
	}
	return paren(body(0)), nil
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
