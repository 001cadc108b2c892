package cpu

import (
	"math"
	"slices"
)

// mirostatM is the number of top tokens mirostat v1 uses to estimate the
// Zipf exponent (llama.cpp's common sampler passes 100).
const mirostatM = 100

// mirostat is llama_sampler_mirostat (v1) and _mirostat_v2: sampling that
// steers the observed surprise (-log2 p of the picked token) towards tau,
// adapting mu with learning rate eta.
type mirostat struct {
	w        *workspace
	version  int
	seed     uint32
	tau, eta float32
	m        int
	mu       float32
	rng      mt19937
}

func (s *mirostat) reset() {
	s.mu = 2 * s.tau
	s.rng.seed(s.seed)
}

// sample picks a token from c (after the temperature step), updates mu and
// returns the pick's index in c.data.
func (s *mirostat) sample(c *candidates, nVocab int) int {
	if len(c.data) == 0 {
		return -1
	}
	if s.version == 1 {
		s.truncateV1(c, nVocab)
	} else {
		s.truncateV2(c)
	}
	// Renormalise over the kept (sorted) tokens, as softmax_impl does.
	s.w.softmax(c, true)
	idx := discrete(c.data, &s.rng)
	observed := -log2f(c.data[idx].p)
	s.mu -= s.eta * (observed - s.tau)
	return idx
}

func log2f(x float32) float32 { return float32(math.Log2(float64(x))) }

// fullProbs sets p for every candidate to its softmax probability over the
// whole set (float32 terms, float64 sum: llama.cpp sums in sorted order in
// float32, which differs from this in the last bits only) and returns the
// index of nothing; the caller selects what it needs sorted.
func fullProbs(d []candidate) {
	maxL := d[0].logit
	for _, cd := range d[1:] {
		maxL = max(maxL, cd.logit)
	}
	var sum float64
	for i := range d {
		p := exp32(d[i].logit - maxL)
		d[i].p = p
		sum += float64(p)
	}
	for i := range d {
		d[i].p = float32(float64(d[i].p) / sum)
	}
}

// truncateV1 estimates the Zipf exponent s from the top m probabilities and
// keeps the k tokens that target surprise mu.
func (s *mirostat) truncateV1(c *candidates, nVocab int) {
	d := c.data
	fullProbs(d)
	top := min(s.m, len(d))
	s.w.selectTop(d, top)
	var sumTB, sumTT float32
	for i := 0; i < s.m-1 && i < len(d)-1; i++ {
		t := log32(float32(i+2) / float32(i+1))
		b := log32(d[i].p / d[i+1].p)
		sumTB += float32(t * b)
		sumTT += float32(t * t)
	}
	sHat := sumTB / sumTT
	eps := sHat - 1
	num := eps * powf(2, s.mu)
	den := 1 - powf(float32(nVocab), -eps)
	k := powf(num/den, 1/sHat)
	kk := max(cInt(k), 1)
	kk = min(kk, len(d))
	if kk > top {
		s.w.selectTop(d, kk)
	}
	c.data = d[:kk]
	c.sorted = true
	c.identity = false
}

// truncateV2 keeps the tokens whose surprise -log2 p is at most mu (at
// least the most likely one).
func (s *mirostat) truncateV2(c *candidates) {
	d := c.data
	fullProbs(d)
	j := 0
	for _, cd := range d {
		if !(-log2f(cd.p) > s.mu) {
			d[j] = cd
			j++
		}
	}
	if j == 0 {
		s.w.selectTop(d, 1)
		j = 1
	} else {
		slices.SortFunc(d[:j], byLogitDesc)
	}
	c.data = d[:j]
	c.sorted = true
	c.identity = false
}

func powf(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }

// cInt converts like C's (int)f on x86-64 (cvttss2si): NaN and values out
// of int32 range give INT_MIN.
func cInt(f float32) int {
	if f != f || f >= 2147483648 || f < -2147483648 {
		return math.MinInt32
	}
	return int(int32(f))
}

// discrete is std::discrete_distribution<int> over the p of d, as
// libstdc++ draws it: normalise in double, cumulative sums with the last set
// to 1, one canonical double, lower_bound.
func discrete(d []candidate, rng *mt19937) int {
	var sum float64
	for _, cd := range d {
		sum += float64(cd.p)
	}
	u := rng.float64()
	var cum float64
	for i, cd := range d[:len(d)-1] {
		cum += float64(cd.p) / sum
		if cum >= u {
			return i
		}
	}
	return len(d) - 1
}
