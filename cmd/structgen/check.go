package main

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/mask"
)

type checkCmd struct {
	constraintFlags
	KeepNewline bool   `help:"Check the input as it is; by default one trailing newline is dropped."`
	Input       string `arg:"" optional:"" default:"-" help:"Input file ('-': standard input)."`
}

// rejectedError is a document the grammar does not accept (exit status 1).
type rejectedError struct{ msg string }

func (e *rejectedError) Error() string { return e.msg }

// Run checks the input against the grammar byte by byte and reports the
// first byte the grammar rejects (line:col, 1-based, columns in
// characters), or that the input stops before a complete sentence.
func (c *checkCmd) Run(e *env) error {
	if c.Schema == "" && c.Grammar == "" {
		return usagef("check: give --schema FILE or --grammar FILE")
	}
	opts, err := c.constraintFlags.options(e)
	if err != nil {
		return err
	}
	input, err := e.readInput(c.Input)
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if !c.KeepNewline {
		input = bytes.TrimSuffix(input, []byte("\n"))
		input = bytes.TrimSuffix(input, []byte("\r"))
	}
	eng, err := engine.New(nil, opts...)
	if err != nil {
		return err
	}
	compiled, err := eng.Compile()
	if err != nil {
		return inFile(c.source(), err)
	}
	name := c.Input
	if name == "-" {
		name = "<stdin>"
	}
	m := compiled.NewMatcher()
	if err := m.AcceptBytes(input); err != nil {
		var re *mask.RejectError
		if !errors.As(err, &re) {
			return fmt.Errorf("%s: %w", name, err)
		}
		line, col := position(input, re.Offset)
		return &rejectedError{fmt.Sprintf("%s:%d:%d: rejected: byte %d (%q) is not allowed here by %s", name, line, col, re.Offset, input[re.Offset:re.Offset+1], c.source())}
	}
	if !m.CanEnd() {
		line, col := position(input, len(input))
		return &rejectedError{fmt.Sprintf("%s:%d:%d: rejected: the input ends before a complete document of %s (it is a valid prefix)", name, line, col, c.source())}
	}
	_, err = fmt.Fprintf(e.stdout, "%s: accepted by %s\n", name, c.source())
	return err
}

// position returns the 1-based line and column (in UTF-8 characters) of
// byte offset off.
func position(b []byte, off int) (line, col int) {
	line = 1 + bytes.Count(b[:off], []byte("\n"))
	start := bytes.LastIndexByte(b[:off], '\n') + 1
	return line, 1 + utf8.RuneCount(b[start:off])
}
