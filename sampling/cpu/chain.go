package cpu

import (
	"math"

	"github.com/x448/float16"

	"github.com/structgen/structgen/internal/minheap"
)

// Chain is a configured sampler pipeline with its history (for penalties,
// DRY, mirostat) and its random state. It is not safe for concurrent use:
// use one Chain per sequence.
type Chain struct {
	p     normalized
	steps []step
	ws    workspace
	cs    candidates // the working set, reused (a local would escape through the step interface)

	lazyTopK   int  // > 0: the first step is top-k with this k and nothing precedes it
	lazyArgmax bool // greedy with no logit modifier: argmax of the raw logits
	nVocab     int  // len(logits) of the current Sample

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
	heap    []minheap.Entry
	bigHeap []minheap.Entry // lazy top-k with k > heapSelectMax, grown on first use
	top     []candidate
	topPos  []int32
	inFront []bool
	typIdx  []typScore  // typical-p, grown on first use
	sortBuf []candidate // typical-p, grown on first use
}

func (w *workspace) init() {
	w.heap = make([]minheap.Entry, 0, heapSelectMax+1)
	w.top = make([]candidate, heapSelectMax)
	w.topPos = make([]int32, heapSelectMax)
	w.inFront = make([]bool, heapSelectMax)
}

func (w *workspace) grow(n int) {
	if cap(w.cands) >= n {
		return
	}
	w.cands = make([]candidate, n)
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
			c.lazyArgmax = len(c.steps) == 0
			break
		}
		c.steps = append(c.steps, &tempStep{w: w, temp: n.Temperature})
		c.miro = &mirostat{w: w, version: n.Mirostat, seed: n.Seed, tau: n.MirostatTau, eta: n.MirostatEta, m: mirostatM}
		c.miro.reset()
	default:
		// Steps whose settings are neutral are left out: they would not
		// change anything (temperature 1 divides by one exactly; a disabled
		// XTC draws no random number).
		maxPreserving := true
		for _, name := range n.order {
			var s step
			switch name {
			case "penalties":
				if n.RepeatPenalty != 1 || n.FrequencyPenalty != 0 || n.PresencePenalty != 0 {
					s = newPenalties(n.RepeatLastN, n.RepeatPenalty, n.FrequencyPenalty, n.PresencePenalty)
				}
			case "dry":
				if d := newDRY(n.DRYMultiplier, n.DRYBase, n.DRYAllowedLength, n.DRYLastN, n.DRYSequenceBreakers); d.enabled() {
					s = d
				}
			case "top_n_sigma":
				if n.TopNSigma > 0 {
					s = &topNSigmaStep{w: w, n: n.TopNSigma}
				}
			case "top_k":
				if n.TopK > 0 {
					s = &topKStep{w: w, k: n.TopK}
				}
			case "typ_p":
				if n.TypicalP < 1 {
					s = &typicalStep{w: w, p: n.TypicalP, minKeep: n.MinKeep}
					maxPreserving = false
				}
			case "top_p":
				if n.TopP < 1 {
					s = &topPStep{w: w, p: n.TopP, minKeep: n.MinKeep}
				}
			case "min_p":
				if n.MinP > 0 {
					s = &minPStep{w: w, p: n.MinP, minKeep: n.MinKeep}
				}
			case "xtc":
				if n.XTCProbability > 0 && n.XTCThreshold <= 0.5 {
					x := &xtcStep{w: w, prob: n.XTCProbability, threshold: n.XTCThreshold, minKeep: n.MinKeep, seed: n.Seed}
					x.reset()
					s = x
					maxPreserving = false
				}
			case "temperature":
				if n.Temperature != 1 || n.DynaTempRange > 0 {
					s = &tempStep{w: w, temp: n.Temperature, delta: n.DynaTempRange, expon: n.DynaTempExponent}
				}
			}
			if s != nil {
				c.steps = append(c.steps, s)
			}
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
			c.lazyArgmax = len(kept) == 0
			break
		}
		if len(c.steps) > 0 {
			if k, ok := c.steps[0].(*topKStep); ok {
				c.lazyTopK = k.k
			}
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
	if len(logits) == 0 {
		return -1
	}
	c.nVocab = len(logits)
	w := &c.ws
	w.grow(len(logits))
	cs := &c.cs
	*cs = candidates{identity: true, selected: -1}
	switch {
	case c.lazyArgmax:
		return argmax32(logits)
	case c.lazyTopK > 0 && c.lazyTopK < len(logits):
		// top-k is the first step: select straight from the logits (one
		// read-only pass) instead of materialising every candidate.
		w.selectTopFrom(logits, c.lazyTopK, cs)
		if tok, done := special(cs); done {
			return tok
		}
		return c.run(1)
	}
	d := w.cands[:len(logits)]
	odd := false
	for i, x := range logits {
		d[i] = candidate{id: int32(i), logit: x}
		if !(x < posInf) { // NaN or +Inf
			odd = true
		}
	}
	cs.data = d
	if odd {
		if tok, done := sanitize(d); done {
			return tok
		}
	}
	return c.run(0)
}

// SampleF16 is Sample for float16 logits (widened exactly to float32).
func (c *Chain) SampleF16(logits []float16.Float16) int32 {
	if len(logits) == 0 {
		return -1
	}
	c.nVocab = len(logits)
	w := &c.ws
	w.grow(len(logits))
	d := w.cands[:len(logits)]
	odd := false
	for i, h := range logits {
		x := h.Float32()
		d[i] = candidate{id: int32(i), logit: x}
		if !(x < posInf) {
			odd = true
		}
	}
	c.cs = candidates{data: d, identity: true, selected: -1}
	if odd {
		if tok, done := sanitize(d); done {
			return tok
		}
	}
	if c.lazyArgmax {
		return greedyPick(&c.cs)
	}
	return c.run(0)
}

var (
	posInf = float32(math.Inf(1))
	negInf = float32(math.Inf(-1))
)

// sanitize turns NaN into -Inf; a +Inf logit is picked outright.
func sanitize(d []candidate) (int32, bool) {
	for i := range d {
		switch x := d[i].logit; {
		case x == posInf:
			return int32(i), true
		case x != x:
			d[i].logit = negInf
		}
	}
	return 0, false
}

// special handles a lazily selected front: +Inf at the top is picked
// outright (the lowest id among the +Inf), -Inf at the top means nothing is
// selectable.
func special(cs *candidates) (int32, bool) {
	switch top := cs.data[0].logit; top {
	case posInf:
		best := cs.data[0].id
		for _, cd := range cs.data {
			if cd.logit == posInf && cd.id < best {
				best = cd.id
			}
		}
		return best, true
	case negInf:
		return -1, true
	}
	return 0, false
}

// argmax32 is greedy straight on the logits: the lowest id of the maximum
// (NaN never wins), or -1 if nothing beats -Inf.
func argmax32(logits []float32) int32 {
	best, bestV := -1, negInf
	for i, x := range logits {
		if x > bestV {
			best, bestV = i, x
		}
	}
	return int32(best)
}

// run applies the steps from the first-th on and picks the token; a pick
// whose logit is -Inf means every logit was -Inf (or NaN): -1.
func (c *Chain) run(first int) int32 {
	cs := &c.cs
	for _, s := range c.steps[first:] {
		s.apply(cs)
	}
	var idx int
	switch {
	case c.greedy:
		idx = greedyIndex(cs)
	case c.akunu != nil:
		idx = c.akunu.sample(cs)
	case c.miro != nil:
		idx = c.miro.sample(cs, c.nVocab)
	default:
		distApply(cs, c.dist)
		idx = cs.selected
	}
	if idx < 0 || cs.data[idx].logit == negInf {
		return -1
	}
	return cs.data[idx].id
}

// greedyIndex is llama_sampler_greedy: the index of the first maximal
// logit (-1 for an empty set).
func greedyIndex(c *candidates) int {
	if len(c.data) == 0 {
		return -1
	}
	best := 0
	for i := 1; i < len(c.data); i++ {
		if c.data[i].logit > c.data[best].logit {
			best = i
		}
	}
	return best
}

// greedyPick is greedyIndex's token, or -1 when the best logit is -Inf.
func greedyPick(c *candidates) int32 {
	i := greedyIndex(c)
	if i < 0 || c.data[i].logit == negInf {
		return -1
	}
	return c.data[i].id
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
