package nomodel

import (
	"fmt"
	"strings"
)

// walkValue lets the grammar choose one JSON value (or, with key, one
// object key) byte by byte: the fallback where no proposal fits. It draws
// among the allowed single bytes with readable weights (inside strings it
// spells words while the grammar allows their letters), runs for a length
// drawn from 4 to 19 bytes and then follows a shortest completion, which
// finishes the value first. It stops at the end of the value: after the
// closing quote or bracket, or before the byte that ends a number or
// literal.
func (s *Sampler) walkValue(f follow, depth int) error {
	return s.walk(f, false)
}

func (s *Sampler) walkKey() error { return s.walk(fObject, true) }

func (s *Sampler) walk(f follow, key bool) error {
	start := len(s.out)
	var lx jsonLexer
	target := 4 + s.rng.IntN(16)
	var word string
	for n := 0; ; n++ {
		if lx.closed() {
			break
		}
		s.m.FillMask(s.bits)
		scalarEnd := lx.atScalar() && s.followAllowed(f)
		if n >= target {
			if scalarEnd {
				break
			}
			lo, hi, ok := s.m.ShortestStep()
			if !ok {
				if lx.atScalar() || lx.depth == 0 && !lx.inString && n > 0 {
					break
				}
				return s.closeOut()
			}
			b := lo + byte(s.rng.IntN(int(hi-lo)+1))
			if lx.atScalar() && !scalarByte(b) {
				break
			}
			if err := s.acceptByte(b); err != nil {
				return err
			}
			lx.step(b)
			continue
		}
		b, stop := s.pickByte(&lx, &word, scalarEnd)
		if stop {
			break
		}
		if b < 0 {
			return s.closeOut() // nothing allowed: cannot happen in a JSON grammar
		}
		if err := s.acceptByte(byte(b)); err != nil {
			return err
		}
		lx.step(byte(b))
	}
	if !key {
		s.record(SourceFallback, "", start)
	}
	return nil
}

// acceptByte feeds one byte (a token of Vocab), closing out over budget.
func (s *Sampler) acceptByte(b byte) error {
	if err := s.m.Accept(int32(b)); err != nil {
		return fmt.Errorf("nomodel: the mask allowed a byte the matcher rejects: %w", err)
	}
	s.out = append(s.out, b)
	if len(s.out)+s.m.MinCompletion() > s.budget {
		if err := s.undo(1); err != nil {
			return err
		}
		return s.closeOut()
	}
	return nil
}

// followAllowed reports whether a byte that may follow a value in
// context f is allowed now (s.bits holds the mask).
func (s *Sampler) followAllowed(f follow) bool {
	has := func(b byte) bool { return s.bits[b/32]&(1<<(b%32)) != 0 }
	switch f {
	case fObject:
		return has(',') || has('}')
	case fArray:
		return has(',') || has(']')
	}
	return s.m.CanEnd()
}

func scalarByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '.' || b == '-' || b == '+'
}

// Byte weights of the fallback walk (relative).
const (
	wbLower    = 1.0   // a-z
	wbUpper    = 0.1   // A-Z
	wbDigit    = 0.3   // 0-9, in strings and numbers alike
	wbSpace    = 0.3   // a space inside a string, not after another
	wbPunct    = 0.03  // other printable ASCII
	wbQuote    = 0.08  // the closing quote of a string (before the length is reached)
	wbControl  = 0.001 // control bytes and backslash escapes
	wbNonASCII = 0.01  // a UTF-8 lead byte
	wbStop     = 1.0   // ending a number or literal where it may end (numbers run ~4 digits)
	spellOdds  = 0.9   // the next letter of the word being spelt, when allowed
)

// pickByte draws an allowed single byte (s.bits holds the mask), or stop
// (where canStop, the value may end here), or -1 if no byte is allowed.
func (s *Sampler) pickByte(lx *jsonLexer, word *string, canStop bool) (int, bool) {
	has := func(b byte) bool { return s.bits[b/32]&(1<<(b%32)) != 0 }
	if lx.inString && !lx.escape {
		if *word == "" && lx.prevSpace {
			*word = strings.ToLower(s.fk.f.Noun())
		}
		if *word != "" {
			c := (*word)[0]
			if has(c) && s.rng.Float64() < spellOdds {
				*word = (*word)[1:]
				return int(c), false
			}
			*word = ""
		}
	}
	var w [256]float64
	total := 0.0
	for b := 0; b < 256; b++ {
		if !has(byte(b)) {
			continue
		}
		x := 1.0
		if lx.inString {
			switch c := byte(b); {
			case c >= 'a' && c <= 'z':
				x = wbLower
			case c >= 'A' && c <= 'Z':
				x = wbUpper
			case c >= '0' && c <= '9':
				x = wbDigit
			case c == ' ':
				x = wbSpace
				if lx.prevSpace {
					x = wbControl
				}
			case c == '"':
				x = wbQuote
			case c == '\\' || c < 0x20 || c == 0x7f:
				x = wbControl
			case c >= 0x80 && c < 0xC0:
				x = 1 // a continuation: the only choice mid-character
			case c >= 0xC0:
				x = wbNonASCII
			default:
				x = wbPunct
			}
		} else if lx.atScalar() && !scalarByte(byte(b)) {
			continue // ends the scalar: that is the stop choice
		} else if b >= '0' && b <= '9' {
			x = wbDigit
		}
		w[b] = x
		total += x
	}
	stopW := 0.0
	if canStop {
		stopW = wbStop
	}
	if total+stopW == 0 {
		return -1, false
	}
	r := s.rng.Float64() * (total + stopW)
	for b := 0; b < 256; b++ {
		if w[b] == 0 {
			continue
		}
		r -= w[b]
		if r < 0 {
			return b, false
		}
	}
	if canStop {
		return 0, true
	}
	for b := 255; b >= 0; b-- { // rounding: the last allowed byte
		if w[b] > 0 {
			return b, false
		}
	}
	return -1, false
}

// jsonLexer follows the bytes of one JSON value: nesting, strings and
// escapes, and whether a number or literal is being written.
type jsonLexer struct {
	depth     int
	inString  bool
	escape    bool
	scalar    bool // inside a number or literal at the current depth
	started   bool
	done      bool // a string, object or array at depth 0 was closed
	prevSpace bool // the last string byte was a space or the opening quote
}

func (l *jsonLexer) closed() bool { return l.done }

// atScalar reports whether a number or literal at the value's own level
// is being written (so that a byte that cannot continue it ends it).
func (l *jsonLexer) atScalar() bool { return l.scalar && l.depth == 0 && !l.inString }

func (l *jsonLexer) step(b byte) {
	l.started = true
	if l.inString {
		switch {
		case l.escape:
			l.escape = false
		case b == '\\':
			l.escape = true
		case b == '"':
			l.inString = false
			if l.depth == 0 {
				l.done = true
			}
		}
		l.prevSpace = b == ' '
		return
	}
	switch {
	case b == '"':
		l.inString, l.prevSpace, l.scalar = true, true, false
	case b == '{' || b == '[':
		l.depth++
		l.scalar = false
	case b == '}' || b == ']':
		l.depth--
		l.scalar = false
		if l.depth == 0 {
			l.done = true
		}
	case scalarByte(b):
		l.scalar = true
	default:
		l.scalar = false
	}
}
