// Package servebench is a load generator for servers that speak Ollama's
// API (structgen serve, ollama serve): it sends streaming POST /api/chat
// requests with a JSON Schema as "format" through the official client
// (github.com/ollama/ollama/api), c at a time, and measures what a client
// sees — aggregate completion tokens per second, time to first token,
// the gaps between streamed chunks — and whether each output is valid
// against the schema.
//
// A run at concurrency c starts c clients at once; each sends its share of
// the run's requests one after another (a closed loop), so c requests are
// in flight until the last ones finish. Request i of a run has seed
// Seed+i, so two servers given the same Config get the same requests.
//
// Measures:
//   - completion tokens: the final chunk's eval_count; a stream that ends
//     without one (Ollama's repeat guard ends a stream with done=false
//     and no metrics) counts its content chunks instead, and the Sample
//     says so;
//   - aggregate tokens/s: all completion tokens of a run over its wall
//     time (first request sent to last answer read);
//   - time to first token: request sent to the first chunk with content;
//   - inter-token latency: the gaps between consecutive chunks with
//     content, as the client reads them (a server that streams several
//     tokens in one chunk, e.g. forced ones, shows one gap for them);
//   - validity: the output is one JSON value (nothing but white space
//     after it) that the schema accepts (santhosh-tekuri/jsonschema, via
//     jsonschema2gbnf.CompileSchema), and the stream ended with done=true.
//
// StartStructgen and StartOllama start the servers (each in a scratch
// folder, on a free loopback port) and Proc.Stop stops them; the bench
// command is ./cmd/servebench (make bench-serve).
package servebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/structgen/structgen/internal/batchbench"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

// Config is what every request of a run asks.
type Config struct {
	Model   string          // the model's name on the server
	Prompt  string          // the user message
	Schema  json.RawMessage // sent as "format"; outputs are validated against it
	Options map[string]any  // Ollama options (temperature, top_k, num_predict…); "seed" is set per request
	Seed    int             // request i of a run has seed Seed+i
	// Fresh gives each request's schema a "$comment" no other request of
	// the process has (freshSchema), so the server converts and compiles
	// it while the other requests decode instead of finding it in its
	// grammar cache: what a server sees when its clients send different
	// schemas. Outputs are validated against Schema (a comment changes
	// nothing).
	Fresh bool
}

// freshSeq numbers the fresh schemas of the process.
var freshSeq atomic.Int64

// freshSchema returns schema with its top-level "$comment" (an
// annotation: it changes nothing the schema accepts) set to "servebench
// schema n", replacing one it had (a second would be a duplicate key,
// which structgen rejects); schema unchanged where it is not a JSON
// object (a boolean schema has no members).
func freshSchema(schema json.RawMessage, n int64) json.RawMessage {
	var doc map[string]json.RawMessage
	if json.Unmarshal(schema, &doc) != nil || doc == nil {
		return schema
	}
	doc["$comment"] = json.RawMessage(fmt.Sprintf(`"servebench schema %d"`, n))
	out, err := json.Marshal(doc)
	if err != nil {
		return schema
	}
	return out
}

// Outcome is how a request ended.
type Outcome int

// Outcomes, in the order tables list them.
const (
	Valid      Outcome = iota // done, one JSON value, valid against the schema
	Truncated                 // done_reason "length" and not valid: cut by num_predict
	Unfinished                // the stream ended without done=true (e.g. Ollama's repeat guard)
	NotJSON                   // done, but not one JSON value
	Invalid                   // done, JSON, but the schema rejects it
	Failed                    // the request failed (HTTP error, connection)
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"valid", "cut by length", "unfinished stream", "not JSON", "schema violation", "request failed"}

func (o Outcome) String() string {
	if o < 0 || o >= numOutcomes {
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
	return outcomeNames[o]
}

// Sample is one request as the client saw it.
type Sample struct {
	Seed    int
	Outcome Outcome
	Detail  string // why it is not Valid
	Output  string
	// Tokens is the completion tokens: eval_count, or the content chunks
	// when Counted.
	Tokens  int
	Counted bool
	Prompt  int           // prompt_eval_count (0: not reported)
	TTFT    time.Duration // 0 when no chunk had content
	Gaps    []time.Duration
	// EvalDuration is the server's own eval_duration (0: not reported).
	EvalDuration time.Duration
}

// Result is one run: its requests and its wall time.
type Result struct {
	Concurrency int
	Wall        time.Duration
	Samples     []Sample // in seed order
	// CPU is the server's CPU time during the run (Proc.CPUTime), set by
	// the caller; 0: not measured.
	CPU time.Duration
}

// Tokens is the completion tokens of all requests.
func (r Result) Tokens() int {
	n := 0
	for _, s := range r.Samples {
		n += s.Tokens
	}
	return n
}

// TokensPerSecond is the aggregate completion throughput.
func (r Result) TokensPerSecond() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Tokens()) / r.Wall.Seconds()
}

// Validator checks outputs against a JSON Schema.
type Validator struct{ schema *jsonschema.Schema }

// NewValidator compiles schema with the validator structgen uses.
func NewValidator(schema []byte) (*Validator, error) {
	s, err := jsonschema2gbnf.CompileSchema(schema)
	if err != nil {
		return nil, err
	}
	return &Validator{s}, nil
}

// Check classifies a complete output: NotJSON, Invalid or Valid, with the
// reason.
func (v *Validator) Check(out string) (Outcome, string) {
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return NotJSON, err.Error()
	}
	if _, err := dec.Token(); err != io.EOF {
		return NotJSON, fmt.Sprintf("data after the JSON value at offset %d", dec.InputOffset())
	}
	if err := v.schema.Validate(doc); err != nil {
		return Invalid, oneLine(err.Error())
	}
	return Valid, ""
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// now is the clock of the measures (tests replace it).
var now = time.Now

// Run sends requests requests, c at a time, and waits for all of them. A
// request that fails is a Failed sample, not an error; Run fails only when
// ctx ends.
func Run(ctx context.Context, client *api.Client, cfg Config, v *Validator, c, requests int) (Result, error) {
	if c < 1 || requests < 1 {
		return Result{}, fmt.Errorf("servebench: concurrency %d and requests %d must be positive", c, requests)
	}
	res := Result{Concurrency: c, Samples: make([]Sample, requests)}
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	start := now()
	for range c {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= requests || ctx.Err() != nil {
					return
				}
				res.Samples[i] = One(ctx, client, cfg, v, cfg.Seed+i)
			}
		})
	}
	wg.Wait()
	res.Wall = now().Sub(start)
	return res, ctx.Err()
}

// One sends one request with the given seed and reads its stream.
func One(ctx context.Context, client *api.Client, cfg Config, v *Validator, seed int) Sample {
	opts := maps.Clone(cfg.Options)
	if opts == nil {
		opts = map[string]any{}
	}
	opts["seed"] = seed
	stream := true
	format := cfg.Schema
	if cfg.Fresh {
		format = freshSchema(format, freshSeq.Add(1))
	}
	req := &api.ChatRequest{
		Model:    cfg.Model,
		Messages: []api.Message{{Role: "user", Content: cfg.Prompt}},
		Format:   format,
		Options:  opts,
		Stream:   &stream,
	}
	s := Sample{Seed: seed}
	var out strings.Builder
	var final *api.ChatResponse
	chunks := 0
	start := now()
	last := start
	err := client.Chat(ctx, req, func(r api.ChatResponse) error {
		t := now()
		if text := r.Message.Content + r.Message.Thinking; text != "" {
			if chunks == 0 {
				s.TTFT = t.Sub(start)
			} else {
				s.Gaps = append(s.Gaps, t.Sub(last))
			}
			last = t
			chunks++
			out.WriteString(r.Message.Content)
		}
		if r.Done {
			final = &r
		}
		return nil
	})
	s.Output = out.String()
	s.Tokens = chunks
	s.Counted = true
	switch {
	case err != nil:
		s.Outcome, s.Detail = Failed, oneLine(err.Error())
		return s
	case final == nil:
		s.Outcome, s.Detail = Unfinished, fmt.Sprintf("the stream ended after %d chunks without done", chunks)
		return s
	}
	if final.EvalCount > 0 {
		s.Tokens, s.Counted = final.EvalCount, false
	}
	s.Prompt = final.PromptEvalCount
	s.EvalDuration = final.EvalDuration
	s.Outcome, s.Detail = v.Check(s.Output)
	if s.Outcome != Valid && final.DoneReason == "length" {
		s.Outcome, s.Detail = Truncated, fmt.Sprintf("done_reason length after %d tokens: %s", s.Tokens, s.Detail)
	}
	return s
}

// Summary is the repeated runs of one server at one concurrency.
type Summary struct {
	Server      string // e.g. "structgen serve", "ollama v0.24.0 (llama.cpp runner)"
	Model       string
	Concurrency int
	Runs        []Result
}

// TokS is min/median/max aggregate tokens per second over the runs.
func (s Summary) TokS() (lo, med, hi float64) {
	v := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		v[i] = r.TokensPerSecond()
	}
	if len(v) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(v)
	return v[0], v[len(v)/2], v[len(v)-1]
}

// CPUPerToken is min/median/max server CPU time per completion token
// over the runs that measured it (0s when none did).
func (s Summary) CPUPerToken() (lo, med, hi time.Duration) {
	var v []time.Duration
	for _, r := range s.Runs {
		if r.CPU > 0 && r.Tokens() > 0 {
			v = append(v, r.CPU/time.Duration(r.Tokens()))
		}
	}
	if len(v) == 0 {
		return 0, 0, 0
	}
	slices.Sort(v)
	return v[0], v[len(v)/2], v[len(v)-1]
}

// Latencies pools the runs' times to first token and chunk gaps.
func (s Summary) Latencies() (ttft, gaps []time.Duration) {
	for _, r := range s.Runs {
		for _, x := range r.Samples {
			if x.TTFT > 0 {
				ttft = append(ttft, x.TTFT)
			}
			gaps = append(gaps, x.Gaps...)
		}
	}
	return ttft, gaps
}

// Outcomes counts the runs' samples by outcome.
func (s Summary) Outcomes() (counts [numOutcomes]int, total int) {
	for _, r := range s.Runs {
		for _, x := range r.Samples {
			counts[x.Outcome]++
			total++
		}
	}
	return counts, total
}

// WriteTable writes a Markdown table of the summaries. Beside the peer's
// row (same model and concurrency; peer names its server) each row gives
// its median throughput over the peer's, and the peer's median server CPU
// time per token over its own.
func WriteTable(w io.Writer, sums []Summary, peer string) {
	type key struct {
		model string
		c     int
	}
	type base struct {
		tokS float64
		cpu  time.Duration
	}
	bases := map[key]base{}
	for _, s := range sums {
		if s.Server == peer {
			_, med, _ := s.TokS()
			_, cpu, _ := s.CPUPerToken()
			bases[key{s.Model, s.Concurrency}] = base{med, cpu}
		}
	}
	fmt.Fprintf(w, "| server | model | conc. | agg. tok/s min / med / max | vs %s | server CPU ms/token min / med / max | vs peer, CPU/token | TTFT p50 / p99 ms | ITL p50 / p99 ms | tokens/request | valid | other outcomes |\n", peer)
	fmt.Fprintln(w, "|---|---|---:|---|---:|---|---:|---|---|---:|---:|---|")
	for _, s := range sums {
		lo, med, hi := s.TokS()
		b := bases[key{s.Model, s.Concurrency}]
		ratio, cpuRatio := "–", "–"
		if b.tokS > 0 && s.Server != peer {
			ratio = fmt.Sprintf("%.2f×", med/b.tokS)
		}
		clo, cmed, chi := s.CPUPerToken()
		cpu := "–"
		if cmed > 0 {
			cpu = fmt.Sprintf("%s / %s / %s", ms(clo), ms(cmed), ms(chi))
			if b.cpu > 0 && s.Server != peer {
				cpuRatio = fmt.Sprintf("%.2f×", float64(b.cpu)/float64(cmed))
			}
		}
		ttft, gaps := s.Latencies()
		counts, total := s.Outcomes()
		var other []string
		for o := Valid + 1; o < numOutcomes; o++ {
			if counts[o] > 0 {
				other = append(other, fmt.Sprintf("%d %s", counts[o], o))
			}
		}
		tokens := 0
		for _, r := range s.Runs {
			tokens += r.Tokens()
		}
		perReq := 0.0
		if total > 0 {
			perReq = float64(tokens) / float64(total)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.1f / %.1f / %.1f | %s | %s | %s | %s / %s | %s / %s | %.0f | %d/%d | %s |\n",
			s.Server, s.Model, s.Concurrency, lo, med, hi, ratio, cpu, cpuRatio,
			ms(batchbench.Quantile(ttft, 0.5)), ms(batchbench.Quantile(ttft, 0.99)),
			ms(batchbench.Quantile(gaps, 0.5)), ms(batchbench.Quantile(gaps, 0.99)),
			perReq, counts[Valid], total, strings.Join(other, ", "))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// WriteSamples writes every sample of the summaries as one JSON line
// (server, model, concurrency, run, and the sample), for a later look at
// outputs and failures.
func WriteSamples(w io.Writer, sums []Summary) error {
	for _, s := range sums {
		for run, r := range s.Runs {
			for _, x := range r.Samples {
				line, err := json.Marshal(struct {
					Server      string  `json:"server"`
					Model       string  `json:"model"`
					Concurrency int     `json:"concurrency"`
					Run         int     `json:"run"`
					Seed        int     `json:"seed"`
					Outcome     string  `json:"outcome"`
					Detail      string  `json:"detail,omitempty"`
					Tokens      int     `json:"tokens"`
					Counted     bool    `json:"tokens_counted,omitempty"`
					Prompt      int     `json:"prompt_tokens"`
					TTFTms      float64 `json:"ttft_ms"`
					Output      string  `json:"output"`
				}{s.Server, s.Model, s.Concurrency, run, x.Seed, x.Outcome.String(), x.Detail, x.Tokens, x.Counted, x.Prompt,
					float64(x.TTFT) / float64(time.Millisecond), x.Output})
				if err != nil {
					return err
				}
				if _, err := w.Write(append(line, '\n')); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// FirstModel returns the name of the first model the server lists (GET
// /api/tags).
func FirstModel(ctx context.Context, client *api.Client) (string, error) {
	l, err := client.List(ctx)
	if err != nil {
		return "", err
	}
	if len(l.Models) == 0 {
		return "", errors.New("servebench: the server lists no model (GET /api/tags)")
	}
	if m := l.Models[0]; m.Name != "" {
		return m.Name, nil
	}
	return l.Models[0].Model, nil
}
