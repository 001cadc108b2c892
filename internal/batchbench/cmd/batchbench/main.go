//go:build llamacpp

// Command batchbench measures batched constrained decoding on a real
// llama.cpp model: structgen's engine constrained by a JSON Schema and
// unconstrained, and Ollama's sampler with llama.cpp's grammar (the peer),
// at several concurrencies, in one run. It prints Markdown tables.
//
//	make bench-batch
//	go run -tags llamacpp ./internal/batchbench/cmd/batchbench -model llama3 -conc 1,2,4,8 -runs 3
//
// -model is "llama3" (a random-weight Llama with the real Llama-3
// vocabulary, 128,256 tokens, written to a temporary file), "stories" (the
// corpus's stories260K) or a GGUF path.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/engine/llamacpp"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/batchbench"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/internal/testmodel"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/sampling/cpu"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "batchbench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		modelArg  = flag.String("model", "llama3", `"llama3", "stories" or a GGUF path`)
		shared    = flag.String("shared", "", "the shared folder (default: ../shared or $STRUCTGEN_SHARED)")
		concArg   = flag.String("conc", "1,2,4,8", "concurrencies")
		perClient = flag.Int("per-client", 2, "requests per client and run")
		runs      = flag.Int("runs", 3, "runs per mode and concurrency (min/median/max)")
		maxTokens = flag.Int("max-tokens", 256, "most tokens per generation (cut to the context share)")
		modesArg  = flag.String("modes", "unconstrained,structgen,peer", "modes: unconstrained, structgen, peer (Ollama's sampler + llama.cpp's grammar)")
		threads   = flag.Int("threads", 0, "llama.cpp threads (0: all cores)")
		prompt    = flag.String("prompt", "An order, please:", "prompt of every request")
		schemaArg = flag.String("schema", "", "JSON Schema (default: the bench's order schema)")
		cpuProf   = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
		newEvery  = flag.Int("new-schemas", 0, "instead of the batch table: time to first token of one generation per JSONSchemaBench schema not compiled before (every Nth that converts), one at a time, with -prompt repeated -prompt-repeat times")
		repeat    = flag.Int("prompt-repeat", 20, "with -new-schemas: copies of -prompt")
		steps     = flag.Int("steps", 0, "with -new-schemas: generate up to this many tokens per schema (not 2) and print the percentiles of the step times too (the gaps between sampled tokens), where first uses of the grammar's states land")
		newConc   = flag.Int("new-conc", 1, "with -new-schemas: generations at once (each client takes the next schema)")
		onlyArg   = flag.String("only", "", "with -new-schemas: only the schemas whose id (e.g. Github_hard/o1051) is in this comma-separated list (every schema, not every Nth)")
		overlap   = flag.Bool("mask-overlap", true, "fill each sequence's next mask while the model decodes (engine.WithMaskOverlap)")
		cOverlap  = flag.Bool("compile-overlap", true, "read a generation's prompt while its schema compiles (engine.WithCompileOverlap)")
		timesArg  = flag.String("times", "", "with -new-schemas: write each schema's time to first token (id, µs) to this TSV file")
	)
	flag.Parse()
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	dir, err := sharedtest.Or(*shared)
	if err != nil {
		return err
	}
	var concs []int
	maxConc := 1
	for _, f := range strings.Split(*concArg, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 || c > llamacpp.MaxSequences {
			return fmt.Errorf("-conc: bad concurrency %q", f)
		}
		concs = append(concs, c)
		maxConc = max(maxConc, c)
	}
	schemaPath := *schemaArg
	if schemaPath == "" {
		schemaPath = filepath.Join(dir, "bench", "cases", "02-order-schema", "schema.json")
	}
	schema, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	path, cleanup, err := modelPath(*modelArg, dir)
	if err != nil {
		return err
	}
	defer cleanup()
	info, err := llamacpp.Inspect(path)
	if err != nil {
		return err
	}
	ctxSize := min(info.TrainContext, 4096)
	if ctxSize == 0 {
		ctxSize = 4096
	}
	m, err := llamacpp.Load(path, llamacpp.Options{ContextSize: ctxSize, Sequences: maxConc, Threads: *threads})
	if err != nil {
		return err
	}
	defer m.Close()
	ptoks, err := m.Tokenize([]byte(*prompt), true, false)
	if err != nil {
		return err
	}
	budget := min(*maxTokens, ctxSize/maxConc-len(ptoks))
	if budget < 16 {
		return fmt.Errorf("a context of %d for %d sequences leaves %d tokens each", ctxSize, maxConc, budget)
	}
	validator, err := jsonschema2gbnf.CompileSchema(schema)
	if err != nil {
		return err
	}
	check := func(out string) error {
		dec := json.NewDecoder(bytes.NewReader([]byte(out)))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		return validator.Validate(v)
	}
	grammar, err := jsonschema2gbnf.Convert(schema)
	if err != nil {
		return err
	}
	if _, err := gbnf.Parse(grammar); err != nil {
		return err
	}
	p := cpu.LlamaDefaults()
	eng, err := engine.New(m, engine.WithSampling(p), engine.WithMaxTokens(budget), engine.WithMaskOverlap(*overlap), engine.WithCompileOverlap(*cOverlap))
	if err != nil {
		return err
	}
	if *newEvery > 0 {
		return newSchemas(eng, dir, *newEvery, *onlyArg, strings.Repeat(*prompt+" ", *repeat), *steps, *newConc, *timesArg)
	}
	fmt.Printf("model %s (%d tokens, context %d, %d sequences), schema %s, %d tokens per generation at most, %d requests per client, %d runs\n\n",
		filepath.Base(path), m.VocabSize(), ctxSize, maxConc, filepath.Base(schemaPath), budget, *perClient, *runs)
	ctx := context.Background()
	var sums []batchbench.Summary
	for _, mode := range strings.Split(*modesArg, ",") {
		for _, c := range concs {
			s := batchbench.Summary{Mode: mode, Concurrency: c}
			for r := range *runs {
				var res batchbench.Result
				var err error
				n := c * *perClient
				switch mode {
				case "unconstrained":
					res, err = batchbench.RunEngine(ctx, eng, "structgen, unconstrained", c, n, batchbench.Request{Prompt: *prompt, Opts: []engine.Option{engine.WithGrammar("")}})
				case "structgen":
					res, err = batchbench.RunEngine(ctx, eng, "structgen, schema", c, n, batchbench.Request{Prompt: *prompt, Opts: []engine.Option{engine.WithSchema(schema)}, Check: check})
				case "peer":
					res, err = batchbench.RunPeer(ctx, m, grammar, c, n, batchbench.PeerParams{Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, MinP: p.MinP, MaxTokens: budget}, batchbench.Request{Prompt: *prompt, Check: check})
				case "peer-free":
					res, err = batchbench.RunPeer(ctx, m, "", c, n, batchbench.PeerParams{Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, MinP: p.MinP, MaxTokens: budget}, batchbench.Request{Prompt: *prompt})
				default:
					return fmt.Errorf("unknown mode %q", mode)
				}
				if err != nil {
					return fmt.Errorf("%s, concurrency %d: %w", mode, c, err)
				}
				s.Mode = res.Mode
				s.Runs = append(s.Runs, res)
				fmt.Fprintf(os.Stderr, "%s c=%d run %d: %.1f tok/s\n", res.Mode, c, r+1, res.TokensPerSecond())
			}
			sums = append(sums, s)
		}
	}
	batchbench.WriteTable(os.Stdout, sums, "structgen, unconstrained")
	return nil
}

// modelPath resolves -model: the random Llama-3 model is written to a
// temporary file that cleanup removes.
func modelPath(arg, shared string) (string, func(), error) {
	switch arg {
	case "stories":
		return filepath.Join(shared, "corpus", "models", "stories260K.gguf"), func() {}, nil
	case "llama3":
		tmp, err := os.MkdirTemp("", "batchbench")
		if err != nil {
			return "", nil, err
		}
		path := filepath.Join(tmp, "llama3-random.gguf")
		if err := testmodel.WriteSmallLlama3(path, filepath.Join(shared, "corpus", "vocab", "hf", "llama3.2")); err != nil {
			os.RemoveAll(tmp)
			return "", nil, err
		}
		return path, func() { os.RemoveAll(tmp) }, nil
	}
	return arg, func() {}, nil
}

// newSchemas generates once with each of every nth JSONSchemaBench schema
// that converts (each compiled for the first time: a cache miss), one
// generation at a time, and prints the percentiles of the time to the
// first token and of the prompt's prefill: what a request with a new
// schema waits for (its compile, then the part of the grammar's
// precomputation its prefill did not hide). With steps > 0 each
// generation goes on for up to steps tokens, and the percentiles of the
// step times (the gaps between sampled tokens, over every generation, and
// the slowest step of each) follow: where a grammar's states are reached
// for the first time.
func newSchemas(eng *engine.Engine, dir string, every int, only, prompt string, steps, conc int, timesPath string) error {
	if only != "" {
		every = 1
	}
	schemas, err := sharedtest.CorpusSchemas(dir, every)
	if err != nil {
		return err
	}
	if only != "" {
		ids := strings.Split(only, ",")
		schemas = slices.DeleteFunc(schemas, func(c sharedtest.CorpusSchema) bool { return !slices.Contains(ids, c.ID) })
	}
	maxTokens := 2 // the first token is what is timed
	if steps > 0 {
		maxTokens = steps
	}
	var (
		mu                           sync.Mutex
		ttft, prefill, gaps, slowest []time.Duration
		times                        strings.Builder
		mask                         time.Duration
		toks, sampled                int
		next                         int
		wg                           sync.WaitGroup
	)
	before := eng.SchedulerStats()
	for range max(conc, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == len(schemas) {
					mu.Unlock()
					return
				}
				c := schemas[next]
				next++
				mu.Unlock()
				if _, err := jsonschema2gbnf.Convert(c.Schema); err != nil {
					continue
				}
				res, err := eng.Generate(context.Background(), prompt, engine.WithSchema(c.Schema), engine.WithMaxTokens(maxTokens), engine.WithStepTimes(steps > 0))
				if err != nil {
					continue // a compile limit, a budget too small for the schema
				}
				mu.Lock()
				ttft = append(ttft, res.Stats.TimeToFirstToken)
				fmt.Fprintf(&times, "%s\t%d\n", c.ID, res.Stats.TimeToFirstToken.Microseconds())
				prefill = append(prefill, res.Stats.Prefill)
				toks = res.Stats.PromptTokens
				mask += res.Stats.Mask
				sampled += res.Stats.Sampled
				if g := batchbench.Gaps(res.Stats.StepTimes); len(g) > 0 {
					gaps = append(gaps, g...)
					slowest = append(slowest, slices.Max(g))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(ttft) == 0 {
		return fmt.Errorf("no schema generated")
	}
	if timesPath != "" {
		if err := os.WriteFile(timesPath, []byte(times.String()), 0o644); err != nil {
			return err
		}
	}
	pct := func(xs []time.Duration) string {
		slices.Sort(xs)
		n := len(xs)
		r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
		return fmt.Sprintf("p50 %v, p90 %v, p95 %v, p99 %v, max %v", r(xs[n/2]), r(xs[n*9/10]), r(xs[n*95/100]), r(xs[n*99/100]), r(xs[n-1]))
	}
	fmt.Printf("%d generations, each with a new schema (of every %dth schema, those that convert), %d at once, prompt %d tokens\n", len(ttft), every, max(conc, 1), toks)
	fmt.Printf("time to first token: %s\n", pct(ttft))
	fmt.Printf("prefill:             %s\n", pct(prefill))
	if len(gaps) > 0 {
		after := eng.SchedulerStats()
		fmt.Printf("step (%d):           %s\n", len(gaps), pct(gaps))
		fmt.Printf("slowest step (%d):   %s\n", len(slowest), pct(slowest))
		wait := after.MaskWait - before.MaskWait
		phase := after.Grammar - before.Grammar
		fmt.Printf("grammar work (Stats.Mask) %v over %d sampled tokens; decode %v; the steps after the decodes (SchedulerStats.Grammar) %v;\n"+
			"masks filled during decodes %d, waited for after them %v; the scheduler's time besides the decodes %v\n",
			mask.Round(time.Millisecond), sampled, (after.Decode - before.Decode).Round(time.Millisecond), phase.Round(time.Millisecond),
			after.Overlapped-before.Overlapped, wait.Round(time.Millisecond), (phase + wait).Round(time.Millisecond))
	}
	return nil
}
