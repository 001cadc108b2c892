package jsonkeys

import (
	"fmt"
	"slices"

	"github.com/structgen/structgen/mask"
)

// maxHeadLookups bounds the keys Filter looks up one by one: each costs a
// map probe (about 30 ns), while the alternative, scanning every allowed
// token that has a quote, costs about 75 µs on Llama-3 inside a free key
// (1,345 such tokens, most of them allowed; BenchmarkFilter). Beyond 1024
// keys sharing the open key's prefix the scan is the cheaper.
const maxHeadLookups = 1024

// A Guard follows the output of one sequence, as a JSON text, and keeps
// for every object the keys it already has. Feed it what the matcher
// accepts (Accept, AcceptBytes) and undo what the matcher undoes
// (Rollback); Filter then removes from a mask the tokens that would close
// a key its object already has.
//
// A Guard is not safe for concurrent use; make one per sequence
// (Table.NewGuard is cheap). Its memory grows with the output: the
// output's bytes, its keys, a node per object or array, and one snapshot
// (80 bytes) per step.
type Guard struct {
	t    *Table
	s    scanner
	out  []byte
	hist []histStep

	scratch []uint32 // a mask, for the searches
	one     [1]byte
	trials  int // tokens Filter scanned one by one (a work counter for tests)
}

// histStep is the state before an accepted step.
type histStep struct {
	k   mark
	out int
}

// NewGuard returns a guard at the start of an output.
func (t *Table) NewGuard() *Guard {
	g := &Guard{t: t}
	g.s.reset()
	return g
}

// Reset returns the guard to the start of an output, keeping its memory.
func (g *Guard) Reset() {
	g.s.reset()
	g.out = g.out[:0]
	g.hist = g.hist[:0]
}

// Steps returns the number of steps accepted (Accept and AcceptBytes
// calls), the count Rollback works in; it equals the matcher's Tokens()
// when every step is mirrored.
func (g *Guard) Steps() int { return len(g.hist) }

// Output returns the bytes accepted so far. The slice is the guard's own;
// it is valid until the next call that changes the guard.
func (g *Guard) Output() []byte { return g.out }

// Accept advances over token tok as one step. A normal token stands for
// its bytes (see AcceptBytes); a special token (end of generation, a token
// reference) adds nothing to the JSON text but still counts as a step, as
// it does for the matcher.
func (g *Guard) Accept(tok int32) error {
	v := g.t.v
	if tok < 0 || int(tok) >= v.Size() {
		return fmt.Errorf("jsonkeys: token id %d at step %d out of range: the vocabulary has %d tokens", tok, len(g.hist), v.Size())
	}
	if v.Kind(tok) != mask.TokenNormal {
		g.hist = append(g.hist, histStep{g.s.mark(), len(g.out)})
		return nil
	}
	return g.AcceptBytes(v.Token(tok))
}

// AcceptBytes advances over raw bytes as one step. It returns a
// *SyntaxError if they cannot continue a JSON text, or a
// *DuplicateKeyError if they close a key that its object already has; the
// guard is then unchanged.
func (g *Guard) AcceptBytes(b []byte) error {
	i, ev := g.push(b)
	if ev == evNone {
		return nil
	}
	return g.explain(b[:i+1])
}

// push scans b as one step. On a syntax error or a duplicate key it undoes
// the step and returns the offset in b and the event.
func (g *Guard) push(b []byte) (int, event) {
	k := g.s.mark()
	for i, c := range b {
		if ev := g.s.step(c); ev == evError || ev == evDup {
			g.s.undo(k)
			return i, ev
		}
	}
	g.hist = append(g.hist, histStep{k, len(g.out)})
	g.out = append(g.out, b...)
	return len(b), evNone
}

// explain returns the error of the output followed by b, which ends with
// the byte that failed: it scans the whole text again (errors only).
func (g *Guard) explain(b []byte) error {
	var w walker
	w.init()
	if err := w.feed(g.out); err != nil {
		return err // cannot happen: the output scanned before
	}
	if err := w.feed(b); err != nil {
		return err
	}
	d := w.dups[len(w.dups)-1]
	return &DuplicateKeyError{Dup: d}
}

// Rollback undoes the last n steps.
func (g *Guard) Rollback(n int) error {
	if n < 0 || n > len(g.hist) {
		return fmt.Errorf("jsonkeys: cannot roll back %d steps: %d accepted", n, len(g.hist))
	}
	if n == 0 {
		return nil
	}
	h := g.hist[len(g.hist)-n]
	g.s.undo(h.k)
	g.out = g.out[:h.out]
	g.hist = g.hist[:len(g.hist)-n]
	return nil
}

// Clone returns an independent copy of the guard (sharing the Table), for
// a sequence that forks. It costs a copy of the guard's memory.
func (g *Guard) Clone() *Guard {
	c := &Guard{t: g.t, out: slices.Clone(g.out), hist: slices.Clone(g.hist)}
	c.s = scanner{st: g.s.st, kb: slices.Clone(g.s.kb), keys: slices.Clone(g.s.keys), nodes: make([]node, len(g.s.nodes))}
	for i, n := range g.s.nodes {
		c.s.nodes[i] = node{parent: n.parent, obj: n.obj, keys: slices.Clone(n.keys)}
	}
	return c
}

// Filter clears in bits (a mask as Matcher.FillMask fills it: bit i of
// bits[i/32] set iff token i is allowed) the bit of every token whose
// bytes, appended to the output, would close a key equal to an earlier key
// of the same object — at its first closing quote or later in the token
// (`":`, `","a"`, keys spelled with escapes), in any object. It clears
// nothing else.
//
// It returns a *DeadEndError if it cleared the last allowed token (the
// grammar allows only keys the object already has); bits is then all
// zero. Check, after each accepted step, makes that rare; see the package
// documentation.
//
// Cost: nothing allocates. Inside a key of an object that has keys, and
// right after the object's comma: a binary search among the object's keys
// for those that start with the key so far, a map probe for each (up to
// maxHeadLookups), and a bit test for each of the few tokens that can
// close more than one key (Llama-3: 30 inside a key, 3 after a comma).
// Elsewhere: a bit test for each token with at least two quotes (230 on
// Llama-3) outside strings, three (30) inside a string value, four or five
// (3, 0) where no open object has a key; and a scan of the token's bytes
// for each of those the mask allows. On the bench's JSON documents with
// Llama-3 that is 0.1-0.2 µs per step at the median and 2-4 µs at the 99th
// percentile (BenchmarkBenchDocs), at most 70 tokens scanned in a step.
func (g *Guard) Filter(bits []uint32) error {
	t := g.t
	if len(bits) < t.words {
		panic(fmt.Sprintf("jsonkeys: Filter needs %d words, got %d", t.words, len(bits)))
	}
	s := &g.s
	st := &s.st
	var list []int32
	cleared := 0
	keys := 0
	if st.top >= 0 {
		keys = len(s.nodes[st.top].keys)
	}
	switch {
	case st.mode == mString && st.key && st.esc == 0 && st.hi == 0:
		if keys == 0 {
			// The key cannot repeat; a later one in the same token can.
			list = t.atLeast[3]
		} else if n, ok := g.filterHeads(bits, &t.inKey, s.openKey()); ok {
			cleared, list = n, t.inKey.trial
		} else {
			list = t.atLeast[1]
		}
	case st.mode == mString && st.key:
		// Inside an escape: scan every candidate.
		list = t.atLeast[1]
	case st.mode == mKey && keys > 0:
		if n, ok := g.filterHeads(bits, &t.atKey, nil); ok {
			cleared, list = n, t.atKey.trial
		} else {
			list = t.atLeast[2]
		}
	case st.mode == mString && st.keyed > 0:
		list = t.atLeast[3] // close the value, open and close a key
	case st.mode == mString:
		list = t.atLeast[5] // ... two keys of a new object
	case st.keyed > 0:
		list = t.atLeast[2]
	default:
		list = t.atLeast[4]
	}
	for _, tok := range list {
		w, bit := tok>>5, uint32(1)<<(tok&31)
		if bits[w]&bit != 0 && g.closesDup(tok) {
			bits[w] &^= bit
			cleared++
		}
	}
	if cleared > 0 && allZero(bits[:t.words]) {
		return g.deadEnd()
	}
	return nil
}

// filterHeads clears the tokens of index x that close the open key (or
// the key about to open, p empty) as one its object has: it looks up the
// rest of each of the object's keys that start with p among x's heads.
// ok is false, and nothing is done, when more than maxHeadLookups keys
// start with p.
func (g *Guard) filterHeads(bits []uint32, x *keyIndex, p []byte) (cleared int, ok bool) {
	s := &g.s
	ks := s.nodes[s.st.top].keys
	lo, hi := s.prefixed(ks, p)
	if hi-lo > maxHeadLookups {
		return 0, false
	}
	for _, id := range ks[lo:hi] {
		rest := s.key(id)[len(p):]
		if len(rest) > x.maxHead {
			continue
		}
		for _, tok := range x.heads[string(rest)] {
			w, bit := tok>>5, uint32(1)<<(tok&31)
			if bits[w]&bit != 0 {
				bits[w] &^= bit
				cleared++
			}
		}
	}
	return cleared, true
}

// closesDup reports whether the bytes of tok, scanned from the current
// state, close a key that its object already has before any syntax error.
func (g *Guard) closesDup(tok int32) bool {
	g.trials++
	s := &g.s
	k := s.mark()
	dup := false
	for _, c := range g.t.v.Token(tok) {
		ev := s.step(c)
		if ev == evDup {
			dup = true
			break
		}
		if ev == evError {
			break
		}
	}
	s.undo(k)
	return dup
}

func allZero(ws []uint32) bool {
	for _, w := range ws {
		if w != 0 {
			return false
		}
	}
	return true
}

// deadEnd describes the innermost open object as a dead end.
func (g *Guard) deadEnd() *DeadEndError {
	var w walker
	w.init()
	w.feed(g.out)
	e := &DeadEndError{Pointer: w.objectPointer()}
	s := &g.s
	if o := s.innermostObject(); o >= 0 {
		e.Keys = len(s.nodes[o].keys)
	}
	if s.st.mode == mString && s.st.key {
		e.Prefix = string(s.openKey())
	}
	return e
}

// innermostObject returns the innermost open object, or -1.
func (s *scanner) innermostObject() int32 {
	n := s.st.top
	for n >= 0 && !s.nodes[n].obj {
		n = s.nodes[n].parent
	}
	return n
}
