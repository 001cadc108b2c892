package jsonkeys

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// In this package s is always a *scanner, st its state, c a byte, g a
// *Guard, t a *Table, m a *mask.Matcher and tok a token id.

// MaxDepth bounds the nesting of arrays and objects. It is encoding/json's
// limit, which the validator (santhosh-tekuri/jsonschema) decodes with: a
// deeper document cannot be validated, so it is a syntax error here too.
// The scanner itself does not recurse; its memory is 32 bytes per
// container of the output, whatever the depth.
const MaxDepth = 10000

// mode says what the scanner expects next.
type mode uint8

const (
	mStart      mode = iota // before the top-level value
	mValue                  // a value: after ':' or after ',' in an array
	mValueOrEnd             // after '[': a value or ']'
	mKeyOrEnd               // after '{': a key or '}'
	mKey                    // after ',' in an object: a key
	mColon                  // after a key: ':'
	mAfter                  // after a value in a container: ',' or its closing bracket
	mDone                   // after the top-level value: whitespace only
	mString                 // inside a string; st.key says whether it is a key
	mNumber                 // inside a number; st.sub is a num* state
	mLiteral                // inside true, false or null; st.sub indexes literals[st.lit]
)

// Number states (st.sub in mNumber).
const (
	numMinus  = iota // after '-'
	numZero          // after a leading '0'
	numInt           // in the integer digits
	numDot           // after '.'
	numFrac          // in the fraction digits
	numE             // after 'e' or 'E'
	numESign         // after the exponent's sign
	numExp           // in the exponent digits
	numStates        // number of states
)

// numCanEnd says which number states are a complete number.
var numCanEnd = [numStates]bool{numZero: true, numInt: true, numFrac: true, numExp: true}

var literals = [...]string{"true", "false", "null"}

// event is what a byte did, for the callers that care: the guard looks at
// errors and duplicate keys, Duplicates also tracks the path.
type event uint8

const (
	evNone  event = iota
	evError       // a syntax error; s.why says what, and the state must be undone
	evKey         // a key closed and was added to its object
	evDup         // a key closed that its object already has; it was not added
	evOpen        // an object or array opened
	evClose       // an object or array closed
	evComma       // a ',' between members or elements
)

// state is the fixed-size part of the scanner: everything but the arenas.
// A copy of it, with the arena lengths, is a complete snapshot (mark).
type state struct {
	top    int32 // innermost open container (index in nodes); -1 at top level
	depth  int32 // open containers
	keyed  int32 // open objects that have at least one key
	mode   mode
	key    bool   // mString: the string is an object key
	esc    uint8  // mString: 0 plain, 1 after '\', 2..5 expecting the n-1'th hex digit of \u
	u8     uint8  // mString: UTF-8 continuation bytes still due
	u8lo   byte   // range of the next continuation byte
	u8hi   byte   //
	sub    uint8  // mNumber, mLiteral: see there
	lit    uint8  // mLiteral: index in literals
	hex    uint16 // \u digits so far
	hi     uint16 // a high surrogate escape waiting for its low half (0: none)
	keyOff int    // mString && key: where the key starts in kb
	keyAt  int    // mString && key: offset of its opening quote in the input
	off    int    // bytes scanned
}

// node is an open or closed container. Nodes are never removed while the
// steps that opened them stand (a rollback may reopen a closed one), so
// the stack is the chain of parents from top.
type node struct {
	parent int32
	obj    bool
	keys   []int32 // objects: ids of their keys (index in keys), sorted by the key's bytes
}

// keyRec is a key that closed, in order.
type keyRec struct {
	node     int32 // the object
	off, end int   // its decoded bytes are kb[off:end]
	at       int   // offset of its opening quote in the input
}

// scanner is a streaming JSON scanner (RFC 8259, strict: UTF-8 is
// validated inside strings, numbers follow the grammar, one top-level
// value) that decodes object keys and keeps, per object, the keys it has.
// Its arenas only grow while scanning; mark and undo restore any earlier
// point.
type scanner struct {
	st    state
	nodes []node
	kb    []byte // decoded keys, back to back (the open key last)
	keys  []keyRec
	why   string // the reason of the last evError
	dup   int32  // the earlier key of the last evDup
	raw   bool   // take bytes >= 0x80 in strings unchecked (NewTable only)
}

func (s *scanner) reset() {
	s.st = state{top: -1}
	s.nodes = s.nodes[:0]
	s.kb = s.kb[:0]
	s.keys = s.keys[:0]
}

// key returns the decoded bytes of key id.
func (s *scanner) key(id int32) []byte {
	k := &s.keys[id]
	return s.kb[k.off:k.end]
}

// openKey returns the decoded bytes of the key being read (mString, key).
func (s *scanner) openKey() []byte { return s.kb[s.st.keyOff:] }

// mark is a point of the scan that undo returns to.
type mark struct {
	st              state
	nodes, kb, keys int
}

func (s *scanner) mark() mark {
	return mark{s.st, len(s.nodes), len(s.kb), len(s.keys)}
}

// undo returns to mark k, taken earlier on the same scan.
func (s *scanner) undo(k mark) {
	for id := len(s.keys) - 1; id >= k.keys; id-- {
		if n := s.keys[id].node; int(n) < k.nodes {
			ks := s.nodes[n].keys
			i, _ := s.search(ks, s.key(int32(id)))
			s.nodes[n].keys = slices.Delete(ks, i, i+1)
		}
	}
	s.keys = s.keys[:k.keys]
	s.nodes = s.nodes[:k.nodes]
	s.kb = s.kb[:k.kb]
	s.st = k.st
}

// search returns where k is or would be in the sorted key ids ks.
func (s *scanner) search(ks []int32, k []byte) (int, bool) {
	lo, hi := 0, len(ks)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if bytes.Compare(s.key(ks[h]), k) < 0 {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo, lo < len(ks) && bytes.Equal(s.key(ks[lo]), k)
}

// prefixed returns the range ks[lo:hi] of the sorted key ids ks whose keys
// start with p.
func (s *scanner) prefixed(ks []int32, p []byte) (lo, hi int) {
	lo, _ = s.search(ks, p)
	// Keys with prefix p come first in ks[lo:], then greater ones.
	a, b := lo, len(ks)
	for a < b {
		h := int(uint(a+b) >> 1)
		if bytes.HasPrefix(s.key(ks[h]), p) {
			a = h + 1
		} else {
			b = h
		}
	}
	return lo, a
}

// fail records a syntax error; why is a constant (no allocation: trials
// in Filter fail often).
func (s *scanner) fail(why string) event {
	s.why = why
	return evError
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// step advances over one byte.
func (s *scanner) step(c byte) event {
	st := &s.st
	st.off++
	switch st.mode {
	case mString:
		return s.inString(c)
	case mNumber:
		if s.number(c) {
			return evNone
		}
		if !numCanEnd[st.sub] {
			return s.fail("invalid number")
		}
		s.endValue()
		return s.structural(c)
	case mLiteral:
		lit := literals[st.lit]
		if c != lit[st.sub] {
			return s.fail("invalid literal: expected true, false or null")
		}
		st.sub++
		if int(st.sub) == len(lit) {
			s.endValue()
		}
		return evNone
	}
	return s.structural(c)
}

// structural handles a byte outside strings, numbers and literals.
func (s *scanner) structural(c byte) event {
	st := &s.st
	if isSpace(c) {
		return evNone
	}
	switch st.mode {
	case mStart, mValue:
		return s.beginValue(c)
	case mValueOrEnd:
		if c == ']' {
			return s.close()
		}
		return s.beginValue(c)
	case mKeyOrEnd:
		if c == '}' {
			return s.close()
		}
		if c == '"' {
			s.beginString(true)
			return evNone
		}
		return s.fail("expected a key or '}'")
	case mKey:
		if c == '"' {
			s.beginString(true)
			return evNone
		}
		return s.fail("expected a key after ','")
	case mColon:
		if c == ':' {
			st.mode = mValue
			return evNone
		}
		return s.fail("expected ':' after a key")
	case mAfter:
		obj := s.nodes[st.top].obj
		switch {
		case c == ',':
			if obj {
				st.mode = mKey
			} else {
				st.mode = mValue
			}
			return evComma
		case c == '}' && obj, c == ']' && !obj:
			return s.close()
		case obj:
			return s.fail("expected ',' or '}' after an object member")
		}
		return s.fail("expected ',' or ']' after an array element")
	}
	return s.fail("text after the end of the JSON value")
}

func (s *scanner) beginValue(c byte) event {
	st := &s.st
	switch {
	case c == '{':
		return s.open(true)
	case c == '[':
		return s.open(false)
	case c == '"':
		s.beginString(false)
	case c == '-':
		st.mode, st.sub = mNumber, numMinus
	case c == '0':
		st.mode, st.sub = mNumber, numZero
	case c >= '1' && c <= '9':
		st.mode, st.sub = mNumber, numInt
	case c == 't':
		st.mode, st.sub, st.lit = mLiteral, 1, 0
	case c == 'f':
		st.mode, st.sub, st.lit = mLiteral, 1, 1
	case c == 'n':
		st.mode, st.sub, st.lit = mLiteral, 1, 2
	default:
		return s.fail("expected a value")
	}
	return evNone
}

func (s *scanner) open(obj bool) event {
	st := &s.st
	if st.depth >= MaxDepth {
		return s.fail("nesting deeper than MaxDepth")
	}
	i := len(s.nodes)
	if i < cap(s.nodes) {
		// Reuse the slot of a node a rollback removed, and its key slice.
		s.nodes = s.nodes[:i+1]
		n := &s.nodes[i]
		n.parent, n.obj, n.keys = st.top, obj, n.keys[:0]
	} else {
		s.nodes = append(s.nodes, node{parent: st.top, obj: obj})
	}
	st.top = int32(i)
	st.depth++
	if obj {
		st.mode = mKeyOrEnd
	} else {
		st.mode = mValueOrEnd
	}
	return evOpen
}

func (s *scanner) close() event {
	st := &s.st
	n := &s.nodes[st.top]
	if len(n.keys) > 0 {
		st.keyed--
	}
	st.top = n.parent
	st.depth--
	s.endValue()
	return evClose
}

func (s *scanner) endValue() {
	if s.st.top < 0 {
		s.st.mode = mDone
	} else {
		s.st.mode = mAfter
	}
}

// number reports whether c continues the number.
func (s *scanner) number(c byte) bool {
	st := &s.st
	digit := c >= '0' && c <= '9'
	switch st.sub {
	case numMinus:
		if c == '0' {
			st.sub = numZero
			return true
		}
		if digit {
			st.sub = numInt
		}
		return digit
	case numZero, numInt:
		switch {
		case digit && st.sub == numInt:
			return true
		case c == '.':
			st.sub = numDot
			return true
		case c == 'e', c == 'E':
			st.sub = numE
			return true
		}
		return false
	case numDot, numFrac:
		if digit {
			st.sub = numFrac
			return true
		}
		if (c == 'e' || c == 'E') && st.sub == numFrac {
			st.sub = numE
			return true
		}
		return false
	case numE:
		if c == '+' || c == '-' {
			st.sub = numESign
			return true
		}
		fallthrough
	default: // numESign, numExp
		if digit {
			st.sub = numExp
		}
		return digit
	}
}

func (s *scanner) beginString(key bool) {
	st := &s.st
	st.mode, st.key = mString, key
	st.esc, st.u8, st.hi = 0, 0, 0
	if key {
		st.keyOff = len(s.kb)
		st.keyAt = st.off - 1
	}
}

// emit adds a decoded character to the open key.
func (s *scanner) emit(r rune) {
	if s.st.key {
		s.kb = utf8.AppendRune(s.kb, r)
	}
}

func (s *scanner) inString(c byte) event {
	st := &s.st
	if st.esc != 0 {
		return s.escape(c)
	}
	if st.u8 != 0 {
		if c < st.u8lo || c > st.u8hi {
			return s.fail("invalid UTF-8 in a string")
		}
		st.u8--
		st.u8lo, st.u8hi = 0x80, 0xBF
		if st.key {
			s.kb = append(s.kb, c)
		}
		return evNone
	}
	if st.hi != 0 && c != '\\' {
		// A high surrogate escape not followed by a low one reads as
		// U+FFFD, as encoding/json reads it.
		st.hi = 0
		s.emit(utf8.RuneError)
	}
	switch {
	case c == '"':
		if st.key {
			return s.closeKey()
		}
		s.endValue()
		return evNone
	case c == '\\':
		st.esc = 1
		return evNone
	case c < 0x20:
		return s.fail("control character in a string")
	case c < 0x80, s.raw:
	case c >= 0xC2 && c <= 0xDF:
		st.u8, st.u8lo, st.u8hi = 1, 0x80, 0xBF
	case c == 0xE0:
		st.u8, st.u8lo, st.u8hi = 2, 0xA0, 0xBF
	case c == 0xED:
		st.u8, st.u8lo, st.u8hi = 2, 0x80, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		st.u8, st.u8lo, st.u8hi = 2, 0x80, 0xBF
	case c == 0xF0:
		st.u8, st.u8lo, st.u8hi = 3, 0x90, 0xBF
	case c == 0xF4:
		st.u8, st.u8lo, st.u8hi = 3, 0x80, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		st.u8, st.u8lo, st.u8hi = 3, 0x80, 0xBF
	default:
		return s.fail("invalid UTF-8 in a string")
	}
	if st.key {
		s.kb = append(s.kb, c)
	}
	return evNone
}

func (s *scanner) escape(c byte) event {
	st := &s.st
	if st.esc >= 2 {
		var h byte
		switch {
		case c >= '0' && c <= '9':
			h = c - '0'
		case c >= 'a' && c <= 'f':
			h = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			h = c - 'A' + 10
		default:
			return s.fail("invalid \\u escape: expected a hex digit")
		}
		st.hex = st.hex<<4 | uint16(h)
		if st.esc < 5 {
			st.esc++
			return evNone
		}
		st.esc = 0
		s.codeUnit(st.hex)
		return evNone
	}
	if c == 'u' {
		st.esc, st.hex = 2, 0
		return evNone
	}
	var r rune
	switch c {
	case '"', '\\', '/':
		r = rune(c)
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	default:
		return s.fail("invalid escape")
	}
	st.esc = 0
	if st.hi != 0 {
		st.hi = 0
		s.emit(utf8.RuneError)
	}
	s.emit(r)
	return evNone
}

// codeUnit decodes the UTF-16 code unit of a \u escape the way
// encoding/json does: a high surrogate followed by a low one is one
// character; any other surrogate is U+FFFD.
func (s *scanner) codeUnit(u uint16) {
	st := &s.st
	if st.hi != 0 {
		hi := st.hi
		st.hi = 0
		if u >= 0xDC00 && u <= 0xDFFF {
			s.emit((rune(hi)-0xD800)<<10 | (rune(u) - 0xDC00) + 0x10000)
			return
		}
		s.emit(utf8.RuneError)
	}
	switch {
	case u >= 0xD800 && u <= 0xDBFF:
		st.hi = u
	case u >= 0xDC00 && u <= 0xDFFF:
		s.emit(utf8.RuneError)
	default:
		s.emit(rune(u))
	}
}

// closeKey ends the key being read: a new key is added to its object
// (evKey), an existing one is not (evDup, with s.dup the earlier key).
func (s *scanner) closeKey() event {
	st := &s.st
	st.mode = mColon
	n := &s.nodes[st.top]
	i, found := s.search(n.keys, s.openKey())
	if found {
		s.dup = n.keys[i]
		return evDup
	}
	id := int32(len(s.keys))
	s.keys = append(s.keys, keyRec{node: st.top, off: st.keyOff, end: len(s.kb), at: st.keyAt})
	n.keys = slices.Insert(n.keys, i, id)
	if len(n.keys) == 1 {
		st.keyed++
	}
	return evKey
}

// complete reports whether the bytes scanned are a whole JSON text.
func (s *scanner) complete() bool {
	return s.st.mode == mDone || s.st.mode == mNumber && s.st.top < 0 && numCanEnd[s.st.sub]
}
