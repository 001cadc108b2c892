package mask

import (
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"github.com/structgen/structgen/vocab"
)

// Level 1 from slices of the vocabulary (vocab.Slice).
//
// Most of the cost of a level-1 walk is in states that loop over a wide
// class of characters: the body of a JSON string ([^"\\\x00-\x1F] and
// escapes) accepts 96% of the Llama-3 vocabulary, and walking it costs a
// pass over the whole token trie (milliseconds). The vocabulary's slice
// of such a class holds the tokens inside a loop over it and the trie
// nodes where a token can leave it (the exits), made once per vocabulary
// and class. A state D that loops on exactly the class (every character
// of it leads from D back to D, through states that only finish the
// character) then has level 1 = the slice's tokens ∪ the walks of the
// exits, each from the state its byte leads to: a copy of a bitset and a
// walk of a few thousand trie nodes instead of hundreds of thousands. So
// does a state q that steps through a chain of states into D on every
// character of the class (a string body with a minimum length), the
// start of a repetition whose body is one character of the class
// (char{1,80}), with each token's characters as its cost, and, for the
// bytes that lead it into D, a state that mostly leads into D
// (sliceBorrow), and a state inside a character whose end leads into D
// (midSlice: the vocabulary's mid-character slice of the class). Where D may pop (the end of an identifier), the follow
// set must avoid the class: then a pop can only come before an exit
// byte, and the exits' parents are the cross points.

// noSlices turns slices off (tests compare with and without).
var noSlices = false

// noExitMemo walks the exits of a loop per state that uses it, as
// before sliceExitsOf (tests compare).
var noExitMemo = false

// minSliceASCII is the fewest ASCII bytes a loop's class needs for a
// slice: the digits, whose loop ([0-9]* of an integer) accepts every
// digit run of a vocabulary (1,110 tokens of Llama-3), a walk of 2,261
// units that budget-limited grammars left to the first use of integer
// values (50–120 µs with the caches cold); narrower loops accept few
// tokens, and their walks are cheap. (Up to stop 40 the bound was 32.)
const minSliceASCII = 10

// jsonString is the character class of JSON string bodies
// ([^"\\\x00-\x1F]): its slice is made with the vocabulary
// (PrepareVocab), since nearly every JSON Schema grammar has strings.
var jsonString = vocab.JSONString()

// jsonStringASCII is jsonString without its non-ASCII characters: the
// class of a string's states where the converter reads a non-ASCII
// character by a call (a key that must not match a bounded pattern:
// JsonSchemaStore/blueprint-spec2), made with the vocabulary too, for
// regions (regionFor).
var jsonStringASCII = func() vocab.Class {
	k := jsonString
	k.NonASCII = false
	return k
}()

// sliceIn returns the tokens inside slice sl.
func sliceIn(sl *vocab.Slice) *tokenSet {
	if sl.InList != nil {
		return &tokenSet{list: sl.InList, n: sl.InCount}
	}
	return &tokenSet{bits: sl.In, n: sl.InCount}
}

// sliceAdded returns the tokens inside sl in the form that costs the
// least to add to a set being built: its list while that is shorter than
// a pass over the bitset's words (one unit per 32), else the bitset,
// which a slice always has (the digits' 1,110 Llama-3 tokens as a list
// were 1,110 units, and as many random reads, in every integer's and
// fraction's first state; the bitset is 125). (The walks of a loop's
// exits, lists of about 1,000 tokens for the digits, stay lists: a
// bitset beside each took 35 MB more for 71 large grammars, 9%, and no
// time off their precomputation.)
func (p *vocabPrep) sliceAdded(sl *vocab.Slice) *tokenSet {
	if sl.InList != nil && (len(sl.InList) <= p.words/32 || noDenseAdd) {
		return &tokenSet{list: sl.InList, n: sl.InCount}
	}
	return &tokenSet{bits: sl.In, listed: sl.InList, n: sl.InCount}
}

// upToSets are the sets of a slice's tokens by characters (upToChars),
// kept with the slice (vocab.Slice.Ext): shared by every grammar that
// uses the slice, and gone with it when the vocabulary no longer keeps
// it (a cache keyed by the slice would keep every slice ever made).
type upToSets struct {
	mu       sync.Mutex
	sets     []*tokenSet            // [k]: the tokens that start at most k characters; nil until made
	maxChars int32                  // see openChainLen; 0 until known
	exits    map[byteBits]*exitTree // see exitTreeOf
	borrowed map[byteBits]*tokenSet // see borrowedIn
}

// openChainLen returns the most characters a token starts inside slice
// sl or before one of its exits: the states of an open chain that a
// token can reach (cached with the slice).
func (p *vocabPrep) openChainLen(sl *vocab.Slice) int32 {
	u := sl.Ext(func() any { return new(upToSets) }).(*upToSets)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.maxChars == 0 {
		_, off := sl.ByChars()
		n := int32(0)
		for k := int32(len(off)) - 2; k >= 0; k-- {
			if off[k] < off[len(off)-1] {
				n = k // some token starts k characters
				break
			}
		}
		for _, k := range sl.ExitK {
			n = max(n, k)
		}
		u.maxChars = n + 1
	}
	return u.maxChars - 1
}

// upToChars returns the tokens inside sl that start at most k characters
// (cached with the slice: the sets are shared by every grammar). The
// first call for a slice makes its sets for every k in one pass, and adds
// its work units to *work (nil: not counted). A set is a list while it
// is small; the slice's bitset less the longer tokens while those are
// few; else a bitset of its own. (Bitsets of their own for every k were
// 127 of 16 KB for a string's class on Llama-3, 2 MB a slice: the
// vocabulary kept 319 MB after 128 bounded strings of distinct classes,
// BenchmarkSliceMemory; with exclusions, 12 bitsets and 91 MB. A mask
// applies such a set in one pass over the vocabulary, also beside
// another with exclusions: tokenSet.orExclInto.)
func (p *vocabPrep) upToChars(sl *vocab.Slice, k int32, work *int64) *tokenSet {
	ids, off := sl.ByChars()
	if int(k)+1 >= len(off) {
		return sliceIn(sl)
	}
	u := sl.Ext(func() any { return new(upToSets) }).(*upToSets)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sets != nil {
		return u.sets[k]
	}
	thr := denseThreshold(p.words)
	bits := make([]uint32, p.words) // the tokens of up to j characters
	sets := make([]*tokenSet, len(off)-1)
	var units int64
	for j := range sets {
		for _, id := range ids[off[j]:off[j+1]] {
			bits[id>>5] |= 1 << (uint32(id) & 31)
		}
		n := int(off[j+1])
		units += int64(off[j+1] - off[j])
		switch {
		case n == sl.InCount:
			sets[j] = sliceIn(sl)
		case n <= thr:
			sets[j] = &tokenSet{list: ids[:n:n], n: n}
		case sl.InList == nil && sl.InCount-n <= thr:
			sets[j] = &tokenSet{bits: sl.In, excl: ids[n:sl.InCount:sl.InCount], n: n}
			units += int64(sl.InCount - n)
		default:
			sets[j] = &tokenSet{bits: slices.Clone(bits), n: n}
			units += int64(p.words / 32)
		}
	}
	u.sets = sets
	if work != nil {
		*work += units
	}
	return sets[k]
}

// sliceUse is how a state uses a slice: its own level 1 is the slice's
// tokens plus the walks of its exits. A plain state q steps along chain
// (q first) on every character of the class, up to the loop state d (the
// last), so an exit after k characters leaves from chain[min(k, last)]
// (a string body with a minimum length); a repetition's start has the
// chain start, d, with d its iteration end.
//
// An open chain (open) has no loop: d is its first state, and each state
// steps on every character of the class (as on its first byte) to the next
// (the states of a pattern under a length bound, one per character
// count), so an exit after k characters leaves from the k-th, and none
// comes after more than n; capped, the state after n characters takes
// no character of the class (the length bound is reached) and the tokens
// inside are those of at most n characters, else n is as many
// characters as a token of the slice can go (openChainLen). pops: a
// state of the chain may pop.
type sliceUse struct {
	sl    *vocab.Slice
	d     int32
	chain []int32

	open, capped, pops bool
	n                  int32

	region bool     // d's region (regionFor): exits from the states their parents lead to
	live   byteBits // a region's bytes of exits that lead somewhere
}

// maxSliceChain bounds the states a plain state may step through before
// its loop (minLength strings are unrolled up to lowering's limits).
const maxSliceChain = 32

// sliceFor returns how state q uses a slice, if it can (see slice and
// sliceUse). q must have no token edges; a plain state may have calls
// (its level 1 composes them as usual), a repetition state must be its
// frame's start and its body one character of the class. Results are
// memoized per state.
func (c *Compiled) sliceFor(q int32) (sliceUse, bool) {
	if noSlices {
		return sliceUse{}, false
	}
	if c.sliceOf == nil {
		c.sliceOf = make([]int32, len(c.a.states))
	}
	switch m := c.sliceOf[q]; {
	case m == -1:
		return sliceUse{}, false
	case m > 0:
		return c.sliceUses[m-1], true
	}
	// (None while it is being found: midSlice asks for the states after
	// q's byte, which cannot lead back to q, but a cycle must not recurse.)
	c.sliceOf[q] = -1
	u, ok := c.findSlice(q)
	if !ok {
		return sliceUse{}, false
	}
	c.sliceUses = append(c.sliceUses, u)
	c.sliceOf[q] = int32(len(c.sliceUses))
	return u, true
}

func (c *Compiled) findSlice(q int32) (sliceUse, bool) {
	a := c.a
	st := &a.states[q]
	f := &a.frames[st.frame]
	if len(st.toks) != 0 {
		return sliceUse{}, false
	}
	if !f.repeat {
		if u, ok := c.midSlice(q); ok {
			return u, true
		}
	}
	// The loop state: for a repetition, the iteration end most bytes of
	// the body start lead to (it steps by the start's row); else the end
	// of the chain of main successors from q, if it loops.
	var chainBuf [maxSliceChain + 2]int32 // (cloned into the result)
	chain := append(chainBuf[:0], q)
	var d int32
	if f.repeat {
		if q != f.start || len(st.calls) != 0 {
			return sliceUse{}, false
		}
		d = c.mainSucc(q)
		// d must be where the repetition may end (no stNoPop): the
		// slice's tokens may end in d on its last iteration. A folded
		// tail ([0-X]{5}[0] is six iterations, the last one "0") makes
		// d an end only the other way; there the slice would let a
		// token use up the count in d and leave the matcher stuck.
		if d < 0 || a.states[d].flags&stIterOnly == 0 || a.states[d].flags&stNoPop != 0 {
			return sliceUse{}, false
		}
		chain = append(chain, d)
	} else {
		for d = q; ; {
			n := c.mainSucc(d)
			if n == d {
				break
			}
			if n < 0 || len(chain) > maxSliceChain {
				return c.openOrRegion(q)
			}
			chain = append(chain, n)
			d = n
		}
		for i, s := range chain {
			ss := &a.states[s]
			if len(ss.toks) != 0 || ss.frame != st.frame || (i > 0 && len(ss.calls) != 0) || (i > 0 && s != d && a.canPopState(s)) {
				return c.openOrRegion(q)
			}
		}
	}
	drow := d // d's row: an iteration end steps by the body start's
	if f.repeat {
		drow = f.start
	}
	k, ok := c.loopClass(chain, d, drow, a.canPopState(d) || f.repeat, c.utf8Into)
	if !ok {
		if !f.repeat {
			// (A chain that ends in a loop of another class, such as the
			// states of a pattern under a length bound that lead to the
			// end of a string: an open chain, if anything.)
			return c.openOrRegion(q)
		}
		return sliceUse{}, false
	}
	if !f.repeat {
		if u, ok := c.widerRegion(q, &k); ok {
			return u, true
		}
	}
	// Making a new slice is vocabulary work, shared by every later
	// grammar: it does not count against the eager budget (which would
	// then depend on what was compiled before), only as first-use work.
	var work int64
	sl := c.v.Slice(k, &work)
	c.addSliceWork(work)
	return sliceUse{sl: sl, d: d, chain: slices.Clone(chain)}, true
}

// openSlice returns the open chain (see sliceUse) of plain state q, if
// it has one (openChain) of at least minOpenChain characters: shorter
// ones are cheap to walk, and a slice of a new class costs a pass over
// the vocabulary.
func (c *Compiled) openSlice(q int32) (sliceUse, bool) {
	oc := c.openChain(q)
	if oc == nil || oc.n < minOpenChain {
		return sliceUse{}, false
	}
	var work int64
	sl := c.v.Slice(oc.class, &work)
	c.addSliceWork(work)
	u := sliceUse{sl: sl, d: q, open: true, capped: oc.capped, pops: oc.pops, n: oc.n}
	if maxK := c.prep.openChainLen(sl); u.n > maxK {
		u.n, u.capped = maxK, false
	}
	return u, true
}

// minOpenChain is the fewest characters of an open chain that openSlice
// makes a slice for.
const minOpenChain = 4

// maxOpenChain bounds the characters of an open chain (a length bound
// of a pattern; the states past a token's reach share the slice's
// tokens anyway).
const maxOpenChain = 1 << 12

// openInfo describes the open chain from a state (see sliceUse): its
// class, characters, whether capped, and whether a state of it may pop.
type openInfo struct {
	class        vocab.Class
	n            int32
	capped, pops bool
}

// openChain returns the open chain from plain state q, or nil: the class
// is the ASCII bytes (at least minSliceASCII) that lead from q to its
// main successor, with the non-ASCII characters if every one does,
// narrowed to those the successor's chain takes where it takes fewer
// (at least minSliceASCII still; the others are exits from q); the
// successor takes none of them (the chain is capped there) or has an
// open chain of a class that holds them all (q's is one character
// longer: each state of that chain steps on every character of q's
// class to the next, and its last takes none; the last character of a
// pattern ^[a-z]+[0-9]*$ under a length bound may be a letter or a
// digit, the letters before it only letters). A state of the chain may
// pop only where no byte that can follow the frame starts a character
// of the class (then a pop comes before an exit, whose parent is a cross
// point). Memoized per state.
func (c *Compiled) openChain(q int32) *openInfo {
	if c.openOf == nil {
		c.openOf = make([]*openInfo, len(c.a.states))
		c.openDone = make([]bool, len(c.a.states))
		c.memoBytes.Add(int64(9 * len(c.a.states)))
	}
	if c.openDone[q] {
		return c.openOf[q]
	}
	c.openDone[q] = true // (nil while it is being found: no cycles)
	c.openDepth++
	defer func() { c.openDepth-- }()
	if c.openDepth > maxOpenChain {
		return nil
	}
	a := c.a
	st := &a.states[q]
	n0 := c.mainSucc(q)
	if n0 < 0 || n0 == q || len(st.toks) != 0 || a.frames[st.frame].repeat {
		return nil
	}
	oc := &openInfo{}
	n := 0
	r := a.row(q)
	for cl := 0; cl < a.nc && a.classLo[cl] < 0x80; cl++ {
		if r.next(cl) == n0 {
			for b := a.classLo[cl]; b <= min(a.classHi[cl], 0x7F); b++ {
				oc.class.AddASCII(b)
				n++
			}
		}
	}
	if n < minSliceASCII {
		return nil
	}
	ns := &a.states[n0]
	if len(ns.toks) != 0 || ns.frame != st.frame || len(ns.calls) != 0 {
		return nil
	}
	next := c.openChain(n0)
	if next == nil && !c.takesNone(n0, &oc.class) {
		// (No chain, whatever the non-ASCII characters: the state a key
		// exclusion's prefix states step to loops. Most states left to
		// first use are such (prepareOpenSlices), and utf8Into is the
		// costly check.)
		return nil
	}
	oc.class.NonASCII = c.utf8Into(q, n0)
	oc.pops = a.canPopState(q) || a.canPopState(n0)
	if next != nil && !subclass(&oc.class, &next.class) {
		// The characters both chains take: the others leave q's chain (an
		// exit byte, walked from q), as a pattern's "@" leaves its ".+"
		// after the first character (a state of ".+[@].+" that has seen
		// no "@" takes one as any character, the next tells it apart).
		k := vocab.Class{ASCII: [2]uint64{oc.class.ASCII[0] & next.class.ASCII[0], oc.class.ASCII[1] & next.class.ASCII[1]},
			NonASCII: oc.class.NonASCII && next.class.NonASCII}
		if bits.OnesCount64(k.ASCII[0])+bits.OnesCount64(k.ASCII[1]) >= minSliceASCII {
			oc.class = k
		}
	}
	if next != nil && subclass(&oc.class, &next.class) {
		oc.n, oc.capped, oc.pops = 1+next.n, next.capped, oc.pops || next.pops
	} else if c.takesNone(n0, &oc.class) {
		oc.n, oc.capped = 1, true
	} else {
		return nil
	}
	if oc.pops && c.followStarts(st.frame, &oc.class) {
		return nil
	}
	c.openOf[q] = oc
	c.memoBytes.Add(int64(unsafe.Sizeof(*oc)))
	return oc
}

// followStarts reports whether a byte that can follow frame f (where a
// pop is worth a cross point) starts a character of class k: then a
// state that loops or chains on k cannot pop only before an exit.
func (c *Compiled) followStarts(f int32, k *vocab.Class) bool {
	cf := &c.crossFollow[f]
	for b := 0; b < 256; b++ {
		if cf.has(byte(b)) && k.Starts(byte(b)) {
			return true
		}
	}
	return false
}

// firstASCII returns the first ASCII byte of class k (which has some).
func firstASCII(k *vocab.Class) byte {
	if k.ASCII[0] != 0 {
		return byte(bits.TrailingZeros64(k.ASCII[0]))
	}
	return byte(64 + bits.TrailingZeros64(k.ASCII[1]))
}

// subclass reports whether every character of class x is in class y.
func subclass(x, y *vocab.Class) bool {
	return x.ASCII[0]&^y.ASCII[0] == 0 && x.ASCII[1]&^y.ASCII[1] == 0 && (!x.NonASCII || y.NonASCII)
}

// prepareOpenSlices makes, in the eager phase, the vocabulary's slices
// of the classes of the open chains of states it left to first use, and
// their sets by characters: a first use inside a pattern under a length
// bound then walks the slice's exits (thousands of units), not the
// vocabulary to make the slice (390,000 units, 5-8 ms, for "any character
// but @" on Llama-3). It is vocabulary work (CompileStats.SliceWork),
// none if an earlier grammar made them. Only classes that at least
// minPreparedStates of those states use, and at most maxPreparedSlices
// of them, the most used first: a pattern under a length bound has a
// state per character count in each class; the automaton of the keys an
// object excludes has a few per class ("any character but o" after a
// prefix of "outputFileName"), which a generation rarely reaches, and
// making their slices took up to 75 ms more of Precompute
// (Github_ultra/o48661, JsonSchemaStore/bundleconfig).
func (c *Compiled) prepareOpenSlices(tops []int32) {
	type use struct {
		class vocab.Class
		n     int
	}
	var uses []use
	for _, q := range tops {
		if c.level1[q] != nil {
			continue
		}
		oc := c.openChain(q)
		if oc == nil || oc.n < minOpenChain {
			continue
		}
		i := slices.IndexFunc(uses, func(u use) bool { return u.class == oc.class })
		if i < 0 {
			i = len(uses)
			uses = append(uses, use{class: oc.class})
		}
		uses[i].n++
	}
	slices.SortStableFunc(uses, func(x, y use) int { return y.n - x.n })
	for i, u := range uses {
		if i == maxPreparedSlices || u.n < minPreparedStates {
			return
		}
		var work int64
		sl := c.v.Slice(u.class, &work)
		c.prep.upToChars(sl, 0, &work)
		c.sliceWork += work
	}
}

// maxPreparedSlices bounds the slices prepareOpenSlices makes for one
// grammar (a pattern has a few classes: Github_medium/o17563 six used by
// 96-525 states each; each slice is a pass over the vocabulary). A
// variable for tests.
var maxPreparedSlices = 8

// minPreparedStates is the fewest states left to first use whose open
// chains' class prepareOpenSlices makes a slice for.
const minPreparedStates = 32

// takesNone reports whether no character of class k leads anywhere from
// state d (its lead bytes, for the non-ASCII ones).
func (c *Compiled) takesNone(d int32, k *vocab.Class) bool {
	a := c.a
	for b := 0; b < 0x80; b++ {
		if k.HasASCII(byte(b)) && a.step(d, int(a.classOf[b])) >= 0 {
			return false
		}
	}
	if k.NonASCII {
		for b := 0xC2; b <= 0xF4; b++ {
			if a.step(d, int(a.classOf[b])) >= 0 {
				return false
			}
		}
	}
	return true
}

// loopClass returns the class of loop state d: the ASCII bytes that lead
// from row drow (d's, or its frame's body start's) back to d, with the
// non-ASCII characters if every one does; ok is false if it has fewer
// than minSliceASCII ASCII bytes, if a step of chain (the states before
// d, then d, in one frame) does not go on every character of it, or if d
// may pop (pops) where a byte that can follow the frame starts one of
// its characters: pops inside the loop would be cross points at every
// node of it; with a follow set outside the class, they come only before
// exits. utf8Into is Compiled.utf8Into, or outside the level-1
// computations its memo-free form (automaton.utf8Into).
func (c *Compiled) loopClass(chain []int32, d, drow int32, pops bool, utf8Into func(row, d int32) bool) (k vocab.Class, ok bool) {
	a := c.a
	n := 0
	for b := 0; b < 0x80; b++ {
		if a.step(drow, int(a.classOf[b])) == d {
			k.AddASCII(byte(b))
			n++
		}
	}
	if n < minSliceASCII {
		return k, false
	}
	// Every step of the chain goes on every character of the class.
	k.NonASCII = utf8Into(drow, d)
	for i := 0; i+1 < len(chain); i++ {
		row, next := chain[i], chain[i+1]
		for b := 0; b < 0x80; b++ {
			if k.HasASCII(byte(b)) && a.step(row, int(a.classOf[b])) != next {
				return k, false
			}
		}
		k.NonASCII = k.NonASCII && utf8Into(row, next)
	}
	if pops && c.followStarts(a.states[chain[0]].frame, &k) {
		return k, false
	}
	return k, true
}

// midSlice returns the use of a mid-character slice by plain state q:
// q is inside a character (a lead byte read) whose continuation bytes
// lead, through states that do nothing else, into a loop state d with a
// slice of its own (a string body between a lead byte and the
// character's end). Its tokens are then the mid-character slice's, and
// its exits are taken from d, at character boundaries (chain [d]).
func (c *Compiled) midSlice(q int32) (sliceUse, bool) {
	s, lo, hi, ok := c.contStep(q)
	if !ok {
		return sliceUse{}, false
	}
	u, ok := c.sliceFor(s)
	if !ok {
		return sliceUse{}, false
	}
	need := 1
	switch {
	case u.open:
		return sliceUse{}, false
	case u.region && u.d == s && u.sl.Need == 0:
		// s is in a region (regionSlice).
	case u.region && u.d == s && u.sl.Need > 0 && u.sl.Need < 3 && u.sl.Lo == 0x80 && u.sl.Hi == 0xBF:
		// s is inside the character too, before a region.
		need = int(u.sl.Need) + 1
	case u.region:
		return sliceUse{}, false
	case u.d == s && len(u.chain) == 1 && u.sl.Need == 0:
		// s is the loop state.
	case u.sl.Need > 0 && u.sl.Need < 3 && u.sl.Lo == 0x80 && u.sl.Hi == 0xBF:
		// s is inside the character too, one byte further.
		need = int(u.sl.Need) + 1
	default:
		return sliceUse{}, false
	}
	var work int64
	sl := c.v.MidSlice(u.sl.Class, need, lo, hi, &work)
	c.addSliceWork(work)
	if sl == nil {
		return sliceUse{}, false
	}
	if u.region {
		// (The exits are walked from the states the bytes lead q to,
		// the character's end first: regionExits.)
		return sliceUse{sl: sl, d: q, region: true, pops: u.pops, live: u.live}, true
	}
	return sliceUse{sl: sl, d: u.d, chain: []int32{u.d}}, true
}

// contStep reports whether q, in a plain frame, reads one continuation
// byte of a character and nothing else: no calls or token edges, no end
// of its frame, and exactly the bytes lo..hi (within 0x80..0xBF) lead to
// one state, next.
func (c *Compiled) contStep(q int32) (next int32, lo, hi byte, ok bool) {
	a := c.a
	st := &a.states[q]
	if len(st.calls) != 0 || len(st.toks) != 0 || st.flags&stFinal != 0 || a.frames[st.frame].repeat {
		return 0, 0, 0, false
	}
	next, lo, hi = -1, 0xFF, 0
	row := a.row(q)
	for cl := range row.cells {
		t := row.next(cl)
		if t < 0 {
			continue
		}
		if a.classLo[cl] < 0x80 || a.classHi[cl] > 0xBF || next >= 0 && t != next {
			return 0, 0, 0, false
		}
		next = t
		lo, hi = min(lo, a.classLo[cl]), max(hi, a.classHi[cl])
	}
	if next < 0 {
		return 0, 0, 0, false
	}
	for b := int(lo); b <= int(hi); b++ {
		if row.next(int(a.classOf[b])) != next {
			return 0, 0, 0, false // a hole in the range
		}
	}
	return next, lo, hi, true
}

// mainSucc returns the state most bytes lead to from q by its own row (-1
// if none).
func (c *Compiled) mainSucc(q int32) int32 {
	if c.mainSuccOf == nil {
		c.mainSuccOf = make([]int32, len(c.a.states))
	}
	if m := c.mainSuccOf[q]; m != 0 {
		return m - 2 // (stored +2: 0 is "not yet", -1 becomes 1)
	}
	best := c.a.mainSucc(q)
	c.mainSuccOf[q] = best + 2
	return best
}

// mainSucc is Compiled.mainSucc without its memo (safe for concurrent
// use).
func (a *automaton) mainSucc(q int32) int32 {
	// Bytes per target, in a short list: a state has few targets.
	type count struct {
		t int32
		n int
	}
	var counts [16]count
	cs := counts[:0]
	best, bestN := int32(-1), 0
	row := a.row(q)
	for cl := range row.cells {
		t := row.next(cl)
		if t < 0 {
			continue
		}
		k := 0
		for k < len(cs) && cs[k].t != t {
			k++
		}
		if k == len(cs) {
			cs = append(cs, count{t: t})
		}
		cs[k].n += int(a.classHi[cl]) - int(a.classLo[cl]) + 1
		if n := cs[k].n; n > bestN || (n == bestN && t < best) {
			best, bestN = t, n
		}
	}
	return best
}

// utf8Into reports whether, stepping by state row's transitions, every
// valid multi-byte UTF-8 character leads to state d through states that
// only finish the character, and every invalid byte sequence is dead.
func (c *Compiled) utf8Into(row, d int32) bool {
	k := [2]int32{row, d}
	if r, ok := c.utf8Memo[k]; ok {
		return r
	}
	r := c.a.utf8Into(row, d)
	if c.utf8Memo == nil {
		c.utf8Memo = map[[2]int32]bool{}
	}
	c.utf8Memo[k] = r
	return r
}

// utf8Into is Compiled.utf8Into without its memo (safe for concurrent
// use): every non-ASCII character leads from row to d (utf8Ends).
func (a *automaton) utf8Into(row, d int32) bool {
	return a.utf8Ends(row, func(t int32) bool { return t == d })
}

// utf8Ends reports whether every non-ASCII character leads from state s,
// through states that only finish it, to a state that end accepts (it is
// called on each), and no stray continuation byte leads anywhere.
func (a *automaton) utf8Ends(s int32, end func(int32) bool) bool {
	// Memo of finishes: mostly few distinct mid-character states and
	// kinds, so a list (a map cost more than the checks: every state a
	// compile asks, o12344's 6,625, made one), and past maxListMemo
	// entries (a grammar listing many distinct non-ASCII words) a map.
	type fkey struct {
		s      int32
		n      int
		lo, hi byte
	}
	type fres struct {
		k  fkey
		ok bool
	}
	const maxListMemo = 32
	var memo []fres
	var memoMap map[fkey]bool
	var finishes func(s int32, n int, lo, hi byte) bool
	finishes = func(s int32, n int, lo, hi byte) bool {
		k := fkey{s, n, lo, hi}
		if memoMap != nil {
			if r, ok := memoMap[k]; ok {
				return r
			}
		} else {
			for _, m := range memo {
				if m.k == k {
					return m.ok
				}
			}
		}
		st := &a.states[s]
		ok := len(st.calls) == 0 && len(st.toks) == 0 && st.flags&stFinal == 0
		// By byte class: the bytes of a class step alike, and a class
		// lies wholly inside or outside [lo, hi] or else is split.
		for cl := 0; ok && cl < a.nc; cl++ {
			t := a.step(s, cl)
			clo, chi := a.classLo[cl], a.classHi[cl]
			switch {
			case chi < lo || clo > hi:
				ok = t < 0
			case clo < lo || chi > hi:
				ok = false // partly valid: not a loop over the class
			case n == 1:
				ok = t >= 0 && end(t)
			default:
				ok = t >= 0 && finishes(t, n-1, 0x80, 0xBF)
			}
		}
		switch {
		case memoMap != nil:
			memoMap[k] = ok
		case len(memo) < maxListMemo:
			memo = append(memo, fres{k, ok})
		default:
			memoMap = make(map[fkey]bool, 2*maxListMemo)
			for _, m := range memo {
				memoMap[m.k] = m.ok
			}
			memoMap[k] = ok
		}
		return ok
	}
	// Consecutive bytes of one class and one kind of lead step alike and
	// finish alike: each run is checked once.
	prevCl, prevN, prevLo, prevHi := -1, -1, byte(0), byte(0)
	for b := 0x80; b < 0x100; b++ {
		cl := int(a.classOf[b])
		n, lo, hi := vocab.UTF8Lead(byte(b))
		if cl == prevCl && n == prevN && lo == prevLo && hi == prevHi {
			continue
		}
		prevCl, prevN, prevLo, prevHi = cl, n, lo, hi
		t := a.step(s, cl)
		if n == 0 && t >= 0 || n > 0 && (t < 0 || !finishes(t, n, lo, hi)) {
			return false
		}
	}
	return true
}

// sliceLevel1 computes the local level 1 of plain state q from its slice:
// the slice's tokens, and the walks of the exits (from q at the root,
// from the loop state below it).
func (c *Compiled) sliceLevel1(q int32, u sliceUse) *level1 {
	w, a, sl := c.walker, c.a, u.sl
	ex := &sliceExitSet{}
	if !u.open {
		ex = c.sliceExitsOf(q, u)
	}
	base := node{q, 0, predsBoundary}
	w.begin(base, false)
	w.work += StateWorkUnits
	var in *tokenSet
	if u.capped {
		var work int64
		in = c.prep.upToChars(sl, u.n, &work)
		c.addSliceWork(work)
	} else {
		in = c.prep.sliceAdded(sl)
	}
	w.work += in.work() // (as addSet counts it: buildWith adds it)
	if w.st.canPop(base) {
		w.cross = append(w.cross, crossPt{0, 0})
	}
	for b, r := range sl.RootExit {
		if r == 0 {
			continue
		}
		if t := a.step(q, int(a.classOf[b])); t >= 0 {
			c.rootExit(r, t)
		}
	}
	switch {
	case u.open:
		w.openExits(u)
	case u.region:
		// (In ex: sliceExitsOf.)
	default:
		w.sliceExits(u, nil, exitsOnChain)
	}
	w.addSet(w.acc, &ex.set)
	l := &level1{full: w.buildWith(w.acc, in)}
	cross := append(uniqueNodes(w.cross), ex.cross...)
	slices.Sort(cross)
	l.plain = &ctxEntry{in: &l.full, cross: slices.Compact(cross)}
	return l
}

// maxPlusIDs is the most ids outside a slice's set that a loop state's
// set lists beside it (tokenSet's dense plus a few): a state of a string
// takes its slice's tokens and those its exits add (the close quote's
// and the escapes': 276-296 on Llama-3 in Github_ultra/o12344), and a
// copy of the slice's bitset per state (16 KB on Llama-3) was a fifth of
// the eager phase of grammars of many string states (o12344: 1,125
// region states). Applied into another set, the list costs less than
// the copy it stands for up to about a word per 8 (a random write
// against 8 words copied and counted).
func maxPlusIDs(words int) int { return words / 8 }

// buildWith builds the union of in (a slice's set, not added to b, or
// added whole in a symbolic walk; nil: none) and b's, counting the work as
// w.addSet(b, in) and w.build would, so that the eager phase reaches the
// same states whichever form the set takes: where in is a bitset alone,
// in's bitset is shared and the ids outside it listed (up to
// maxPlusIDs: b's ids, or where b took sets whole, its bits); else the
// union is built whole. (Since stop 55 also where the union is no more
// than a list: a number's digits, 1,110 tokens on Llama-3, which a state
// built into a list through a builder of the vocabulary's words, a pass
// to count them, one to list them and one to clear it, about 15 µs of a
// 20 µs first use; a mask makes it whole as the slice's list plus the
// few, see forMask.)
func (w *walker) buildWith(b *setBuilder, in *tokenSet) tokenSet {
	plus, ok := plusIDs(b, in)
	if !ok {
		if in != nil {
			b.addSet(in)
		}
		return w.build(b)
	}
	n := in.n + len(plus)
	s := tokenSet{bits: in.bits, list: plus, n: n, whole: &wholeSet{}}
	if n > denseThreshold(len(b.bits)) {
		w.work += int64(len(b.bits) / 32) // (a dense set's work)
	} else {
		w.work += int64(n) // (a listed set's)
		s.listed = in.listed
	}
	b.reset()
	return s
}

// plusIDs returns b's ids outside in's bitset (b's own ids, or where b
// took sets whole, in a symbolic walk in's tokens too, its bits), and
// false where in is not a bitset alone (nil, a list, exclusions, a list
// beside it) or they are more than maxPlusIDs.
func plusIDs(b *setBuilder, in *tokenSet) ([]int32, bool) {
	if in == nil || in.bits == nil || in.excl != nil || in.list != nil {
		return nil, false
	}
	lim := maxPlusIDs(len(b.bits))
	var plus []int32
	if !b.dense {
		for _, id := range b.ids {
			if hasBit(in.bits, id) {
				continue
			}
			if len(plus) == lim {
				return nil, false
			}
			plus = append(plus, id)
		}
		return plus, true
	}
	for i, x := range b.bits {
		for x &^= in.bits[i]; x != 0; x &= x - 1 {
			if len(plus) == lim {
				return nil, false
			}
			plus = append(plus, int32(i*32+bits.TrailingZeros32(x)))
		}
	}
	return plus, true
}

// exitKey identifies a walk of a slice's exits (sliceExitsOf): the slice
// (a loop's, or a mid-character one's), the loop state and the length of
// the chain before it.
type exitKey struct {
	sl   *vocab.Slice
	d, n int32
}

// sliceExitSet is what the walk of a loop's exits (sliceExits) adds to
// the level 1 of a state that uses the loop's slice.
type sliceExitSet struct {
	set   tokenSet
	cross []int32
}

// noDenseAdd turns off the bitset form of a slice's listed tokens that
// sliceAdded and addSliceBorrowed use (tests compare with and without).
var noDenseAdd = false

// sliceExitsOf returns the walk of the exits of u's slice taken from the
// loop state (see sliceExits), from the walker's base q, or for a region
// all of its exits (regionExits). It depends only on the slice, the loop
// state and the length of the chain before it, and is walked once per
// compilation: the states that lead into the same loop share it (the
// start of an object's other keys and the states after each prefix of a
// listed name all end in the loop of key characters; Github_hard/o1051
// walked the same 220,000 units for 7 of them, which took its whole eager
// budget), and so do the states that borrow from a region state
// (addSliceBorrowed).
func (c *Compiled) sliceExitsOf(q int32, u sliceUse) *sliceExitSet {
	k := exitKey{u.sl, u.d, int32(len(u.chain))}
	if e := c.exitMemo[k]; e != nil && !noExitMemo {
		return e
	}
	w := c.walker
	w.begin(node{q, 0, predsBoundary}, false)
	if u.region {
		w.regionExits(u)
	} else {
		w.sliceExits(u, nil, exitsFromLoop)
	}
	e := &sliceExitSet{set: w.build(w.acc), cross: uniqueNodes(w.cross)}
	if c.exitMemo == nil {
		c.exitMemo = map[exitKey]*sliceExitSet{}
	}
	c.exitMemo[k] = e
	c.memoBytes.Add(int64(e.bytes()))
	return e
}

// bytes returns the memory e holds.
func (e *sliceExitSet) bytes() int { return e.set.bytes() + 4*len(e.cross) }

// maxRootExitBytes bounds the memory of the eager phase's memo of
// root-exit walks (rootExit), past which they are walked again for each
// state that needs them: a pattern language whose every state left its
// loop into states of its own would keep an entry per state and exit byte,
// up to a 16 KB bitset each on Llama-3. The largest memos seen take 2.8 MB
// (Github_hard/o1051, JsonSchemaStore/cryproj), more than the rest of
// some grammars' compiled form (BizTalkServerApplicationSchema: 2.0 MB
// of memo, 1.0 MB of sets): the memo is dropped when the eager phase
// ends, and first uses walk their root exits.
const maxRootExitBytes = 16 << 20

// rootExitLimit is maxRootExitBytes, lowered by tests.
var rootExitLimit int64 = maxRootExitBytes

// rootExitKey identifies a walk of a slice's root exit (rootExit): the
// root's child and the state its byte leads to.
type rootExitKey struct{ r, t int32 }

// rootExit adds to the walker's set and cross points those of the walk of
// trie node r (a root exit of a slice: its byte leaves the loop's class)
// from plain state t, the state its byte leads to. The walk depends only
// on r and t, and is done once per eager phase: the states that use a
// slice often lead to the same state on the bytes that leave it (the
// states of a pattern's match inside a string, `.*(apne1-az1|…).*`, all
// go back to the same state on a quote or a letter that starts a match;
// JsonSchemaStore/config_schema walked the same 22,500 units for each of
// 36 such states, BizTalkServerApplicationSchema 157,000 units for each
// of 9, which took their whole eager budget).
func (c *Compiled) rootExit(r, t int32) {
	w := c.walker
	if noExitMemo || !c.eager {
		w.buf = append(w.buf[:0], node{t, 0, predsBoundary})
		w.visit(r, 0, 1, 1, false)
		return
	}
	k := rootExitKey{r, t}
	e := c.rootExits[k]
	if e == nil {
		acc, mark, cmark := w.acc, len(w.cross), w.crossMark
		b := w.scr.builder()
		w.acc = b
		w.buf = append(w.buf[:0], node{t, 0, predsBoundary})
		w.visit(r, 0, 1, 1, false)
		e = &sliceExitSet{set: w.build(b), cross: uniqueNodes(w.cross[mark:])}
		if e.set.bits == nil && len(e.set.list) > c.prep.words/32 {
			// Dense, as it is added again: a pass over the words costs
			// less than its ids.
			bits := make([]uint32, c.prep.words)
			e.set.copyInto(bits)
			e.set = tokenSet{bits: bits, n: e.set.n}
		}
		w.scr.putBuilder(b)
		w.acc, w.cross, w.crossMark = acc, w.cross[:mark], cmark
		if n := int64(e.bytes()); c.rootBytes+n <= rootExitLimit {
			if c.rootExits == nil {
				c.rootExits = map[rootExitKey]*sliceExitSet{}
			}
			c.rootExits[k] = e
			c.rootBytes += n
		}
	}
	w.addSet(w.acc, &e.set)
	for _, u := range e.cross {
		w.cross = append(w.cross, crossPt{u, 0})
	}
}

// Which exits sliceExits walks: those taken on the chain before the loop
// state, those taken from the loop state, or all.
const (
	exitsAll = iota
	exitsOnChain
	exitsFromLoop
)

// sliceExits walks the exits of u's slice below the root (those whose
// first byte is in good, if good is not nil; which says which) from the
// chain's states and the loop state, in a plain frame; where the loop
// state may pop, the parents of exits by a byte that can follow the
// frame are cross points.
func (w *walker) sliceExits(u sliceUse, good *byteBits, which int) {
	c, a, t, sl := w.c, w.a, w.t, u.sl
	pops := a.canPopState(u.d)
	cf := &c.crossFollow[a.states[u.d].frame]
	last := int32(len(u.chain) - 1)
	for b := 0; b < 256; b++ {
		lo, hi := sl.ExitOff[b], sl.ExitOff[b+1]
		if lo == hi {
			continue
		}
		cl := int(a.classOf[b])
		cross := pops && cf.has(byte(b))
		next := a.step(u.d, cl)
		if next < 0 && !cross && (last == 0 || which == exitsFromLoop) || which == exitsOnChain && last == 0 {
			continue
		}
		// The exits still on the chain (parents of fewer characters than
		// its length) come first.
		switch which {
		case exitsOnChain:
			hi = sl.ExitsBefore(byte(b), last)
		case exitsFromLoop:
			lo = sl.ExitsBefore(byte(b), last)
		}
		w.work += int64(hi - lo)
		for i := lo; i < hi; i++ {
			x := sl.ExitW[i]
			if good != nil && !good.has(t.Nodes[x].FirstByte) {
				continue
			}
			k := sl.ExitK[i]
			if k < last {
				// Still on the chain: not the loop state (which alone may pop).
				if t := a.step(u.chain[k], cl); t >= 0 {
					w.buf = append(w.buf[:0], node{t, 0, predsBoundary})
					w.visit(x, 0, 1, 1, false)
				}
				continue
			}
			if cross {
				w.cross = append(w.cross, crossPt{sl.ExitV[i], 0})
			}
			if next >= 0 {
				w.buf = append(w.buf[:0], node{next, 0, predsBoundary})
				w.visit(x, 0, 1, 1, false)
			}
		}
	}
}

// openExits walks the exits of an open chain's slice below the root,
// each from the state of the chain its characters lead to (none after
// more than the chain's n); where that state may pop, the parents of
// exits by a byte that can follow the frame are cross points.
func (w *walker) openExits(u sliceUse) {
	c, a, sl := w.c, w.a, u.sl
	cf := &c.crossFollow[a.states[u.d].frame]
	// The chain's states, by the characters before them.
	chain := append(w.chainBuf[:0], u.d)
	rc := int(a.classOf[firstASCII(&sl.Class)])
	for int32(len(chain)) <= u.n {
		chain = append(chain, a.step(chain[len(chain)-1], rc))
	}
	w.chainBuf = chain
	for b := 0; b < 256; b++ {
		lo, hi := sl.ExitOff[b], sl.ExitOff[b+1]
		if lo == hi {
			continue
		}
		hi = sl.ExitsBefore(byte(b), u.n+1)
		cl := int(a.classOf[b])
		follows := cf.has(byte(b))
		w.work += int64(hi - lo)
		for i := lo; i < hi; i++ {
			from := chain[sl.ExitK[i]]
			if follows && u.pops && a.canPopState(from) {
				w.cross = append(w.cross, crossPt{sl.ExitV[i], 0})
			}
			if t := a.step(from, cl); t >= 0 {
				w.buf = append(w.buf[:0], node{t, 0, predsBoundary})
				w.visit(sl.ExitW[i], 0, 1, 1, false)
			}
		}
	}
}

// sliceBorrow is what a plain state takes from the slice of its main
// successor's loop: the tokens that start with a byte of good, which leads
// from the state into the loop state (their first byte is not walked).
type sliceBorrow struct {
	u    sliceUse
	good byteBits
}

// sliceBorrowFor returns what plain state q can take from the slice of
// loop state d (q's main successor): every character of d's class whose
// byte leads from q to d (lead bytes only if every non-ASCII character
// does). Where d is in a region (regionSlice), it is every character of
// the region's class whose byte leads q and d to the same state (lead
// bytes only if each does).
func (c *Compiled) sliceBorrowFor(q, d int32) (*sliceBorrow, bool) {
	a := c.a
	if d < 0 || d == q || len(a.states[q].toks) != 0 || a.states[q].frame != a.states[d].frame || a.frames[a.states[q].frame].repeat {
		return nil, false
	}
	u, ok := c.sliceFor(d)
	if !ok || u.open || u.d != d || u.region && u.sl.Need != 0 {
		return nil, false
	}
	sb := &sliceBorrow{u: u}
	n := 0
	for b := 0; b < 0x80; b++ {
		// (A loop state steps to itself on its class; a region's to the
		// state it is in after the byte, which q must step to too.)
		if t := a.step(d, int(a.classOf[b])); u.sl.Class.HasASCII(byte(b)) && t >= 0 && a.step(q, int(a.classOf[b])) == t {
			sb.good.add(byte(b))
			n++
		}
	}
	if n == 0 {
		return nil, false
	}
	if u.sl.Class.NonASCII && (!u.region && c.utf8Into(q, d) || u.region && sameLeads(a, q, d)) {
		for b := 0xC2; b <= 0xF4; b++ {
			sb.good.add(byte(b))
		}
	}
	return sb, true
}

// sameLeads reports whether every lead byte of a character leads q and d
// to the same state.
func sameLeads(a *automaton, q, d int32) bool {
	for b := 0xC2; b <= 0xF4; b++ {
		if cl := int(a.classOf[b]); a.step(q, cl) != a.step(d, cl) {
			return false
		}
	}
	return true
}

// addSliceBorrowed adds to l (the local level 1 of plain state q, walked
// without sb's first bytes) the tokens sb takes from the slice: those of
// the slice and of the walk of the loop's exits (sliceExitsOf, shared with
// the loop state and every state that borrows from it) that start with a
// good byte, and the exits' cross points below good bytes.
func (c *Compiled) addSliceBorrowed(l *level1, q int32, sb *sliceBorrow) {
	w, t, sl := c.walker, c.prep.trie, sb.u.sl
	// (First: it starts a walk of its own.)
	ex := c.sliceExitsOf(sb.u.d, sb.u)
	in := c.borrowedIn(sl, &sb.good)
	w.begin(node{q, 0, predsBoundary}, false)
	if in == nil {
		dense := sl.In
		if noDenseAdd {
			dense = nil
		}
		c.addFirstBytes(w.acc, sliceIn(sl), dense, &sb.good, sl.Class.Starts)
	} else {
		w.work += in.work() // (as addSet counts it: buildWith adds it)
	}
	c.addFirstBytes(w.acc, &ex.set, nil, &sb.good, sl.Class.Starts)
	w.addSet(w.acc, &l.full)
	cross := slices.Clone(l.plain.cross)
	for _, u := range ex.cross {
		if sb.good.has(t.Nodes[u].FirstByte) {
			cross = append(cross, u)
		}
	}
	slices.Sort(cross)
	*l = level1{full: w.buildWith(w.acc, in)}
	l.plain = &ctxEntry{in: &l.full, cross: slices.Compact(cross)}
}

// maxBorrowedSets bounds the sets borrowedIn keeps per slice (each up to
// a bitset, 16 KB on Llama-3): the states that borrow from a loop take
// its slice's tokens that start with the bytes that lead them into it,
// and a few such byte sets recur (the digits but 0, after a number's
// minus sign; a key's first letters).
const maxBorrowedSets = 8

// borrowedIn returns the tokens of slice sl that start with a byte of
// good, kept with the slice (shared by every state and grammar that
// borrows the same bytes from it, whose level 1 then shares its bitset:
// buildWith), or nil where the slice keeps maxBorrowedSets others or
// its tokens are few (a list, added as it is). Making it is vocabulary
// work, booked as slice work.
func (c *Compiled) borrowedIn(sl *vocab.Slice, good *byteBits) *tokenSet {
	if noDenseAdd || sl.InList != nil && len(sl.InList) <= c.prep.words/32 {
		return nil
	}
	u := sl.Ext(func() any { return new(upToSets) }).(*upToSets)
	u.mu.Lock()
	defer u.mu.Unlock()
	if s, ok := u.borrowed[*good]; ok {
		return s
	}
	if len(u.borrowed) >= maxBorrowedSets {
		return nil
	}
	w := c.walker
	b := w.scr.builder()
	defer w.scr.putBuilder(b)
	work := w.work
	c.addFirstBytes(b, sliceIn(sl), sl.In, good, sl.Class.Starts)
	s := b.build()
	if s.bits == nil && s.n > c.prep.words/32 {
		// (As a bitset, to be shared: buildWith; with its list, for
		// masks: forMask.)
		bits := make([]uint32, c.prep.words)
		s.copyInto(bits)
		s = tokenSet{bits: bits, listed: s.list, n: s.n}
	}
	c.addSliceWork(w.work - work + s.work())
	w.work = work
	if u.borrowed == nil {
		u.borrowed = map[byteBits]*tokenSet{}
	}
	u.borrowed[*good] = &s
	return &s
}

// addFirstBytes adds to dst the tokens of s whose first byte is in good,
// where every token of s starts with a byte for which starts holds; a
// listed s may come with its bitset (dense, else nil). It takes the
// cheapest way in work units: each token of a listed s, checked; each
// token of good's bytes, looked up in s; s less each token of the other
// bytes; s less the other bytes' sets of tokens, or the union of good's
// within s (vocab.FirstByteSet: a pass over the words each, where a first
// byte such as a letter starts tens of thousands of tokens).
func (c *Compiled) addFirstBytes(dst *setBuilder, s *tokenSet, dense []uint32, good *byteBits, starts func(byte) bool) {
	w, t := c.walker, c.prep.trie
	if s.bits == nil && (dense == nil || len(s.list) <= c.prep.words/32) {
		c.addListFirstBytes(dst, s, good)
		return
	}
	var in, out, nIn, nOut int64
	es, ee := t.Children(0)
	for e := es; e < ee; e++ {
		if b := t.EdgeByte[e]; starts(b) {
			n := int64(len(t.TokensIn(t.EdgeNode[e])))
			if good.has(b) {
				in, nIn = in+n, nIn+1
			} else {
				out, nOut = out+n, nOut+1
			}
		}
	}
	pass := int64(c.prep.words / 32) // a dense operation's units
	const (
		eachIn = iota
		eachOut
		outBytes
		inBytes
		whole // no token of s starts with another byte: s as it is
	)
	way, cost := whole, pass
	if out != 0 {
		way, cost = eachIn, in
		for k, x := range []int64{eachOut: pass + out, outBytes: (nOut + 1) * pass, inBytes: (nIn + 1) * pass} {
			if k != eachIn && x < cost {
				way, cost = k, x
			}
		}
	}
	if s.bits == nil {
		// A listed s with its bitset: the list's way if it costs no more.
		if int64(len(s.list)) <= cost {
			c.addListFirstBytes(dst, s, good)
			return
		}
		s = &tokenSet{bits: dense, n: s.n}
	}
	if way == whole {
		w.addSet(dst, s)
		return
	}
	if way == eachIn {
		w.work += in
		for e := es; e < ee; e++ {
			if b := t.EdgeByte[e]; starts(b) && good.has(b) {
				for _, id := range t.TokensIn(t.EdgeNode[e]) {
					if s.has(id) {
						dst.add(id)
					}
				}
			}
		}
		return
	}
	tmp := w.scr.mask()
	var vwork int64 // making the vocabulary's sets (vocabulary work, as slices)
	if way == inBytes {
		for e := es; e < ee; e++ {
			if b := t.EdgeByte[e]; starts(b) && good.has(b) {
				orWords(tmp, c.v.FirstByteSet(b, &vwork))
			}
		}
		s.andInto(tmp)
	} else {
		s.copyInto(tmp)
		for e := es; e < ee; e++ {
			b := t.EdgeByte[e]
			if !starts(b) || good.has(b) {
				continue
			}
			if way == eachOut {
				for _, id := range t.TokensIn(t.EdgeNode[e]) {
					tmp[id>>5] &^= 1 << (uint32(id) & 31)
				}
			} else {
				andNotWords(tmp, c.v.FirstByteSet(b, &vwork))
			}
		}
	}
	c.addSliceWork(vwork)
	w.work += cost
	w.addSet(dst, &tokenSet{bits: tmp, n: 1})
}

// addListFirstBytes is addFirstBytes of a listed s, each token checked.
func (c *Compiled) addListFirstBytes(dst *setBuilder, s *tokenSet, good *byteBits) {
	c.walker.work += int64(len(s.list))
	for _, id := range s.list {
		if good.has(c.v.Token(id)[0]) {
			dst.add(id)
		}
	}
}

// sliceLevel1Repeat computes level 1 of a repetition frame's start q from
// its slice, with a symbolic counter: the slice's tokens cost the
// characters they start, the exits are walked from the next iteration,
// and an exit by a byte that can follow the frame is a cross point after
// the characters before it.
func (c *Compiled) sliceLevel1Repeat(q int32, u sliceUse) *level1 {
	w, a, sl := c.walker, c.a, u.sl
	w.begin(node{q, -1, predsBoundary}, true)
	w.work += StateWorkUnits
	in := c.prep.sliceAdded(sl)
	w.addSet(w.acc, in)
	cf := &c.crossFollow[a.states[q].frame]
	for b := 0; b < 256; b++ {
		lo, hi := sl.ExitOff[b], sl.ExitOff[b+1]
		r := sl.RootExit[b]
		if lo == hi && r == 0 {
			continue
		}
		t := a.step(q, int(a.classOf[b]))
		if r != 0 && t >= 0 {
			w.buf = append(w.buf[:0], node{t, nextIteration(-1), predsBoundary})
			w.visit(r, 0, 1, 1, false)
		}
		cross := cf.has(byte(b))
		if t < 0 && !cross {
			continue
		}
		w.work += int64(hi - lo)
		for i := lo; i < hi; i++ {
			k := sl.ExitK[i]
			if cross {
				w.cross = append(w.cross, crossPt{sl.ExitV[i], k})
			}
			if t >= 0 {
				w.buf = append(w.buf[:0], node{t, -(k + 2), predsBoundary})
				w.visit(sl.ExitW[i], 0, 1, 1, false)
			}
		}
	}
	l := w.symbolicLevel1(in)
	l.slice = sl
	if a.frames[a.states[q].frame].max >= 0 {
		// A bounded repetition needs the slice's tokens by characters
		// (entryFor): made here, not in a decode step. Like making the
		// slice, that is vocabulary work done once per process, so it is
		// not charged to the eager budget (which would then depend on
		// what was compiled before).
		var work int64
		c.prep.upToChars(sl, 0, &work)
		c.addSliceWork(work)
	}
	return l
}
