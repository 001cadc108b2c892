package jsonschema2gbnf

import (
	"math/rand"
	"testing"
	"unicode"
)

// normRunes (sorted input or not) gives the canonical set: sorted,
// merged, without surrogates, holding exactly the runes of the ranges.
func TestNormRunes(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	// ends near 0, the surrogates and the top, where the cases are
	ends := []rune{-1, 0, 1, 2, 'a', 'b', surrogateLo - 2, surrogateLo - 1, surrogateLo, surrogateLo + 5,
		surrogateHi - 1, surrogateHi, surrogateHi + 1, surrogateHi + 2, unicode.MaxRune - 1, unicode.MaxRune, unicode.MaxRune + 1}
	for iter := 0; iter < 20000; iter++ {
		rs := make([]rune, 2*rng.Intn(5))
		for k := range rs {
			rs[k] = ends[rng.Intn(len(ends))]
		}
		if rng.Intn(2) == 0 { // sorted by the low end
			for a := 2; a < len(rs); a += 2 {
				for b := a; b >= 2 && rs[b] < rs[b-2]; b -= 2 {
					rs[b], rs[b+1], rs[b-2], rs[b-1] = rs[b-2], rs[b-1], rs[b], rs[b+1]
				}
			}
		}
		got := normRunes(rs)
		for k := 0; k+1 < len(got); k += 2 {
			if got[k] > got[k+1] || (k > 0 && got[k] <= got[k-1]+1) || (got[k] <= surrogateHi && got[k+1] >= surrogateLo) {
				t.Fatalf("%v: %v is not canonical", rs, got)
			}
		}
		for _, e := range ends {
			for _, r := range []rune{e - 1, e, e + 1} {
				want := false
				for k := 0; k+1 < len(rs); k += 2 {
					want = want || (rs[k] <= r && r <= rs[k+1])
				}
				want = want && r >= 0 && r <= unicode.MaxRune && (r < surrogateLo || r > surrogateHi)
				if got.has(r) != want {
					t.Fatalf("%v: %v has %#x: %v, want %v", rs, got, r, got.has(r), want)
				}
			}
		}
	}
}
