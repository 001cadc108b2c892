package mask

import (
	"math/bits"
	"slices"
	"sync/atomic"
)

// A tokenSet is a set of token ids in one of three forms, chosen by size
// so that applying it to a mask costs the least:
//
//   - sparse: list holds the ids (in no particular order); applying it
//     sets len(list) bits.
//   - dense: bits is a bitset over the vocabulary; applying it ORs
//     (V+31)/32 words.
//   - dense minus a few: bits is a shared bitset and excl lists ids to
//     remove from it (used for "all tokens of cost ≤ k" when few are
//     excluded). Such a set must be applied before any other set (see
//     maskPlan.fill).
//   - dense plus a few: bits is a shared bitset and list the ids outside
//     it (buildWith: a loop state's tokens are its slice's, shared by
//     every state and grammar that uses the slice, plus the few its
//     exits add; the bitset may hold few ids, the digits' 1,110). excl
//     and a list never come together with bits. A mask applies such a
//     set made whole (forMask).
//
// tokenSets are immutable once built and shared between goroutines.
type tokenSet struct {
	bits  []uint32
	list  []int32
	excl  []int32
	n     int       // number of ids in the set
	whole *wholeSet // dense plus a few: the set whole, made for masks (forMask)
	// listed is, beside a bitset of few ids (a slice's: the digits'
	// 1,110 on Llama-3), the same ids as a list, shared: forMask makes
	// such a set plus a few whole as a list (the form a set of its size
	// is applied in) rather than a copy of the bitset.
	listed []int32
}

// A wholeSet is a dense-plus-a-few set made whole on its first use in a
// mask (tokenSet.forMask): shared by the set's copies.
type wholeSet struct{ p atomic.Pointer[tokenSet] }

// forMask returns the set in the form a mask applies: itself, or for a
// dense set plus a few the same ids as a bitset of its own, made on the
// first call (a 16 KB copy on Llama-3, once per set and compilation,
// shared by every matcher). A mask applies such a set at every step of a
// string (the plus list cost 0.2 µs a step in JSON strings, against a
// copy of the bitset whole), while the compile, which makes it for every
// string state and applies it only into other sets, keeps the shared
// form. A set of few ids whose bitset comes with its list (listed) is
// made whole as a list: a copy of the bitset made the first masks of
// numbers slower (04-wide-schema's cold p99 per run 4.5-31.6 µs over
// three rounds of ten, 4.3-8.9 before) and the set four times the
// memory.
func (s *tokenSet) forMask() *tokenSet {
	if s.whole == nil {
		return s
	}
	if w := s.whole.p.Load(); w != nil {
		return w
	}
	var w *tokenSet
	if s.listed != nil && s.n <= denseThreshold(len(s.bits)) {
		w = &tokenSet{list: append(slices.Clip(s.listed), s.list...), n: s.n}
	} else {
		bits := slices.Clone(s.bits)
		for _, id := range s.list {
			setBit(bits, id)
		}
		w = &tokenSet{bits: bits, n: s.n}
	}
	if !s.whole.p.CompareAndSwap(nil, w) {
		w = s.whole.p.Load()
	}
	return w
}

// denseThreshold returns the size above which a set is stored dense: a
// sparse id costs one random write, a dense word one sequential OR, so a
// list wins while it is shorter than about half the number of words.
func denseThreshold(words int) int { return words / 2 }

// setBit sets bit id in bits.
func setBit(bits []uint32, id int32) { bits[id>>5] |= 1 << (uint32(id) & 31) }

// hasBit reports whether bit id is set.
func hasBit(bits []uint32, id int32) bool { return bits[id>>5]&(1<<(uint32(id)&31)) != 0 }

// orWords ORs src into dst (same length).
func orWords(dst, src []uint32) {
	_ = dst[len(src)-1]
	i := 0
	for ; i+4 <= len(src); i += 4 {
		d := dst[i : i+4 : i+4]
		s := src[i : i+4 : i+4]
		d[0] |= s[0]
		d[1] |= s[1]
		d[2] |= s[2]
		d[3] |= s[3]
	}
	for ; i < len(src); i++ {
		dst[i] |= src[i]
	}
}

// andNotWords clears in dst the bits set in src (same length).
func andNotWords(dst, src []uint32) {
	_ = dst[len(src)-1]
	for i, x := range src {
		dst[i] &^= x
	}
}

// andInto keeps in dst only the ids of the set, which must be dense.
func (s *tokenSet) andInto(dst []uint32) {
	_ = dst[len(s.bits)-1]
	var plus []int32 // the listed ids that dst holds
	for _, id := range s.list {
		if hasBit(dst, id) {
			plus = append(plus, id)
		}
	}
	for i, x := range s.bits {
		dst[i] &= x
	}
	for _, id := range s.excl {
		dst[id>>5] &^= 1 << (uint32(id) & 31)
	}
	for _, id := range plus {
		setBit(dst, id)
	}
}

// has reports whether id is in the set (tests and slow paths only).
func (s *tokenSet) has(id int32) bool {
	if s.bits != nil && hasBit(s.bits, id) {
		return !slices.Contains(s.excl, id)
	}
	return slices.Contains(s.list, id)
}

// orInto adds the set, which has no exclusions, to dst (a set with
// exclusions: orExclInto, or copyInto into an empty mask).
func (s *tokenSet) orInto(dst []uint32) {
	if s.bits != nil {
		orWords(dst, s.bits)
	}
	for _, id := range s.list {
		dst[id>>5] |= 1 << (uint32(id) & 31)
	}
}

// orExclInto adds a set with exclusions to dst in one pass over the
// words: its bits, less its excluded ids that dst did not hold already
// (keep is scratch for those). A mask with two such sets (a bounded
// string's tokens of up to k characters and a repetition's n cheapest)
// applied the second by copying it to a buffer first, two passes, and a
// set builder allocated that buffer each time.
func (s *tokenSet) orExclInto(dst []uint32, keep *[]int32) {
	k := (*keep)[:0]
	for _, id := range s.excl {
		if hasBit(dst, id) {
			k = append(k, id)
		}
	}
	orWords(dst, s.bits)
	for _, id := range s.excl {
		dst[id>>5] &^= 1 << (uint32(id) & 31)
	}
	for _, id := range k {
		setBit(dst, id)
	}
	*keep = k
}

// copyInto overwrites dst with the set.
func (s *tokenSet) copyInto(dst []uint32) {
	if s.bits != nil {
		copy(dst, s.bits)
		for _, id := range s.excl {
			dst[id>>5] &^= 1 << (uint32(id) & 31)
		}
	} else {
		clear(dst)
	}
	for _, id := range s.list {
		dst[id>>5] |= 1 << (uint32(id) & 31)
	}
}

// work returns the work units of adding the set to another (see
// DefaultEagerWork): one per id listed, one per 32 words of a bitset.
func (s *tokenSet) work() int64 {
	return int64(len(s.list)+len(s.excl)) + int64(len(s.bits)/32)
}

// bytes returns the memory held by the set.
func (s *tokenSet) bytes() int { return 4 * (len(s.bits) + len(s.list) + len(s.excl) + len(s.listed)) }

// A setBuilder collects token ids into a tokenSet. It keeps a bitset over
// the vocabulary plus the list of ids added, so resetting it costs only
// the ids touched. After addSet of a dense set, ids is no longer
// complete (dense is set) and build counts the bits instead.
type setBuilder struct {
	bits  []uint32
	ids   []int32
	dense bool
	keep  []int32 // addSet's scratch (tokenSet.orExclInto)
}

// addSet adds every id of s.
func (b *setBuilder) addSet(s *tokenSet) {
	if s.bits == nil {
		for _, id := range s.list {
			b.add(id)
		}
		return
	}
	if s.excl == nil {
		s.orInto(b.bits)
	} else {
		s.orExclInto(b.bits, &b.keep)
	}
	b.dense = true
}

// addSetBits adds every id of s to the bits only, leaving ids to the
// ids added one by one (build counts the bits).
func (b *setBuilder) addSetBits(s *tokenSet) {
	if s.bits != nil {
		b.addSet(s)
		return
	}
	for _, id := range s.list {
		b.bits[id>>5] |= 1 << (uint32(id) & 31)
	}
	b.dense = true
}

func newSetBuilder(words int) *setBuilder { return &setBuilder{bits: make([]uint32, words)} }

func (b *setBuilder) add(id int32) {
	w, m := id>>5, uint32(1)<<(uint32(id)&31)
	if b.bits[w]&m == 0 {
		b.bits[w] |= m
		b.ids = append(b.ids, id)
	}
}

func (b *setBuilder) len() int { return len(b.ids) }

// build returns the collected set and resets the builder.
func (b *setBuilder) build() tokenSet {
	if b.dense {
		n := 0
		for _, w := range b.bits {
			n += bits.OnesCount32(w)
		}
		s := tokenSet{n: n}
		if n > denseThreshold(len(b.bits)) {
			s.bits = slices.Clone(b.bits)
		} else if n > 0 {
			s.list = make([]int32, 0, n)
			for wi, w := range b.bits {
				for ; w != 0; w &= w - 1 {
					s.list = append(s.list, int32(wi*32+bits.TrailingZeros32(w)))
				}
			}
		}
		clear(b.bits)
		b.ids = b.ids[:0]
		b.dense = false
		return s
	}
	s := tokenSet{n: len(b.ids)}
	if len(b.ids) > denseThreshold(len(b.bits)) {
		s.bits = slices.Clone(b.bits)
	} else if len(b.ids) > 0 {
		s.list = slices.Clone(b.ids)
	}
	b.reset()
	return s
}

func (b *setBuilder) reset() {
	if b.dense || len(b.ids) > len(b.bits)/4 {
		clear(b.bits)
	} else {
		for _, id := range b.ids {
			b.bits[id>>5] = 0
		}
	}
	b.ids = b.ids[:0]
	b.dense = false
}

// emptySet is the empty tokenSet.
var emptySet = &tokenSet{}
