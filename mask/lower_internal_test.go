package mask

import (
	"slices"
	"strings"
	"testing"
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
