package earley_test

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/grammartest"
)

func gbnfParseRoot(c *grammartest.Case) (*gbnf.Grammar, error) {
	return gbnf.ParseWithRoot(c.Grammar, c.Root)
}

func suiteGrammar(tb testing.TB, name string) *gbnf.Grammar {
	tb.Helper()
	for _, c := range grammartest.Cases(tb) {
		if c.Name == name {
			g, err := gbnfParseRoot(c)
			if err != nil {
				tb.Fatal(err)
			}
			return g
		}
	}
	tb.Fatalf("no suite case %s", name)
	return nil
}

// jsonDoc builds a JSON document of about n bytes.
func jsonDoc(n int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"id": 12345, "name": "caf\u00e9 ☕", "tags": ["a", "b"], "ok": true, "score": -1.5e3}`)
	}
	b.WriteString("]")
	return []byte(b.String())
}

// BenchmarkAccepts measures the reference recognizer on a 4 KB JSON
// document (suite grammar 16-json) and a generated C-like program.
func BenchmarkAccepts(b *testing.B) {
	b.Run("json-4KB", func(b *testing.B) {
		r := earley.New(suiteGrammar(b, "16-json"))
		doc := jsonDoc(4096)
		if !r.Accepts(doc) {
			b.Fatal("document not accepted")
		}
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			r.Accepts(doc)
		}
	})
	b.Run("c-like-2KB", func(b *testing.B) {
		g := suiteGrammar(b, "28-c-like")
		r := earley.New(g)
		var prog []byte
		rng := rand.New(rand.NewSource(1))
		for len(prog) < 2000 {
			s, _ := earley.Generate(g, rng, 400)
			prog = append(prog, s...)
			prog = append(prog, '\n')
		}
		if !r.Accepts(prog) {
			b.Fatal("program not accepted")
		}
		b.SetBytes(int64(len(prog)))
		b.ReportAllocs()
		for b.Loop() {
			r.Accepts(prog)
		}
	})
}
