package mask

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/structgen/structgen/gbnf"
)

// Error is a compilation error. Pos is the position in the grammar source
// when the error concerns one place (zero otherwise).
type Error struct {
	Pos gbnf.Pos
	Msg string

	limit string // the limit exceeded, if any
}

func (e *Error) Error() string {
	if e.Pos.Line > 0 {
		return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
	}
	return e.Msg
}

// Compiled is a grammar compiled against a vocabulary. It is immutable
// from the caller's point of view and safe for concurrent use by any
// number of Matchers: the deeper levels of the mask cache are filled on
// first use under an internal lock.
type Compiled struct {
	g      *gbnf.Grammar
	v      *Vocab
	prep   *vocabPrep
	a      *automaton
	maxLen int32 // longest normal token (bytes): the horizon of one mask step

	level1 []*level1 // per state; nil for states that are never a stack top

	enter    []*ctxEntry            // per frame: tokens that enter it (and their cross points), computed on demand at compile time
	entering []bool                 // per frame: enter is being computed (recursion guard)
	conts    map[[2]int32]*ctxEntry // (callee frame, return state) → continuation after the callee pops
	// crossFollow is, per frame, the bytes that can follow it or any
	// repetition frame sharing its level-1 data (twinFrame): the filter of
	// the cross points recorded in that data.
	crossFollow []byteBits
	subMemo     map[subKey]*subResult // compile time: walks of depth-1 subtrees from base nodes
	firstBits   [][]uint32            // compile time: per byte class, the tokens starting with it (firstClassBits)
	firstDone   []bool
	walker      *walker // compile-time walker (and, under lazyMu, first-use walker)
	sliceOf     []int32 // per state: 1+index in sliceUses, -1 for none, 0 not known yet (see sliceFor)
	sliceUses   []sliceUse
	openOf      []*openInfo // per state: its open chain, if any (see openChain)
	regionOf    []int32     // per state: 1+index in regions, -1 for none, 0 not known yet (see regionFor)
	regions     []regionInfo
	charEndsOf  map[int32]charEndsInfo // see charEnds
	strClass    []bool                 // per byte class: holds a string body's ASCII character (see stringClass)
	openDone    []bool
	openDepth   int
	mainSuccOf  []int32                       // per state: 2+mainSucc, 0 not known yet
	utf8Memo    map[[2]int32]bool             // utf8Into's results
	exitMemo    map[exitKey]*sliceExitSet     // sliceExitsOf's walks, per slice, loop state and chain length
	rootExits   map[rootExitKey]*sliceExitSet // rootExit's walks, per root child and state, in the eager phase
	rootBytes   int64                         // the memory rootExits holds (see maxRootExitBytes)

	mu          sync.Mutex // guards the caches filled after compilation (level1, repEntries, ctxEntry.next, byCross)
	repEntries  map[ctxKey]*ctxEntry
	byCross     map[string]*ctxEntry       // deeper levels by (cross points, frame state and counter class): see Matcher.childEntry
	nodeLevels  map[nodeLevelKey]*ctxEntry // deeper levels of one cross point (Matcher.unionLevel)
	depth       []int32                    // per state: bytes from the start (automaton.depths), during compilation
	classNodes  []int                      // per byte class: the trie nodes below the root's children in it (walkEstimates)
	heavyLevels map[ctxKey]bool            // class keys below which a walk was expensive (Matcher.childEntry)

	lazyMu      sync.Mutex   // serializes level-1 computations after compilation
	lazyWaiting atomic.Int32 // computations on first use waiting for lazyMu (see yieldEager)
	yields      int          // times Precompute let them go first (tests)
	lazyWalker  *walker      // the walker of lazyLevel1, kept (guarded by lazyMu); the eager phase's where it left states
	deepWalkers sync.Pool    // *walker: for the deeper levels (Matcher.childEntry)
	budgetWork  int64        // eager work units (-1: unbounded)
	timeout     time.Duration
	budgetStart time.Time     // when the eager part started (see DefaultEagerTimeout)
	done        bool          // compilation finished: level1 is written under mu
	eager       bool          // the eager phase is running (at compile time or in Precompute; under lazyMu after compilation)
	plan        *eagerPlan    // the eager phase still to run (Options.Deferred), until Precompute ran; guarded by lazyMu
	precomputed chan struct{} // closed when the eager phase has run (see Precomputed)
	eagerErr    error         // what the deferred eager phase returned (guarded by lazyMu)
	sliceWork   int64         // slice work of the eager phase so far (copied into stats.SliceWork)
	lazyWork    atomic.Int64  // work units of the computations on first use
	lazyCount   atomic.Int64  // their number
	lazyNanos   atomic.Int64  // their time (see LazyTime)
	memoBytes   atomic.Int64  // held by exitMemo and the open chains (openChain; counted in MemoryBytes)
	walkerBytes atomic.Int64  // held by lazyWalker's buffers (walker.heldBytes; counted in MemoryBytes)

	belowOf    map[int32]*belowUse // belowFor's memo (guarded by mu)
	belowWalks atomic.Int64        // walks taken from slices below nodes (tests)

	cancel <-chan struct{} // Options.Done: ends the eager phase and fails the compile

	stats CompileStats
}

// CompileStats describes a compilation.
type CompileStats struct {
	Frames       int           // rule and repetition frames
	States       int           // automaton states (after minimization)
	Unminimized  int           // automaton states before minimization
	ByteClasses  int           // byte equivalence classes
	TopStates    int           // states that need level-1 data (stack tops, return states)
	EagerStates  int           // of which computed at compile time (the rest on first use)
	EagerWork    int64         // work units of the eager part (see DefaultEagerWork)
	EagerNodes   int64         // of which: trie nodes stepped (one unit each)
	SliceWork    int64         // work units spent making new slices of the vocabulary (not in EagerWork)
	Duration     time.Duration // total compile time (vocabulary preparation excluded)
	WalkDuration time.Duration // of which: level-1 trie walks
}

// Stats returns statistics of the compilation (with Options.Deferred, the
// eager part's once Precompute has run).
func (c *Compiled) Stats() CompileStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Vocab returns the vocabulary the grammar was compiled against.
func (c *Compiled) Vocab() *Vocab { return c.v }

// Grammar returns the compiled grammar.
func (c *Compiled) Grammar() *gbnf.Grammar { return c.g }

// Compile compiles g against vocabulary v. It prepares the vocabulary on
// first use (the token trie; see PrepareVocab), lowers the grammar to
// frames, builds their automata and walks the token trie once per
// possible stack-top state. Cost: milliseconds for typical grammars on a
// 128k vocabulary; the result is shared by any number of matchers.
//
// Supported beyond llama.cpp: direct left recursion (r ::= r α | β is
// rewritten to r ::= β α*). Indirect left recursion is an error.
func Compile(g *gbnf.Grammar, v *Vocab) (*Compiled, error) {
	return CompileWith(g, v, Options{})
}

// The eager part of Compile precomputes the per-state token sets (level
// 1, see walk.go) in state order, the root's states first, until it has
// done DefaultEagerWork units of work; the other states are computed the
// first time a matcher needs them, and cached for every matcher. Once
// every state has its level 1, what is left of the budget goes to the
// levels below the stack tops (precomputeDeeper: one pop deep, then
// further down, then the other counter classes of repetition frames):
// the rest of the deeper levels are computed on first use. Where the
// budget runs out first, the levels below the states it reached get a
// tenth of it more (deeperReserve). Work is
// counted, not timed, so that a grammar gets the same precomputed states
// on any machine under any load (and so the same first-visit costs):
// a unit is one trie node stepped or one token id recorded, a dense set
// operation counts one unit per 32 words, and each state's token set
// computed costs StateWorkUnits on top (its fixed cost: starting the
// walk, building and storing the set). On the development machine a unit
// costs about WorkUnitNanos nanoseconds of one core.
const (
	// StateWorkUnits is the fixed cost of computing one state's token
	// set, in work units. Fitted (least squares of the relative error)
	// over the eager compilations of a sample of JSONSchemaBench grammars
	// as time = a·units + b·states: b/a was 180 units under load and 216
	// on a quiet machine (`go run
	// ./jsonschema2gbnf/cmd/schemabench -accept mask -calibrate 7`
	// measures it, and WorkUnitNanos). Without it a grammar of many cheap
	// states (128 tools' calls: 10,800 states) took twice the time its
	// units said.
	StateWorkUnits = 150
	// DefaultEagerWork is about 27 ms of precomputation on one core (see
	// WorkUnitNanos): enough for every state of the five bench grammars
	// (the largest, the order schema, needs 1.2 million units; the rest
	// goes to their deeper levels), and for everything, deeper levels
	// included, of 85-90% of the JSONSchemaBench grammars (the work that
	// takes, counted at stop 30: p85 1.87 million units, p90 3.2
	// million); larger grammars leave the rest to first use, which slices
	// make cheap (see slice.go). It was 1.5 million up to stop 47:
	// doubled, the corpus's costliest first use per grammar went from p99
	// 110-140 µs to 90-100 µs (schemabench -walks 3, four runs against
	// three) and its Precompute from p99 47-59 ms to 70-76; four times (6
	// million) gave first uses no cheaper (90 µs) for a Precompute p99 of
	// 124 ms.
	DefaultEagerWork = 3_000_000
	// WorkUnitNanos is the measured cost of one work unit on the
	// development machine: the median over the eager compilations of
	// every 7th JSONSchemaBench grammar (-calibrate 7 above; fastest of
	// 5 runs each, quiet machine). Stops 21-27: median 8.0 ns, half of
	// them between 7.5 and 8.7 ns, 90% between 6.8 and 12.3 ns. Stop 35
	// made the states that use slices cheaper in units (shared root-exit
	// walks, borrowed sets taken by first byte) more than in time: in one
	// session, 8.6 ns at the median before (p25-p75 7.6-10.0) and 9.7
	// after (9.0-10.5; 90% between 7.7 and 12.5), about 9 ns on the
	// stops 21-27 machine. The kinds of unit differ: fitted apart
	// (-calibrate's three-term fit), a trie node stepped
	// (CompileStats.EagerNodes) costs about 1.9 times another unit (15.8
	// against 8.4 ns; 3.9 times before stop 35), so grammars whose walks
	// step many nodes run at up to 18-23 ns per unit.
	WorkUnitNanos = 9
	// DefaultEagerTimeout is the safety net of the eager part: however
	// little work is done, it stops this long after it started. It is
	// over 18 times what DefaultEagerWork takes on one free core, so that
	// it cuts in only on a machine far slower or busier than expected,
	// where a bounded compile matters more than determinism.
	DefaultEagerTimeout = 500 * time.Millisecond
)

// Options configure CompileWith.
type Options struct {
	// EagerWork bounds the eager precomputation, in work units (see
	// DefaultEagerWork): 0 means DefaultEagerWork, a negative value no
	// bound (everything at compile time, unless EagerTimeout cuts in).
	// A compilation whose level-1 sets use it all up spends a tenth more
	// on the levels below them (deeperReserve).
	EagerWork int64
	// EagerTimeout is the wall-clock safety net of the eager part: 0
	// means DefaultEagerTimeout, a negative value none.
	EagerTimeout time.Duration
	// Start is ignored: the eager part used to be timed from it, and is
	// now bounded by work. The field stays so that callers compile.
	Start time.Time
	// Deferred leaves the eager precomputation out of CompileWith: it
	// returns once the automaton is built (about a fifth of a typical
	// compile), with nothing precomputed, and the caller runs the eager
	// part later with Precompute — typically on another goroutine while
	// the prompt is read (the engine does; see Precompute). Until then
	// the grammar is usable: every state is computed on first use.
	Deferred bool
	// Done, when closed, stops the compilation: CompileWith returns an
	// error wrapping ErrCanceled. It is checked between the phases, every
	// cancelCheckEvery automaton states during construction and before
	// every batch of eager trie walks, so a compile stops within about a
	// millisecond of work (a batch of walks cannot be interrupted). Pass
	// a context's Done channel to stop a compile whose request went away
	// or whose time limit passed. nil: never.
	Done <-chan struct{}
}

// ErrCanceled reports a compilation stopped through Options.Done.
var ErrCanceled = errors.New("mask: compilation canceled")

// canceled reports whether done is closed.
func canceled(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// CompileWith is Compile with options.
func CompileWith(g *gbnf.Grammar, v *Vocab, opt Options) (*Compiled, error) {
	if g == nil || v == nil {
		return nil, fmt.Errorf("mask: Compile needs a grammar and a vocabulary")
	}
	if len(g.Rules) == 0 || int(g.Root) < 0 || int(g.Root) >= len(g.Rules) {
		return nil, fmt.Errorf("mask: grammar has no root rule")
	}
	prep := prepare(v)
	start := time.Now()
	if canceled(opt.Done) {
		return nil, ErrCanceled
	}
	// The unrolled lowering's automaton is tried only up to maxStates/2
	// positions: on the JSONSchemaBench corpus every grammar past that
	// (26, strict and lenient) ran into the attempt's state limit, and
	// every one that got through had fewer than 128,000 positions, so the
	// attempt was wasted work (a third of Github_ultra/o48661's build).
	// The lowering itself stops where its frames pass that, its work then
	// thrown away (o48661: after 677 of its 3,397 frames, not all 291,000
	// positions; its first compile in a process 553-579 ms before, 522-534
	// after; Handwritten/allany22 crosses after 387 of 7,112 frames).
	defs, lw, err := lowerGrammar(g, v, false, nil, maxStates/2)
	tryUnrolled := err == nil
	if err != nil && err != errPositionCap {
		return nil, err
	}
	var a *automaton
	if tryUnrolled {
		a, err = buildAutomaton(defs, maxStates/4, opt.Done)
	}
	if !tryUnrolled || err != nil && isStateLimit(err) {
		// Unrolled repetitions can make the subset construction blow up
		// (e.g. x "-" x with x ::= [-z]{1,30} [a-z0-9]); counting frames
		// keep such grammars polynomial (the stack merges their counts).
		if defs, _, err = lowerGrammar(g, v, true, lw, 0); err != nil {
			return nil, err
		}
		a, err = buildAutomaton(defs, maxStates, opt.Done)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) && strings.HasPrefix(e.Msg, leftRecursionMsg) {
			if re := ruleLeftRecursion(g); re != nil {
				err = re
			}
		}
		return nil, err
	}
	c := &Compiled{
		g:          g,
		v:          v,
		prep:       prep,
		a:          a,
		maxLen:     int32(max(prep.maxLen, 1)),
		level1:     make([]*level1, len(a.states)),
		repEntries: map[ctxKey]*ctxEntry{},
		cancel:     opt.Done,
	}
	switch {
	case opt.EagerWork == 0:
		c.budgetWork = DefaultEagerWork
	case opt.EagerWork > 0:
		c.budgetWork = opt.EagerWork
	default:
		c.budgetWork = -1
	}
	switch {
	case opt.EagerTimeout == 0:
		c.timeout = DefaultEagerTimeout
	case opt.EagerTimeout > 0:
		c.timeout = opt.EagerTimeout
	}
	tops := c.planLevel1()
	c.stats = CompileStats{
		Frames:      len(a.frames),
		States:      len(a.states),
		Unminimized: a.unminimized,
		ByteClasses: a.nc,
		TopStates:   tops,
	}
	c.precomputed = make(chan struct{})
	if opt.Deferred {
		c.stats.Duration = time.Since(start)
		c.done = true
		return c, nil
	}
	walkStart := time.Now()
	if err := c.runEager(); err != nil {
		return nil, err
	}
	close(c.precomputed)
	if canceled(c.cancel) {
		return nil, ErrCanceled
	}
	c.stats.Duration = time.Since(start)
	c.stats.WalkDuration = time.Since(walkStart)
	c.done = true
	return c, nil
}

// Precompute runs the eager part of a compilation made with
// Options.Deferred: the per-state token sets, up to the work budget, in
// the order CompileWith would (so the same states as a compile without
// Deferred, when nothing used the grammar before). It is safe to call
// from any goroutine while matchers use the grammar; a matcher that
// needs a state not computed yet computes it itself, waiting for the
// eager part to finish first (they are serialized), so callers that want
// the masks of the first step precomputed start decoding after
// Precomputed is closed. Calls after the first (or on a grammar compiled
// without Deferred) return at once with the first one's result.
//
// done, when closed, stops it early (ErrCanceled); the states it did not
// reach are computed on first use. ErrTooAmbiguous and the limits of a
// compile are returned as CompileWith would have returned them.
func (c *Compiled) Precompute(done <-chan struct{}) error {
	select {
	case <-c.precomputed:
		return c.eagerErr // (written before the close)
	default:
	}
	c.lazyMu.Lock()
	defer c.lazyMu.Unlock()
	if c.plan == nil {
		return c.eagerErr
	}
	defer close(c.precomputed)
	t0 := time.Now()
	c.cancel = done
	err := c.runEager()
	if err == nil && canceled(done) {
		err = ErrCanceled
	}
	c.eagerErr = err
	c.mu.Lock()
	c.stats.Duration += time.Since(t0)
	c.stats.WalkDuration = time.Since(t0)
	c.mu.Unlock()
	return err
}

// Precomputed returns a channel closed once the eager part of the
// compilation has run: at once for a compile without Options.Deferred,
// else when Precompute returns; from then on Precompute returns its
// result without waiting.
func (c *Compiled) Precomputed() <-chan struct{} { return c.precomputed }

// MemoryBytes estimates the memory held by the compiled automaton, its
// mask cache and the walker kept for first uses (the shared vocabulary
// trie excluded).
func (c *Compiled) MemoryBytes() int {
	n := 4*len(c.a.rows) + 4*len(c.a.rowOf) + 16*len(c.a.states) + 8*len(c.a.minLen)
	seen := map[*tokenSet]bool{}
	seenBits := map[*uint32]bool{}  // (a slice's bitset is shared: buildWith)
	seenListed := map[*int32]bool{} // (and its list)
	setBytes := func(s *tokenSet) int {
		if seen[s] {
			return 0
		}
		seen[s] = true
		n := s.bytes()
		if s.whole != nil {
			if w := s.whole.p.Load(); w != nil {
				n += w.bytes()
			}
		}
		if len(s.bits) > 0 {
			if seenBits[&s.bits[0]] {
				n -= 4 * len(s.bits)
			}
			seenBits[&s.bits[0]] = true
		}
		if len(s.listed) > 0 {
			if seenListed[&s.listed[0]] {
				n -= 4 * len(s.listed)
			}
			seenListed[&s.listed[0]] = true
		}
		return n
	}
	seenEntry := map[*ctxEntry]bool{} // (entries are shared: byCross)
	var addEntry func(e *ctxEntry)
	addEntry = func(e *ctxEntry) {
		if e == nil || seenEntry[e] {
			return
		}
		seenEntry[e] = true
		n += setBytes(e.in)
		n += 4 * len(e.cross)
		for _, x := range e.next {
			addEntry(x)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.level1 {
		if l == nil {
			continue
		}
		n += setBytes(&l.full)
		n += 8*len(l.cross) + 4*len(l.byCost) + 4*len(l.costOff)
		if l.plain != nil {
			n += 4 * len(l.plain.cross)
			for _, x := range l.plain.next {
				addEntry(x)
			}
		}
	}
	for _, e := range c.repEntries {
		addEntry(e)
	}
	for _, e := range c.nodeLevels {
		addEntry(e)
	}
	return n + int(c.memoBytes.Load()) + int(c.walkerBytes.Load())
}

// The eager phase computes the level-1 data of the top states. Level 1 of
// a state q in an ordinary frame is built compositionally: a walk of q's
// own transitions (its calls skipped at the first byte), plus, for each
// call edge (callee F, return state r), the tokens that enter F — computed
// once per F — and the continuation of F's cross points in r. A large
// region inside a callee (the body of a string, a long repetition) is
// thus walked once, not once per state that calls it.
//
// planLevel1 prepares it and lists the states (c.plan), returning how many
// need level 1; runEager computes them.
func (c *Compiled) planLevel1() int {
	a := c.a
	c.enter = make([]*ctxEntry, len(a.frames))
	c.entering = make([]bool, len(a.frames))
	c.conts = map[[2]int32]*ctxEntry{}
	c.crossFollow = slices.Clone(a.follow)
	for fi := range a.frames {
		if t := c.twinFrame(int32(fi)); t >= 0 {
			// The twin's data serves fi too: filter with both follow sets.
			c.crossFollow[t].union(&a.follow[fi])
		}
	}
	// Level 1 is needed for every state that can be a stack top, and for
	// every return state (a top's frame may pop before the token starts,
	// leaving the token to the return state, see Matcher.childEntry).
	need := make([]bool, len(a.states))
	for q := range a.states {
		if a.states[q].flags&stTop != 0 {
			need[q] = true
		}
		for _, e := range a.states[q].calls {
			if a.states[e.ret].flags&stPureFinal == 0 {
				need[e.ret] = true
			}
		}
	}
	var plainTops, repTops []int32
	tops := 0
	for q := range a.states {
		if !need[q] {
			continue
		}
		tops++
		if a.frames[a.states[q].frame].repeat {
			repTops = append(repTops, int32(q))
			continue
		}
		plainTops = append(plainTops, int32(q))
	}
	c.plan = &eagerPlan{need: need, plainTops: plainTops, repTops: repTops, tops: tops}
	return tops
}

// eagerPlan is what the eager phase computes (see planLevel1).
type eagerPlan struct {
	need               []bool // per state: level 1 is needed
	plainTops, repTops []int32
	tops               int
}

// runEager runs the eager phase planned by planLevel1 and drops the plan.
// After compilation it runs under lazyMu (Precompute).
func (c *Compiled) runEager() error {
	p := c.plan
	c.plan = nil
	c.eager = true
	defer func() { c.eager = false }()
	c.budgetStart = time.Now()
	c.subMemo = map[subKey]*subResult{}
	defer func() {
		c.subMemo, c.firstBits, c.firstDone, c.depth = nil, nil, nil, nil
		c.rootExits, c.rootBytes = nil, 0
	}()
	c.walker = newWalker(c)
	c.walker.take()
	defer c.walker.release()
	plainTops, repTops := p.plainTops, p.repTops
	// The root's start first, whatever the budget, where the budget may
	// not reach every state: every generation's first mask needs it
	// (Github_trivial/o35155's cost 8,118 units on first use: the states
	// that use slices took the whole budget). Where it surely reaches
	// them (estimates are upper bounds on the trie nodes walked), the
	// start stays in its batch, whose states share their walk.
	runOut := c.mayRunOut(plainTops)
	if q := c.a.frames[0].start; !c.a.frames[0].repeat && slices.Contains(plainTops, q) && runOut {
		if err := c.level1Plain([]int32{q}, true); err != nil {
			return err
		}
	}
	if runOut {
		if err := c.lightEntries(); err != nil {
			return err
		}
	}
	// Eagerly, in state order (the root's states first), while the budget
	// lasts; the rest is computed on first use (lazyLevel1).
	for _, q := range repTops {
		if c.overBudget() {
			break
		}
		if err := c.level1Repeat(q); err != nil {
			return err
		}
	}
	// In chunks of eagerChunk states, so that a grammar of many states
	// pays the preparation of a batch (sorting, borrowing, estimates) only
	// for the states the budget reaches; the heavy ones first (see
	// heavyWalk), each group nearest the start first (eagerDepth), as
	// within a chunk.
	if c.budgetWork >= 0 && len(plainTops) > eagerChunk {
		plainTops, _ = heavyFirst(plainTops, c.walkEstimates(plainTops, nil), len(plainTops), nil, c.eagerDepth())
	}
	for i := 0; i < len(plainTops) && !c.overBudget(); i += eagerChunk {
		if err := c.level1Plain(plainTops[i:min(i+eagerChunk, len(plainTops))], true); err != nil {
			return err
		}
	}
	// (Read without mu: every writer of level1 holds lazyMu, as we do
	// after compilation.)
	eagerStates := c.countLevel1(p.need)
	switch {
	case eagerStates == p.tops:
		c.precomputeDeeper(p.need)
	case c.budgetWork > 0:
		// The budget ran out before every state had its level 1: the
		// levels below the states it reached get a reserve of their own
		// (deeperReserve), else a generation's first value that ends
		// inside a token computes one on first use however early it comes.
		budget := c.budgetWork
		c.budgetWork = c.walker.units() + budget/deeperReserve
		c.precomputeDeeper(p.need)
		c.budgetWork = budget
		eagerStates = c.countLevel1(p.need)
	}
	if eagerStates < p.tops {
		c.prepareOpenSlices(plainTops)
	}
	if eagerStates < p.tops && c.lazyWalker == nil {
		// Some states are left to first use: keep the walker for it, with
		// its bulk masks and the buffers the eager walks grew (a stack
		// arena, configurations, the parallel walk's). A first use then
		// allocates none of them: right after a collection, when nothing
		// of a walk is in the caches, a fresh walker and its first growth
		// were a tenth to a fifth of a first use's time (the first lazy
		// state of 229 JSONSchemaBench grammars, median 57-82 µs against
		// 48-68 µs with the eager walker, in three alternated runs). It
		// holds 89 KB at the median of those grammars (381 KB at p90,
		// 2.9 MB at most), beside compiled masks of 4.9 MB; MemoryBytes
		// counts it.
		c.lazyWalker = c.walker
		c.walkerBytes.Store(int64(c.walker.heldBytes()))
	}
	c.mu.Lock()
	c.stats.EagerStates = eagerStates
	c.stats.EagerWork = c.walker.units()
	c.stats.EagerNodes = c.walker.nodes
	c.stats.SliceWork = c.sliceWork
	c.mu.Unlock()
	return nil
}

// countLevel1 returns the number of states that need level 1 and have it.
func (c *Compiled) countLevel1(need []bool) int {
	n := 0
	for q, nd := range need {
		if nd && c.level1[q] != nil {
			n++
		}
	}
	return n
}

// lightEntries computes, while the budget lasts, the entries of the
// frames whose starts are light to walk (heavyWalk, their callees' walks
// included), callees first. Every state that calls a frame needs its
// entry; a frame's start is not a stack top, so the eager order never
// takes it for itself, and an entry left to first use is computed there,
// with those of the frames its start calls in turn. Over the corpus (one
// run, deterministic units): 45 grammars compute less in their costliest
// first-use step and 2 more (JsonSchemaStore/dbt_project 428 -> 964,
// config_schema 275 -> 461); grammars at 1,000 units or more 154 -> 123
// (JsonSchemaStore/cluster 9,235 -> 238, bitbucket-pipelines 3,006 ->
// 1,055), for about 50,000 units of a budget that runs out anyway
// (Github_ultra/o46322: 192 of its 199 frames' entries).
func (c *Compiled) lightEntries() error {
	a := c.a
	seen := make([]bool, len(a.frames))
	var order []int32
	var visit func(f int32)
	visit = func(f int32) {
		if seen[f] {
			return
		}
		seen[f] = true
		for _, e := range a.states[a.frames[f].start].calls {
			visit(e.callee)
		}
		order = append(order, f)
	}
	for f := range a.frames {
		visit(int32(f))
	}
	for _, f := range order {
		if c.overBudget() {
			return nil
		}
		fr := &a.frames[f]
		if c.enter[f] != nil || fr.repeat || c.walkEstimates([]int32{fr.start}, nil)[0] > heavyWalk {
			continue
		}
		if _, err := c.enterFrame(f); err != nil {
			return err
		}
	}
	return nil
}

// mayRunOut reports whether the budget may end before the level 1 of
// every state of qs is computed: the sum of their walk estimates, and
// each state's fixed cost, exceeds half of what is left. (It stops
// summing as soon as it does: a large grammar answers after a few
// chunks.)
func (c *Compiled) mayRunOut(qs []int32) bool {
	if c.budgetWork < 0 {
		return false
	}
	left := c.budgetWork - c.walker.units()
	sum := int64(0)
	for i := 0; i < len(qs); i += 1024 {
		part := qs[i:min(i+1024, len(qs))]
		sum += int64(len(part)) * StateWorkUnits
		for _, e := range c.walkEstimates(part, nil) {
			sum += int64(e)
		}
		if 2*sum > left {
			return true
		}
	}
	return false
}

// deeperReserve is the share of the eager budget (1/deeperReserve) that the
// levels below the stack tops get on top of it when the budget ran out
// before every state had its level 1 (precomputeDeeper runs then on the
// states that have it). Without it, such a grammar computed every level
// below on first use: a string value's end inside a token (188 cross
// points on Llama-3, about 1,000 work units) took 70-100 µs at the third
// step of a generation in Github_ultra/o62895, o62897, o62899. Over the
// 42 grammars of the corpus whose costliest first-use step took 80 µs or
// more in some run of stop 35 (three random generations each, as
// schemabench -walks 3), a tenth of the budget (150,000 units) brought
// that step's work to 0 in 7 of them (Github_hard/o21168: 238 units,
// Github_ultra/o358: 713) and to 354 units from 1,242 in those three;
// none got more.
const deeperReserve = 10

// precomputeDeeper computes, while the budget lasts, the levels below
// the stack tops: for every stack top q of a frame F whose level 1 has
// cross points (F can end inside a token), the level below them in each
// plain return state that can be right below F on a stack (a call's, or
// its caller's for a tail call: belowRets) — what a matcher computes on first
// use when a value or a key ends inside a token and the text goes on in
// its caller — then, breadth first, the levels below those whose cross
// points go on further (a value that ends its caller too). A top of a
// repetition frame (a string with a length bound, an array's items) has
// one entry per counter class, each with its levels below, in order of
// the count where the class begins. The order is fixed (classes,
// levels, states, calls), so the same grammar gets the same levels. It
// takes only the stack tops and return states that have their level 1
// (so that no level needs a state computed on first use, which would
// wait for lazyMu): every one once every state has it, else the tops the
// budget reached (runEager gives their levels a reserve, deeperReserve)
// and the return states below them it reached or that are light
// (retLevel1 computes those first). It uses the matcher's code
// (Matcher.childEntry), and its work counts as eager work.
func (c *Compiled) precomputeDeeper(need []bool) {
	a := c.a
	rets := c.belowRets()
	tried := make([]bool, len(a.states)) // (retLevel1's)
	m := c.NewMatcher()
	m.eagerWork = &c.walker.work
	// The levels to go below, each with the frame whose callers come
	// next; an entry shared by several tops (byCross) goes once.
	type level struct {
		e     *ctxEntry
		frame int32
	}
	var queue []level
	queued := map[*ctxEntry]bool{}
	push := func(e *ctxEntry, f int32) {
		if len(e.cross) > 0 && len(rets[f]) > 0 && !queued[e] {
			queued[e] = true
			queue = append(queue, level{e, f})
		}
	}
	// The plain tops' levels first, then each counter class of the
	// repetition tops, in order of the count where it begins (a fresh
	// counter's class, which is every counter's while the bounds are
	// more than a token away, then a short string's first characters,
	// a long one's last ones last): a class changes only while the count
	// is within a token's reach of a bound. (Each count looked at is a
	// unit of work: up to 2·(maxLen+1) per state.)
	type class struct{ cnt, q int32 }
	var classes []class
	capv := c.maxLen + 1
	for q := range a.states {
		fi := a.states[q].frame
		f := &a.frames[fi]
		l := c.level1[q]
		if !need[q] || len(rets[fi]) == 0 || l == nil {
			continue
		}
		if !f.repeat {
			if l.plain != nil {
				push(l.plain, fi)
			}
			continue
		}
		if len(l.cross) == 0 {
			continue
		}
		if c.overBudget() {
			return
		}
		classes = append(classes, class{0, int32(q)})
		ranges := [][2]int32{{f.min - capv, f.min}}
		if f.max >= 0 {
			ranges = append(ranges, [2]int32{max(f.max-capv, f.min+1), f.max})
		}
		for _, rg := range ranges {
			for cnt := max(rg[0], 1); cnt <= rg[1]; cnt++ {
				c.walker.work++
				if c.newClass(int32(q), cnt) {
					classes = append(classes, class{cnt, int32(q)})
				}
			}
		}
	}
	slices.SortFunc(classes, func(x, y class) int { return cmp.Or(cmp.Compare(x.cnt, y.cnt), cmp.Compare(x.q, y.q)) })
	// Breadth first from the levels queued so far: through the callers'
	// return states, while the budget lasts.
	from := 0
	for i := 0; ; {
		for j := i; i < len(classes) && classes[i].cnt == classes[j].cnt; i++ {
			if c.overBudget() {
				return
			}
			q := classes[i].q
			push(c.entryBooked(node{q, classes[i].cnt, predsBoundary}, &c.walker.work), a.states[q].frame)
		}
		for ; from < len(queue); from++ {
			lv := queue[from]
			for _, r := range rets[lv.frame] {
				if c.overBudget() {
					return
				}
				if !c.retLevel1(r, need, tried) {
					continue
				}
				// A pair whose level is shared (byCross) costs no walk:
				// count its cross points, so that the loop is bounded by
				// the budget.
				c.walker.work += int64(len(lv.e.cross))
				push(m.childEntry(lv.e, node{r, 0, predsBoundary}), a.states[r].frame)
			}
		}
		if i == len(classes) {
			return
		}
	}
}

// retLevel1 reports whether return state r has its level 1, computing
// it (as eager work) if r needs one and is light (heavyWalk): where the
// budget ran out before such a state (the '"' after a bounded string's
// characters, the root's "," after a value), the levels below the tops
// above it were left to first use, however early they came
// (Snowplow/sp_0: 1,508 work units at a generation's sixth step, its
// first string value ending inside a token). A heavy state is the main
// phase's to compute (heavyFirst), not the reserve's. tried marks the
// states it looked at before.
func (c *Compiled) retLevel1(r int32, need, tried []bool) bool {
	if c.level1[r] != nil {
		return true
	}
	if tried[r] {
		return false
	}
	tried[r] = true
	if !need[r] || c.walkEstimates([]int32{r}, nil)[0] > heavyWalk {
		return false
	}
	if err := c.level1Plain([]int32{r}, true); err != nil {
		return false // (first use reports it)
	}
	return c.level1[r] != nil
}

// belowRets returns, per frame F, the plain return states that can be
// the node right below a top of F on a matcher's stack, in a fixed order:
// those of the calls to F, and, for a call to F in tail position (its
// return state can only pop: the stack keeps no node for it, see
// stepper.pushed), those below the caller's frame, and so on. A JSON
// value's string, number or object is such a call: what follows a string
// that ends a value is its caller's caller's business. Return states
// without level 1 are listed too (precomputeDeeper asks retLevel1 for
// it). Each list holds a state at most once.
func (c *Compiled) belowRets() [][]int32 {
	a := c.a
	direct := make([][]int32, len(a.frames))   // per frame: the plain return states of calls to it
	tailFrom := make([][]int32, len(a.frames)) // per frame: the frames that call it in tail position
	seen := map[[2]int32]bool{}
	for q := range a.states {
		for _, e := range a.states[q].calls {
			if a.states[e.ret].flags&stPureFinal != 0 {
				k := [2]int32{-1 - e.callee, a.states[q].frame}
				if !seen[k] {
					seen[k] = true
					tailFrom[e.callee] = append(tailFrom[e.callee], a.states[q].frame)
				}
				continue
			}
			k := [2]int32{e.callee, e.ret}
			if !a.frames[a.states[e.ret].frame].repeat && !seen[k] {
				seen[k] = true
				direct[e.callee] = append(direct[e.callee], e.ret)
			}
		}
	}
	rets := make([][]int32, len(a.frames))
	for fi := range a.frames {
		if len(tailFrom[fi]) == 0 {
			rets[fi] = direct[fi]
			continue
		}
		// The frames reached through tail calls, breadth first (a cycle
		// of tail calls is visited once).
		out := slices.Clone(direct[fi])
		in := map[int32]bool{}
		for _, r := range out {
			in[r] = true
		}
		visited := map[int32]bool{int32(fi): true}
		frames := []int32{int32(fi)}
		for i := 0; i < len(frames); i++ {
			for _, g := range tailFrom[frames[i]] {
				if visited[g] {
					continue
				}
				visited[g] = true
				frames = append(frames, g)
				for _, r := range direct[g] {
					if !in[r] {
						in[r] = true
						out = append(out, r)
					}
				}
			}
		}
		rets[fi] = out
	}
	return rets
}

// newClass reports whether a counter of cnt iterations in repetition
// state q is in another class (counterClass) than one of cnt-1: fewer
// iterations needed, or fewer allowed within a token's reach.
func (c *Compiled) newClass(q, cnt int32) bool {
	n1, a1 := c.counterClass(node{q, cnt - 1, predsBoundary})
	n2, a2 := c.counterClass(node{q, cnt, predsBoundary})
	return n1 != n2 || a1 != a2
}

// yieldEager lets the computations on first use that wait for lazyMu go
// first, between two batches of a deferred eager phase (Precompute, the
// only one that runs under lazyMu), so that a matcher waits for at most
// one batch of it. The eager phase's context is kept aside meanwhile.
// A state the eager phase then computes again comes out the same.
func (c *Compiled) yieldEager() {
	if eagerBatchHook != nil && c.done {
		eagerBatchHook(c)
	}
	if !c.done || c.lazyWaiting.Load() == 0 {
		return
	}
	c.yields++
	w, memo, fb, fd, depth := c.walker, c.subMemo, c.firstBits, c.firstDone, c.depth
	c.eager = false
	c.lazyMu.Unlock()
	for c.lazyWaiting.Load() > 0 {
		runtime.Gosched()
	}
	c.lazyMu.Lock()
	c.walker, c.subMemo, c.firstBits, c.firstDone, c.depth = w, memo, fb, fd, depth
	c.eager = true
}

// eagerBatchHook, when set (tests), is called where Precompute may yield.
var eagerBatchHook func(c *Compiled)

// eagerChunk is how many states the eager phase prepares at a time: a
// grammar of 180,000 states spent 300 ms preparing all of them for the
// 1,100 its budget computed; grammars below it are prepared at once.
const eagerChunk = 4096

// overBudget reports whether the eager phase is over: its work is done,
// or (the safety net) its time is up. Never outside the eager phase:
// computations on first use run to completion.
func (c *Compiled) overBudget() bool {
	if !c.eager {
		return false
	}
	if c.budgetWork >= 0 && c.walker.units() >= c.budgetWork {
		return true
	}
	return c.timeout > 0 && time.Since(c.budgetStart) > c.timeout || canceled(c.cancel)
}

// addSliceWork books the work of making slices of the vocabulary: in the
// eager phase as CompileStats.SliceWork, otherwise as first-use work.
func (c *Compiled) addSliceWork(work int64) {
	if c.eager {
		c.sliceWork += work
	} else {
		c.lazyWork.Add(work)
	}
}

// LazyWork returns the number of computations done on first use so far
// (level 1 of states left out of the eager part, and deeper levels) and
// their work units: the deterministic cost of first visits.
func (c *Compiled) LazyWork() (n, units int64) {
	return c.lazyCount.Load(), c.lazyWork.Load()
}

// LazyTime returns the time spent so far in the computations on first use
// that LazyWork counts (their walks and the sets they make; not the wait
// of a matcher for another's computation): what first visits cost on
// this machine, under its load.
func (c *Compiled) LazyTime() time.Duration { return time.Duration(c.lazyNanos.Load()) }

// addLazyTime adds the time since t0 to LazyTime.
func (c *Compiled) addLazyTime(t0 time.Time) { c.lazyNanos.Add(int64(time.Since(t0))) }

// setLevel1 stores level-1 data. After compilation, readers (entryFor)
// take c.mu; lazy computations are serialized by c.lazyMu.
func (c *Compiled) setLevel1(q int32, l *level1) {
	if c.done {
		c.mu.Lock()
		c.level1[q] = l
		c.mu.Unlock()
		return
	}
	c.level1[q] = l
}

// level1Repeat computes level 1 of a state of a repetition frame with a
// symbolic counter (a direct walk). Two shortcuts avoid most walks: a
// state of a frame whose body equals an earlier frame's (only the bounds
// differ) shares that frame's data, and an iteration end whose only move
// is the next iteration has its body start's data plus, if the
// repetition may end there, a cross point at the root.
func (c *Compiled) level1Repeat(q int32) error {
	if c.level1[q] != nil {
		return nil
	}
	a := c.a
	fi := a.states[q].frame
	f := &a.frames[fi]
	if twin := c.twinFrame(fi); twin >= 0 {
		tq := a.frames[twin].first_ + (q - f.first_)
		if err := c.level1Repeat(tq); err != nil {
			return err
		}
		c.setLevel1(q, c.level1[tq])
		return nil
	}
	if a.states[q].flags&stIterOnly != 0 {
		if err := c.level1Repeat(f.start); err != nil {
			return err
		}
		s0 := c.level1[f.start]
		l := *s0
		l.cross = slices.Clone(s0.cross)
		if a.canPopState(q) && c.prep.trie.NumNodes() > 1 {
			l.cross = append(l.cross, crossPt{0, 0})
		}
		c.setLevel1(q, &l)
		return nil
	}
	if u, ok := c.sliceFor(q); ok {
		l := c.sliceLevel1Repeat(q, u)
		if c.walker.st.overflow {
			return ErrTooAmbiguous
		}
		c.setLevel1(q, l)
		return nil
	}
	l, err := c.walker.runLevel1(q)
	if err != nil {
		return err
	}
	c.setLevel1(q, l)
	return nil
}

// level1Plain computes level 1 of states of ordinary frames, in batches
// of 64 parallel walks, each completed by what its calls contribute (finishLevel1).
func (c *Compiled) level1Plain(qs []int32, budgeted bool) error {
	w := c.walker
	// (Its buffers are kept between calls: a first use computes one state
	// per call. A call made while computing a batch's calls, through
	// finishLevel1, uses it between two of the caller's batches.)
	ps := &w.ps
	var todo []int32
	isTodo := make(map[int32]bool, len(qs))
	for _, q := range qs {
		if c.level1[q] == nil && !isTodo[q] {
			todo = append(todo, q)
			isTodo[q] = true
		}
	}
	mainSucc := make(map[int32]int32, len(todo))
	for _, q := range todo {
		mainSucc[q] = c.mainSucc(q)
	}
	// A loop state that a state of todo mostly leads to, and that uses a
	// slice, costs little: compute it too, to lend its tokens (below).
	for _, q := range todo {
		d := mainSucc[q]
		if d >= 0 && !isTodo[d] && c.level1[d] == nil {
			if _, ok := c.sliceFor(d); ok && c.mainSucc(d) == d {
				todo = append(todo, d)
				isTodo[d] = true
				mainSucc[d] = d
			}
		}
	}
	// States that use a slice of the vocabulary (see slice.go) need no
	// walk of their own but their exits'.
	localOf := make(map[int32]*level1, len(todo))
	rest := todo[:0]
	for _, q := range todo {
		u, ok := c.sliceFor(q)
		if !ok {
			rest = append(rest, q)
			continue
		}
		if budgeted && c.overBudget() {
			delete(isTodo, q)
			continue
		}
		l := c.sliceLevel1(q, u)
		if w.st.overflow {
			return ErrTooAmbiguous
		}
		localOf[q] = l
		if err := c.finishLevel1(q, l, budgeted); err != nil {
			return err
		}
	}
	todo = rest
	// Batch states with similar futures together: same frame and same
	// main successor (the state most bytes lead to), so that a large
	// region they share (e.g. the "any other key" loop of an object with
	// additionalProperties) is walked once per batch, in as few batches as
	// possible.
	slices.SortStableFunc(todo, func(x, y int32) int {
		if c.a.states[x].frame != c.a.states[y].frame {
			return int(c.a.states[x].frame - c.a.states[y].frame)
		}
		return int(mainSucc[x] - mainSucc[y])
	})
	// A state whose main successor D loops on itself (the body of a
	// string, the "any other key" loop of an object) borrows, for every
	// byte class c with δ(q,c) = δ(D,c), D's tokens that start with c:
	// after that byte both are in the same state, so their tokens agree.
	// Only the other classes are walked. Donors are walked first (or
	// took their tokens from a slice).
	borrow := make(map[int32][]bool)
	sbor := make(map[int32]*sliceBorrow)
	var donors, borrowers []int32
	for _, q := range todo {
		d := mainSucc[q]
		if sb, ok := c.sliceBorrowFor(q, d); ok {
			// The loop's tokens come from its slice (addSliceBorrowed).
			cls := make([]bool, c.a.nc)
			for cl := range cls {
				cls[cl] = sb.good.has(c.a.classLo[cl])
			}
			borrow[q] = cls
			sbor[q] = sb
			donors = append(donors, q)
			continue
		}
		// (Token references accept tokens not by their bytes: states with
		// token edges neither borrow nor lend.)
		if d < 0 || d == q || !isTodo[d] || mainSucc[d] != d || len(c.a.states[q].toks) != 0 || len(c.a.states[d].toks) != 0 ||
			c.a.states[d].frame != c.a.states[q].frame {
			donors = append(donors, q)
			continue
		}
		cls := make([]bool, c.a.nc)
		n := 0
		for cl := 0; cl < c.a.nc; cl++ {
			t := c.a.step(q, cl)
			if t >= 0 && t == c.a.step(d, cl) {
				cls[cl] = true
				n++
			}
		}
		if n == 0 {
			donors = append(donors, q)
			continue
		}
		borrow[q] = cls
		borrowers = append(borrowers, q)
	}
	todo = append(donors, borrowers...)
	// Batches of up to 64 starts. Under a budget, a batch is also bounded
	// by its estimated work (at least one start), so that it overruns the
	// budget by little (the walks of a batch cannot be interrupted): a
	// start's work is at most the trie nodes below the first bytes it
	// walks.
	bounded := budgeted && c.budgetWork >= 0
	var est []int
	if bounded {
		est = c.walkEstimates(todo, borrow)
		todo, est = heavyFirst(todo, est, len(donors), mainSucc, c.eagerDepth())
	}
	for i, size := 0, 0; i < len(todo); i += size {
		if budgeted {
			c.yieldEager()
		}
		if budgeted && c.overBudget() {
			// Stop here: the states not done are computed on first use.
			break
		}
		size = min(64, len(todo)-i)
		if bounded {
			left := c.budgetWork - w.units()
			work := int64(est[i]) + StateWorkUnits
			size = 1
			for size < 64 && i+size < len(todo) && work+int64(est[i+size])+StateWorkUnits <= left {
				work += int64(est[i+size]) + StateWorkUnits
				size++
			}
		}
		batch := todo[i : i+size]
		ps.skip = ps.skip[:0]
		anySkip := false
		for _, q := range batch {
			var sk byteBits
			if cls := borrow[q]; cls != nil {
				anySkip = true
				for cl, ok := range cls {
					if ok {
						sk.add(byte(cl))
					}
				}
			}
			ps.skip = append(ps.skip, sk)
		}
		if !anySkip {
			ps.skip = ps.skip[:0] // (empty: nothing to skip; the buffer stays)
		}
		ls, err := w.runLevel1Batch(batch, ps)
		if err != nil {
			return err
		}
		for j, q := range batch {
			if sb := sbor[q]; sb != nil {
				c.addSliceBorrowed(ls[j], q, sb)
			} else if cls := borrow[q]; cls != nil {
				c.addBorrowed(ls[j], localOf[mainSucc[q]], cls)
			}
			localOf[q] = ls[j]
		}
		for j, q := range batch {
			if err := c.finishLevel1(q, ls[j], budgeted); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishLevel1 stores state q's level 1, given l, that of its local walk:
// for each call, it adds the tokens that enter the callee and the level
// below the callee's cross points in the return state. It is done as soon
// as q's walk is, so that the budget pays for the calls of the states it
// walked: left to the end, they were what the budget ran out on, and a
// state whose walk had been paid for was left to first use for the most
// expensive part of it (JsonSchemaStore/bxci: 161,489 units). Past the
// budget (budgeted), a state with calls is left to its first use, which
// computes it whole.
func (c *Compiled) finishLevel1(q int32, l *level1, budgeted bool) error {
	calls := c.a.states[q].calls
	if len(calls) == 0 {
		c.setLevel1(q, l)
		return nil
	}
	if budgeted {
		c.yieldEager()
		if c.overBudget() {
			// What the calls add needs the callees' entry sets, computed
			// (transitively) on demand.
			return nil
		}
	}
	w := c.walker
	b := w.scr.builder()
	defer w.scr.putBuilder(b)
	sets := []*tokenSet{&l.full}
	cross := append([]int32(nil), l.plain.cross...)
	for _, e := range calls {
		en, err := c.enterFrame(e.callee)
		if err != nil {
			return err
		}
		sets = append(sets, en.in)
		sets = append(sets, en.also...)
		if len(en.cross) == 0 {
			continue
		}
		k := [2]int32{e.callee, e.ret}
		x := c.conts[k]
		if x == nil {
			x, err = c.walker.runLevel(en.cross, node{e.ret, 0, predsBoundary})
			c.addSliceWork(c.walker.takeSliceWork())
			if err != nil {
				return err
			}
			c.conts[k] = x
		}
		sets = append(sets, x.in)
		sets = append(sets, x.also...)
		cross = append(cross, x.cross...)
	}
	// The largest bitset among the sets is shared, the others' tokens
	// outside it listed (buildWith): a number's fraction, whose callee
	// repetition enters with the digits' slice, built a list of them
	// through a builder of the vocabulary's words (half its first use).
	var big *tokenSet
	for _, s := range sets {
		if s.bits != nil && s.excl == nil && s.list == nil && (big == nil || s.n > big.n) {
			big = s
		}
	}
	for _, s := range sets {
		if s == big {
			w.work += s.work() // (as addSet counts it: buildWith adds it)
			continue
		}
		w.addSet(b, s)
	}
	nl := &level1{full: w.buildWith(b, big)}
	slices.Sort(cross)
	nl.plain = &ctxEntry{in: &nl.full, cross: slices.Compact(cross)}
	c.setLevel1(q, nl)
	return nil
}

// heavyWalk is the estimated walk (trie nodes, walkEstimates) above which
// a state goes first in the eager phase: what the budget leaves to first
// use should be the states that are cheap to compute then (a few tens of
// microseconds), not the start of every object key.
const heavyWalk = 3_000

// heavyFirst reorders the states of a budgeted eager phase (todo: donors
// first, then borrowers; est: their estimates) so that the heavy ones
// come first: heavy donors and the donors of heavy borrowers, heavy
// borrowers, then the rest, each group nearest the start first (depth;
// nil: in their order). A borrower still comes after its donor. With no
// borrowers (nDonors = len(todo)) it is the plain heavy-first order.
func heavyFirst(todo []int32, est []int, nDonors int, mainSucc map[int32]int32, depth []int32) ([]int32, []int) {
	needed := map[int32]bool{}
	for i := nDonors; i < len(todo); i++ {
		if est[i] > heavyWalk {
			needed[mainSucc[todo[i]]] = true
		}
	}
	order := make([]int, 0, len(todo))
	for pass := 0; pass < 4; pass++ {
		lo, hi := 0, nDonors
		if pass%2 == 1 {
			lo, hi = nDonors, len(todo)
		}
		from := len(order)
		for i := lo; i < hi; i++ {
			heavy := est[i] > heavyWalk || (i < nDonors && needed[todo[i]])
			if heavy == (pass < 2) {
				order = append(order, i)
			}
		}
		if depth != nil {
			part := order[from:]
			slices.SortStableFunc(part, func(x, y int) int { return int(depth[todo[x]] - depth[todo[y]]) })
		}
	}
	t2, e2 := make([]int32, len(todo)), make([]int, len(todo))
	for j, i := range order {
		t2[j], e2[j] = todo[i], est[i]
	}
	return t2, e2
}

// walkEstimates returns, for each state of qs, an upper bound on the trie
// nodes its level-1 walk visits: the subtrees of the first bytes it can
// take by its own transitions, less the byte classes it borrows, and,
// for a state that borrows none, those of the starts of the frames it
// calls whose entries are not computed yet.
func (c *Compiled) walkEstimates(qs []int32, borrow map[int32][]bool) []int {
	a, t := c.a, c.prep.trie
	if c.classNodes == nil {
		// (Once per compilation: lightEntries asks for one frame at a time.)
		c.classNodes = make([]int, a.nc)
		es, ee := t.Children(0)
		for e := es; e < ee; e++ {
			u := t.EdgeNode[e]
			c.classNodes[a.classOf[t.EdgeByte[e]]] += int(t.Nodes[u].SubtreeEnd - u)
		}
	}
	perClass := c.classNodes
	own := func(q int32, cls []bool) int {
		n := 0
		for cl, d := range a.row(q).cells {
			if d != 0 && (cls == nil || !cls[cl]) {
				n += perClass[cl]
			}
		}
		return n
	}
	// A state whose tokens go on into the frames it calls (an object's
	// "{" then its first key) walks their first bytes' subtrees as well,
	// and the set of a frame's start that is not computed yet is computed
	// with it, with those of the frames that start calls in turn: counted
	// as deep as the calls go (each frame once).
	entry := map[int32]int{}
	var entryOf func(f int32) int
	entryOf = func(f int32) int {
		if n, ok := entry[f]; ok {
			return n
		}
		entry[f] = 0 // (a frame that calls itself first: counted once)
		n := 0
		if c.enter[f] == nil {
			st := a.frames[f].start
			n = own(st, nil)
			for _, e := range a.states[st].calls {
				n += entryOf(e.callee)
			}
		}
		entry[f] = n
		return n
	}
	out := make([]int, len(qs))
	for i, q := range qs {
		cls := borrow[q]
		out[i] = own(q, cls)
		if cls != nil {
			continue
		}
		for _, e := range a.states[q].calls {
			out[i] += entryOf(e.callee)
		}
	}
	return out
}

// enterFrame returns the tokens that enter frame f from its start (and
// the cross points where f pops inside a token), for a fresh visit
// (counter 0 for repetition frames).
func (c *Compiled) enterFrame(f int32) (*ctxEntry, error) {
	if e := c.enter[f]; e != nil {
		return e, nil
	}
	if c.entering[f] {
		return nil, &Error{Msg: "internal error: frame " + c.a.frames[f].name + " enters itself before consuming input"}
	}
	c.entering[f] = true
	defer func() { c.entering[f] = false }()
	fr := &c.a.frames[f]
	var e *ctxEntry
	if fr.repeat {
		if err := c.level1Repeat(fr.start); err != nil {
			return nil, err
		}
		e = c.entryFor(node{fr.start, 0, predsBottom})
	} else {
		if c.level1[fr.start] == nil {
			if err := c.level1Plain([]int32{fr.start}, false); err != nil {
				return nil, err
			}
		}
		e = c.level1[fr.start].plain
	}
	c.enter[f] = e
	return e, nil
}

// twinFrame returns an earlier repetition frame whose body is the same as
// frame fi's, with the same automaton (its states correspond one to one,
// in order), or -1.
func (c *Compiled) twinFrame(fi int32) int32 {
	a := c.a
	f := &a.frames[fi]
	if !f.repeat || f.bodyKey == "" {
		return -1
	}
	for ti := int32(0); ti < fi; ti++ {
		t := &a.frames[ti]
		if !t.repeat || t.bodyKey != f.bodyKey || t.last_-t.first_ != f.last_-f.first_ || t.start-t.first_ != f.start-f.first_ {
			continue
		}
		if c.sameAutomaton(t, f) {
			return ti
		}
	}
	return -1
}

// sameAutomaton reports whether frames x and y have identical automata
// up to the offset of their state numbers.
func (c *Compiled) sameAutomaton(x, y *frame) bool {
	a := c.a
	off := y.first_ - x.first_
	for q := x.first_; q < x.last_; q++ {
		sx, sy := &a.states[q], &a.states[q+off]
		if sx.flags&(stFinal|stNoPop|stReachPop) != sy.flags&(stFinal|stNoPop|stReachPop) || len(sx.calls) != len(sy.calls) || len(sx.toks) != len(sy.toks) {
			return false
		}
		// (Rows are relative to their states: equal rows are targets
		// offset alike, and they are shared.)
		if a.rowOf[q] != a.rowOf[q+off] {
			return false
		}
		for i := range sx.calls {
			if sx.calls[i].callee != sy.calls[i].callee || sx.calls[i].ret+off != sy.calls[i].ret {
				return false
			}
		}
		for i := range sx.toks {
			if sx.toks[i].tok != sy.toks[i].tok || sx.toks[i].neg != sy.toks[i].neg || sx.toks[i].next+off != sy.toks[i].next {
				return false
			}
		}
	}
	return true
}

// isStateLimit reports whether err is the MaxStates error.
func isStateLimit(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.limit == "MaxStates"
}

// addBorrowed adds to l (a local level 1) the tokens of the donor's local
// level 1 whose first byte is in one of the classes cls, and the donor's
// cross points below those first bytes.
func (c *Compiled) addBorrowed(l, donor *level1, cls []bool) {
	t := c.prep.trie
	a := c.a
	inCls := func(b byte) bool { return cls[a.classOf[b]] }
	w := c.walker
	scr := w.scr
	b := scr.builder()
	defer scr.putBuilder(b)
	w.addSet(b, &l.full)
	if donor.full.bits == nil {
		w.work += int64(len(donor.full.list))
		for _, id := range donor.full.list {
			if inCls(c.v.Token(id)[0]) {
				b.add(id)
			}
		}
	} else {
		// The donor's bits, minus the tokens whose first byte is in a
		// class not borrowed.
		tmp := scr.mask()
		donor.full.copyInto(tmp)
		for cl, ok := range cls {
			if ok {
				continue
			}
			if fb := c.firstClassBits(cl); fb != nil {
				andNotWords(tmp, fb)
			}
		}
		s := tokenSet{bits: tmp, n: 1}
		w.addSet(b, &s)
		w.work += int64(len(tmp) / 32 * len(cls))
	}
	cross := slices.Clone(l.plain.cross)
	for _, u := range donor.plain.cross {
		if u != 0 && inCls(t.Nodes[u].FirstByte) {
			cross = append(cross, u)
		}
	}
	slices.Sort(cross)
	*l = level1{full: w.build(b)}
	l.plain = &ctxEntry{in: &l.full, cross: slices.Compact(cross)}
}

// firstClassBits returns the bitset of the tokens whose first byte is in
// byte class cl (nil if none), computed once per compilation.
func (c *Compiled) firstClassBits(cl int) []uint32 {
	if c.firstBits == nil {
		c.firstBits = make([][]uint32, c.a.nc)
		c.firstDone = make([]bool, c.a.nc)
	}
	if c.firstDone[cl] {
		return c.firstBits[cl]
	}
	c.firstDone[cl] = true
	t := c.prep.trie
	es, ee := t.Children(0)
	var bits []uint32
	for e := es; e < ee; e++ {
		if int(c.a.classOf[t.EdgeByte[e]]) != cl {
			continue
		}
		if bits == nil {
			bits = make([]uint32, c.prep.words)
		}
		u := t.EdgeNode[e]
		toks := t.TokensIn(u)
		c.walker.work += int64(len(toks))
		for _, id := range toks {
			bits[id>>5] |= 1 << (uint32(id) & 31)
		}
	}
	c.firstBits[cl] = bits
	return bits
}

// eagerDepth returns the order of the eager phase within its groups
// (heavyFirst): per state, the fewest bytes that reach it from the root's
// start (automaton.depths), computed once per compilation. It orders the
// states of a grammar too large for one chunk as well as those of each
// chunk: in state order, a chunk of the first 4,096 states took the
// states of the root frame's far end before nearer ones of the frames it
// calls (JsonSchemaStore/detekt-1.22.0, 63,709 states: its other keys'
// start was left to first use, 16,376 units).
func (c *Compiled) eagerDepth() []int32 {
	if c.depth == nil {
		c.depth = c.a.depths()
	}
	return c.depth
}

// depths returns, per state, the fewest bytes that reach it from the
// root's start: entering a callee costs nothing, a byte or a return one
// (unreachable states get MaxInt32). A 0-1 breadth-first search, level by
// level.
func (a *automaton) depths() []int32 {
	d := make([]int32, len(a.states))
	for i := range d {
		d[i] = math.MaxInt32
	}
	cur := []int32(nil)
	for _, f := range a.frames {
		if f.root {
			d[f.start] = 0
			cur = append(cur, f.start)
		}
	}
	var next []int32
	for level := int32(0); len(cur) > 0; level++ {
		next = next[:0]
		for len(cur) > 0 {
			q := cur[len(cur)-1]
			cur = cur[:len(cur)-1]
			if d[q] != level {
				continue // reached at a lower level since
			}
			for _, e := range a.states[q].calls {
				if t := a.frames[e.callee].start; d[t] > level {
					d[t] = level
					cur = append(cur, t)
				}
				if d[e.ret] > level+1 {
					d[e.ret] = level + 1
					next = append(next, e.ret)
				}
			}
			r := a.row(q)
			prev := int32(-1)
			for c := range r.cells {
				// (Neighbouring classes mostly go to one state: a key
				// exclusion's states step to their free state on all but
				// a few.)
				if t := r.next(c); t != prev && t >= 0 && d[t] > level+1 {
					d[t] = level + 1
					next = append(next, t)
				}
				prev = r.next(c)
			}
		}
		cur, next = next, cur
	}
	return d
}
