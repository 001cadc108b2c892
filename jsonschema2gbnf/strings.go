package jsonschema2gbnf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// quoted wraps a string-body expression in JSON quotes.
func quoted(body string) string { return seq(`"\""`, body, `"\""`) }

// emitString writes the strings a node allows.
func (c *conv) emitString(n *node) string {
	var notStrs []string
	for _, v := range n.ex.notVals {
		if s, ok := v.(string); ok {
			notStrs = append(notStrs, s)
		}
	}
	sort.Strings(notStrs)
	minLen, maxLen := n.minLen, n.maxLen
	if maxLen >= 0 && minLen > maxLen {
		return ""
	}
	hasLen := minLen > 0 || maxLen >= 0
	var langs []patRef // patterns and formats with a grammar
	for _, p := range n.pats {
		langs = append(langs, p)
	}
	for _, f := range n.fmts {
		re, ok := formatRegex(f.src)
		if !ok {
			if !c.unsupported(f.ptr, "format", noGrammar(f.src)) {
				return ""
			}
			continue
		}
		langs = append(langs, patRef{re, f.ptr})
	}
	if len(langs) == 0 && len(n.ex.notPats) == 0 && len(notStrs) == 0 {
		if !hasLen {
			return c.prim(ruleString)
		}
		return c.rules.shared(fmt.Sprintf("string-%d-%d", minLen, maxLen), quoted(rep(c.prim(ruleChar), minLen, maxLen)))
	}
	key := memoKey(fmt.Sprintf("str|%d|%d", minLen, maxLen), langSrcs(langs), langSrcs(n.ex.notPats), notStrs)
	if x, ok := c.keyLangs[key]; ok {
		return x
	}
	base := "string"
	if len(n.fmts) > 0 {
		base = n.fmts[0].src
	} else if len(n.pats) > 0 {
		base = nameFor(n.pats[0].ptr)
	}
	x := c.stringLang(langs, n.ex.notPats, notStrs, minLen, maxLen, base, n.ptr)
	if x != "" {
		x = c.rules.shared(base, quoted(x))
	}
	c.keyLangs[key] = x
	return x
}

// memoKey returns a key for c.keyLangs: the kind (without a NUL byte)
// and a NUL, then each list with its length and each string's (the same
// key for the same arguments only; quoting every name with %q was 1% of
// the conversions of the compile p95 band).
func memoKey(kind string, lists ...[]string) string {
	n := len(kind) + 1
	for _, l := range lists {
		for _, x := range l {
			n += len(x) + 2
		}
		n += 2
	}
	b := make([]byte, 0, n)
	b = append(append(b, kind...), 0)
	for _, l := range lists {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, x := range l {
			b = binary.AppendUvarint(b, uint64(len(x)))
			b = append(b, x...)
		}
	}
	return string(b)
}

func langSrcs(ps []patRef) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.src)
	}
	return out
}

// stringLang returns the expression (without quotes) for the strings in
// every language of langs, in none of notPats and notStrs, with length
// in [minLen, maxLen]. "" when empty or not expressible (then an error
// or warning has been recorded).
func (c *conv) stringLang(langs, notPats []patRef, notStrs []string, minLen, maxLen int, base, ptr string) string {
	hasLen := minLen > 0 || maxLen >= 0
	var res []*syntax.Regexp
	var srcs []string // of res
	for _, l := range langs {
		re, err := parsePattern(l.src)
		if err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				le.Pointer = joinPointer(l.ptr, "pattern")
				c.fail(le)
				return ""
			}
			if !c.unsupported(l.ptr, "pattern", err.Error()) {
				return ""
			}
			continue
		}
		res = append(res, re)
		srcs = append(srcs, l.src)
	}
	if len(res) == 0 && len(notPats) == 0 && len(notStrs) == 0 {
		if !hasLen {
			return c.prim(ruleKChar) + "*"
		}
		return rep(c.prim(ruleKChar), minLen, maxLen)
	}
	// structural: one language, nothing subtracted
	if len(res) == 1 && len(notPats) == 0 && len(notStrs) == 0 {
		re := res[0]
		if !hasLen {
			x, err := structural(re)
			switch err {
			case nil:
				return x
			case errNoMatch:
				return ""
			}
		} else {
			x, ok, err := lengthPushdown(re, minLen, maxLen)
			if err == errNoMatch {
				return ""
			}
			if err == nil && ok {
				return x
			}
			// Lengths the pattern implies (minLength 1 on ^\S+…$) need no
			// automaton: its product would unroll the pattern's counted
			// repetitions into one state per count.
			if lo, hi, ok := searchLengthRange(re); ok && lo >= minLen && (maxLen < 0 || (hi >= 0 && hi <= maxLen)) {
				if x, err := structural(re); err == nil {
					return x
				}
			}
		}
	}
	// the automaton; in lenient mode a constraint that makes it too big
	// is dropped (with a warning), in strict mode it is an error
	tooBig := fmt.Sprintf("the combined string language needs more than %d automaton states", MaxDFAStates)
	var d *dfa
	for i, re := range res {
		rd, err := c.patternDFA(srcs[i], re)
		if err == nil && d != nil {
			rd, err = c.intersect(d, rd)
		}
		if !c.work(rd, ptr) {
			return ""
		}
		if err != nil {
			if !c.unsupported(langs[i].ptr, "pattern", tooBig) {
				return ""
			}
			continue
		}
		d = rd
	}
	if d == nil {
		d = dfaAll(nil)
	}
	if hasLen {
		lo, hi, ok := d.lengthRange()
		if !ok {
			return ""
		}
		if lo < minLen || (maxLen >= 0 && (hi < 0 || hi > maxLen)) {
			ld, err := c.lengthDFA(minLen, maxLen)
			if err == nil {
				ld, err = c.intersect(d, ld)
			}
			if !c.work(ld, ptr) {
				return ""
			}
			if err != nil {
				kw := "maxLength"
				if maxLen < 0 {
					kw = "minLength"
				}
				if !c.unsupported(ptr, kw, tooBig) {
					return ""
				}
				// Lenient, the length dropped: a lone pattern stays
				// structural (its automaton unrolls counted repetitions).
				if len(res) == 1 && len(notPats) == 0 && len(notStrs) == 0 {
					if x, err := structural(res[0]); err == nil {
						return x
					}
				}
			} else {
				d = ld
			}
		}
	}
	for _, p := range notPats {
		nd, err := c.patternDFA(p.src, nil)
		if err == nil && disjointDFA(d, nd) {
			continue // nothing of d to take away
		}
		if err == nil {
			nd, err = c.minus(d, nd)
		}
		if !c.work(nd, ptr) {
			return ""
		}
		if err != nil {
			if !c.unsupported(p.ptr, "not", tooBig) {
				return ""
			}
			continue
		}
		d = nd
	}
	// only the strings d accepts are to be taken away (a key pattern
	// excludes few of an object's declared names, often none)
	var in []string
	for _, s := range notStrs {
		if d.matches(s) {
			in = append(in, s)
		}
	}
	if len(in) > 0 {
		nd, err := minusDFA(d, dfaStrings(in))
		if err != nil {
			if !c.unsupported(ptr, "not", tooBig) {
				return ""
			}
		} else {
			d = nd
		}
	}
	x, err := c.dfaExpr(d, base)
	if err == errNoMatch {
		return ""
	}
	if err != nil {
		c.unsupported(ptr, "pattern", tooBig)
		return ""
	}
	return x
}

// keyLang returns the expression (with quotes) for object keys: any
// string except the given names, restricted to the given patterns (all
// must match) and excluding the given patterns. "" when empty.
func (c *conv) keyLang(include, exclude []patRef, names []string, ptr string) string {
	names = append([]string(nil), names...)
	sort.Strings(names)
	key := memoKey("key", langSrcs(include), langSrcs(exclude), names)
	if x, ok := c.keyLangs[key]; ok {
		return x
	}
	var x string
	if len(include) == 0 && len(exclude) == 0 && len(names) == 0 {
		x = c.prim(ruleKString)
	} else if len(include) == 0 && len(exclude) == 0 {
		x = quoted(c.notInSet(names))
	} else {
		body := c.stringLang(include, exclude, names, 0, -1, "key", ptr)
		if body != "" {
			x = c.rules.shared("key", quoted(body))
		}
	}
	c.keyLangs[key] = x
	return x
}

// work charges the states of an automaton built to the conversion's
// budget (MaxDFAWork); false when it is spent (a LimitError is recorded).
func (c *conv) work(d *dfa, ptr string) bool {
	if d != nil {
		c.dfaWork += len(d.states)
	}
	if c.dfaWork > MaxDFAWork {
		c.fail(&LimitError{Pointer: ptr, Limit: "MaxDFAWork", Value: c.dfaWork, Max: MaxDFAWork})
		return false
	}
	return true
}

// notInSet returns an expression for the strings (canonical encoding,
// without quotes) that are not in the set. A string is not in the set iff
// it leaves the trie of the set — a path of the trie, then a character
// that continues no key there, then anything — or it ends at a node of
// the trie that is not a key. Written that way, the free tail (kchar*)
// appears once instead of once per node of the trie: as an automaton, the
// tries advance together and every way out of them reaches the same tail
// (one copy per node costs tens of automaton states each and was most of
// the compile time of large schemas with additionalProperties: false).
// The trie rules are shared over the whole grammar, keyed by the set of
// suffixes still excluded: objects that declare the same names (or names
// with common tails) share them.
func (c *conv) notInSet(set []string) string {
	set = dedup(append([]string(nil), set...))
	sort.Strings(set)
	all := c.prim(ruleKChar) + "*"
	if len(set) == 0 {
		return all
	}
	if len(set) == 1 && set[0] == "" {
		return seq(c.prim(ruleKChar), all)
	}
	// The set's trie node identifies it (keyTries).
	root := c.keyTries.node(set, 0)
	if x, ok := c.notIn[root]; ok {
		return x
	}
	// Leaving the trie: with an ASCII character (per node), or with any
	// character that is non-ASCII or escaped (the same set at almost every
	// node, so written once after the trie paths where it applies).
	leave := c.keyTrie(trieLeave, root)
	if wide := c.keyTrie(trieWide, root); wide != "" {
		leave = alt(leave, seq(paren(wide), paren(encClass(kwideFirst))))
	}
	x := alt(seq(paren(leave), all), c.keyTrie(trieInner, root))
	name := c.rules.fresh("not-key")
	c.rules.define(name, x)
	c.notIn[root] = name
	return name
}

// The tries of notInSet.
const (
	trieLeave = iota // the trie paths followed by a character that starts no key suffix there (the non-ASCII and escaped ones only where trieWide does not cover them)
	trieWide         // the trie paths where every non-ASCII or escaped character starts no key suffix
	trieInner        // the trie paths that are not keys
)

// keyTries holds the tries of notInSet for one conversion, hash-consed:
// a node is its suffix set (the key suffixes below it), numbered once, so
// equal sets anywhere in the grammar (objects that declare the same
// names, or names with common tails) are one node and share their rules.
// A node is identified by whether it ends a key and its (character,
// child) pairs, which is the same as identifying it by its suffix set
// without spelling the set out at every node (that was quadratic in the
// key lengths).
type keyTries struct {
	ids   map[string]int32 // node signature → id
	nodes []trieNode
	exprs map[[2]int32]string // (kind, node) → keyTrie's expression
	leave map[string]string   // a node's first characters → leaveClass's expression
}

type trieNode struct {
	isKey  bool    // the empty suffix is in the set
	firsts []rune  // the first characters of the other suffixes, ascending
	kids   []int32 // the node of the suffixes after each first character
}

// node returns the node of the suffixes at byte offset off of set (sorted,
// without duplicates; every string shares its first off bytes).
func (t *keyTries) node(set []string, off int) int32 {
	var n trieNode
	for len(set) > 0 && len(set[0]) == off {
		n.isKey = true // sorted: the shortest string comes first
		set = set[1:]
	}
	for i := 0; i < len(set); {
		r, size := utf8.DecodeRuneInString(set[i][off:])
		j := i + 1
		for j < len(set) {
			if r2, size2 := utf8.DecodeRuneInString(set[j][off:]); r2 != r || size2 != size {
				break
			}
			j++
		}
		n.firsts = append(n.firsts, r)
		n.kids = append(n.kids, t.node(set[i:j], off+size))
		i = j
	}
	sig := make([]byte, 1, 1+10*len(n.kids))
	if n.isKey {
		sig[0] = 1
	}
	for i, r := range n.firsts {
		sig = binary.AppendUvarint(sig, uint64(r))
		sig = binary.AppendUvarint(sig, uint64(n.kids[i]))
	}
	if id, ok := t.ids[string(sig)]; ok {
		return id
	}
	if t.ids == nil {
		t.ids = map[string]int32{}
		t.exprs = map[[2]int32]string{}
	}
	id := int32(len(t.nodes))
	t.ids[string(sig)] = id
	t.nodes = append(t.nodes, n)
	return id
}

// keyTrie returns one of the tries of notInSet for the key suffixes of
// node id, or "" when it is empty.
func (c *conv) keyTrie(kind int, id int32) string {
	key := [2]int32{int32(kind), id}
	if x, ok := c.keyTries.exprs[key]; ok {
		return x
	}
	n := c.keyTries.nodes[id]
	var b strings.Builder
	alts := 0
	sep := func() {
		if alts > 0 {
			b.WriteString(" | ")
		}
		alts++
	}
	switch kind {
	case trieLeave:
		if others := c.leaveClass(n.firsts); others != "" {
			sep()
			b.WriteString(others)
		}
	case trieWide:
		if wideHere(n.firsts) {
			sep()
			b.WriteString(`""`)
		}
	case trieInner:
		if !n.isKey {
			sep()
			b.WriteString(`""`)
		}
	}
	for i, r := range n.firsts {
		if sub := c.keyTrie(kind, n.kids[i]); sub != "" {
			sep()
			writeSeq2(&b, encClass(runeSet{r, r}), sub)
		}
	}
	var x string
	switch {
	case alts == 0:
	case b.Len() <= maxInlineTrie:
		x = b.String()
	default:
		x = c.rules.fresh("not-key")
		c.rules.define(x, b.String())
	}
	c.keyTries.exprs[key] = x
	return x
}

// wideHere reports whether every non-ASCII or escaped character starts
// no key suffix at a trie node with these first characters.
func wideHere(firsts []rune) bool {
	for _, r := range firsts {
		if kwideFirst.has(r) {
			return false
		}
	}
	return true
}

// leaveClass returns the expression of the characters that start no key
// suffix at a trie node with these first characters (without the
// non-ASCII and escaped ones where the wide trie covers them), or "".
// Memoized by the first characters: nodes repeat them (every node of a
// chain of one name has a single first character).
func (c *conv) leaveClass(firsts []rune) string {
	var kb [64]byte
	k := kb[:0]
	for _, r := range firsts {
		k = binary.AppendUvarint(k, uint64(r))
	}
	if x, ok := c.keyTries.leave[string(k)]; ok {
		return x
	}
	rs := make([]rune, 0, 2*len(firsts))
	for _, r := range firsts {
		rs = append(rs, r, r)
	}
	others := normRunes(rs).complement()
	if wideHere(firsts) {
		others = others.minus(kwideFirst)
	}
	x := ""
	if !others.empty() {
		x = c.classExpr(others)
	}
	if c.keyTries.leave == nil {
		c.keyTries.leave = map[string]string{}
	}
	c.keyTries.leave[string(k)] = x
	return x
}

// maxInlineTrie is the longest expression of a trie node written in place
// rather than as a rule of its own (a chain of such nodes nests in
// parentheses; the limit keeps the nesting, and the text, bounded). Up to
// stop 35 only nodes of one alternative were written in place, and a
// name's chain of nodes (each "any character but the next one, or the
// next one") was a rule per character: 86% of the rules and 64% of the
// text of the JSONSchemaBench grammars ranked about 95th percentile by
// compile time. Written in place, the text is 22% shorter, and their
// conversion 3.5%, parse 9% and compile 1% faster (best of three
// alternated runs).
const maxInlineTrie = 64

// setKey returns a map key for a sorted set of names: each name with its
// length in front, so that no two sets share a key (names may hold any
// character: joined with a separator, "a","b" and "a\x00b" would).
func setKey(names []string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(strconv.Itoa(len(n)))
		b.WriteByte(':')
		b.WriteString(n)
	}
	return b.String()
}
