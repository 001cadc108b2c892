package cpu

import (
	"math"
	"slices"
)

// refChain is the plain, sort-based implementation of the default llama.cpp
// order (top-k → top-p → min-p → temperature → dist) used as the reference
// in tests and as the baseline in benchmarks: materialise all candidates,
// sort them all, then walk the rules one after another. It is written from
// llama.cpp's semantics directly and shares no code with the chain except
// the random generator.
type refChain struct {
	k          int
	p, minP, t float32
	rng        mt19937
	buf        []candidate
}

func newRef(p Params) *refChain {
	r := &refChain{k: p.TopK, p: p.TopP, minP: p.MinP, t: p.Temperature}
	if r.p == 0 {
		r.p = 1
	}
	r.rng.seed(p.Seed)
	return r
}

func (r *refChain) sample(logits []float32) int32 {
	if cap(r.buf) < len(logits) {
		r.buf = make([]candidate, len(logits))
	}
	d := r.buf[:len(logits)]
	for i, x := range logits {
		d[i] = candidate{id: int32(i), logit: x}
	}
	slices.SortFunc(d, func(a, b candidate) int {
		switch {
		case a.logit > b.logit:
			return -1
		case a.logit < b.logit:
			return 1
		}
		return 0
	})
	if r.k > 0 && r.k < len(d) {
		d = d[:r.k]
	}
	if r.p < 1 {
		var sum float32
		for i := range d {
			d[i].p = float32(math.Exp(float64(d[i].logit - d[0].logit)))
			sum += d[i].p
		}
		var cum float32
		for i := range d {
			cum += d[i].p / sum
			if cum >= r.p {
				d = d[:i+1]
				break
			}
		}
	}
	if r.minP > 0 {
		bar := d[0].logit + float32(math.Log(float64(r.minP)))
		i := 1
		for i < len(d) && d[i].logit >= bar {
			i++
		}
		d = d[:i]
	}
	if r.t == 0 {
		return d[0].id
	}
	for i := range d {
		d[i].logit /= r.t
	}
	if len(d) == 1 {
		return d[0].id
	}
	var sum float64
	for i := range d {
		d[i].p = float32(math.Exp(float64(d[i].logit - d[0].logit)))
		sum += float64(d[i].p)
	}
	target := sum * r.rng.float64()
	var run float64
	for i := range d {
		run += float64(d[i].p)
		if run >= target {
			return d[i].id
		}
	}
	return d[len(d)-1].id
}
