package main

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

type checkCmd struct {
	constraintFlags
	Exact       bool   `help:"Check the exact bytes against the grammar (could structgen have written them?) instead of validating; the only mode with --grammar."`
	KeepNewline bool   `help:"With --exact, check the input as it is; by default one trailing newline is dropped."`
	Input       string `arg:"" optional:"" default:"-" help:"Input file ('-': standard input)."`
}

// rejectedError is a document that fails the check (exit status 1).
type rejectedError struct{ msg string }

func (e *rejectedError) Error() string { return e.msg }

// Run checks the input. With --schema (and without --exact) it reports,
// one line each on stdout, whether the document is valid against the
// schema (santhosh-tekuri/jsonschema; every violation with its JSON
// pointer and line:col, missing required properties named as such,
// duplicate keys) and whether structgen's grammar for the schema accepts
// the document's canonical form (jsonschema2gbnf.Format: schema key
// order, canonical strings, the --whitespace layout); the exit status is
// 1 when the document is invalid. With --exact or --grammar it checks
// the bytes themselves against the grammar and reports the first byte it
// rejects.
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
	name := c.Input
	if name == "-" {
		name = "<stdin>"
	}
	eng, err := engine.New(nil, opts...)
	if err != nil {
		return err
	}
	compiled, cerr := eng.Compile()
	if c.Exact || c.Grammar != "" {
		if cerr != nil {
			return inFile(c.source(), cerr)
		}
		return c.exact(e, name, input, compiled)
	}
	// Validation does not need the grammar: a schema the grammar cannot
	// express (strict mode) is still validated.
	return c.validate(e, name, input, compiled, cerr)
}

// exact runs the bytes through the grammar.
func (c *checkCmd) exact(e *env, name string, input []byte, compiled *mask.Compiled) error {
	if !c.KeepNewline {
		input = bytes.TrimSuffix(input, []byte("\n"))
		input = bytes.TrimSuffix(input, []byte("\r"))
	}
	if err := grammarAccepts(compiled, input); err != nil {
		return &rejectedError{fmt.Sprintf("%s:%s: rejected: %s by %s", name, err.pos(input), err.msg, c.source())}
	}
	_, err := fmt.Fprintf(e.stdout, "%s: accepted by %s\n", name, c.source())
	return err
}

// grammarError is where and why a grammar rejects some bytes.
type grammarError struct {
	off int
	msg string
}

func (g *grammarError) pos(b []byte) string {
	line, col := position(b, g.off)
	return fmt.Sprintf("%d:%d", line, col)
}

// grammarAccepts feeds b to a fresh matcher; nil when b is a complete
// sentence of the grammar.
func grammarAccepts(compiled *mask.Compiled, b []byte) *grammarError {
	m := compiled.NewMatcher()
	if err := m.AcceptBytes(b); err != nil {
		var re *mask.RejectError
		if !errors.As(err, &re) {
			return &grammarError{0, err.Error()}
		}
		return &grammarError{re.Offset, fmt.Sprintf("byte %d (%q) is not allowed here", re.Offset, b[re.Offset:re.Offset+1])}
	}
	if !m.CanEnd() {
		return &grammarError{len(b), "the input ends before a complete document (it is a valid prefix)"}
	}
	return nil
}

// validate validates the document against the schema and checks its
// canonical form against the grammar.
func (c *checkCmd) validate(e *env, name string, input []byte, compiled *mask.Compiled, cerr error) error {
	schema := c.schemaSrc
	validator, err := jsonschema2gbnf.CompileSchema(schema)
	if err != nil {
		return inFile(c.Schema, err)
	}
	doc, err := scanDocument(input)
	if err != nil {
		var pe *docError
		if errors.As(err, &pe) {
			return &rejectedError{fmt.Sprintf("%s:%s: not JSON: %s", name, pe.pos(input), pe.msg)}
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	var problems []problem
	for _, d := range doc.dups {
		first := doc.at(d.first)
		problems = append(problems, problem{d.off, fmt.Sprintf("#%s: duplicate key %q (first at %d:%d)", d.ptr, d.key, first.line, first.col)})
	}
	if err := validateDoc(validator, doc.value); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return fmt.Errorf("%s: %w", name, err)
		}
		problems = append(problems, doc.problems(ve)...)
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].off < problems[j].off })
	for _, p := range problems {
		at := doc.at(p.off)
		fmt.Fprintf(e.stdout, "%s:%d:%d: invalid: %s\n", name, at.line, at.col, p.msg)
	}
	if len(problems) == 0 {
		fmt.Fprintf(e.stdout, "%s: valid against %s\n", name, c.Schema)
	}

	var fopts []jsonschema2gbnf.Option
	if c.Whitespace == "flexible" {
		fopts = append(fopts, jsonschema2gbnf.FlexibleWhitespace(0))
	}
	switch canon, err := jsonschema2gbnf.Format(schema, input, fopts...); {
	case cerr != nil:
		fmt.Fprintf(e.stdout, "%s: no grammar to check the canonical form with: %v\n", name, inFile(c.Schema, cerr))
	case err != nil:
		fmt.Fprintf(e.stdout, "%s: canonical form: %v\n", name, err)
	default:
		if ge := grammarAccepts(compiled, canon); ge != nil {
			fmt.Fprintf(e.stdout, "%s: canonical form rejected by the grammar of %s at %s of it: %s (canonical form: %s)\n",
				name, c.Schema, ge.pos(canon), ge.msg, clip(canon, 200))
		} else {
			fmt.Fprintf(e.stdout, "%s: canonical form accepted by the grammar of %s\n", name, c.Schema)
		}
	}
	if len(problems) > 0 {
		return &rejectedError{fmt.Sprintf("%s: invalid against %s: %d problem(s), listed on stdout", name, c.Schema, len(problems))}
	}
	return nil
}

// validateDoc validates v; a number beyond the validator's range is an
// error naming it and its pointer (jsonschema2gbnf.NumberRangeError),
// never a validator panic.
func validateDoc(s *jsonschema.Schema, v any) error {
	return jsonschema2gbnf.ValidateValue(s, v)
}

// problem is one reason a document is invalid, at a byte offset.
type problem struct {
	off int
	msg string
}

// problems flattens a validation error to its leaves (the failed
// keywords), each at the position of its instance; a failed `required`
// names every missing property with its JSON pointer.
func (d *document) problems(ve *jsonschema.ValidationError) []problem {
	var out []problem
	seen := map[string]bool{}
	var walk func(*jsonschema.ValidationError)
	walk = func(ve *jsonschema.ValidationError) {
		if len(ve.Causes) > 0 {
			for _, c := range ve.Causes {
				walk(c)
			}
			return
		}
		off := d.offsets[ve.InstanceLocation]
		var msgs []string
		if names, ok := missingNames(ve); ok {
			for _, n := range names {
				msgs = append(msgs, fmt.Sprintf("#%s/%s: missing required property %q", ve.InstanceLocation, escapePointer(n), n))
			}
		} else {
			msgs = append(msgs, fmt.Sprintf("#%s: %s (schema #%s)", ve.InstanceLocation, ve.Message, ve.KeywordLocation))
		}
		for _, m := range msgs {
			if !seen[m] {
				seen[m] = true
				out = append(out, problem{off, m})
			}
		}
	}
	walk(ve)
	return out
}

// missingNames reads the property names from a failed `required`
// ("missing properties: 'a', 'b\'c'"; santhosh-tekuri quotes them as Go
// does, with single quotes).
func missingNames(ve *jsonschema.ValidationError) ([]string, bool) {
	if !strings.HasSuffix(ve.KeywordLocation, "/required") {
		return nil, false
	}
	s, ok := strings.CutPrefix(ve.Message, "missing properties: ")
	if !ok {
		return nil, false
	}
	var names []string
	for s != "" {
		if s[0] != '\'' {
			return nil, false
		}
		end := -1
		for i := 1; i < len(s); i++ {
			if s[i] == '\\' {
				i++
			} else if s[i] == '\'' {
				end = i
				break
			}
		}
		if end < 0 {
			return nil, false
		}
		raw := strings.ReplaceAll(s[1:end], `\'`, `'`)
		name, err := unquoteGo(raw)
		if err != nil {
			return nil, false
		}
		names = append(names, name)
		s = strings.TrimPrefix(s[end+1:], ", ")
	}
	return names, len(names) > 0
}

// position returns the 1-based line and column (in UTF-8 characters) of
// byte offset off.
func position(b []byte, off int) (line, col int) {
	line = 1 + bytes.Count(b[:off], []byte("\n"))
	start := bytes.LastIndexByte(b[:off], '\n') + 1
	return line, 1 + utf8.RuneCount(b[start:off])
}

// clip shortens b to about n bytes for a message.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
