package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/sampling/cpu"
)

// Limits of the command line.
const (
	// maxInstances bounds -n: a million instances of a typical schema is
	// already hundreds of MB of output.
	maxInstances = 1_000_000
	// maxParallel bounds --parallel: llama.cpp holds at most 256
	// sequences (LLAMA_MAX_SEQ).
	maxParallel = 256
	// defaultParallel is how many outputs run at once on a model by
	// default: batches of 4 cost little more than 1 on a CPU.
	defaultParallel = 4
)

// modelLoader loads a GGUF model; nil in builds without llama.cpp (the
// llamacpp build tag registers it in llama.go).
var modelLoader func(path string, o modelOptions) (engine.Model, error)

type modelOptions struct {
	ContextSize int
	Sequences   int // generations at once (the context's sequences)
	Threads     int
	Progress    func(float32) // nil: no progress display
}

// constraintFlags are the grammar or schema flags shared by the commands.
type constraintFlags struct {
	Schema     string `help:"JSON Schema file the output must validate against." xor:"constraint" placeholder:"FILE"`
	Grammar    string `help:"GBNF grammar file the output must follow." xor:"constraint" placeholder:"FILE"`
	Whitespace string `help:"Whitespace between JSON tokens of a schema: compact (none) or flexible (a space, or a newline and indentation; generated output stays one line per instance, its line breaks written as spaces)." enum:"compact,flexible" default:"compact"`
	AnyOrder   bool   `help:"Let the properties of schema objects (up to 8 declared) come in any order; by default they follow the schema's order."`
	Lenient    bool   `help:"Relax schema keywords a grammar cannot enforce (warnings on stderr) instead of failing."`

	schemaSrc []byte // the --schema file, once options has read it
}

// options reads the grammar or schema file and returns the engine options
// for it (none when neither flag is given).
func (f *constraintFlags) options(e *env) ([]engine.Option, error) {
	ws, err := engine.ParseWhitespace(f.Whitespace)
	if err != nil {
		return nil, usagef("--whitespace: %v", err)
	}
	opts := []engine.Option{engine.WithWhitespace(ws), engine.WithLenient(f.Lenient), engine.WithAnyPropertyOrder(f.AnyOrder)}
	switch {
	case f.Schema != "":
		b, err := e.readInput(f.Schema)
		if err != nil {
			return nil, fmt.Errorf("--schema: %w", err)
		}
		f.schemaSrc = b
		opts = append(opts, engine.WithSchema(b))
	case f.Grammar != "":
		b, err := e.readInput(f.Grammar)
		if err != nil {
			return nil, fmt.Errorf("--grammar: %w", err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("--grammar %s: empty file", f.Grammar)
		}
		opts = append(opts, engine.WithGrammar(string(b)))
	}
	return opts, nil
}

// source names the grammar or schema file in error messages.
func (f *constraintFlags) source() string {
	if f.Schema != "" {
		return f.Schema
	}
	return f.Grammar
}

type generateCmd struct {
	constraintFlags

	Model      string `help:"GGUF model file (needs a llama.cpp build: make build). Without it, the grammar itself is sampled." placeholder:"GGUF"`
	Prompt     string `help:"Prompt text." xor:"prompt" placeholder:"TEXT"`
	PromptFile string `help:"File holding the prompt." xor:"prompt" placeholder:"FILE"`
	N          int    `short:"n" help:"Number of outputs, one per line (NDJSON for a schema; a grammar whose sentences hold newlines spans lines)." default:"1"`
	Seed       *int64 `help:"Random seed (0..4294967295); output i uses seed+i. Default: random, printed with --stats."`

	Temperature   float32 `help:"Sampling temperature (0: greedy)." default:"0.8"`
	TopK          int     `help:"Top-k (0: off)." default:"40"`
	TopP          float32 `help:"Top-p (1: off)." default:"0.95"`
	MinP          float32 `help:"Min-p (0: off)." default:"0.05"`
	RepeatPenalty float32 `help:"Repeat penalty over the last 64 tokens (1: off)." default:"1"`
	Samplers      string  `help:"Sampler order, llama.cpp names separated by ';' or ',' (e.g. 'top_k;top_p;temperature'); samplers not in it are not used, whatever their flags say." placeholder:"LIST"`

	MaxTokens int      `help:"Most tokens per output (0: the context left in the output's share, context/parallel); constrained output is closed out validly before it." default:"0"`
	MaxBytes  int      `help:"Most bytes per output without a model (0: 4096)." default:"0"`
	Stream    bool     `help:"Print output as it is generated."`
	Chat      bool     `help:"Wrap the prompt in the model's chat template."`
	System    string   `help:"System message for --chat." placeholder:"TEXT"`
	Trigger   []string `help:"Lazy grammar: free text until one of these strings, then the grammar." placeholder:"TEXT"`
	NoJump    bool     `help:"Turn jump-forward off (sample forced tokens one by one)."`
	Context   int      `help:"Context size of the model (0: min(trained, 4096)), shared by the generations that run at once." default:"0"`
	Parallel  int      `help:"Outputs generated at once (batched on the model; 0: min(n, 4) with a model, min(n, cores) without). Outputs are printed in order; --stream makes it 1." default:"0"`
	Threads   int      `help:"CPU threads for the model (0: all)." default:"0"`
	Stats     bool     `help:"Print generation statistics to stderr."`

	noModelFlags
}

// noModelFlags shape the test data drawn without a model (package
// nomodel describes the policy).
type noModelFlags struct {
	Realistic    bool    `help:"Without a model: follow the schema's (or grammar's) structure with realistic values checked by the grammar. --no-realistic is --uniform." default:"true" negatable:""`
	Uniform      bool    `help:"Without a model: draw allowed tokens uniformly by weight instead (the structure-blind sampler)."`
	OptionalRate float64 `help:"Without a model: probability that an optional property is present." default:"0.5" placeholder:"P"`
	ExampleRate  float64 `help:"Without a model: probability that a value with examples or a default in the schema takes one of them." default:"0.5" placeholder:"P"`
	ArrayLen     string  `help:"Without a model: lengths of arrays and maps, within the schema's own bounds." default:"0,4" placeholder:"MIN,MAX"`
	Today        string  `help:"Without a model: generated dates fall around this date (default: today, UTC); a seed reproduces its output exactly for the same date." placeholder:"YYYY-MM-DD"`
	DateWindow   int     `help:"Without a model: how many days from --today dates may fall." default:"365" placeholder:"DAYS"`
	Invalid      bool    `help:"Without a model: write near-miss invalid instances, each breaking exactly one constraint (checked by the validator), as {\"pointer\",\"keyword\",\"message\",\"instance\"} lines."`
}

// options returns the engine options of the no-model flags.
func (f *noModelFlags) options() ([]engine.Option, error) {
	var lo, hi int
	if _, err := fmt.Sscanf(f.ArrayLen, "%d,%d", &lo, &hi); err != nil || strings.Count(f.ArrayLen, ",") != 1 {
		return nil, usagef("--array-len %q: want MIN,MAX", f.ArrayLen)
	}
	var today time.Time
	if f.Today != "" {
		t, err := time.Parse("2006-01-02", f.Today)
		if err != nil {
			return nil, usagef("--today %q: want YYYY-MM-DD", f.Today)
		}
		today = t
	}
	if f.DateWindow < 0 || f.DateWindow > 200*365 {
		return nil, usagef("--date-window %d: want 0..%d days", f.DateWindow, 200*365)
	}
	opts := []engine.Option{
		engine.WithUniform(f.Uniform || !f.Realistic),
		engine.WithOptionalRate(f.OptionalRate),
		engine.WithExampleRate(f.ExampleRate),
		engine.WithArrayLen(lo, hi),
		engine.WithDates(today, time.Duration(f.DateWindow)*24*time.Hour),
	}
	// Validate here, so that a bad value is a usage error.
	if _, err := engine.New(nil, opts...); err != nil {
		var oe *engine.OptionError
		if errors.As(err, &oe) {
			return nil, usagef("%s", oe.Msg)
		}
		return nil, err
	}
	return opts, nil
}

func (c *generateCmd) Run(e *env) error {
	if c.N < 1 || c.N > maxInstances {
		return usagef("-n %d: want 1..%d", c.N, maxInstances)
	}
	if c.Seed != nil && (*c.Seed < 0 || *c.Seed > 1<<32-1) {
		return usagef("--seed %d: want 0..4294967295", *c.Seed)
	}
	if c.Model == "" {
		switch {
		case c.Schema == "" && c.Grammar == "":
			return usagef("without --model, give --schema or --grammar (the grammar is sampled)")
		case c.Prompt != "" || c.PromptFile != "":
			return usagef("--prompt needs --model (without a model the grammar itself is sampled)")
		case c.Chat || len(c.Trigger) > 0:
			return usagef("--chat and --trigger need --model")
		}
	} else if modelLoader == nil {
		return usagef("--model needs llama.cpp support, which this binary was built without: build it with 'make build' (go build -tags llamacpp after scripts/setup-llama.sh)")
	}
	if c.MaxTokens < 0 || c.MaxBytes < 0 || c.Context < 0 || c.Threads < 0 {
		return usagef("--max-tokens, --max-bytes, --context and --threads must not be negative")
	}
	if c.Parallel < 0 || c.Parallel > maxParallel {
		return usagef("--parallel %d: want 0..%d", c.Parallel, maxParallel)
	}
	parallel := c.Parallel
	switch {
	case c.Stream:
		parallel = 1
	case parallel == 0 && c.Model != "":
		parallel = min(c.N, defaultParallel)
	case parallel == 0:
		parallel = min(c.N, runtime.GOMAXPROCS(0))
	}
	nmopts, err := c.noModelFlags.options()
	if err != nil {
		return err
	}
	if c.Invalid && (c.Model != "" || c.Schema == "") {
		return usagef("--invalid needs --schema and no --model")
	}
	p := cpu.LlamaDefaults()
	p.Temperature, p.TopK, p.TopP, p.MinP, p.RepeatPenalty = c.Temperature, c.TopK, c.TopP, c.MinP, c.RepeatPenalty
	if c.RepeatPenalty == 1 {
		p.RepeatPenalty = 0
	}
	if c.Samplers != "" {
		p.Samplers = strings.FieldsFunc(c.Samplers, func(r rune) bool { return r == ';' || r == ',' })
		p = p.DropUnordered()
	}
	if _, err := cpu.NewChain(p); err != nil {
		return usagef("sampling: %v", err)
	}
	copts, err := c.constraintFlags.options(e)
	if err != nil {
		return err
	}
	opts := append(append(copts, nmopts...),
		engine.WithSampling(p),
		engine.WithMaxTokens(c.MaxTokens),
		engine.WithMaxBytes(c.MaxBytes),
		engine.WithJumpForward(!c.NoJump),
		engine.WithChat(c.Chat, c.System),
	)
	if len(c.Trigger) > 0 {
		opts = append(opts, engine.WithLazyTrigger(c.Trigger...))
	}
	prompt := c.Prompt
	if c.PromptFile != "" {
		b, err := e.readInput(c.PromptFile)
		if err != nil {
			return fmt.Errorf("--prompt-file: %w", err)
		}
		prompt = string(b)
	}

	var m engine.Model
	if c.Model != "" {
		mo := modelOptions{ContextSize: c.Context, Sequences: parallel, Threads: c.Threads}
		if isTerminal(os.Stderr) && e.stderr == os.Stderr {
			mo.Progress = func(f float32) { fmt.Fprintf(e.stderr, "\rloading %s: %3.0f%%", c.Model, 100*f) }
		}
		m, err = modelLoader(c.Model, mo)
		if mo.Progress != nil {
			fmt.Fprint(e.stderr, "\r\033[K")
		}
		if err != nil {
			return err
		}
		defer m.Close()
	}
	eng, err := engine.New(m, opts...)
	if err != nil {
		return err
	}
	if _, err := eng.Compile(); err != nil && (c.Schema != "" || c.Grammar != "") {
		return inFile(c.source(), err)
	}

	out := bufio.NewWriterSize(e.stdout, 64<<10)
	defer out.Flush()
	// One instance per line: the line breaks of flexible JSON whitespace
	// are written as spaces (the grammar allows a space wherever it
	// allows a line break and indentation).
	var w io.Writer = out
	if c.Schema != "" && c.Whitespace == "flexible" {
		w = &singleLine{w: out}
	}
	var seed uint32
	if c.Seed != nil {
		seed = uint32(*c.Seed)
	}
	seedOpt := func(i int) []engine.Option {
		if c.Seed == nil {
			return nil
		}
		return []engine.Option{engine.WithSeed(seed + uint32(i))}
	}
	if c.Invalid {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		return inOrder(e.ctx, c.N, parallel, func(ctx context.Context, i int) (*engine.Invalid, error) {
			return eng.GenerateInvalid(ctx, seedOpt(i)...)
		}, func(i int, inv *engine.Invalid, err error) error {
			if err != nil {
				return fmt.Errorf("output %d: %w", i+1, err)
			}
			return enc.Encode(struct {
				Pointer  string          `json:"pointer"`
				Keyword  string          `json:"keyword"`
				Message  string          `json:"message"`
				Instance json.RawMessage `json:"instance"`
			}{inv.Pointer, inv.Keyword, inv.Message, json.RawMessage(inv.Output)})
		})
	}
	gen := func(ctx context.Context, i int) (*engine.Result, error) {
		gopts := seedOpt(i)
		if c.Stream {
			gopts = append(gopts, engine.WithStream(func(p []byte) error {
				if _, err := w.Write(p); err != nil {
					return err
				}
				return out.Flush()
			}))
		}
		return eng.Generate(ctx, prompt, gopts...)
	}
	return inOrder(e.ctx, c.N, parallel, gen, func(i int, res *engine.Result, err error) error {
		var ve *engine.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("output %d: %w", i+1, err)
		}
		if err != nil {
			return err
		}
		if i == 0 {
			for _, w := range res.Warnings {
				fmt.Fprintf(e.stderr, "structgen: warning: %s: %s\n", c.source(), w)
			}
		}
		text := res.Text
		if c.Model == "" {
			text = res.Output
		}
		if !c.Stream {
			io.WriteString(w, text)
		}
		out.WriteByte('\n')
		if c.Stats {
			out.Flush()
			fmt.Fprintf(e.stderr, "structgen: output %d: seed %d, stop %s, %s\n", i+1, res.Seed, res.Stop, res.Stats.String())
		}
		if len(c.Trigger) > 0 && !res.Triggered {
			out.Flush()
			return fmt.Errorf("output %d: no trigger (%s) appeared in %d tokens, so the grammar never applied: the output is free text", i+1, strings.Join(c.Trigger, ", "), res.Stats.Tokens)
		}
		return out.Flush()
	})
}

// inOrder runs gen for 0..n-1, up to parallel at a time, and hands the
// results to emit in index order as soon as each is ready. The first
// error from emit cancels what still runs and is returned. With parallel
// 1, gen and emit alternate on the caller's goroutine (a streaming gen
// writes where emit writes).
func inOrder[T any](ctx context.Context, n, parallel int, gen func(context.Context, int) (T, error), emit func(int, T, error) error) error {
	if parallel == 1 {
		for i := range n {
			res, err := gen(ctx, i)
			if err := emit(i, res, err); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type outcome struct {
		res T
		err error
	}
	futures := make(chan chan outcome, parallel) // in index order; bounds the results held
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		defer close(futures)
		for i := range n {
			f := make(chan outcome, 1)
			select {
			case futures <- f:
			case <-ctx.Done():
				return
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				f <- outcome{err: ctx.Err()}
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := gen(ctx, i)
				<-sem
				f <- outcome{res, err}
			}()
		}
	}()
	i := 0
	for f := range futures {
		o := <-f
		if err := emit(i, o.res, o.err); err != nil {
			cancel()
			for range futures {
			}
			return err
		}
		i++
	}
	return ctx.Err()
}

// singleLine writes JSON text with each line break, and the indentation
// after it, replaced by one space. JSON strings hold no raw line breaks,
// so every one is whitespace between tokens.
type singleLine struct {
	w      io.Writer
	indent bool // after a line break: drop spaces and tabs
	buf    []byte
}

func (o *singleLine) Write(p []byte) (int, error) {
	o.buf = o.buf[:0]
	for _, c := range p {
		switch {
		case c == '\n':
			o.buf = append(o.buf, ' ')
			o.indent = true
		case o.indent && (c == ' ' || c == '\t'):
		default:
			o.indent = false
			o.buf = append(o.buf, c)
		}
	}
	if _, err := o.w.Write(o.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// inFile prefixes an error with the file it is about: "file:line:col: msg"
// for grammar errors (which start with line:col), "file: msg" otherwise.
func inFile(name string, err error) error {
	if s := err.Error(); s != "" && s[0] >= '0' && s[0] <= '9' {
		return fmt.Errorf("%s:%w", name, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
