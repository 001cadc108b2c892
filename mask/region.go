package mask

import (
	"math/bits"
	"slices"
	"sort"
	"unsafe"

	"github.com/structgen/structgen/vocab"
)

// Regions: level 1 from a slice where the states inside the class differ.
//
// A loop state takes its tokens from the slice of the class it loops on,
// and walks the slice's exits from itself. Where the characters of a
// string lead between several states that all go on taking them — a
// string that must contain a name or match a pattern somewhere
// ("(foo|bar)[0-9]": the states of the match so far), the key that
// additionalProperties allows only where it does not match a bounded
// pattern (JsonSchemaStore/blueprint-spec2: a state per character count
// up to 45, and one for "not the pattern") — no one state loops on the
// class the string's body takes: the loop of one state is the class less
// the bytes that move it to another, whose slice has an exit at every
// trie node with such a child, and the other states have no loop at all
// (blueprint-spec2: up to 291,406 units on a first use, the whole trie).
//
// A region is a set S of states, none with calls or token edges or in a
// repetition frame, and a class K, the ASCII characters of a JSON
// string's body (and its non-ASCII characters, where every state of S
// takes each of them: the two classes whose slices the vocabulary makes
// once, see regionFor), such that every character of K leads from every
// state of S to a state of S. From any state of S, every token inside K's slice is then
// allowed, and a token that leaves K leaves it at an exit of the slice,
// from the state its characters before the exit lead to. The walk of a
// region state is the slice's tokens, and a pass over the slice's exit
// tree (the trie nodes above the parents of the exits by the bytes that
// lead anywhere: a few thousand for a string's quote and backslash on
// Llama-3) stepping its bytes from the state, then those exits from the
// states at their parents (sliceExitsOf keeps them for the states that
// borrow: sliceBorrowFor). A state inside a character whose end leads
// into a region takes the mid-character slice the same way (midSlice).
// Where a state of S may pop, S is in one frame and the bytes that can
// follow it must be outside K (followStarts): a pop can then come only
// before an exit, whose parent is a cross point.

// maxRegionVisits bounds the states regionFor's search visits, over its
// passes (a breadth-first pass over the states found for each class it
// drops): blueprint-spec2's region has 47 states and takes 3 passes, a
// string that must contain one of a few names a few tens of states. A
// search past the bound finds no region, and neither do the states it
// found. (Before the search began only in states that take a string
// body's characters, the states of Github_medium/o17563's pattern under
// a length bound each searched the states after them: 470,000 visits in
// its eager phase, 70 ms; the bound stays for automata that do.)
const maxRegionVisits = 1024

// noRegions turns regions off (tests compare with and without).
var noRegions = false

// regionInfo is a region's class and whether a state of it may pop.
type regionInfo struct {
	class vocab.Class
	pops  bool
	live  byteBits // the bytes whose exits may lead somewhere (exitTreeOf)
}

// regionFor returns the region of plain state q, if it has one (see the
// top of this file). The class starts as the ASCII classes q steps on,
// which must hold a JSON string body's, with the non-ASCII characters;
// the search adds the states they lead to and, where a state takes fewer
// classes, drops the ones it lacks (a state that takes most of them) or
// the class that led to it (a state that takes few: the end of a string,
// after its quote), and starts again, until the class is stable; it
// fails as soon as it would drop a class of a string body's ASCII
// characters. The states of a region found share it (memoized: the
// states of one automaton find it once).
func (c *Compiled) regionFor(q int32) (regionInfo, bool) {
	if noRegions {
		return regionInfo{}, false
	}
	if c.regionOf == nil {
		c.regionOf = make([]int32, len(c.a.states))
		c.memoBytes.Add(int64(4 * len(c.a.states)))
	}
	switch m := c.regionOf[q]; {
	case m < 0:
		return regionInfo{}, false
	case m > 0:
		return c.regions[m-1], true
	}
	c.regionOf[q] = -1
	a := c.a
	st := &a.states[q]
	if len(st.toks) != 0 || len(st.calls) != 0 || a.frames[st.frame].repeat {
		return regionInfo{}, false
	}
	frame := st.frame
	// The candidate classes: the ASCII ones q steps on (their bytes below
	// 0x80), and nonASCII. The class must come out as a JSON string
	// body's (below): q takes every ASCII character of it (most states
	// that ask take a few bytes, the punctuation of JSON, and stop here),
	// and the search may drop only the classes of other bytes (a quote, a
	// backslash).
	if !c.takesStringBody(q) {
		return regionInfo{}, false
	}
	r := a.row(q)
	inK := make([]bool, a.nc)
	for cl := 0; cl < a.nc && a.classLo[cl] < 0x80; cl++ {
		inK[cl] = r.next(cl) >= 0
	}
	nonASCII := true
	const viaNonASCII = -1
	via := map[int32]int{} // the states found, and the class first led to each
	bad := map[int32]bool{}
	var S []int32
	visits := 0
	for {
		clear(via)
		S = append(S[:0], q)
		via[q] = viaNonASCII
		changed := false
		for i := 0; i < len(S) && !changed; i++ {
			if visits++; visits > maxRegionVisits {
				// (So do the states found: from them the search would
				// likely take as long.)
				for _, s := range S {
					if c.regionOf[s] == 0 {
						c.regionOf[s] = -1
					}
				}
				return regionInfo{}, false
			}
			s := S[i]
			ss := &a.states[s]
			// The classes of K that s takes.
			rs := a.row(s)
			took, all := 0, 0
			for cl := 0; cl < a.nc && a.classLo[cl] < 0x80; cl++ {
				if inK[cl] {
					all++
					if rs.next(cl) >= 0 {
						took++
					}
				}
			}
			if len(ss.toks) != 0 || len(ss.calls) != 0 || a.frames[ss.frame].repeat || 2*took < all {
				// Leave s out, and the class that led to it (the end of a
				// string after its quote; q itself fails).
				if s == q {
					return regionInfo{}, false
				}
				bad[s] = true
				if cl := via[s]; cl == viaNonASCII {
					nonASCII = false
				} else if c.stringClass(cl) {
					return regionInfo{}, false
				} else {
					inK[cl] = false
				}
				changed = true
				break
			}
			for cl := 0; cl < a.nc && a.classLo[cl] < 0x80; cl++ {
				if !inK[cl] {
					continue
				}
				switch t := rs.next(cl); {
				case (t < 0 || bad[t]) && c.stringClass(cl):
					return regionInfo{}, false
				case t < 0 || bad[t]:
					inK[cl], changed = false, true
				default:
					if _, ok := via[t]; !ok {
						via[t] = cl
						S = append(S, t)
					}
				}
			}
			if nonASCII {
				ends, ok := c.charEnds(s)
				for _, t := range ends {
					if !ok || bad[t] {
						ok = false
						break
					}
					if _, seen := via[t]; !seen {
						via[t] = viaNonASCII
						S = append(S, t)
					}
				}
				if !ok {
					nonASCII, changed = false, true
				}
			}
		}
		if !changed {
			break
		}
	}
	ri := regionInfo{}
	for cl := 0; cl < a.nc && a.classLo[cl] < 0x80; cl++ {
		if inK[cl] {
			for b := int(a.classLo[cl]); b <= int(min(a.classHi[cl], 0x7F)); b++ {
				ri.class.AddASCII(byte(b))
			}
		}
	}
	ri.class.NonASCII = nonASCII
	if ri.class != jsonString && ri.class != jsonStringASCII {
		// Only the classes of JSON string bodies, whose slices the
		// vocabulary makes once (PrepareVocab). The region of another
		// class would make a slice of its own on its first use, a pass
		// over the vocabulary (Handwritten/num5: 1,129,222 units of a
		// state's first use were the slice of its loop's class), where
		// the walks it saves are those of one grammar.
		return regionInfo{}, false
	}
	// The exits that lead somewhere: by an ASCII byte outside the class
	// that a state of S takes (a string's quote and backslash, not its
	// control characters), or by any other byte (a state inside a
	// character is not in S), or that follows the frame (below).
	ri.live.addRange(0x80, 0xFF)
	for _, s := range S {
		rs := a.row(s)
		for cl := 0; cl < a.nc && a.classLo[cl] < 0x80; cl++ {
			if !inK[cl] && rs.next(cl) >= 0 {
				ri.live.addRange(a.classLo[cl], min(a.classHi[cl], 0x7F))
			}
		}
	}
	for _, s := range S {
		ri.pops = ri.pops || a.canPopState(s)
	}
	for _, s := range S {
		if ri.pops && a.states[s].frame != frame {
			// (Where a state may pop, the bytes that can follow its frame
			// must be outside the class: one frame's, checked below.)
			return regionInfo{}, false
		}
	}
	if ri.pops && c.followStarts(frame, &ri.class) {
		return regionInfo{}, false
	}
	if ri.pops {
		// (The exits by a byte that follows the frame are cross points,
		// where a state before them may pop.)
		for i, w := range c.crossFollow[frame] {
			ri.live[i] |= w
		}
	}
	c.regions = append(c.regions, ri)
	c.memoBytes.Add(int64(unsafe.Sizeof(ri)))
	m := int32(len(c.regions))
	for _, s := range S {
		// (A state of S that found no region of its own still has this
		// one: S is closed under the class from it too.)
		if c.regionOf[s] <= 0 {
			c.regionOf[s] = m
		}
	}
	return ri, true
}

// knownRegionIndex returns the index in c.regions of q's region where a
// search has found it (regionFor from a level 1), else -1, without
// searching: the walks that ask it (bulkOK, at trie nodes in many
// states) would otherwise search from states no level 1 asked about
// (Github_ultra/o48661's Precompute 190-196 -> 212-236 ms). Only the
// compilation's own walks may ask (the eager phase's, and first uses under
// lazyMu, which write what it reads); a matcher's walks of deeper levels
// do not (walker.deep).
func (c *Compiled) knownRegionIndex(q int32) int {
	if c.regionOf == nil || c.regionOf[q] <= 0 {
		return -1
	}
	return int(c.regionOf[q] - 1)
}

// charEnds returns the states where the non-ASCII characters from state
// s end, if each leads, through states that only finish it, to one and no
// stray continuation byte leads anywhere (as utf8Into, for any end);
// memoized per state (the states of a region's search, for each class it
// drops).
func (c *Compiled) charEnds(s int32) ([]int32, bool) {
	if e, ok := c.charEndsOf[s]; ok {
		return e.ends, e.ok
	}
	var ends []int32
	ok := c.a.utf8Ends(s, func(t int32) bool {
		if !slices.Contains(ends, t) {
			ends = append(ends, t)
		}
		return true
	})
	if c.charEndsOf == nil {
		c.charEndsOf = map[int32]charEndsInfo{}
	}
	c.charEndsOf[s] = charEndsInfo{ends, ok}
	c.memoBytes.Add(int64(16 + 4*len(ends)))
	return ends, ok
}

// charEndsInfo is a state's result of charEnds.
type charEndsInfo struct {
	ends []int32
	ok   bool
}

// takesStringBody reports whether plain state q steps on every ASCII
// character of a JSON string's body (a region's first condition, checked
// before anything else: most states take a few bytes).
func (c *Compiled) takesStringBody(q int32) bool {
	a := c.a
	r := a.row(q)
	for cl := 0; cl < a.nc && a.classLo[cl] < 0x80; cl++ {
		if r.next(cl) < 0 && c.stringClass(cl) {
			return false
		}
	}
	return true
}

// stringClass reports whether byte class cl holds an ASCII character of a
// JSON string's body (computed once per automaton: takesStringBody asks
// it for every state that has no loop).
func (c *Compiled) stringClass(cl int) bool {
	if c.strClass == nil {
		a := c.a
		c.strClass = make([]bool, a.nc)
		c.memoBytes.Add(int64(a.nc))
		for cl := 0; cl < a.nc && a.classLo[cl] < 0x80; cl++ {
			for b := int(a.classLo[cl]); b <= int(min(a.classHi[cl], 0x7F)); b++ {
				c.strClass[cl] = c.strClass[cl] || jsonString.HasASCII(byte(b))
			}
		}
	}
	return c.strClass[cl]
}

// regionSlice returns the use of a region's slice by plain state q (see
// regionFor).
func (c *Compiled) regionSlice(q int32) (sliceUse, bool) {
	ri, ok := c.regionFor(q)
	if !ok {
		return sliceUse{}, false
	}
	var work int64
	sl := c.v.Slice(ri.class, &work)
	c.addSliceWork(work)
	return sliceUse{sl: sl, d: q, region: true, pops: ri.pops, live: ri.live}, true
}

// exitTree is the part of a slice's trie above its exits by the bytes of
// a set: the nodes, in preorder, that are (or are above) a parent of such
// an exit below the root, each with its parent's place (-1: the root) and
// the byte into it, and for each exit (ExitW's order) the place of its
// parent (-1 for the exits by other bytes).
type exitTree struct {
	node   []int32
	parent []int32
	in     []byte
	exitAt []int32
}

// maxExitTrees bounds the exit trees a slice keeps (by distinct sets of
// bytes: a string's class has a few, its quote and backslash, and those
// with the bytes that follow a frame); past it the slice forgets them
// and starts again, so that a long-running server's slices do not grow
// with every grammar.
const maxExitTrees = 16

// exitTreeOf returns slice sl's exit tree by the bytes of live (made on
// the first call, kept with the slice; its work units are added to
// *work).
func (p *vocabPrep) exitTreeOf(sl *vocab.Slice, live *byteBits, work *int64) *exitTree {
	u := sl.Ext(func() any { return new(upToSets) }).(*upToSets)
	u.mu.Lock()
	defer u.mu.Unlock()
	if et := u.exits[*live]; et != nil {
		return et
	}
	t := p.trie
	var parents []int32
	for b := 0; b < 256; b++ {
		if live.has(byte(b)) {
			parents = append(parents, sl.ExitV[sl.ExitOff[b]:sl.ExitOff[b+1]]...)
		}
	}
	slices.Sort(parents)
	parents = slices.Compact(parents)
	// below reports whether a parent lies in v's subtree.
	below := func(v int32) bool {
		i := sort.Search(len(parents), func(i int) bool { return parents[i] >= v })
		return i < len(parents) && parents[i] < t.Nodes[v].SubtreeEnd
	}
	et := &exitTree{}
	at := make(map[int32]int32, len(parents))
	var units int64
	var walk func(u, up int32)
	walk = func(u, up int32) {
		lo, hi := t.Children(u)
		units += int64(hi - lo)
		for e := lo; e < hi; e++ {
			v := t.EdgeNode[e]
			if !below(v) {
				continue
			}
			i := int32(len(et.node))
			et.node = append(et.node, v)
			et.parent = append(et.parent, up)
			et.in = append(et.in, t.EdgeByte[e])
			at[v] = i
			walk(v, i)
		}
	}
	walk(sl.Root, -1)
	et.exitAt = make([]int32, len(sl.ExitV))
	for i, v := range sl.ExitV {
		if j, ok := at[v]; ok {
			et.exitAt[i] = j
		} else {
			et.exitAt[i] = -1
		}
	}
	if u.exits == nil || len(u.exits) >= maxExitTrees {
		u.exits = map[byteBits]*exitTree{}
	}
	u.exits[*live] = et
	if work != nil {
		*work += units + int64(len(sl.ExitV))
	}
	return et
}

// regionExits walks the exits of a region's slice below the root (u.d is
// the state whose level 1 it is), each from the state its parent's bytes
// lead to (a pass over the exit tree); where that state may pop, the
// parents of exits by a byte that can follow the frame are cross points.
func (w *walker) regionExits(u sliceUse) {
	c, a, sl := w.c, w.a, u.sl
	var work int64
	et := c.prep.exitTreeOf(sl, &u.live, &work)
	c.addSliceWork(work)
	cf := &c.crossFollow[a.states[u.d].frame]
	states := resize(w.regionBuf, len(et.node))
	w.regionBuf = states
	for i, up := range et.parent {
		from := u.d
		if up >= 0 {
			from = states[up]
		}
		if from >= 0 {
			from = a.step(from, int(a.classOf[et.in[i]]))
		}
		states[i] = from
	}
	w.work += int64(len(et.node))
	for b := 0; b < 256; b++ {
		lo, hi := sl.ExitOff[b], sl.ExitOff[b+1]
		if lo == hi || !u.live.has(byte(b)) {
			continue
		}
		cl := int(a.classOf[b])
		follows := u.pops && cf.has(byte(b))
		w.work += int64(hi - lo)
		for i := lo; i < hi; i++ {
			from := states[et.exitAt[i]]
			if from < 0 {
				continue
			}
			if follows && a.canPopState(from) {
				w.cross = append(w.cross, crossPt{sl.ExitV[i], 0})
			}
			if t := a.step(from, cl); t >= 0 {
				w.buf = append(w.buf[:0], node{t, 0, predsBoundary})
				w.visit(sl.ExitW[i], 0, 1, 1, false)
			}
		}
	}
}

// openOrRegion returns the open chain of plain state q (openSlice), or
// else its region, unless q can borrow from its main successor's loop
// (sliceBorrowFor: a key exclusion's states, whose region is the rest of
// its automaton, take the loop's tokens that way). (Borrowing from a
// region instead walks the bytes that lead elsewhere whole: a bounded
// pattern's states, each a character further, borrow only the bytes that
// leave the pattern.)
func (c *Compiled) openOrRegion(q int32) (sliceUse, bool) {
	if u, ok := c.openSlice(q); ok {
		return u, true
	}
	if noRegions || !c.takesStringBody(q) {
		return sliceUse{}, false
	}
	if sb, ok := c.sliceBorrowFor(q, c.mainSucc(q)); ok && !sb.u.region {
		return sliceUse{}, false
	}
	return c.regionSlice(q)
}

// widerRegion returns the use of q's region instead of the loop of class
// k it leads to, where the region's class has more characters: the bytes
// that move a loop state to another state of its region are exits of the
// loop's slice, at nearly every trie node where they are letters (num5).
func (c *Compiled) widerRegion(q int32, k *vocab.Class) (sliceUse, bool) {
	// A byte outside k must lead q to a state that takes most of k (else
	// the search would drop it: a string's quote and backslash), or the
	// non-ASCII characters must be new.
	a := c.a
	r := a.row(q)
	wider := !k.NonASCII
	for cl := 0; !wider && cl < a.nc && a.classLo[cl] < 0x80; cl++ {
		t := r.next(cl)
		if t < 0 || k.HasASCII(a.classLo[cl]) {
			continue
		}
		rt := a.row(t)
		took, all := 0, 0
		for b := 0; b < 0x80; b++ {
			if k.HasASCII(byte(b)) {
				all++
				if rt.next(int(a.classOf[b])) >= 0 {
					took++
				}
			}
		}
		wider = 2*took >= all
	}
	if !wider {
		return sliceUse{}, false
	}
	ri, ok := c.regionFor(q)
	if !ok || asciiCount(&ri.class) <= asciiCount(k) && (!ri.class.NonASCII || k.NonASCII) || !subclass(k, &ri.class) {
		return sliceUse{}, false
	}
	return c.regionSlice(q)
}

// asciiCount returns the number of ASCII bytes of class k.
func asciiCount(k *vocab.Class) int {
	return bits.OnesCount64(k.ASCII[0]) + bits.OnesCount64(k.ASCII[1])
}
