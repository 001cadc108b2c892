package jsonkeys

import (
	"fmt"

	"github.com/structgen/structgen/mask"
)

// Bounds of the searches over the bytes a matcher allows. A search step
// tries one byte: it steps the matcher and the guard and undoes both; each
// new position also fills a mask to learn which bytes may come next. On
// the Llama-3 vocabulary a step costs 0.3 to 1.5 µs.
const (
	// MaxCheckSteps bounds Check's search: 5 ms at worst on Llama-3
	// (BenchmarkCheck/spent-enum-5000). A fresh key is found in a few
	// steps wherever the grammar allows more than a handful of keys; the
	// bound matters only to prove that a set of names is used up, which
	// takes about one step per node of the names' trie (400 names of 8
	// bytes: 0.8 ms).
	MaxCheckSteps = 4096

	// MaxCompletionSteps bounds ShortestCompletion's search: 6 ms at worst
	// on Llama-3 (BenchmarkShortestCompletion/spent). Where a completion
	// without a duplicate exists within a few extra bytes it takes tens of
	// steps (50-70 µs).
	MaxCompletionSteps = 1 << 14

	// MaxCompletionExtra is how many bytes longer than the grammar's
	// shortest completion a completion found by ShortestCompletion may
	// be. Making a key unused takes one byte in a free key, a few more
	// where the key language is narrow.
	MaxCompletionExtra = 64
)

type result uint8

const (
	dead    result = iota // no way exists
	found                 // a way exists
	deeper                // not decided at this point
	unknown               // the search ran out of steps
)

// byteOrder is the order the searches try bytes in: a quote first (it
// closes a key), characters that read well in a key next, then the rest,
// the backslash (an escape: 2 to 12 bytes) last.
var byteOrder = func() (o [256]byte) {
	first := []byte(`"abcdefghijklmnopqrstuvwxyz0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZ-. `)
	seen := [256]bool{'\\': true}
	n := copy(o[:], first)
	for _, c := range first {
		seen[c] = true
	}
	for c := 0; c < 256; c++ {
		if !seen[c] {
			o[n] = byte(c)
			n++
		}
	}
	o[n] = '\\'
	return o
}()

// Check reports whether the output can still get a key that its object
// does not have, where that is in question: right after a step that left
// the output at a key position of an object with keys (after its ',', or
// inside a key whose characters so far begin one of the object's keys).
// It searches the bytes the matcher m (in step with the guard) allows for
// a way to close the key with an unused name, and returns a *DeadEndError
// if there is none. Everywhere else, and when the search runs out of
// MaxCheckSteps, it returns nil.
//
// Call it after each accepted step, before the step is decoded by the
// model: on a *DeadEndError, roll the step back (matcher and guard), ban
// its token and sample again. With Filter before each step this keeps
// every key position completable: see the package documentation.
//
// Cost: inside a key whose prefix begins none of the object's keys, a
// binary search (about 50 ns); at a key position in question, a search of
// a few steps (a few µs) where a fresh key exists, up to MaxCheckSteps
// where none does. m is used and left as it was.
func (g *Guard) Check(m *mask.Matcher) error {
	s := &g.s
	st := &s.st
	switch {
	case st.mode == mKey:
	case st.mode == mString && st.key:
		ks := s.nodes[st.top].keys
		if len(ks) == 0 {
			return nil
		}
		if st.esc == 0 && st.hi == 0 {
			if lo, hi := s.prefixed(ks, s.openKey()); lo == hi {
				return nil
			}
		}
	default:
		return nil
	}
	budget := MaxCheckSteps
	if g.fresh(m, st.top, &budget) != dead {
		return nil
	}
	return g.deadEnd()
}

// fresh searches for bytes that close the key of object obj with an unused
// name.
func (g *Guard) fresh(m *mask.Matcher, obj int32, budget *int) result {
	var set [8]uint32
	g.allowedBytes(m, &set)
	for _, b := range byteOrder {
		if set[b>>5]&(1<<(b&31)) == 0 {
			continue
		}
		if *budget <= 0 {
			return unknown
		}
		*budget--
		if !g.stepBoth(m, b) {
			continue // a syntax error, or the key closes as one obj has
		}
		r := g.freshAt(obj)
		if r == deeper {
			r = g.fresh(m, obj, budget)
		}
		g.unstepBoth(m)
		if r != dead {
			return r
		}
	}
	return dead
}

// freshAt says whether the scan has settled fresh's question.
func (g *Guard) freshAt(obj int32) result {
	s := &g.s
	st := &s.st
	switch {
	case st.mode == mColon && st.top == obj:
		return found // the key closed, and not as a duplicate
	case st.mode == mString && st.key && st.top == obj && st.esc == 0 && st.hi == 0:
		if lo, hi := s.prefixed(s.nodes[obj].keys, s.openKey()); lo == hi {
			return found // no key of obj starts so: any ending is fresh
		}
	}
	return deeper
}

// allowedBytes sets in set the bytes the matcher allows next.
func (g *Guard) allowedBytes(m *mask.Matcher, set *[8]uint32) {
	t := g.t
	if g.scratch == nil {
		g.scratch = make([]uint32, t.words)
	}
	m.FillMask(g.scratch)
	for b := range 256 {
		ok := false
		if tok := t.byteTok[b]; tok >= 0 {
			ok = g.scratch[tok>>5]&(1<<(tok&31)) != 0
		} else {
			// No token of its own: ask the matcher.
			g.one[0] = byte(b)
			if m.AcceptBytes(g.one[:]) == nil {
				ok = true
				_ = m.Rollback(1)
			}
		}
		if ok {
			set[b>>5] |= 1 << (b & 31)
		}
	}
}

// stepBoth advances the matcher and the guard over byte b, which the
// matcher allows; it returns false, both unchanged, where either rejects
// it (the guard: a syntax error or a duplicate key).
func (g *Guard) stepBoth(m *mask.Matcher, b byte) bool {
	g.one[0] = b
	var err error
	if tok := g.t.byteTok[b]; tok >= 0 {
		err = m.Accept(tok)
	} else {
		err = m.AcceptBytes(g.one[:])
	}
	if err != nil {
		return false
	}
	if _, ev := g.push(g.one[:]); ev != evNone {
		_ = m.Rollback(1)
		return false
	}
	return true
}

func (g *Guard) unstepBoth(m *mask.Matcher) {
	_ = m.Rollback(1)
	_ = g.Rollback(1)
}

// ShortestCompletion returns a shortest byte string that completes the
// output of matcher m to a sentence of its grammar and closes no key that
// its object already has; g must be in step with m. m and g are left as
// they were. The engine feeds it at a token budget instead of
// m.ShortestCompletion, so that a budget never yields a duplicate key.
//
// Where the grammar's own shortest completion closes no duplicate (the
// common case) that is the answer, at the cost of one scan of it.
// Otherwise it searches the bytes m allows, shortest first (iterative
// deepening on the length, pruned by m.MinCompletion), for at most
// MaxCompletionSteps steps and completions up to MaxCompletionExtra bytes
// longer than the grammar's shortest; typically it lengthens the open key
// by one character. It returns a *CompletionError when that finds none,
// or when the grammar's shortest completion needs a token reference; a
// *SyntaxError if the output is not JSON.
func ShortestCompletion(m *mask.Matcher, g *Guard) ([]byte, error) {
	sc, ok := m.ShortestCompletion()
	if !ok {
		return nil, &CompletionError{Reason: "the grammar's shortest completion needs a token reference or is longer than 64 KiB"}
	}
	i, ev := g.push(sc)
	switch ev {
	case evNone:
		_ = g.Rollback(1)
		return sc, nil
	case evError:
		return nil, g.explain(sc[:i+1])
	}
	dup := g.explain(sc[:i+1]).(*DuplicateKeyError).Dup
	budget := MaxCompletionSteps
	var path []byte
	for bound := len(sc); bound <= len(sc)+MaxCompletionExtra; bound++ {
		switch g.complete(m, &path, bound, &budget) {
		case found:
			return path, nil
		case unknown:
			return nil, &CompletionError{Reason: fmt.Sprintf("none of at most %d bytes found in %d search steps (MaxCompletionSteps)", bound, MaxCompletionSteps), Dup: &dup}
		}
	}
	return nil, &CompletionError{Reason: fmt.Sprintf("none exists of at most %d bytes (%d more than the shortest, MaxCompletionExtra)", len(sc)+MaxCompletionExtra, MaxCompletionExtra), Dup: &dup}
}

// complete extends path (the bytes stepped so far) to a completion of at
// most bound bytes that closes no duplicate key.
func (g *Guard) complete(m *mask.Matcher, path *[]byte, bound int, budget *int) result {
	d := len(*path)
	sc, ok := m.ShortestCompletion()
	if !ok || d+len(sc) > bound {
		return dead
	}
	if _, ev := g.push(sc); ev == evNone {
		_ = g.Rollback(1)
		*path = append(*path, sc...)
		return found
	}
	var set [8]uint32
	g.allowedBytes(m, &set)
	// The shortest completion's first byte first, then byteOrder.
	try := func(b byte) result {
		if set[b>>5]&(1<<(b&31)) == 0 {
			return dead
		}
		set[b>>5] &^= 1 << (b & 31)
		if *budget <= 0 {
			return unknown
		}
		*budget--
		if !g.stepBoth(m, b) {
			return dead
		}
		r := dead
		if d+1+m.MinCompletion() <= bound {
			*path = append(*path, b)
			r = g.complete(m, path, bound, budget)
			if r != found {
				*path = (*path)[:d]
			}
		}
		g.unstepBoth(m)
		return r
	}
	if len(sc) > 0 {
		if r := try(sc[0]); r != dead {
			return r
		}
	}
	for _, b := range byteOrder {
		if r := try(b); r != dead {
			return r
		}
	}
	return dead
}
