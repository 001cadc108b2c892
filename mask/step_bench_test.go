package mask_test

import (
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

// BenchmarkWarmStep measures the steady state of a decode step, FillMask
// then Accept, replaying each bench document on a warm matcher (Reset
// between passes): ns/token, and allocations (none expected).
func BenchmarkWarmStep(b *testing.B) {
	cases, v := loadBench(b)
	mask.PrepareVocab(v)
	for _, bc := range cases {
		g, err := gbnf.Parse(grammarOf(b, bc))
		if err != nil {
			b.Fatal(err)
		}
		c, err := mask.CompileWith(g, v, mask.Options{EagerWork: -1, EagerTimeout: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.ID, func(b *testing.B) {
			words := make([]uint32, c.Words())
			m := c.NewMatcher()
			replay := func() {
				m.Reset()
				for _, tok := range bc.Tokens {
					m.FillMask(words)
					if err := m.Accept(tok); err != nil {
						b.Fatal(err)
					}
				}
			}
			replay()
			b.ReportAllocs()
			for b.Loop() {
				replay()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(bc.Tokens)), "ns/token")
		})
	}
}
