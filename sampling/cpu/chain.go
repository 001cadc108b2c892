package cpu

import (
	"math"

	"github.com/x448/float16"
)

// Chain is a configured sampler pipeline with its history (for penalties,
// DRY, mirostat) and its random state. It is not safe for concurrent use:
// use one Chain per sequence.
type Chain struct {
	p     normalized
	steps []step
	ws    workspace
	cs    candidates // the working set, reused (a local would escape through the step interface)

	// Exactly one final selector is set.
	dist   *mt19937 // llama.cpp's dist (one mt19937)
	miro   *mirostat
	akunu  *akunuPipe
	greedy bool // Temperature 0 and only max-preserving filters: plain argmax
}

// workspace holds the per-chain buffers that make Sample allocation-free
// once they have grown to the vocabulary size.
type workspace struct {
	cands   []candidate
	heap    []heapEntry
	top     []candidate
	topPos  []int32
	inFront []bool
	typIdx  []typScore
	sortBuf []candidate
}

func (w *workspace) init() {
	w.heap = make([]heapEntry, 0, heapSelectMax+1)
	w.top = make([]candidate, heapSelectMax)
	w.topPos = make([]int32, heapSelectMax)
	w.inFront = make([]bool, heapSelectMax)
}

func (w *workspace) grow(n int) {
	if cap(w.cands) >= n {
		return
	}
	w.cands = make([]candidate, n)
	w.typIdx = make([]typScore, n)
	w.sortBuf = make([]candidate, n)
}

// NewChain validates p and builds the chain. Zero values mean "off" (see
// Params); an invalid field is reported as a *ParamError naming it.
func NewChain(p Params) (*Chain, error) {
	n, err := p.normalize()
	if err != nil {
		return nil, err
	}
	c := &Chain{p: n}
	w := &c.ws
	w.init()

	if len(n.LogitBias) > 0 {
		c.steps = append(c.steps, &logitBiasStep{bias: append([]LogitBias(nil), n.LogitBias...)})
	}
	switch {
	case n.Preset == PresetAkunu:
		c.akunu = newAkunu(n, w)
	case n.Mirostat != 0:
		if n.Temperature == 0 {
			c.greedy = true // mirostat at temperature 0 is argmax
			break
		}
		c.steps = append(c.steps, &tempStep{w: w, temp: n.Temperature})
		c.miro = &mirostat{w: w, version: n.Mirostat, seed: n.Seed, tau: n.MirostatTau, eta: n.MirostatEta, m: mirostatM}
		c.miro.reset()
	default:
		maxPreserving := true
		for _, name := range n.order {
			var s step
			switch name {
			case "penalties":
				s = newPenalties(n.RepeatLastN, n.RepeatPenalty, n.FrequencyPenalty, n.PresencePenalty)
			case "dry":
				s = newDRY(n.DRYMultiplier, n.DRYBase, n.DRYAllowedLength, n.DRYLastN, n.DRYSequenceBreakers)
			case "top_n_sigma":
				s = &topNSigmaStep{w: w, n: n.TopNSigma}
			case "top_k":
				s = &topKStep{w: w, k: n.TopK}
			case "typ_p":
				s = &typicalStep{w: w, p: n.TypicalP, minKeep: n.MinKeep}
				maxPreserving = maxPreserving && n.TypicalP >= 1
			case "top_p":
				s = &topPStep{w: w, p: n.TopP, minKeep: n.MinKeep}
			case "min_p":
				s = &minPStep{w: w, p: n.MinP, minKeep: n.MinKeep}
			case "xtc":
				x := &xtcStep{w: w, prob: n.XTCProbability, threshold: n.XTCThreshold, minKeep: n.MinKeep, seed: n.Seed}
				x.reset()
				s = x
				maxPreserving = maxPreserving && !(n.XTCProbability > 0 && n.XTCThreshold <= 0.5)
			case "temperature":
				s = &tempStep{w: w, temp: n.Temperature, delta: n.DynaTempRange, expon: n.DynaTempExponent}
			}
			c.steps = append(c.steps, s)
		}
		if n.Temperature == 0 && n.DynaTempRange == 0 && maxPreserving {
			// Every filter keeps the most likely token and temperature 0
			// keeps only it: the result is the argmax after the logit
			// modifiers (bias, penalties, DRY), so skip the filters.
			c.greedy = true
			kept := c.steps[:0]
			for _, s := range c.steps {
				switch s.(type) {
				case *logitBiasStep, *penaltiesStep, *dryStep:
					kept = append(kept, s)
				}
			}
			c.steps = kept
			break
		}
		c.dist = new(mt19937)
		c.dist.seed(n.Seed)
	}
	return c, nil
}

// Sample returns the token the chain picks for logits (one per vocabulary
// id). logits is not modified. NaN logits count as -Inf; a +Inf logit is
// picked outright (the lowest such id). It returns -1 when there is nothing
// to pick: no logits, or all -Inf/NaN.
//
// Sample does not record the token: call Accept with the token the caller
// keeps (which may differ, e.g. after a grammar rejected it).
func (c *Chain) Sample(logits []float32) int32 {
	w := &c.ws
	w.grow(len(logits))
	d := w.cands[:len(logits)]
	negInf := float32(math.Inf(-1))
	posInf := float32(math.Inf(1))
	var maxL = negInf
	for i, x := range logits {
		if x != x {
			x = negInf
		}
		d[i] = candidate{id: int32(i), logit: x}
		maxL = max(maxL, x)
	}
	if tok, done := special(logits, maxL, posInf, negInf); done {
		return tok
	}
	return c.run(d)
}

// SampleF16 is Sample for float16 logits (widened exactly to float32).
func (c *Chain) SampleF16(logits []float16.Float16) int32 {
	w := &c.ws
	w.grow(len(logits))
	d := w.cands[:len(logits)]
	negInf := float32(math.Inf(-1))
	posInf := float32(math.Inf(1))
	var maxL = negInf
	for i, h := range logits {
		x := h.Float32()
		if x != x {
			x = negInf
		}
		d[i] = candidate{id: int32(i), logit: x}
		maxL = max(maxL, x)
	}
	if maxL == posInf || maxL == negInf {
		for i := range d {
			if d[i].logit == posInf {
				return int32(i)
			}
		}
		return -1
	}
	return c.run(d)
}

// special handles the degenerate inputs: +Inf (picked outright) and no
// finite logit (-1).
func special(logits []float32, maxL, posInf, negInf float32) (int32, bool) {
	switch maxL {
	case posInf:
		for i, x := range logits {
			if x == posInf {
				return int32(i), true
			}
		}
	case negInf:
		return -1, true
	}
	return 0, false
}

func (c *Chain) run(d []candidate) int32 {
	cs := &c.cs
	*cs = candidates{data: d, identity: true, selected: -1}
	for _, s := range c.steps {
		s.apply(cs)
	}
	switch {
	case c.greedy:
		return greedyPick(cs)
	case c.akunu != nil:
		return c.akunu.sample(cs)
	case c.miro != nil:
		return c.miro.sample(cs, len(d))
	}
	distApply(cs, c.dist)
	if cs.selected < 0 {
		return -1
	}
	return cs.data[cs.selected].id
}

// greedyPick is llama_sampler_greedy: the first maximal logit.
func greedyPick(c *candidates) int32 {
	if len(c.data) == 0 {
		return -1
	}
	best := 0
	for i := 1; i < len(c.data); i++ {
		if c.data[i].logit > c.data[best].logit {
			best = i
		}
	}
	if math.IsInf(float64(c.data[best].logit), -1) {
		return -1
	}
	return c.data[best].id
}

// distApply is llama_sampler_dist: softmax (float32 terms, float64 sum),
// one uniform double draw, and a walk of the cumulative sum.
func distApply(c *candidates, rng *mt19937) {
	d := c.data
	if len(d) == 0 {
		c.selected = -1
		return
	}
	c.selected = 0
	if len(d) == 1 {
		d[0].p = 1
		return
	}
	maxL := d[0].logit
	if !c.sorted {
		for i := 1; i < len(d); i++ {
			maxL = max(maxL, d[i].logit)
		}
	}
	var sum float64
	for i := range d {
		p := exp32(d[i].logit - maxL)
		d[i].p = p
		sum += float64(p)
	}
	target := sum * rng.float64()
	var run float64
	found := false
	for i := range d {
		if !found {
			run += float64(d[i].p)
			if run >= target {
				c.selected = i
				found = true
			}
		}
		d[i].p = float32(float64(d[i].p) / sum)
	}
	if !found {
		c.selected = len(d) - 1
	}
}

// Accept records tok (the token the caller kept) in the history used by
// penalties and DRY. Negative tokens are ignored.
func (c *Chain) Accept(tok int32) {
	if tok < 0 {
		return
	}
	if c.akunu != nil {
		c.akunu.accept(tok)
	}
	for _, s := range c.steps {
		s.accept(tok)
	}
}

// Reset forgets the history and restarts every random stream from the
// seed, so the chain behaves as if just built.
func (c *Chain) Reset() {
	for _, s := range c.steps {
		s.reset()
	}
	if c.dist != nil {
		c.dist.seed(c.p.Seed)
	}
	if c.miro != nil {
		c.miro.reset()
	}
	if c.akunu != nil {
		c.akunu.reset()
	}
}
