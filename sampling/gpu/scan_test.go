package gpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFirstAbove: the (assembly, on amd64) scan and the portable loop agree
// on every length around the 16-wide blocks, with NaN, ±Inf and ties at the
// threshold.
func TestFirstAbove(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for range 30000 {
		x := make([]float32, rng.IntN(80))
		for i := range x {
			switch rng.IntN(12) {
			case 0:
				x[i] = float32(math.NaN())
			case 1:
				x[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
			case 2:
				x[i] = 1.5
			default:
				x[i] = float32(rng.NormFloat64())
			}
		}
		thr := []float32{1.5, float32(math.Inf(-1)), float32(rng.NormFloat64() + 1)}[rng.IntN(3)]
		if a, b := firstAbove(x, thr), firstAboveGo(x, thr); a != b {
			t.Fatalf("firstAbove(%v, %v) = %d, portable %d", x, thr, a, b)
		}
	}
}
