package mask

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"

	"github.com/structgen/structgen/gbnf"
)

// Fingerprint returns a hash of everything the automaton construction
// produces — byte classes, frames, states with their flags, calls and
// token edges, the transition table, the minimal lengths, the first and
// follow sets, the unminimized state count — and of what the eager part
// precomputed (which states, their token counts and cross points) and
// the compilation's statistics without the times (tests only; call
// before any matcher runs). Two builds of the automaton that give the
// same fingerprint on a grammar produced the same result.
func (c *Compiled) Fingerprint() string {
	h := sha256.New()
	a := c.a
	w := func(vs ...any) {
		for _, v := range vs {
			if err := binary.Write(h, binary.LittleEndian, v); err != nil {
				panic(err)
			}
		}
	}
	str := func(s string) { w(int64(len(s))); h.Write([]byte(s)) }
	w(int64(a.nc), a.classOf[:], a.classLo, a.classHi, int64(a.unminimized))
	w(int64(len(a.frames)))
	for _, f := range a.frames {
		str(f.name)
		str(f.bodyKey)
		w(f.start, f.repeat, f.min, f.max, f.root, f.nullable, f.minLen, f.first_, f.last_)
	}
	w(int64(len(a.states)))
	for _, st := range a.states {
		w(st.frame, st.flags, int64(len(st.calls)), int64(len(st.toks)))
		for _, e := range st.calls {
			w(e.callee, e.ret)
		}
		for _, e := range st.toks {
			w(e.tok, e.neg, e.next)
		}
	}
	// (the transitions as states, -1 for none: fingerprints do not
	// depend on the table's encoding)
	steps := make([]int32, 0, len(a.states)*a.nc)
	for q := range a.states {
		for c := range a.nc {
			steps = append(steps, max(a.step(int32(q), c), -1))
		}
	}
	w(steps, a.minLen)
	for i := range a.frames {
		w(a.first[i][:], a.follow[i][:])
	}
	writeEager(h, c)
	s := c.stats
	fmt.Fprintf(h, "%d %d %d %d %d %d %d %d", s.Frames, s.States, s.Unminimized, s.ByteClasses, s.TopStates, s.EagerStates, s.EagerWork, s.SliceWork)
	return fmt.Sprintf("%x", h.Sum(nil)[:12])
}

// writeEager hashes which states have level-1 data, with the size of
// their token sets and cross points.
func writeEager(h hash.Hash, c *Compiled) {
	for q, l := range c.level1 {
		if l != nil {
			fmt.Fprintf(h, "q%d %d %d %d;", q, l.full.n, len(l.cross), len(l.byCost))
		}
	}
}

// BuildAutomaton lowers g and builds its automaton as CompileWith does,
// without the eager part (tests and benchmarks only); it returns the
// number of states before and after minimization.
func BuildAutomaton(g *gbnf.Grammar, v *Vocab) (states, unminimized int, err error) {
	defs, lw, err := lowerGrammar(g, v, false, nil, 0)
	if err != nil {
		return 0, 0, err
	}
	a, err := buildAutomaton(defs, maxStates/4, nil)
	if err != nil && isStateLimit(err) {
		if defs, _, err = lowerGrammar(g, v, true, lw, 0); err != nil {
			return 0, 0, err
		}
		a, err = buildAutomaton(defs, maxStates, nil)
	}
	if err != nil {
		return 0, 0, err
	}
	return len(a.states), a.unminimized, nil
}
