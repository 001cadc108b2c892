package gbnf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/grammartest"
)

// metaGrammar loads the GBNF grammar of GBNF from the regression suite.
func metaGrammar(t *testing.T) *grammartest.Case {
	t.Helper()
	dir, err := grammartest.Dir()
	if err != nil {
		t.Fatal(err)
	}
	c, err := grammartest.LoadFile(filepath.Join(dir, "40-gbnf.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDocGrammar checks that the package doc shows the same grammar of
// GBNF as the regression suite.
func TestDocGrammar(t *testing.T) {
	c := metaGrammar(t)
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, line := range strings.Split(strings.TrimRight(c.Grammar, "\n"), "\n") {
		want.WriteString("//\t" + line + "\n")
	}
	if !strings.Contains(string(doc), want.String()) {
		t.Errorf("doc.go does not hold the grammar of %s:\n%s", c.File, want.String())
	}
}

// TestMetaGrammar: every source the parser accepts, and every printed
// grammar, is a sentence of the grammar of GBNF (run by the reference
// recognizer): the two descriptions of the syntax agree on these.
func TestMetaGrammar(t *testing.T) {
	c := metaGrammar(t)
	meta, err := gbnf.Parse(c.Grammar)
	if err != nil {
		t.Fatal(err)
	}
	r := earley.New(meta)
	var srcs []string
	for _, src := range testSources(t) {
		if len(src) < 2000 {
			srcs = append(srcs, src)
		}
	}
	checked := 0
	for _, src := range srcs {
		g, err := gbnf.Parse(src)
		if err != nil {
			if r.Accepts([]byte(src)) && !strings.Contains(err.Error(), "rule") && !semantic(err) {
				t.Errorf("%q: the parser fails (%v) but the grammar of GBNF accepts it", src, err)
			}
			continue
		}
		checked++
		if !r.Accepts([]byte(src)) {
			t.Errorf("%q parses, but the grammar of GBNF rejects it", src)
		}
		if out := g.String(); !r.Accepts([]byte(out)) {
			t.Errorf("printed %q is rejected by the grammar of GBNF", out)
		}
	}
	if checked < 100 {
		t.Errorf("only %d grammars checked", checked)
	}
}

// semantic reports whether a parse error is one the syntax cannot see.
func semantic(err error) bool {
	for _, s := range []string{"inverted range", "surrogate", "above U+10FFFF", "holds no Unicode", "MaxRepeat", "minimum above", "MaxTokenID", "NUL", "MaxDepth", "MaxRules", "MaxSourceBytes", "empty token text"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}
