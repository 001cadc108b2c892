package gbnf_test

import (
	"errors"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/grammartest"
)

// fuzzSeeds adds the table tests, the regression suite and the corpus
// (when ../shared is there) as seeds.
func fuzzSeeds(f *testing.F) {
	for _, src := range testSources(f) {
		f.Add(src)
	}
}

// FuzzParse: Parse never panics or hangs; it returns what the reference
// path (participle) returns, grammar or error, and the direct parser
// accepts exactly the valid grammars (checkDirect); an error is
// positioned inside the source; a grammar prints to GBNF that parses back
// to an equal grammar, and printing is a fixpoint.
//
// For short inputs it also checks the parser against the grammar of GBNF
// (testdata/grammars/40-gbnf.txtar) run by the reference recognizer: what
// parses is a sentence of that grammar.
func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	var meta *earley.Recognizer
	if dir, err := grammartest.Dir(); err == nil {
		if c, err := grammartest.LoadFile(filepath.Join(dir, "40-gbnf.txtar")); err == nil {
			if g, err := gbnf.Parse(c.Grammar); err == nil {
				meta = earley.New(g)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkDirect(t, "input", src)
		g, err := gbnf.Parse(src)
		if err != nil {
			if g != nil {
				t.Fatalf("grammar and error both returned: %v", err)
			}
			var list gbnf.ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error %T is not a non-empty ErrorList: %v", err, err)
			}
			for _, e := range list {
				if e.Pos.Line < 1 || e.Pos.Col < 1 || e.Pos.Offset < 0 || e.Pos.Offset > len(src) {
					t.Fatalf("error position %+v outside the source (%d bytes): %v", e.Pos, len(src), e)
				}
			}
			return
		}
		if meta != nil && len(src) <= 256 && !meta.Accepts([]byte(src)) {
			t.Fatalf("%q parses, but the grammar of GBNF rejects it", src)
		}
		out := g.String()
		g2, err := gbnf.Parse(out)
		if err != nil {
			t.Fatalf("printed grammar does not parse: %v\nsource: %q\nprinted: %q", err, src, out)
		}
		if !g.Equal(g2) {
			t.Fatalf("round trip differs\nsource: %q\nprinted: %q\nreprinted: %q", src, out, g2.String())
		}
		if out2 := g2.String(); out2 != out {
			t.Fatalf("printing is not a fixpoint: %q then %q", out, out2)
		}
		a := g.Analyze()
		_ = g.LeftRecursion()
		if len(a.Nullable) != len(g.Rules) {
			t.Fatalf("analysis size %d for %d rules", len(a.Nullable), len(g.Rules))
		}
		// The reference recognizer accepts what the generator derives,
		// and the shortest sentence is no shorter than MinLen says.
		if len(src) <= 300 {
			rng := rand.New(rand.NewSource(int64(len(src))))
			if s, ok := earley.Generate(g, rng, 40); ok {
				if !earley.New(g).Accepts(s) {
					t.Fatalf("generated %q is not accepted by %q", s, out)
				}
				if ml := a.MinLen[g.Root]; ml == gbnf.NoSentence || ml > len(s) {
					t.Fatalf("MinLen(root) = %d, but %q (%d bytes) is a sentence of %q", ml, s, len(s), out)
				}
			}
		}
	})
}
