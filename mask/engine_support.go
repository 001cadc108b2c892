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
	a := m.c.a
	cur := append(m.spCur[:0], m.cfg...)
	next := m.spNext[:0]
	defer func() { m.spCur, m.spNext = cur[:0], next[:0] }()
	for k := 0; k < n; k++ {
		if m.anyCanEnd(cur) {
			return dst, true
		}
		best, bestLen := -1, math.MaxInt
		for c := 0; c < a.nc; c++ {
			m.st.begin()
			m.st.out = m.st.out[:0]
			for _, nd := range cur {
				m.st.stepByte(nd, c)
			}
			if len(m.st.out) == 0 {
				continue
			}
			cand := m.st.merge(m.st.out)
			l := math.MaxInt
			for _, nd := range cand {
				l = min(l, m.stackMinLen(nd))
			}
			if l < bestLen {
				best, bestLen = c, l
				next = append(next[:0], cand...)
			}
		}
		if best < 0 {
			return dst, false
		}
		dst = append(dst, a.classLo[best])
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
	a := m.c.a
	best, bestLen := -1, math.MaxInt
	for c := 0; c < a.nc; c++ {
		m.st.begin()
		m.st.out = m.st.out[:0]
		for _, nd := range m.cfg {
			m.st.stepByte(nd, c)
		}
		if len(m.st.out) == 0 {
			continue
		}
		l := math.MaxInt
		for _, nd := range m.st.merge(m.st.out) {
			l = min(l, m.stackMinLen(nd))
		}
		if l < bestLen {
			best, bestLen = c, l
		}
	}
	if best < 0 {
		return 0, 0, false
	}
	return a.classLo[best], a.classHi[best], true
}
