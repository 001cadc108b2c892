// Package batchbench measures batched, constrained decoding: aggregate
// output tokens per second, time to first token and inter-token latency of
// concurrent generations on one model, for structgen's engine (constrained
// and unconstrained) and for a peer (llama.cpp's grammar sampler as Ollama
// drives it, in peer.go with the llamacpp build tag).
//
// A run at concurrency c starts c clients at once; each client runs its
// share of the requests one after another (a closed loop), so c
// generations are in flight until the last ones finish. Aggregate
// throughput is all output tokens over the wall time of the run.
package batchbench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/structgen/structgen/engine"
)

// Result is one run: one mode at one concurrency.
type Result struct {
	Mode        string
	Concurrency int
	Requests    int
	Tokens      int           // output tokens of all requests
	Wall        time.Duration // from the first request to the last answer
	TTFT        []time.Duration
	ITL         []time.Duration // gaps between consecutive sampled tokens of a request
	Valid       int             // outputs the check accepted
	Checked     int             // outputs checked (0: no check)
	// GrammarShare is the share of the step time spent on masks, samplers
	// and jump-forward between decodes (structgen's scheduler); -1 when
	// not measured.
	GrammarShare float64
}

// TokensPerSecond is the aggregate output throughput.
func (r Result) TokensPerSecond() float64 { return float64(r.Tokens) / r.Wall.Seconds() }

// Quantile returns the q-quantile (nearest rank) of d, 0 when empty.
func Quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Request is what every request of a run asks.
type Request struct {
	Prompt string
	Opts   []engine.Option
	// Check, if set, judges an output (e.g. validates it against the
	// schema); nil: outputs are not checked.
	Check func(output string) error
}

// RunEngine runs requests generations on e, c at a time.
func RunEngine(ctx context.Context, e *engine.Engine, mode string, c, requests int, req Request) (Result, error) {
	res := Result{Mode: mode, Concurrency: c, Requests: requests, GrammarShare: -1}
	before := e.SchedulerStats()
	var mu sync.Mutex
	var firstErr error
	next := 0
	start := time.Now()
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == requests || firstErr != nil {
					mu.Unlock()
					return
				}
				seed := uint32(next)
				next++
				mu.Unlock()
				opts := append(slices.Clip(req.Opts), engine.WithSeed(seed), engine.WithStepTimes(true))
				out, err := e.Generate(ctx, req.Prompt, opts...)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("request %d: %w", seed, err)
					}
					mu.Unlock()
					return
				}
				res.Tokens += len(out.Tokens)
				res.TTFT = append(res.TTFT, out.Stats.TimeToFirstToken)
				res.ITL = append(res.ITL, Gaps(out.Stats.StepTimes)...)
				if req.Check != nil {
					res.Checked++
					if out.Triggered && req.Check(out.Output) == nil {
						res.Valid++
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Wall = time.Since(start)
	if firstErr != nil {
		return res, firstErr
	}
	after := e.SchedulerStats()
	res.GrammarShare = share(after.Grammar-before.Grammar, after.Decode-before.Decode+after.Grammar-before.Grammar)
	return res, nil
}

// Gaps returns the gaps between consecutive times (a generation's
// Stats.StepTimes: its inter-token latencies).
func Gaps(t []time.Duration) []time.Duration {
	var g []time.Duration
	for i := 1; i < len(t); i++ {
		g = append(g, t[i]-t[i-1])
	}
	return g
}

func share(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Summary is the repeated runs of one mode at one concurrency.
type Summary struct {
	Mode        string
	Concurrency int
	Runs        []Result
}

// stat returns min, median and max of f over the runs.
func (s Summary) stat(f func(Result) float64) (lo, med, hi float64) {
	v := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	return v[0], v[len(v)/2], v[len(v)-1]
}

// TokS is min/median/max aggregate tokens per second.
func (s Summary) TokS() (lo, med, hi float64) { return s.stat(Result.TokensPerSecond) }

// Pooled returns all runs' latencies together.
func (s Summary) Pooled() (ttft, itl []time.Duration) {
	for _, r := range s.Runs {
		ttft = append(ttft, r.TTFT...)
		itl = append(itl, r.ITL...)
	}
	return ttft, itl
}

// WriteTable writes a Markdown table of summaries, with the ratio of each
// row's median throughput to the row of ratioMode at the same
// concurrency ("" for none).
func WriteTable(w io.Writer, sums []Summary, ratioMode string) {
	fmt.Fprintln(w, "| mode | conc. | agg. tok/s min / med / max | vs "+ratioMode+" | TTFT p50 / p99 ms | ITL p50 / p99 ms | grammar share | valid |")
	fmt.Fprintln(w, "|---|---:|---|---:|---|---|---:|---:|")
	base := map[int]float64{}
	for _, s := range sums {
		if s.Mode == ratioMode {
			_, med, _ := s.TokS()
			base[s.Concurrency] = med
		}
	}
	for _, s := range sums {
		lo, med, hi := s.TokS()
		ttft, itl := s.Pooled()
		ratio := "–"
		if b := base[s.Concurrency]; b > 0 {
			ratio = fmt.Sprintf("%.2f×", med/b)
		}
		gs := "–"
		if _, g, _ := s.stat(func(r Result) float64 { return r.GrammarShare }); g >= 0 {
			gs = fmt.Sprintf("%.1f%%", 100*g)
		}
		valid, checked := 0, 0
		for _, r := range s.Runs {
			valid += r.Valid
			checked += r.Checked
		}
		vs := "–"
		if checked > 0 {
			vs = fmt.Sprintf("%d/%d", valid, checked)
		}
		fmt.Fprintf(w, "| %s | %d | %.1f / %.1f / %.1f | %s | %.1f / %.1f | %.2f / %.2f | %s | %s |\n",
			s.Mode, s.Concurrency, lo, med, hi, ratio,
			ms(Quantile(ttft, 0.5)), ms(Quantile(ttft, 0.99)), ms(Quantile(itl, 0.5)), ms(Quantile(itl, 0.99)), gs, vs)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
