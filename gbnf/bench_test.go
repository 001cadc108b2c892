package gbnf_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/grammartest"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

// BenchmarkParse measures Parse on the regression suite's JSON grammar
// and on a large generated grammar (about 1 MB, 20000 rules), in MB/s.
func BenchmarkParse(b *testing.B) {
	var json string
	for _, c := range grammartest.Cases(b) {
		if c.Name == "16-json" {
			json = c.Grammar
		}
	}
	var big strings.Builder
	big.WriteString("root ::= r0\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&big, "r%d ::= \"lit\\n\" [a-z0-9_] r%d* | (\"x\" | [^\"\\\\]){2,5} # comment\n", i, (i+1)%20000)
	}
	for _, bc := range []struct{ name, src string }{{"json", json}, {"20000-rules", big.String()}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gbnf.Parse(bc.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// corpusGrammar converts the JSONSchemaBench schema at path in strict
// mode; ok is false when strict mode rejects it.
func corpusGrammar(tb testing.TB, path string) (src string, ok bool) {
	schema, err := sharedtest.ReadSchema(path)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := jsonschema2gbnf.Convert(schema)
	return g, err == nil
}

// BenchmarkParseCorpus measures Parse on what it mostly reads: the
// grammars jsonschema2gbnf writes for the JSONSchemaBench corpus. It
// converts every 8th schema (in path order) once, then parses all their
// grammars per iteration; MB/s is over their total size (2.6 MB, 249 grammars).
func BenchmarkParseCorpus(b *testing.B) {
	paths, _ := filepath.Glob(filepath.Join(sharedtest.Path(b, "corpus", "jsonschemabench"), "*", "*.json"))
	var srcs []string
	size := 0
	for i := 0; i < len(paths); i += 8 {
		g, ok := corpusGrammar(b, paths[i])
		if !ok {
			continue // not convertible in strict mode: not a grammar to parse
		}
		srcs = append(srcs, g)
		size += len(g)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, src := range srcs {
			if _, err := gbnf.Parse(src); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkParseLarge measures Parse on the converter's largest grammars
// of the JSONSchemaBench corpus, one at a time: Handwritten/allany20
// (1.6 MB), Github_ultra/o48661 (1.4 MB) and JsonSchemaStore/detekt-1.22.0
// (1.0 MB), in MB/s.
func BenchmarkParseLarge(b *testing.B) {
	dir := sharedtest.Path(b, "corpus", "jsonschemabench")
	for _, bc := range []struct{ name, path string }{
		{"allany20", "Handwritten/allany20.json"},
		{"o48661", "Github_ultra/o48661.json"},
		{"detekt", "JsonSchemaStore/detekt-1.22.0.json"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			src, ok := corpusGrammar(b, filepath.Join(dir, bc.path))
			if !ok {
				b.Fatalf("%s does not convert in strict mode", bc.path)
			}
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gbnf.Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnalyze measures the analyses and the printer on the large
// generated grammar.
func BenchmarkAnalyze(b *testing.B) {
	var big strings.Builder
	big.WriteString("root ::= r0\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&big, "r%d ::= r%d? \"lit\" | [a-z] r%d\n", i, (i+1)%20000, (i+7)%20000)
	}
	g, err := gbnf.Parse(big.String())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Analyze", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			g.Analyze()
		}
	})
	b.Run("LeftRecursion", func(b *testing.B) {
		for b.Loop() {
			_ = g.LeftRecursion()
		}
	})
	b.Run("String", func(b *testing.B) {
		for b.Loop() {
			_ = g.String()
		}
	})
}
