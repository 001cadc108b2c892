package mask

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// parseTokenIDObject parses a JSON object mapping token text to integer
// id ({"!": 0, "\"": 1, …}: encoder.json, vocab.json, a tokenizer.json
// model.vocab), in file order. It is a specialised parser: encoding/json
// into a map spends 3× longer on a 128k-entry vocabulary, mostly growing
// the map. Errors are *jsonPosError values with the byte offset.
func parseTokenIDObject(data []byte) ([]hfEntry, error) {
	p := jsonScanner{data: data}
	p.ws()
	if !p.eat('{') {
		return nil, p.errorf("want an object mapping token text to id")
	}
	entries := make([]hfEntry, 0, len(data)/16)
	p.ws()
	if !p.eat('}') {
		for {
			p.ws()
			text, err := p.str()
			if err != nil {
				return nil, err
			}
			p.ws()
			if !p.eat(':') {
				return nil, p.errorf("want ':' after object key")
			}
			p.ws()
			id, err := p.int()
			if err != nil {
				return nil, err
			}
			entries = append(entries, hfEntry{text, id})
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat('}') {
				break
			}
			return nil, p.errorf("want ',' or '}' after object value")
		}
	}
	p.ws()
	if p.i < len(p.data) {
		return nil, p.errorf("unexpected data after the object")
	}
	return entries, nil
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

func (p *jsonScanner) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

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
