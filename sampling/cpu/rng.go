package cpu

import "math"

// mt19937 is the 32-bit Mersenne Twister, bit-identical to C++'s
// std::mt19937, which every random llama.cpp sampler uses. Reproducing it
// (and libstdc++'s generate_canonical below) makes a seed mean the same
// stream of draws here as in llama.cpp.
type mt19937 struct {
	mt  [mtN]uint32
	idx int
}

const (
	mtN         = 624
	mtM         = 397
	mtMatrixA   = 0x9908b0df
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
)

func (r *mt19937) seed(s uint32) {
	r.mt[0] = s
	for i := 1; i < mtN; i++ {
		prev := r.mt[i-1]
		r.mt[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	r.idx = mtN
}

func (r *mt19937) twist() {
	for i := 0; i < mtN; i++ {
		y := (r.mt[i] & mtUpperMask) | (r.mt[(i+1)%mtN] & mtLowerMask)
		v := r.mt[(i+mtM)%mtN] ^ (y >> 1)
		if y&1 != 0 {
			v ^= mtMatrixA
		}
		r.mt[i] = v
	}
	r.idx = 0
}

// next returns the next 32-bit output.
func (r *mt19937) next() uint32 {
	if r.idx >= mtN {
		r.twist()
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// float64 is std::uniform_real_distribution<double>(0, 1) over mt19937 as
// libstdc++ computes it (generate_canonical<double, 53>: two 32-bit draws,
// lo + hi·2³², divided by 2⁶⁴, never 1).
func (r *mt19937) float64() float64 {
	lo := float64(r.next())
	hi := float64(r.next())
	v := (lo + hi*4294967296.0) / 18446744073709551616.0
	if v >= 1 {
		v = math.Nextafter(1, 0)
	}
	return v
}

// float32 is std::uniform_real_distribution<float>(0, 1) as libstdc++
// computes it (generate_canonical<float, 24>: one 32-bit draw / 2³², never 1).
func (r *mt19937) float32() float32 {
	v := float32(r.next()) / 4294967296.0
	if v >= 1 {
		v = math.Nextafter32(1, 0)
	}
	return v
}
