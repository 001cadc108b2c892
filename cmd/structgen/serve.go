package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/internal/gcfloor"
	"github.com/structgen/structgen/internal/madvfree"
	"github.com/structgen/structgen/sampling/cpu"
	"github.com/structgen/structgen/server"
)

// serveCmd starts the OpenAI- and Ollama-compatible server (package
// server) on a model.
type serveCmd struct {
	Model     string `help:"GGUF model file (needs a llama.cpp build: make build)." required:"" placeholder:"GGUF"`
	ModelName string `help:"The model's id in the APIs (default: the file name without .gguf)." placeholder:"NAME"`
	Addr      string `help:"Address to listen on (host:port; port 0 picks a free one)." default:"127.0.0.1:8080"`
	APIKey    string `help:"Require 'Authorization: Bearer KEY' on the API endpoints." env:"STRUCTGEN_API_KEY" placeholder:"KEY"`

	Parallel        int           `help:"Sequences generating at once (batched in one decode)." default:"4"`
	Context         int           `name:"ctx" help:"Context size shared by the sequences (0: min(trained, 4096))." default:"0"`
	Threads         int           `help:"CPU threads for the model (0: all)." default:"0"`
	MaxQueue        int           `help:"Requests waiting for a sequence before more get 429 (0: unbounded)." default:"64"`
	GrammarCache    int64         `help:"Bytes of compiled grammars kept." default:"268435456" placeholder:"BYTES"`
	CompileTimeout  time.Duration `help:"Longest conversion and compilation of one schema or grammar (0: none)." default:"10s"`
	MaxBody         int64         `help:"Largest request body in bytes." default:"8388608" placeholder:"BYTES"`
	MaxGrammar      int           `name:"max-grammar-bytes" help:"Largest schema, grammar or set of tool schemas of a request, in bytes." default:"1048576" placeholder:"BYTES"`
	MaxTokens       int           `help:"Largest max_tokens a request may ask (0: the context)." default:"0"`
	ReasoningBudget int           `help:"Default thinking budget of reasoning models in tokens (-1: unlimited, 0: off)." default:"-1"`
	DrainTimeout    time.Duration `help:"On SIGTERM, how long running requests may finish before they are cancelled." default:"30s"`
	LogFormat       string        `help:"Log format: text or json." enum:"text,json" default:"text"`
	Pretouch        int           `help:"Bytes of heap to touch at start, while the model loads, so that compilations growing the heap up to that size take no page faults (Linux, free memory given back with MADV_FREE; 0: off)." default:"536870912" placeholder:"BYTES"`
	GCFloor         int           `name:"gc-floor" help:"Bytes the heap may grow by past its live size before the garbage collector runs, at least (GOGC adjusted after each collection): fewer collections while compiling and decoding; on Linux without GOMEMLIMIT it also keeps that much free heap from Go's scavenger, with a reserve of ten times it that is never written (address space only; the Go heap metrics include it) (0: GOGC alone)." default:"268435456" placeholder:"BYTES"`

	Temperature   float32 `help:"Default sampling temperature (0: greedy)." default:"0.8"`
	TopK          int     `help:"Default top-k (0: off)." default:"40"`
	TopP          float32 `help:"Default top-p (1: off)." default:"0.95"`
	MinP          float32 `help:"Default min-p (0: off)." default:"0.05"`
	RepeatPenalty float32 `help:"Default repeat penalty over the last 64 tokens (1: off)." default:"1"`
}

func (c *serveCmd) Run(e *env) error {
	if modelLoader == nil {
		return usagef("serve needs llama.cpp support, which this binary was built without: build it with 'make build'")
	}
	switch {
	case c.Parallel < 1 || c.Parallel > maxParallel:
		return usagef("--parallel %d: want 1..%d", c.Parallel, maxParallel)
	case c.Context < 0 || c.Threads < 0 || c.MaxQueue < 0 || c.GrammarCache < 0 || c.CompileTimeout < 0 || c.MaxBody < 0 || c.MaxGrammar < 0 || c.MaxTokens < 0 || c.DrainTimeout < 0:
		return usagef("--ctx, --threads, --max-queue, --grammar-cache, --compile-timeout, --max-body, --max-grammar-bytes, --max-tokens and --drain-timeout must not be negative")
	case c.ReasoningBudget < -1:
		return usagef("--reasoning-budget %d: want -1 (unlimited), 0 (off) or a number of tokens", c.ReasoningBudget)
	case c.MaxQueue > engine.MaxQueueLimit:
		return usagef("--max-queue %d: want at most %d", c.MaxQueue, engine.MaxQueueLimit)
	}
	if err := heapFlags(c.Pretouch, c.GCFloor); err != nil {
		return err
	}
	p := cpu.LlamaDefaults()
	p.Temperature, p.TopK, p.TopP, p.MinP, p.RepeatPenalty = c.Temperature, c.TopK, c.TopP, c.MinP, c.RepeatPenalty
	if c.RepeatPenalty == 1 {
		p.RepeatPenalty = 0
	}
	if _, err := cpu.NewChain(p); err != nil {
		return usagef("sampling: %v", err)
	}
	var h slog.Handler = slog.NewTextHandler(e.stderr, nil)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(e.stderr, nil)
	}
	log := slog.New(h)
	name := c.ModelName
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(c.Model), ".gguf")
	}
	srv, err := server.New(server.Config{ModelName: name, APIKey: c.APIKey, MaxBodyBytes: c.MaxBody, MaxGrammarBytes: c.MaxGrammar,
		MaxTokens: c.MaxTokens, Sampling: &p, ReasoningBudget: max(c.ReasoningBudget, 0), NoReasoning: c.ReasoningBudget == 0, Logger: log})
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	log.Info("listening", "addr", "http://"+ln.Addr().String(), "model", c.Model, "gc_floor", gcfloor.Floor(), "gc_reserve", gcfloor.Reserve())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, ln, c.DrainTimeout) }()

	// The heap's first growth to the size a large compilation needs
	// would otherwise fault in every page (internal/madvfree).
	touched := make(chan struct{})
	go func() {
		pretouch(log, c.Pretouch)
		close(touched)
	}()

	// /health answers 503 until the model is loaded.
	mo := modelOptions{ContextSize: c.Context, Sequences: c.Parallel, Threads: c.Threads}
	if isTerminal(os.Stderr) && e.stderr == os.Stderr {
		mo.Progress = func(f float32) { fmt.Fprintf(e.stderr, "\rloading %s: %3.0f%%", c.Model, 100*f) }
	}
	start := time.Now()
	m, err := modelLoader(c.Model, mo)
	if mo.Progress != nil {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		cancel()
		<-errc
		return err
	}
	defer m.Close()
	eng, err := engine.New(m, engine.WithSampling(p), engine.WithMaxQueue(c.MaxQueue),
		engine.WithGrammarCacheBytes(c.GrammarCache), engine.WithCompileTimeout(c.CompileTimeout))
	if err != nil {
		cancel()
		<-errc
		return err
	}
	// Ready once the heap is touched too: a model that loads faster (a
	// small one) would otherwise take its first requests while the
	// pretouch works on another CPU, which on a 2-core VM slows both
	// (README, stop 50).
	loaded := time.Now()
	select {
	case <-touched:
	case <-ctx.Done():
	}
	srv.SetEngine(eng)
	log.Info("ready", "model", name, "load_ms", loaded.Sub(start).Milliseconds(), "heap_wait_ms", time.Since(loaded).Milliseconds(), "sequences", m.Sequences(), "context", m.ContextSize(), "vocab", m.VocabSize())
	return <-errc
}

// heapFlags checks the --pretouch size and sets the collector's floor
// (--gc-floor) first thing (serve, bench): a usage error for a size out
// of range (0..madvfree.MaxPretouch, 0..gcfloor.MaxFloor, which
// gcfloor.Set checks).
func heapFlags(pretouch, floor int) error {
	if pretouch < 0 || pretouch > madvfree.MaxPretouch {
		return usagef("--pretouch %d: want 0..%d bytes", pretouch, madvfree.MaxPretouch)
	}
	if gcfloor.Set(floor) != nil {
		return usagef("--gc-floor %d: want 0..%d bytes", floor, gcfloor.MaxFloor)
	}
	return nil
}

// pretouch runs madvfree.Pretouch(n) and logs what it did.
func pretouch(log *slog.Logger, n int) {
	r, err := madvfree.Pretouch(n)
	switch {
	case err != nil:
		log.Warn("heap not pretouched", "err", err)
	case r.Bytes > 0:
		log.Info("heap pretouched", "bytes", r.Bytes, "faults", r.Faults, "ms", r.Took.Milliseconds())
	case n > 0 && madvfree.Mode() == "":
		log.Info("heap not pretouched: the pages would not stay (MADV_FREE is Linux's)")
	case n > 0:
		log.Info("heap not pretouched: free memory goes back with MADV_DONTNEED (GODEBUG madvdontneed=1), which would give the pages back")
	}
}
