package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestDRYSequenceBreakers follows llama.cpp's get_overlapping_token_sequences
// on a toy vocabulary: a token containing the breaker is a breaker on its
// own; a token ending with a prefix of it starts a sequence whose tail is
// the tokenization of the rest.
func TestDRYSequenceBreakers(t *testing.T) {
	pieces := [][]byte{[]byte("a"), []byte("b:"), []byte("x::y"), []byte("q\n"), []byte("ab"), []byte("c"), []byte(" Ass"), []byte("istant")}
	tokenize := func(s string) []int32 {
		// Greedy longest match over the pieces.
		var out []int32
		for s != "" {
			best, bestLen := -1, 0
			for i, p := range pieces {
				if strings.HasPrefix(s, string(p)) && len(p) > bestLen {
					best, bestLen = i, len(p)
				}
			}
			if best < 0 {
				return out
			}
			out = append(out, int32(best))
			s = s[bestLen:]
		}
		return out
	}
	got := DRYSequenceBreakers(pieces, []string{":", "\n", " Assistant"}, tokenize)
	want := [][]int32{{1}, {2}, {3}, {6, 7}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("breakers = %v, want %v", got, want)
	}
}

// TestDRYSequenceBreakerStopsPenalty: DRY penalises the token that would
// extend a repeat, except a single-token sequence breaker.
func TestDRYSequenceBreakerStopsPenalty(t *testing.T) {
	logits := []float32{0, 0, 0, 0, 0}
	p := Params{DRYMultiplier: 5, DRYAllowedLength: 1}
	c := mustChain(t, p)
	for _, tok := range []int32{0, 1, 2, 0} {
		c.Accept(tok)
	}
	// "0 1 2 0": token 1 would extend the repeat of "0" → penalised;
	// greedy then avoids it and picks 0 (the first unpenalised maximum).
	if tok := c.Sample(logits); tok != 0 {
		t.Fatalf("DRY greedy = %d, want 0", tok)
	}
	logits = []float32{0, 1, 0, 0, 0}
	if tok := c.Sample(logits); tok != 0 {
		t.Fatalf("DRY greedy with token 1 at +1 = %d, want 0 (1 - 5·1.75⁰ < 0)", tok)
	}
	p.DRYSequenceBreakers = [][]int32{{1}}
	c = mustChain(t, p)
	for _, tok := range []int32{0, 1, 2, 0} {
		c.Accept(tok)
	}
	if tok := c.Sample(logits); tok != 1 {
		t.Fatalf("DRY with breaker 1 = %d, want 1 (a breaker is never penalised)", tok)
	}
}

// TestMirostatTracksTau: mirostat's purpose is an observed surprise of tau
// bits on average; over many steps on fixed Zipf-like logits both
// versions get close.
func TestMirostatTracksTau(t *testing.T) {
	logits := make([]float32, 800)
	for i := range logits {
		logits[i] = -1.1 * float32(math.Log(float64(i+1)))
	}
	for _, v := range []int{1, 2} {
		for _, tau := range []float32{2, 4} {
			c := mustChain(t, Params{Temperature: 1, Mirostat: v, MirostatTau: tau, Seed: 3})
			full := softmaxOver(logits, seq(len(logits)), 1)
			var sum float64
			const n = 2500
			for range n {
				tok := c.Sample(logits)
				sum += -math.Log2(full[tok])
			}
			avg := sum / n
			// The observed surprise is measured on the truncated set, which
			// is more peaked than the full softmax: allow a bit more above.
			if avg < float64(tau)-1 || avg > float64(tau)+1.5 {
				t.Errorf("mirostat v%d tau %v: mean surprise %.2f bits", v, tau, avg)
			}
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestAkunuGreedyAndPenalty(t *testing.T) {
	l := []float32{0.5, 3, 2.9, -1}
	c := mustChain(t, Params{Preset: PresetAkunu, RepeatPenalty: 1.5})
	if tok := c.Sample(l); tok != 1 {
		t.Fatalf("akunu greedy = %d, want 1", tok)
	}
	c.Accept(1)
	c.Accept(1) // once per distinct token: 3/1.5 = 2 < 2.9
	if tok := c.Sample(l); tok != 2 {
		t.Fatalf("akunu greedy after penalty = %d, want 2", tok)
	}
	// Top-k off means the 256 best: a token ranked 300th is never drawn.
	big := make([]float32, 1000)
	for i := range big {
		big[i] = -float32(i) * 0.001 // nearly flat
	}
	c = mustChain(t, Params{Preset: PresetAkunu, Temperature: 1, Seed: 9})
	for range 2000 {
		if tok := c.Sample(big); tok >= akunuTopKCap {
			t.Fatalf("akunu drew token %d outside the 256 cap", tok)
		}
	}
}

// FuzzChain: any logits and settings the validator accepts give a token in
// range (or -1 exactly when no logit is finite) without touching the
// logits or allocating after warm-up.
func FuzzChain(f *testing.F) {
	f.Add(uint64(1), uint8(0), []byte{1, 2, 3, 200, 7})
	f.Add(uint64(7), uint8(5), []byte{255, 255, 127, 255, 0, 0, 128, 127})
	f.Fuzz(func(t *testing.T, seed uint64, which uint8, raw []byte) {
		rng := rand.New(rand.NewPCG(seed, 1))
		logits := make([]float32, len(raw)/2+1)
		for i := range logits {
			if 2*i+1 < len(raw) {
				logits[i] = float32(int16(uint16(raw[2*i])|uint16(raw[2*i+1])<<8)) / 1000
				if raw[2*i] == 0xff && raw[2*i+1] == 0x7f {
					logits[i] = float32(math.Inf(-1))
				}
			}
		}
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range paramSets {
				if !yield(k) {
					return
				}
			}
		})
		p := paramSets[names[int(which)%len(names)]]
		p.Seed = uint32(seed)
		c, err := NewChain(p)
		if err != nil {
			t.Fatal(err)
		}
		orig := slices.Clone(logits)
		finite := slices.ContainsFunc(logits, func(x float32) bool { return !math.IsInf(float64(x), -1) })
		for range 3 {
			tok := c.Sample(logits)
			if (tok == -1) == finite || int(tok) >= len(logits) {
				t.Fatalf("%+v on %v: token %d", p, logits, tok)
			}
			if tok >= 0 {
				c.Accept(tok)
			}
			if rng.IntN(2) == 0 {
				c.Accept(int32(rng.IntN(len(logits))))
			}
		}
		if !slices.Equal(logits, orig) {
			t.Fatal("Sample modified the logits")
		}
	})
}
