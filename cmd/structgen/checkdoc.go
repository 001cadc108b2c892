package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// document is a JSON document read for check: its value (numbers as
// json.Number, as the validator wants them), where each value starts, and
// its duplicate keys (which decoding into a map silently drops).
type document struct {
	src     []byte
	value   any
	offsets map[string]int // JSON pointer without '#' ("" the root, "/a/0") → offset
	dups    []dupKey
}

// dupKey is a key that repeats an earlier key of the same object.
type dupKey struct {
	ptr, key   string // the pointer of the member, the key
	off, first int    // offsets of this key and of its first occurrence
}

// docError is a syntax error at a byte offset.
type docError struct {
	off int
	msg string
}

func (e *docError) Error() string { return fmt.Sprintf("byte %d: %s", e.off, e.msg) }

func (e *docError) pos(b []byte) string {
	line, col := position(b, e.off)
	return fmt.Sprintf("%d:%d", line, col)
}

type lineCol struct{ line, col int }

func (d *document) at(off int) lineCol {
	l, c := position(d.src, off)
	return lineCol{l, c}
}

// scanDocument reads one JSON document (and nothing after it but
// whitespace).
func scanDocument(b []byte) (*document, error) {
	// The syntax first: Unmarshal's errors say where the offending byte is
	// (the decoder's token stream is less exact about literals), and it
	// refuses documents nested more than 10,000 levels deep, which bounds
	// the recursion of value below.
	if err := json.Unmarshal(b, new(json.RawMessage)); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, &docError{min(max(int(se.Offset)-1, 0), len(b)), strings.TrimPrefix(se.Error(), "json: ")}
		}
		return nil, err
	}
	d := &document{src: b, offsets: map[string]int{}}
	s := &docScanner{d: d, dec: json.NewDecoder(bytes.NewReader(b))}
	s.dec.UseNumber()
	v, err := s.value("")
	if err != nil {
		return nil, err
	}
	d.value = v
	return d, nil
}

type docScanner struct {
	d   *document
	dec *json.Decoder
}

// skip returns the offset of the next token: the decoder's offset past
// whitespace and the ':' or ',' it has not consumed yet.
func (s *docScanner) skip() int {
	b := s.d.src
	i := int(s.dec.InputOffset())
	for i < len(b) && strings.IndexByte(" \t\r\n:,", b[i]) >= 0 {
		i++
	}
	return i
}

// token reads the next token (of a document whose syntax is checked).
func (s *docScanner) token(off int) (json.Token, error) {
	t, err := s.dec.Token()
	if err != nil {
		return nil, &docError{off, strings.TrimPrefix(err.Error(), "json: ")}
	}
	return t, nil
}

func (s *docScanner) value(ptr string) (any, error) {
	start := s.skip()
	tok, err := s.token(start)
	if err != nil {
		return nil, err
	}
	s.d.offsets[ptr] = start
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, json.Number, bool or nil
	}
	if delim == '[' {
		arr := []any{}
		for i := 0; s.dec.More(); i++ {
			v, err := s.value(ptr + "/" + strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := s.token(s.skip()) // ']'
		return arr, err
	}
	obj := map[string]any{}
	first := map[string]int{}
	for s.dec.More() {
		koff := s.skip()
		kt, err := s.token(koff)
		if err != nil {
			return nil, err
		}
		k := kt.(string) // the decoder returns object keys as strings
		kp := ptr + "/" + escapePointer(k)
		if f, dup := first[k]; dup {
			s.d.dups = append(s.d.dups, dupKey{ptr: kp, key: k, off: koff, first: f})
		} else {
			first[k] = koff
		}
		v, err := s.value(kp)
		if err != nil {
			return nil, err
		}
		obj[k] = v // the last one wins, as in encoding/json
	}
	_, err = s.token(s.skip()) // '}'
	return obj, err
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// unquoteGo undoes the quoting of a string that %q wrote and whose
// escaped double quotes were then unescaped.
func unquoteGo(s string) (string, error) {
	return strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`)
}
