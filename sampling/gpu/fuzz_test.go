package gpu

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzSample: on any logits (raw float32 bits: NaN, ±Inf, subnormals,
// ties), previous tokens and parameters, Sample and SampleF16 agree with
// the scalar reference.
func FuzzSample(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64}, []byte{1, 0}, uint32(3), float32(1), 2, float32(0.5), float32(0.1), float32(1.3), uint32(9))
	f.Add([]byte{0, 0, 128, 255, 0, 0, 192, 127, 0, 0, 128, 127, 1, 0, 0, 0}, []byte{}, uint32(0), float32(0.7), 0, float32(0), float32(0), float32(0), uint32(1))
	f.Fuzz(func(t *testing.T, raw, prevRaw []byte, pos uint32, temp float32, k int, topP, minP, rep float32, seed uint32) {
		if len(raw) < 4 || len(raw) > 4*4096 {
			return
		}
		l := make([]float32, len(raw)/4)
		for i := range l {
			l[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		prev := make([]int32, len(prevRaw))
		for i, b := range prevRaw {
			prev[i] = int32(b) - 8
		}
		p := Params{Temperature: temp, TopK: k % 5000, TopP: topP, MinP: minP, RepeatPenalty: rep, SeedOffset: seed}
		if math.IsInf(float64(temp), 0) || math.IsNaN(float64(rep)) || math.IsInf(float64(rep), 0) {
			return // outside the documented domain: T and r are finite
		}
		if got, want := Sample(l, prev, pos, p), refSample(l, prev, pos, p, false); got != want {
			t.Fatalf("Sample(%v, %v, %d, %+v) = %d, reference %d", l, prev, pos, p, got, want)
		}
		h := toF16(l)
		if got, want := SampleF16(h, prev, pos, p), refSample(widen(h), prev, pos, p, true); got != want {
			t.Fatalf("SampleF16(%v, %v, %d, %+v) = %d, reference %d", l, prev, pos, p, got, want)
		}
	})
}
