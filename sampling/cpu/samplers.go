package cpu

import (
	"math"
	"slices"
)

// step is one link of a chain, shaped like llama.cpp's llama_sampler:
// apply narrows or rewrites the candidates, accept records a token the
// caller committed to, reset forgets all history.
type step interface {
	apply(c *candidates)
	accept(tok int32)
	reset()
}

// stateless provides no-op accept/reset for steps without history.
type stateless struct{}

func (stateless) accept(int32) {}
func (stateless) reset()       {}

// ---- temperature -------------------------------------------------------

// tempApply is llama_sampler_temp_impl: t ≤ 0 keeps only the first maximal
// logit (every other becomes -Inf); otherwise every logit is divided by t.
func tempApply(c *candidates, t float32) {
	d := c.data
	if len(d) == 0 {
		return
	}
	if t <= 0 {
		maxI := 0
		maxL := d[0].logit
		for i := 1; i < len(d); i++ {
			if d[i].logit > maxL {
				d[maxI].logit = float32(math.Inf(-1))
				maxI = i
				maxL = d[i].logit
			} else {
				d[i].logit = float32(math.Inf(-1))
			}
		}
		return
	}
	for i := range d {
		d[i].logit /= t
	}
}

// tempStep is llama_sampler_temp_ext: plain temperature when delta ≤ 0,
// otherwise entropy-driven dynamic temperature in [t-delta, t+delta].
type tempStep struct {
	stateless
	w                  *workspace
	temp, delta, expon float32
}

func (s *tempStep) apply(c *candidates) {
	if !(s.delta > 0) {
		tempApply(c, s.temp)
		return
	}
	minT := max(0, s.temp-s.delta)
	maxT := s.temp + s.delta
	if len(c.data) <= 1 {
		return
	}
	maxEntropy := -log32(1 / float32(len(c.data)))
	s.w.softmax(c, true)
	var entropy float32
	for _, cd := range c.data {
		if cd.p > 0 {
			entropy -= cd.p * log32(cd.p)
		}
	}
	norm := entropy / maxEntropy
	dyn := minT + (maxT-minT)*float32(math.Pow(float64(norm), float64(s.expon)))
	tempApply(c, dyn)
	// Recompute p in float64 as llama.cpp does after dynamic temperature.
	maxL := float64(c.data[0].logit)
	var sum float64
	for i := range c.data {
		p := math.Exp(float64(c.data[i].logit) - maxL)
		c.data[i].p = float32(p)
		sum += p
	}
	for i := range c.data {
		c.data[i].p = float32(float64(c.data[i].p) / sum)
	}
}

// ---- top-k -------------------------------------------------------------

// topKApply is llama_sampler_top_k_impl: k ≤ 0 is a no-op; otherwise keep
// the min(k, n) largest logits, sorted (k ≥ n sorts everything).
func (w *workspace) topKApply(c *candidates, k int) {
	if k <= 0 {
		return
	}
	k = min(k, len(c.data))
	if !c.sorted {
		w.partialSortInPlace(c, k)
	}
	c.data = c.data[:k]
}

type topKStep struct {
	stateless
	w *workspace
	k int
}

func (s *topKStep) apply(c *candidates) { s.w.topKApply(c, s.k) }

// ---- top-p -------------------------------------------------------------

// topPSortFirst is how many candidates llama.cpp's top-p sorts first when
// the set is large and unsorted (its "adaptive top-k" of 256), before
// falling back to a full sort if the mass is not reached.
const (
	topPSortFirst     = 256
	topPAdaptiveAbove = 1024
)

// topPStep is llama_sampler_top_p: softmax over the current set, then keep
// the shortest prefix (descending probability) whose float32 cumulative sum
// reaches p (and at least minKeep tokens). p ≥ 1 is a no-op; p ≤ 0 keeps
// one token.
type topPStep struct {
	stateless
	w       *workspace
	p       float32
	minKeep int
}

func (s *topPStep) apply(c *candidates) {
	if s.p >= 1 {
		return
	}
	w := s.w
	w.softmax(c, false)
	d := c.data
	n := len(d)
	k := n
	if !c.sorted && n > topPAdaptiveAbove {
		// Sort only the best topPSortFirst first; most of the time the
		// mass is reached inside them.
		k = min(topPSortFirst, n)
		w.selectTop(d, k)
	} else if !c.sorted {
		w.sortAll(c)
	}
	var cum float32
	last := n
	for i := 0; i < n; i++ {
		cum += d[i].p
		if cum >= s.p && i+1 >= s.minKeep {
			last = i + 1
			break
		}
		if i == k-1 && k < n {
			// The first k did not reach p: sort the rest behind them (all
			// of it is below d[k-1]) and go on.
			slices.SortFunc(d[k:], byLogitDesc)
			k = n
		}
	}
	c.sorted = true
	c.identity = false
	c.data = d[:last]
}

// ---- min-p -------------------------------------------------------------

// minPStep is llama_sampler_min_p: keep tokens whose logit is at least
// max + ln(p), i.e. p_i ≥ p·p_max. Unsorted sets keep their order; when
// fewer than minKeep would remain (or the set was sorted) the sorted
// fallback keeps the first token plus every token above the bar.
type minPStep struct {
	stateless
	w       *workspace
	p       float32
	minKeep int
}

func (s *minPStep) apply(c *candidates) {
	if s.p <= 0 || len(c.data) == 0 {
		return
	}
	if !c.sorted {
		maxL := float32(-math.MaxFloat32)
		for _, cd := range c.data {
			maxL = max(maxL, cd.logit)
		}
		minL := maxL + log32(s.p)
		// Filter in place, preserving order, only if enough survive; count first.
		cnt := 0
		for _, cd := range c.data {
			if cd.logit >= minL {
				cnt++
			}
		}
		if cnt > 0 && cnt >= s.minKeep {
			j := 0
			for _, cd := range c.data {
				if cd.logit >= minL {
					c.data[j] = cd
					j++
				}
			}
			if j != len(c.data) {
				c.identity = false
			}
			c.data = c.data[:j]
			return
		}
		s.w.sortAll(c)
	}
	minL := c.data[0].logit + log32(s.p)
	i := 1
	for ; i < len(c.data); i++ {
		if c.data[i].logit < minL && i >= s.minKeep {
			break
		}
	}
	c.data = c.data[:i]
}

// ---- typical-p ---------------------------------------------------------

// typicalStep is llama_sampler_typical (locally typical sampling): keep the
// tokens whose surprise -ln p is closest to the entropy until their mass
// exceeds p. The result is in "typicality" order, not sorted.
type typicalStep struct {
	stateless
	w       *workspace
	p       float32
	minKeep int
}

func (s *typicalStep) apply(c *candidates) {
	if s.p >= 1 {
		return
	}
	w := s.w
	w.softmax(c, true)
	d := c.data
	var entropy float32
	for _, cd := range d {
		entropy += -cd.p * log32(cd.p)
	}
	if cap(w.typIdx) < len(d) {
		w.typIdx = make([]typScore, len(d))
		w.sortBuf = make([]candidate, len(d))
	}
	idx := w.typIdx[:len(d)]
	for i, cd := range d {
		idx[i] = typScore{score: abs32(-log32(cd.p) - entropy), idx: int32(i)}
	}
	slices.SortStableFunc(idx, func(a, b typScore) int {
		switch {
		case a.score < b.score:
			return -1
		case a.score > b.score:
			return 1
		}
		return 0
	})
	var cum float32
	last := len(idx)
	for i, t := range idx {
		cum += d[t.idx].p
		if cum > s.p && (s.minKeep == 0 || i >= s.minKeep-1) {
			last = i + 1
			break
		}
	}
	tmp := w.sortBuf[:last]
	for i := 0; i < last; i++ {
		tmp[i] = d[idx[i].idx]
	}
	copy(d, tmp)
	c.data = d[:last]
	c.sorted = false
	c.identity = false
}

type typScore struct {
	score float32
	idx   int32
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// ---- top-n-sigma -------------------------------------------------------

// topNSigmaStep is llama_sampler_top_n_sigma: mask (-Inf) every logit below
// max - n·σ, σ the standard deviation of the finite logits, then softmax
// with a full sort. n ≤ 0 is a no-op.
type topNSigmaStep struct {
	stateless
	w *workspace
	n float32
}

func (s *topNSigmaStep) apply(c *candidates) {
	d := c.data
	if s.n <= 0 || len(d) <= 1 {
		return
	}
	negInf := float32(math.Inf(-1))
	maxL := d[0].logit
	var sum float32
	valid := 0
	for _, cd := range d {
		if cd.logit != negInf {
			if cd.logit > maxL {
				maxL = cd.logit
			}
			sum += cd.logit
			valid++
		}
	}
	var mean float32
	if valid > 0 {
		mean = sum / float32(valid)
	}
	var acc float32
	for _, cd := range d {
		if cd.logit != negInf {
			dv := float64(cd.logit - mean)
			acc = float32(float64(acc) + dv*dv)
		}
	}
	var std float32
	if valid > 0 {
		std = float32(math.Sqrt(float64(acc / float32(valid))))
	}
	bar := maxL - s.n*std
	for i := range d {
		if d[i].logit < bar {
			d[i].logit = negInf
		}
	}
	s.w.softmax(c, true)
}

// ---- XTC ---------------------------------------------------------------

// xtcStep is llama_sampler_xtc (exclude top choices): with probability
// `prob`, drop every token whose probability is at least `threshold` except
// the least likely of them. threshold > 0.5 disables it. It owns its own
// mt19937, seeded like llama.cpp's.
type xtcStep struct {
	w               *workspace
	prob, threshold float32
	minKeep         int
	seed            uint32
	rng             mt19937
}

func (s *xtcStep) accept(int32) {}
func (s *xtcStep) reset()       { s.rng.seed(s.seed) }

func (s *xtcStep) apply(c *candidates) {
	if s.prob <= 0 || s.threshold > 0.5 || len(c.data) < 2 {
		return
	}
	if chance := s.rng.float32(); chance > s.prob {
		return
	}
	s.w.softmax(c, true)
	posLast := 0
	for i, cd := range c.data {
		if cd.p >= s.threshold {
			posLast = i
		} else {
			break
		}
	}
	if len(c.data)-posLast >= s.minKeep && posLast > 0 {
		c.data = c.data[posLast:]
		c.identity = false
	}
}

// ---- penalties ---------------------------------------------------------

// penaltiesStep is llama_sampler_penalties: over the last n accepted tokens,
// a token seen `count` times gets the sign-aware repeat penalty (logit ≤ 0:
// ×r, else ÷r) and then -= count·freq + present.
type penaltiesStep struct {
	lastN                 int
	repeat, freq, present float32
	ring                  ring
	counts                countMap
}

func newPenalties(lastN int, repeat, freq, present float32) *penaltiesStep {
	s := &penaltiesStep{lastN: lastN, repeat: repeat, freq: freq, present: present}
	s.ring.init(lastN)
	s.counts.init(lastN)
	return s
}

func (s *penaltiesStep) accept(tok int32) {
	if s.lastN == 0 {
		return
	}
	s.counts.add(tok, 1)
	if s.ring.len() >= s.lastN {
		old := s.ring.front()
		s.counts.add(old, -1)
	}
	s.ring.push(tok)
}

func (s *penaltiesStep) reset() {
	s.ring.clear()
	s.counts.clear()
}

func (s *penaltiesStep) penalize(cd *candidate, count int32) {
	if cd.logit <= 0 {
		cd.logit *= s.repeat
	} else {
		cd.logit /= s.repeat
	}
	var present float32
	if count > 0 {
		present = 1
	}
	a := float32(float32(count) * s.freq)
	b := float32(present * s.present)
	cd.logit -= a + b
}

func (s *penaltiesStep) apply(c *candidates) {
	if s.lastN == 0 || (s.repeat == 1 && s.freq == 0 && s.present == 0) {
		return
	}
	if s.counts.size == 0 {
		c.sorted = false
		return
	}
	if c.identity {
		// Visit each distinct token of the window once.
		s.counts.newPass()
		for i := 0; i < s.ring.len(); i++ {
			tok := s.ring.rat(i)
			if n := s.counts.visit(tok); n > 0 && int(tok) < len(c.data) {
				s.penalize(&c.data[tok], n)
			}
		}
	} else {
		for i := range c.data {
			if n := s.counts.get(c.data[i].id); n > 0 {
				s.penalize(&c.data[i], n)
			}
		}
	}
	c.sorted = false
}

// ---- logit bias --------------------------------------------------------

type logitBiasStep struct {
	stateless
	bias []LogitBias
}

func (s *logitBiasStep) apply(c *candidates) {
	if c.identity {
		for _, b := range s.bias {
			if int(b.Token) < len(c.data) {
				c.data[b.Token].logit += b.Bias
			}
		}
		return
	}
	for _, b := range s.bias {
		for i := range c.data {
			if c.data[i].id == b.Token {
				c.data[i].logit += b.Bias
				break
			}
		}
	}
}
