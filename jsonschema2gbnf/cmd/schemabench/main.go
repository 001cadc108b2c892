// Command schemabench converts the JSONSchemaBench sample with
// jsonschema2gbnf and prints the per-dataset table: schemas that convert
// in strict and lenient mode, and for the strict grammars how many valid
// instances (re-serialized with jsonschema2gbnf.Format) are accepted and
// invalid ones rejected. It also prints convert time percentiles.
//
//	go run ./jsonschema2gbnf/cmd/schemabench [-corpus dir] [-instances] [-flexible] [-accept earley|mask] [-v] [-only Dataset/name,...] [-dump dir] [-runs n]
//	go run ./jsonschema2gbnf/cmd/schemabench -combine t1.tsv,t2.tsv,t3.tsv
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/structgen/structgen/internal/gcfloor"
	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/madvfree"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/schemabench"
	"github.com/structgen/structgen/mask"
)

func main() {
	// What the server pays: free pages given back lazily (madvfree), so
	// that a compilation taking back pages an earlier one freed pays no
	// fault for them; GODEBUG=madvdontneed=1 measures Go's default.
	if err := madvfree.Reexec(); err != nil {
		fmt.Fprintln(os.Stderr, "schemabench: free memory goes back to the system at once (Go's default):", err)
	}
	corpus := flag.String("corpus", "", "jsonschemabench folder (default ../shared/corpus/jsonschemabench)")
	instances := flag.Bool("instances", true, "check instance agreement")
	flexible := flag.Bool("flexible", false, "flexible whitespace")
	verbose := flag.Bool("v", false, "print every failing schema with its error")
	only := flag.String("only", "", "only schemas whose id contains this (or one of these, comma-separated)")
	accept := flag.String("accept", "earley", "acceptance check: earley (reference recognizer) or mask (token-mask automaton, Llama-3 vocabulary)")
	eager := flag.Int64("eager", 0, "with -accept mask: mask.Options.EagerWork, work units (0: mask.DefaultEagerWork, negative: unbounded)")
	walks := flag.Int("walks", 0, "with -accept mask: random generations per grammar, right after compile, timing each mask step")
	vocabPath := flag.String("vocab", "", "with -accept mask: the vocabulary to compile against (a GGUF file, a tokenizer.json or its folder, as mask.LoadVocab reads them) instead of Llama-3's")
	check := flag.Int("check", 0, "with -walks: at every step of each grammar's first generation, check this many tokens of the vocabulary and as many that extend an allowed token: the mask's bit must be set exactly when Matcher.Accept takes the token (a differential check of the masks; it changes what the caches hold, so time without it)")
	floor := flag.Bool("floor", true, "with -walks: after each grammar's generations, a collection and steps of a fixed arithmetic loop, as many and for as long in all as the generations' timed steps, the slowest of them (the machine floor)")
	timesOut := flag.String("times", "", "write per-schema times (id, convert, parse, compile in µs, grammar bytes; with -walks the slowest step in µs and the most first-use work units in one step; the Precompute µs; with -walks the most first-use time in one step, the slowest step that computed no state on first use, and the machine floor's slowest step, µs; the process's system time, µs, and minor page faults over convert+parse+compile) to this TSV file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the run to this file (one sample per 4 KB allocated)")
	calib := flag.Int("calibrate", 0, "with -accept mask: instead of the table, measure the cost of mask's work units on every Nth grammar (mask.WorkUnitNanos, mask.StateWorkUnits)")
	runs := flag.Int("runs", 0, "convert-only mode: time the strict conversions alone, this many passes over the corpus; print each pass's percentiles, their min/median/max, and the allocations per pass (-times: each schema's fastest time)")
	dump := flag.String("dump", "", "write every schema's strict and lenient output (grammar or error) to this folder, to compare converter versions (diff -r)")
	pretouch := flag.Int("pretouch", madvfree.DefaultPretouch, "bytes of heap to touch at start, as structgen serve does (madvfree.Pretouch; with MADV_FREE only), so that the heap's growth up to that size takes no page faults; 0: off")
	gcFloor := flag.Int("gc-floor", gcfloor.DefaultFloor, "bytes the heap may grow by past its live size before the garbage collector runs, at least, as structgen serve sets (gcfloor.Set); 0: GOGC alone")
	combineFiles := flag.String("combine", "", "instead of a run: read the -times files of several runs (comma-separated) and print each run's percentiles and those of every grammar's best value over the runs")
	flag.Parse()
	if *combineFiles != "" {
		if err := combine(strings.Split(*combineFiles, ","), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "schemabench:", err)
			os.Exit(1)
		}
		return
	}
	if err := gcfloor.Set(*gcFloor); err != nil {
		fmt.Fprintln(os.Stderr, "schemabench:", err)
		os.Exit(2)
	}
	pt, err := madvfree.Pretouch(*pretouch)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemabench:", err)
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemabench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			f, err := os.Create(*memProfile)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "schemabench:", err)
			}
		}()
	}
	dir := *corpus
	if dir == "" {
		d, why := sharedtest.Find()
		if d == "" {
			fmt.Fprintln(os.Stderr, "schemabench:", why)
			os.Exit(2)
		}
		dir = filepath.Join(d, "corpus", "jsonschemabench")
	}
	cases, err := schemabench.Load(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemabench:", err)
		os.Exit(1)
	}
	if *runs > 0 {
		var opts []jsonschema2gbnf.Option
		if *flexible {
			opts = append(opts, jsonschema2gbnf.FlexibleWhitespace(0))
		}
		if err := convertOnly(cases, *runs, *only, opts, *timesOut); err != nil {
			fmt.Fprintln(os.Stderr, "schemabench:", err)
			os.Exit(1)
		}
		return
	}
	o := schemabench.Options{Instances: *instances, Keep: *dump != ""}
	var wk *schemabench.Walks
	if *accept == "mask" {
		d, _ := sharedtest.Find()
		v, err := llama3vocab.Load(d)
		if *vocabPath != "" {
			v, err = mask.LoadVocab(*vocabPath)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemabench:", err)
			os.Exit(1)
		}
		// The vocabulary's one-off preparation, as the engine does it
		// when it loads a model: not part of the first schema's compile.
		fmt.Fprintf(os.Stderr, "vocabulary preparation (once per vocabulary, not timed below): %v\n", mask.PrepareVocab(v).Round(time.Millisecond))
		if *calib > 0 {
			calibrate(cases, v, *calib, 5)
			return
		}
		if *walks > 0 {
			wk = &schemabench.Walks{Walks: *walks, Steps: 200, Seed: 1, NoFloor: !*floor, Check: *check}
			o.AfterPrepare = wk.Run
		}
		o.Accept = schemabench.MatcherWalks(v, mask.Options{EagerWork: *eager}, wk)
	}
	if *flexible {
		o.Convert = append(o.Convert, jsonschema2gbnf.FlexibleWhitespace(0))
	}
	if *only != "" {
		o.Filter = func(c *schemabench.Case) bool { return selected(c.ID(), *only) }
	}
	rs := schemabench.Run(cases, o)
	var durs, parse, comp, pre, total, withPre, sys []time.Duration
	var strictRs []*schemabench.Result
	prepFail := 0
	for _, r := range rs {
		if r.PrepareErr != "" {
			prepFail++
			if *verbose {
				fmt.Printf("%s: acceptance check could not prepare the grammar: %s\n", r.ID, r.PrepareErr)
			}
		}
		if r.Strict == "ok" {
			durs = append(durs, r.ConvertDur)
			parse = append(parse, r.ParseDur)
			comp = append(comp, r.PrepareDur)
			pre = append(pre, r.PreDur)
			total = append(total, r.ConvertDur+r.ParseDur+r.PrepareDur)
			withPre = append(withPre, r.ConvertDur+r.ParseDur+r.PrepareDur+r.PreDur)
			sys = append(sys, r.PrepSys)
			strictRs = append(strictRs, r)
		}
		if *verbose && (r.Strict != "ok" || len(r.Failures) > 0) {
			fmt.Printf("%s: strict=%s lenient=%s %s\n", r.ID, r.Strict, r.Lenient, r.StrictErr)
			for _, f := range r.Failures {
				fmt.Printf("    %s\n", f)
			}
		}
	}
	fmt.Print(schemabench.FormatTable(schemabench.Table(rs)))
	fmt.Printf("\nstrict failures by kind and keyword (schemas):\n%s", schemabench.StrictFailures(rs))
	if *dump != "" {
		if err := writeDump(*dump, rs); err != nil {
			fmt.Fprintln(os.Stderr, "schemabench:", err)
			os.Exit(1)
		}
	}
	if *timesOut != "" {
		if err := writeTimes(*timesOut, rs, *floor); err != nil {
			fmt.Fprintln(os.Stderr, "schemabench:", err)
			os.Exit(1)
		}
	}
	if len(durs) == 0 {
		return
	}
	fmt.Printf("\ntimes per schema (strict, converted; n=%d; %s; %s):\n", len(durs), pretouchNote(pt), floorNote(gcfloor.Floor()))
	fmt.Printf("  convert:                %s\n", pcts(durs))
	if *accept == "mask" && *instances {
		fmt.Printf("  gbnf.Parse:             %s\n", pcts(parse))
		fmt.Printf("  mask.Compile (Llama-3, Deferred: the automaton): %s\n", pcts(comp))
		fmt.Printf("  convert+parse+compile:  %s; %d grammars over a mask.Compile limit (instances not checked)\n", pcts(total), prepFail)
		fmt.Printf("  Precompute (the engine overlaps it with the prompt): %s\n", pcts(pre))
		fmt.Printf("  convert+parse+compile+precompute: %s\n", pcts(withPre))
		fmt.Printf("  system time of the process in convert+parse+compile (page faults of memory it had not touched or had given back): %s\n", pcts(sys))
		fmt.Printf("  %s\n", slowestUsage(strictRs))
		if wk != nil && len(wk.Max) > 0 {
			fmt.Printf("random generations right after compile (%d per grammar, up to %d steps; n=%d grammars):\n", wk.Walks, wk.Steps, len(wk.Max))
			fmt.Printf("  first mask:             %s\n", pcts(wk.First))
			fmt.Printf("  slowest step (mask + accept): %s\n", pcts(wk.Max))
			fmt.Printf("  slowest step that computed no state on first use (the mask from precomputed sets, and the accept): %s\n", pcts(wk.Idle))
			fmt.Printf("  first-use work units, per step with some (n=%d): %s\n", len(wk.FirstUse), upcts(wk.FirstUse))
			fmt.Printf("  first-use work units, the most in one step per grammar: %s\n", upcts(wk.FirstUseMax))
			fmt.Printf("  first-use time (mask.Compiled.LazyTime), the most in one step per grammar: %s\n", pcts(wk.FirstUseTime))
			if wk.Check > 0 {
				fmt.Printf("  masks checked against Accept (-check %d): %d tokens, %d disagreeing\n", wk.Check, wk.Checked, wk.Disagree)
				for _, e := range wk.Examples {
					fmt.Printf("    %s\n", e)
				}
			}
			if *floor {
				fmt.Printf("  machine floor: a collection, then steps of a fixed arithmetic loop (~0.5 µs, no memory), as many and for as long in all as the generations' timed steps, the slowest per grammar: %s\n", pcts(wk.Floor))
			}
		}
	}
}

// slowestUsage sums the system time and page faults of the 1% slowest
// preparations (convert+parse+compile) against their time, and the faults
// of all of them.
func slowestUsage(rs []*schemabench.Result) string {
	prep := func(r *schemabench.Result) time.Duration { return r.ConvertDur + r.ParseDur + r.PrepareDur }
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y *schemabench.Result) int { return cmp.Compare(prep(y), prep(x)) })
	var faults int64
	for _, r := range rs {
		faults += r.PrepFaults
	}
	n := max(1, len(rs)/100)
	var t, st time.Duration
	var f int64
	for _, r := range rs[:n] {
		t, st, f = t+prep(r), st+r.PrepSys, f+r.PrepFaults
	}
	return fmt.Sprintf("minor page faults: %d in all; the %d slowest by convert+parse+compile took %v, %v of it system time, with %d faults",
		faults, n, t.Round(time.Millisecond), st.Round(time.Millisecond), f)
}

// convertOnly times the strict conversion of every case (those that
// convert; the others are skipped after the first pass), runs passes;
// with timesOut, it writes each schema's fastest time (id, µs) there.
func convertOnly(cases []*schemabench.Case, runs int, only string, opts []jsonschema2gbnf.Option, timesOut string) error {
	var sel []*schemabench.Case
	for _, c := range cases {
		if selected(c.ID(), only) {
			sel = append(sel, c)
		}
	}
	names := []string{"p50", "p90", "p95", "p99", "max", "total"}
	var per [6][]time.Duration
	var mallocs []uint64
	fastest := map[string]time.Duration{}
	for run := 0; run < runs; run++ {
		var ds []time.Duration
		var keep []*schemabench.Case
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		for _, c := range sel {
			t0 := time.Now()
			_, err := jsonschema2gbnf.Convert(c.Schema, opts...)
			d := time.Since(t0)
			if err != nil {
				continue
			}
			keep = append(keep, c)
			ds = append(ds, d)
			if f, ok := fastest[c.ID()]; !ok || d < f {
				fastest[c.ID()] = d
			}
		}
		runtime.ReadMemStats(&ms1)
		sel = keep
		mallocs = append(mallocs, ms1.Mallocs-ms0.Mallocs)
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		n := len(ds)
		var total time.Duration
		for _, d := range ds {
			total += d
		}
		vals := [6]time.Duration{ds[n*50/100], ds[n*90/100], ds[n*95/100], ds[min(n-1, n*99/100)], ds[n-1], total}
		for k, v := range vals {
			per[k] = append(per[k], v)
		}
		fmt.Printf("pass %d (n=%d): p50 %v, p90 %v, p95 %v, p99 %v, max %v, total %v, mallocs %d\n", run+1, n,
			vals[0].Round(time.Microsecond), vals[1].Round(time.Microsecond), vals[2].Round(time.Microsecond), vals[3].Round(time.Microsecond), vals[4].Round(time.Microsecond), vals[5].Round(time.Millisecond), mallocs[run])
	}
	fmt.Printf("over %d passes (min / median / max):\n", runs)
	for k, name := range names {
		xs := per[k]
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		r := time.Microsecond
		if k == 5 {
			r = time.Millisecond
		}
		fmt.Printf("  %-5s %v / %v / %v\n", name, xs[0].Round(r), xs[len(xs)/2].Round(r), xs[len(xs)-1].Round(r))
	}
	if timesOut == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("id\tconvert_us_fastest\n")
	for _, c := range sel {
		fmt.Fprintf(&b, "%s\t%d\n", c.ID(), fastest[c.ID()].Microseconds())
	}
	return os.WriteFile(timesOut, []byte(b.String()), 0o644)
}

// selected reports whether id contains one of only's comma-separated
// parts (every id when only is empty).
func selected(id, only string) bool {
	if only == "" {
		return true
	}
	for _, part := range strings.Split(only, ",") {
		if part != "" && strings.Contains(id, part) {
			return true
		}
	}
	return false
}

// pcts formats the p50, p90, p95, p99 and max of ds (sorted in place).
func pcts(ds []time.Duration) string {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	n := len(ds)
	r := func(q int) time.Duration { return ds[min(n-1, n*q/100)].Round(10 * time.Microsecond) }
	return fmt.Sprintf("p50 %v, p90 %v, p95 %v, p99 %v, max %v", r(50), r(90), r(95), r(99), ds[n-1].Round(10*time.Microsecond))
}

// upcts is pcts for work units.
func upcts(us []int64) string {
	if len(us) == 0 {
		return "none"
	}
	sort.Slice(us, func(i, j int) bool { return us[i] < us[j] })
	n := len(us)
	r := func(q int) int64 { return us[min(n-1, n*q/100)] }
	return fmt.Sprintf("p50 %d, p90 %d, p95 %d, p99 %d, max %d", r(50), r(90), r(95), r(99), us[n-1])
}

// writeDump writes each result's strict and lenient output to
// dir/<dataset>/<name>.strict.gbnf and .lenient.gbnf.
func writeDump(dir string, rs []*schemabench.Result) error {
	for _, r := range rs {
		base := filepath.Join(dir, filepath.FromSlash(r.ID))
		if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(base+".strict.gbnf", []byte(r.StrictOut), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(base+".lenient.gbnf", []byte(r.LenientOut), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// timesHeader names the columns of a -times file (-combine reads them
// by name).
var timesHeader = []string{"id", "grammar", "convert_us", "parse_us", "compile_us", "grammar_bytes", "slowest_step_us", "first_use_units", "precompute_us", "first_use_us", "slowest_idle_step_us", "floor_step_us", "prep_sys_us", "prep_minflt"}

// writeTimes writes the per-phase times of the strict conversions as TSV;
// with walks, also the lenient grammars of schemas strict mode rejects
// (grammar column: which one; their convert time is the failed strict
// conversion's). Without the floor (-floor=false) its column is left
// out, as in the files of earlier versions.
func writeTimes(path string, rs []*schemabench.Result, floor bool) error {
	var b strings.Builder
	head := timesHeader
	if !floor {
		head = slices.DeleteFunc(slices.Clone(head), func(name string) bool { return name == "floor_step_us" })
	}
	b.WriteString(strings.Join(head, "\t") + "\n")
	for _, r := range rs {
		if r.Strict != "ok" && r.WalkSlowest == 0 {
			continue
		}
		mode := "strict"
		if r.Strict != "ok" {
			mode = "lenient"
		}
		vals := map[string]int64{
			"convert_us": r.ConvertDur.Microseconds(), "parse_us": r.ParseDur.Microseconds(), "compile_us": r.PrepareDur.Microseconds(),
			"grammar_bytes": int64(r.GrammarLen), "slowest_step_us": r.WalkSlowest.Microseconds(), "first_use_units": r.WalkFirstUse,
			"precompute_us": r.PreDur.Microseconds(), "first_use_us": r.WalkFirstUseTime.Microseconds(),
			"slowest_idle_step_us": r.WalkSlowestIdle.Microseconds(), "floor_step_us": r.WalkFloor.Microseconds(),
			"prep_sys_us": r.PrepSys.Microseconds(), "prep_minflt": r.PrepFaults,
		}
		cols := []string{r.ID, mode}
		for _, name := range head[2:] {
			cols = append(cols, strconv.FormatInt(vals[name], 10))
		}
		b.WriteString(strings.Join(cols, "\t") + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// floorNote says which GC floor the run had, for the times' heading.
func floorNote(n int) string {
	if n == 0 {
		return "no GC floor"
	}
	if r := gcfloor.Reserve(); r > 0 {
		return fmt.Sprintf("GC floor %d MiB and its reserve (%d MiB, never written) as in structgen serve", n>>20, r>>20)
	}
	return fmt.Sprintf("GC floor %d MiB as in structgen serve", n>>20)
}

// pretouchNote says what the run's Pretouch did, for the times' heading.
func pretouchNote(r madvfree.PretouchResult) string {
	if r.Bytes == 0 {
		return "heap not pretouched"
	}
	return "heap pretouched as in structgen serve: " + r.String()
}
