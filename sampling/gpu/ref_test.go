package gpu

import (
	"math"

	"github.com/x448/float16"
)

// refSample is a plain scalar transcription of the kernel formulas of the
// package documentation (and DESIGN.md): a copy of the logits, literal
// 12- and 8-step bisections that count and sum over the whole vocabulary,
// and a full argmax that evaluates the noise of every kept token. It shares
// nothing with the implementation except the documented constants.
func refSample(logits []float32, prev []int32, position uint32, p Params, f16 bool) int32 {
	v := len(logits)
	if v == 0 {
		return -1
	}
	x := append([]float32(nil), logits...)

	// Phase 0.
	if r := p.RepeatPenalty; r > 0 && r != 1 {
		done := map[int32]bool{}
		for _, t := range prev {
			if t < 0 || int(t) >= v || done[t] {
				continue
			}
			done[t] = true
			if x[t] > 0 {
				x[t] /= r
			} else {
				x[t] *= r
			}
		}
	}

	// Phase 1.
	m := float32(math.Inf(-1))
	for _, xi := range x {
		if xi > m {
			m = xi
		}
	}
	if math.IsInf(float64(m), -1) {
		return -1
	}
	arg := 0
	for x[arg] != m {
		arg++
	}
	if !(p.Temperature > 0) || math.IsInf(float64(m), 1) {
		return int32(arg)
	}

	// Phase 2.
	theta := float32(math.Inf(-1))
	if k := p.TopK; k > 0 && k < v {
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
		theta = hi
	}
	if tp := p.TopP; tp > 0 && tp < 1 {
		mass := func(from float32) uint64 {
			var s uint64
			for _, xi := range x {
				if xi >= from {
					s += uint64(math.Exp(float64(xi)-float64(m)) * (1 << 37))
				}
			}
			return s
		}
		total := mass(theta)
		lo, hi := max(theta, m-30), m
		for range 8 {
			mid := (lo + hi) / 2
			if float64(mass(mid)) > float64(tp)*float64(total) {
				lo = mid
			} else {
				hi = mid
			}
		}
		theta = max(theta, hi)
	}
	if mp := p.MinP; mp > 0 && mp < 1 {
		theta = max(theta, m+float32(math.Log(float64(mp))))
	}

	// Phase 3.
	es := (position + p.SeedOffset) * 2654435761
	best, bestV := -1, float32(math.Inf(-1))
	for i, xi := range x {
		if xi < theta {
			continue // -Inf
		}
		s := es + uint32(i)
		s = s*747796405 + 2891336453
		w := ((s >> ((s >> 28) + 4)) ^ s) * 277803737
		w = (w >> 22) ^ w
		u := float32(w) / 4294967296
		u = min(max(u, float32(1e-7)), float32(1-1e-7))
		g := float32(-math.Log(-math.Log(float64(u))))
		val := xi + float32(p.Temperature*g)
		if f16 {
			val = float16.Fromfloat32(val).Float32()
		}
		if val > bestV {
			best, bestV = i, val
		}
	}
	return int32(best)
}
