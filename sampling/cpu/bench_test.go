package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchVocabs are the vocabulary sizes of the benchmarks: 32k (Llama 2,
// Mistral), 128k (Llama 3) and 256k (Gemma).
var benchVocabs = []int{32000, 128256, 256000}

// benchConfigs: llama.cpp's default settings, and top-k 40 alone.
var benchConfigs = []struct {
	name string
	p    Params
}{
	{"default", LlamaDefaults()},
	{"topk40", Params{Temperature: 1, TopK: 40}},
	// A repeat penalty makes the chain materialise every candidate (the
	// lazy top-k is off): llama.cpp's own way.
	{"default+penalty", func() Params { p := LlamaDefaults(); p.RepeatPenalty = 1.1; return p }()},
}

// BenchmarkChain compares, in one run, the chain against the plain
// sort-based reference (sort everything with slices.SortFunc, then apply
// the rules) on random logits (normal, σ = 3), cycling through 16 vectors.
func BenchmarkChain(b *testing.B) {
	for _, v := range benchVocabs {
		rng := rand.New(rand.NewPCG(uint64(v), 1))
		vecs := make([][]float32, 16)
		for i := range vecs {
			vecs[i] = randomLogits(rng, v, 3)
		}
		for _, cfg := range benchConfigs {
			b.Run(fmt.Sprintf("V=%d/%s/chain", v, cfg.name), func(b *testing.B) {
				c := mustChain(b, cfg.p)
				c.Sample(vecs[0]) // grow the buffers
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c.Sample(vecs[i&15])
					i++
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/token")
			})
			b.Run(fmt.Sprintf("V=%d/%s/sort-reference", v, cfg.name), func(b *testing.B) {
				r := newRef(cfg.p)
				r.sample(vecs[0]) // grow the buffer
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					r.sample(vecs[i&15])
					i++
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/token")
			})
		}
	}
}
