package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/x448/float16"
)

// genCase draws a random (logits, prev, position, params) case. Shapes:
// smooth normal logits, quantised logits (many ties), masked logits (-Inf),
// and a sprinkle of NaN.
func genCase(rng *rand.Rand, v int) ([]float32, []int32, uint32, Params) {
	l := make([]float32, v)
	sigma := []float64{0.5, 2, 5, 12}[rng.IntN(4)]
	shape := rng.IntN(5)
	for i := range l {
		x := rng.NormFloat64() * sigma
		switch shape {
		case 1: // ties
			x = math.Round(x)
		case 2: // grammar-style mask
			if rng.IntN(4) != 0 {
				x = math.Inf(-1)
			}
		case 3: // NaN noise
			if rng.IntN(50) == 0 {
				x = math.NaN()
			}
		}
		l[i] = float32(x)
	}
	prev := make([]int32, rng.IntN(12))
	for i := range prev {
		prev[i] = int32(rng.IntN(v+4)) - 2 // some out of range
	}
	ks := []int{0, 0, 1, 2, 5, 40, v - 1, v, v + 3, heapMax - 1, heapMax, heapMax + 500}
	p := Params{
		Temperature:   []float32{0, 0.25, 0.7, 1, 1, 2.5}[rng.IntN(6)],
		TopK:          ks[rng.IntN(len(ks))],
		TopP:          []float32{0, 0, 0.05, 0.5, 0.9, 0.99, 1}[rng.IntN(7)],
		MinP:          []float32{0, 0, 0.001, 0.05, 0.3}[rng.IntN(5)],
		RepeatPenalty: []float32{0, 1, 1.3, 0.8, -1}[rng.IntN(5)],
		SeedOffset:    rng.Uint32(),
	}
	return l, prev, rng.Uint32(), p
}

func toF16(l []float32) []float16.Float16 {
	h := make([]float16.Float16, len(l))
	for i, x := range l {
		h[i] = float16.Fromfloat32(x)
	}
	return h
}

func widen(h []float16.Float16) []float32 {
	l := make([]float32, len(h))
	for i, x := range h {
		l[i] = x.Float32()
	}
	return l
}

// TestMatchesScalarReference (a): the implementation and the plain scalar
// transcription agree token for token, on the F32 and F16 paths, for small
// vocabularies (one chunk) and large ones (several chunks, worker pool).
func TestMatchesScalarReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	run := func(v, cases int) {
		for c := range cases {
			l, prev, pos, p := genCase(rng, v)
			orig := slices.Clone(l)
			if got, want := Sample(l, prev, pos, p), refSample(l, prev, pos, p, false); got != want {
				t.Fatalf("V=%d case %d %+v pos %d: Sample = %d, reference = %d", v, c, p, pos, got, want)
			}
			if !slices.Equal(l, orig) && !hasNaN(l) {
				t.Fatalf("Sample modified the logits")
			}
			h := toF16(l)
			if got, want := SampleF16(h, prev, pos, p), refSample(widen(h), prev, pos, p, true); got != want {
				t.Fatalf("V=%d case %d %+v pos %d: SampleF16 = %d, reference = %d", v, c, p, pos, got, want)
			}
		}
	}
	for _, v := range []int{1, 2, 3, 17, 100, 1000} {
		run(v, 600)
	}
	run(40000, 60) // three chunks, parallel above parallelMin
	old := parallelMin
	for ph := range parallelMin {
		parallelMin[ph] = 0 // force the pool even for a couple of chunks
	}
	defer func() { parallelMin = old }()
	run(20000, 60)
}

func hasNaN(l []float32) bool {
	for _, x := range l {
		if x != x {
			return true
		}
	}
	return false
}

// TestGreedyAndDeterminism (c): T = 0 is the argmax after the penalty; the
// same (seed offset, position) gives the same token; different positions
// give different draws.
func TestGreedyAndDeterminism(t *testing.T) {
	l := []float32{1, 4, 3.5, -2, 4}
	if tok := Sample(l, nil, 7, Params{}); tok != 1 {
		t.Fatalf("argmax = %d, want 1 (the lowest index of the maximum)", tok)
	}
	// 4/1.25 = 3.2 < 3.5: tokens 1 and 4 penalised once each, even if repeated.
	if tok := Sample(l, []int32{1, 4, 1, 4, 4}, 7, Params{RepeatPenalty: 1.25, TopK: 2}); tok != 2 {
		t.Fatalf("argmax after penalty = %d, want 2", tok)
	}
	// Negative logits are multiplied: -2·1.25.
	if tok := Sample([]float32{-2, -3}, []int32{0}, 0, Params{RepeatPenalty: 1.25}); tok != 0 {
		t.Fatalf("penalised negative = %d, want 0 (-2.5 > -3)", tok)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	big := make([]float32, 50000)
	for i := range big {
		big[i] = float32(rng.NormFloat64())
	}
	p := Params{Temperature: 1, SeedOffset: 99}
	first := Sample(big, nil, 5, p)
	for range 5 {
		if tok := Sample(big, nil, 5, p); tok != first {
			t.Fatalf("same seed and position gave %d then %d", first, tok)
		}
	}
	seen := map[int32]bool{}
	for pos := range uint32(50) {
		seen[Sample(big, nil, pos, p)] = true
	}
	if len(seen) < 45 {
		t.Fatalf("50 positions over a flat 50k vocabulary gave only %d distinct tokens", len(seen))
	}
	// position + offset is what counts.
	if a, b := Sample(big, nil, 10, Params{Temperature: 1, SeedOffset: 5}), Sample(big, nil, 5, Params{Temperature: 1, SeedOffset: 10}); a != b {
		t.Fatalf("(10, 5) and (5, 10) differ: %d %d", a, b)
	}
}

func TestDegenerate(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, tc := range []struct {
		l    []float32
		want int32
	}{
		{nil, -1},
		{[]float32{-inf, -inf}, -1},
		{[]float32{nan, nan}, -1},
		{[]float32{nan, -inf, 2, nan}, 2},
		{[]float32{1, inf, 3, inf}, 1},
	} {
		for _, p := range []Params{{}, {Temperature: 1, TopK: 1, TopP: 0.5, MinP: 0.1}} {
			if got := Sample(tc.l, nil, 0, p); got != tc.want {
				t.Errorf("Sample(%v, %+v) = %d, want %d", tc.l, p, got, tc.want)
			}
			if got := SampleF16(toF16(tc.l), nil, 0, p); got != tc.want {
				t.Errorf("SampleF16(%v, %+v) = %d, want %d", tc.l, p, got, tc.want)
			}
		}
	}
}

// TestDistribution (b): tokens follow softmax(z/T) over the kept set
// (chi-square, 0.1% level) — with no filter, and with filters whose kept
// set is computed from the documented thresholds.
func TestDistribution(t *testing.T) {
	z := []float32{1.0, 2.2, -0.5, 1.7, 0.3, 2.0, -1.2, 0.9, 1.4, 0.0}
	for _, tc := range []struct {
		p    Params
		keep []int
	}{
		{Params{Temperature: 1}, nil},
		{Params{Temperature: 0.6}, nil},
		{Params{Temperature: 1.5, TopK: 3}, []int{1, 5, 3}},
		{Params{Temperature: 1, MinP: 0.4}, []int{1, 5, 3, 8}},      // z ≥ 2.2 + ln 0.4 = 1.284
		{Params{Temperature: 1, TopP: 0.5}, []int{1, 5}},            // documented: top mass ≤ p
		{Params{Temperature: 0.8, TopK: 4, TopP: 0.7}, []int{1, 5}}, // mass of {1,5} is 0.63 of the top 4, {1,5,3} 0.85
	} {
		t.Run(fmt.Sprintf("%+v", tc.p), func(t *testing.T) {
			const n = 60000
			counts := make([]float64, len(z))
			for pos := range uint32(n) {
				counts[Sample(z, nil, pos, tc.p)]++
			}
			keep := tc.keep
			if keep == nil {
				for i := range z {
					keep = append(keep, i)
				}
			}
			want := make([]float64, len(z))
			var sum float64
			for _, i := range keep {
				want[i] = math.Exp(float64(z[i] / tc.p.Temperature))
				sum += want[i]
			}
			chi2, df := 0.0, -1
			for i := range z {
				if want[i] == 0 {
					if counts[i] != 0 {
						t.Fatalf("token %d (outside the kept set) drawn %v times", i, counts[i])
					}
					continue
				}
				e := want[i] / sum * n
				chi2 += (counts[i] - e) * (counts[i] - e) / e
				df++
			}
			if chi2 > chi2Critical999(df) {
				t.Fatalf("chi² = %.1f, %d df: counts %v", chi2, df, counts)
			}
		})
	}
}

func chi2Critical999(df int) float64 {
	const z = 3.0902
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

// TestBisectionDeviation measures what the bisections give up against
// exact top-k / top-p on 128k-token logits (normal, σ = 3), and checks the
// documented bounds: top-k keeps at most k tokens, and its threshold is
// within 30/4096 of the exact (k+1)-th logit; top-p keeps a mass of at
// most p, short of it by at most the mass of one 30/256-wide step.
func TestBisectionDeviation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const v = 128256
	x := make([]float32, v)
	var keptK, keptP, shortP []float64
	for trial := range 20 {
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 3)
		}
		sorted := slices.Clone(x)
		slices.SortFunc(sorted, func(a, b float32) int { return cmpDesc(a, b) })
		m := sorted[0]
		for _, k := range []int{40} {
			theta := bisectK(x, m, k)
			n := 0
			for _, xi := range x {
				if xi >= theta {
					n++
				}
			}
			if n > k || theta-sorted[k] > 30.0/4096+1e-4 {
				t.Fatalf("trial %d: top-k %d kept %d, θ - x_(k+1) = %v", trial, k, n, theta-sorted[k])
			}
			keptK = append(keptK, float64(n))
		}
		for _, p := range []float64{0.9} {
			theta := bisectP(x, m, p)
			var total, kept, step float64
			for _, xi := range x {
				e := math.Exp(float64(xi - m))
				total += e
				if xi >= theta {
					kept += e
				} else if xi >= theta-30.0/256 {
					step += e
				}
			}
			if kept/total > p+1e-9 || kept/total < p-step/total-1e-9 {
				t.Fatalf("trial %d: top-p %v kept mass %v (one step below: %v)", trial, p, kept/total, step/total)
			}
			keptP = append(keptP, kept/total)
			shortP = append(shortP, p-kept/total)
		}
	}
	t.Logf("top-k 40 on 128k N(0,3²) logits: kept tokens min %v mean %.1f max %v",
		slices.Min(keptK), mean(keptK), slices.Max(keptK))
	t.Logf("top-p 0.9: kept mass min %.4f mean %.4f max %.4f (shortfall mean %.4f)",
		slices.Min(keptP), mean(keptP), slices.Max(keptP), mean(shortP))
}

func cmpDesc(a, b float32) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// bisectK and bisectP are the documented bisections on their own (float
// arithmetic as in the reference), for the deviation measurements.
func bisectK(x []float32, m float32, k int) float32 {
	lo, hi := m-30, m
	for range 12 {
		mid := (lo + hi) / 2
		n := 0
		for _, xi := range x {
			if xi > mid {
				n++
			}
		}
		if n > k {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func bisectP(x []float32, m float32, p float64) float32 {
	mass := func(from float32) uint64 {
		var s uint64
		for _, xi := range x {
			if xi >= from {
				s += uint64(math.Exp(float64(xi)-float64(m)) * (1 << 37))
			}
		}
		return s
	}
	total := mass(float32(math.Inf(-1)))
	lo, hi := m-30, m
	for range 8 {
		mid := (lo + hi) / 2
		if float64(mass(mid)) > p*float64(total) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// TestF16MatchesF32UpToRounding (d): on float16 logits, the F16 path and
// the F32 path (same logits widened) pick the same token unless the two
// winners' noised values round to the same float16 (then the lower index
// wins on the F16 path).
func TestF16MatchesF32UpToRounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	same, total := 0, 0
	for range 400 {
		l, prev, pos, p := genCase(rng, 1+rng.IntN(3000))
		p.RepeatPenalty = 0
		h := toF16(l)
		w := widen(h)
		a, b := Sample(w, prev, pos, p), SampleF16(h, prev, pos, p)
		total++
		if a == b {
			same++
			continue
		}
		if a < 0 || b < 0 {
			t.Fatalf("one path found no token: %d %d", a, b)
		}
		es := elementSeed(pos, p.SeedOffset)
		va := w[a] + float32(p.Temperature*noise(es, int(a)))
		vb := w[b] + float32(p.Temperature*noise(es, int(b)))
		if f16Round(va) != f16Round(vb) || b > a {
			t.Fatalf("F32 picked %d (%v), F16 picked %d (%v): not a rounding tie", a, va, b, vb)
		}
	}
	t.Logf("F16 and F32 paths agree on %d of %d cases", same, total)
	if same < total*9/10 {
		t.Fatalf("only %d of %d agree", same, total)
	}
}

func TestZeroAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	l := make([]float32, 128256)
	for i := range l {
		l[i] = float32(rng.NormFloat64() * 3)
	}
	h := toF16(l)
	prev := []int32{5, 9, 5, 70000}
	for _, p := range []Params{
		{},
		{Temperature: 1},
		{Temperature: 1, TopK: 40},
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1},
		{Temperature: 1, TopP: 0.9},
		{Temperature: 1, TopK: 5000},
	} {
		for range 3 {
			Sample(l, prev, 1, p)
			SampleF16(h, prev, 1, p)
		}
		if n := testing.AllocsPerRun(10, func() { Sample(l, prev, 3, p) }); n != 0 {
			t.Errorf("%+v: Sample allocates %v times", p, n)
		}
		if n := testing.AllocsPerRun(10, func() { SampleF16(h, prev, 3, p) }); n != 0 {
			t.Errorf("%+v: SampleF16 allocates %v times", p, n)
		}
	}
}

// TestConcurrent: calls from many goroutines at once (sharing the worker
// pool) give the sequential results.
func TestConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	type tc struct {
		l    []float32
		prev []int32
		pos  uint32
		p    Params
		want int32
	}
	var cases []tc
	for range 24 {
		l, prev, pos, p := genCase(rng, 40000+rng.IntN(30000))
		cases = append(cases, tc{l, prev, pos, p, Sample(l, prev, pos, p)})
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cases {
				c := cases[(i+g)%len(cases)]
				if got := Sample(c.l, c.prev, c.pos, c.p); got != c.want {
					t.Errorf("concurrent Sample = %d, sequential %d", got, c.want)
				}
			}
		}()
	}
	wg.Wait()
}
