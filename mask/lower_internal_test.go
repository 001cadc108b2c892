package mask

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
)

// TestClassRxRanges checks that a class's one-byte characters are one
// byte position whatever their ranges, its other characters sequences
// as before, and that repetition keys tell such positions apart.
func TestClassRxRanges(t *testing.T) {
	r := classRx([]rune{' ', '!', '#', '[', ']', 'g', 'i', '~'}, false)
	if r.op != rxByte || r.rng == nil || !slices.Equal(*r.rng, []byte{' ', '!', '#', '[', ']', 'g', 'i', '~'}) || r.lo != ' ' || r.hi != '~' || r.size() != 1 {
		t.Fatalf("ASCII class of four ranges: %+v, want one byte position with its ranges", r)
	}
	if w := r.byteWidth(); w != 2+57+11+22 {
		t.Errorf("byteWidth = %d, want %d", w, 2+57+11+22)
	}
	one := classRx([]rune{'a', 'z'}, false)
	if one.op != rxByte || one.rng != nil || one.lo != 'a' || one.hi != 'z' {
		t.Errorf("[a-z]: %+v, want one range", one)
	}
	// [^"\\]: the one-byte characters (three ranges) first, then the
	// multi-byte sequences.
	neg := classRx([]rune{'"', '"', '\\', '\\'}, true)
	if neg.op != rxAlt || neg.subs[0].op != rxByte || neg.subs[0].rng == nil || !slices.Equal(*neg.subs[0].rng, []byte{0, '!', '#', '[', ']', 0x7F}) {
		t.Fatalf(`[^"\\]: %+v, want an alternation led by one position of three ranges`, neg)
	}
	for _, s := range neg.subs[1:] {
		if s.op == rxByte {
			t.Errorf(`[^"\\]: a second one-byte alternative %+v`, s)
		}
	}
	var k1, k2 strings.Builder
	classRx([]rune{'a', 'c', 'x', 'z'}, false).key(&k1)
	classRx([]rune{'a', 'z'}, false).key(&k2)
	if k1.String() == k2.String() {
		t.Errorf("[a-cx-z] and [a-z] have the same key %q", k1.String())
	}
}

// TestWideTransitionTable checks the dense table's two widths: an
// automaton of 2^17 states (the 17th byte from the end is "a") has
// 32-bit entries, a small one 16-bit ones, and both step as the
// language says.
func TestWideTransitionTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an automaton of 131,072 states")
	}
	for _, tc := range []struct {
		src  string
		k    int // the k-th byte from the end is "a"
		wide bool
	}{
		{`root ::= [ab]* "a" [ab]{16}`, 17, true},
		{`root ::= [ab]* "a" [ab]{3}`, 4, false},
	} {
		g, err := gbnf.Parse(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		v := lettersVocab(t, "a", "b")
		defs, _, err := lowerGrammar(g, v, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, err := buildAutomaton(defs, maxStates, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.frames) != 1 || (a.trans32 != nil) != tc.wide || (a.trans16 != nil) == tc.wide {
			t.Fatalf("%s: %d frames, %d states, 16-bit table %v, 32-bit %v", tc.src, len(a.frames), len(a.states), a.trans16 != nil, a.trans32 != nil)
		}
		rng := rand.New(rand.NewPCG(1, uint64(tc.k)))
		for range 500 {
			s := make([]byte, tc.k+rng.IntN(40))
			for i := range s {
				s[i] = "ab"[rng.IntN(2)]
			}
			q := a.frames[0].start
			for _, b := range s {
				if q = a.step(q, int(a.classOf[b])); q < 0 {
					break
				}
			}
			got := q >= 0 && a.states[q].flags&stFinal != 0
			if want := s[len(s)-tc.k] == 'a'; got != want {
				t.Fatalf("%s: %q accepted %v, want %v", tc.src, s, got, want)
			}
		}
	}
}
