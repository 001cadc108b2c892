package nomodel

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPatternText bounds a string derived from a pattern (in bytes): a
// pattern's own repetitions are drawn short (see repeatCount), so only
// nested unbounded repetitions come near it.
const maxPatternText = 1024

// patternText derives a string matching the pattern p (in the sense of
// regexp: it matches p, so it contains a match of p) by walking p's
// syntax tree: an alternation picks a branch uniformly, a repetition
// draws its count (repeatCount), a run of a letter class spells words,
// digits are uniform. ok is false for what it cannot derive (an empty
// class, text too long); the caller then lets the grammar choose.
func (s *Sampler) patternText(p *syntax.Regexp) (string, bool) {
	s.pbuf = s.pbuf[:0]
	s.pwork = 0
	if !s.derive(p, 0) || len(s.pbuf) > maxPatternText {
		return "", false
	}
	return string(s.pbuf), true
}

// maxPatternDepth bounds the recursion over a pattern's tree (Go's
// regexp/syntax limits nesting to 1000).
const maxPatternDepth = 200

// maxPatternWork bounds the nodes one derivation visits: nested
// repetitions of empty matches ((a?){0,1000}){0,1000} would otherwise
// spin without growing the text.
const maxPatternWork = 100_000

func (s *Sampler) derive(p *syntax.Regexp, depth int) bool {
	s.pwork++
	if depth > maxPatternDepth || len(s.pbuf) > maxPatternText || s.pwork > maxPatternWork {
		return false
	}
	switch p.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpLiteral:
		for _, r := range p.Rune {
			s.pbuf = utf8.AppendRune(s.pbuf, r)
		}
	case syntax.OpCharClass:
		r, ok := s.classRune(p.Rune)
		if !ok {
			return false
		}
		s.pbuf = utf8.AppendRune(s.pbuf, r)
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		s.pbuf = append(s.pbuf, byte('a'+s.rng.IntN(26)))
	case syntax.OpCapture:
		return s.derive(p.Sub[0], depth+1)
	case syntax.OpConcat:
		for _, sub := range p.Sub {
			if !s.derive(sub, depth+1) {
				return false
			}
		}
	case syntax.OpAlternate:
		return s.derive(p.Sub[s.rng.IntN(len(p.Sub))], depth+1)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, -1
		switch p.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = p.Min, p.Max
		}
		sub := p.Sub[0]
		if cls, ok := runClass(sub); ok {
			n := s.runLength(lo, hi, cls)
			return s.spellRun(cls, n)
		}
		n := s.repeatCount(lo, hi)
		for range n {
			if !s.derive(sub, depth+1) {
				return false
			}
		}
	}
	// Anchors, word boundaries and empty matches add nothing.
	return true
}

// runClass returns the class of a single-character node (a class, a
// literal of one character, or any character).
func runClass(p *syntax.Regexp) ([]rune, bool) {
	switch p.Op {
	case syntax.OpCharClass:
		return p.Rune, true
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return []rune{' ', '~'}, true
	case syntax.OpLiteral:
		if len(p.Rune) == 1 {
			return []rune{p.Rune[0], p.Rune[0]}, true
		}
	}
	return nil, false
}

// repeatCount draws the count of a repetition {lo,hi} (hi -1: none) of
// a group: uniform over lo..hi when hi-lo is at most the policy's array
// span, else uniform over lo..lo+span.
func (s *Sampler) repeatCount(lo, hi int) int {
	span := max(s.pol.ArrayMax-s.pol.ArrayMin, 1)
	if hi < 0 || hi-lo > span {
		hi = lo + span
	}
	return lo + s.rng.IntN(hi-lo+1)
}

// runLength draws the length of a run of one character class: uniform
// over lo..hi for bounded runs up to 32 long, else a word's length for
// letters (3 to 10) and 1 to 4 otherwise (digits: numbers below 10^4,
// exponents the validator's big.Rat can still read), at least lo.
func (s *Sampler) runLength(lo, hi int, cls []rune) int {
	if hi >= 0 && hi-lo <= 32 {
		return lo + s.rng.IntN(hi-lo+1)
	}
	n := 1 + s.rng.IntN(4)
	if inClass(cls, 'a') || inClass(cls, 'A') {
		n = 3 + s.rng.IntN(8)
	}
	n = max(n, lo)
	if hi >= 0 {
		n = min(n, hi)
	}
	return n
}

// spellRun appends n characters of class cls: words where the class
// holds letters (in the class's case; separated by spaces where it holds
// a space), digits uniformly, other characters readable-first.
func (s *Sampler) spellRun(cls []rune, n int) bool {
	lower, upper := inClass(cls, 'a') && inClass(cls, 'z'), inClass(cls, 'A') && inClass(cls, 'Z')
	if !lower && !upper {
		for range n {
			r, ok := s.classRune(cls)
			if !ok {
				return false
			}
			s.pbuf = utf8.AppendRune(s.pbuf, r)
		}
		return true
	}
	space := inClass(cls, ' ')
	var word string
	for i := 0; i < n; {
		if word == "" {
			if i > 0 && space && n-i > 1 {
				s.pbuf = append(s.pbuf, ' ')
				i++
				continue
			}
			word = strings.ToLower(s.fk.f.Noun())
		}
		r, size := utf8.DecodeRuneInString(word)
		word = word[size:]
		if !lower {
			r = unicode.ToUpper(r)
		}
		if !inClass(cls, r) {
			var ok bool
			if r, ok = s.classRune(cls); !ok {
				return false
			}
		}
		s.pbuf = utf8.AppendRune(s.pbuf, r)
		i++
	}
	return true
}

// classRune draws a character of a class (sorted inclusive ranges):
// uniformly among its letters and digits if it has any, else among its
// printable characters (tab included), surrogates never.
func (s *Sampler) classRune(cls []rune) (rune, bool) {
	for _, set := range [...][2]rune{{'0', 'z'}, {' ', unicode.MaxRune}, {'\t', '\t'}} {
		alnum := set[0] == '0'
		total := 0
		for i := 0; i+1 < len(cls); i += 2 {
			total += classCount(cls[i], cls[i+1], set, alnum)
		}
		if total == 0 {
			continue
		}
		k := s.rng.IntN(total)
		for i := 0; i+1 < len(cls); i += 2 {
			c := classCount(cls[i], cls[i+1], set, alnum)
			if k >= c {
				k -= c
				continue
			}
			lo, hi := max(cls[i], set[0]), min(cls[i+1], set[1])
			if alnum {
				for r := lo; r <= hi; r++ {
					if usable(r, true) {
						if k == 0 {
							return r, true
						}
						k--
					}
				}
			}
			if lo >= 0xD800 && lo <= 0xDFFF {
				lo = 0xE000
			}
			r := lo + rune(k)
			if lo < 0xD800 && r >= 0xD800 {
				r += 0x800 // past the surrogates
			}
			return r, true
		}
	}
	return 0, false
}

func usable(r rune, alnum bool) bool {
	if alnum {
		return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	return !(r >= 0xD800 && r <= 0xDFFF)
}

// classCount counts the usable characters of [lo, hi] inside set.
func classCount(lo, hi rune, set [2]rune, alnum bool) int {
	lo, hi = max(lo, set[0]), min(hi, set[1])
	if lo > hi {
		return 0
	}
	if alnum {
		n := 0
		for r := lo; r <= hi; r++ {
			if usable(r, true) {
				n++
			}
		}
		return n
	}
	n := int(hi-lo) + 1
	if lo <= 0xDFFF && hi >= 0xD800 {
		n -= int(min(hi, 0xDFFF)-max(lo, 0xD800)) + 1
	}
	return n
}

func inClass(cls []rune, r rune) bool {
	for i := 0; i+1 < len(cls); i += 2 {
		if r >= cls[i] && r <= cls[i+1] {
			return true
		}
	}
	return false
}
