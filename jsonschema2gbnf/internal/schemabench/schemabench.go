// Package schemabench runs jsonschema2gbnf over the JSONSchemaBench
// sample (../shared/corpus/jsonschemabench): for every schema it records
// whether it converts in strict and in lenient mode, and for the strict
// grammars whether every valid instance (re-serialized with
// jsonschema2gbnf.Format) is accepted and every invalid one rejected. The
// corpus test compares the results with a checked-in baseline (a
// ratchet), and cmd/schemabench prints the per-dataset table.
//
// The acceptance check is one function value (Accept) so that the
// reference recognizer can be swapped for the token-mask matcher.
package schemabench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	bits32 "math/bits"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/madvfree"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// Case is one corpus file.
type Case struct {
	Dataset string
	Name    string // file name without .json
	Schema  []byte
	Tests   []Instance
}

// ID is "Dataset/Name".
func (c *Case) ID() string { return c.Dataset + "/" + c.Name }

// Instance is one test document of a case.
type Instance struct {
	Valid bool
	Data  []byte
}

// Load reads every case of the corpus folder, datasets and files in
// lexicographic order.
func Load(dir string) ([]*Case, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []*Case
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".json") {
				continue
			}
			raw, err := os.ReadFile(filepath.Join(dir, e.Name(), f.Name()))
			if err != nil {
				return nil, err
			}
			var doc struct {
				Schema json.RawMessage `json:"schema"`
				Tests  []struct {
					Valid bool            `json:"valid"`
					Data  json.RawMessage `json:"data"`
				} `json:"tests"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				return nil, fmt.Errorf("%s/%s: %v", e.Name(), f.Name(), err)
			}
			c := &Case{Dataset: e.Name(), Name: strings.TrimSuffix(f.Name(), ".json"), Schema: doc.Schema}
			for _, t := range doc.Tests {
				c.Tests = append(c.Tests, Instance{Valid: t.Valid, Data: t.Data})
			}
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out, nil
}

// Accept compiles a grammar for acceptance checks; the returned function
// reports whether a document is a sentence of it. start is when the
// schema's conversion began (a compiler's time budget may count from
// it). pre is the part of the preparation that a decoder overlaps with
// reading the prompt (mask: the eager precomputation, see
// mask.Options.Deferred), done before Accept returns and timed apart.
// The default is the reference Earley recognizer.
type Accept func(g *gbnf.Grammar, start time.Time) (accept func(doc []byte) bool, pre Part, err error)

// Part is what a part of the preparation took: its time, and the
// process's system time and minor page faults meanwhile
// (madvfree.ProcUsage).
type Part struct {
	Dur, Sys time.Duration
	Faults   int64
}

// measure runs f and returns what it took.
func measure(f func()) Part {
	sys0, flt0 := madvfree.ProcUsage()
	t0 := time.Now()
	f()
	d := time.Since(t0)
	sys1, flt1 := madvfree.ProcUsage()
	return Part{Dur: d, Sys: sys1 - sys0, Faults: flt1 - flt0}
}

// Earley is the reference acceptance check.
func Earley(g *gbnf.Grammar, _ time.Time) (func([]byte) bool, Part, error) {
	r := earley.New(g)
	return r.Accepts, Part{}, nil
}

// Matcher returns the acceptance check of the token-mask automaton over
// vocabulary v: the grammar is compiled with mask.CompileWith (Deferred,
// then Precompute, timed apart as the engine overlaps it) and a document
// is accepted when AcceptBytes takes all of it and CanEnd holds. A
// grammar the automaton cannot compile is reported in Result.PrepareErr
// and its instances are not checked.
func Matcher(v *mask.Vocab) Accept { return MatcherWalks(v, mask.Options{}, nil) }

// Walks configures random generations run right after each compilation
// (before the instance checks), timing every mask step: what a decoder
// meets on the states the compiler left to first use (see
// mask.DefaultEagerWork). Results are appended per grammar.
type Walks struct {
	Walks, Steps int   // generations per grammar, mask steps per generation at most
	Seed         int64 // of the token choices
	NoFloor      bool  // skip the machine floor (Floor) and its collection

	First []time.Duration // per grammar: the first mask (FillMask) after Compile
	Max   []time.Duration // per grammar: the slowest step (FillMask + Accept)
	// Idle is, per grammar, the slowest step that computed no state's
	// level-1 data on first use (no LazyWork): what is left is the mask
	// from precomputed sets (composed and cached once per new stack
	// context), the accept, and whatever held the step up (the
	// hypervisor, other processes, the collector). Beside Max, it tells
	// how much of the slowest steps the first-use computations are.
	Idle []time.Duration
	// Deterministic: the work units (mask.Compiled.LazyWork) of the
	// computations on first use, per step that had some, and per grammar
	// the most in one step.
	FirstUse    []int64
	FirstUseMax []int64
	// Timed: per grammar, the most time (mask.Compiled.LazyTime) the
	// computations on first use took in one step.
	FirstUseTime []time.Duration
	// Floor is, per grammar, the machine's share of Max: after the
	// generations, a collection as before them, then steps of a fixed
	// arithmetic loop (floorStep, about half a microsecond, no memory),
	// at least as many as the generations took and for at least as long
	// in all as their timed steps took, and the slowest of them. It is
	// what the hypervisor, other processes and the runtime do to steps
	// of no work at all, in the same conditions and over the same time
	// as the grammar's own steps: the interruptions that lengthen a step
	// come at a rate per second (on stop 51's 2-core VM about 1,300 a
	// second over 30 µs, 15-20 over 100 µs, whatever the loop computes),
	// so a floor of as many half-microsecond steps as the generations'
	// steps of 1-3 µs would see a third to a sixth of them. A percentile
	// of Max or Idle is not expected below the same percentile of Floor
	// in the same run.
	Floor []time.Duration

	// Check, if positive, checks the mask against Accept at every step of
	// the first generation of each grammar: Check tokens drawn from the
	// whole vocabulary, the end-of-generation tokens (against CanEnd),
	// and Check tokens that extend an allowed one (a
	// token going on where another ends, past the pops a walk follows
	// through cross points: where masks and the stepper are most apt to
	// differ). A token's bit must be set exactly when Accept takes it
	// (then rolled back); a step past a matcher limit is not counted. The
	// checks run between the timed parts but change what the caches
	// hold: time with Check 0.
	Check     int
	Checked   int64    // tokens checked
	Disagree  int      // tokens whose mask bit and Accept disagreed
	Examples  []string // the first maxExamples of them: grammar, prefix, token
	prefixIdx []int32  // the vocabulary's normal tokens sorted by their bytes (extensions)

	last *mask.Compiled // the grammar prepared last, not yet walked
}

// maxExamples bounds Walks.Examples (a broken mask disagrees on most
// grammars).
const maxExamples = 20

// Run runs the generations on the grammar prepared last, if any
// (Options.AfterPrepare), and records the slowest step and the most
// first-use work in one step in r too.
func (w *Walks) Run(r *Result) {
	if w.last == nil {
		return
	}
	first, slowest, idle, most, mostTime, steps, timed := w.run(w.last, r.ID)
	var floor time.Duration
	if !w.NoFloor {
		runtime.GC()
		floor, _, _ = slowestFloorStep(steps, timed)
	}
	r.WalkSlowest, r.WalkSlowestIdle, r.WalkFirstUse, r.WalkFirstUseTime, r.WalkFloor = slowest, idle, most, mostTime, floor
	w.Floor = append(w.Floor, floor)
	w.First = append(w.First, first)
	w.Max = append(w.Max, slowest)
	w.Idle = append(w.Idle, idle)
	w.FirstUseMax = append(w.FirstUseMax, most)
	w.FirstUseTime = append(w.FirstUseTime, mostTime)
	w.last = nil
}

// MatcherWalks is Matcher with compile options, preparing w's random
// generations (w may be nil; see Walks.Run). The eager budget counts from
// the start of the conversion (mask.Options.Start), as in the engine.
func MatcherWalks(v *mask.Vocab, opt mask.Options, w *Walks) Accept {
	return func(g *gbnf.Grammar, start time.Time) (func([]byte) bool, Part, error) {
		opt := opt
		opt.Start = start
		opt.Deferred = true
		cm, err := mask.CompileWith(g, v, opt)
		if err != nil {
			return nil, Part{}, err
		}
		pre := measure(func() { err = cm.Precompute(opt.Done) })
		if err != nil {
			return nil, pre, err
		}
		if w != nil {
			w.last = cm
		}
		return func(doc []byte) bool {
			m := cm.NewMatcher()
			return m.AcceptBytes(doc) == nil && m.CanEnd()
		}, pre, nil
	}
}

// run runs the random generations on a fresh compilation: each step
// fills the mask, then accepts a token drawn uniformly from the allowed
// ones; a generation ends at an end-of-generation token, when nothing is
// allowed, or after Steps steps.
//
// A garbage collection runs first, outside the timing: the harness's own
// garbage (every conversion and compile before) would otherwise be
// collected during the steps, charging mark assists and pauses of the
// whole corpus to whichever grammar happens to be walking.
func (w *Walks) run(cm *mask.Compiled, id string) (first, slowest, idle time.Duration, most int64, mostTime time.Duration, steps int, timed time.Duration) {
	runtime.GC()
	rng := rand.New(rand.NewSource(w.Seed))
	v := cm.Vocab()
	bits := make([]uint32, (v.Size()+31)/32)
	allowed := make([]int32, 0, v.Size())
	for g := 0; g < w.Walks; g++ {
		m := cm.NewMatcher()
		for step := 0; step < w.Steps; step++ {
			_, u0 := cm.LazyWork()
			l0 := cm.LazyTime()
			t0 := time.Now()
			m.FillMask(bits)
			d := time.Since(t0)
			if _, u1 := cm.LazyWork(); u1 > u0 {
				w.FirstUse = append(w.FirstUse, u1-u0)
				most = max(most, u1-u0)
			}
			mostTime = max(mostTime, cm.LazyTime()-l0)
			if g == 0 && step == 0 {
				first = d
			}
			allowed = allowed[:0]
			for i, word := range bits {
				for word != 0 {
					allowed = append(allowed, int32(i*32+bits32.TrailingZeros32(word)))
					word &= word - 1
				}
			}
			if w.Check > 0 && g == 0 {
				w.check(v, m, bits, allowed, rng, id)
			}
			if len(allowed) == 0 {
				break
			}
			tok := allowed[rng.Intn(len(allowed))]
			t1 := time.Now()
			err := m.Accept(tok)
			d += time.Since(t1)
			steps++
			timed += d
			slowest = max(slowest, d)
			if _, u2 := cm.LazyWork(); u2 == u0 {
				idle = max(idle, d)
			}
			if err != nil || m.Ended() {
				break
			}
		}
	}
	return first, slowest, idle, most, mostTime, steps, timed
}

// check checks Check tokens of the whole vocabulary and Check that
// extend an allowed token (see Walks.Check) against Accept, at the state
// of m whose mask is bits (allowed: its normal tokens set).
func (w *Walks) check(v *mask.Vocab, m *mask.Matcher, bits []uint32, allowed []int32, rng *rand.Rand, id string) {
	if w.prefixIdx == nil {
		for t := int32(0); int(t) < v.Size(); t++ {
			if v.Kind(t) == mask.TokenNormal {
				w.prefixIdx = append(w.prefixIdx, t)
			}
		}
		sort.Slice(w.prefixIdx, func(i, j int) bool {
			return string(v.Token(w.prefixIdx[i])) < string(v.Token(w.prefixIdx[j]))
		})
	}
	idx := w.prefixIdx
	one := func(tok int32) {
		if v.Kind(tok) != mask.TokenNormal {
			return
		}
		set := bits[tok>>5]&(1<<(uint32(tok)&31)) != 0
		err := m.Accept(tok)
		var lim *mask.LimitError
		if errors.As(err, &lim) {
			return
		}
		took := err == nil
		if took {
			if err := m.Rollback(1); err != nil {
				panic(fmt.Sprintf("schemabench: %s: Rollback after a checked token: %v", id, err))
			}
		}
		w.Checked++
		if took != set {
			w.Disagree++
			if len(w.Examples) < maxExamples {
				w.Examples = append(w.Examples, fmt.Sprintf("%s after %d tokens: token %d %q: mask %v, Accept %v", id, m.Tokens(), tok, v.Token(tok), set, took))
			}
		}
	}
	for i := 0; i < w.Check; i++ {
		one(idx[rng.Intn(len(idx))])
	}
	// The end-of-generation tokens: allowed exactly where the output can
	// end (Accept takes them then, and ends the generation).
	for _, tok := range v.EOG() {
		set := bits[tok>>5]&(1<<(uint32(tok)&31)) != 0
		w.Checked++
		if can := m.CanEnd(); set != can {
			w.Disagree++
			if len(w.Examples) < maxExamples {
				w.Examples = append(w.Examples, fmt.Sprintf("%s after %d tokens: end-of-generation token %d: mask %v, CanEnd %v", id, m.Tokens(), tok, set, can))
			}
		}
	}
	if len(allowed) == 0 {
		return
	}
	for i := 0; i < w.Check; i++ {
		p := v.Token(allowed[rng.Intn(len(allowed))])
		// The tokens that start with p: a range of idx.
		lo := sort.Search(len(idx), func(j int) bool { return string(v.Token(idx[j])) >= string(p) })
		hi := lo + sort.Search(len(idx)-lo, func(j int) bool { return !strings.HasPrefix(string(v.Token(idx[lo+j])), string(p)) })
		if hi > lo {
			one(idx[lo+rng.Intn(hi-lo)])
		}
	}
}

// floorStep is one step of the machine floor (Walks.Floor): a xorshift
// loop of this many rounds, about half a microsecond on the development
// machine, touching no memory.
const floorStep = 300

// floorSink keeps the floor's arithmetic from being optimized away.
var floorSink uint64

// slowestFloorStep times steps of floorStep rounds, at least n of them
// and until they took at least total in all (their timed parts), and
// returns the slowest, how many ran and their time in all.
func slowestFloorStep(n int, total time.Duration) (slowest time.Duration, ran int, timed time.Duration) {
	x := uint64(88172645463325252)
	for ran < n || timed < total {
		t0 := time.Now()
		for range floorStep {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		d := time.Since(t0)
		slowest = max(slowest, d)
		timed += d
		ran++
	}
	floorSink += x
	return slowest, ran, timed
}

// Result is the outcome for one schema.
type Result struct {
	ID      string `json:"id"`
	Strict  string `json:"strict"`  // "ok" or the error kind
	Lenient string `json:"lenient"` // "ok" or the error kind
	// instance agreement of the strict grammar (or the lenient one when
	// strict fails: valid instances only)
	ValidOK      int `json:"valid_ok"`
	ValidTotal   int `json:"valid"`
	InvalidOK    int `json:"invalid_ok"`
	InvalidTotal int `json:"invalid"`

	StrictErr  string        `json:"-"` // first error, for reports
	Warnings   int           `json:"-"`
	ConvertDur time.Duration `json:"-"`
	ParseDur   time.Duration `json:"-"` // gbnf parse of the converted grammar
	PrepareDur time.Duration `json:"-"` // Accept's preparation of the grammar (mask: compile), without PreDur
	PreDur     time.Duration `json:"-"` // the part a decoder overlaps with the prompt (mask: Precompute)
	PrepareErr string        `json:"-"` // Accept could not prepare the grammar (mask: a compile limit)
	GrammarLen int           `json:"-"`
	// The process's system CPU time and minor page faults over the strict
	// conversion, the parse and Accept's preparation without PreDur (its
	// threads': the collector's workers too). Memory the process had not
	// touched, or had given back to the system, costs a fault per page
	// (about 9 µs each on this project's VMs).
	PrepSys    time.Duration `json:"-"`
	PrepFaults int64         `json:"-"`
	// With Walks: the slowest step and the most first-use work units in
	// one step (Walks.Run).
	WalkSlowest      time.Duration `json:"-"`
	WalkSlowestIdle  time.Duration `json:"-"` // of the steps that computed no state on first use (Walks.Idle)
	WalkFloor        time.Duration `json:"-"` // the machine's floor for WalkSlowest (Walks.Floor)
	WalkFirstUse     int64         `json:"-"`
	WalkFirstUseTime time.Duration `json:"-"`
	Failures         []string      `json:"-"` // instances that disagree
	// With Options.Keep: the strict and lenient outputs (the grammar, or
	// the error's text), to compare converter versions byte for byte.
	StrictOut, LenientOut string `json:"-"`
}

// outText is what Result.StrictOut and LenientOut hold: the grammar, or
// the error's text.
func outText(g string, err error) string {
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return g
}

// Kind classifies a Convert error.
func Kind(err error) string {
	if err == nil {
		return "ok"
	}
	var ue *jsonschema2gbnf.UnsupportedError
	var ie *jsonschema2gbnf.InvalidSchemaError
	var re *jsonschema2gbnf.RemoteRefError
	var le *jsonschema2gbnf.LimitError
	var se *jsonschema2gbnf.UnsatisfiableError
	var ne *jsonschema2gbnf.NumberRangeError
	switch {
	case errors.As(err, &re):
		return "remote-ref"
	case errors.As(err, &ne):
		return "number-range"
	case errors.As(err, &le):
		return "limit"
	case errors.As(err, &ie):
		return "invalid"
	case errors.As(err, &se):
		return "unsatisfiable"
	case errors.As(err, &ue):
		return "unsupported"
	}
	return "other"
}

// Options select what Run checks.
type Options struct {
	Accept    Accept                              // nil: Earley
	Convert   []jsonschema2gbnf.Option            // extra options for both modes
	Instances bool                                // check instance agreement
	Filter    func(c *Case) bool                  // nil: all
	Progress  func(i, n int, r *Result)           // optional
	Parse     func(string) (*gbnf.Grammar, error) // nil: gbnf.Parse
	// AfterPrepare, if set, runs right after Accept prepared a grammar,
	// outside the timed part (e.g. Walks.Run).
	AfterPrepare func(*Result)
	// Keep fills Result.StrictOut and LenientOut.
	Keep bool
}

// Run converts every case and checks its instances.
func Run(cases []*Case, o Options) []*Result {
	if o.Accept == nil {
		o.Accept = Earley
	}
	if o.Parse == nil {
		o.Parse = gbnf.Parse
	}
	var out []*Result
	for i, c := range cases {
		if o.Filter != nil && !o.Filter(c) {
			continue
		}
		r := RunOne(c, o)
		out = append(out, r)
		if o.Progress != nil {
			o.Progress(i, len(cases), r)
		}
	}
	return out
}

// RunOne converts one case and checks its instances.
func RunOne(c *Case, o Options) *Result {
	if o.Accept == nil {
		o.Accept = Earley
	}
	if o.Parse == nil {
		o.Parse = gbnf.Parse
	}
	r := &Result{ID: c.ID()}
	var g string
	var err error
	conv := measure(func() { g, err = jsonschema2gbnf.Convert(c.Schema, o.Convert...) })
	r.ConvertDur, r.PrepSys, r.PrepFaults = conv.Dur, conv.Sys, conv.Faults
	r.Strict = Kind(err)
	if err != nil {
		r.StrictErr = err.Error()
	}
	var warns []jsonschema2gbnf.Warning
	lg, lerr := jsonschema2gbnf.Convert(c.Schema, append(append([]jsonschema2gbnf.Option{}, o.Convert...), jsonschema2gbnf.Lenient(&warns))...)
	r.Lenient = Kind(lerr)
	r.Warnings = len(warns)
	if o.Keep {
		r.StrictOut, r.LenientOut = outText(g, err), outText(lg, lerr)
	}
	src, strict := g, true
	if err != nil {
		src, strict = lg, false
	}
	if r.Strict != "ok" && r.Lenient != "ok" {
		return r
	}
	r.GrammarLen = len(src)
	var gr *gbnf.Grammar
	var perr error
	parse := measure(func() { gr, perr = o.Parse(src) })
	r.ParseDur, r.PrepSys, r.PrepFaults = parse.Dur, r.PrepSys+parse.Sys, r.PrepFaults+parse.Faults
	if perr != nil {
		// a grammar gbnf cannot read is a converter bug: report it as such
		msg := perr.Error()
		if len(msg) > 200 {
			msg = msg[:200]
		}
		if strict {
			r.Strict = "bad-grammar"
			r.StrictErr = msg
		} else {
			r.Lenient = "bad-grammar"
		}
		return r
	}
	if !o.Instances {
		return r
	}
	t0 := time.Now()
	// The preparation began r.ConvertDur+r.ParseDur ago, not counting the
	// lenient conversion run in between (only the engine's path is timed).
	var accept func([]byte) bool
	var pre Part
	var aerr error
	all := measure(func() { accept, pre, aerr = o.Accept(gr, t0.Add(-(r.ConvertDur + r.ParseDur))) })
	r.PrepareDur, r.PreDur = all.Dur-pre.Dur, pre.Dur
	r.PrepSys, r.PrepFaults = r.PrepSys+all.Sys-pre.Sys, r.PrepFaults+all.Faults-pre.Faults
	if o.AfterPrepare != nil {
		o.AfterPrepare(r)
	}
	if aerr != nil {
		r.PrepareErr = aerr.Error()
		return r
	}
	for i, t := range c.Tests {
		if !t.Valid && !strict {
			continue // a lenient grammar may accept invalid documents
		}
		doc, ferr := jsonschema2gbnf.Format(c.Schema, t.Data, o.Convert...)
		ok := ferr == nil && accept(doc)
		if t.Valid {
			r.ValidTotal++
			if ok {
				r.ValidOK++
			} else {
				r.Failures = append(r.Failures, fmt.Sprintf("valid #%d rejected: %s", i, clip(doc)))
			}
		} else {
			r.InvalidTotal++
			if !ok {
				r.InvalidOK++
			} else {
				r.Failures = append(r.Failures, fmt.Sprintf("invalid #%d accepted: %s", i, clip(doc)))
			}
		}
	}
	return r
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// unsupportedRE finds the keywords of UnsupportedErrors in an error text.
var unsupportedRE = regexp.MustCompile(`unsupported keyword "([^"]+)"`)

// StrictFailures tallies the schemas strict mode rejects: by error kind,
// and for unsupported keywords by keyword (a schema counts once per
// keyword it names), most frequent first.
func StrictFailures(rs []*Result) string {
	counts := map[string]int{}
	for _, r := range rs {
		if r.Strict == "ok" {
			continue
		}
		if r.Strict != "unsupported" {
			counts[r.Strict]++
			continue
		}
		seen := map[string]bool{}
		for _, m := range unsupportedRE.FindAllStringSubmatch(r.StrictErr, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				counts["unsupported "+m[1]]++
			}
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return counts[keys[i]] > counts[keys[j]] || (counts[keys[i]] == counts[keys[j]] && keys[i] < keys[j])
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-32s %d\n", k, counts[k])
	}
	return b.String()
}

// Row is one line of the per-dataset table.
type Row struct {
	Dataset               string
	Schemas               int
	Strict, Lenient       int
	ValidOK, Valid        int
	InvalidOK, Invalid    int
	AgreeSchemas, Checked int // strict schemas whose instances all agree / strict schemas with instances
}

// Table aggregates results per dataset (plus a total row).
func Table(rs []*Result) []Row {
	byDS := map[string]*Row{}
	var order []string
	total := &Row{Dataset: "TOTAL"}
	for _, r := range rs {
		ds := r.ID[:strings.IndexByte(r.ID, '/')]
		row := byDS[ds]
		if row == nil {
			row = &Row{Dataset: ds}
			byDS[ds] = row
			order = append(order, ds)
		}
		for _, x := range []*Row{row, total} {
			x.Schemas++
			if r.Strict == "ok" {
				x.Strict++
				x.ValidOK += r.ValidOK
				x.Valid += r.ValidTotal
				x.InvalidOK += r.InvalidOK
				x.Invalid += r.InvalidTotal
				if r.ValidTotal+r.InvalidTotal > 0 {
					x.Checked++
					if r.ValidOK == r.ValidTotal && r.InvalidOK == r.InvalidTotal {
						x.AgreeSchemas++
					}
				}
			}
			if r.Lenient == "ok" {
				x.Lenient++
			}
		}
	}
	sort.Strings(order)
	var out []Row
	for _, ds := range order {
		out = append(out, *byDS[ds])
	}
	return append(out, *total)
}

// FormatTable prints the rows as a Markdown table.
func FormatTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| dataset | schemas | strict | lenient | valid accepted | invalid rejected | schemas agreeing |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	pct := func(a, n int) string {
		if n == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(n))
	}
	for _, r := range rows {
		name := r.Dataset
		if name == "TOTAL" {
			name = "**total**"
		}
		fmt.Fprintf(&b, "| %s | %d | %d (%s) | %d (%s) | %d/%d | %d/%d | %d/%d |\n",
			name, r.Schemas, r.Strict, pct(r.Strict, r.Schemas), r.Lenient, pct(r.Lenient, r.Schemas),
			r.ValidOK, r.Valid, r.InvalidOK, r.Invalid, r.AgreeSchemas, r.Checked)
	}
	return b.String()
}

// Baseline is the checked-in per-schema record: one JSON object per line.
type Baseline map[string]*Result

// ReadBaseline reads a baseline file.
func ReadBaseline(path string) (Baseline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := Baseline{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		b[r.ID] = &r
	}
	return b, sc.Err()
}

// WriteBaseline writes results as a baseline file (sorted by id).
func WriteBaseline(path string, rs []*Result) error {
	sorted := append([]*Result(nil), rs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	var b strings.Builder
	for _, r := range sorted {
		j, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Compare lists regressions (worse than the baseline) and improvements.
func Compare(base Baseline, rs []*Result) (regressions, improvements []string) {
	score := func(kind string) int {
		if kind == "ok" {
			return 1
		}
		return 0
	}
	for _, r := range rs {
		b, ok := base[r.ID]
		if !ok {
			improvements = append(improvements, r.ID+": new")
			continue
		}
		if score(r.Strict) < score(b.Strict) {
			regressions = append(regressions, fmt.Sprintf("%s: strict %s → %s (%s)", r.ID, b.Strict, r.Strict, r.StrictErr))
		} else if score(r.Strict) > score(b.Strict) {
			improvements = append(improvements, fmt.Sprintf("%s: strict %s → ok", r.ID, b.Strict))
		}
		if score(r.Lenient) < score(b.Lenient) {
			regressions = append(regressions, fmt.Sprintf("%s: lenient %s → %s", r.ID, b.Lenient, r.Lenient))
		} else if score(r.Lenient) > score(b.Lenient) {
			improvements = append(improvements, fmt.Sprintf("%s: lenient %s → ok", r.ID, b.Lenient))
		}
		if r.Strict == "ok" && b.Strict == "ok" {
			if r.ValidOK < b.ValidOK || r.InvalidOK < b.InvalidOK {
				regressions = append(regressions, fmt.Sprintf("%s: agreement valid %d→%d, invalid %d→%d: %s", r.ID, b.ValidOK, r.ValidOK, b.InvalidOK, r.InvalidOK, strings.Join(r.Failures, "; ")))
			} else if r.ValidOK > b.ValidOK || r.InvalidOK > b.InvalidOK {
				improvements = append(improvements, fmt.Sprintf("%s: agreement improved", r.ID))
			}
		}
	}
	return regressions, improvements
}
