package mask

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// A Matcher follows one sequence through a Compiled grammar: it accepts
// tokens (or raw bytes), says which tokens may come next, and can roll
// back. A Matcher is not safe for concurrent use; make one per sequence
// (NewMatcher is cheap). After warm-up (the first visit of each grammar
// context), FillMask and Accept do not allocate.
type Matcher struct {
	c  *Compiled
	ar *arena
	st stepper

	cfg     []node     // current configuration (a view into hist)
	histBuf []node     // configurations of the steps Rollback can reach, back to back
	hist    []histStep // one per accepted token / byte run, plus the one before the oldest (at most 2·MaxRollback+1)
	ended   bool       // an end-of-generation token was accepted
	tokens  int        // number of tokens accepted
	err     error      // sticky: a limit FillMask reached in this configuration
	gcAt    int        // arena size at which the next collection runs
	work    int        // the work (MaxStepWork units) of the last step: the last byte of Accept or AcceptBytes, or FillMask

	plans    map[planKey]*plan
	dense    int                // the plans' dense masks, words (plan.dense; at most maxDenseBytes/4)
	seen     map[*tokenSet]bool // FillMask: sets already in the mask
	pseen    map[*tokenSet]bool // planFor: sets already in the plan
	visit    map[visitKey]bool
	keep     []int32 // FillMask: excluded ids of a set already in the mask (tokenSet.orExclInto)
	mask     []uint32
	sets     []*tokenSet
	bufA     []node
	bufB     []node
	crossKey []byte // childEntry's key
	spCur    []node // ShortestPrefix scratch (engine_support.go)
	spNext   []node

	// eagerWork, for the eager phase's matcher (precomputeDeeper): where
	// the work of the deeper levels it computes goes, instead of LazyWork.
	eagerWork *int64
}

type histStep struct {
	off, n int32
	ended  bool
}

// A plan is the list of token sets whose union is the mask of one stack.
type plan struct {
	sets []*tokenSet
	// dense is the union itself, kept once the plan has been the whole
	// configuration DenseAfter times and its sets cost more to combine
	// than a copy (denseIDs): a copy of a bitset over the vocabulary is
	// one pass the processor does in wide moves (120 ns for Llama-3's
	// 4,008 words on stop 51's VM), where a listed id costs a write of
	// its own (about 0.9 ns: 1.4 µs for the 1,549 ids after a number in
	// bench case 05) and ORing a bitset a pass of 950 ns.
	dense []uint32
	uses  int32 // FillMask calls with the plan the whole configuration, up to DenseAfter+1
}

// Dense plan masks (plan.dense): made on a plan's DenseAfter-th use as the
// whole configuration, where combining its sets costs at least denseIDs
// listed ids (a bitset ORed after the first counts as a quarter of its
// words), up to maxDenseBytes per matcher (1 MiB: 64 masks of Llama-3;
// the first plans to qualify keep them). Not on the second use: making
// one costs an allocation (a step of about 3 µs with the heap's pages
// touched, 45 µs where they fault in), and on a fresh compile's first
// pass over the bench documents many plans come back only a few times:
// 01 made 36 a pass on the second use, its cold p99 2.2-2.5 -> 3.7-4.2
// µs; 20 on the fourth, its p99 43-45 µs without the heap touched; 12
// on the eighth, 16 µs untouched — the plans that loops come back to.
const maxDenseBytes = 1 << 20

// DenseAfter is the use, as a matcher's whole configuration, on which
// the matcher keeps a stack's mask dense (see FillMask and the comment
// above): it allocates for it then (a bitset over the vocabulary, up to
// 1 MiB in all per matcher), and a replay after that allocates nothing.
const DenseAfter = 8

// denseIDs is the least combining cost, in listed ids, of a plan kept
// dense (a variable for tests).
var denseIDs = 512

// combineCost is the cost of combining p's sets into a mask of the given
// words, in listed ids (see plan.dense).
func (p *plan) combineCost(words int) int {
	n, bitsets := 0, 0
	for _, s := range p.sets {
		if s.bits != nil {
			bitsets++
		}
		n += len(s.excl) + len(s.list)
	}
	if bitsets > 1 {
		n += (bitsets - 1) * words / 4
	}
	return n
}

// planAlloc is a plan and the first sets of its list (newPlan).
type planAlloc struct {
	p    plan
	sets [4]*tokenSet
}

// NewMatcher returns a matcher at the start of the grammar.
func (c *Compiled) NewMatcher() *Matcher {
	m := &Matcher{
		c:     c,
		ar:    newArena(),
		plans: make(map[planKey]*plan),
		seen:  make(map[*tokenSet]bool),
		pseen: make(map[*tokenSet]bool),
		visit: make(map[visitKey]bool),
	}
	m.st = stepper{a: c.a, v: c.v, ar: m.ar}
	m.gcAt = minCollect
	m.Reset()
	return m
}

// Limits of a Matcher. Each bounds one resource of one sequence whatever
// the grammar and the input; a step that would exceed one fails with a
// *LimitError naming it and the step, and leaves the matcher unchanged.
// Real grammars stay orders of magnitude below them (see the package
// documentation's table for the measurements).
const (
	// MaxStepWork bounds the work of one step: advancing the
	// configuration over one byte (Accept and AcceptBytes count each byte
	// of their input separately), or computing the mask plans of a
	// configuration met for the first time (FillMask; a visit of a
	// (level, stack node) pair and a first-use walk of the trie weigh
	// more, see planVisitCost). A unit is one stack node merged or one
	// predecessor or set member looked at, a few nanoseconds: a byte at
	// the budget takes 2–3 ms, a mask 3–30 ms. The bench grammars need
	// at most ten units per byte and per mask; the budget is reached only
	// by grammars ambiguous enough that the parses of the output so far
	// cannot be merged (s ::= "a" s s | "" at byte 513).
	MaxStepWork = 1 << 18
	// MaxStackSize bounds the graph-structured stack a matcher keeps:
	// nodes plus predecessor-set members reachable from the
	// configurations Rollback can reach. With their indexes they take
	// about 60 bytes each, and the arena is collected when it has doubled,
	// so a matcher's stack peaks at about 120 MB (measured: 500,000
	// nested brackets of root ::= "[" root "]" | "a" reach the limit after
	// 1.5 s with a live heap of 115 MB). Queries that walk the whole stack
	// (CanEnd, MinCompletion, Forced) stay within a few milliseconds.
	// Real grammars keep a few hundred: JSON 1,000 levels deep keeps
	// about 2,000.
	MaxStackSize = 1 << 20
	// MaxRollback is the number of steps Rollback can undo. Older
	// configurations are dropped as the output grows, so that a matcher's
	// memory does not grow with the length of its output. The engine
	// undoes at most one sampled token and its jump-forward tokens (at
	// most 513).
	MaxRollback = 1024
)

// minCollect is the arena size below which the matcher never collects:
// real grammars stay below it for the whole of a long output. Tests set
// it negative to collect after every step.
var minCollect = 1 << 16

// LimitError reports a matcher step that would exceed one of the limits
// MaxConfig, MaxStepWork or MaxStackSize. The matcher is unchanged (for
// FillMask: it allows nothing, and Accept returns the same error until a
// Rollback or Reset). errors.Is(err, ErrTooAmbiguous) holds.
type LimitError struct {
	Limit  string // "MaxConfig", "MaxStepWork" or "MaxStackSize"
	Max    int    // the limit's value
	Op     string // "Accept", "AcceptBytes" or "FillMask"
	Index  int    // the step: the number of tokens accepted before it
	Offset int    // the byte of the step's input (the token's or AcceptBytes's) at which it happened; -1 when not at a byte (FillMask, a token reference)
	Token  int32  // Accept: the token; else -1
}

func (e *LimitError) Error() string {
	what := "computing the mask"
	switch e.Op {
	case "Accept":
		what = fmt.Sprintf("accepting token %d", e.Token)
	case "AcceptBytes":
		what = "accepting bytes"
	}
	at := ""
	if e.Offset >= 0 {
		at = fmt.Sprintf(", byte %d of its input", e.Offset)
	}
	var unit string
	switch e.Limit {
	case "MaxConfig":
		unit = "simultaneous parse states"
	case "MaxStepWork":
		unit = "units of work for one step"
	case "MaxStackSize":
		unit = "live parse-stack nodes and links"
	}
	return fmt.Sprintf("mask: grammar too ambiguous: %s at index %d%s needs more than %d %s (limit %s)", what, e.Index, at, e.Max, unit, e.Limit)
}

// Is reports whether target is ErrTooAmbiguous.
func (e *LimitError) Is(target error) bool { return target == ErrTooAmbiguous }

// Err returns the limit error FillMask reached in the current
// configuration (then FillMask allows nothing and Accept returns it), or
// nil.
func (m *Matcher) Err() error { return m.err }

// RejectError is returned by Accept and AcceptBytes for input the grammar
// does not allow at that point. The matcher's state is unchanged.
type RejectError struct {
	Token  int32  // the token id, or -1 for AcceptBytes
	Index  int    // index of the token in the accepted sequence (tokens accepted before it)
	Offset int    // AcceptBytes: offset of the first byte that was rejected
	Text   []byte // the token's bytes (AcceptBytes: the input)
	Reason string
}

func (e *RejectError) Error() string {
	if e.Token < 0 {
		return fmt.Sprintf("mask: bytes rejected at offset %d of input %s (after %d tokens): %s", e.Offset, strconv.Quote(string(e.Text)), e.Index, e.Reason)
	}
	return fmt.Sprintf("mask: token %d %s at index %d rejected: %s", e.Token, strconv.Quote(string(e.Text)), e.Index, e.Reason)
}

// Words returns the length in uint32 words of a mask for this grammar's
// vocabulary: (Vocab.Size()+31)/32.
func (c *Compiled) Words() int { return c.prep.words }

// FillMask sets bit i of bits (bits[i/32] & (1<<(i%32))) iff token i is
// allowed now. bits must hold at least (V+31)/32 words; only those are
// written. After an end-of-generation token nothing is allowed. The mask
// of a stack the matcher comes back to is kept whole from its
// DenseAfter-th use where combining its sets costs more than a copy.
func (m *Matcher) FillMask(bits []uint32) {
	w := m.c.prep.words
	if len(bits) < w {
		panic(fmt.Sprintf("mask: FillMask needs %d words, got %d", w, len(bits)))
	}
	bits = bits[:w]
	if m.ended || m.err != nil {
		clear(bits)
		return
	}
	// Collect the sets of every stack; apply one with exclusions (or the
	// first dense one) by copying, then OR the rest.
	m.sets = m.sets[:0]
	dedup := len(m.cfg) > 4
	if dedup {
		clear(m.seen)
	}
	m.st.work = 0
	if len(m.cfg) > sharedPlanTops {
		// Many tops: their stacks share most of what lies below, so one
		// walk of the levels for all of them (not cached per top) does
		// what a plan per top would do many times over.
		clear(m.visit)
		for _, n := range m.cfg {
			key := planKey{n.state, m.c.classKey(n).cls, n.preds}
			if p, ok := m.plans[key]; ok {
				for _, s := range p.sets {
					m.addMaskSet(s, dedup)
				}
				continue
			}
			e := m.c.entryFor(n)
			m.addMaskSet(e.in, dedup)
			for _, s := range e.also {
				m.addMaskSet(s, dedup)
			}
			if !m.levels(e, n.preds, nil) {
				m.err = m.limit("MaxStepWork", "FillMask", -1, -1)
				clear(bits)
				return
			}
		}
	} else if len(m.cfg) == 1 {
		// One stack: its plan's mask, kept dense where that pays.
		p := m.planFor(m.cfg[0])
		if p == nil {
			m.err = m.limit("MaxStepWork", "FillMask", -1, -1)
			clear(bits)
			return
		}
		if p.dense != nil {
			m.work = m.st.work
			copy(bits, p.dense)
			m.addEOG(bits)
			return
		}
		if p.uses <= DenseAfter {
			p.uses++ // (past DenseAfter once decided: not asked again)
		}
		if p.uses == DenseAfter && (m.dense+len(bits))*4 <= maxDenseBytes && p.combineCost(len(bits)) >= denseIDs {
			m.work = m.st.work
			m.combine(bits, p.sets)
			p.dense = slices.Clone(bits)
			m.dense += len(bits)
			m.addEOG(bits)
			return
		}
		m.sets = append(m.sets, p.sets...)
	} else {
		for _, n := range m.cfg {
			p := m.planFor(n)
			if p == nil {
				m.err = m.limit("MaxStepWork", "FillMask", -1, -1)
				clear(bits)
				return
			}
			for _, s := range p.sets {
				if dedup {
					if m.seen[s] {
						continue
					}
					m.seen[s] = true
				}
				m.sets = append(m.sets, s)
			}
		}
	}
	m.work = m.st.work
	m.combine(bits, m.sets)
	m.addEOG(bits)
}

// combine overwrites bits with the union of sets: one with exclusions (or
// the first dense one) copied, the others ORed in.
func (m *Matcher) combine(bits []uint32, sets []*tokenSet) {
	var first *tokenSet
	for _, s := range sets {
		if s.excl != nil {
			if first == nil || first.excl == nil {
				first = s
			}
		} else if first == nil && s.bits != nil {
			first = s
		}
	}
	if first != nil {
		first.copyInto(bits)
	} else {
		clear(bits)
	}
	for _, s := range sets {
		if s == first {
			continue
		}
		if s.excl != nil {
			s.orExclInto(bits, &m.keep)
			continue
		}
		s.orInto(bits)
	}
}

// addEOG allows the end-of-generation tokens where the configuration can
// end.
func (m *Matcher) addEOG(bits []uint32) {
	if m.canEnd() {
		for _, id := range m.c.v.EOG() {
			setBit(bits, id)
		}
	}
}

// Apply sets the logits of disallowed tokens to -Inf. logits must hold
// one value per token id (V values).
func (m *Matcher) Apply(logits []float32) {
	if m.mask == nil {
		m.mask = make([]uint32, m.c.prep.words)
	}
	m.FillMask(m.mask)
	ninf := float32(math.Inf(-1))
	for wi, word := range m.mask {
		if word == math.MaxUint32 {
			continue
		}
		base := wi * 32
		end := min(base+32, len(logits))
		if word == 0 {
			for i := base; i < end; i++ {
				logits[i] = ninf
			}
			continue
		}
		for i := base; i < end; i++ {
			if word&(1<<uint(i-base)) == 0 {
				logits[i] = ninf
			}
		}
	}
}

// planKey identifies the plan of a stack top: its state, counter class
// and predecessors (nodes that differ only in counters beyond the token
// horizon share a plan).
type planKey struct {
	state, cls, preds int32
}

// Weights of the mask's work in MaxStepWork units, which are calibrated
// on stepping a stack node (a few nanoseconds): visiting a (level, stack
// node) pair costs map operations, and the first use of a level walks
// part of the token trie (tens of microseconds; bulk acceptance makes the
// walk much cheaper than the subtrees below its cross points). A cold
// mask of a real grammar needs a handful of walks; a mask at the budget
// takes a few milliseconds.
const (
	planVisitCost = 16
	levelWalkCost = 1024
)

type visitKey struct {
	e *ctxEntry
	p int32
}

// planFor returns the cached plan of stack top n: its level-1 set and,
// while cross points remain, the levels below it through every path of
// the graph-structured stack.
//
// Its work (stack nodes and predecessors visited) counts against
// MaxStepWork, from m.st.work on; it returns nil when the budget runs out.
func (m *Matcher) planFor(n node) *plan {
	key := planKey{n.state, m.c.classKey(n).cls, n.preds}
	if p, ok := m.plans[key]; ok {
		return p
	}
	return m.newPlan(n, key)
}

// newPlan computes and caches the plan of stack top n (planFor's slow
// path).
func (m *Matcher) newPlan(n node, key planKey) *plan {
	// (The plan with room for a few sets, in one allocation: most
	// plans have one to four.)
	pa := &planAlloc{}
	p := &pa.p
	p.sets = pa.sets[:0]
	e := m.c.entryFor(n)
	clear(m.pseen)
	clear(m.visit)
	m.addPlanSet(p, e.in)
	for _, s := range e.also {
		m.addPlanSet(p, s)
	}
	if !m.levels(e, n.preds, p) {
		return nil
	}
	m.plans[key] = p
	return p
}

// sharedPlanTops is the most stack tops FillMask gives a cached plan
// each; beyond, one walk of the levels serves them all.
const sharedPlanTops = 8

// addMaskSet adds s to the sets of the mask being filled (dedup: once).
func (m *Matcher) addMaskSet(s *tokenSet, dedup bool) {
	if s.n == 0 {
		return
	}
	s = s.forMask()
	if dedup {
		if m.seen[s] {
			return
		}
		m.seen[s] = true
	}
	m.sets = append(m.sets, s)
}

// addPlanSet adds s to plan p, once.
func (m *Matcher) addPlanSet(p *plan, s *tokenSet) {
	s = s.forMask()
	if s.n > 0 && !m.pseen[s] {
		m.pseen[s] = true
		p.sets = append(p.sets, s)
	}
}

// levels adds the sets of the levels below entry e through the stacks of
// the predecessor set preds: to plan p, or to the mask being filled when
// p is nil. (Level, stack node) pairs already in m.visit are skipped. Its
// work counts against MaxStepWork from m.st.work on; it reports false
// when the budget runs out.
func (m *Matcher) levels(e *ctxEntry, preds int32, p *plan) bool {
	if len(e.cross) == 0 {
		return true
	}
	m.st.work += len(m.ar.sets[preds])
	for _, pid := range m.ar.sets[preds] {
		if m.st.work > MaxStepWork {
			return false
		}
		if pid < 0 || m.visit[visitKey{e, pid}] {
			continue
		}
		m.visit[visitKey{e, pid}] = true
		m.st.work += planVisitCost
		pn := m.ar.nodes[pid]
		x := m.childEntry(e, pn)
		if p != nil {
			m.addPlanSet(p, x.in)
			for _, s := range x.also {
				m.addPlanSet(p, s)
			}
		} else {
			m.addMaskSet(x.in, true)
			for _, s := range x.also {
				m.addMaskSet(s, true)
			}
		}
		if !m.levels(x, pn.preds, p) {
			return false
		}
	}
	return true
}

// childEntry returns the next level below entry e for frame node pn,
// computing it on first use. The level depends only on e's cross points
// and pn's class, so entries that agree in those share it (c.byCross):
// the levels of a deep stack of equal frames are then a few entries, not
// one per depth, which keeps planFor's walk linear in the stack.
func (m *Matcher) childEntry(e *ctxEntry, pn node) *ctxEntry {
	c := m.c
	k := c.classKey(pn)
	c.mu.Lock()
	x := e.next[k]
	c.mu.Unlock()
	if x != nil {
		return x
	}
	m.crossKey = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(m.crossKey[:0], uint32(k.state)), uint32(k.cls))
	for _, u := range e.cross {
		m.crossKey = binary.LittleEndian.AppendUint32(m.crossKey, uint32(u))
	}
	c.mu.Lock()
	x = c.byCross[string(m.crossKey)]
	if x != nil {
		if e.next == nil {
			e.next = make(map[ctxKey]*ctxEntry)
		}
		e.next[k] = x
	}
	c.mu.Unlock()
	if x != nil {
		return x
	}
	// A cross point at the trie root means the frame above pn pops before
	// the token starts: the token is then pn's own business, as if pn
	// were the top (its level 1, precomputed).
	rest := e.cross
	hasRoot := len(rest) > 0 && rest[0] == 0
	if hasRoot {
		rest = rest[1:]
	}
	var err error
	union := false
	if len(rest) >= perNodeCross {
		c.mu.Lock()
		union = c.heavyLevels[k]
		c.mu.Unlock()
	}
	if union {
		x, err = m.unionLevel(rest, pn, k)
	} else if len(rest) > 0 {
		w, _ := c.deepWalkers.Get().(*walker)
		if w == nil {
			w = newWalker(c)
			w.deep = true
		}
		// A first-use walk counts against FillMask's MaxStepWork.
		m.st.work += levelWalkCost
		t0 := time.Now()
		w0 := w.units()
		w.take()
		x, err = w.runLevel(rest, pn)
		m.bookSliceWork(w)
		w.release()
		m.firstUse(w.units()-w0, 1, t0)
		if len(rest) >= perNodeCross && w.units()-w0 >= perNodeMinWork {
			// Expensive: other cross points below pn's class (another
			// counter class of the entry above) are walked per cross
			// point from now on.
			c.mu.Lock()
			if c.heavyLevels == nil {
				c.heavyLevels = map[ctxKey]bool{}
			}
			c.heavyLevels[k] = true
			c.mu.Unlock()
		}
		c.deepWalkers.Put(w)
	} else {
		x = &ctxEntry{in: emptySet}
	}
	if err != nil {
		// Too ambiguous to enumerate: allow nothing more from here (the
		// stack stays valid for Accept, which reports the error).
		x = &ctxEntry{in: emptySet}
	}
	if hasRoot {
		pe := c.entryBooked(pn, m.eagerWork)
		x.also = append(append(x.also, pe.in), pe.also...)
		if len(pe.cross) > 0 {
			cross := append(slices.Clone(x.cross), pe.cross...)
			slices.Sort(cross)
			x.cross = slices.Compact(cross)
		}
	}
	c.mu.Lock()
	if old := e.next[k]; old != nil {
		x = old
	} else {
		if old := c.byCross[string(m.crossKey)]; old != nil {
			x = old
		} else {
			if c.byCross == nil {
				c.byCross = make(map[string]*ctxEntry)
			}
			c.byCross[string(m.crossKey)] = x
		}
		if e.next == nil {
			e.next = make(map[ctxKey]*ctxEntry)
		}
		e.next[k] = x
	}
	c.mu.Unlock()
	return x
}

// The level below cross points is the union of one walk per cross point
// (see unionLevel), instead of one walk of them all, once a walk of at
// least perNodeCross cross points (other than the root) below the same
// class key cost perNodeMinWork units: cheaper walks are cheaper to
// repeat for another set of cross points than a union (a 128k-bit set)
// and a walk per cross point. Variables for tests.
var (
	perNodeCross         = 8
	perNodeMinWork int64 = 16_384
)

type nodeLevelKey struct {
	k    ctxKey
	node int32
}

// unionLevel returns the level below cross points rest in frame node pn
// (class key k) as the union of one level per cross point, each walked on
// first use and cached (c.nodeLevels). The cross points of a repetition's
// entry differ between its counter classes only by a few deep nodes (the
// tokens that complete many iterations), so each new class then costs a
// union of cached sets, not a new walk of the subtrees of all its cross
// points (one pass over most of the trie per count of a word-limit
// pattern).
func (m *Matcher) unionLevel(rest []int32, pn node, k ctxKey) (*ctxEntry, error) {
	c := m.c
	t0 := time.Now()
	var units, count int64
	defer func() { m.firstUse(units, count, t0) }()
	parts := make([]*ctxEntry, len(rest))
	var w *walker
	for i, u := range rest {
		key := nodeLevelKey{k, u}
		c.mu.Lock()
		e := c.nodeLevels[key]
		c.mu.Unlock()
		if e == nil {
			if w == nil {
				w, _ = c.deepWalkers.Get().(*walker)
				if w == nil {
					w = newWalker(c)
					w.deep = true
				}
				// A first-use walk counts against FillMask's MaxStepWork.
				m.st.work += levelWalkCost
			}
			w0 := w.units()
			w.take()
			var err error
			e, err = w.runLevel([]int32{u}, pn)
			m.bookSliceWork(w)
			w.release()
			units += w.units() - w0
			count++
			if err != nil {
				c.deepWalkers.Put(w)
				return nil, err
			}
			c.mu.Lock()
			if old := c.nodeLevels[key]; old != nil {
				e = old
			} else {
				if c.nodeLevels == nil {
					c.nodeLevels = map[nodeLevelKey]*ctxEntry{}
				}
				c.nodeLevels[key] = e
			}
			c.mu.Unlock()
		}
		parts[i] = e
	}
	if w != nil {
		c.deepWalkers.Put(w)
	}
	// The union, counted as first-use work.
	scr := c.prep.getScratch()
	b := scr.acc
	var work int64
	var cross []int32
	for _, e := range parts {
		work += e.in.work()
		b.addSet(e.in)
		cross = append(cross, e.cross...)
	}
	in := b.build()
	c.prep.putScratch(scr)
	units += work + in.work()
	slices.Sort(cross)
	return &ctxEntry{in: &in, cross: slices.Compact(cross)}, nil
}

// bookSliceWork books the work of the slices below nodes that walker w
// made (see belowSlice): vocabulary work, not the walk's, counted as the
// eager phase's slice work (CompileStats.SliceWork) for its matcher, else
// as first-use work.
func (m *Matcher) bookSliceWork(w *walker) {
	x := w.takeSliceWork()
	switch {
	case x == 0:
	case m.eagerWork != nil:
		m.c.sliceWork += x
	default:
		m.c.lazyWork.Add(x)
	}
}

// firstUse books the work of count computations on first use started at
// t0 (Compiled.LazyWork, LazyTime), or, for the eager phase's matcher
// (precomputeDeeper), as eager work.
func (m *Matcher) firstUse(units, count int64, t0 time.Time) {
	if m.eagerWork != nil {
		*m.eagerWork += units
		return
	}
	c := m.c
	c.addLazyTime(t0)
	c.lazyWork.Add(units)
	c.lazyCount.Add(count)
}

func (m *Matcher) canEnd() bool { return m.st.anyCanEnd(m.cfg) }

// CanEnd reports whether the output so far is a complete sentence (an
// end-of-generation token is allowed now).
func (m *Matcher) CanEnd() bool { return !m.ended && m.canEnd() }

// Ended reports whether an end-of-generation token has been accepted.
func (m *Matcher) Ended() bool { return m.ended }

// Accept advances over token tok. If the token is not allowed it returns
// a *RejectError (or an error for an id out of range) and leaves the
// state unchanged; a step that would exceed a limit returns a
// *LimitError.
func (m *Matcher) Accept(tok int32) error {
	v := m.c.v
	if tok < 0 || int(tok) >= v.Size() {
		return fmt.Errorf("mask: token id %d at index %d out of range: the vocabulary has %d tokens", tok, m.tokens, v.Size())
	}
	reject := func(why string) error {
		return &RejectError{Token: tok, Index: m.tokens, Text: v.Token(tok), Reason: why}
	}
	if m.ended {
		return reject("the generation has already ended")
	}
	if m.err != nil {
		return m.err
	}
	if v.IsEOG(tok) {
		if !m.canEnd() {
			return reject("end of generation before the grammar is complete")
		}
		m.push(nil, true)
		return nil
	}
	off := len(m.histBuf)
	m.work = 0
	switch v.Kind(tok) {
	case TokenUnused:
		return reject("unused token")
	case TokenNormal:
		next, at, err := m.stepBytes(v.Token(tok))
		if err != nil {
			err.Op, err.Token = "Accept", tok
			return err
		}
		if at < 0 {
			m.histBuf = append(m.histBuf, next...)
		}
	}
	// Token references.
	m.st.begin()
	m.st.out = m.st.out[:0]
	m.st.work, m.st.budget = len(m.cfg), MaxStepWork
	for _, n := range m.cfg {
		m.st.stepTok(n, tok)
	}
	m.st.budget = 0
	m.work = max(m.work, m.st.work)
	if m.st.spent || m.st.overflow {
		name := "MaxConfig"
		if m.st.spent {
			name = "MaxStepWork"
		}
		m.st.spent, m.st.overflow = false, false
		m.histBuf = m.histBuf[:off]
		return m.limit(name, "Accept", -1, tok)
	}
	m.histBuf = append(m.histBuf, m.st.out...)
	next := m.st.merge(m.histBuf[off:])
	m.histBuf = m.histBuf[:off+len(next)]
	if len(next) == 0 {
		return reject("not a viable continuation")
	}
	if len(next) > MaxConfig {
		m.histBuf = m.histBuf[:off]
		return m.limit("MaxConfig", "Accept", -1, tok)
	}
	return m.commit(off, len(next), "Accept", tok)
}

// limit returns the *LimitError of the step being taken.
func (m *Matcher) limit(name, op string, offset int, tok int32) *LimitError {
	e := &LimitError{Limit: name, Op: op, Index: m.tokens, Offset: offset, Token: tok}
	switch name {
	case "MaxConfig":
		e.Max = MaxConfig
	case "MaxStepWork":
		e.Max = MaxStepWork
	case "MaxStackSize":
		e.Max = MaxStackSize
	}
	return e
}

// stepBytes runs the current configuration over b and returns the result
// (in scratch memory of the stepper), or at ≥ 0, the offset of the first
// byte no node can take, or a limit error (Op "AcceptBytes"). Each byte
// is a step of its own for MaxStepWork, and the stack is collected
// between bytes when it has doubled, so that a long input stays within
// MaxStackSize too.
func (m *Matcher) stepBytes(b []byte) (cfg []node, at int, err *LimitError) {
	m.st.budget = MaxStepWork
	cfg, at, err = m.stepBudgeted(b)
	m.st.budget = 0
	m.work = m.st.work
	return cfg, at, err
}

func (m *Matcher) stepBudgeted(b []byte) (cfg []node, at int, err *LimitError) {
	cur := m.cfg
	for i, c := range b {
		m.st.work = len(cur)
		next := m.st.stepConfig(cur, c)
		if m.st.spent || m.st.overflow || len(next) > MaxConfig || len(next) == 0 {
			switch {
			case m.st.spent:
				m.st.spent, m.st.overflow = false, false
				return nil, -1, m.limit("MaxStepWork", "AcceptBytes", i, -1)
			case len(next) > MaxConfig || m.st.overflow:
				m.st.overflow = false
				return nil, -1, m.limit("MaxConfig", "AcceptBytes", i, -1)
			}
			return nil, i, nil
		}
		// Keep the result out of the stepper's buffer, which the next
		// step reuses.
		m.bufA = append(m.bufA[:0], next...)
		cur = m.bufA
		m.bufA, m.bufB = m.bufB, m.bufA
		if i+1 < len(b) && m.ar.size() > m.gcAt {
			m.collect(cur)
			if m.ar.size() > MaxStackSize {
				return nil, -1, m.limit("MaxStackSize", "AcceptBytes", i, -1)
			}
		}
	}
	return cur, -1, nil
}

// AcceptBytes advances over raw bytes, independently of tokenization.
// On rejection the state is unchanged and the error says at which byte.
// A successful call counts as one step for Rollback.
func (m *Matcher) AcceptBytes(b []byte) error {
	if m.ended {
		return &RejectError{Token: -1, Index: m.tokens, Text: b, Reason: "the generation has already ended"}
	}
	if m.err != nil {
		return m.err
	}
	next, at, err := m.stepBytes(b)
	if err != nil {
		return err
	}
	if at >= 0 {
		return &RejectError{Token: -1, Index: m.tokens, Offset: at, Text: b, Reason: fmt.Sprintf("byte %q is not a viable continuation", b[at])}
	}
	off := len(m.histBuf)
	m.histBuf = append(m.histBuf, next...)
	return m.commit(off, len(next), "AcceptBytes", -1)
}

// commit makes the configuration histBuf[off:off+n] current, drops the
// history Rollback can no longer reach and collects the stack nodes no
// configuration reaches any more. If the live stack exceeds
// MaxStackSize, the step is undone.
func (m *Matcher) commit(off, n int, op string, tok int32) error {
	m.hist = append(m.hist, histStep{off: int32(off), n: int32(n)})
	m.cfg = m.histBuf[off : off+n]
	m.tokens++
	if len(m.hist) > 2*MaxRollback+1 || m.ar.size() > m.gcAt {
		return m.settle(op, tok)
	}
	return nil
}

// settle is commit's rare part: trimming the history and collecting the
// stack.
func (m *Matcher) settle(op string, tok int32) error {
	if len(m.hist) > 2*MaxRollback+1 {
		m.trimHistory()
	}
	if m.ar.size() > m.gcAt {
		m.collect(nil)
		if m.ar.size() > MaxStackSize {
			_ = m.Rollback(1)
			return m.limit("MaxStackSize", op, -1, tok)
		}
	}
	return nil
}

// trimHistory drops the configurations of all but the last MaxRollback
// steps, moving the rest to the front of histBuf: amortized, one copy of
// each configuration.
func (m *Matcher) trimHistory() {
	keep := m.hist[len(m.hist)-MaxRollback-1:]
	base := keep[0].off
	m.histBuf = m.histBuf[:copy(m.histBuf, m.histBuf[base:])]
	for i := range keep {
		keep[i].off -= base
	}
	m.hist = m.hist[:copy(m.hist, keep)]
	last := m.hist[len(m.hist)-1]
	m.cfg = m.histBuf[last.off : last.off+last.n]
}

// collect compacts the arena to the stack nodes that the configurations
// of the history and extra (a configuration being built, rewritten in
// place) reach, and renumbers the cached plans; the next collection runs
// when the arena has doubled again.
func (m *Matcher) collect(extra []node) {
	n := len(m.histBuf)
	m.histBuf = append(m.histBuf, extra...)
	setMap := m.ar.compact(m.histBuf)
	copy(extra, m.histBuf[n:])
	m.histBuf = m.histBuf[:n]
	last := m.hist[len(m.hist)-1]
	m.cfg = m.histBuf[last.off : last.off+last.n]
	if len(m.plans) > 0 {
		plans := make(map[planKey]*plan, len(m.plans))
		for k, p := range m.plans {
			if ns := setMap[k.preds]; ns >= 0 {
				k.preds = ns
				plans[k] = p
			}
		}
		m.plans = plans
		m.dense = 0 // (what the plans kept hold)
		for _, p := range plans {
			m.dense += len(p.dense)
		}
	}
	m.gcAt = max(minCollect, 2*m.ar.size())
	if minCollect < 0 {
		m.gcAt = -1 // tests: collect after every step
	}
}

func (m *Matcher) push(_ []node, ended bool) {
	last := m.hist[len(m.hist)-1]
	m.hist = append(m.hist, histStep{off: last.off, n: last.n, ended: ended})
	m.ended = ended
	m.tokens++
	if len(m.hist) > 2*MaxRollback+1 {
		m.trimHistory()
	}
}

// Rollback undoes the last n accepted tokens (or AcceptBytes calls). At
// most MaxRollback steps can be undone.
func (m *Matcher) Rollback(n int) error {
	if n < 0 || n > len(m.hist)-1 || n > MaxRollback {
		if n > MaxRollback && n <= m.tokens {
			return fmt.Errorf("mask: cannot roll back %d steps: at most %d can be undone (limit MaxRollback)", n, MaxRollback)
		}
		return fmt.Errorf("mask: cannot roll back %d steps: %d accepted", n, m.tokens)
	}
	if n == 0 {
		return nil
	}
	m.err = nil
	m.hist = m.hist[:len(m.hist)-n]
	last := m.hist[len(m.hist)-1]
	m.ended = last.ended
	m.histBuf = m.histBuf[:last.off+last.n]
	m.cfg = m.histBuf[last.off : last.off+last.n]
	m.tokens -= n
	return nil
}

// Reset returns the matcher to the start of the grammar. It keeps the
// caches of contexts already seen.
func (m *Matcher) Reset() {
	m.histBuf = append(m.histBuf[:0], node{m.c.a.frames[0].start, 0, predsBottom})
	m.hist = append(m.hist[:0], histStep{off: 0, n: 1})
	m.cfg = m.histBuf[0:1]
	m.ended, m.tokens, m.err = false, 0, nil
}

// maxForced bounds Forced's output: jump-forward gains little beyond a few
// hundred bytes per step, and the bound keeps Forced O(1) per call.
const maxForced = 512

// Forced returns the bytes the grammar forces next: the longest string
// that every continuation of the output starts with, stopping where the
// output could end. It is empty when there is a choice.
func (m *Matcher) Forced() []byte { return m.AppendForced(nil) }

// AppendForced appends the bytes Forced returns to dst and returns the
// extended slice. It does not allocate beyond growing dst (the decode
// loop calls it after every token).
func (m *Matcher) AppendForced(dst []byte) []byte {
	if m.ended {
		return dst
	}
	a := m.c.a
	cur := append(m.spCur[:0], m.cfg...)
	next := m.spNext[:0]
	defer func() { m.spCur, m.spNext = cur[:0], next[:0] }()
	for n := 0; n < maxForced; n++ {
		if m.anyCanEnd(cur) || m.hasTokEdges(cur) {
			break
		}
		// Which byte classes can come next?
		only := -1
		for c := 0; c < a.nc; c++ {
			cand := m.stepClass(cur, c)
			if cand == nil {
				continue
			}
			if only >= 0 || a.classLo[c] != a.classHi[c] {
				only = -2
				break
			}
			only = c
			next = append(next[:0], cand...)
		}
		if only < 0 {
			break
		}
		dst = append(dst, a.classLo[only])
		cur, next = next, cur
	}
	return dst
}

func (m *Matcher) anyCanEnd(cfg []node) bool { return m.st.anyCanEnd(cfg) }

func (m *Matcher) hasTokEdges(cfg []node) bool {
	found := false
	m.st.begin()
	for _, n := range cfg {
		m.st.forTokEdges(n, func(*tokEdge, node) { found = true })
		if found {
			return true
		}
	}
	return false
}

// MinCompletion returns the fewest bytes that complete the output to a
// sentence (0 if it can end now), at most MaxMinLen (the arithmetic
// saturates there). The engine uses it to close out a generation before
// its token budget runs out.
func (m *Matcher) MinCompletion() int {
	if m.ended {
		return 0
	}
	best := MaxMinLen
	for _, n := range m.cfg {
		best = min(best, m.stackMinLen(n))
	}
	return int(best)
}

// stackMinLen returns the fewest bytes that pop a stack of n to bottom.
func (m *Matcher) stackMinLen(n node) int64 {
	m.st.query()
	return m.stackMinLenRec(n)
}

func (m *Matcher) stackMinLenRec(n node) int64 {
	a := m.c.a
	f := &a.frames[a.states[n.state].frame]
	var need int64
	if f.repeat {
		// Finish the current iteration, then the missing ones.
		inIter := a.minLen[n.state]
		if n.state == f.start {
			inIter = 0
		}
		missing := int64(max(f.min-iterations(n.cnt), 0))
		if st := &a.states[n.state]; n.state != f.start && st.flags&stReachPop == 0 {
			// This iteration cannot end the repetition: one more.
			missing = max(missing, 1)
		}
		need = satAdd(inIter, satMul(a.minLen[f.start], missing))
	} else {
		need = a.minLen[n.state]
		if n.state == f.start && f.root && f.nullable && m.ar.has(n.preds, bottom) {
			need = 0
		}
	}
	best := MaxMinLen
	for _, p := range m.ar.sets[n.preds] {
		if p == bottom {
			best = 0
		} else if p >= 0 {
			if m.st.firstVisit(p) {
				m.st.qval[p] = m.stackMinLenRec(m.ar.nodes[p])
			}
			best = min(best, m.st.qval[p])
		}
	}
	return satAdd(need, best)
}

// maxCompletion bounds ShortestCompletion's search, in bytes.
const maxCompletion = 1 << 16

// ShortestCompletion returns a shortest byte string that completes the
// output to a sentence (empty if it can end now). The engine feeds it
// when a token budget runs out, so that the output stays valid. Where the
// shortest completion would need a token reference (<[id]>), it returns
// the bytes up to that point and ok is false; ok is false also when the
// completion would exceed 64 KiB.
func (m *Matcher) ShortestCompletion() (b []byte, ok bool) {
	return m.ShortestPrefix(nil, maxCompletion)
}

// Tokens returns the number of steps accepted (tokens, byte runs and the
// end-of-generation token).
func (m *Matcher) Tokens() int { return m.tokens }
