package gbnf_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/grammartest"
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
