package jsonkeys

import (
	"fmt"
	"strconv"
	"strings"
)

// Dup is a key that repeats an earlier key of the same object.
type Dup struct {
	Pointer string // JSON pointer (RFC 6901) of the object; "" is the root
	Key     string // the key, decoded (escapes resolved)
	Offset  int    // byte offset of the repeated key's opening quote
	Line    int    // its line, 1-based
	Column  int    // its column in bytes, 1-based
	First   int    // byte offset of the first occurrence's opening quote
}

func (d Dup) String() string {
	return fmt.Sprintf("%d:%d: duplicate key %s in %s (first at offset %d)", d.Line, d.Column, strconv.Quote(d.Key), objectName(d.Pointer), d.First)
}

func objectName(ptr string) string {
	if ptr == "" {
		return "the root object"
	}
	return "the object at " + ptr
}

// Duplicates returns every key of doc that repeats an earlier key of the
// same object, in document order. Keys are compared as decoded strings,
// as encoding/json and the validator decode them: "a" and "\u0061" are
// the same key, and so are any two lone surrogate escapes ("\ud800" reads
// as U+FFFD), so a document without duplicates here has none for any
// common JSON parser.
//
// doc must be one JSON text (RFC 8259, UTF-8, surrounding whitespace
// allowed); otherwise the error is a *SyntaxError with its position, and
// the duplicates found before it are returned with it. Cost: one pass,
// memory proportional to the keys of doc; nesting is limited to MaxDepth.
func Duplicates(doc []byte) ([]Dup, error) {
	var w walker
	w.init()
	err := w.feed(doc)
	if err == nil && !w.s.complete() {
		err = &SyntaxError{Offset: len(doc), Msg: "unexpected end of JSON input"}
	}
	// Line and column, in one pass over the offsets (ascending).
	line, start, at := 1, 0, 0
	pos := func(off int) (int, int) {
		for ; at < off && at < len(doc); at++ {
			if doc[at] == '\n' {
				line, start = line+1, at+1
			}
		}
		return line, off - start + 1
	}
	for i := range w.dups {
		w.dups[i].Line, w.dups[i].Column = pos(w.dups[i].Offset)
	}
	if err != nil {
		err.Line, err.Column = pos(err.Offset)
		return w.dups, err
	}
	return w.dups, nil
}

// walker is a scanner that also tracks the path of every open container,
// for Duplicates and for the guard's error messages.
type walker struct {
	s    scanner
	path []seg // one per open container
	dups []Dup
}

// seg is where the walk is inside one open container.
type seg struct {
	obj bool
	key string // objects: the current member's key
	idx int    // arrays: the current element's index
}

func (w *walker) init() { w.s.reset() }

// feed scans b, continuing the scan.
func (w *walker) feed(b []byte) *SyntaxError {
	s := &w.s
	for _, c := range b {
		switch s.step(c) {
		case evError:
			return &SyntaxError{Offset: s.st.off - 1, Msg: s.why}
		case evOpen:
			w.path = append(w.path, seg{obj: s.nodes[s.st.top].obj})
		case evClose:
			w.path = w.path[:len(w.path)-1]
		case evComma:
			w.path[len(w.path)-1].idx++
		case evKey:
			w.path[len(w.path)-1].key = string(s.key(int32(len(s.keys) - 1)))
		case evDup:
			key := string(s.openKey())
			w.path[len(w.path)-1].key = key
			w.dups = append(w.dups, Dup{Pointer: w.pointer(len(w.path) - 1), Key: key, Offset: s.st.keyAt, First: s.keys[s.dup].at})
		}
	}
	return nil
}

// pointer returns the JSON pointer of the open container at depth d.
func (w *walker) pointer(d int) string {
	var b strings.Builder
	for _, sg := range w.path[:d] {
		b.WriteByte('/')
		if sg.obj {
			b.WriteString(pointerEscaper.Replace(sg.key))
		} else {
			b.WriteString(strconv.Itoa(sg.idx))
		}
	}
	return b.String()
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// objectPointer returns the pointer of the innermost open object ("" if
// none is open: the root).
func (w *walker) objectPointer() string {
	d := len(w.path) - 1
	for d >= 0 && !w.path[d].obj {
		d--
	}
	return w.pointer(max(d, 0))
}

// SyntaxError reports bytes that cannot continue a JSON text.
type SyntaxError struct {
	Offset int // byte offset of the offending byte in the output (Duplicates: in the document)
	Line   int // Duplicates only: its line and column (bytes), 1-based
	Column int
	Msg    string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("jsonkeys: %d:%d: %s", e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("jsonkeys: offset %d: %s", e.Offset, e.Msg)
}

// DuplicateKeyError is returned by Accept and AcceptBytes for bytes that
// close a key its object already has. Offsets are in the guard's output.
type DuplicateKeyError struct {
	Dup
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("jsonkeys: offset %d: duplicate key %s in %s (first at offset %d)", e.Offset, strconv.Quote(e.Key), objectName(e.Pointer), e.First)
}

// DeadEndError reports an output that cannot go on without repeating a key:
// every key the grammar allows at this point of the object is one the
// object already has (or, from Filter, every allowed token closes one).
type DeadEndError struct {
	Pointer string // JSON pointer of the object ("" is the root)
	Prefix  string // the key so far, decoded, when inside one
	Keys    int    // keys the object already has
}

func (e *DeadEndError) Error() string {
	msg := fmt.Sprintf("jsonkeys: no unused key is possible for %s (it has %d keys", objectName(e.Pointer), e.Keys)
	if e.Prefix != "" {
		msg += ", the key so far is " + strconv.Quote(e.Prefix)
	}
	return msg + "): the grammar allows only keys it already has"
}

// CompletionError is returned by ShortestCompletion when no completion
// without a duplicate key was found within its bounds.
type CompletionError struct {
	Reason string
	Dup    *Dup // the duplicate the grammar's own shortest completion would close, if that is the reason
}

func (e *CompletionError) Error() string {
	if e.Dup != nil {
		return fmt.Sprintf("jsonkeys: no completion without a duplicate key: %s; the shortest completion repeats key %s in %s", e.Reason, strconv.Quote(e.Dup.Key), objectName(e.Dup.Pointer))
	}
	return "jsonkeys: no completion without a duplicate key: " + e.Reason
}
