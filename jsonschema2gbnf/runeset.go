package jsonschema2gbnf

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// runeSet is a set of Unicode scalar values as sorted, non-overlapping,
// non-adjacent inclusive ranges lo0, hi0, lo1, hi1, ... It never holds
// surrogates (U+D800–U+DFFF): a JSON string decodes to valid UTF-8.
type runeSet []rune

const (
	surrogateLo = 0xD800
	surrogateHi = 0xDFFF
)

// anyRune is every scalar value.
var anyRune = runeSet{0, surrogateLo - 1, surrogateHi + 1, unicode.MaxRune}

// normRunes sorts and merges ranges (pairs) and removes surrogates.
func normRunes(rs []rune) runeSet {
	for i := 2; i+1 < len(rs); i += 2 {
		if rs[i] < rs[i-2] {
			type iv struct{ lo, hi rune }
			ivs := make([]iv, 0, len(rs)/2)
			for k := 0; k+1 < len(rs); k += 2 {
				ivs = append(ivs, iv{rs[k], rs[k+1]})
			}
			sort.Slice(ivs, func(a, b int) bool { return ivs[a].lo < ivs[b].lo })
			sorted := make([]rune, 0, 2*len(ivs))
			for _, v := range ivs {
				sorted = append(sorted, v.lo, v.hi)
			}
			return normSorted(sorted)
		}
	}
	return normSorted(rs)
}

// normSorted is normRunes for ranges already sorted by their low end
// (the common case: the ranges of a set or of a state's edges), in one
// pass. A range cut at the surrogates leaves its upper part last; a
// later range starts no lower than the cut one, so what it adds below
// the surrogates is covered already, and the rest merges with that last
// part.
func normSorted(rs []rune) runeSet {
	out := make(runeSet, 0, len(rs)+2)
	add := func(lo, hi rune) {
		n := len(out)
		if n > 0 && lo <= out[n-1]+1 {
			if hi > out[n-1] {
				out[n-1] = hi
			}
			return
		}
		out = append(out, lo, hi)
	}
	for i := 0; i+1 < len(rs); i += 2 {
		lo, hi := rs[i], rs[i+1]
		if lo < 0 {
			lo = 0
		}
		if hi > unicode.MaxRune {
			hi = unicode.MaxRune
		}
		if lo > hi {
			continue
		}
		if lo <= surrogateHi && hi >= surrogateLo {
			if lo < surrogateLo {
				add(lo, surrogateLo-1)
			}
			if hi > surrogateHi {
				add(surrogateHi+1, hi)
			}
			continue
		}
		add(lo, hi)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (s runeSet) empty() bool { return len(s) == 0 }

func (s runeSet) has(r rune) bool {
	i := sort.Search(len(s)/2, func(i int) bool { return s[2*i+1] >= r })
	return i < len(s)/2 && s[2*i] <= r
}

func (s runeSet) union(t runeSet) runeSet {
	return normRunes(append(append([]rune{}, s...), t...))
}

// complement returns every scalar value not in s.
func (s runeSet) complement() runeSet {
	var out []rune
	next := rune(0)
	for i := 0; i+1 < len(s); i += 2 {
		if s[i] > next {
			out = append(out, next, s[i]-1)
		}
		next = s[i+1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, next, unicode.MaxRune)
	}
	return normRunes(out)
}

func (s runeSet) intersect(t runeSet) runeSet {
	var out []rune
	i, j := 0, 0
	for i+1 < len(s) && j+1 < len(t) {
		lo := max(s[i], t[j])
		hi := min(s[i+1], t[j+1])
		if lo <= hi {
			out = append(out, lo, hi)
		}
		if s[i+1] < t[j+1] {
			i += 2
		} else {
			j += 2
		}
	}
	return normRunes(out)
}

func (s runeSet) minus(t runeSet) runeSet { return s.intersect(t.complement()) }

func (s runeSet) equal(t runeSet) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// count returns the number of scalar values in s.
func (s runeSet) count() int {
	n := 0
	for i := 0; i+1 < len(s); i += 2 {
		n += int(s[i+1]-s[i]) + 1
	}
	return n
}

// single returns the only rune of s, if it has exactly one.
func (s runeSet) single() (rune, bool) {
	if len(s) == 2 && s[0] == s[1] {
		return s[0], true
	}
	return 0, false
}

// foldRunes adds the simple case folds of every rune in s (for (?i)).
func foldRunes(s runeSet) runeSet {
	if s.count() > 4096 {
		// large classes: fold by adding upper/lower case ranges wholesale
		var out []rune
		out = append(out, s...)
		for i := 0; i+1 < len(s); i += 2 {
			for r := s[i]; r <= s[i+1] && r <= 0x24F; r++ {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					out = append(out, f, f)
				}
			}
		}
		return normRunes(out)
	}
	var out []rune
	out = append(out, s...)
	for i := 0; i+1 < len(s); i += 2 {
		for r := s[i]; r <= s[i+1]; r++ {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				out = append(out, f, f)
			}
		}
	}
	return normRunes(out)
}

// JSON string encoding. In a constrained string (enum, const, pattern,
// format, property names) the grammar accepts the canonical encoding of
// each character only, so that a language over decoded characters maps
// one to one onto the encoded text:
//   - `"` is `\"`, `\` is `\\`;
//   - U+0008, U+0009, U+000A, U+000C, U+000D are `\b \t \n \f \r`;
//   - other characters below U+0020 are `\u00XX` with lowercase hex;
//   - everything else, `/` and non-ASCII included, is written raw (UTF-8).
// Unconstrained strings (and strings with only length bounds) accept every
// encoding JSON allows.

// mustEscape is the set of characters that never appear raw in a JSON string.
var mustEscape = runeSet{0, 0x1F, '"', '"', '\\', '\\'}

// rawChars is every character written raw in a JSON string.
var rawChars = anyRune.minus(mustEscape)

// kwideFirst is the set of characters that do not stand for themselves
// as printable ASCII in a canonical string: non-ASCII and escaped ones.
var kwideFirst = anyRune.minus(runeSet{0x20, 0x7F}.minus(mustEscape))

// canonicalEscape returns the canonical escape of a character in mustEscape.
func canonicalEscape(r rune) string {
	switch r {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	const hexdigits = "0123456789abcdef"
	return `\u00` + string(hexdigits[r>>4]) + string(hexdigits[r&15])
}

// encodeJSONString returns the canonical JSON encoding of s, quotes included.
func encodeJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' {
			b.WriteString(canonicalEscape(r))
		} else {
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// asciiLits holds lit's literal of each ASCII character (encClass of a
// single character: a key trie's edges write one per character).
var asciiLits = func() (t [utf8.RuneSelf]string) {
	for r := range t {
		t[r] = lit(string(rune(r)))
	}
	return t
}()

// encClass returns a GBNF expression matching the canonical encoding of
// exactly one character of s. s must not be empty.
func encClass(s runeSet) string {
	if r, ok := s.single(); ok && !mustEscape.has(r) {
		if r < utf8.RuneSelf {
			return asciiLits[r]
		}
		return lit(string(r)) // what the general case writes
	}
	raw := s.minus(mustEscape)
	esc := s.intersect(mustEscape)
	var alts []string
	if !raw.empty() {
		if raw.equal(rawChars) {
			alts = append(alts, `[^"\\\x00-\x1F]`)
		} else if r, ok := raw.single(); ok {
			alts = append(alts, lit(string(r)))
		} else if n := raw.complement(); len(n) < len(raw) {
			alts = append(alts, class(n, true))
		} else {
			alts = append(alts, class(raw, false))
		}
	}
	if esc.equal(mustEscape) {
		alts = append(alts, ruleKEsc)
	} else if !esc.empty() {
		var short []string
		var ctl0, ctl1 []rune // \u000X and \u001X low nibbles
		for i := 0; i+1 < len(esc); i += 2 {
			for r := esc[i]; r <= esc[i+1]; r++ {
				e := canonicalEscape(r)
				if len(e) == 2 {
					short = append(short, e)
				} else if r < 0x10 {
					ctl0 = append(ctl0, r, r)
				} else {
					ctl1 = append(ctl1, r-0x10, r-0x10)
				}
			}
		}
		if len(short) > 0 {
			var cs []rune
			for _, e := range short {
				cs = append(cs, rune(e[1]), rune(e[1]))
			}
			alts = append(alts, `"\\" `+class(normRunes(cs), false))
		}
		hexClass := func(lows []rune) string {
			var cs []rune
			for i := 0; i < len(lows); i += 2 {
				d := "0123456789abcdef"[lows[i]]
				cs = append(cs, rune(d), rune(d))
			}
			return class(normRunes(cs), false)
		}
		if len(ctl0) > 0 {
			alts = append(alts, `"\\u000" `+hexClass(ctl0))
		}
		if len(ctl1) > 0 {
			alts = append(alts, `"\\u001" `+hexClass(ctl1))
		}
	}
	return alt(alts...)
}
