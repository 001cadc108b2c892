// Package maskbench is the mask benchmark: the five cases of
// ../shared/bench run through the mask automaton with the Llama-3
// vocabulary, and optionally through a peer engine (llama.cpp's grammar
// engine, registered by a cgo build) in the same run, on the same grammar
// text and the same tokens.
//
// For each case it reports the compile time (grammar against an already
// prepared vocabulary; the one-off vocabulary preparation is reported
// apart), the per-step mask time (FillMask) on the first pass over the
// document (cold: every context is met for the first time) and on later
// passes (warm), the time of Accept, allocations per token, the memory of
// the compiled automaton, and the peer's per-step mask time with the
// ratio. With Runs > 1 the cold pass is repeated on fresh compilations
// (optionally with a CPU-bound process beside it, Busy), and the
// spread of its p99 and maximum over the runs is reported against the
// targets (p99 ≤ 50 µs, max ≤ 250 µs).
package maskbench

import (
	"fmt"
	"io"
	"math/bits"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/benchcases"
	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/madvfree"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// SchemaIndent is the whitespace run allowed between JSON tokens for the
// schema cases: the bench runs its peers with any whitespace, and the
// documents are pretty-printed with two-space indentation.
const SchemaIndent = 16

// Options configures Run.
type Options struct {
	Cases     []string // case ids or prefixes ("03"); empty means all
	Compiles  int      // compile runs per case (median reported); default 5
	Passes    int      // passes over each document (the first is cold); default 5
	Peer      Peer     // optional peer engine
	PeerSteps int      // at most this many peer mask steps per case (each costs tens of ms); default 100
	Runs      int      // cold passes on fresh compilations per case (the first is the full measurement); default 1
	Busy      bool     // keep a CPU-bound process (sh -c 'while :; do :; done') running during the runs, it and the runs pinned to CPUs of their own where allowed (BusyPlacement)
	Log       io.Writer
}

// Cold-pass targets (DESIGN.md): per case, in every run.
const (
	TargetColdP99 = 50.0  // µs
	TargetColdMax = 250.0 // µs
)

// Peer is another mask engine run on the same grammar and tokens.
type Peer interface {
	Name() string
	// Replay compiles grammar (GBNF) against the vocabulary and feeds
	// tokens one by one, computing the mask before each (at most
	// maxSteps masks).
	Replay(grammar string, v *mask.Vocab, tokens []int32, maxSteps int) (*PeerResult, error)
}

// PeerResult is what a peer measured.
type PeerResult struct {
	Compile   time.Duration
	MaskTimes []time.Duration
	Allowed   []int // allowed tokens per step, end-of-generation ids excluded
	Rejected  int   // index of the first document token the peer rejected, or -1
}

// Stats summarizes durations in microseconds.
type Stats struct {
	N                        int
	Mean, P50, P99, Max, Sum float64
}

func stats(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Stats{
		N:    len(s),
		Mean: us(sum) / float64(len(s)),
		P50:  us(s[len(s)/2]),
		P99:  us(s[min(len(s)-1, len(s)*99/100)]),
		Max:  us(s[len(s)-1]),
		Sum:  us(sum),
	}
}

// Result is one case's measurements.
type Result struct {
	Case       string
	Tokens     int
	Compile    time.Duration // median
	Cold, Warm Stats         // FillMask per step (first pass; later passes)
	Accept     Stats         // Accept per token (later passes)
	AllocsTok  float64       // heap allocations per token (FillMask + Accept), later passes (a new matcher each)
	// SteadyAllocsTok: the same, replaying the document with one matcher
	// (after Reset): the cost of a step once a sequence's contexts are
	// known; 0 means no allocation at all.
	SteadyAllocsTok float64
	MemBytes        int // compiled automaton + mask cache after the passes
	// Deterministic measures of the compilation and the cold pass: the
	// states precomputed (of those that need it) and their work units,
	// and the work of the computations on first use during the cold pass
	// (all, and the most in one step).
	EagerStates, TopStates int
	EagerWork              int64
	ColdLazyWork           int64
	ColdLazyMaxStep        int64
	// ColdSteps holds every run's cold pass (the first is Cold's), step
	// by step (FillMask times): every run compiles the same automaton and
	// precomputes the same states, so step i does the same work in every
	// run, and the median of step i over the runs is what it costs
	// without whatever interrupted it in one of them (SlowSteps).
	ColdSteps [][]time.Duration
	Peer      *PeerResult
	PeerMask  Stats
	PeerErr   error
	// CountMismatches counts steps where the peer allowed a different
	// number of non-end-of-generation tokens than the automaton, over the
	// steps the peer ran, except the known difference (InvalidLeadSteps):
	// llama.cpp's UTF-8 decoder reads the bytes F5–FF as lead bytes (of
	// code points above U+10FFFF) that a negated class such as JSON's
	// string class accepts, while the automaton produces valid UTF-8 only;
	// at such steps llama.cpp allows exactly the vocabulary's single-byte
	// tokens F5–FF more. Counts are the automaton's counts per step.
	CountMismatches  int
	InvalidLeadSteps int
	Counts           []int
	Err              error
}

// Run measures the cases. sharedDir is the ../shared folder.
func Run(sharedDir string, opt Options) (prep time.Duration, results []*Result, err error) {
	if opt.Compiles <= 0 {
		opt.Compiles = 5
	}
	if opt.Passes <= 0 {
		opt.Passes = 5
	}
	if opt.PeerSteps <= 0 {
		opt.PeerSteps = 100
	}
	logf := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, format+"\n", args...)
		}
	}
	cases, err := benchcases.Load(filepath.Join(sharedDir, "bench"))
	if err != nil {
		return 0, nil, err
	}
	v, err := llama3vocab.Load(sharedDir)
	if err != nil {
		return 0, nil, err
	}
	prep = mask.PrepareVocab(v)
	if !opt.Busy {
		return prep, runAll(cases, v, opt, logf), nil
	}
	// The busy process on a CPU of its own and the runs on another (the
	// target's "a CPU-bound process on the other core"): left to the
	// scheduler, the process may share the runs' CPU, and a step then
	// waits out its time slice (README, stop 51: pinned or not, about
	// half the rounds on a 2-core VM still see one step held up by the
	// machine).
	runCPU, busyCPU, pin := cpuPair()
	err = besideBusy(runCPU, busyCPU, pin, func() { results = runAll(cases, v, opt, logf) })
	return prep, results, err
}

// BusyPlacement says where Run puts the busy process and the runs with
// Options.Busy.
func BusyPlacement() string {
	runCPU, busyCPU, ok := cpuPair()
	if !ok {
		return "not pinned (no CPU affinity here, or one CPU allowed)"
	}
	return fmt.Sprintf("the process pinned to CPU %d, the runs' thread to CPU %d", busyCPU, runCPU)
}

// runAll runs the cases: the full measurement, then the further cold
// passes of opt.Runs.
func runAll(cases []*benchcases.Case, v *mask.Vocab, opt Options, logf func(string, ...any)) []*Result {
	var results []*Result
	for run := 0; run < max(opt.Runs, 1); run++ {
		k := 0
		for _, bc := range cases {
			if !selected(bc.ID, opt.Cases) {
				continue
			}
			if run == 0 {
				logf("case %s: %d tokens", bc.ID, len(bc.Tokens))
				r := runCase(bc, v, opt)
				if r.Err != nil {
					logf("case %s: %v", bc.ID, r.Err)
				}
				results = append(results, r)
				continue
			}
			r := results[k]
			k++
			if r.Err != nil {
				continue
			}
			steps, err := coldPass(bc, v)
			if err != nil {
				r.Err = err
				continue
			}
			r.ColdSteps = append(r.ColdSteps, steps)
		}
		if run > 0 {
			logf("run %d done", run+1)
		}
	}
	return results
}

// busyLoop starts a CPU-bound process (a shell loop), which keeps a core
// busy until the returned function kills it; pinned to CPU cpu if cpu
// is not negative. A process, not a goroutine: a spinning goroutine
// would also delay this process's garbage collector, which a busy
// neighbour does not.
func busyLoop(cpu int) (stop func(), err error) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("busy loop: %w", err)
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if cpu >= 0 {
		if err := pinProcess(cmd.Process.Pid, cpu); err != nil {
			stop()
			return nil, fmt.Errorf("busy loop: %w", err)
		}
	}
	return stop, nil
}

// coldPass compiles the case once more and times FillMask on the first
// pass over its document, step by step.
func coldPass(bc *benchcases.Case, v *mask.Vocab) ([]time.Duration, error) {
	src, err := Grammar(bc)
	if err != nil {
		return nil, err
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		return nil, err
	}
	c, err := mask.Compile(g, v)
	if err != nil {
		return nil, err
	}
	words := make([]uint32, c.Words())
	m := c.NewMatcher()
	ds := make([]time.Duration, 0, len(bc.Tokens)+1)
	for i := 0; i <= len(bc.Tokens); i++ {
		t0 := time.Now()
		m.FillMask(words)
		ds = append(ds, time.Since(t0))
		if i < len(bc.Tokens) {
			if err := m.Accept(bc.Tokens[i]); err != nil {
				return nil, err
			}
		}
	}
	return ds, nil
}

func selected(id string, want []string) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if strings.HasPrefix(id, w) {
			return true
		}
	}
	return false
}

// Grammar returns the GBNF text of a bench case: its grammar file, or its
// schema converted with flexible whitespace.
func Grammar(bc *benchcases.Case) (string, error) {
	if bc.Grammar != "" {
		return bc.Grammar, nil
	}
	return jsonschema2gbnf.Convert(bc.Schema, jsonschema2gbnf.FlexibleWhitespace(SchemaIndent))
}

func runCase(bc *benchcases.Case, v *mask.Vocab, opt Options) *Result {
	r := &Result{Case: bc.ID, Tokens: len(bc.Tokens)}
	src, err := Grammar(bc)
	if err != nil {
		r.Err = err
		return r
	}
	var compiles []time.Duration
	var c *mask.Compiled
	for range opt.Compiles {
		t0 := time.Now()
		g, err := gbnf.Parse(src)
		if err == nil {
			c, err = mask.Compile(g, v)
		}
		if err != nil {
			r.Err = err
			return r
		}
		compiles = append(compiles, time.Since(t0))
	}
	slices.Sort(compiles)
	r.Compile = compiles[len(compiles)/2]

	st := c.Stats()
	r.EagerStates, r.TopStates, r.EagerWork = st.EagerStates, st.TopStates, st.EagerWork
	words := make([]uint32, c.Words())
	var cold, warm, accept []time.Duration
	counts := make([]int, len(bc.Tokens)+1)
	var ms0, ms1 runtime.MemStats
	for pass := range opt.Passes {
		m := c.NewMatcher()
		if pass == 1 {
			runtime.GC()
			runtime.ReadMemStats(&ms0)
		}
		for i := 0; i <= len(bc.Tokens); i++ {
			_, u0 := c.LazyWork()
			t0 := time.Now()
			m.FillMask(words)
			d := time.Since(t0)
			if pass == 0 {
				_, u1 := c.LazyWork()
				r.ColdLazyWork += u1 - u0
				r.ColdLazyMaxStep = max(r.ColdLazyMaxStep, u1-u0)
				cold = append(cold, d)
				n := 0
				for _, w := range words {
					n += bits.OnesCount32(w)
				}
				for _, id := range v.EOG() {
					if words[id>>5]&(1<<(uint32(id)&31)) != 0 {
						n--
					}
				}
				counts[i] = n
			} else {
				warm = append(warm, d)
			}
			if i == len(bc.Tokens) {
				if !m.CanEnd() {
					r.Err = fmt.Errorf("cannot end after the document")
					return r
				}
				break
			}
			tok := bc.Tokens[i]
			if words[tok>>5]&(1<<(uint32(tok)&31)) == 0 {
				r.Err = fmt.Errorf("document token %d (%q) at step %d not allowed", tok, v.Token(tok), i)
				return r
			}
			t0 = time.Now()
			if err := m.Accept(tok); err != nil {
				r.Err = err
				return r
			}
			if pass > 0 {
				accept = append(accept, time.Since(t0))
			}
		}
	}
	if opt.Passes > 1 {
		runtime.ReadMemStats(&ms1)
		steps := (opt.Passes - 1) * len(bc.Tokens)
		// The time slices grow during the passes; count their growth out.
		r.AllocsTok = float64(ms1.Mallocs-ms0.Mallocs) / float64(steps)
	}
	r.Cold, r.Warm, r.Accept = stats(cold), stats(warm), stats(accept)
	r.ColdSteps = [][]time.Duration{cold}
	r.Counts = counts
	// Steady state: one matcher, replayed after Reset.
	m := c.NewMatcher()
	replay := func() {
		m.Reset()
		for _, tok := range bc.Tokens {
			m.FillMask(words)
			_ = m.Accept(tok)
		}
		m.FillMask(words)
	}
	for range mask.DenseAfter { // (the masks the matcher keeps dense made)
		replay()
	}
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	for range 3 {
		replay()
	}
	runtime.ReadMemStats(&ms1)
	r.SteadyAllocsTok = float64(ms1.Mallocs-ms0.Mallocs) / float64(3*len(bc.Tokens))
	r.MemBytes = c.MemoryBytes()

	if opt.Peer != nil {
		// The peer gets the canonical form of the grammar, which every
		// llama.cpp version reads (e.g. "-" inside a class as \x2D, not
		// the newer \-).
		g, _ := gbnf.Parse(src)
		pr, err := opt.Peer.Replay(g.String(), v, bc.Tokens, opt.PeerSteps)
		r.Peer, r.PeerErr = pr, err
		if err == nil {
			r.PeerMask = stats(pr.MaskTimes)
			invalidLead := 0
			for b := 0xF5; b <= 0xFF; b++ {
				if _, ok := v.Lookup(string([]byte{byte(b)})); ok {
					invalidLead++
				}
			}
			for i, n := range pr.Allowed {
				if i >= len(counts) || n == counts[i] {
					continue
				}
				if n-counts[i] == invalidLead {
					r.InvalidLeadSteps++
					continue
				}
				r.CountMismatches++
			}
		}
	}
	return r
}

// WriteTable writes the results as a Markdown table.
func WriteTable(w io.Writer, prep time.Duration, rs []*Result, peerName string) {
	fmt.Fprintf(w, "Vocabulary preparation (Llama-3, 128,256 ids; once per vocabulary): %.1f ms\n", ms(prep))
	if m := madvfree.Mode(); m != "" {
		// whether the runs' compiles take back freed pages without faults
		fmt.Fprintf(w, "Free heap pages go back to the system with %s (GODEBUG madvdontneed; internal/madvfree).\n", m)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | tokens | parse+compile ms | mask µs cold mean / p50 / p99 / max | mask µs warm mean / p50 / p99 / max | accept µs mean / p99 | allocs/token new matcher / steady | automaton KB | eager states, work units | cold first-use work units, most in a step |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(w, "| %s | %d | error: %v | | | | | | | |\n", r.Case, r.Tokens, r.Err)
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %s | %s | %.1f / %.1f | %.2f / %.2f | %d | %d/%d, %d | %d, %d |\n", r.Case, r.Tokens, ms(r.Compile),
			fmtStats(r.Cold), fmtStats(r.Warm), r.Accept.Mean, r.Accept.P99, r.AllocsTok, r.SteadyAllocsTok, r.MemBytes/1024,
			r.EagerStates, r.TopStates, r.EagerWork, r.ColdLazyWork, r.ColdLazyMaxStep)
	}
	if len(rs) > 0 && len(rs[0].ColdSteps) > 1 {
		fmt.Fprintf(w, "\nCold pass on a fresh compilation, %d runs (targets: p99 ≤ %.0f µs and max ≤ %.0f µs in every run):\n\n", len(rs[0].ColdSteps), TargetColdP99, TargetColdMax)
		fmt.Fprintln(w, "| case | cold p99 µs min / median / max | cold max µs min / median / max | runs meeting both |")
		fmt.Fprintln(w, "|---|---|---|---|")
		for _, r := range rs {
			if r.Err != nil {
				continue
			}
			var p99, mx []float64
			ok := 0
			for _, s := range r.ColdRuns() {
				p99 = append(p99, s.P99)
				mx = append(mx, s.Max)
				if s.P99 <= TargetColdP99 && s.Max <= TargetColdMax {
					ok++
				}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %d of %d |\n", r.Case, spread(p99), spread(mx), ok, len(r.ColdSteps))
		}
		writeSlowSteps(w, rs)
	}
	if peerName == "" {
		return
	}
	fmt.Fprintf(w, "\nSame grammar text and tokens through %s in the same run:\n\n", peerName)
	fmt.Fprintln(w, "| case | peer steps | peer compile ms | peer mask µs mean / p50 / p99 / max | ratio to our cold mean | ratio to our cold p50 | equal allowed counts | F5–FF steps | other differences |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		switch {
		case r.Err != nil:
			continue
		case r.PeerErr != nil:
			fmt.Fprintf(w, "| %s | error: %v | | | | | |\n", r.Case, r.PeerErr)
			continue
		case r.Peer == nil:
			continue
		}
		rej := ""
		if r.Peer.Rejected >= 0 {
			rej = fmt.Sprintf(" (rejected document token %d)", r.Peer.Rejected)
		}
		ratio, ratio50 := 0.0, 0.0
		if r.Cold.Mean > 0 {
			ratio = r.PeerMask.Mean / r.Cold.Mean
		}
		if r.Cold.P50 > 0 {
			ratio50 = r.PeerMask.P50 / r.Cold.P50
		}
		equal := len(r.Peer.Allowed) - r.InvalidLeadSteps - r.CountMismatches
		fmt.Fprintf(w, "| %s | %d%s | %.1f | %s | %.0f× | %.0f× | %d | %d | %d |\n", r.Case, r.PeerMask.N, rej, ms(r.Peer.Compile),
			fmtStats(r.PeerMask), ratio, ratio50, equal, r.InvalidLeadSteps, r.CountMismatches)
	}
}

// ColdRuns returns the statistics of each run's cold pass (the first
// is Cold).
func (r *Result) ColdRuns() []Stats {
	out := make([]Stats, len(r.ColdSteps))
	for i, steps := range r.ColdSteps {
		out[i] = stats(steps)
	}
	return out
}

// maxSlowRows bounds the slow steps listed (the count covers them all).
const maxSlowRows = 20

// writeSlowSteps lists the cold steps over TargetColdMax with their
// medians over the runs.
func writeSlowSteps(w io.Writer, rs []*Result) {
	type row struct {
		c string
		s SlowStep
	}
	var rows []row
	var worst time.Duration
	for _, r := range rs {
		if r.Err != nil {
			continue
		}
		for _, s := range r.SlowSteps() {
			rows = append(rows, row{r.Case, s})
			worst = max(worst, s.Median)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nCold steps over %.0f µs: %d. Every run compiles the same automaton and precomputes the same states, so a step does the same work in every run; beside each, that step's median over the %d runs (the largest: %.1f µs):\n\n", TargetColdMax, len(rows), len(rs[0].ColdSteps), us(worst))
	fmt.Fprintln(w, "| case | run | step | µs | median over the runs, µs |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for i, x := range rows {
		if i == maxSlowRows {
			fmt.Fprintf(w, "| … %d more | | | | |\n", len(rows)-maxSlowRows)
			break
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %.1f |\n", x.c, x.s.Run, x.s.Step, us(x.s.Wall), us(x.s.Median))
	}
}

// WriteStalls writes what ProbeMachine measured.
func WriteStalls(w io.Writer, r *StallReport) {
	if r == nil {
		return
	}
	where, beside := "not pinned (no CPU affinity here, or one CPU allowed)", "a busy process"
	if r.Pinned {
		where, beside = fmt.Sprintf("its thread pinned to CPU %d", r.ProbeCPU), fmt.Sprintf("a busy process pinned to CPU %d", r.BusyCPU)
	}
	fmt.Fprintf(w, "\nStall probe: a loop that only reads the clock (%.2f µs a read), %s, %.1f s with the other CPUs idle and %.1f s beside %s, was held up over %.0f µs %s with the others idle and %s beside the busy process.",
		us(r.Idle.Duration)/float64(max(r.Idle.Reads, 1)), where, r.Idle.Duration.Seconds(), r.Beside.Duration.Seconds(), beside, us(r.Idle.Over), stallCount(r.Idle), stallCount(r.Beside))
	if r.Idle.OnCPU >= 0 {
		fmt.Fprintf(w, " \"On CPU\": the thread's CPU time ran on through at least half the gap, so this system did not preempt it (the virtual CPU was not running, or the kernel worked on the thread's behalf).")
	}
	if r.Coupled() {
		fmt.Fprintf(w, " Work on another CPU holds this one up: these CPUs are not independent (virtual CPUs sharing physical ones), so whatever runs beside the timed steps (the busy process, the collector after a compile) lengthens some of them, whatever they compute.")
	}
	fmt.Fprintln(w)
}

// stallCount formats one probe's count, rate and longest gap.
func stallCount(s Stalls) string {
	out := fmt.Sprintf("%d times (%.2f a second", s.Count, float64(s.Count)/max(s.Duration.Seconds(), 1e-9))
	if s.Count > 0 {
		out += fmt.Sprintf(", the longest %.0f µs", us(s.Max))
		if s.OnCPU >= 0 {
			out += fmt.Sprintf(", %d on CPU", s.OnCPU)
		}
	}
	return out + ")"
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// spread formats the min, median and max of xs (sorted in place).
func spread(xs []float64) string {
	slices.Sort(xs)
	return fmt.Sprintf("%.1f / %.1f / %.1f", xs[0], xs[len(xs)/2], xs[len(xs)-1])
}

func fmtStats(s Stats) string {
	return fmt.Sprintf("%.2f / %.2f / %.1f / %.0f", s.Mean, s.P50, s.P99, s.Max)
}
