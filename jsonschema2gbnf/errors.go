package jsonschema2gbnf

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Every error Convert returns is one of the types below, or a
// *NumberRangeError (numrange.go), or an ErrorList of them, so that
// callers can tell failure kinds apart with errors.As.
// Each names the JSON pointer of the schema location it is about, written
// as a URI fragment of the root document ("#/properties/age"); a location
// in another resource (a meta-schema) is written as its full URL.

// UnsupportedError reports a keyword (or a value of a keyword) that the
// grammar cannot enforce exactly, in strict mode.
type UnsupportedError struct {
	Pointer string // the schema holding the keyword, e.g. "#/properties/age"
	Keyword string // e.g. "not"
	Reason  string // why it cannot be expressed; may be empty
}

func (e *UnsupportedError) Error() string {
	s := joinPointer(e.Pointer, e.Keyword) + ": unsupported keyword " + strconv.Quote(e.Keyword)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// InvalidSchemaError reports a schema that is not valid JSON or not a
// valid JSON Schema (meta-validation failed, an unknown type, ...).
type InvalidSchemaError struct {
	Pointer string // "#" for the document itself
	Msg     string
	Err     error // the underlying error (json or santhosh-tekuri), may be nil
}

func (e *InvalidSchemaError) Error() string {
	return e.Pointer + ": invalid schema: " + e.Msg
}

func (e *InvalidSchemaError) Unwrap() error { return e.Err }

// RemoteRefError reports a $ref (or $schema) to a document other than
// the schema itself. Convert never loads anything over the network or
// from disk.
type RemoteRefError struct {
	Pointer string // the schema holding the reference, when known
	Ref     string // the reference as resolved to an absolute URL
}

func (e *RemoteRefError) Error() string {
	p := e.Pointer
	if p == "" {
		p = "#"
	}
	return p + ": remote reference " + strconv.Quote(e.Ref) + " is not supported (only references inside the schema are resolved)"
}

// LimitError reports an input that exceeds one of the converter's limits
// (schema size, nesting, expansion, enum size, regex size, repetition
// bounds, grammar size). Limit names the constant.
type LimitError struct {
	Pointer string
	Limit   string // name of the limit constant, e.g. "MaxSchemaBytes"
	Value   int    // the value that exceeded it, when known (else 0)
	Max     int
	Hint    string // what the limit protects or how to stay within it; may be empty
}

func (e *LimitError) Error() string {
	p := e.Pointer
	if p == "" {
		p = "#"
	}
	s := fmt.Sprintf("%s: %s (%d) exceeded", p, e.Limit, e.Max)
	if e.Value > 0 {
		s = fmt.Sprintf("%s: %s exceeded (%d > %d)", p, e.Limit, e.Value, e.Max)
	}
	if e.Hint != "" {
		s += ": " + e.Hint
	}
	return s
}

// UnsatisfiableError reports a schema no JSON value satisfies, so no
// grammar can be written (for example `false`, or `"type": "integer"`
// with `"minimum": 2, "maximum": 1`).
type UnsatisfiableError struct {
	Pointer string
}

func (e *UnsatisfiableError) Error() string {
	return e.Pointer + ": schema is unsatisfiable: no JSON value is valid"
}

// OptionError reports an invalid option value.
type OptionError struct {
	Option string
	Msg    string
}

func (e *OptionError) Error() string { return "jsonschema2gbnf: option " + e.Option + ": " + e.Msg }

// ErrorList holds several errors, sorted by pointer then keyword. Convert
// returns one when more than one keyword is unsupported; errors.As and
// errors.Is look into every element.
type ErrorList []error

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the errors of the list (for errors.As and errors.Is).
func (l ErrorList) Unwrap() []error { return l }

// Warning is what lenient mode reports for each keyword it relaxed,
// instead of failing.
type Warning struct {
	Pointer string // the schema holding the keyword
	Keyword string
	Msg     string // what was done instead, e.g. "ignored: the grammar cannot enforce it"
}

func (w Warning) String() string {
	return joinPointer(w.Pointer, w.Keyword) + ": " + w.Msg
}

// joinPointer appends a keyword token to a pointer fragment.
func joinPointer(ptr, tok string) string {
	if ptr == "" {
		ptr = "#"
	}
	if tok == "" {
		return ptr
	}
	tok = strings.ReplaceAll(tok, "~", "~0")
	tok = strings.ReplaceAll(tok, "/", "~1")
	if strings.HasSuffix(ptr, "/") {
		return ptr + tok
	}
	return ptr + "/" + tok
}

// sortErrors orders errors by their text (pointer first, then keyword),
// removes duplicates and packs them: nil, the single error, or an ErrorList.
func sortErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	out := errs[:1]
	for _, e := range errs[1:] {
		if e.Error() != out[len(out)-1].Error() {
			out = append(out, e)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return ErrorList(out)
}
