package vocab

import (
	"math/bits"
	"slices"
	"sync"
)

// Slices: the part of a vocabulary inside a loop over a wide character
// class, computed once per vocabulary and class.
//
// A grammar state that loops over a wide class of characters (the body of
// a JSON string, an identifier, free text) accepts a large part of the
// vocabulary, and finding which by walking the trie costs a pass over
// most of it. Such a class differs between grammars only in which ASCII
// bytes it holds and whether it holds the non-ASCII characters, so the
// walk is done once per vocabulary and kept. For the class C of the ASCII
// bytes of Class.ASCII, plus every non-ASCII scalar value or none
// (Class.NonASCII), a Slice holds
//
//   - In: the tokens whose bytes are a prefix of a string of C* (they
//     stay inside such a loop whatever else a grammar says, ending mid
//     character or not), and on demand the number of characters each
//     starts (ByChars);
//   - the exits: the trie nodes w = v·b where v's bytes are in C* (at a
//     character boundary) and b does not start a character of C (an
//     ASCII byte outside the class, or a lead byte when the class is
//     ASCII only). These are the only places where a token can leave the
//     loop: every other byte either goes on in C or is invalid UTF-8.
//
// Package mask assembles a loop state's tokens from In and the walks of
// the exits (see mask's slice.go).
//
// A slice below a trie node (SliceBelow) is the same for the tokens that
// start with that node's bytes: In holds those that go on in C* after
// them, and the exits are those below the node. It serves walks that
// start at a node other than the root and enter the loop at once (the
// level below a cross point: Llama-3's node " " starts 58,000 tokens, so
// the words after a space in a word-limited string cost a walk of 126,000
// nodes for each count of words still allowed).
//
// A mid-character slice (MidSlice) is the same for a loop entered inside
// a character: the tokens start with the continuation bytes that finish
// it (Need of them, the first in Lo..Hi) and go on in C*. It serves the
// states of a string between a lead byte and the character's end, which
// a byte-level vocabulary reaches whenever a token ends inside a
// character (Llama-3's tokens split CJK characters, emoji and the like).
// Walked, each such state cost about 800 units of the eager budget, or a
// first use of 100 µs and more in a grammar whose budget did not reach
// it.

// MaxSlices bounds the slices kept per vocabulary. On Llama-3 a slice
// takes 20–210 KB, plus what package mask derives from it once a bounded
// repetition uses it (Ext: its tokens by characters, a set per count).
// Past the bound, a new class's slice takes the place of the one used
// least recently (a grammar compiled with it keeps it, Ext included): a
// returning class is made again.
// The 2,220 JSONSchemaBench grammars have 189 distinct classes; when
// the bound refused new slices instead (up to stop 40), every grammar
// compiled after the 128th class walked its loops, so that a
// long-running server got slower for good, and what a grammar's eager
// budget reached depended on the grammars compiled before it.
const MaxSlices = 128

// MaxMidSlices bounds the mid-character slices kept per vocabulary, apart
// from MaxSlices (they must not take the place of a loop's slice): up to
// seven per class with non-ASCII characters, each the size of a bitset
// of the vocabulary (16 KB on Llama-3) and a few hundred tokens. Past
// the bound, as for MaxSlices, the one used least recently goes.
const MaxMidSlices = 128

// MaxBelowSlices bounds the slices below a trie node kept per vocabulary,
// apart from the others (and, as for them, the one used least recently
// goes past it). Only nodes with large subtrees get one (package mask asks
// for those of at least 4,096 nodes: 12 nodes of Llama-3's trie), each a
// bitset of the vocabulary and its exits (16 KB and 357 exits below " "
// in the class of a word's characters on Llama-3).
const MaxBelowSlices = 32

// JSONString returns the class of a JSON string's body: every character
// but the quote, the backslash and the ASCII control characters (the
// class PrepareVocab makes the slices of, in package mask).
func JSONString() Class {
	k := Class{NonASCII: true}
	for b := 0x20; b < 0x80; b++ {
		if b != '"' && b != '\\' {
			k.AddASCII(byte(b))
		}
	}
	return k
}

// A Class is a set of characters: ASCII bytes (bit b of ASCII[b/64]),
// and all non-ASCII scalar values or none.
type Class struct {
	ASCII    [2]uint64
	NonASCII bool
}

// AddASCII adds ASCII byte b to the class.
func (cl *Class) AddASCII(b byte) { cl.ASCII[b>>6] |= 1 << (b & 63) }

// HasASCII reports whether ASCII byte b is in the class.
func (cl *Class) HasASCII(b byte) bool { return b < 0x80 && cl.ASCII[b>>6]&(1<<(b&63)) != 0 }

// Starts reports whether byte b starts a character of the class (for a
// lead byte: some character; the class holds all or none of them).
func (cl *Class) Starts(b byte) bool {
	if b < 0x80 {
		return cl.HasASCII(b)
	}
	n, _, _ := UTF8Lead(b)
	return cl.NonASCII && n > 0
}

// A Slice is the part of a vocabulary inside a loop over a Class (see
// the top of this file). It is immutable and shared (but for what Ext
// makes once): its slices must not be modified.
type Slice struct {
	Class Class
	// Need, Lo, Hi: a mid-character slice's continuation bytes still
	// needed at the root and the range of the first (Need is 0 in a
	// slice from a character boundary).
	Need   int8
	Lo, Hi byte
	// Root is the trie node the slice starts at: 0 but for a slice below
	// a node (SliceBelow), whose tokens and exits are below Root, and
	// whose RootExit are Root's children.
	Root    int32
	In      []uint32 // bitset of the tokens inside
	InCount int      // their number
	// InList is In as a sorted list when it holds fewer tokens than In
	// has words (a mid-character slice: a few hundred tokens), so that a
	// state's set need not be a copy of the vocabulary-sized bitset.
	InList []int32

	// Exits by byte: ExitW[ExitOff[b]:ExitOff[b+1]] are the trie nodes
	// after the exit byte b below the root, ExitV their parents and ExitK
	// the characters of the parents' bytes, ordered by characters, then
	// by node (so that the exits before a given character are a prefix:
	// a state a few characters before a loop needs only those);
	// RootExit[b] is the root's child b (or 0 if none).
	ExitOff  [257]int32
	ExitW    []int32
	ExitV    []int32
	ExitK    []int32
	RootExit [256]int32

	v         *Vocab
	charsOnce sync.Once
	inByChars []int32
	inOff     []int32
	extOnce   sync.Once
	ext       any
}

// Ext returns what init returns on the first call (later calls return
// the same, whatever their init): a place for data that another package
// derives from the slice alone and shares between grammars (package mask
// keeps its sets of the tokens by characters there), which lives as
// long as the slice: past MaxSlices, a slice the vocabulary no longer
// keeps goes with the last grammar that uses it, and so does its Ext.
func (s *Slice) Ext(init func() any) any {
	s.extOnce.Do(func() { s.ext = init() })
	return s.ext
}

// Slice returns the slice of class cl, computing it on the first call (one
// pass over the part of the trie inside the class: tokens and exits) and
// adding that pass's trie nodes and tokens to *work.
func (v *Vocab) Slice(cl Class, work *int64) *Slice {
	return v.slice(sliceKey{cl, 0, 0x80, 0xBF, 0}, work)
}

// SliceBelow returns the slice of class cl below trie node u (see the top
// of this file): computed on the first call like Slice, nil for the root
// or a node not in the trie.
func (v *Vocab) SliceBelow(cl Class, u int32, work *int64) *Slice {
	if u <= 0 || int(u) >= len(v.Trie().Nodes)-1 {
		return nil
	}
	return v.slice(sliceKey{cl, 0, 0x80, 0xBF, u}, work)
}

// MidSlice returns the mid-character slice of class cl (see the top of
// this file) for a character that needs need more continuation bytes
// (1 to 3), the first in lo..hi (within 0x80..0xBF); like Slice, it is
// computed on the first call and its work added to *work; nil when the
// arguments are not those of a character's end.
func (v *Vocab) MidSlice(cl Class, need int, lo, hi byte, work *int64) *Slice {
	if need < 1 || need > 3 || lo < 0x80 || hi > 0xBF || lo > hi {
		return nil
	}
	return v.slice(sliceKey{cl, int8(need), lo, hi, 0}, work)
}

// sliceKey identifies a slice: its class, for a mid-character slice the
// continuation bytes needed at the root, for a slice below a node the
// node.
type sliceKey struct {
	cl     Class
	need   int8
	lo, hi byte
	root   int32
}

// Kinds of slice, each kept up to its own bound (sliceKey.kind).
const (
	loopSlice = iota
	midSlice
	belowSlice
	sliceKinds
)

func (k sliceKey) kind() int {
	switch {
	case k.root != 0:
		return belowSlice
	case k.need > 0:
		return midSlice
	}
	return loopSlice
}

// sliceBounds are the bounds of the kinds of slice.
var sliceBounds = [sliceKinds]int{MaxSlices, MaxMidSlices, MaxBelowSlices}

// A sliceEntry is a slice kept by its vocabulary, with the clock of its
// last use (Vocab.sliceClock).
type sliceEntry struct {
	s    *Slice
	used uint64
}

func (v *Vocab) slice(k sliceKey, work *int64) *Slice {
	v.sliceMu.Lock()
	defer v.sliceMu.Unlock()
	v.sliceClock++
	if e := v.slices[k]; e != nil {
		e.used = v.sliceClock
		return e.s
	}
	kind := k.kind()
	if v.sliceCount[kind] >= sliceBounds[kind] {
		v.evictSlice(kind)
	}
	s := buildSlice(v, k, work)
	if v.slices == nil {
		v.slices = map[sliceKey]*sliceEntry{}
	}
	v.slices[k] = &sliceEntry{s, v.sliceClock}
	v.sliceCount[kind]++
	return s
}

// evictSlice drops the slice of one kind used least recently (a linear
// scan: at most MaxSlices entries, against a pass over the trie to make
// the slice that replaces it); slice calls it only with its bound's
// worth of that kind kept.
func (v *Vocab) evictSlice(kind int) {
	var old sliceKey
	oldest := ^uint64(0)
	for k, e := range v.slices {
		if k.kind() == kind && e.used < oldest {
			old, oldest = k, e.used
		}
	}
	delete(v.slices, old)
	v.sliceCount[kind]--
}

func buildSlice(v *Vocab, k sliceKey, work *int64) *Slice {
	t := v.Trie()
	s := &Slice{Class: k.cl, Need: k.need, Lo: k.lo, Hi: k.hi, Root: k.root, v: v, In: make([]uint32, (v.Size()+31)/32)}
	type exit struct {
		b       byte
		w, v, k int32
	}
	var exits []exit
	s.walk(func(u, chars int32, whole bool) {
		toks := t.TokensAt(u)
		if whole {
			toks = t.TokensIn(u)
		}
		*work += int64(1 + len(toks))
		for _, id := range toks {
			s.In[id>>5] |= 1 << (uint32(id) & 31)
		}
		s.InCount += len(toks)
	}, func(c byte, w, v, chars int32) {
		*work++
		if v == s.Root {
			s.RootExit[c] = w
			return
		}
		exits = append(exits, exit{c, w, v, chars})
	})
	slices.SortFunc(exits, func(x, y exit) int {
		if x.b != y.b {
			return int(x.b) - int(y.b)
		}
		if x.k != y.k {
			return int(x.k - y.k)
		}
		return int(x.w - y.w)
	})
	s.ExitW = make([]int32, len(exits))
	s.ExitV = make([]int32, len(exits))
	s.ExitK = make([]int32, len(exits))
	for i, x := range exits {
		s.ExitOff[int(x.b)+1]++
		s.ExitW[i], s.ExitV[i], s.ExitK[i] = x.w, x.v, x.k
	}
	for i := 1; i < len(s.ExitOff); i++ {
		s.ExitOff[i] += s.ExitOff[i-1]
	}
	if s.InCount < len(s.In) {
		s.InList = make([]int32, 0, s.InCount)
		for wi, word := range s.In {
			for ; word != 0; word &= word - 1 {
				s.InList = append(s.InList, int32(wi*32+bits.TrailingZeros32(word)))
			}
		}
	}
	return s
}

// walk visits the trie along the strings of the slice's class: inside is
// called for every node below the root (Root) whose bytes after the
// root's are a prefix of a string of C* (of the Need continuation bytes
// then C*, for a mid-character slice), with the characters they start
// after the root, exit for every exit (the byte, the node after it, its
// parent, the parent's characters). Where every byte below a node is an
// ASCII byte of C (Node.Below), inside is called once for the node with
// whole set, and not for the nodes below it (they are inside, and none
// is an exit's parent): leaves and the ends of words, most of the trie
// (BenchmarkBuildSlice, Llama-3: a JSON string's slice 2.1 ms instead of
// 6.4, an identifier's 0.15 instead of 1.5; a class that splits a bucket,
// a string body less a, b, d and e, gains nothing: 6 ms either way).
func (s *Slice) walk(inside func(u, chars int32, whole bool), exit func(c byte, w, v, chars int32)) {
	t := s.v.Trie()
	// The buckets of bytes that are all ASCII bytes of C.
	out := [4]uint64{^s.Class.ASCII[0], ^s.Class.ASCII[1], ^uint64(0), ^uint64(0)}
	notWhole := BucketMask(&out)
	// need: continuation bytes still needed at a node (0 at a character
	// boundary); lo, hi: the range of the next continuation byte.
	type item struct {
		u      int32
		k      int32 // characters started
		need   int8
		lo, hi byte
	}
	stack := []item{{u: s.Root, need: s.Need, lo: s.Lo, hi: s.Hi}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.u != s.Root {
			inside(it.u, it.k, false)
		}
		es, ee := t.Children(it.u)
		for e := es; e < ee; e++ {
			c, w := t.EdgeByte[e], t.EdgeNode[e]
			if it.need > 0 {
				if c >= it.lo && c <= it.hi { // (else invalid UTF-8)
					stack = append(stack, item{u: w, k: it.k, need: it.need - 1, lo: 0x80, hi: 0xBF})
				}
				continue
			}
			n, lo, hi := UTF8Lead(c)
			switch {
			case s.Class.HasASCII(c) && t.Nodes[w].Below&notWhole == 0:
				inside(w, it.k+1, true)
			case s.Class.HasASCII(c):
				stack = append(stack, item{u: w, k: it.k + 1, lo: 0x80, hi: 0xBF})
			case c < 0x80 || (n > 0 && !s.Class.NonASCII):
				exit(c, w, it.u, it.k)
			case n > 0:
				stack = append(stack, item{u: w, k: it.k + 1, need: int8(n), lo: lo, hi: hi})
			}
		}
	}
}

// ExitsBefore returns the end of the exits of byte b whose parents start
// fewer than k characters: they are ExitW[ExitOff[b]:ExitsBefore(b, k)].
func (s *Slice) ExitsBefore(b byte, k int32) int32 {
	lo, hi := s.ExitOff[b], s.ExitOff[int(b)+1]
	for lo < hi && s.ExitK[lo] < k {
		lo++
	}
	return lo
}

// ByChars returns the tokens of In sorted by the characters they start
// (a token ending mid character counts it; in a mid-character slice, the
// character the token finishes does not count), with off[k] the number
// starting fewer than k characters, k ≤ MaxTokenLen()+1 (the last count
// holds every longer one). It is computed on the first call.
func (s *Slice) ByChars() (ids, off []int32) {
	s.charsOnce.Do(func() {
		// From the tokens' bytes, not a walk of the trie (whose nodes,
		// visited depth first, are a cache miss each: several times
		// slower). A token inside starts at a character boundary, so its
		// characters are its bytes that are not continuation bytes.
		maxK := int32(s.v.MaxTokenLen()) + 1
		s.inOff = make([]int32, maxK+2)
		chars := make([]uint16, s.v.Size())         // per token: 1 + characters (capped; MaxTokenLen < 65535), 0 if not in
		skip := int(s.v.Trie().Nodes[s.Root].Depth) // a slice below a node counts after its bytes
		for wi, word := range s.In {
			for word != 0 {
				id := wi*32 + bits.TrailingZeros32(word)
				word &= word - 1
				k := int32(0)
				for _, b := range s.v.Token(int32(id))[skip:] {
					if b&0xC0 != 0x80 {
						k++
					}
				}
				k = min(k, maxK)
				chars[id] = uint16(1 + k)
				s.inOff[k+1]++
			}
		}
		for i := 1; i < len(s.inOff); i++ {
			s.inOff[i] += s.inOff[i-1]
		}
		s.inByChars = make([]int32, s.inOff[len(s.inOff)-1])
		fill := slices.Clone(s.inOff)
		for id, k := range chars {
			if k > 0 {
				s.inByChars[fill[k-1]] = int32(id)
				fill[k-1]++
			}
		}
	})
	return s.inByChars, s.inOff
}

// A CharEnd is a way a UTF-8 character can still need continuation bytes
// (MidSlice's arguments): Need of them, the first in Lo..Hi.
type CharEnd struct {
	Need   int
	Lo, Hi byte
}

// CharEnds lists every CharEnd of valid UTF-8, from UTF8Lead: after each
// lead byte, and after each continuation byte but the last (seven in
// all).
func CharEnds() []CharEnd {
	var out []CharEnd
	add := func(e CharEnd) {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	for b := 0xC0; b < 0x100; b++ {
		n, lo, hi := UTF8Lead(byte(b))
		if n == 0 {
			continue
		}
		add(CharEnd{n, lo, hi})
		for k := 1; k < n; k++ {
			add(CharEnd{k, 0x80, 0xBF})
		}
	}
	return out
}

// UTF8Lead returns, for a lead byte of a valid UTF-8 sequence, the number
// of continuation bytes and the range of the first one (0 for other bytes).
func UTF8Lead(c byte) (n int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 1, 0x80, 0xBF
	case c == 0xE0:
		return 2, 0xA0, 0xBF
	case c == 0xED:
		return 2, 0x80, 0x9F // no surrogates
	case c >= 0xE1 && c <= 0xEF:
		return 2, 0x80, 0xBF
	case c == 0xF0:
		return 3, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 3, 0x80, 0xBF
	case c == 0xF4:
		return 3, 0x80, 0x8F
	}
	return 0, 0, 0
}
