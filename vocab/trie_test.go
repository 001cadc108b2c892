package vocab

import (
	"bytes"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// trieVocabs are the vocabularies the trie and slice tests check: a
// handmade one (prefixes of each other, UTF-8 fragments, invalid bytes,
// special and unused tokens), and two corpus ones.
func trieVocabs(t *testing.T) map[string]*Vocab {
	t.Helper()
	toks := bs("a", "ab", "abc", "b", "\"", "a\"", "ab\"x", "\\n", "é", "\xc3", "\xa9", "aé\"", "x\xe2\x82", "\xe2\x82\xac", "\xff", "\xc0\x80",
		"<s>", "", "  ", "\n", "a\nb", "日本語", "語\"}", "abc", "zz", "z\x80", "a\xe0\x80", "\xed\xa0", "\xf4\x90", "b\xf0\x80", "\xe0\xa0", "\xf4\x8f\xbf")
	kinds := make([]TokenKind, len(toks))
	kinds[16] = TokenSpecial
	kinds[17] = TokenUnused
	small, err := NewVocabKinds(toks, kinds, []int32{16})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*Vocab{
		"small":   small,
		"gpt-2":   corpusVocab(t, "corpus/vocab/ggml-vocab-gpt-2.gguf"),
		"llama-2": corpusVocab(t, "corpus/vocab/ggml-vocab-llama-spm.gguf"),
	}
}

// TestTrie checks every node of the trie against the tokens' bytes: a
// node's prefix, its depth and first byte, the tokens ending at it and
// below it, its subtree range and the byte buckets below it.
func TestTrie(t *testing.T) {
	for name, v := range trieVocabs(t) {
		t.Run(name, func(t *testing.T) {
			tr := v.Trie()
			if tr != v.Trie() {
				t.Fatal("Trie is built again on the second call")
			}
			for u := range int32(tr.NumNodes()) {
				es, ee := tr.Children(u)
				for e := es; e < ee; e++ {
					if e > es && tr.EdgeByte[e] <= tr.EdgeByte[e-1] {
						t.Fatalf("node %d: children not in ascending byte order", u)
					}
					if tr.EdgeNode[e] <= u {
						t.Fatalf("node %d: child %d not in preorder", u, tr.EdgeNode[e])
					}
				}
			}
			prefix := prefixes(tr)
			var want [][]int32 = make([][]int32, tr.NumNodes())
			byPrefix := map[string]int32{}
			for u, p := range prefix {
				if p == nil {
					t.Fatalf("node %d unreachable", u)
				}
				byPrefix[string(p)] = int32(u)
			}
			for id := int32(0); int(id) < v.Size(); id++ {
				if v.Kind(id) != TokenNormal {
					continue
				}
				u, ok := byPrefix[string(v.Token(id))]
				if !ok {
					t.Fatalf("token %d %q has no node", id, v.Token(id))
				}
				want[u] = append(want[u], id)
			}
			for u := range int32(tr.NumNodes()) {
				p := prefix[u]
				if nd := tr.Nodes[u]; int(nd.Depth) != len(p) || (u > 0 && (nd.FirstByte != p[0] || nd.InByte != p[len(p)-1])) {
					t.Fatalf("node %d %q: depth %d, first byte %x, in byte %x", u, p, nd.Depth, nd.FirstByte, nd.InByte)
				}
				got := slices.Clone(tr.TokensAt(u))
				slices.Sort(got)
				if !slices.Equal(got, want[u]) {
					t.Fatalf("node %d %q: tokens %v, want %v", u, p, got, want[u])
				}
				var below []int32
				var buckets uint64
				end := u + 1
				for x := u + 1; int(x) < tr.NumNodes() && bytes.HasPrefix(prefix[x], p); x++ {
					below = append(below, want[x]...)
					buckets |= 1 << bucketOf[prefix[x][len(prefix[x])-1]]
					end = x + 1
				}
				if tr.Nodes[u].SubtreeEnd != end || tr.Nodes[u].Below != buckets {
					t.Fatalf("node %d %q: subtree end %d (want %d), buckets %x (want %x)", u, p, tr.Nodes[u].SubtreeEnd, end, tr.Nodes[u].Below, buckets)
				}
				got = slices.Clone(tr.TokensBelow(u))
				slices.Sort(got)
				slices.Sort(below)
				if !slices.Equal(got, below) || len(tr.TokensIn(u)) != len(below)+len(want[u]) {
					t.Fatalf("node %d %q: tokens below %v, want %v", u, p, got, below)
				}
			}
		})
	}
}

// insideClass reports whether b is a prefix of a string of class k's
// characters (ending mid character or not), and how many characters it
// starts; a reference for Slice.In.
func insideClass(k *Class, b []byte) (ok bool, chars int) {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			// An incomplete character at the end: a prefix of some
			// scalar value of the class (all non-ASCII or none)?
			if !k.NonASCII || utf8.FullRune(b) {
				return false, 0
			}
			for _, c := range completions(4 - len(b)) {
				if x := append(slices.Clone(b), c...); utf8.FullRune(x) && utf8.Valid(x) {
					return true, chars + 1
				}
			}
			return false, 0
		}
		if r < 0x80 && !k.HasASCII(byte(r)) || r >= 0x80 && !k.NonASCII {
			return false, 0
		}
		b = b[n:]
		chars++
	}
	return true, chars
}

// TestSlice checks slices of several classes against the reference: In
// is every normal token inside the class, ByChars counts characters, and
// the exits are exactly the nodes after the first byte that leaves the
// class at a character boundary (a byte of another character), for the
// tokens that leave it.
func TestSlice(t *testing.T) {
	jsonish := JSONString()
	var ident Class
	for _, r := range "abcdefghijklmnopqrstuvwxyz0123456789_" {
		ident.AddASCII(byte(r))
	}
	all := Class{ASCII: [2]uint64{^uint64(0), ^uint64(0)}, NonASCII: true}
	// A class that splits byte buckets (Bucket: a-f is one): the walk
	// takes a subtree whole only where its buckets are all inside.
	noABDE := jsonish
	for _, b := range "abde" {
		noABDE.ASCII[b>>6] &^= 1 << (b & 63)
	}
	for name, v := range trieVocabs(t) {
		for cname, k := range map[string]Class{"json": jsonish, "ident": ident, "all": all, "none-ascii": {NonASCII: true}, "no-abde": noABDE} {
			t.Run(name+"/"+cname, func(t *testing.T) {
				var work int64
				s := v.Slice(k, &work)
				if s == nil || s != v.Slice(k, &work) || work <= 0 {
					t.Fatalf("slice %v, work %d (or not cached)", s, work)
				}
				tr := v.Trie()
				chars, off := charsOf(s)
				n := 0
				for id := int32(0); int(id) < v.Size(); id++ {
					in, c := insideClass(&k, v.Token(id))
					in = in && v.Kind(id) == TokenNormal
					got := s.In[id>>5]&(1<<(uint32(id)&31)) != 0
					if got != in {
						t.Fatalf("token %d %q: in = %v, want %v", id, v.Token(id), got, in)
					}
					if !in {
						continue
					}
					n++
					if gc, ok := chars[id]; !ok || gc != min(c, len(off)-2) {
						t.Fatalf("token %d %q: %d characters, want %d", id, v.Token(id), gc, c)
					}
				}
				if n != s.InCount || len(chars) != n || int(off[len(off)-1]) != n {
					t.Fatalf("InCount %d, ByChars %d ids, want %d", s.InCount, len(chars), n)
				}
				// Exits: nodes w whose parent is inside at a boundary and
				// whose byte starts no character of the class.
				prefix := prefixes(tr)
				want := map[int32]bool{}
				for u := int32(1); int(u) < tr.NumNodes(); u++ {
					p := prefix[u]
					if in, _ := insideClass(&k, p[:len(p)-1]); !in || !utf8.Valid(p[:len(p)-1]) {
						continue
					}
					if c := p[len(p)-1]; !k.Starts(c) && (c < 0x80 || !k.NonASCII) {
						if n, _, _ := UTF8Lead(c); c < 0x80 || n > 0 {
							want[u] = true
						}
					}
				}
				got := map[int32]bool{}
				for b := range 256 {
					if r := s.RootExit[b]; r != 0 {
						got[r] = true
					}
					for i := s.ExitOff[b]; i < s.ExitOff[b+1]; i++ {
						w := s.ExitW[i]
						if tr.Nodes[w].InByte != byte(b) || !bytes.Equal(prefix[s.ExitV[i]], prefix[w][:tr.Nodes[w].Depth-1]) {
							t.Fatalf("exit %d: byte %x, parent %d", w, b, s.ExitV[i])
						}
						_, c := insideClass(&k, prefix[s.ExitV[i]])
						if int(s.ExitK[i]) != c {
							t.Fatalf("exit %d: %d characters before, want %d", w, s.ExitK[i], c)
						}
						if i > s.ExitOff[b] && (s.ExitK[i-1] > s.ExitK[i] || s.ExitK[i-1] == s.ExitK[i] && s.ExitW[i-1] >= w) {
							t.Fatalf("exit %d of byte %x: not after exit %d (characters %d, %d)", w, b, s.ExitW[i-1], s.ExitK[i-1], s.ExitK[i])
						}
						if lo, hi := s.ExitsBefore(byte(b), s.ExitK[i]), s.ExitsBefore(byte(b), s.ExitK[i]+1); lo > i || hi <= i {
							t.Fatalf("exit %d (index %d) of byte %x: ExitsBefore gives %d and %d around its %d characters", w, i, b, lo, hi, s.ExitK[i])
						}
						got[w] = true
					}
				}
				if len(got) != len(want) {
					t.Fatalf("%d exits, want %d", len(got), len(want))
				}
				for w := range want {
					if !got[w] {
						t.Fatalf("exit %d %q missing", w, prefix[w])
					}
				}
			})
		}
	}
}

// charsOf returns the characters of each token of s by ByChars, and
// ByChars' offsets.
func charsOf(s *Slice) (map[int32]int, []int32) {
	ids, off := s.ByChars()
	chars := map[int32]int{}
	for c := 0; c+1 < len(off); c++ {
		for _, id := range ids[off[c]:off[c+1]] {
			chars[id] = c
		}
	}
	return chars, off
}

// TestMidSlice checks the mid-character slices of a JSON string's class
// (one per way a UTF-8 character can still need continuation bytes)
// against the reference: In is every normal token made of the character's
// remaining continuation bytes (or a prefix of them) and then a prefix of
// a string of the class, InList is In in order when small, and the exits
// are the nodes after the first byte that leaves the class once the
// character is finished.
func TestMidSlice(t *testing.T) {
	jsonish := JSONString()
	ends := CharEnds()
	if len(ends) != 7 {
		t.Fatalf("%d ways to end a character, want 7: %v", len(ends), ends)
	}
	// rest returns the bytes of b after the character's end, or ok false
	// if b's first bytes are not the continuation bytes it needs.
	rest := func(b []byte, need int, lo, hi byte) ([]byte, bool) {
		for i := 0; i < need && i < len(b); i++ {
			l, h := byte(0x80), byte(0xBF)
			if i == 0 {
				l, h = lo, hi
			}
			if b[i] < l || b[i] > h {
				return nil, false
			}
		}
		if len(b) <= need {
			return nil, true
		}
		return b[need:], true
	}
	for name, v := range trieVocabs(t) {
		tr := v.Trie()
		prefix := prefixes(tr)
		for _, e := range ends {
			t.Run(fmt.Sprintf("%s/%d-%x-%x", name, e.Need, e.Lo, e.Hi), func(t *testing.T) {
				var work int64
				s := v.MidSlice(jsonish, e.Need, e.Lo, e.Hi, &work)
				if s == nil || s != v.MidSlice(jsonish, e.Need, e.Lo, e.Hi, &work) || s == v.Slice(jsonish, &work) {
					t.Fatalf("mid slice %v (or not cached, or the boundary slice)", s)
				}
				var ids []int32
				for id := int32(0); int(id) < v.Size(); id++ {
					r, ok := rest(v.Token(id), e.Need, e.Lo, e.Hi)
					in := ok && len(v.Token(id)) > 0 && v.Kind(id) == TokenNormal
					if in && r != nil {
						in, _ = insideClass(&jsonish, r)
					}
					if got := s.In[id>>5]&(1<<(uint32(id)&31)) != 0; got != in {
						t.Fatalf("token %d %q: in = %v, want %v", id, v.Token(id), got, in)
					}
					if in {
						ids = append(ids, id)
					}
				}
				if s.InCount != len(ids) || s.InList != nil && !slices.Equal(s.InList, ids) || s.InList == nil && s.InCount < len(s.In) {
					t.Fatalf("InCount %d, InList %d ids, want %d", s.InCount, len(s.InList), len(ids))
				}
				want := map[int32]int32{} // exit node → characters before it
				for u := int32(1); int(u) < tr.NumNodes(); u++ {
					p := prefix[u]
					r, ok := rest(p[:len(p)-1], e.Need, e.Lo, e.Hi)
					if !ok || len(p)-1 < e.Need {
						continue
					}
					if in, _ := insideClass(&jsonish, r); !in || !utf8.Valid(r) {
						continue
					}
					if c := p[len(p)-1]; !jsonish.Starts(c) {
						if n, _, _ := UTF8Lead(c); c < 0x80 || n > 0 {
							_, k := insideClass(&jsonish, r)
							want[u] = int32(k)
						}
					}
				}
				got := 0
				for b := range 256 {
					if s.RootExit[b] != 0 {
						t.Fatalf("root exit by %x: the root is inside a character", b)
					}
					for i := s.ExitOff[b]; i < s.ExitOff[b+1]; i++ {
						w := s.ExitW[i]
						k, ok := want[w]
						if !ok || tr.Nodes[w].InByte != byte(b) || !bytes.Equal(prefix[s.ExitV[i]], prefix[w][:tr.Nodes[w].Depth-1]) || s.ExitK[i] != k {
							t.Fatalf("exit %d %q: byte %x, parent %d, %d characters (want %d, listed %v)", w, prefix[w], b, s.ExitV[i], s.ExitK[i], k, ok)
						}
						got++
					}
				}
				if got != len(want) {
					t.Fatalf("%d exits, want %d", got, len(want))
				}
			})
		}
	}
}

// TestSliceBelow checks slices below trie nodes (every node of depth 1
// and 2 that has children and ends at a character boundary) against the reference: In is every normal
// token that starts with the node's bytes and goes on inside the class,
// ByChars counts the characters after the node's bytes, and the exits
// are the nodes below it after the first byte that leaves the class at a
// character boundary (the node's own children by such a byte as
// RootExit). A slice below the root is refused, and a slice below a node
// is neither the loop slice nor another node's.
func TestSliceBelow(t *testing.T) {
	jsonish := Class{NonASCII: true}
	for b := 0x20; b < 0x80; b++ {
		if b != '"' && b != '\\' && b != ' ' {
			jsonish.AddASCII(byte(b))
		}
	}
	var ident Class
	for _, r := range "abcdefghijklmnopqrstuvwxyz0123456789_" {
		ident.AddASCII(byte(r))
	}
	for name, v := range trieVocabs(t) {
		tr := v.Trie()
		prefix := prefixes(tr)
		for cname, k := range map[string]Class{"json-word": jsonish, "ident": ident} {
			t.Run(name+"/"+cname, func(t *testing.T) {
				var work int64
				if v.SliceBelow(k, 0, &work) != nil || v.SliceBelow(k, int32(tr.NumNodes()), &work) != nil {
					t.Fatal("a slice below the root or past the trie")
				}
				loop := v.Slice(k, &work)
				checked := 0
				for u := int32(1); int(u) < tr.NumNodes(); u++ {
					if d := tr.Nodes[u].Depth; d > 2 || tr.Nodes[u].EdgeStart == tr.Nodes[u+1].EdgeStart || !utf8.Valid(prefix[u]) {
						continue
					}
					checked++
					pu := prefix[u]
					w0 := work
					s := v.SliceBelow(k, u, &work)
					if s == nil || s == loop || s.Root != u || s != v.SliceBelow(k, u, &work) {
						t.Fatalf("node %q: no slice (or the loop's, or not cached)", pu)
					}
					if w1 := work; w1 <= w0 && s.InCount > 0 {
						t.Fatalf("node %q: no work counted", pu)
					}
					chars, off := charsOf(s)
					n := 0
					for id := int32(0); int(id) < v.Size(); id++ {
						tok := v.Token(id)
						in := len(tok) > len(pu) && bytes.HasPrefix(tok, pu) && v.Kind(id) == TokenNormal
						c := 0
						if in {
							in, c = insideClass(&k, tok[len(pu):])
						}
						if got := s.In[id>>5]&(1<<(uint32(id)&31)) != 0; got != in {
							t.Fatalf("node %q, token %d %q: in = %v, want %v", pu, id, tok, got, in)
						}
						if !in {
							continue
						}
						n++
						if gc, ok := chars[id]; !ok || gc != min(c, len(off)-2) {
							t.Fatalf("node %q, token %d %q: %d characters, want %d", pu, id, tok, gc, c)
						}
					}
					if n != s.InCount || len(chars) != n {
						t.Fatalf("node %q: InCount %d, ByChars %d, want %d", pu, s.InCount, len(chars), n)
					}
					want := map[int32]int32{} // exit node → characters before it
					for w := u + 1; w < tr.Nodes[u].SubtreeEnd; w++ {
						r := prefix[w][len(pu) : len(prefix[w])-1]
						if in, _ := insideClass(&k, r); !in || !utf8.Valid(r) {
							continue
						}
						if c := prefix[w][len(prefix[w])-1]; !k.Starts(c) && (c < 0x80 || !k.NonASCII) {
							if n, _, _ := UTF8Lead(c); c < 0x80 || n > 0 {
								_, kc := insideClass(&k, r)
								want[w] = int32(kc)
							}
						}
					}
					got := 0
					for b := range 256 {
						if r := s.RootExit[b]; r != 0 {
							if kc, ok := want[r]; !ok || kc != 0 || tr.Nodes[r].InByte != byte(b) || tr.Nodes[r].Depth != tr.Nodes[u].Depth+1 {
								t.Fatalf("node %q: root exit %d %q by %x", pu, r, prefix[r], b)
							}
							got++
						}
						for i := s.ExitOff[b]; i < s.ExitOff[b+1]; i++ {
							w := s.ExitW[i]
							kc, ok := want[w]
							if !ok || tr.Nodes[w].InByte != byte(b) || !bytes.Equal(prefix[s.ExitV[i]], prefix[w][:tr.Nodes[w].Depth-1]) || s.ExitK[i] != kc || s.ExitV[i] == u {
								t.Fatalf("node %q: exit %d %q: byte %x, parent %d, %d characters (want %d, listed %v)", pu, w, prefix[w], b, s.ExitV[i], s.ExitK[i], kc, ok)
							}
							got++
						}
					}
					if got != len(want) {
						t.Fatalf("node %q: %d exits, want %d", pu, got, len(want))
					}
				}
				if checked == 0 {
					t.Fatal("no node checked")
				}
			})
		}
	}
}

// completions lists the continuations of n bytes to try after an
// incomplete character: every mix of bytes at the edges of the
// continuation ranges.
func completions(n int) [][]byte {
	out := [][]byte{{}}
	for range n {
		var next [][]byte
		for _, c := range out {
			for _, b := range []byte{0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF} {
				next = append(next, append(slices.Clone(c), b))
			}
		}
		out = append(out, next...)
	}
	return out
}

// prefixes returns the bytes of every trie node, by walking its edges.
func prefixes(tr *Trie) [][]byte {
	p := make([][]byte, tr.NumNodes())
	p[0] = []byte{}
	for u := range int32(tr.NumNodes()) {
		es, ee := tr.Children(u)
		for e := es; e < ee; e++ {
			p[tr.EdgeNode[e]] = append(slices.Clone(p[u]), tr.EdgeByte[e])
		}
	}
	return p
}

// TestSliceLimit: a vocabulary keeps at most MaxSlices slices and
// MaxMidSlices mid-character ones, neither taking from the other's
// bound; past a bound a new class's slice takes the place of the one of
// its kind used least recently, and a class asked for again after its
// eviction is made again, the same.
func TestSliceLimit(t *testing.T) {
	v, err := NewVocab(bs("a", "b", "ab"), nil)
	if err != nil {
		t.Fatal(err)
	}
	class := func(i int, nonASCII bool) Class {
		k := Class{NonASCII: nonASCII}
		k.ASCII[0] = uint64(i)
		return k
	}
	count := func(mid bool) int {
		v.sliceMu.Lock()
		defer v.sliceMu.Unlock()
		if mid {
			return v.sliceCount[midSlice]
		}
		return v.sliceCount[loopSlice]
	}
	var work int64
	mids := map[int]*Slice{}
	for i := range MaxMidSlices {
		mids[i] = v.MidSlice(class(i, true), 1, 0x80, 0xBF, &work)
	}
	loops := map[int]*Slice{}
	for i := range MaxSlices {
		loops[i] = v.Slice(class(i, false), &work)
	}
	if count(true) != MaxMidSlices || count(false) != MaxSlices {
		t.Fatalf("kept %d mid-character and %d loop slices, want %d and %d", count(true), count(false), MaxMidSlices, MaxSlices)
	}
	// Class 0 is used again: class 1 is now the least recent loop slice.
	if s := v.Slice(class(0, false), &work); s != loops[0] {
		t.Fatal("a kept slice was made again")
	}
	w0 := work
	extra := v.Slice(class(MaxSlices, false), &work)
	if extra == nil || work == w0 {
		t.Fatalf("past the bound: %v, work %d", extra, work-w0)
	}
	if count(false) != MaxSlices || count(true) != MaxMidSlices {
		t.Fatalf("after one more loop class: kept %d loop and %d mid-character slices", count(false), count(true))
	}
	if s := v.Slice(class(0, false), &work); s != loops[0] {
		t.Fatal("the slice used most recently was evicted")
	}
	w0 = work
	again := v.Slice(class(1, false), &work)
	if again == loops[1] || work == w0 || again.InCount != loops[1].InCount || again.Class != loops[1].Class {
		t.Fatalf("the least recent slice: kept %v, work %d, tokens %d (had %d)", again == loops[1], work-w0, again.InCount, loops[1].InCount)
	}
	// A mid-character class past its bound evicts a mid-character slice.
	if s := v.MidSlice(class(MaxMidSlices, true), 1, 0x80, 0xBF, &work); s == nil {
		t.Fatal("mid-character slice past the bound: nil")
	}
	if count(false) != MaxSlices || count(true) != MaxMidSlices {
		t.Fatalf("after one more mid-character class: kept %d loop and %d mid-character slices", count(false), count(true))
	}
	if s := v.MidSlice(class(MaxMidSlices-1, true), 1, 0x80, 0xBF, &work); s != mids[MaxMidSlices-1] {
		t.Fatal("a recent mid-character slice was evicted")
	}
}

// TestSliceExt: a slice's Ext is made once, by the first caller's init,
// also when many goroutines ask at once, and a slice made again after
// its eviction starts with none.
func TestSliceExt(t *testing.T) {
	v, err := NewVocab(bs("a", "b", "ab"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var work int64
	var k Class
	k.AddASCII('a')
	s := v.Slice(k, &work)
	var made atomic.Int32
	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = s.Ext(func() any { made.Add(1); return new(int) })
		}()
	}
	wg.Wait()
	if made.Load() != 1 {
		t.Fatalf("init ran %d times", made.Load())
	}
	for _, x := range got[1:] {
		if x != got[0] {
			t.Fatal("Ext returned different values")
		}
	}
	for i := range MaxSlices {
		var o Class
		o.ASCII[1] = uint64(i + 1)
		v.Slice(o, &work)
	}
	s2 := v.Slice(k, &work)
	if s2 == s {
		t.Fatal("the slice was not evicted")
	}
	if x := s2.Ext(func() any { return "new" }); x != "new" {
		t.Fatalf("a slice made again kept the old Ext: %v", x)
	}
}

// TestGather checks that Gather reads within bounds for every node (the
// last one, leaves and nodes without tokens included) and that what it
// returns is the sum over its nodes, so that no read can be dropped.
func TestFirstByteSet(t *testing.T) {
	for name, v := range trieVocabs(t) {
		t.Run(name, func(t *testing.T) {
			var want [256][]int32
			normal := 0
			for id := int32(0); int(id) < v.Size(); id++ {
				if v.Kind(id) == TokenNormal {
					normal++
					b := v.Token(id)[0]
					want[b] = append(want[b], id)
				}
			}
			var work int64
			for b := range 256 {
				set := v.FirstByteSet(byte(b), &work)
				if (set == nil) != (len(want[b]) == 0) {
					t.Fatalf("byte %x: set %v, %d tokens", b, set != nil, len(want[b]))
				}
				n := 0
				for wi, word := range set {
					for ; word != 0; word &= word - 1 {
						id := int32(wi*32 + bits.TrailingZeros32(word))
						if !slices.Contains(want[b], id) {
							t.Fatalf("byte %x: token %d %q in the set", b, id, v.Token(id))
						}
						n++
					}
				}
				if n != len(want[b]) || set != nil && len(set) != (v.Size()+31)/32 {
					t.Fatalf("byte %x: %d tokens in %d words, want %d in %d", b, n, len(set), len(want[b]), (v.Size()+31)/32)
				}
			}
			if int(work) != normal {
				t.Fatalf("work %d, want one unit per normal token (%d)", work, normal)
			}
			// Kept: a second pass reads nothing.
			for b := range 256 {
				v.FirstByteSet(byte(b), &work)
			}
			if int(work) != normal {
				t.Fatalf("work %d after a second pass: not kept", work)
			}
		})
	}
}

func TestGather(t *testing.T) {
	for name, v := range trieVocabs(t) {
		t.Run(name, func(t *testing.T) {
			tr := v.Trie()
			all := make([]int32, tr.NumNodes())
			var sum int64
			for u := range all {
				all[u] = int32(u)
				sum += tr.Gather(all[u : u+1])
			}
			if got := tr.Gather(all); got != sum {
				t.Fatalf("Gather(every node) = %d, the sum of Gather of each = %d", got, sum)
			}
			if got := tr.Gather(nil); got != 0 {
				t.Fatalf("Gather(nil) = %d", got)
			}
		})
	}
}

// BenchmarkGatherCold measures what Gather is for: visiting 48 scattered
// nodes of the Llama-3 trie (their tokens and first edge, as a walk from
// cross points does) after the caches were evicted, with each node's
// reads after the previous node's (serial) or after one Gather of all of
// them (gathered). Each iteration first writes 64 MB outside the timing:
// run it with a fixed count (-benchtime 300x).
func BenchmarkGatherCold(b *testing.B) {
	tr := corpusVocab(b, "corpus/vocab/hf/llama3.2").Trie()
	starts := make([]int32, 48)
	x := uint32(12345)
	for i := range starts {
		x = x*1664525 + 1013904223
		starts[i] = int32(x % uint32(tr.NumNodes()))
	}
	evict := make([]byte, 64<<20)
	for _, mode := range []string{"serial", "gathered"} {
		b.Run(mode, func(b *testing.B) {
			var sink int64
			for b.Loop() {
				b.StopTimer()
				for i := 0; i < len(evict); i += 64 {
					evict[i]++
				}
				b.StartTimer()
				if mode == "gathered" {
					sink += tr.Gather(starts)
				}
				for _, u := range starts {
					for _, tok := range tr.TokensAt(u) {
						sink += int64(tok)
					}
					if es, ee := tr.Children(u); es < ee {
						sink += int64(tr.EdgeByte[es]) + int64(tr.Nodes[tr.EdgeNode[es]].Depth)
					}
				}
			}
			if sink == 1 {
				b.Log(sink)
			}
		})
	}
}
