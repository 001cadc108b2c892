package gbnf

import (
	"cmp"
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/structgen/structgen/internal/chunks"
)

// lowerer builds the IR, checking what the syntax cannot: references,
// ranges, code points, repetition bounds and limits. lower walks the
// participle AST; the direct parser (direct.go) calls the same steps as
// it reads the tokens.
type lowerer struct {
	s     *scanner
	errs  errorCollector
	ids   map[string]RuleID
	rules []*Rule
	refs  []*Node // OpRule nodes; resolved at the end
	// repeats are the repetitions of the rule body being lowered, with
	// where their operator is ({, *, + or ?), for errors about them;
	// prod is the product of their factors (repeatFactor), capped above
	// MaxRepeatProduct: no chain of nested ones can pass the limit when
	// it does not.
	repeats []repeatOp
	prod    int

	// literal's and class's buffers
	buf   []rune
	items []classItem

	// The rules, the nodes, their Subs and their Runes and Ranges are
	// cut from chunks: one allocation for many. stack holds the parts of
	// the sequences and alternatives being lowered.
	ruleChunks chunks.Chunks[Rule]
	nodes      chunks.Chunks[Node]
	ptrs       chunks.Chunks[*Node]
	runes      chunks.Chunks[rune]
	stack      []*Node
}

// node returns a new node in the current chunk. The callers fill it in
// place: copying a whole Node in costs a write barrier over all its
// pointer fields while the collector runs (bulkBarrierPreWrite, a sixth
// of Parse's instructions on Handwritten/allany20's grammar).
func (l *lowerer) node(op Op, p Pos) *Node {
	n := &l.nodes.Take(1)[0]
	n.Op, n.Pos = op, p
	return n
}

// subs moves stack[base:] into a slice of its own.
func (l *lowerer) subs(base int) []*Node {
	out := l.ptrs.Take(len(l.stack) - base)
	copy(out, l.stack[base:])
	l.stack = l.stack[:base]
	return out
}

func newLowerer(s *scanner) *lowerer {
	return &lowerer{s: s, ids: map[string]RuleID{}}
}

type repeatOp struct {
	n  *Node
	op Pos
}

// pos is the position of an AST node: its first token's, which the
// scanner computed with posAt.
func (l *lowerer) pos(p lexer.Position) Pos {
	return Pos{Offset: p.Offset, Line: p.Line, Col: p.Column}
}

func (l *lowerer) lower(ast *astGrammar, root string) *Grammar {
	if len(ast.Rules) == 0 {
		l.errs.add(Pos{Line: 1, Col: 1}, "grammar has no rules")
		return nil
	}
	// Rules get ids in the order of their first definition. As in
	// llama.cpp, a later definition of the same name replaces the
	// earlier one.
	for _, ar := range ast.Rules {
		if l.declare(ar.Name, l.pos(ar.Pos)) == nil {
			return nil
		}
	}
	for _, ar := range ast.Rules {
		r := l.rules[l.ids[ar.Name]]
		r.Pos = l.pos(ar.Pos)
		l.startBody()
		r.Body = l.alts(ar.Body, 0)
		l.checkBody(r.Body)
	}
	return l.finish(root)
}

// declare returns the rule named name, giving it the next id if it has
// none yet; nil (and an error at p) when that would pass MaxRules.
func (l *lowerer) declare(name string, p Pos) *Rule {
	if id, ok := l.ids[name]; ok {
		return l.rules[id]
	}
	if len(l.rules) >= MaxRules {
		l.errs.add(p, "more than %d rules (MaxRules)", MaxRules)
		return nil
	}
	r := &l.ruleChunks.Take(1)[0]
	r.ID, r.Name = RuleID(len(l.rules)), name
	l.ids[name] = r.ID
	l.rules = append(l.rules, r)
	return r
}

// startBody readies the repetition bookkeeping for a rule body.
func (l *lowerer) startBody() { l.repeats, l.prod = l.repeats[:0], 1 }

// checkBody enforces MaxRepeatProduct on a lowered rule body (nil after
// an error); false when it is over.
func (l *lowerer) checkBody(body *Node) bool {
	return body == nil || l.prod <= MaxRepeatProduct || l.checkRepeatProduct(body, 1)
}

// finish resolves the rule references and the root.
func (l *lowerer) finish(root string) *Grammar {
	for _, n := range l.refs {
		id, ok := l.ids[n.TokenText]
		if !ok {
			l.errs.add(n.Pos, "undefined rule %q", n.TokenText)
			continue
		}
		n.Rule, n.TokenText = id, ""
	}
	rid, ok := l.ids[root]
	if !ok {
		l.errs.add(Pos{Line: 1, Col: 1}, "no rule named %q (the root rule)", root)
	}
	return &Grammar{Rules: l.rules, Root: rid}
}

func (l *lowerer) depthErr(p Pos, depth int) bool {
	if depth > MaxDepth {
		l.errs.add(p, "groups and repetitions nested more than %d deep (limit MaxDepth)", MaxDepth)
		return true
	}
	return false
}

// depth counts the enclosing groups and repetitions (MaxDepth).
func (l *lowerer) alts(a *astAlts, depth int) *Node {
	p := l.pos(a.Pos)
	if l.depthErr(p, depth) {
		return nil
	}
	base := len(l.stack)
	for _, sq := range a.Seqs {
		n := l.seq(sq, depth)
		if n == nil {
			l.stack = l.stack[:base]
			return nil
		}
		l.addAlt(n)
	}
	return l.endAlts(base, p)
}

// addAlt pushes alternative n; a group of alternatives is spliced.
func (l *lowerer) addAlt(n *Node) {
	if n.Op == OpAlt {
		l.stack = append(l.stack, n.Subs...)
	} else {
		l.stack = append(l.stack, n)
	}
}

// endAlts pops the alternatives pushed since base, as one node at p.
func (l *lowerer) endAlts(base int, p Pos) *Node {
	if len(l.stack)-base == 1 {
		n := l.stack[base]
		l.stack = l.stack[:base]
		return n
	}
	n := l.node(OpAlt, p)
	n.Subs = l.subs(base)
	return n
}

func (l *lowerer) seq(sq *astSeq, depth int) *Node {
	base := len(l.stack)
	for i := range sq.Items {
		n := l.item(&sq.Items[i], depth)
		if n == nil {
			l.stack = l.stack[:base]
			return nil
		}
		l.addPart(n)
	}
	// The sequence starts at its first item's token, if it has any.
	return l.endSeq(base, l.pos(sq.Pos))
}

// addPart pushes the sequence part n: "" adds nothing, a sequence is
// spliced.
func (l *lowerer) addPart(n *Node) {
	switch n.Op {
	case OpEmpty:
	case OpSeq:
		l.stack = append(l.stack, n.Subs...)
	default:
		l.stack = append(l.stack, n)
	}
}

// endSeq pops the parts pushed since base, as one node; a sequence that
// starts at p and has no parts is OpEmpty at p.
func (l *lowerer) endSeq(base int, p Pos) *Node {
	switch len(l.stack) - base {
	case 0:
		return l.node(OpEmpty, p)
	case 1:
		n := l.stack[base]
		l.stack = l.stack[:base]
		return n
	}
	n := l.node(OpSeq, l.stack[base].Pos)
	n.Subs = l.subs(base)
	return n
}

func (l *lowerer) item(it *astItem, depth int) *Node {
	if l.depthErr(l.pos(it.Primary.Pos), depth+len(it.Post)) {
		return nil
	}
	n := l.primary(&it.Primary, depth+len(it.Post))
	for i := range it.Post {
		if n == nil {
			break
		}
		pf := &it.Post[i]
		n = l.repeat(n, pf.Kind, l.pos(pf.Pos), pf.Min, pf.Max, pf.Comma)
	}
	return n
}

// repeat wraps n in the repetition whose operator (tkStar, tkPlus,
// tkQuestion, or tkLBrace for {lo}, {lo,} with comma, {lo,hi}) is at op.
func (l *lowerer) repeat(n *Node, kind lexer.TokenType, op Pos, lo, hi string, comma bool) *Node {
	l.stack = append(l.stack, n)
	r := l.node(OpRepeat, n.Pos)
	r.Subs = l.subs(len(l.stack) - 1)
	l.repeats = append(l.repeats, repeatOp{r, op})
	switch kind {
	case tkStar:
		r.Min, r.Max = 0, Unbounded
	case tkPlus:
		r.Min, r.Max = 1, Unbounded
	case tkQuestion:
		r.Min, r.Max = 0, 1
	default:
		var ok bool
		if r.Min, ok = parseBound(lo); !ok {
			l.errs.add(op, "repetition bound %s is over the limit %d (MaxRepeat)", lo, MaxRepeat)
			return nil
		}
		r.Max = r.Min
		if comma {
			r.Max = Unbounded
			if hi != "" {
				if r.Max, ok = parseBound(hi); !ok {
					l.errs.add(op, "repetition bound %s is over the limit %d (MaxRepeat)", hi, MaxRepeat)
					return nil
				}
				if r.Max < r.Min {
					l.errs.add(op, "repetition {%d,%d} has its minimum above its maximum", r.Min, r.Max)
					return nil
				}
			}
		}
	}
	if l.prod <= MaxRepeatProduct {
		l.prod *= repeatFactor(r)
	}
	return r
}

func (l *lowerer) primary(pr *astPrimary, depth int) *Node {
	if pr.Kind == tkLParen {
		return l.alts(pr.Group, depth+1)
	}
	return l.leaf(pr.Kind, l.pos(pr.Pos), pr.Text)
}

// leaf lowers an element of one token: its kind (tkString, tkClass,
// tkDot, tkTokenRef or tkName) and source text, at p.
func (l *lowerer) leaf(kind lexer.TokenType, p Pos, text string) *Node {
	switch kind {
	case tkString:
		return l.literal(text, p)
	case tkClass:
		return l.class(p.Offset, p)
	case tkDot:
		n := l.node(OpClass, p)
		n.Negated = true
		return n
	case tkTokenRef:
		ref, _, _ := scanTokenRef(l.s.src, p.Offset) // checked by the scanner
		n := l.node(OpToken, p)
		n.Negated, n.Token = ref.negated, int32(ref.id)
		if ref.byText {
			n.Token = -1
			n.TokenText = ref.text
		}
		return n
	case tkName:
		// The name waits in TokenText until all rules are known.
		n := l.node(OpRule, p)
		n.TokenText = text
		l.refs = append(l.refs, n)
		return n
	}
	// Unreachable: astItem.Parse and the direct parser read only these.
	l.errs.add(p, "internal error: empty element")
	return nil
}

// scalar reports whether r is a Unicode scalar value (what UTF-8 text can hold).
func scalar(r rune) bool {
	return 0 <= r && r <= unicode.MaxRune && (r < 0xD800 || r > 0xDFFF)
}

func (l *lowerer) badRune(off int, r rune) {
	if 0xD800 <= r && r <= 0xDFFF {
		l.errs.add(l.s.posAt(off), "U+%04X is a surrogate, not a Unicode scalar value: UTF-8 text cannot contain it", r)
		return
	}
	l.errs.add(l.s.posAt(off), "U+%X is above U+10FFFF, the largest code point", r)
}

// literal lowers the string literal text (quotes included) at p.
func (l *lowerer) literal(text string, p Pos) *Node {
	body, off := text[1:len(text)-1], p.Offset+1
	if body == "" {
		return l.node(OpEmpty, p)
	}
	runes := l.buf[:0]
	ok := true
	for i := 0; i < len(body); {
		if plainChar(body[i]) {
			runes = append(runes, rune(body[i]))
			i++
			continue
		}
		c, next, _ := scanChar(l.s.src, off+i) // checked by the scanner
		if !scalar(c.r) {
			l.badRune(c.off, c.r)
			ok = false
		}
		runes = append(runes, c.r)
		i = next - off
	}
	l.buf = runes
	if !ok {
		return nil
	}
	n := l.node(OpLiteral, p)
	n.Runes = l.runes.Take(len(runes))
	copy(n.Runes, runes)
	return n
}

func (l *lowerer) class(off int, p Pos) *Node {
	items, negated, _, _ := scanClass(l.s.src, off, l.items[:0]) // checked by the scanner
	l.items = items
	if len(items) == 0 {
		l.errs.add(p, "empty character class")
		return nil
	}
	ranges := l.buf[:0]
	ok := true
	for _, it := range items {
		lo, hi := it.lo.r, it.hi.r
		if !it.isRange {
			if !scalar(lo) {
				l.badRune(it.lo.off, lo)
				ok = false
				continue
			}
			ranges = append(ranges, lo, lo)
			continue
		}
		if lo > hi {
			l.errs.add(l.s.posAt(it.lo.off), "inverted range %s-%s in character class", quoteRune(lo), quoteRune(hi))
			ok = false
			continue
		}
		// A range may span surrogates or end above U+10FFFF: only its
		// scalar values are kept. A range with none is an error.
		n := len(ranges)
		ranges = appendScalarRanges(ranges, lo, hi)
		if len(ranges) == n {
			l.errs.add(l.s.posAt(it.lo.off), "range %s-%s holds no Unicode scalar value", quoteRune(lo), quoteRune(hi))
			ok = false
			continue
		}
	}
	l.buf = ranges
	if !ok {
		return nil
	}
	if !normalized(ranges) {
		ranges = NormalizeRanges(ranges)
	}
	out := l.runes.Take(len(ranges))
	copy(out, ranges)
	n := l.node(OpClass, p)
	n.Negated, n.Ranges = negated, out
	return n
}

// scalarRanges returns the scalar values of [lo, hi] as ranges.
func scalarRanges(lo, hi rune) []rune { return appendScalarRanges(nil, lo, hi) }

// appendScalarRanges appends the scalar values of [lo, hi] as ranges to out.
func appendScalarRanges(out []rune, lo, hi rune) []rune {
	if hi > unicode.MaxRune {
		hi = unicode.MaxRune
	}
	if lo < 0 {
		lo = 0
	}
	if lo <= hi && lo < 0xD800 {
		out = append(out, lo, min(hi, 0xD7FF))
	}
	if hi > 0xDFFF && lo <= hi {
		out = append(out, max(lo, 0xE000), hi)
	}
	return out
}

// NormalizeRanges sorts the inclusive ranges lo0, hi0, lo1, hi1, ... and
// merges overlapping and adjacent ones. It does not modify its argument.
func NormalizeRanges(r []rune) []rune {
	out := make([]rune, 0, len(r))
	if normalized(r) { // the common case: nothing to sort or merge
		return append(out, r[:len(r)&^1]...)
	}
	type rng struct{ lo, hi rune }
	rs := make([]rng, 0, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		rs = append(rs, rng{r[i], r[i+1]})
	}
	slices.SortFunc(rs, func(a, b rng) int { return cmp.Compare(a.lo, b.lo) })
	for _, x := range rs {
		n := len(out)
		if n > 0 && x.lo <= out[n-1]+1 {
			if x.hi > out[n-1] {
				out[n-1] = x.hi
			}
			continue
		}
		out = append(out, x.lo, x.hi)
	}
	return out
}

// normalized reports whether the ranges r are sorted, each lo <= hi, and
// neither overlap nor touch.
func normalized(r []rune) bool {
	for i := 0; i+1 < len(r); i += 2 {
		if r[i] > r[i+1] || i > 0 && r[i] <= r[i-1]+1 {
			return false
		}
	}
	return true
}

// ComplementRanges returns the Unicode scalar values not in the normalized
// ranges r, as normalized ranges.
func ComplementRanges(r []rune) []rune {
	var out []rune
	next := rune(0)
	for i := 0; i+1 < len(r); i += 2 {
		if r[i] > next {
			out = append(out, scalarRanges(next, r[i]-1)...)
		}
		next = r[i+1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, scalarRanges(next, unicode.MaxRune)...)
	}
	return NormalizeRanges(out)
}

func quoteRune(r rune) string {
	if r < utf8.RuneSelf && r > 0x20 && r < 0x7f {
		return string(r)
	}
	return fmt.Sprintf("U+%04X", r)
}

// repeatFactor is what a repetition contributes to MaxRepeatProduct.
func repeatFactor(n *Node) int {
	f := n.Max
	if f == Unbounded {
		f = n.Min
	}
	return max(f, 1)
}

// opPos is where the operator of repetition n is.
func (l *lowerer) opPos(n *Node) Pos {
	for _, r := range l.repeats {
		if r.n == n {
			return r.op
		}
	}
	return n.Pos
}

// checkRepeatProduct enforces MaxRepeatProduct along every chain of
// nested repetitions of one rule body.
func (l *lowerer) checkRepeatProduct(n *Node, prod int) bool {
	if n.Op == OpRepeat {
		prod *= repeatFactor(n)
		if prod > MaxRepeatProduct {
			l.errs.add(l.opPos(n), "nested repetitions multiply to more than %d (limit MaxRepeatProduct); reduce the bounds or the nesting", MaxRepeatProduct)
			return false
		}
	}
	for _, sub := range n.Subs {
		if !l.checkRepeatProduct(sub, prod) {
			return false
		}
	}
	return true
}
