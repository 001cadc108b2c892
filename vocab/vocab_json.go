package vocab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/structgen/structgen/internal/jsonscan"
)

// parseTokenIDObject parses a JSON object mapping token text to integer
// id ({"!": 0, "\"": 1, …}: encoder.json, vocab.json, a tokenizer.json
// model.vocab), in file order. It is a specialised parser: encoding/json
// into a map spends 3× longer on a 128k-entry vocabulary, mostly growing
// the map. Errors are *jsonPosError values with the byte offset.
func parseTokenIDObject(data []byte) ([]hfEntry, error) {
	p := jsonScanner{data: data}
	entries, err := p.tokenIDObject()
	if err != nil {
		return nil, err
	}
	return entries, p.end()
}

// tokenIDObject parses a {"text": id, …} object at the scanner's position.
func (p *jsonScanner) tokenIDObject() ([]hfEntry, error) {
	p.ws()
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		return nil, p.errorf("want an object mapping token text to id")
	}
	entries := make([]hfEntry, 0, (len(p.data)-p.i)/16)
	err := p.object(func(text string) error {
		id, err := p.int()
		if err == nil {
			entries = append(entries, hfEntry{text, id})
		}
		return err
	})
	return entries, err
}

// end checks that only white space follows.
func (p *jsonScanner) end() error {
	p.ws()
	if p.i < len(p.data) {
		return p.errorf("unexpected data after the JSON value")
	}
	return nil
}

// object parses an object at the scanner's position, calling f for each
// key with the scanner at the value, which f must consume.
func (p *jsonScanner) object(f func(key string) error) error {
	p.ws()
	if !p.eat('{') {
		return p.errorf("want a JSON object")
	}
	p.ws()
	if p.eat('}') {
		return nil
	}
	for {
		p.ws()
		key, err := p.str()
		if err != nil {
			return err
		}
		p.ws()
		if !p.eat(':') {
			return p.errorf("want ':' after object key")
		}
		p.ws()
		if err := f(key); err != nil {
			return err
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return nil
		}
		return p.errorf("want ',' or '}' after object value")
	}
}

// maxJSONDepth bounds the nesting skip accepts, as encoding/json does
// (its scanner's maxNestingDepth): deeper input is an error, not a stack
// overflow.
const maxJSONDepth = 10000

// skip consumes one JSON value, checking its syntax (as json.Valid would,
// without decoding strings).
func (p *jsonScanner) skip(depth int) error {
	if depth > maxJSONDepth {
		return p.errorf("JSON nested deeper than %d", maxJSONDepth)
	}
	p.ws()
	if p.i >= len(p.data) {
		return p.errorf("want a JSON value")
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(func(string) error { return p.skip(depth + 1) })
	case c == '[':
		p.i++
		p.ws()
		if p.eat(']') {
			return nil
		}
		for {
			if err := p.skip(depth + 1); err != nil {
				return err
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat(']') {
				return nil
			}
			return p.errorf("want ',' or ']' after array element")
		}
	case c == '"':
		return p.skipString()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	return p.errorf("want a JSON value")
}

// raw consumes one JSON value and returns its bytes.
func (p *jsonScanner) raw() ([]byte, error) {
	p.ws()
	start := p.i
	if err := p.skip(0); err != nil {
		return nil, err
	}
	return p.data[start:p.i], nil
}

// decode consumes one JSON value and decodes it with encoding/json into
// v; errors get the value's offset in the whole input.
func (p *jsonScanner) decode(v any) error {
	p.ws()
	start := p.i
	raw, err := p.raw()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		off := int64(0)
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			off = te.Offset
		}
		return &jsonPosError{Offset: int64(start) + off, Msg: err.Error()}
	}
	return nil
}

func (p *jsonScanner) literal(word string) error {
	if !bytes.HasPrefix(p.data[p.i:], []byte(word)) {
		return p.errorf("want %s", word)
	}
	p.i += len(word)
	return nil
}

// skipString consumes a string without decoding it.
func (p *jsonScanner) skipString() error {
	p.i++ // '"'
	for p.i < len(p.data) {
		switch c := p.data[p.i]; {
		case c == '"':
			p.i++
			return nil
		case c < 0x20:
			return p.errorf("control character in string")
		case c == '\\':
			if p.i+1 >= len(p.data) {
				p.i = len(p.data)
				return p.errorf("unterminated string")
			}
			switch p.data[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				p.i += 2
				if _, ok := p.hex4(); !ok {
					return p.errorf("invalid \\u escape")
				}
			default:
				p.i++
				return p.errorf("invalid escape")
			}
		default:
			p.i++
		}
	}
	return p.errorf("unterminated string")
}

// number consumes a JSON number.
func (p *jsonScanner) number() error {
	digits := func() int {
		n := 0
		for p.i < len(p.data) && '0' <= p.data[p.i] && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	p.eat('-')
	start := p.i
	if n := digits(); n == 0 {
		return p.errorf("invalid number")
	} else if n > 1 && p.data[start] == '0' {
		p.i = start
		return p.errorf("invalid number: leading zero")
	}
	if p.eat('.') && digits() == 0 {
		return p.errorf("invalid number: no digits after '.'")
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if digits() == 0 {
			return p.errorf("invalid number: no exponent digits")
		}
	}
	return nil
}

// A jsonPosError is a JSON syntax error at a byte offset.
type jsonPosError struct {
	Offset int64
	Msg    string
}

func (e *jsonPosError) Error() string { return e.Msg }

type jsonScanner struct {
	data []byte
	i    int
}

func (p *jsonScanner) errorf(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if p.i < len(p.data) {
		msg += fmt.Sprintf(" (found %q)", p.data[p.i])
	} else {
		msg += " (found end of input)"
	}
	return &jsonPosError{Offset: int64(p.i), Msg: msg}
}

func (p *jsonScanner) ws() { p.i = jsonscan.SkipSpace(p.data, p.i) }

func (p *jsonScanner) eat(c byte) bool {
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str parses a JSON string.
func (p *jsonScanner) str() (string, error) {
	if !p.eat('"') {
		return "", p.errorf("want a string")
	}
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.data) {
		c := p.data[p.i]
		if c == '"' {
			b := p.data[start:p.i]
			if !utf8.Valid(b) {
				p.i = start
				return "", p.errorf("invalid UTF-8 in string")
			}
			p.i++
			return string(b), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errorf("control character in string")
		}
		p.i++
	}
	buf := append([]byte(nil), p.data[start:p.i]...)
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				p.i = start
				return "", p.errorf("invalid UTF-8 in string")
			}
			p.i++
			return string(buf), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.data) {
			p.i = len(p.data)
			return "", p.errorf("unterminated string")
		}
		p.i += 2
		switch e := p.data[p.i-1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A pair gives one code point; a lone surrogate
				// becomes U+FFFD, as in encoding/json.
				save := p.i
				if p.i+1 < len(p.data) && p.data[p.i] == '\\' && p.data[p.i+1] == 'u' {
					p.i += 2
					if r2, ok := p.hex4(); ok {
						if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
							buf = utf8.AppendRune(buf, c)
							continue
						}
					}
				}
				p.i = save
				r = utf8.RuneError
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.i--
			return "", p.errorf("invalid escape")
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *jsonScanner) hex4() (rune, bool) {
	if p.i+4 > len(p.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.data[p.i:p.i+4]), 16, 16)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

// int parses a JSON integer (no fraction or exponent).
func (p *jsonScanner) int() (int64, error) {
	start := p.i
	if p.i < len(p.data) && p.data[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.data) && '0' <= p.data[p.i] && p.data[p.i] <= '9' {
		p.i++
	}
	if p.i == digits {
		return 0, p.errorf("want an integer token id")
	}
	if p.data[digits] == '0' && p.i > digits+1 {
		p.i = digits
		return 0, p.errorf("invalid number: leading zero")
	}
	if p.i < len(p.data) && (p.data[p.i] == '.' || p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		return 0, p.errorf("want an integer token id")
	}
	v, err := strconv.ParseInt(string(p.data[start:p.i]), 10, 64)
	if err != nil {
		p.i = start
		return 0, p.errorf("token id out of range")
	}
	return v, nil
}
