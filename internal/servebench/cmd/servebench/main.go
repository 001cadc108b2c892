//go:build unix

// Command servebench measures structured-output serving end to end:
// structgen serve against Ollama built from the pinned module, both
// started and stopped by the command, the same GGUF, the same schema,
// prompt, options and seeds, streaming POST /api/chat through Ollama's
// official Go client, at several concurrencies, in one run. It prints a
// Markdown table (aggregate completion tok/s min/median/max over the
// runs, the servers' CPU time per token (their process groups' user and
// system time during a run: the cost of the work, which the machine's
// load disturbs far less than wall time), time to first token and
// inter-token latency p50/p99, outputs valid against the schema, and how
// the others ended).
//
//	make bench-serve      # builds bin/structgen and bin/ollama, then runs this
//	go run ./internal/servebench/cmd/servebench -structgen bin/structgen -ollama bin/ollama -models llama3,stories -conc 1,4,8 -runs 3
//
// -models lists "llama3" (a random-weight Llama with the real Llama-3
// vocabulary, 128,256 tokens, written to a temporary file), "stories"
// (the corpus's stories260K) or GGUF paths. Each concurrency c starts
// both servers with c sequences (structgen --parallel c --ctx c×ctx,
// OLLAMA_NUM_PARALLEL=c and num_ctx ctx), sends one warm-up request to
// each, then alternates the servers' runs so that a change in the
// machine's load falls on both. Each run sends c × -per-client requests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/structgen/structgen/internal/servebench"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/internal/testmodel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}

// A server under test: how to start it for a concurrency.
type server struct {
	name  string
	start func(ctx context.Context, gguf string, c int) (*servebench.Proc, string, error) // the process and the model name
}

func run(ctx context.Context) error {
	var (
		structgenBin = flag.String("structgen", "bin/structgen", "structgen executable with llama.cpp (make build)")
		ollamaBin    = flag.String("ollama", "bin/ollama", "ollama executable built from the pinned module (make bin/ollama)")
		serversArg   = flag.String("servers", "structgen,ollama", "servers to run: structgen, ollama")
		modelsArg    = flag.String("models", "llama3,stories", `models: "llama3", "stories" or GGUF paths`)
		shared       = flag.String("shared", "", "the shared folder (default: ../shared or $STRUCTGEN_SHARED)")
		schemaArg    = flag.String("schema", "", "JSON Schema sent as format (default: the bench's order schema)")
		concArg      = flag.String("conc", "1,4,8", "concurrencies")
		runs         = flag.Int("runs", 3, "runs per server and concurrency (min/median/max)")
		perClient    = flag.Int("per-client", 2, "requests per client and run")
		prompt       = flag.String("prompt", "An order, please:", "the user message of every request")
		numPredict   = flag.Int("num-predict", 192, "options.num_predict: most tokens per answer")
		temperature  = flag.Float64("temperature", 0.8, "options.temperature")
		topK         = flag.Int("top-k", 40, "options.top_k")
		topP         = flag.Float64("top-p", 0.95, "options.top_p")
		minP         = flag.Float64("min-p", 0.05, "options.min_p")
		seed         = flag.Int("seed", 1, "seed of a run's first request; request i has seed+i")
		ctxPerSeq    = flag.Int("ctx", 512, "context cells per sequence (Ollama num_ctx; structgen --ctx is this × concurrency, at most the model's trained context)")
		threads      = flag.Int("threads", 1, "CPU threads of each server's model (Ollama num_thread, structgen --threads; 0: their defaults)")
		newEngine    = flag.Bool("ollama-new-engine", false, "serve with Ollama's Go engine (OLLAMA_NEW_ENGINE=1) instead of its llama.cpp runner")
		serveArgs    = flag.String("serve-args", "", "more arguments for structgen serve, space-separated")
		fresh        = flag.Bool("fresh", false, `give every request's schema a "$comment" of its own, so each server converts and compiles it while the other requests decode (not from its grammar cache)`)
		samplesOut   = flag.String("samples", "", "write every request (outcome, tokens, output) as JSON lines to this file")
	)
	flag.Parse()
	dir, err := sharedtest.Or(*shared)
	if err != nil {
		return err
	}
	concs, err := ints(*concArg)
	if err != nil {
		return fmt.Errorf("-conc: %w", err)
	}
	schemaPath := *schemaArg
	if schemaPath == "" {
		schemaPath = filepath.Join(dir, "bench", "cases", "02-order-schema", "schema.json")
	}
	schema, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	validator, err := servebench.NewValidator(schema)
	if err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	ollamaVersion := moduleVersion("github.com/ollama/ollama")
	ollamaName := "ollama " + ollamaVersion + " (llama.cpp runner)"
	if *newEngine {
		ollamaName = "ollama " + ollamaVersion + " (Go engine)"
	}
	extra := strings.Fields(*serveArgs)
	if *threads > 0 {
		extra = append([]string{"--threads", strconv.Itoa(*threads)}, extra...)
	}
	all := map[string]server{
		"structgen": {"structgen serve", func(ctx context.Context, gguf string, c int) (*servebench.Proc, string, error) {
			// structgen serve refuses a context above the trained one,
			// however many sequences share it (Ollama bounds num_ctx per
			// sequence).
			cells := c * *ctxPerSeq
			if trained, err := trainedContext(gguf); err != nil {
				return nil, "", err
			} else if trained > 0 && cells > trained {
				fmt.Printf("structgen serve, %s, concurrency %d: --ctx %d (the trained context), %d cells per sequence\n", filepath.Base(gguf), c, trained, trained/c)
				cells = trained
			}
			p, err := servebench.StartStructgen(ctx, servebench.StructgenOptions{
				Binary: *structgenBin, GGUF: gguf, Parallel: c, Ctx: cells, MaxQueue: 2 * c, Args: extra})
			if err != nil {
				return nil, "", err
			}
			name, err := servebench.FirstModel(ctx, p.Client)
			if err != nil {
				p.Stop()
				return nil, "", err
			}
			return p, name, nil
		}},
		"ollama": {ollamaName, func(ctx context.Context, gguf string, c int) (*servebench.Proc, string, error) {
			p, err := servebench.StartOllama(ctx, servebench.OllamaOptions{
				Binary: *ollamaBin, GGUF: gguf, Model: "bench", Parallel: c, NumCtx: *ctxPerSeq, Threads: *threads, NewEngine: *newEngine})
			return p, "bench", err
		}},
	}
	var servers []server
	for _, name := range strings.Split(*serversArg, ",") {
		s, ok := all[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("-servers: unknown server %q", name)
		}
		servers = append(servers, s)
	}
	options := map[string]any{
		"temperature": *temperature, "top_k": *topK, "top_p": *topP, "min_p": *minP,
		"repeat_penalty": 1.0, "num_predict": *numPredict,
	}
	freshNote := ""
	if *fresh {
		freshNote = " (a fresh copy per request: -fresh)"
	}
	fmt.Printf("schema %s%s, prompt %q, num_predict %d, temperature %g, top_k %d, top_p %g, min_p %g, repeat_penalty 1, %d threads per server, %d context cells per sequence, %d runs of concurrency × %d requests\n",
		filepath.Base(schemaPath), freshNote, *prompt, *numPredict, *temperature, *topK, *topP, *minP, *threads, *ctxPerSeq, *runs, *perClient)
	fmt.Printf("machine: %d cores (%s/%s), load average %s at the start\n\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, loadavg())

	b := &bench{servers: servers, validator: validator, runs: *runs, perClient: *perClient, loadLo: 1e9,
		cfg: servebench.Config{Prompt: *prompt, Schema: schema, Options: options, Seed: *seed, Fresh: *fresh}}
	for _, modelArg := range strings.Split(*modelsArg, ",") {
		var gguf, label string
		var cleanup func()
		gguf, label, cleanup, err = modelPath(strings.TrimSpace(modelArg), dir)
		if err != nil {
			break
		}
		for _, c := range concs {
			if err = b.measure(ctx, gguf, label, c); err != nil {
				break
			}
		}
		cleanup()
		if err != nil {
			break
		}
	}
	// What was measured is printed also when a run was interrupted.
	servebench.WriteTable(os.Stdout, b.sums, ollamaName)
	fmt.Printf("\n1-minute load average between %.1f and %.1f at the starts of the runs, %s at the end.\n", b.loadLo, b.loadHi, loadavg())
	for _, n := range b.notes {
		fmt.Println("- " + n)
	}
	if *samplesOut != "" {
		f, ferr := os.Create(*samplesOut)
		if ferr == nil {
			ferr = errors.Join(servebench.WriteSamples(f, b.sums), f.Close())
		}
		err = errors.Join(err, ferr)
	}
	return err
}

// bench holds a run of the command: its settings and what it measured.
type bench struct {
	servers        []server
	validator      *servebench.Validator
	cfg            servebench.Config // but Model, which each server names
	runs           int
	perClient      int
	sums           []servebench.Summary
	notes          []string // servers skipped, and why
	loadLo, loadHi float64
}

// measure starts every server for concurrency c on a model, warms each up
// and runs the runs, alternating the servers. A server that does not
// start or fails its warm-up request is skipped with a note; only the end
// of ctx is an error.
func (b *bench) measure(ctx context.Context, gguf, label string, c int) error {
	var procs []*servebench.Proc
	var cfgs []servebench.Config
	var names []string
	defer func() {
		for _, p := range procs {
			if err := p.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "servebench:", err)
			}
		}
	}()
	for _, s := range b.servers {
		p, model, err := s.start(ctx, gguf, c)
		if err != nil {
			b.skip(s.name, label, c, err.Error())
			continue
		}
		procs = append(procs, p)
		cfg := b.cfg
		cfg.Model = model
		// The warm-up loads Ollama's model and each server's caches; its
		// seed is outside the runs' seeds.
		w := servebench.One(ctx, p.Client, cfg, b.validator, cfg.Seed-1)
		if w.Outcome == servebench.Failed {
			b.skip(s.name, label, c, "warm-up request: "+w.Detail)
			procs = procs[:len(procs)-1]
			p.Stop()
			continue
		}
		fmt.Fprintf(os.Stderr, "%s, %s, c=%d: warm-up %s, %d prompt tokens, %d completion tokens\n", s.name, label, c, w.Outcome, w.Prompt, w.Tokens)
		cfgs = append(cfgs, cfg)
		names = append(names, s.name)
	}
	first := len(b.sums)
	for _, name := range names {
		b.sums = append(b.sums, servebench.Summary{Server: name, Model: label, Concurrency: c})
	}
	for r := range b.runs {
		for k := range procs {
			i := (k + r) % len(procs) // alternate who goes first
			l := loadavg1()
			b.loadLo, b.loadHi = min(b.loadLo, l), max(b.loadHi, l)
			cpu0, err0 := procs[i].CPUTime()
			res, err := servebench.Run(ctx, procs[i].Client, cfgs[i], b.validator, c, c*b.perClient)
			if err != nil {
				return err
			}
			if cpu1, err1 := procs[i].CPUTime(); err0 == nil && err1 == nil {
				res.CPU = cpu1 - cpu0
			}
			b.sums[first+i].Runs = append(b.sums[first+i].Runs, res)
			fmt.Fprintf(os.Stderr, "%s, %s, c=%d, run %d: %.1f tok/s, %d tokens in %v, server CPU %v\n", names[i], label, c, r+1, res.TokensPerSecond(), res.Tokens(), res.Wall.Round(1e6), res.CPU)
		}
	}
	return nil
}

func (b *bench) skip(server, model string, c int, why string) {
	n := fmt.Sprintf("%s, %s, concurrency %d: skipped: %s", server, model, c, strings.ReplaceAll(strings.TrimSpace(why), "\n", " | "))
	fmt.Fprintln(os.Stderr, n)
	b.notes = append(b.notes, n)
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// modelPath resolves a -models entry to a GGUF and a label for tables;
// the random Llama-3 model is written to a temporary file that cleanup
// removes.
func modelPath(arg, shared string) (path, label string, cleanup func(), err error) {
	switch arg {
	case "stories":
		return filepath.Join(shared, "corpus", "models", "stories260K.gguf"), "stories260K", func() {}, nil
	case "llama3":
		tmp, err := os.MkdirTemp("", "servebench-model")
		if err != nil {
			return "", "", nil, err
		}
		path := filepath.Join(tmp, "llama3-random.gguf")
		if err := testmodel.WriteSmallLlama3(path, filepath.Join(shared, "corpus", "vocab", "hf", "llama3.2")); err != nil {
			os.RemoveAll(tmp)
			return "", "", nil, err
		}
		return path, "Llama-3 vocab (128k), random", func() { os.RemoveAll(tmp) }, nil
	}
	abs, err := filepath.Abs(arg)
	return abs, filepath.Base(arg), func() {}, err
}

// trainedContext reads the model's trained context length from the GGUF.
func trainedContext(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	g, err := ggml.Decode(f, -1)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return int(g.KV().ContextLength()), nil
}

// moduleVersion is the version of a module this command was built with:
// the pinned one in go.mod.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// loadavg1 is the 1-minute load average (0 where unknown).
func loadavg1() float64 {
	f, _ := strconv.ParseFloat(strings.Fields(loadavg())[0], 64)
	return f
}
