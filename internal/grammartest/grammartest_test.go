package grammartest

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	data := `A case.
left-recursive
-- grammar.gbnf --
root ::= "a" | root "a"
-- root --
  root
-- accept --
"a"

# a comment line
"a" "aa"
` + "`raw\\n`" + `
-- prefix --
""
-- reject --
"\xff\n"
<[10]> "x" <[2147483647]>
`
	c, err := Parse("x.txtar", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "x" || c.Root != "root" || !c.LeftRecursive || c.GrammarLine != 4 {
		t.Errorf("case fields: %+v", c)
	}
	if c.Grammar != "root ::= \"a\" | root \"a\"\n" {
		t.Errorf("grammar %q", c.Grammar)
	}
	if len(c.Accept) != 3 || len(c.Prefix) != 1 || len(c.Reject) != 2 {
		t.Fatalf("strings: %d accept, %d prefix, %d reject", len(c.Accept), len(c.Prefix), len(c.Reject))
	}
	want := []struct {
		s    String
		text string
		line int
		tok  bool
	}{
		{c.Accept[0], "a", 8, false},
		{c.Accept[1], "aaa", 11, false},
		{c.Accept[2], `raw\n`, 12, false},
		{c.Prefix[0], "", 14, false},
		{c.Reject[0], "\xff\n", 16, false},
		{c.Reject[1], "x", 17, true},
	}
	for i, w := range want {
		if string(w.s.Bytes()) != w.text || w.s.Line != w.line || w.s.HasTokens() != w.tok {
			t.Errorf("string %d: %q line %d tokens %v; want %q line %d tokens %v", i, w.s.Bytes(), w.s.Line, w.s.HasTokens(), w.text, w.line, w.tok)
		}
	}
	if got := c.Reject[1].Pos(); got != "x.txtar:17" {
		t.Errorf("Pos() = %s", got)
	}
	toks := c.Reject[1].Tokens()
	if len(toks) != 3 || toks[0].ID != 10 || string(toks[0].Text) != "<[10]>" || toks[1].ID != 0 || string(toks[1].Text) != "x" || toks[2].ID != 2147483647 {
		t.Errorf("tokens: %+v", toks)
	}
	toks = String{Segments: []Segment{{Text: []byte("é\xffa")}, {IsToken: true, Token: 5}}}.Tokens()
	if len(toks) != 4 || string(toks[0].Text) != "é" || string(toks[1].Text) != "\xff" || string(toks[2].Text) != "a" || toks[3].ID != 5 {
		t.Errorf("tokens of text with an invalid byte: %+v", toks)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ data, want string }{
		{"-- accept --\n\"a\"\n", "f.txtar: no grammar.gbnf section"},
		{"-- grammar.gbnf --\nroot ::= \"a\"\n-- accept --\n\"a\"\nnot quoted\n", `f.txtar:5: expected a Go string literal or a token <[N]> at "not quoted"`},
		{"-- grammar.gbnf --\nroot ::= \"a\"\n-- accept --\n\"a\n", `f.txtar:4: bad string literal "a: invalid syntax`},
		{"-- grammar.gbnf --\nroot ::= \"a\"\n-- reject --\n<[x]>\n", `f.txtar:4: bad token id in <[x]>`},
		{"-- grammar.gbnf --\nroot ::= \"a\"\n-- reject --\n<[3\n", `f.txtar:4: unterminated token <[3`},
		{"-- grammar.gbnf --\nroot ::= \"a\"\n-- rejects --\n", `f.txtar:3: unknown section "rejects" (want grammar.gbnf, root, accept, reject, prefix)`},
		{"-- grammar.gbnf --\nroot ::= \"a\"\n-- root --\n\n", `f.txtar:3: empty root section`},
		{"-- grammar.gbnf --\n-- grammar.gbnf --\n", `f.txtar:2: section "grammar.gbnf" appears twice`},
	}
	for _, tt := range tests {
		_, err := Parse("f.txtar", []byte(tt.data))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %s", tt.data, err, tt.want)
		}
	}
}

func TestSuiteLoads(t *testing.T) {
	cases := Cases(t)
	for _, c := range cases {
		if c.Grammar == "" || len(c.Accept) == 0 || len(c.Reject) == 0 {
			t.Errorf("%s: needs a grammar, accepted and rejected strings", c.File)
		}
	}
}
