package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/sampling/cpu"
)

// Limits of the command line.
const (
	// maxInstances bounds -n: a million instances of a typical schema is
	// already hundreds of MB of output.
	maxInstances = 1_000_000
)

// modelLoader loads a GGUF model; nil in builds without llama.cpp (the
// llamacpp build tag registers it in llama.go).
var modelLoader func(path string, o modelOptions) (engine.Model, error)

type modelOptions struct {
	ContextSize int
	Threads     int
	Progress    func(float32) // nil: no progress display
}

// constraintFlags are the grammar or schema flags shared by the commands.
type constraintFlags struct {
	Schema     string `help:"JSON Schema file the output must validate against." xor:"constraint" placeholder:"FILE"`
	Grammar    string `help:"GBNF grammar file the output must follow." xor:"constraint" placeholder:"FILE"`
	Whitespace string `help:"Whitespace between JSON tokens of a schema: compact or flexible." enum:"compact,flexible" default:"compact"`
	Lenient    bool   `help:"Relax schema keywords a grammar cannot enforce (warnings on stderr) instead of failing."`
}

// options reads the grammar or schema file and returns the engine options
// for it (none when neither flag is given).
func (f *constraintFlags) options(e *env) ([]engine.Option, error) {
	ws, err := engine.ParseWhitespace(f.Whitespace)
	if err != nil {
		return nil, usagef("--whitespace: %v", err)
	}
	opts := []engine.Option{engine.WithWhitespace(ws), engine.WithLenient(f.Lenient)}
	switch {
	case f.Schema != "":
		b, err := e.readInput(f.Schema)
		if err != nil {
			return nil, fmt.Errorf("--schema: %w", err)
		}
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
	N          int    `short:"n" help:"Number of outputs, one per line." default:"1"`
	Seed       *int64 `help:"Random seed (0..4294967295); output i uses seed+i. Default: random, printed with --stats."`

	Temperature   float32 `help:"Sampling temperature (0: greedy)." default:"0.8"`
	TopK          int     `help:"Top-k (0: off)." default:"40"`
	TopP          float32 `help:"Top-p (1: off)." default:"0.95"`
	MinP          float32 `help:"Min-p (0: off)." default:"0.05"`
	RepeatPenalty float32 `help:"Repeat penalty over the last 64 tokens (1: off)." default:"1"`
	Samplers      string  `help:"Sampler order, llama.cpp names separated by ';' or ',' (e.g. 'top_k;top_p;temperature')." placeholder:"LIST"`

	MaxTokens int      `help:"Most tokens per output (0: the context left); constrained output is closed out validly before it." default:"0"`
	MaxBytes  int      `help:"Most bytes per output without a model (0: 4096)." default:"0"`
	Stream    bool     `help:"Print output as it is generated."`
	Chat      bool     `help:"Wrap the prompt in the model's chat template."`
	System    string   `help:"System message for --chat." placeholder:"TEXT"`
	Trigger   []string `help:"Lazy grammar: free text until one of these strings, then the grammar." placeholder:"TEXT"`
	NoJump    bool     `help:"Turn jump-forward off (sample forced tokens one by one)."`
	Context   int      `help:"Context size of the model (0: min(trained, 4096))." default:"0"`
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
		mo := modelOptions{ContextSize: c.Context, Threads: c.Threads}
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
	var seed uint32
	if c.Seed != nil {
		seed = uint32(*c.Seed)
	}
	for i := 0; i < c.N; i++ {
		gopts := []engine.Option{}
		if c.Seed != nil {
			gopts = append(gopts, engine.WithSeed(seed+uint32(i)))
		}
		if c.Invalid {
			inv, err := eng.GenerateInvalid(e.ctx, gopts...)
			if err != nil {
				return fmt.Errorf("output %d: %w", i+1, err)
			}
			enc := json.NewEncoder(out)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(struct {
				Pointer  string          `json:"pointer"`
				Keyword  string          `json:"keyword"`
				Message  string          `json:"message"`
				Instance json.RawMessage `json:"instance"`
			}{inv.Pointer, inv.Keyword, inv.Message, json.RawMessage(inv.Output)}); err != nil {
				return err
			}
			continue
		}
		if c.Stream {
			gopts = append(gopts, engine.WithStream(func(p []byte) error {
				if _, err := out.Write(p); err != nil {
					return err
				}
				return out.Flush()
			}))
		}
		res, err := eng.Generate(e.ctx, prompt, gopts...)
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
			out.WriteString(text)
		}
		out.WriteByte('\n')
		if c.Stats {
			out.Flush()
			fmt.Fprintf(e.stderr, "structgen: output %d: seed %d, stop %s, %s\n", i+1, res.Seed, res.Stop, res.Stats.String())
		}
	}
	return out.Flush()
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
