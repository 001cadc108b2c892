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
	"strconv"
	"strings"

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
	eng, err := engine.New(m, engine.WithSampling(p), engine.WithMaxTokens(budget))
	if err != nil {
		return err
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
