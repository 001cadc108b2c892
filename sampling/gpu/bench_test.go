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

// BenchmarkVsCPUChain runs, on the same 128k random logits (normal,
// σ = 3) in one run, the Gumbel-max sampler and the CPU chain with the same
// settings: top-k 40 (the DESIGN.md target: Gumbel-max ≥ 2× faster),
// llama.cpp's default settings, no filter at all, and top-p alone. "hot"
// samples one vector again and again (it stays in cache, as logits just
// written by the model mostly do); "cold" cycles through 8 vectors (4 MiB,
// beyond L2), where both samplers wait on memory.
func BenchmarkVsCPUChain(b *testing.B) {
	vecs := benchLogits(128256, 8)
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
		for _, cache := range []string{"hot", "cold"} {
			mask := 0
			if cache == "cold" {
				mask = 7
			}
			b.Run(cfg.name+"/"+cache+"/gumbel", func(b *testing.B) {
				Sample(vecs[0], nil, 0, cfg.g)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					Sample(vecs[i&mask], nil, uint32(i), cfg.g)
					i++
				}
				perToken(b)
			})
			b.Run(cfg.name+"/"+cache+"/cpu-chain", func(b *testing.B) {
				c, err := cpu.NewChain(cfg.c)
				if err != nil {
					b.Fatal(err)
				}
				c.Sample(vecs[0])
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c.Sample(vecs[i&mask])
					i++
				}
				perToken(b)
			})
		}
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
				Sample(vecs[0], nil, 0, p)
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
				SampleF16(f16, nil, 0, p)
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
// worker pool forced on and forced off, per vocabulary size, for settings
// dominated by each kind of pass: top-k 40 (the max/heap pass), no filter
// (the argmax pass), top-p alone (the mass pass), top-k 2000 (the counting
// passes), and float16 input (the widening pass).
func BenchmarkParallelThreshold(b *testing.B) {
	old := parallelMin
	defer func() { parallelMin = old }()
	for _, cfg := range []struct {
		name string
		p    Params
		f16  bool
	}{
		{"topk40", Params{Temperature: 1, TopK: 40}, false},
		{"nofilter", Params{Temperature: 1}, false},
		{"topp0.9", Params{Temperature: 1, TopP: 0.9}, false},
		{"topk2000", Params{Temperature: 1, TopK: 2000}, false},
		{"f16-topk40", Params{Temperature: 1, TopK: 40}, true},
	} {
		for _, v := range []int{16384, 32768, 65536, 131072, 262144} {
			vecs := benchLogits(v, 4)
			h := toF16(vecs[0])
			for _, par := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/V=%d/parallel=%v", cfg.name, v, par), func(b *testing.B) {
					for ph := range parallelMin {
						parallelMin[ph] = 1 << 30
						if par {
							parallelMin[ph] = 0
						}
					}
					i := 0
					for b.Loop() {
						if cfg.f16 {
							SampleF16(h, nil, uint32(i), cfg.p)
						} else {
							Sample(vecs[i&3], nil, uint32(i), cfg.p)
						}
						i++
					}
					perToken(b)
				})
			}
		}
	}
}
