//go:build llamacpp

package llamacpp_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"

	"github.com/structgen/structgen/engine/llamacpp"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/internal/testmodel"
	"github.com/structgen/structgen/sampling/cpu"
	"github.com/structgen/structgen/sampling/gpu"
)

// This file checks sampling/cpu against llama.cpp's own sampler chain
// (common_sampler through ollama's llama.SamplingContext, the pinned
// llama.cpp) on real logits of stories260K, and benchmarks both (and
// sampling/gpu) on a 128k vocabulary.

// llamaCtx is a model and context loaded through ollama's llama package (the
// SamplingContext needs its handles).
type llamaCtx struct {
	model *llama.Model
	ctx   *llama.Context
	batch *llama.Batch
}

func openLlama(tb testing.TB, path string) *llamaCtx {
	tb.Helper()
	// Load through the adapter first: it initialises llama.cpp's backend
	// the way the engine does.
	m, err := llamacpp.Load(path, llamacpp.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	m.Close()
	model, err := llama.LoadModelFromFile(path, llama.ModelParams{UseMmap: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { llama.FreeModel(model) })
	// One thread: ggml's workers spin while waiting, which on a shared
	// 2-core machine costs far more than it saves on these tiny models.
	ctx, err := llama.NewContextWithModel(model, llama.NewContextParams(512, 64, 1, 1, ml.FlashAttentionDisabled, ""))
	if err != nil {
		tb.Fatal(err)
	}
	batch, err := llama.NewBatch(64, 1, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(batch.Free)
	return &llamaCtx{model: model, ctx: ctx, batch: batch}
}

// decode runs tokens at positions pos… and returns a copy of the logits of
// each token whose index is in want (nil: the last one), in that order.
func (l *llamaCtx) decode(tb testing.TB, tokens []int, pos int, want ...int) [][]float32 {
	tb.Helper()
	if want == nil {
		want = []int{len(tokens) - 1}
	}
	l.batch.Clear()
	for i, tok := range tokens {
		l.batch.Add(tok, nil, pos+i, slices.Contains(want, i), 0)
	}
	if err := l.ctx.Decode(l.batch); err != nil {
		tb.Fatal(err)
	}
	out := make([][]float32, len(want))
	for j, i := range want {
		out[j] = slices.Clone(l.ctx.GetLogitsIth(i))
	}
	return out
}

// paritySet is one configuration in both spellings: llama.cpp's (1 = off
// for top-p and typical-p) and sampling/cpu's (0 = off).
type paritySet struct {
	name string
	c    cpu.Params
}

func (s paritySet) llama() llama.SamplingParams {
	topP, typ := s.c.TopP, s.c.TypicalP
	if topP == 0 {
		topP = 1
	}
	if typ == 0 {
		typ = 1
	}
	rep := s.c.RepeatPenalty
	if rep == 0 {
		rep = 1
	}
	lastN := s.c.RepeatLastN
	if lastN == 0 {
		lastN = 64
	}
	return llama.SamplingParams{
		TopK: s.c.TopK, TopP: topP, MinP: s.c.MinP, TypicalP: typ, Temp: s.c.Temperature,
		RepeatLastN: lastN, PenaltyRepeat: rep, PenaltyFreq: s.c.FrequencyPenalty,
		PenaltyPresent: s.c.PresencePenalty, Seed: s.c.Seed,
	}
}

var paritySets = []paritySet{
	{"topk40", cpu.Params{Temperature: 1, TopK: 40, Seed: 1}},
	{"llama-defaults", func() cpu.Params { p := cpu.LlamaDefaults(); p.Seed = 2; return p }()},
	{"topp0.9-t1.3", cpu.Params{Temperature: 1.3, TopP: 0.9, Seed: 3}},
	{"minp0.1-typical0.9", cpu.Params{Temperature: 0.7, MinP: 0.1, TypicalP: 0.9, Seed: 4}},
	{"flat-t2", cpu.Params{Temperature: 2, Seed: 5}},
	{"penalties", cpu.Params{Temperature: 1, TopK: 100, RepeatLastN: 32, RepeatPenalty: 1.3, FrequencyPenalty: 0.2, PresencePenalty: 0.1, Seed: 6}},
	{"greedy-penalty", cpu.Params{RepeatPenalty: 1.5, Seed: 7}},
}

// TestSamplingParityDraws: on fixed logits (those after each token of a
// prompt, from flat to peaked), llama.cpp's chain and sampling/cpu with the
// same seed draw the same random numbers, so their token sequences must
// agree draw for draw; their supports must match and their frequencies
// agree (two-sample chi-square over (position, token) cells).
func TestSamplingParityDraws(t *testing.T) {
	l := openLlama(t, sharedtest.Path(t, "corpus", "models", "stories260K.gguf"))
	prompt, err := l.model.Tokenize("Once upon a time, there was a little girl named Lily. She", true, true)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(prompt))
	for i := range all {
		all[i] = i
	}
	logits := l.decode(t, prompt, 0, all...)
	nv := len(logits[0])
	const draws = 8000
	for _, set := range paritySets {
		t.Run(set.name, func(t *testing.T) {
			sc, err := llama.NewSamplingContext(l.model, set.llama())
			if err != nil {
				t.Fatal(err)
			}
			ch, err := cpu.NewChain(set.c)
			if err != nil {
				t.Fatal(err)
			}
			ref := make([]float64, len(prompt)*nv)
			got := make([]float64, len(prompt)*nv)
			same := 0
			for d := range draws {
				i := d % len(prompt)
				a := sc.Sample(l.ctx, i)
				b := ch.Sample(logits[i])
				ref[i*nv+a]++
				got[i*nv+int(b)]++
				if int32(a) == b {
					same++
				}
			}
			support := 0
			for cell := range ref {
				if (ref[cell] == 0) != (got[cell] == 0) {
					t.Errorf("position %d token %d drawn %v times by llama.cpp and %v times by sampling/cpu",
						cell/nv, cell%nv, ref[cell], got[cell])
				}
				if ref[cell] > 0 {
					support++
				}
			}
			chi2, df := twoSampleChi2(ref, got)
			t.Logf("%d/%d draws identical; support %d (position, token) cells; chi² = %.1f (%d df)", same, draws, support, chi2, df)
			// Draw-for-draw agreement: an expf last-bit difference can move
			// a cumulative boundary, so allow one draw in a thousand.
			if same < draws-draws/1000 {
				t.Errorf("only %d of %d draws agree", same, draws)
			}
			if df > 0 && chi2 > chi2Critical999(df) {
				t.Errorf("frequencies differ: chi² = %.1f with %d df", chi2, df)
			}
		})
	}
}

// TestSamplingParityGeneration: generate with llama.cpp's chain (decoding
// its tokens) and run sampling/cpu on the same logits with the same
// accepted history (penalties see it): the tokens must agree step for step.
func TestSamplingParityGeneration(t *testing.T) {
	l := openLlama(t, sharedtest.Path(t, "corpus", "models", "stories260K.gguf"))
	prompt, err := l.model.Tokenize("The dog ran", true, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range paritySets {
		t.Run(set.name, func(t *testing.T) {
			sc, err := llama.NewSamplingContext(l.model, set.llama())
			if err != nil {
				t.Fatal(err)
			}
			ch, err := cpu.NewChain(set.c)
			if err != nil {
				t.Fatal(err)
			}
			l.ctx.KvCacheClear()
			logits := l.decode(t, prompt, 0)[0]
			pos, idx := len(prompt), len(prompt)-1
			const steps = 100
			same := 0
			for range steps {
				a := sc.Sample(l.ctx, idx)
				b := ch.Sample(logits)
				if int32(a) == b {
					same++
				}
				sc.Accept(a, false)
				ch.Accept(int32(a))
				logits = l.decode(t, []int{a}, pos)[0]
				pos, idx = pos+1, 0
			}
			t.Logf("%d/%d steps identical", same, steps)
			if same < steps-1 {
				t.Errorf("only %d of %d steps agree", same, steps)
			}
		})
	}
}

func twoSampleChi2(a, b []float64) (float64, int) {
	var na, nb float64
	for i := range a {
		na += a[i]
		nb += b[i]
	}
	ka, kb := math.Sqrt(nb/na), math.Sqrt(na/nb)
	chi2, df := 0.0, -1
	for i := range a {
		if a[i]+b[i] < 10 { // too rare to test (the support check covers them)
			continue
		}
		d := ka*a[i] - kb*b[i]
		chi2 += d * d / (a[i] + b[i])
		df++
	}
	return chi2, df
}

// chi2Critical999 is the 99.9% quantile of χ² (Wilson–Hilferty).
func chi2Critical999(df int) float64 {
	const z = 3.0902
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

// BenchmarkSamplingVsLlamaCpp: per token on the same 128k logits (a
// random-weight Llama with the Llama-3 vocabulary): llama.cpp's chain
// (common_sampler: it copies the logits into candidates, then runs the
// chain), sampling/cpu, and sampling/gpu's Gumbel-max.
func BenchmarkSamplingVsLlamaCpp(b *testing.B) {
	dir := sharedtest.Path(b, "corpus", "vocab", "hf", "llama3.2")
	v, err := testmodel.Llama3Vocab(dir)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "llama3-random.gguf")
	if err := testmodel.WriteLlama(path, testmodel.SmallLlama(v)); err != nil {
		b.Fatal(err)
	}
	defer os.Remove(path)
	l := openLlama(b, path)
	prompt, err := l.model.Tokenize("Once upon a time", true, true)
	if err != nil {
		b.Fatal(err)
	}
	logits := l.decode(b, prompt, 0)[0]
	idx := len(prompt) - 1
	for _, set := range []paritySet{
		{"topk40", cpu.Params{Temperature: 1, TopK: 40, Seed: 1}},
		{"llama-defaults", cpu.LlamaDefaults()},
	} {
		b.Run(fmt.Sprintf("V=%d/%s/llama.cpp", len(logits), set.name), func(b *testing.B) {
			sc, err := llama.NewSamplingContext(l.model, set.llama())
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				sc.Sample(l.ctx, idx)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/token")
		})
		b.Run(fmt.Sprintf("V=%d/%s/sampling-cpu", len(logits), set.name), func(b *testing.B) {
			ch, err := cpu.NewChain(set.c)
			if err != nil {
				b.Fatal(err)
			}
			ch.Sample(logits)
			b.ReportAllocs()
			for b.Loop() {
				ch.Sample(logits)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/token")
		})
		g := gpu.Params{Temperature: set.c.Temperature, TopK: set.c.TopK, TopP: set.c.TopP, MinP: set.c.MinP}
		b.Run(fmt.Sprintf("V=%d/%s/sampling-gpu", len(logits), set.name), func(b *testing.B) {
			gpu.Sample(logits, nil, 0, g)
			b.ReportAllocs()
			i := uint32(0)
			for b.Loop() {
				gpu.Sample(logits, nil, i, g)
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/token")
		})
	}
}
