package mask

import (
	"fmt"
	"strings"
	"time"
)

// Dump prints the automaton (tests only).
func (c *Compiled) Dump() string {
	var b strings.Builder
	a := c.a
	for fi, f := range a.frames {
		fmt.Fprintf(&b, "frame %d %s start=%d repeat=%v [%d,%d] root=%v nullable=%v\n", fi, f.name, f.start, f.repeat, f.min, f.max, f.root, f.nullable)
	}
	for q, st := range a.states {
		fmt.Fprintf(&b, "state %d frame=%d flags=%b calls=%v toks=%v:", q, st.frame, st.flags, st.calls, st.toks)
		for cl := 0; cl < a.nc; cl++ {
			if t := a.trans[q*a.nc+cl]; t >= 0 {
				fmt.Fprintf(&b, " [%02x-%02x]->%d", a.classLo[cl], a.classHi[cl], t)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// WalkSizes returns, per top state, the number of accepted tokens and
// cross points of its level-1 walk (tests only).
func (c *Compiled) WalkSizes() []string {
	var out []string
	for q, l := range c.level1 {
		if l == nil {
			continue
		}
		out = append(out, fmt.Sprintf("q%d(f%d): acc=%d cross=%d", q, c.a.states[q].frame, l.full.n, len(l.cross)))
	}
	return out
}

// FrameNames lists the frames (tests only).
func (c *Compiled) FrameNames() []string {
	var out []string
	for _, f := range c.a.frames {
		out = append(out, f.name)
	}
	return out
}

// PlanTrace reports, for the current configuration, the time spent
// computing each plan level (tests only; computes uncached).
func (m *Matcher) PlanTrace() []string {
	var out []string
	for _, n := range m.cfg {
		t0 := time.Now()
		e := m.c.entryFor(n)
		out = append(out, fmt.Sprintf("node s%d f%d cnt%d: level1 %v in=%d cross=%d", n.state, m.c.a.states[n.state].frame, n.cnt, time.Since(t0), e.in.n, len(e.cross)))
		preds := n.preds
		for len(e.cross) > 0 {
			var pid int32 = -1
			for _, p := range m.ar.sets[preds] {
				if p >= 0 {
					pid = p
					break
				}
			}
			if pid < 0 {
				break
			}
			pn := m.ar.nodes[pid]
			t0 = time.Now()
			x := m.childEntry(e, pn)
			out = append(out, fmt.Sprintf("   below s%d f%d: %v in=%d cross=%d (from %d cross points)", pn.state, m.c.a.states[pn.state].frame, time.Since(t0), x.in.n, len(x.cross), len(e.cross)))
			e = x
			preds = pn.preds
		}
	}
	return out
}

// SetMaxStates lowers the state limit for a test; it returns a function
// that restores it.
func SetMaxStates(n int) func() {
	old := maxStates
	maxStates = n
	return func() { maxStates = old }
}

// StateInfo describes a state (tests only).
func (c *Compiled) StateInfo(q int32) string {
	st := &c.a.states[q]
	var b strings.Builder
	fmt.Fprintf(&b, "frame %s flags %b calls %v:", c.a.frames[st.frame].name, st.flags, st.calls)
	for cl := 0; cl < c.a.nc; cl++ {
		if t := c.a.trans[int(q)*c.a.nc+cl]; t >= 0 {
			fmt.Fprintf(&b, " [%q-%q]->%d", c.a.classLo[cl], c.a.classHi[cl], t)
		}
	}
	return b.String()
}
