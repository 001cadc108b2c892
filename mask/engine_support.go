package mask

import "math"

// This file holds what the engine (and its no-model mode) needs from a
// Matcher beyond the core API.

// ShortestPrefix appends to dst the first bytes, at most n, of a shortest
// completion of the output (the bytes ShortestCompletion would return,
// cut at n) and reports whether they reach a complete sentence. It costs
// one pass over the byte classes per byte, so a caller that takes one
// step at a time along a shortest completion pays for one byte, not for
// the whole completion. The result is empty (and complete) where the
// output can end now; it stops early, incomplete, where only a token
// reference could go on.
func (m *Matcher) ShortestPrefix(dst []byte, n int) (b []byte, complete bool) {
	if m.ended {
		return dst, true
	}
	cur := append(m.spCur[:0], m.cfg...)
	next := m.spNext[:0]
	defer func() { m.spCur, m.spNext = cur[:0], next[:0] }()
	for k := 0; k < n; k++ {
		if m.anyCanEnd(cur) {
			return dst, true
		}
		var best int
		best, next = m.shortestClass(cur, next)
		if best < 0 {
			return dst, false
		}
		dst = append(dst, m.c.a.classLo[best])
		cur, next = next, cur
	}
	return dst, m.anyCanEnd(cur)
}

// ShortestStep returns the first step of a shortest completion as a byte
// range: every byte in [lo, hi] behaves the same in the grammar here and
// starts a shortest completion, so a caller may pick any of them (no-model
// mode picks at random instead of always the lowest). ok is false where the
// output can end now or only a token reference can go on. It costs one pass
// over the byte classes.
func (m *Matcher) ShortestStep() (lo, hi byte, ok bool) {
	if m.ended || m.anyCanEnd(m.cfg) {
		return 0, 0, false
	}
	var best int
	best, m.spNext = m.shortestClass(m.cfg, m.spNext[:0])
	if best < 0 {
		return 0, 0, false
	}
	return m.c.a.classLo[best], m.c.a.classHi[best], true
}

// stepClass returns the configuration that a byte of class c leads to from
// cur, or nil where no byte of the class can come next. The result lives in
// the step scratch until the next step.
func (m *Matcher) stepClass(cur []node, c int) []node {
	if next := m.st.stepAll(cur, c); len(next) > 0 {
		return next
	}
	return nil
}

// shortestClass returns the byte class that starts a shortest completion
// from cur (the lowest such class where several tie), with the configuration
// it leads to copied into next[:0]; best is -1 where no byte can come next.
func (m *Matcher) shortestClass(cur, next []node) (best int, _ []node) {
	best, bestLen := -1, int64(math.MaxInt64)
	for c := 0; c < m.c.a.nc; c++ {
		cand := m.stepClass(cur, c)
		if cand == nil {
			continue
		}
		l := int64(math.MaxInt64)
		for _, n := range cand {
			l = min(l, m.stackMinLen(n))
		}
		if l < bestLen {
			best, bestLen = c, l
			next = append(next[:0], cand...)
		}
	}
	return best, next
}

// CanContinue reports whether anything can follow the output: a byte of
// some class or a token reference. Where it is false, a mask allows
// nothing but the end of generation (or nothing: a dead end). It computes
// no mask: at most one pass over the byte classes, stopping at the first
// that steps. The engine asks it to know, before the mask is filled,
// whether a sequence goes on (see engine.WithMaskOverlap). It may be true
// where a mask allows no token but the end all the same: bytes that can
// follow but that no token of the vocabulary starts with.
func (m *Matcher) CanContinue() bool {
	if m.ended {
		return false
	}
	if m.hasTokEdges(m.cfg) {
		return true
	}
	for c := 0; c < m.c.a.nc; c++ {
		if m.stepClass(m.cfg, c) != nil {
			return true
		}
	}
	return false
}
