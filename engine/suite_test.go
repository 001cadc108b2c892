package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/grammartest"
)

// Every grammar of the regression suite, with the noise model and without
// a model, at several budgets: the output is a sentence of the grammar
// (checked by the reference recognizer), the tokens spell it, and the
// budget holds (or is too small for any sentence: ErrBudget).
func TestSuiteGrammars(t *testing.T) {
	ctx := context.Background()
	for _, c := range grammartest.Cases(t) {
		if c.Root != "root" || strings.Contains(c.Grammar, "<[") || strings.Contains(c.Grammar, "<|") {
			continue // token references: the fake vocabulary has none of those ids
		}
		t.Run(c.Name, func(t *testing.T) {
			g, err := gbnf.Parse(c.Grammar)
			if err != nil {
				t.Fatal(err)
			}
			rec := earley.New(g)
			f := newFakeModel()
			e := newEngine(t, f, engine.WithGrammar(c.Grammar))
			if _, err := e.Compile(); err != nil && c.LeftRecursive {
				t.Skipf("mask does not compile this left-recursive grammar: %v", err)
			}
			nm, err := engine.New(nil, engine.WithGrammar(c.Grammar))
			if err != nil {
				t.Fatal(err)
			}
			for _, budget := range []int{6, 40} {
				for seed := range uint32(3) {
					res, err := e.Generate(ctx, "x", engine.WithSeed(seed), engine.WithMaxTokens(budget))
					if errors.Is(err, engine.ErrBudget) {
						continue
					}
					if err != nil {
						t.Fatalf("budget %d seed %d: %v", budget, seed, err)
					}
					checkResult(t, res)
					if !rec.Accepts([]byte(res.Output)) {
						t.Errorf("budget %d seed %d: %q is not a sentence (stop %s)", budget, seed, res.Output, res.Stop)
					}
					if spell(f, res.Tokens) != res.Text || len(res.Tokens) > budget {
						t.Errorf("budget %d seed %d: %d tokens spell %q, text %q", budget, seed, len(res.Tokens), spell(f, res.Tokens), res.Text)
					}
				}
			}
			for seed := range uint32(10) {
				res, err := nm.Generate(ctx, "", engine.WithSeed(seed), engine.WithMaxBytes(200))
				if err != nil {
					t.Fatalf("no model, seed %d: %v", seed, err)
				}
				if !rec.Accepts([]byte(res.Output)) || len(res.Output) > 200 {
					t.Errorf("no model, seed %d: %q is not a sentence of at most 200 bytes", seed, res.Output)
				}
			}
		})
	}
}
