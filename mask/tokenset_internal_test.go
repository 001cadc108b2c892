package mask

import (
	"math/bits"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/structgen/structgen/vocab"
)

// TestOrExclInto checks that adding a set with exclusions in one pass
// (tokenSet.orExclInto, and setBuilder.addSet with it) gives what copying
// it to a buffer and ORing that gives, over random masks and sets.
func TestOrExclInto(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const words = 64
	var keep []int32
	for trial := 0; trial < 500; trial++ {
		dst := make([]uint32, words)
		for i := range dst {
			dst[i] = rng.Uint32() & rng.Uint32()
		}
		s := tokenSet{bits: make([]uint32, words)}
		for i := range s.bits {
			s.bits[i] = rng.Uint32()
		}
		for range rng.Intn(40) {
			s.excl = append(s.excl, int32(rng.Intn(words*32)))
		}
		want := slices.Clone(dst)
		tmp := make([]uint32, words)
		s.copyInto(tmp)
		orWords(want, tmp)
		b := newSetBuilder(words)
		for i, x := range dst {
			for ; x != 0; x &= x - 1 {
				b.add(int32(i*32 + bits.TrailingZeros32(x)))
			}
		}
		s.orExclInto(dst, &keep)
		if !slices.Equal(dst, want) {
			t.Fatalf("trial %d: orExclInto differs from copy and OR", trial)
		}
		// A set builder adds it the same way.
		b.addSet(&s)
		built := b.build()
		got := make([]uint32, words)
		built.copyInto(got)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: setBuilder.addSet differs from copy and OR", trial)
		}
	}
}

// TestPlusSet checks the dense-plus-a-few form of a set (a slice's
// bitset shared, the ids outside it listed: walker.buildWith) against the
// same ids as a plain bitset, in every operation that applies a set:
// has, orInto, copyInto, andInto, setBuilder.addSet, and buildWith
// itself (the form, the ids, and the work it counts against building the
// union whole).
func TestPlusSet(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	const words = 256
	for trial := 0; trial < 300; trial++ {
		in := tokenSet{bits: make([]uint32, words)}
		for i := range in.bits {
			in.bits[i] = rng.Uint32() | rng.Uint32()
			in.n += bits.OnesCount32(in.bits[i])
		}
		b := newSetBuilder(words)
		for range rng.Intn(2 * maxPlusIDs(words)) {
			b.add(int32(rng.Intn(words * 32)))
		}
		// The union whole, from a copy of the builder's ids.
		whole := newSetBuilder(words)
		for _, id := range b.ids {
			whole.add(id)
		}
		whole.addSet(&in)
		want := whole.build()
		wantWork := in.work() + want.work()
		w := &walker{acc: b}
		w.work = in.work()
		plusable := b.len() <= maxPlusIDs(words)
		got := w.buildWith(&in)
		if plusable && (len(got.bits) == 0 || &got.bits[0] != &in.bits[0]) {
			t.Fatalf("trial %d: %d ids outside the slice's set, and its bitset not shared", trial, b.len())
		}
		if w.work != wantWork || got.n != want.n {
			t.Fatalf("trial %d: work %d, n %d; built whole %d, %d", trial, w.work, got.n, wantWork, want.n)
		}
		ref := make([]uint32, words)
		want.copyInto(ref)
		// The form a mask applies: the same ids, one bitset, made once.
		if fm := got.forMask(); fm.list != nil || fm.excl != nil || fm.n != want.n || !slices.Equal(fm.bits, ref) || fm != got.forMask() {
			t.Fatalf("trial %d: forMask is not the set as one bitset, made once", trial)
		}
		for id := int32(0); id < words*32; id++ {
			if got.has(id) != hasBit(ref, id) {
				t.Fatalf("trial %d: has(%d) = %v", trial, id, got.has(id))
			}
		}
		dst := make([]uint32, words)
		for i := range dst {
			dst[i] = rng.Uint32() & rng.Uint32()
		}
		for _, op := range []struct {
			name string
			f    func(s *tokenSet, dst []uint32)
			ref  func(dst []uint32)
		}{
			{"orInto", (*tokenSet).orInto, func(d []uint32) { orWords(d, ref) }},
			{"copyInto", (*tokenSet).copyInto, func(d []uint32) { copy(d, ref) }},
			{"andInto", (*tokenSet).andInto, func(d []uint32) {
				for i := range d {
					d[i] &= ref[i]
				}
			}},
			{"addSet", func(s *tokenSet, d []uint32) {
				sb := newSetBuilder(words)
				sb.addSet(&tokenSet{bits: d, n: 1})
				sb.addSet(s)
				r := sb.build()
				r.copyInto(d)
			}, func(d []uint32) { orWords(d, ref) }},
		} {
			g, r := slices.Clone(dst), slices.Clone(dst)
			op.f(&got, g)
			op.ref(r)
			if !slices.Equal(g, r) {
				t.Fatalf("trial %d: %s differs from the plain bitset's", trial, op.name)
			}
		}
	}
}

// TestUpToCharsExclusions checks every set of a slice's tokens by
// characters against the tokens' character counts, on a vocabulary where
// the sets take all three forms (a list, a bitset of its own, the slice's
// bitset less the longer tokens).
func TestUpToCharsExclusions(t *testing.T) {
	var toks [][]byte
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		if n == 0 {
			return
		}
		for b := byte('a'); b <= 'e'; b++ {
			s := prefix + string(b)
			toks = append(toks, []byte(s))
			gen(s, n-1)
		}
	}
	gen("", 5) // 3,905 tokens of 1-5 letters
	for n := 6; n <= 20; n++ {
		toks = append(toks, []byte(strings.Repeat("a", n)))
	}
	v, err := NewVocab(toks, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := prepare(v)
	var cl vocab.Class
	for b := byte('a'); b <= 'e'; b++ {
		cl.AddASCII(b)
	}
	var work int64
	sl := v.Slice(cl, &work)
	if sl.InList != nil {
		t.Fatal("the slice is not dense: the test tests nothing")
	}
	chars := map[int32]int{}
	for id, tok := range toks {
		chars[int32(id)] = len(tok)
	}
	forms := map[string]bool{}
	got := make([]uint32, p.words)
	for k := int32(0); k <= 21; k++ {
		s := p.upToChars(sl, k, &work)
		switch {
		case s.excl != nil:
			forms["exclusions"] = true
		case s.bits != nil:
			forms["bits"] = true
		default:
			forms["list"] = true
		}
		s.copyInto(got)
		n := 0
		for id := range toks {
			want := chars[int32(id)] <= int(k)
			if hasBit(got, int32(id)) != want {
				t.Fatalf("k=%d: token %q in the set: %v, want %v", k, toks[id], !want, want)
			}
			if want {
				n++
			}
		}
		if s.n != n {
			t.Fatalf("k=%d: n = %d, want %d", k, s.n, n)
		}
	}
	if len(forms) != 3 {
		t.Fatalf("forms %v: want all three", forms)
	}
}
