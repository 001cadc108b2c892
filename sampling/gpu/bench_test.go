package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/structgen/structgen/sampling/cpu"
)

func benchLogits(v, n int) [][]float32 {
	rng := rand.New(rand.NewPCG(uint64(v), 7))
	vecs := make([][]float32, n)
	for j := range vecs {
		l := make([]float32, v)
		for i := range l {
			l[i] = float32(rng.NormFloat64() * 3)
		}
		vecs[j] = l
	}
	return vecs
}

func perToken(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/token")
}

// BenchmarkVsCPUChain runs, on the same 128k random logits in one run, the
// Gumbel-max sampler and the CPU chain with the same settings: top-k 40
// (the DESIGN.md target: Gumbel-max ≥ 2× faster), llama.cpp's default
// settings, and no filter at all.
func BenchmarkVsCPUChain(b *testing.B) {
	vecs := benchLogits(128256, 8)
	prev := []int32{11, 500, 9000, 11}
	for _, cfg := range []struct {
		name string
		g    Params
		c    cpu.Params
	}{
		{"topk40", Params{Temperature: 1, TopK: 40}, cpu.Params{Temperature: 1, TopK: 40}},
		{"default", Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05}, cpu.LlamaDefaults()},
		{"nofilter", Params{Temperature: 1}, cpu.Params{Temperature: 1}},
		{"topp0.9", Params{Temperature: 1, TopP: 0.9}, cpu.Params{Temperature: 1, TopP: 0.9}},
	} {
		b.Run(cfg.name+"/gumbel", func(b *testing.B) {
			Sample(vecs[0], prev, 0, cfg.g)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				Sample(vecs[i&7], prev, uint32(i), cfg.g)
				i++
			}
			perToken(b)
		})
		b.Run(cfg.name+"/cpu-chain", func(b *testing.B) {
			c, err := cpu.NewChain(cfg.c)
			if err != nil {
				b.Fatal(err)
			}
			c.Sample(vecs[0])
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.Sample(vecs[i&7])
				i++
			}
			perToken(b)
		})
	}
}

// BenchmarkVocab: Gumbel-max top-k 40 and unfiltered at 32k/128k/256k, F32
// and F16.
func BenchmarkVocab(b *testing.B) {
	for _, v := range []int{32000, 128256, 256000} {
		vecs := benchLogits(v, 4)
		for _, p := range []Params{{Temperature: 1, TopK: 40}, {Temperature: 1}} {
			name := fmt.Sprintf("V=%d/k=%d", v, p.TopK)
			b.Run(name+"/f32", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					Sample(vecs[i&3], nil, uint32(i), p)
					i++
				}
				perToken(b)
			})
			f16 := toF16(vecs[0])
			b.Run(name+"/f16", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					SampleF16(f16, nil, uint32(i), p)
					i++
				}
				perToken(b)
			})
		}
	}
}

// BenchmarkParallelThreshold decides parallelMin: the same call with the
// worker pool forced on and forced off, per vocabulary size.
func BenchmarkParallelThreshold(b *testing.B) {
	old := parallelMin
	defer func() { parallelMin = old }()
	for _, v := range []int{8192, 16384, 32768, 65536, 131072} {
		vecs := benchLogits(v, 4)
		for _, par := range []bool{false, true} {
			b.Run(fmt.Sprintf("V=%d/parallel=%v", v, par), func(b *testing.B) {
				if par {
					parallelMin = 0
				} else {
					parallelMin = 1 << 30
				}
				p := Params{Temperature: 1, TopK: 40}
				i := 0
				for b.Loop() {
					Sample(vecs[i&3], nil, uint32(i), p)
					i++
				}
				perToken(b)
			})
		}
	}
}
