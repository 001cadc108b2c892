package mask_test

import (
	"math/bits"
	"path/filepath"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/benchcases"
	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

func loadBench(t testing.TB) ([]*benchcases.Case, *mask.Vocab) {
	t.Helper()
	dir := sharedtest.Dir(t)
	cases, err := benchcases.Load(filepath.Join(dir, "bench"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := llama3vocab.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cases, v
}

func popcount(b []uint32) int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount32(w)
	}
	return n
}

// TestBenchCasesGBNF feeds each GBNF bench document token by token: every
// token must be allowed, the end-of-generation tokens allowed at the end,
// and for cases 03 and 05 the number of allowed tokens at every step must
// equal XGrammar's (which equals llama.cpp's plus the two stop ids where
// the expression can end).
func TestBenchCasesGBNF(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases {
		if bc.Grammar == "" {
			continue
		}
		t.Run(bc.ID, func(t *testing.T) {
			g, err := gbnf.Parse(bc.Grammar)
			if err != nil {
				t.Fatal(err)
			}
			c, err := mask.Compile(g, v)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("compile: %+v", c.Stats())
			m := c.NewMatcher()
			words := make([]uint32, c.Words())
			checkCounts := bc.ID == "03-arith-ebnf" || bc.ID == "05-arith-numbers-ebnf"
			mismatches := 0
			for i := 0; i <= len(bc.Tokens); i++ {
				m.FillMask(words)
				if checkCounts {
					if got, want := popcount(words), bc.XGrammarCounts[i]; got != want && mismatches < 10 {
						mismatches++
						t.Errorf("step %d: %d tokens allowed, XGrammar allows %d", i, got, want)
					}
				}
				if i == len(bc.Tokens) {
					break
				}
				tok := bc.Tokens[i]
				if words[tok>>5]&(1<<(uint32(tok)&31)) == 0 {
					t.Fatalf("step %d: document token %d %q not in the mask", i, tok, v.Token(tok))
				}
				if err := m.Accept(tok); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if !m.CanEnd() {
				t.Fatal("cannot end after the document")
			}
			for _, eog := range []int32{llama3vocab.EndOfText, llama3vocab.EOT} {
				if words[eog>>5]&(1<<(uint32(eog)&31)) == 0 {
					t.Errorf("end-of-generation token %d not allowed at the end", eog)
				}
			}
		})
	}
}

// grammarOf returns the GBNF of a bench case (schemas converted with
// flexible whitespace, as the bench runs XGrammar with any_whitespace).
func grammarOf(t testing.TB, bc *benchcases.Case) string {
	t.Helper()
	if bc.Grammar != "" {
		return bc.Grammar
	}
	src, err := jsonschema2gbnf.Convert(bc.Schema, jsonschema2gbnf.FlexibleWhitespace(benchIndent))
	if err != nil {
		t.Fatalf("%s: %v", bc.ID, err)
	}
	return src
}

// benchIndent is the whitespace run allowed between JSON tokens for the
// schema bench cases (their documents are indented by 2 per level, at
// most 4 levels deep).
const benchIndent = 16

func TestBenchCasesSchema(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases {
		if bc.Schema == nil {
			continue
		}
		t.Run(bc.ID, func(t *testing.T) {
			src := grammarOf(t, bc)
			g, err := gbnf.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			c, err := mask.Compile(g, v)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("compile: %+v", c.Stats())
			m := c.NewMatcher()
			words := make([]uint32, c.Words())
			for i, tok := range bc.Tokens {
				m.FillMask(words)
				if words[tok>>5]&(1<<(uint32(tok)&31)) == 0 {
					t.Fatalf("step %d: document token %d %q not in the mask (after %q)", i, tok, v.Token(tok), bc.Doc[:min(len(bc.Doc), 0)])
				}
				if err := m.Accept(tok); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			m.FillMask(words)
			if !m.CanEnd() {
				t.Fatal("cannot end after the document")
			}
			for _, eog := range []int32{llama3vocab.EndOfText, llama3vocab.EOT} {
				if words[eog>>5]&(1<<(uint32(eog)&31)) == 0 {
					t.Errorf("end-of-generation token %d not allowed at the end", eog)
				}
			}
		})
	}
}

// compileCase parses bench case bc's grammar and compiles it against v.
func compileCase(t testing.TB, bc *benchcases.Case, v *mask.Vocab) *mask.Compiled {
	t.Helper()
	return compileSrc(t, grammarOf(t, bc), v)
}
