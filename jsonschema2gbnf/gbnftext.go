package jsonschema2gbnf

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds the GBNF text layer: quoting of literals and character
// classes, and the rule table the converter fills.

// lit returns s as a GBNF double-quoted literal. Printable characters are
// written as themselves (non-ASCII as raw UTF-8); `"` and `\` are escaped;
// control characters use \xHH (C0, DEL) or \uHHHH (C1 controls, line and
// paragraph separators) so the grammar text stays one line per rule.
func lit(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		writeLitRune(&b, r, false)
	}
	b.WriteByte('"')
	return b.String()
}

func writeLitRune(b *strings.Builder, r rune, inClass bool) {
	switch {
	case r == '"' && !inClass:
		b.WriteString(`\"`)
	case r == '\\':
		b.WriteString(`\\`)
	case inClass && (r == ']' || r == '['):
		b.WriteByte('\\')
		b.WriteRune(r)
	case inClass && r == '-':
		// \x2D, not \-: llama.cpp reads \- only since 2025 (the pinned
		// v0.24.0 rejects it); every version reads \x2D.
		b.WriteString(`\x2D`)
	case inClass && r == '^':
		b.WriteString(`\x5E`)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\t':
		b.WriteString(`\t`)
	case r < 0x20 || r == 0x7f:
		fmt.Fprintf(b, `\x%02X`, r)
	case (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || r == 0xfeff:
		fmt.Fprintf(b, `\u%04X`, r)
	case r > utf8.MaxRune:
		fmt.Fprintf(b, `\U%08X`, r)
	default:
		b.WriteRune(r)
	}
}

// class renders the rune ranges (lo0, hi0, lo1, hi1, ...; sorted,
// non-overlapping) as a GBNF character class. negated writes [^...].
func class(ranges []rune, negated bool) string {
	var b strings.Builder
	b.WriteByte('[')
	if negated {
		b.WriteByte('^')
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		writeLitRune(&b, lo, true)
		if hi > lo {
			if hi > lo+1 {
				b.WriteByte('-')
			}
			writeLitRune(&b, hi, true)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// Shared rule names. Every grammar the converter writes uses these names
// for the pieces that occur in many places, so that a token-mask compiler
// that caches per rule computes each of them once.
const (
	ruleWS      = "ws"        // whitespace between JSON tokens (empty in compact mode)
	ruleValue   = "value"     // any JSON value
	ruleObject  = "object"    // any JSON object
	ruleArray   = "array"     // any JSON array
	ruleString  = "string"    // any JSON string, every encoding
	ruleChar    = "char"      // one string character, every encoding (\u escapes but no surrogates)
	ruleKChar   = "kchar"     // one string character, canonical encoding only
	ruleKEsc    = "kesc"      // the canonical escapes (\" \\ \b \f \n \r \t \u00XX)
	ruleNumber  = "number"    // any JSON number
	ruleInteger = "integer"   // any integer in canonical form
	ruleBoolean = "boolean"   // true | false
	ruleNull    = "null"      // null
	ruleHex     = "hex"       // [0-9a-fA-F]
	ruleFrac    = "frac"      // "." [0-9]+ (bounded: MaxFractionDigits)
	ruleExp     = "exp"       // [eE] [-+]? [0-9]{1,MaxExponentDigits}
	ruleFDigits = "fdigits"   // [0-9]{0,fracTail}: a free run of fraction digits
	ruleFZeros  = "fzeros"    // "0"{0,fracTail}: a run of fraction zeros
	ruleUint    = "uint"      // 0 | [1-9][0-9]*
	ruleNzUint  = "nzuint"    // [1-9][0-9]*
	ruleKey     = "key"       // any object key (canonical encoding)
	ruleFreeKV  = "free-kv"   // "key": value for unconstrained additional properties
	ruleKString = "kstring"   // any string in canonical encoding
	ruleDigits  = "digits"    // [0-9]+
	ruleRoot    = "root"      // the start rule
	ruleEmpty   = "empty-str" // not used as a rule; reserved
)

var reservedNames = map[string]bool{
	ruleWS: true, ruleValue: true, ruleObject: true, ruleArray: true,
	ruleString: true, ruleChar: true, ruleKChar: true, ruleKEsc: true,
	ruleNumber: true, ruleInteger: true, ruleBoolean: true, ruleNull: true,
	ruleHex: true, ruleFrac: true, ruleExp: true, ruleFDigits: true, ruleFZeros: true, ruleUint: true,
	ruleNzUint: true, ruleKey: true, ruleFreeKV: true, ruleKString: true,
	ruleDigits: true, ruleEmpty: true,
}

// ruleTable collects named rules in definition order.
type ruleTable struct {
	bodies map[string]string // name → body ("" while reserved)
	order  []string
	byBody map[string]string // body → name, for rules that may be shared
	next   map[string]int    // base → next numeric suffix to try (keeps fresh linear)
	size   int               // total bytes of rule bodies, checked against MaxGrammarBytes
}

func newRuleTable() *ruleTable {
	return &ruleTable{bodies: map[string]string{}, byBody: map[string]string{}, next: map[string]int{}}
}

// fresh returns an unused rule name derived from base.
func (t *ruleTable) fresh(base string) string {
	base = sanitizeName(base)
	if _, taken := t.bodies[base]; !taken && !reservedNames[base] {
		t.bodies[base] = ""
		t.order = append(t.order, base)
		return base
	}
	for i := max(t.next[base], 2); ; i++ {
		n := base + "-" + strconv.Itoa(i)
		if _, taken := t.bodies[n]; !taken && !reservedNames[n] {
			t.next[base] = i + 1
			t.bodies[n] = ""
			t.order = append(t.order, n)
			return n
		}
	}
}

// define sets the body of a reserved name.
func (t *ruleTable) define(name, body string) {
	t.bodies[name] = body
	t.size += len(name) + len(body) + 6
}

// shared returns the name of a rule with exactly this body, creating it
// (named after base) if none exists yet.
func (t *ruleTable) shared(base, body string) string {
	if n, ok := t.byBody[body]; ok {
		return n
	}
	n := t.fresh(base)
	t.define(n, body)
	t.byBody[body] = n
	return n
}

// drop removes a reserved name that was never referenced.
func (t *ruleTable) drop(name string) {
	delete(t.bodies, name)
	// from the end: the name was reserved recently (by emit, before the
	// rules of its body)
	for i := len(t.order) - 1; i >= 0; i-- {
		if t.order[i] == name {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
}

// text prints the grammar: root first, then the schema rules in
// definition order, then the shared primitives sorted by name.
func (t *ruleTable) text(prims map[string]string) string {
	var b strings.Builder
	// t.size counts each rule's " ::= " and newline; the primitives are
	// a few hundred bytes
	b.Grow(t.size + 1024)
	line := func(name, body string) {
		b.WriteString(name)
		b.WriteString(" ::= ")
		b.WriteString(body)
		b.WriteByte('\n')
	}
	if body, ok := t.bodies[ruleRoot]; ok {
		line(ruleRoot, body)
	}
	for _, n := range t.order {
		if n == ruleRoot {
			continue
		}
		line(n, t.bodies[n])
	}
	names := make([]string, 0, len(prims))
	for n := range prims {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		line(n, prims[n])
	}
	return b.String()
}

// sanitizeName maps s to a GBNF rule name: runs of characters other than
// ASCII letters and digits become one '-', leading and trailing '-' are
// dropped, and the result is cut to maxNameLen bytes.
func sanitizeName(s string) string {
	const maxNameLen = 48 // long enough to read, short enough for one line
	if isName(s, maxNameLen) {
		return s // what the loop below would build
	}
	var b strings.Builder
	dash := false
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= maxNameLen {
				break
			}
		} else {
			dash = true
		}
	}
	n := strings.TrimRight(b.String(), "-")
	if n == "" {
		n = "r"
	}
	return n
}

// isName reports whether s is already a sanitized name: letters and
// digits in words joined by single dashes, at most max bytes.
func isName(s string, max int) bool {
	if s == "" || len(s) > max || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9'):
		case b == '-' && s[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// alt joins alternatives into one expression, parenthesized when needed.
// Duplicate alternatives are removed (first one wins).
func alt(xs ...string) string {
	seen := make(map[string]bool, len(xs))
	var out []string
	for _, x := range xs {
		if x == "" || seen[x] { // "" is "no expression" (the empty string is `""`)
			continue
		}
		seen[x] = true
		out = append(out, x)
	}
	switch len(out) {
	case 0:
		return ""
	case 1:
		return out[0]
	}
	return "(" + strings.Join(out, " | ") + ")"
}

// seq joins parts into a sequence, skipping empty parts; the empty
// sequence is written `""`.
func seq(xs ...string) string {
	var out []string
	for _, x := range xs {
		if x == "" || x == `""` {
			continue
		}
		// merge adjacent literals: "ab" "c" → "abc"
		if n := len(out); n > 0 && isLiteral(out[n-1]) && isLiteral(x) {
			out[n-1] = out[n-1][:len(out[n-1])-1] + x[1:]
			continue
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return `""`
	}
	return strings.Join(out, " ")
}

// writeSeq2 writes seq(x, paren(y)) to b, for x and y that are not ""
// (no expression) and x not `""`, without the strings seq and paren
// would make (the key tries of notInSet write one per trie edge).
func writeSeq2(b *strings.Builder, x, y string) {
	switch {
	case y == `""`:
		b.WriteString(x)
	case isLiteral(x) && isLiteral(y):
		b.WriteString(x[:len(x)-1])
		b.WriteString(y[1:])
	default:
		b.WriteString(x)
		b.WriteByte(' ')
		if isAtom(y) {
			b.WriteString(y)
			return
		}
		b.WriteByte('(')
		b.WriteString(y)
		b.WriteByte(')')
	}
}

// isLiteral reports whether x is exactly one double-quoted literal.
func isLiteral(x string) bool {
	return len(x) >= 2 && x[0] == '"' && closes(x, 0, '"') == len(x)-1
}

// paren parenthesizes x unless it is a single atom.
func paren(x string) string {
	if isAtom(x) {
		return x
	}
	return "(" + x + ")"
}

// isAtom reports whether x is one GBNF element (a name, a literal, a
// class or a parenthesized group) to which a repetition suffix applies.
func isAtom(x string) bool {
	if x == "" {
		return false
	}
	switch x[0] {
	case '"':
		return closes(x, 0, '"') == len(x)-1
	case '[':
		return closes(x, 0, ']') == len(x)-1
	case '(':
		return closes(x, 0, ')') == len(x)-1
	}
	for i := 0; i < len(x); i++ {
		c := x[i]
		if !isNameByte(c) {
			return false
		}
	}
	return true
}

// closes returns the index of the bracket or quote that closes the one
// opened at x[i], honouring escapes, quotes and classes inside groups.
func closes(x string, i int, want byte) int {
	switch want {
	case '"', ']':
		for j := i + 1; j < len(x); j++ {
			if x[j] == '\\' {
				j++
				continue
			}
			if x[j] == want {
				return j
			}
		}
		return -1
	}
	depth := 0
	for j := i; j < len(x); j++ {
		switch x[j] {
		case '"':
			j = closes(x, j, '"')
		case '[':
			j = closes(x, j, ']')
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		}
		if j < 0 {
			return -1
		}
	}
	return -1
}

// Repetition bounds. gbnf.Parse accepts bounds up to 100,000
// (gbnf.MaxRepeat) and nested repetitions whose bounds multiply to at
// most 1,000,000 (gbnf.MaxRepeatProduct); larger counts are written as
// nested blocks of repBlock, which reaches MaxRepeatBound exactly.
const (
	repLimit = 100000
	repBlock = 1000
	// MaxRepeatBound bounds minLength/maxLength/minItems/maxItems (and
	// the like) the grammar writes exactly.
	MaxRepeatBound = repBlock * repBlock
)

// rep writes x{min,max} in the shortest form; max < 0 means unbounded.
func rep(x string, min, max int) string {
	if max == 0 {
		return `""`
	}
	if min > repLimit || max > repLimit {
		return bigRep(x, min, max)
	}
	if min == 1 && max == 1 {
		return x
	}
	g := paren(x)
	switch {
	case min == 0 && max < 0:
		return g + "*"
	case min == 1 && max < 0:
		return g + "+"
	case min == 0 && max == 1:
		return g + "?"
	case max < 0:
		return fmt.Sprintf("%s{%d,}", g, min)
	case min == max:
		return fmt.Sprintf("%s{%d}", g, min)
	}
	return fmt.Sprintf("%s{%d,%d}", g, min, max)
}

// opt writes x? .
func opt(x string) string {
	if x == `""` || x == "" {
		return `""`
	}
	return paren(x) + "?"
}

// bigRep writes x{min,max} with bounds over repLimit as nested blocks:
// x{k} = (x{B}){k/B} x{k%B}, and x{0,M} with M = qB+r as
// (x{B}){0,q-1} x{0,B-1} | (x{B}){q} x{0,r}.
func bigRep(x string, min, max int) string {
	block := paren(x) + fmt.Sprintf("{%d}", repBlock)
	exact := func(k int) string {
		return seq(rep(block, k/repBlock, k/repBlock), rep(x, k%repBlock, k%repBlock))
	}
	upTo := func(m int) string {
		if m <= repLimit {
			return rep(x, 0, m)
		}
		q, r := m/repBlock, m%repBlock
		return alt(seq(rep(block, 0, q-1), rep(x, 0, repBlock-1)), seq(rep(block, q, q), rep(x, 0, r)))
	}
	if max < 0 {
		return seq(exact(min), paren(x)+"*")
	}
	return seq(exact(min), upTo(max-min))
}
