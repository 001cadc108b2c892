package cpu

import "math"

// akunuTopKCap is the top-k the akunu pipeline applies when TopK is off: it
// never samples outside the 256 most likely tokens (seed 000's pipeline).
const akunuTopKCap = 256

// akunuNegligible: logits more than this far below the maximum add less
// than e^-40 ≈ 4e-18 each to the softmax sum — below float32 resolution of
// any probability even over 2²⁴ tokens — so their exp is skipped.
const akunuNegligible = 40

// akunuPipe is the akunu preset: penalty → temperature → softmax over the
// vocabulary → top-k (256 when off) → min-p → top-p (on the full-softmax
// probabilities) → renormalise → CDF walk with one uniform draw.
type akunuPipe struct {
	w      *workspace
	temp   float32
	topK   int
	topP   float32
	minP   float32
	repeat float32
	lastN  int
	seed   uint32
	rng    mt19937
	ring   ring
	counts countMap
}

func newAkunu(n normalized, w *workspace) *akunuPipe {
	a := &akunuPipe{w: w, temp: n.Temperature, topK: n.TopK, topP: n.TopP, minP: n.MinP,
		repeat: n.RepeatPenalty, lastN: n.RepeatLastN, seed: n.Seed}
	if a.topK == 0 {
		a.topK = akunuTopKCap
	}
	a.ring.init(a.lastN)
	a.counts.init(a.lastN)
	a.reset()
	return a
}

func (a *akunuPipe) reset() {
	a.rng.seed(a.seed)
	a.ring.clear()
	a.counts.clear()
}

func (a *akunuPipe) accept(tok int32) {
	a.counts.add(tok, 1)
	if a.ring.len() >= a.lastN {
		a.counts.add(a.ring.front(), -1)
	}
	a.ring.push(tok)
}

// sample returns the index in c.data of the pick.
func (a *akunuPipe) sample(c *candidates) int {
	d := c.data
	// Penalty: once per distinct token of the window, sign-aware.
	if a.repeat != 1 && c.identity {
		a.counts.newPass()
		for i := 0; i < a.ring.len(); i++ {
			tok := a.ring.rat(i)
			if a.counts.visit(tok) > 0 && int(tok) < len(d) {
				if x := d[tok].logit; x > 0 {
					d[tok].logit = x / a.repeat
				} else {
					d[tok].logit = x * a.repeat
				}
			}
		}
	}
	if a.temp == 0 {
		return greedyIndex(c)
	}
	maxL := negInf
	for i := range d {
		d[i].logit /= a.temp
		if d[i].logit > maxL {
			maxL = d[i].logit
		}
	}
	var sum float64
	floor := maxL - akunuNegligible
	for _, cd := range d {
		if cd.logit >= floor {
			sum += math.Exp(float64(cd.logit - maxL))
		}
	}
	k := min(a.topK, len(d))
	a.w.selectTop(d, k)
	d = d[:k]
	for i := range d {
		d[i].p = float32(math.Exp(float64(d[i].logit-maxL)) / sum)
	}
	if a.minP > 0 {
		bar := a.minP * d[0].p
		j := 1
		for j < len(d) && d[j].p >= bar {
			j++
		}
		d = d[:j]
	}
	if a.topP > 0 && a.topP < 1 {
		var cum float64
		for i := range d {
			cum += float64(d[i].p)
			if cum >= float64(a.topP) {
				d = d[:i+1]
				break
			}
		}
	}
	var kept float64
	for _, cd := range d {
		kept += float64(cd.p)
	}
	u := a.rng.float64() * kept
	var cum float64
	for i, cd := range d {
		cum += float64(cd.p)
		if u < cum {
			return i
		}
	}
	return len(d) - 1
}
