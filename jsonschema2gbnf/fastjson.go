package jsonschema2gbnf

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/structgen/structgen/internal/jsonscan"
)

// fastParse is parseOrdered's fast path: a strict JSON parser that builds
// the same values as the encoding/json decoder parseValue drives (object
// keys in document order, the last of duplicate keys winning, numbers as
// json.Number with their text, strings unquoted as encoding/json does,
// empty arrays non-nil), without a Token call and an interface per token
// (the decoder was about a sixth of loading). It gives up (ok false) on
// anything but well-formed JSON nested less than MaxNestingDepth, so
// that every error, and its position, still comes from the decoder.
func fastParse(data []byte) (v any, ok bool) {
	p := fastParser{data: data}
	v, ok = p.value(0)
	if !ok {
		return nil, false
	}
	p.ws()
	return v, p.i == len(data)
}

type fastParser struct {
	data []byte
	i    int
}

func (p *fastParser) ws() { p.i = jsonscan.SkipSpace(p.data, p.i) }

func (p *fastParser) value(depth int) (any, bool) {
	p.ws()
	if p.i >= len(p.data) {
		return nil, false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		if depth >= MaxNestingDepth {
			return nil, false
		}
		p.i++
		o := &ordObj{vals: map[string]any{}}
		p.ws()
		if p.i < len(p.data) && p.data[p.i] == '}' {
			p.i++
			return o, true
		}
		for {
			p.ws()
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			p.ws()
			if p.i >= len(p.data) || p.data[p.i] != ':' {
				return nil, false
			}
			p.i++
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			if _, dup := o.vals[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = v // last one wins, as in encoding/json
			if done, ok := p.next('}'); !ok || done {
				return o, ok
			}
		}
	case c == '[':
		if depth >= MaxNestingDepth {
			return nil, false
		}
		p.i++
		arr := []any{}
		p.ws()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return arr, true
		}
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			arr = append(arr, v)
			if done, ok := p.next(']'); !ok || done {
				return arr, ok
			}
		}
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

// next reads what follows a member or element: a comma (done false) or
// the closing bracket (done true); ok false on anything else.
func (p *fastParser) next(closing byte) (done, ok bool) {
	p.ws()
	if p.i < len(p.data) {
		switch p.data[p.i] {
		case ',':
			p.i++
			return false, true
		case closing:
			p.i++
			return true, true
		}
	}
	return false, false
}

func (p *fastParser) literal(s string) bool {
	if len(p.data)-p.i < len(s) || string(p.data[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// str reads a string. One without escapes and with valid UTF-8 is its
// bytes (as encoding/json returns it); any other is unquoted by
// encoding/json itself.
func (p *fastParser) str() (string, bool) {
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return "", false
	}
	start := p.i
	p.i++
	plain := true
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			if plain {
				return string(p.data[start+1 : p.i-1]), true
			}
			var s string
			if json.Unmarshal(p.data[start:p.i], &s) != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			plain = false
			p.i += 2 // the escaped character is checked by Unmarshal
		case c < ' ':
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.data[p.i:])
			if r == utf8.RuneError && size == 1 {
				plain = false // encoding/json replaces it with U+FFFD
			}
			p.i += size
		default:
			p.i++
		}
	}
	return "", false
}

// number reads a number in JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *fastParser) number() (any, bool) {
	start := p.i
	digits := func() bool {
		n := p.i
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
		}
		return p.i > n
	}
	if p.data[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.data) && p.data[p.i] == '0' {
		p.i++
	} else if !digits() {
		return nil, false
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if !digits() {
			return nil, false
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if !digits() {
			return nil, false
		}
	}
	return json.Number(p.data[start:p.i]), true
}
