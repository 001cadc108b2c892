package jsonschema2gbnf

import (
	"math/rand"
	"strings"
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

// writeSeq2 writes what seq(x, paren(y)) returns, for every kind of
// expression a key trie puts together: literals (merged), classes,
// names, groups, sequences, alternatives, and the empty string.
func TestWriteSeq2(t *testing.T) {
	xs := []string{`"a"`, `"\""`, `"\\"`, `"ab"`, `[a-z]`, `[^"\\]`, `name-1`, `("a" | "b")`}
	ys := []string{`""`, `"c"`, `"c\"d"`, `[0-9]`, `key-3`, `("c" | "d")`, `"c" | "d"`, `"c" [0-9]`, `[a] "b"`, `("c") ("d")`, `"c" key-3*`}
	for _, x := range xs {
		for _, y := range ys {
			var b strings.Builder
			writeSeq2(&b, x, y)
			if want := seq(x, paren(y)); b.String() != want {
				t.Errorf("writeSeq2(%q, %q) = %q, seq(x, paren(y)) = %q", x, y, b.String(), want)
			}
		}
	}
}
