package cpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/x448/float16"
)

func randomLogits(rng *rand.Rand, n int, scale float64) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(rng.NormFloat64() * scale)
	}
	return l
}

func mustChain(t testing.TB, p Params) *Chain {
	t.Helper()
	c, err := NewChain(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewChainValidation(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		p     Params
		field string
		msg   string
	}{
		{Params{Temperature: -1}, "Temperature", "negative"},
		{Params{Temperature: nan}, "Temperature", "finite"},
		{Params{TopP: 1.5}, "TopP", "outside [0, 1]"},
		{Params{MinP: -0.1}, "MinP", "outside [0, 1]"},
		{Params{TopK: -1}, "TopK", "outside"},
		{Params{RepeatLastN: -2}, "RepeatLastN", "outside"},
		{Params{RepeatPenalty: -1}, "RepeatPenalty", "negative"},
		{Params{DRYBase: 0.5}, "DRYBase", "below 1"},
		{Params{Mirostat: 3}, "Mirostat", "not 0, 1 or 2"},
		{Params{Mirostat: 2, Samplers: []string{"top_k"}}, "Samplers", "Mirostat"},
		{Params{Samplers: []string{"top_k", "bogus"}}, "Samplers[1]", `unknown sampler "bogus"`},
		{Params{Samplers: []string{"infill"}}, "Samplers[0]", "vocabulary"},
		{Params{Temperature: 1, TopK: 40, Samplers: []string{"top_p", "temperature"}}, "Samplers", `"top_k" is not in the order`},
		{Params{LogitBias: []LogitBias{{Token: -3, Bias: 1}}}, "LogitBias[0].Token", "negative"},
		{Params{LogitBias: []LogitBias{{Token: 3, Bias: float32(math.Inf(1))}}}, "LogitBias[0].Bias", "-Inf"},
		{Params{DRYMultiplier: 1, DRYSequenceBreakers: [][]int32{{1}, {}}}, "DRYSequenceBreakers[1]", "empty"},
		{Params{Preset: "nope"}, "Preset", "unknown preset"},
		{Params{Preset: PresetAkunu, TypicalP: 0.5}, "TypicalP", "akunu"},
	} {
		_, err := NewChain(tc.p)
		var pe *ParamError
		if !errors.As(err, &pe) {
			t.Errorf("%+v: err = %v, want a *ParamError", tc.p, err)
			continue
		}
		if pe.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: err = %q (field %s), want field %s and %q", tc.p, err, pe.Field, tc.field, tc.msg)
		}
	}
	for _, p := range []Params{
		{}, {Temperature: 1, TopK: 40}, LlamaDefaults(), {Temperature: 0.7, Mirostat: 2},
		{Temperature: 1, Samplers: []string{"top-k", "temp", "nucleus", "typical"}, TopK: 5, TopP: 0.5, TypicalP: 0.9},
		{Preset: PresetAkunu, Temperature: 0.7, TopP: 0.9, RepeatPenalty: 1.1},
		{Temperature: 1, DRYMultiplier: 0.8, RepeatLastN: -1, DRYLastN: -1},
	} {
		if _, err := NewChain(p); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

// paramSets covers every sampler and the three selectors.
var paramSets = map[string]Params{
	"greedy":        {},
	"greedy+pen":    {RepeatPenalty: 1.5, TopK: 40},
	"topk40":        {Temperature: 1, TopK: 40},
	"llama-default": LlamaDefaults(),
	"topp":          {Temperature: 0.9, TopP: 0.9},
	"minp":          {Temperature: 1.2, MinP: 0.1},
	"typical":       {Temperature: 1, TypicalP: 0.8, TopK: 200},
	"sigma":         {Temperature: 1, TopNSigma: 1.5},
	"xtc":           {Temperature: 1, XTCProbability: 0.5, XTCThreshold: 0.05, TopK: 100},
	"dynatemp":      {Temperature: 1, DynaTempRange: 0.5, TopK: 100},
	"penalties":     {Temperature: 1, TopK: 50, RepeatPenalty: 1.3, FrequencyPenalty: 0.2, PresencePenalty: 0.3},
	"dry":           {Temperature: 1, TopK: 50, DRYMultiplier: 0.8, DRYSequenceBreakers: [][]int32{{7}, {8, 9}}},
	"bias":          {Temperature: 1, TopK: 10, LogitBias: []LogitBias{{Token: 3, Bias: 5}, {Token: 9, Bias: float32(math.Inf(-1))}}},
	"mirostat1":     {Temperature: 1, Mirostat: 1},
	"mirostat2":     {Temperature: 1, Mirostat: 2},
	"akunu":         {Preset: PresetAkunu, Temperature: 0.8, TopP: 0.9, MinP: 0.02, RepeatPenalty: 1.1},
	"order":         {Temperature: 0.7, TopK: 30, TopP: 0.8, Samplers: []string{"temperature", "top_p", "top_k"}},
}

func TestSampleDoesNotModifyLogits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, p := range paramSets {
		c := mustChain(t, p)
		l := randomLogits(rng, 3000, 3)
		orig := slices.Clone(l)
		for i := range 20 {
			tok := c.Sample(l)
			if tok < 0 || int(tok) >= len(l) {
				t.Fatalf("%s: token %d out of range", name, tok)
			}
			c.Accept(tok)
			if i%3 == 0 {
				c.Accept(tok) // repeats feed penalties and DRY
			}
		}
		if !slices.Equal(l, orig) {
			t.Fatalf("%s: Sample modified the logits", name)
		}
	}
}

func TestSameSeedSameTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	steps := make([][]float32, 50)
	for i := range steps {
		steps[i] = randomLogits(rng, 2000, 2)
	}
	run := func(c *Chain) []int32 {
		var out []int32
		for _, l := range steps {
			tok := c.Sample(l)
			c.Accept(tok)
			out = append(out, tok)
		}
		return out
	}
	for name, p := range paramSets {
		p.Seed = 1234
		a, b := mustChain(t, p), mustChain(t, p)
		ta, tb := run(a), run(b)
		if !slices.Equal(ta, tb) {
			t.Fatalf("%s: two chains with one seed differ:\n%v\n%v", name, ta, tb)
		}
		a.Reset()
		if tr := run(a); !slices.Equal(ta, tr) {
			t.Fatalf("%s: Reset did not restart the chain:\n%v\n%v", name, ta, tr)
		}
		if p.Temperature != 0 && p.Preset == "" && p.Mirostat == 0 {
			p.Seed = 999
			if tc := run(mustChain(t, p)); slices.Equal(ta, tc) {
				t.Fatalf("%s: another seed gave the same 50 tokens", name)
			}
		}
	}
}

func TestZeroAllocsPerToken(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	l := randomLogits(rng, 1<<15, 3)
	h := make([]float16.Float16, len(l))
	for i, x := range l {
		h[i] = float16.Fromfloat32(x)
	}
	for name, p := range paramSets {
		c := mustChain(t, p)
		for range 3 { // warm-up: buffers grow to the vocabulary
			c.Accept(c.Sample(l))
			c.Accept(c.SampleF16(h))
		}
		if n := testing.AllocsPerRun(20, func() { c.Accept(c.Sample(l)) }); n != 0 {
			t.Errorf("%s: Sample allocates %v times per token", name, n)
		}
		if n := testing.AllocsPerRun(20, func() { c.Accept(c.SampleF16(h)) }); n != 0 {
			t.Errorf("%s: SampleF16 allocates %v times per token", name, n)
		}
	}
}

func TestGreedy(t *testing.T) {
	l := []float32{0.5, 3, 2.9, -1, 1}
	c := mustChain(t, Params{})
	if tok := c.Sample(l); tok != 1 {
		t.Fatalf("greedy = %d, want 1", tok)
	}
	// Greedy still applies penalties: after token 1 is accepted, 3/1.5 = 2
	// falls below 2.9.
	c = mustChain(t, Params{RepeatPenalty: 1.5})
	c.Accept(1)
	if tok := c.Sample(l); tok != 2 {
		t.Fatalf("greedy with penalty = %d, want 2", tok)
	}
	// Negative logits are multiplied: -1·1.5 stays the smallest.
	c.Accept(3)
	if tok := c.Sample(l); tok != 2 {
		t.Fatalf("greedy with penalty = %d, want 2", tok)
	}
	// Typical-p may drop the most likely token, so greedy then runs the
	// whole chain (as llama.cpp does) and picks the best of what is left.
	// With one token at 2 among 99 at 0, the 99 are the typical ones.
	c = mustChain(t, Params{TypicalP: 0.5})
	flat := make([]float32, 100)
	flat[0] = 2
	if tok := c.Sample(flat); tok <= 0 {
		t.Fatalf("greedy after typical-p = %d, want one of the typical tokens 1…99", tok)
	}
}

func TestDegenerateLogits(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for name, p := range paramSets {
		c := mustChain(t, p)
		if tok := c.Sample(nil); tok != -1 {
			t.Errorf("%s: empty logits gave %d", name, tok)
		}
		if tok := c.Sample([]float32{-inf, nan, -inf}); tok != -1 {
			t.Errorf("%s: no finite logit gave %d", name, tok)
		}
		if tok := c.Sample([]float32{1, inf, 2, inf}); tok != 1 {
			t.Errorf("%s: +Inf logit gave %d, want 1", name, tok)
		}
		if tok := c.Sample([]float32{nan, -inf, 0.5, nan}); tok != 2 {
			t.Errorf("%s: single finite logit gave %d, want 2", name, tok)
		}
		if tok := c.Sample([]float32{7}); tok != 0 {
			t.Errorf("%s: one logit gave %d", name, tok)
		}
		// Long enough for the lazy top-k path (k < V).
		long := make([]float32, 300)
		for i := range long {
			long[i] = nan
		}
		if tok := c.Sample(long); tok != -1 {
			t.Errorf("%s: 300 NaN gave %d", name, tok)
		}
		long[250], long[120], long[200] = 0.5, inf, inf
		if tok := c.Sample(long); tok != 120 {
			t.Errorf("%s: +Inf among NaN gave %d, want 120", name, tok)
		}
		long[120], long[200] = -inf, 3
		if tok := c.Sample(long); p.Temperature == 0 && tok != 200 || tok != 200 && tok != 250 {
			t.Errorf("%s: two finite logits among NaN gave %d", name, tok)
		}
	}
}

// TestChainMatchesReference: with top-k first, the chain's default order
// and the plain sort-based reference see the same sorted candidates and the
// same random draws, so they must agree token for token.
func TestChainMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, p := range []Params{
		{Temperature: 1, TopK: 40, Seed: 1},
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 2},
		{Temperature: 1.5, TopK: 300, TopP: 0.7, Seed: 3},
		{Temperature: 0.5, TopK: 1000, MinP: 0.2, Seed: 4},
		{TopK: 40, TopP: 0.9},
	} {
		c, ref := mustChain(t, p), newRef(p)
		for i := range 300 {
			l := randomLogits(rng, 5000, 1+float64(i%4))
			if a, b := c.Sample(l), ref.sample(l); a != b {
				t.Fatalf("%+v step %d: chain %d, reference %d", p, i, a, b)
			}
		}
	}
}

// TestLazyTopKMatchesMaterialised: top-k selected straight from the logits
// (top-k first, nothing before it) and top-k over materialised candidates
// (a penalties step with no history before it) pick the same tokens.
func TestLazyTopKMatchesMaterialised(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, k := range []int{1, 40, 256, 257, 3000} {
		lazy := mustChain(t, Params{Temperature: 1, TopK: k, TopP: 0.9, Seed: 5})
		mat := mustChain(t, Params{Temperature: 1, TopK: k, TopP: 0.9, Seed: 5, RepeatPenalty: 1.25})
		if lazy.lazyTopK != k || mat.lazyTopK != 0 {
			t.Fatalf("k=%d: lazy path not set up as expected", k)
		}
		for i := range 200 {
			l := randomLogits(rng, 4000, 2)
			if a, b := lazy.Sample(l), mat.Sample(l); a != b {
				t.Fatalf("k=%d step %d: lazy %d, materialised %d", k, i, a, b)
			}
		}
	}
}

// TestDistribution: over a small vocabulary the tokens follow the
// probabilities the rules imply (chi-square at the 0.1% level).
func TestDistribution(t *testing.T) {
	logits := []float32{2.0, 1.5, 1.2, 0.3, -0.5, -1, 0.9, 1.9}
	for _, tc := range []struct {
		name string
		p    Params
		want func() []float64
	}{
		{"topk4-t0.7", Params{Temperature: 0.7, TopK: 4, Seed: 11}, func() []float64 {
			return softmaxOver(logits, []int{0, 7, 1, 2}, 0.7)
		}},
		{"topp0.6", Params{Temperature: 1, TopP: 0.6, Seed: 12}, func() []float64 {
			// p(0)=.266 p(7)=.241 p(1)=.161 …: the mass reaches 0.6 at token 1.
			return softmaxOver(logits, []int{0, 7, 1}, 1)
		}},
		{"minp0.3", Params{Temperature: 1, MinP: 0.3, Seed: 13}, func() []float64 {
			// p_i ≥ 0.3·p_max ⇔ logit ≥ 2 + ln 0.3 = 0.796.
			return softmaxOver(logits, []int{0, 1, 2, 6, 7}, 1)
		}},
		{"akunu", Params{Preset: PresetAkunu, Temperature: 1, TopK: 5, TopP: 0.55, Seed: 14}, func() []float64 {
			// Full-softmax probabilities .266 .241 .161: top-p 0.55 keeps three.
			return softmaxOver(logits, []int{0, 7, 1}, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustChain(t, tc.p)
			const n = 40000
			counts := make([]float64, len(logits))
			for range n {
				counts[c.Sample(logits)]++
			}
			want := tc.want()
			chi2, df := 0.0, -1
			for i, w := range want {
				if w == 0 {
					if counts[i] != 0 {
						t.Fatalf("token %d drawn %v times, outside the kept set", i, counts[i])
					}
					continue
				}
				e := w * n
				chi2 += (counts[i] - e) * (counts[i] - e) / e
				df++
			}
			if chi2 > chi2Critical999(df) {
				t.Fatalf("chi² = %.1f with %d df (counts %v, want %v)", chi2, df, counts, want)
			}
		})
	}
}

func softmaxOver(logits []float32, keep []int, temp float64) []float64 {
	out := make([]float64, len(logits))
	var sum float64
	for _, i := range keep {
		out[i] = math.Exp(float64(logits[i]) / temp)
		sum += out[i]
	}
	for _, i := range keep {
		out[i] /= sum
	}
	return out
}

// chi2Critical999 is the 99.9% quantile of χ² with df degrees of freedom
// (Wilson–Hilferty approximation, accurate to ~1% for df ≥ 1).
func chi2Critical999(df int) float64 {
	const z = 3.0902 // 99.9% normal quantile
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}
