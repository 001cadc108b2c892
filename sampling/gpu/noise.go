package gpu

import "math"

// pcgWord is the kernel's PCG hash of s before the conversion to a float
// (pcg_float without the final division).
func pcgWord(s uint32) uint32 {
	s = s*747796405 + 2891336453
	w := ((s >> ((s >> 28) + 4)) ^ s) * 277803737
	return (w >> 22) ^ w
}

// Uniform clamp bounds (float32): u is kept in [1e-7, 1-1e-7] so that both
// logarithms of the Gumbel transform are finite.
var (
	uLo = float32(1e-7)
	uHi = float32(1 - 1e-7)
)

// uniform is pcg_float(s) clamped: float32(w) / 2³² (exact division).
func uniform(w uint32) float32 {
	u := float32(w) / 4294967296.0
	return min(max(u, uLo), uHi)
}

// gumbel is g = float32(-ln(-ln(float64(u)))).
func gumbel(u float32) float32 {
	return float32(-math.Log(-math.Log(float64(u))))
}

// noise returns g_i for element seed es and token i.
func noise(es uint32, i int) float32 {
	return gumbel(uniform(pcgWord(es + uint32(i))))
}

// elementSeed is (position + seed_offset) · 2654435761 (uint32).
func elementSeed(position, seedOffset uint32) uint32 {
	return (position + seedOffset) * 2654435761
}

// noiseBuckets is the resolution of the Gumbel upper-bound table: the top
// log2(noiseBuckets) bits of the hash word bound u, hence g. With 1024
// buckets only 1/1024 of the tokens have the loose bound g ≤ gmax ≈ 16.1;
// the rest are bounded by g ≤ 6.93, which rules almost all of them out of
// the argmax without evaluating a logarithm.
const (
	noiseBucketBits = 10
	noiseBuckets    = 1 << noiseBucketBits
)

// gumbelBound[b] ≥ g for every hash word whose top bits are b: u =
// float32(w)/2³² ≤ (b+1)/1024 (the rounding of w to float32 can reach the
// bucket's upper edge but not pass it), and g is nondecreasing in u. Two
// ulps of margin absorb any last-bit non-monotonicity of math.Log.
var gumbelBound = func() (t [noiseBuckets]float32) {
	for b := range t {
		u := float32(b+1) / noiseBuckets
		u = min(max(u, uLo), uHi)
		g := gumbel(u)
		t[b] = math.Nextafter32(math.Nextafter32(g, float32(math.Inf(1))), float32(math.Inf(1)))
	}
	return t
}()

// gumbelMax bounds every g (u ≤ 1-1e-7).
var gumbelMax = gumbelBound[noiseBuckets-1]
