package mask

import (
	"fmt"
	"math/bits"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
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
// union whole), for slices of many tokens and of few (whose union built
// whole would be a list).
func TestPlusSet(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	const words = 256
	for trial := 0; trial < 300; trial++ {
		in := tokenSet{bits: make([]uint32, words)}
		if trial%2 == 0 {
			for i := range in.bits {
				in.bits[i] = rng.Uint32() | rng.Uint32()
			}
		} else {
			// A bitset of few ids (a slice of the digits): the union
			// listed whole would be a list, and is shared all the same.
			for range rng.Intn(denseThreshold(words)) {
				setBit(in.bits, int32(rng.Intn(words*32)))
			}
			if trial%4 == 1 {
				// With its list (a slice's InList): made whole as a list.
				for id := int32(0); id < words*32; id++ {
					if hasBit(in.bits, id) {
						in.listed = append(in.listed, id)
					}
				}
			}
		}
		for _, x := range in.bits {
			in.n += bits.OnesCount32(x)
		}
		b := newSetBuilder(words)
		for range rng.Intn(2 * maxPlusIDs(words)) {
			b.add(int32(rng.Intn(words * 32)))
		}
		if trial%3 == 2 {
			// A builder that took sets whole (finishLevel1's, a symbolic
			// walk's): its ids outside in are read from its bits.
			extra := make([]uint32, words)
			for range rng.Intn(maxPlusIDs(words)) {
				setBit(extra, int32(rng.Intn(words*32)))
			}
			b.addSet(&tokenSet{bits: extra, n: 1})
		}
		// The union whole, from a copy of the builder's bits.
		whole := newSetBuilder(words)
		whole.addSet(&tokenSet{bits: slices.Clone(b.bits), n: 1})
		whole.addSet(&in)
		want := whole.build()
		wantWork := in.work() + want.work()
		outside := 0
		for i, x := range b.bits {
			outside += bits.OnesCount32(x &^ in.bits[i])
		}
		w := &walker{acc: b}
		w.work = in.work()
		plusable := outside <= maxPlusIDs(words)
		got := w.buildWith(b, &in)
		if plusable && (len(got.bits) == 0 || &got.bits[0] != &in.bits[0]) {
			t.Fatalf("trial %d: %d ids outside the slice's set, and its bitset not shared", trial, outside)
		}
		if w.work != wantWork || got.n != want.n {
			t.Fatalf("trial %d: work %d, n %d; built whole %d, %d", trial, w.work, got.n, wantWork, want.n)
		}
		ref := make([]uint32, words)
		want.copyInto(ref)
		// The form a mask applies: the same ids, one bitset, made once
		// (a list, where the union is no more and the slice's bitset
		// comes with its list; a set built whole is applied as it is).
		fm := got.forMask()
		switch {
		case !plusable:
			if fm != &got {
				t.Fatalf("trial %d: forMask of a set built whole is not the set", trial)
			}
		case in.listed != nil && want.bits == nil:
			fb := make([]uint32, words)
			fm.copyInto(fb)
			if fm.bits != nil || fm.excl != nil || len(fm.list) != want.n || fm.n != want.n || !slices.Equal(fb, ref) || fm != got.forMask() {
				t.Fatalf("trial %d: forMask is not the set as one list, made once", trial)
			}
		default:
			if fm.list != nil || fm.excl != nil || fm.n != want.n || !slices.Equal(fm.bits, ref) || fm != got.forMask() {
				t.Fatalf("trial %d: forMask is not the set as one bitset, made once", trial)
			}
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
			if op.name == "andInto" && got.bits == nil {
				continue // (dense sets only: a list built whole is none)
			}
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

// TestBorrowedShared checks that the states that borrow the same first
// bytes from a slice share one set of its tokens (borrowedIn), across
// compilations, and that their masks are those of the walks without
// slices: after a minus sign, an integer's digits but a leading zero.
func TestBorrowedShared(t *testing.T) {
	var toks [][]byte
	for n := 0; n < 1000; n++ {
		toks = append(toks, []byte(strconv.Itoa(n)))
		if n < 10 {
			toks = append(toks, []byte(fmt.Sprintf("%02d", n)), []byte(fmt.Sprintf("%03d", n)))
		}
	}
	for _, s := range []string{"[", "]", "-", ",", "1]", "7,", "-1", "x"} {
		toks = append(toks, []byte(s))
	}
	v, err := NewVocab(toks, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gbnf.Parse(`root ::= "[" int ("," int)* "]"
int ::= "-"? ("0" | [1-9] [0-9]*)`)
	if err != nil {
		t.Fatal(err)
	}
	mask := func(c *Compiled) ([]uint32, *level1) {
		m := c.NewMatcher()
		if err := m.AcceptBytes([]byte("[-")); err != nil {
			t.Fatal(err)
		}
		bm := make([]uint32, c.Words())
		m.FillMask(bm)
		return bm, c.level1[m.cfg[0].state]
	}
	var shared []uint32
	for i := 0; i < 2; i++ {
		c, err := CompileWith(g, v, Options{EagerWork: -1})
		if err != nil {
			t.Fatal(err)
		}
		got, l := mask(c)
		if l == nil || l.full.bits == nil {
			t.Fatalf("compile %d: the state after the minus sign has no shared set (%+v)", i, l)
		}
		if i == 0 {
			shared = l.full.bits
		} else if &l.full.bits[0] != &shared[0] {
			t.Fatal("the second compilation made the borrowed set again")
		}
		noSlices = true
		ref, err := CompileWith(g, v, Options{EagerWork: -1})
		noSlices = false
		if err != nil {
			t.Fatal(err)
		}
		want, _ := mask(ref)
		if !slices.Equal(got, want) {
			t.Fatalf("compile %d: the mask after the minus sign differs from the walks'", i)
		}
	}
}
