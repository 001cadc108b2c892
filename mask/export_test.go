package mask

import (
	"fmt"
	"os"
	"strings"
	"testing"
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
			if t := a.step(int32(q), cl); t >= 0 {
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

// SetMaxStates lowers the state limit for a test; it returns a function
// that restores it.
func SetMaxStates(n int) func() {
	old := maxStates
	maxStates = n
	return func() { maxStates = old }
}

// BigStates lists states whose level-1 set is larger than n (tests only).
func (c *Compiled) BigStates(n int) []string {
	var out []string
	for q, l := range c.level1 {
		if l == nil || l.full.n < n {
			continue
		}
		st := &c.a.states[q]
		var b strings.Builder
		fmt.Fprintf(&b, "q%d frame %s acc %d calls %d top %v:", q, c.a.frames[st.frame].name, l.full.n, len(st.calls), st.flags&stTop != 0)
		k := 0
		for cl := 0; cl < c.a.nc && k < 8; cl++ {
			if t := c.a.step(int32(q), cl); t >= 0 {
				fmt.Fprintf(&b, " [%q-%q]->%d", c.a.classLo[cl], c.a.classHi[cl], t)
				k++
			}
		}
		out = append(out, b.String())
	}
	return out
}

func TestMain(m *testing.M) {
	// Every automaton built by the tests is minimized both ways.
	verifyMinimize = true
	os.Exit(m.Run())
}

// SetNoBulk turns the walkers' bulk acceptance of self-loop subtrees off
// (or on again) for a test; it returns a function that restores it.
func SetNoBulk(off bool) func() {
	old := noBulk
	noBulk = off
	return func() { noBulk = old }
}

// EagerSet lists the states whose level-1 data the eager part of the
// compilation computed (tests only; call before any matcher runs).
func (c *Compiled) EagerSet() []int32 {
	var out []int32
	for q, l := range c.level1 {
		if l != nil {
			out = append(out, int32(q))
		}
	}
	return out
}

// SetNoExitMemo makes every state that uses a slice walk its loop's exits
// itself (see sliceExitsOf) and returns a function restoring the setting.
func SetNoExitMemo(off bool) func() {
	old := noExitMemo
	noExitMemo = off
	return func() { noExitMemo = old }
}

// SetNoRegions turns regions (regionFor) off or on; it returns a function
// that restores the setting.
func SetNoRegions(off bool) func() {
	old := noRegions
	noRegions = off
	return func() { noRegions = old }
}

// RegionStates returns how many states take their level 1 from a region
// (regionSlice).
func (c *Compiled) RegionStates() int {
	n := 0
	for _, m := range c.sliceOf {
		if m > 0 && c.sliceUses[m-1].region {
			n++
		}
	}
	return n
}

// SetRootExitLimit sets the bound of the eager phase's memo of root-exit
// walks (maxRootExitBytes) and returns a function restoring it.
func SetRootExitLimit(n int64) func() {
	old := rootExitLimit
	rootExitLimit = n
	return func() { rootExitLimit = old }
}

// SetMinBelowNodes sets the smallest subtree whose walk below a cross
// point is taken from a slice below its node (minBelowNodes) and returns
// a function restoring it.
func SetMinBelowNodes(n int32) func() {
	old := minBelowNodes
	minBelowNodes = n
	return func() { minBelowNodes = old }
}

// BelowWalks returns the number of walks below cross points taken from
// slices below their nodes so far.
func (c *Compiled) BelowWalks() int64 { return c.belowWalks.Load() }

// SetNoSlices turns the vocabulary slices off (or on) and returns a
// function restoring the setting.
func SetNoSlices(off bool) func() {
	old := noSlices
	noSlices = off
	return func() { noSlices = old }
}

// SliceStates returns the number of states whose level 1 comes from a
// vocabulary slice (tests only).
func (c *Compiled) SliceStates() int {
	n := 0
	for _, m := range c.sliceOf {
		if m > 0 {
			n++
		}
	}
	return n
}

// OpenSliceStates returns how many states take their level 1 from an
// open chain (openSlice), and how many of those are capped.
func (c *Compiled) OpenSliceStates() (open, capped int) {
	for _, m := range c.sliceOf {
		if m > 0 && c.sliceUses[m-1].open {
			open++
			if c.sliceUses[m-1].capped {
				capped++
			}
		}
	}
	return open, capped
}

// MidSliceStates returns how many states take their level 1 from a
// mid-character slice (midSlice).
func (c *Compiled) MidSliceStates() int {
	n := 0
	for _, m := range c.sliceOf {
		if m > 0 && c.sliceUses[m-1].sl.Need > 0 {
			n++
		}
	}
	return n
}

// StepWork returns the work (MaxStepWork units) of the matcher's last
// step: the last byte of its last Accept or AcceptBytes, or its last
// FillMask.
func (m *Matcher) StepWork() int { return m.work }

// StackSize returns the size of the matcher's arena (MaxStackSize units).
func (m *Matcher) StackSize() int { return m.ar.size() }

// HistoryLen returns the number of configurations the matcher keeps.
func (m *Matcher) HistoryLen() int { return len(m.hist) }

// CollectAlways makes matchers compact their stack after every step (as
// they do when it has doubled); it returns a function that restores the
// default.
func CollectAlways() func() {
	old := minCollect
	minCollect = -1
	return func() { minCollect = old }
}

// VerifyMinimize turns the check of minimization against Moore's
// algorithm (on in this package's tests; quadratic on long chains) on or
// off; it returns a function that restores the setting.
func VerifyMinimize(on bool) func() {
	old := verifyMinimize
	verifyMinimize = on
	return func() { verifyMinimize = old }
}

// MaxCalls returns the most call edges of one automaton state: a node
// pushes at most this many frames per step.
func (c *Compiled) MaxCalls() int {
	n := 0
	for _, st := range c.a.states {
		n = max(n, len(st.calls))
	}
	return n
}

// SetPerNodeCross sets the number of cross points, and the work of a
// walk of them, from which deeper levels below the same class key become
// unions of per-cross-point walks, returning a function restoring them.
func SetPerNodeCross(n int, work int64) func() {
	oldN, oldWork := perNodeCross, perNodeMinWork
	perNodeCross, perNodeMinWork = n, work
	return func() { perNodeCross, perNodeMinWork = oldN, oldWork }
}

// NodeLevels returns the number of per-cross-point levels made so far.
func (c *Compiled) NodeLevels() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.nodeLevels)
}

// SetEagerBatchHook sets a function called at every point where a
// deferred eager phase (Precompute) may let computations on first use go
// first, and returns a function removing it.
func SetEagerBatchHook(f func(c *Compiled)) func() {
	eagerBatchHook = f
	return func() { eagerBatchHook = nil }
}

// LazyWaiting is how many computations on first use wait for the lock.
func (c *Compiled) LazyWaiting() int { return int(c.lazyWaiting.Load()) }

// Yields is how many times Precompute let them go first.
func (c *Compiled) Yields() int { return c.yields }

// SetNoDenseAdd turns off (or on again) the bitset form of a slice's
// listed tokens, added whole or by first bytes, for a test; it returns a
// function that restores it.
func SetNoDenseAdd(off bool) func() {
	old := noDenseAdd
	noDenseAdd = off
	return func() { noDenseAdd = old }
}

// SetDenseIDs sets the least combining cost of a plan kept dense
// (plan.dense; 0: every plan on its second use, 1<<30: none) and returns
// a function that restores it.
func SetDenseIDs(n int) func() {
	old := denseIDs
	denseIDs = n
	return func() { denseIDs = old }
}

// DenseWords returns the words of the matcher's dense plan masks.
func (m *Matcher) DenseWords() int { return m.dense }

// SetNoTailGroups turns the tail groups of the lowering (markTailGroups)
// off (or on) and returns a function that restores the setting.
func SetNoTailGroups(off bool) func() {
	old := noTailGroups
	noTailGroups = off
	return func() { noTailGroups = old }
}

// SetMaxPreparedSlices sets maxPreparedSlices and returns a function
// that restores it.
func SetMaxPreparedSlices(n int) func() {
	old := maxPreparedSlices
	maxPreparedSlices = n
	return func() { maxPreparedSlices = old }
}

// OpenSlicesReady returns how many of the states left to first use have
// an open chain whose slice the vocabulary holds already, of those that
// have one (asking for a missing slice makes it).
func (c *Compiled) OpenSlicesReady() (ready, total int) {
	c.lazyMu.Lock()
	defer c.lazyMu.Unlock()
	for q := range c.level1 {
		if c.level1[q] != nil {
			continue
		}
		oc := c.openChain(int32(q))
		if oc == nil || oc.n < minOpenChain {
			continue
		}
		total++
		var work int64
		c.v.Slice(oc.class, &work)
		if work == 0 {
			ready++
		}
	}
	return ready, total
}

// SetNoEnterSkip makes the stepper push every call's frame, also where
// it cannot take the byte (entersOn), for a test; it returns a function
// that restores the setting.
func SetNoEnterSkip(off bool) func() {
	old := noEnterSkip
	noEnterSkip = off
	return func() { noEnterSkip = old }
}
