package gbnf

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in grammar source, at a position.
// It prints as "line:col: msg" (1-based line and byte column).
type Error struct {
	Pos Pos
	Msg string

	cause error // the participle error behind a syntax error, if any
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
}

// Unwrap returns the parser library's error behind a syntax error (a
// participle.Error with the same position), or nil.
func (e *Error) Unwrap() error { return e.cause }

// ErrorList is a list of errors sorted by position. Parse reports at most
// MaxErrors of them; the last one then says that more were left out.
type ErrorList []*Error

// Error prints the first error, and how many more there are.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0].Error(), len(l)-1)
}

// Unwrap gives the errors to errors.Is and errors.As, so that
// errors.As(err, &e) with e a *Error finds the first one.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns nil for an empty list, else the list itself.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Detail prints every error, one a line.
func (l ErrorList) Detail() string {
	var b strings.Builder
	for _, e := range l {
		b.WriteString(e.Error())
		b.WriteByte('\n')
	}
	return b.String()
}

// errorCollector gathers errors up to MaxErrors.
type errorCollector struct {
	list    ErrorList
	dropped int
}

func (c *errorCollector) add(pos Pos, format string, args ...any) {
	c.list = append(c.list, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// err sorts the errors by position, keeps the first MaxErrors and returns
// the list (nil when empty).
func (c *errorCollector) err() error {
	if len(c.list) == 0 {
		return nil
	}
	sort.SliceStable(c.list, func(i, j int) bool { return c.list[i].Pos.Offset < c.list[j].Pos.Offset })
	if len(c.list) > MaxErrors {
		n := len(c.list) - MaxErrors
		last := c.list[MaxErrors-1]
		c.list = c.list[:MaxErrors]
		c.list[MaxErrors-1] = &Error{Pos: last.Pos, Msg: fmt.Sprintf("%s (%d more errors not shown)", last.Msg, n)}
	}
	return c.list
}
