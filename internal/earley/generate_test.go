package earley_test

import (
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/grammartest"
)

// TestGenerateSuite: on every grammar of the regression suite, generated
// sentences fit in maxBytes and are accepted; and whenever the suite has
// an accepted byte string that fits, generation succeeds.
func TestGenerateSuite(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for _, c := range grammartest.Cases(t) {
		g, err := gbnfParseRoot(c)
		if err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		r := earley.New(g)
		shortest := -1
		for _, s := range c.Accept {
			if !s.HasTokens() && (shortest < 0 || len(s.Bytes()) < shortest) {
				shortest = len(s.Bytes())
			}
		}
		for _, maxBytes := range []int{0, 1, 3, 10, 100, 300} {
			for i := 0; i < 3; i++ {
				s, ok := earley.Generate(g, rng, maxBytes)
				if !ok {
					if shortest >= 0 && shortest <= maxBytes {
						t.Errorf("%s: Generate(maxBytes=%d) failed, but %d-byte sentences exist", c.File, maxBytes, shortest)
					}
					break
				}
				if len(s) > maxBytes {
					t.Errorf("%s: generated %d bytes, over maxBytes=%d", c.File, len(s), maxBytes)
				}
				if !r.Accepts(s) {
					t.Errorf("%s: generated %q is not accepted", c.File, s)
				}
			}
		}
	}
}

func TestGenerateCoverage(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	// Negated classes yield characters of every UTF-8 length.
	g := mustParse(t, `root ::= [^a]`)
	lengths := map[int]int{}
	for i := 0; i < 400; i++ {
		s, ok := earley.Generate(g, rng, 10)
		if !ok || utf8.RuneCount(s) != 1 || !utf8.Valid(s) || string(s) == "a" {
			t.Fatalf("generated %q", s)
		}
		lengths[len(s)]++
	}
	for l := 1; l <= 4; l++ {
		if lengths[l] == 0 {
			t.Errorf("no %d-byte character among 400 draws from [^a]: %v", l, lengths)
		}
	}
	// A tight budget picks short characters.
	for i := 0; i < 50; i++ {
		if s, ok := earley.Generate(g, rng, 1); !ok || len(s) != 1 {
			t.Fatalf("maxBytes=1: %q %v", s, ok)
		}
	}
	// Every alternative shows up.
	g = mustParse(t, `root ::= "a" | "b" | "c"`)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		s, _ := earley.Generate(g, rng, 5)
		seen[string(s)] = true
	}
	if len(seen) != 3 {
		t.Errorf("alternatives generated: %v", seen)
	}
	// Repetition counts vary within their bounds.
	g = mustParse(t, `root ::= "ab"{2,5}`)
	counts := map[int]bool{}
	for i := 0; i < 200; i++ {
		s, _ := earley.Generate(g, rng, 100)
		if len(s)%2 != 0 || len(s) < 4 || len(s) > 10 || strings.Count(string(s), "ab") != len(s)/2 {
			t.Fatalf("generated %q", s)
		}
		counts[len(s)/2] = true
	}
	if len(counts) != 4 {
		t.Errorf("counts generated: %v", counts)
	}
	// Only token sentences, or none at all: no byte sentence.
	for _, src := range []string{`root ::= <[1]>`, "root ::= x\nx ::= \"a\" x", `root ::= "abc"`} {
		if s, ok := earley.Generate(mustParse(t, src), rng, 2); ok {
			t.Errorf("%s: generated %q within 2 bytes", src, s)
		}
	}
	// Deep recursion with a budget terminates.
	g = mustParse(t, "root ::= \"(\" root \")\" | root root | \"\"")
	for i := 0; i < 50; i++ {
		s, ok := earley.Generate(g, rng, 40)
		if !ok || len(s) > 40 {
			t.Fatalf("generated %q %v", s, ok)
		}
	}
}

// TestSuiteConsistency runs the recognizer's self-consistency checks on
// every byte string of the regression suite.
func TestSuiteConsistency(t *testing.T) {
	for _, c := range grammartest.Cases(t) {
		g, err := gbnfParseRoot(c)
		if err != nil {
			t.Fatal(err)
		}
		r := earley.New(g)
		for _, list := range [][]grammartest.String{c.Accept, c.Prefix, c.Reject} {
			for _, s := range list {
				if !s.HasTokens() && len(s.Bytes()) <= 300 {
					checkConsistent(t, s.Pos(), r, s.Bytes())
				}
			}
		}
	}
}
