package jsonschema2gbnf

import (
	"math/rand"
	"testing"
)

// sanitizeName returns a name that is already sanitized unchanged; the
// general loop (forced by a leading character it drops) agrees.
func TestSanitizeNameFastPath(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	const chars = "ab-Z09_-.é"
	for i := 0; i < 20000; i++ {
		b := make([]byte, rng.Intn(56))
		for k := range b {
			b[k] = chars[rng.Intn(len(chars))]
		}
		s := string(b)
		slow := sanitizeName("_" + s)
		if isName(s, 48) && slow != s {
			t.Fatalf("%q: a sanitized name, but the loop gives %q", s, slow)
		}
		if got := sanitizeName(s); got != slow {
			t.Fatalf("%q: %q, the loop gives %q", s, got, slow)
		}
	}
}
