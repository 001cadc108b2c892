package mask_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

// BenchmarkBenchCases measures, for each GBNF bench case with the Llama-3
// vocabulary, the per-step mask time over the whole document (a fresh
// matcher per document pass, cold caches included in the first pass).
func BenchmarkBenchCases(b *testing.B) {
	cases, v := loadBench(b)
	mask.PrepareVocab(v)
	for _, bc := range cases {
		if bc.Grammar == "" {
			continue
		}
		g, err := gbnf.Parse(bc.Grammar)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.ID+"/compile", func(b *testing.B) {
			for b.Loop() {
				if _, err := mask.Compile(g, v); err != nil {
					b.Fatal(err)
				}
			}
		})
		c, err := mask.Compile(g, v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.ID+"/mask", func(b *testing.B) {
			words := make([]uint32, c.Words())
			var times []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				m := c.NewMatcher()
				for i := 0; i <= len(bc.Tokens); i++ {
					t0 := time.Now()
					m.FillMask(words)
					times = append(times, time.Since(t0))
					if i < len(bc.Tokens) {
						if err := m.Accept(bc.Tokens[i]); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			slices.Sort(times)
			var sum time.Duration
			for _, t := range times {
				sum += t
			}
			n := len(times)
			b.ReportMetric(float64(sum.Microseconds())/float64(n), "mean-us")
			b.ReportMetric(float64(times[n/2].Nanoseconds())/1e3, "p50-us")
			b.ReportMetric(float64(times[n*99/100].Nanoseconds())/1e3, "p99-us")
			b.ReportMetric(float64(times[n-1].Nanoseconds())/1e3, "max-us")
			_ = fmt.Sprint()
		})
	}
}
