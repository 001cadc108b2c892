// Package grammartest loads the grammar regression suite,
// testdata/grammars/*.txtar, so that every package that matches grammars
// (the reference recognizer, the mask automaton, the CLI) runs the same
// cases and reports failures as file:line of the data file.
//
// # File format
//
// Each case is a txtar archive (golang.org/x/tools/txtar):
//
//	Free text describing the case. A line that is exactly
//	"left-recursive" marks a grammar that is left recursive.
//	-- grammar.gbnf --
//	root ::= ...
//	-- root --
//	name of the root rule (optional section; default "root")
//	-- accept --
//	"a sentence of the grammar"
//	-- reject --
//	"not even a prefix of a sentence: rejected mid-way"
//	-- prefix --
//	"a viable prefix that is not a complete sentence"
//
// In accept, reject and prefix, each non-blank line that does not start
// with "#" is one string, written as one or more segments separated by
// spaces: a Go string literal (strconv.Unquote: "..." or `...`), so any
// bytes fit, including newlines and halves of UTF-8 characters; or a token
// <[N]>.
//
// A string without tokens is a byte string. A string with tokens is a
// token sequence and is fed the way llama.cpp's test-grammar-integration
// does: each code point of a text segment is one token with id 0 and that
// code point as its text, and <[N]> is token N with text "<[N]>" (see
// String.Tokens).
package grammartest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/tools/txtar"
)

// Case is one grammar with its strings.
type Case struct {
	File          string // path of the .txtar file
	Name          string // file name without .txtar
	Comment       string // the archive's leading text
	Grammar       string // GBNF source
	GrammarLine   int    // line of the grammar's first line in File
	Root          string // root rule name
	LeftRecursive bool   // the comment marks the grammar left recursive
	Accept        []String
	Reject        []String
	Prefix        []String
}

// Segment is a piece of a String: text, or a token.
type Segment struct {
	Text    []byte
	IsToken bool
	Token   int32
}

// String is one test string and where it is written.
type String struct {
	Segments []Segment
	Src      string // the line as written
	File     string
	Line     int
}

// Pos returns "file:line".
func (s String) Pos() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// HasTokens reports whether s has token segments.
func (s String) HasTokens() bool {
	for _, seg := range s.Segments {
		if seg.IsToken {
			return true
		}
	}
	return false
}

// Bytes returns the text of s (token segments are left out).
func (s String) Bytes() []byte {
	var b []byte
	for _, seg := range s.Segments {
		b = append(b, seg.Text...)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// Token is one token of a token sequence.
type Token struct {
	ID   int32
	Text []byte
}

// Tokens returns s as llama.cpp's grammar test harness feeds it: every
// code point of a text segment (or invalid byte) is a token with id 0 and
// that text; a token segment <[N]> is token N with text "<[N]>".
func (s String) Tokens() []Token {
	var out []Token
	for _, seg := range s.Segments {
		if seg.IsToken {
			out = append(out, Token{ID: seg.Token, Text: []byte(fmt.Sprintf("<[%d]>", seg.Token))})
			continue
		}
		for t := seg.Text; len(t) > 0; {
			_, size := utf8.DecodeRune(t)
			out = append(out, Token{ID: 0, Text: t[:size:size]})
			t = t[size:]
		}
	}
	return out
}

// Dir returns the module's testdata/grammars folder, found by walking up
// from the working directory to go.mod.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "testdata", "grammars"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("grammartest: no go.mod above %s", wd)
		}
	}
}

// Cases loads every case of the suite or fails the test.
func Cases(tb testing.TB) []*Case {
	tb.Helper()
	dir, err := Dir()
	if err != nil {
		tb.Fatal(err)
	}
	cases, err := Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	if len(cases) == 0 {
		tb.Fatalf("no cases in %s", dir)
	}
	return cases
}

// Load loads every *.txtar file of dir, in name order.
func Load(dir string) ([]*Case, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var cases []*Case
	for _, p := range paths {
		c, err := LoadFile(p)
		if err != nil {
			return nil, err
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// LoadFile loads one case.
func LoadFile(path string) (*Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses the txtar data of one case; file names it in positions.
func Parse(file string, data []byte) (*Case, error) {
	ar := txtar.Parse(data)
	c := &Case{
		File:    file,
		Name:    strings.TrimSuffix(filepath.Base(file), ".txtar"),
		Comment: string(ar.Comment),
		Root:    "root",
	}
	for _, line := range strings.Split(c.Comment, "\n") {
		if strings.TrimSpace(line) == "left-recursive" {
			c.LeftRecursive = true
		}
	}
	starts := sectionLines(data, len(ar.Files))
	seen := map[string]bool{}
	for i, f := range ar.Files {
		first := starts[i] + 1 // line of the section's first content line
		if seen[f.Name] {
			return nil, fmt.Errorf("%s:%d: section %q appears twice", file, starts[i], f.Name)
		}
		seen[f.Name] = true
		switch f.Name {
		case "grammar.gbnf":
			c.Grammar = string(f.Data)
			c.GrammarLine = first
		case "root":
			c.Root = strings.TrimSpace(string(f.Data))
			if c.Root == "" {
				return nil, fmt.Errorf("%s:%d: empty root section", file, starts[i])
			}
		case "accept", "reject", "prefix":
			strs, err := parseStrings(file, first, f.Data)
			if err != nil {
				return nil, err
			}
			switch f.Name {
			case "accept":
				c.Accept = strs
			case "reject":
				c.Reject = strs
			case "prefix":
				c.Prefix = strs
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown section %q (want grammar.gbnf, root, accept, reject, prefix)", file, starts[i], f.Name)
		}
	}
	if !seen["grammar.gbnf"] {
		return nil, fmt.Errorf("%s: no grammar.gbnf section", file)
	}
	return c, nil
}

// sectionLines returns the 1-based line numbers of the first n txtar
// file markers ("-- name --" lines) of data.
func sectionLines(data []byte, n int) []int {
	var out []int
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(out) == n {
			break
		}
		l := bytes.TrimRight(line, "\r")
		if bytes.HasPrefix(l, []byte("-- ")) && bytes.HasSuffix(l, []byte(" --")) && len(l) >= 7 {
			out = append(out, i+1)
		}
	}
	for len(out) < n { // cannot happen for data txtar.Parse split
		out = append(out, 0)
	}
	return out
}

func parseStrings(file string, firstLine int, data []byte) ([]String, error) {
	var out []String
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		ln := firstLine + i
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		segs, err := parseSegments(t)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, ln, err)
		}
		out = append(out, String{Segments: segs, Src: t, File: file, Line: ln})
	}
	return out, nil
}

func parseSegments(t string) ([]Segment, error) {
	var segs []Segment
	for t = strings.TrimLeft(t, " \t"); t != ""; t = strings.TrimLeft(t, " \t") {
		switch {
		case t[0] == '"' || t[0] == '`':
			q, err := strconv.QuotedPrefix(t)
			if err != nil {
				return nil, fmt.Errorf("bad string literal %s: %v", t, err)
			}
			s, err := strconv.Unquote(q)
			if err != nil {
				return nil, fmt.Errorf("bad string literal %s: %v", q, err)
			}
			segs = append(segs, Segment{Text: []byte(s)})
			t = t[len(q):]
		case strings.HasPrefix(t, "<["):
			end := strings.Index(t, "]>")
			if end < 0 {
				return nil, fmt.Errorf("unterminated token %s", t)
			}
			id, err := strconv.ParseInt(t[2:end], 10, 32)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("bad token id in %s", t[:end+2])
			}
			segs = append(segs, Segment{IsToken: true, Token: int32(id)})
			t = t[end+2:]
		default:
			return nil, fmt.Errorf("expected a Go string literal or a token <[N]> at %q", t)
		}
	}
	return segs, nil
}
