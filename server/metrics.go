package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/internal/gcfloor"
)

// metrics are the server's Prometheus metrics (served on /metrics). The
// gauges of the engine (queue depth, active sequences, grammar cache) are
// read from it at scrape time.
type metrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	ttft       prometheus.Histogram
	itl        prometheus.Histogram
	prompt     prometheus.Counter
	completion prometheus.Counter
	mask       prometheus.Counter
	maskTok    prometheus.Histogram
}

// Latency buckets: from a millisecond (a step of a small model) to a
// minute (a long prompt on a CPU behind a queue).
var latencyBuckets = prometheus.ExponentialBucketsRange(0.001, 60, 16)

func newMetrics(reg *prometheus.Registry, eng func() *engine.Engine) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "structgen_requests_total", Help: "HTTP requests by endpoint and status (499: the client went away).",
		}, []string{"endpoint", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "structgen_request_duration_seconds", Help: "HTTP request durations by endpoint.", Buckets: latencyBuckets,
		}, []string{"endpoint"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "structgen_time_to_first_token_seconds", Help: "From the request to its first sampled token (queue, compile and prefill included).", Buckets: latencyBuckets,
		}),
		itl: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "structgen_inter_token_latency_seconds", Help: "Between consecutive sampled tokens of a generation (jump-forward tokens come with the token before them).",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 10, 16),
		}),
		prompt:     prometheus.NewCounter(prometheus.CounterOpts{Name: "structgen_prompt_tokens_total", Help: "Prompt tokens of completed requests."}),
		completion: prometheus.NewCounter(prometheus.CounterOpts{Name: "structgen_completion_tokens_total", Help: "Generated tokens of completed requests."}),
		mask:       prometheus.NewCounter(prometheus.CounterOpts{Name: "structgen_mask_seconds_total", Help: "Grammar work (masks, jump-forward, budget checks) of completed requests."}),
		maskTok: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "structgen_mask_seconds_per_token", Help: "Grammar work per generated token, one observation per constrained generation.",
			Buckets: prometheus.ExponentialBucketsRange(1e-7, 0.01, 16),
		}),
	}
	sched := func(f func(engine.SchedulerStats) float64) func() float64 {
		return func() float64 {
			if e := eng(); e != nil {
				return f(e.SchedulerStats())
			}
			return 0
		}
	}
	cache := func(f func(engine.CacheStats) float64) func() float64 {
		return func() float64 {
			if e := eng(); e != nil {
				return f(e.CacheStats())
			}
			return 0
		}
	}
	reg.MustRegister(m.requests, m.duration, m.ttft, m.itl, m.prompt, m.completion, m.mask, m.maskTok,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "structgen_queue_depth", Help: "Generations waiting for a sequence of the model (scale out on this)."},
			sched(func(s engine.SchedulerStats) float64 { return float64(s.Queued) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "structgen_active_sequences", Help: "Sequences of the model generating now."},
			sched(func(s engine.SchedulerStats) float64 { return float64(s.Active) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "structgen_decode_steps_total", Help: "Batched decodes of the model."},
			sched(func(s engine.SchedulerStats) float64 { return float64(s.Steps) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "structgen_decode_seconds_total", Help: "Time in the model's decodes."},
			sched(func(s engine.SchedulerStats) float64 { return s.Decode.Seconds() })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "structgen_step_grammar_seconds_total", Help: "Wall time of the parallel mask and sampling phase after each decode."},
			sched(func(s engine.SchedulerStats) float64 { return s.Grammar.Seconds() })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "structgen_step_mask_wait_seconds_total", Help: "Time waited after each decode for the masks filled while the model decoded (what the decode did not hide)."},
			sched(func(s engine.SchedulerStats) float64 { return s.MaskWait.Seconds() })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "structgen_grammar_cache_hits_total", Help: "Grammar cache lookups answered without compiling."},
			cache(func(s engine.CacheStats) float64 { return float64(s.Hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "structgen_grammar_cache_misses_total", Help: "Grammar cache lookups that compiled."},
			cache(func(s engine.CacheStats) float64 { return float64(s.Misses) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "structgen_grammar_cache_evictions_total", Help: "Compiled grammars dropped to stay within the cache's bound."},
			cache(func(s engine.CacheStats) float64 { return float64(s.Evictions) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "structgen_grammar_cache_bytes", Help: "Bytes of the compiled grammars held."},
			cache(func(s engine.CacheStats) float64 { return float64(s.Bytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "structgen_grammar_cache_entries", Help: "Compiled grammars held."},
			cache(func(s engine.CacheStats) float64 { return float64(s.Entries) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "structgen_heap_reserve_bytes", Help: "Heap the Go runtime counts in use that is never written (the GC floor's reserve, see --gc-floor): part of go_memstats_heap_*, not of the resident memory."},
			func() float64 { return float64(gcfloor.Reserve()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// request records a finished HTTP request.
func (m *metrics) request(endpoint string, status int, d time.Duration) {
	m.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(endpoint).Observe(d.Seconds())
}

// generation records a finished generation.
func (m *metrics) generation(res *engine.Result) {
	st := &res.Stats
	m.completion.Add(float64(st.Tokens))
	if st.TimeToFirstToken > 0 {
		m.ttft.Observe(st.TimeToFirstToken.Seconds())
	}
	for i := 1; i < len(st.StepTimes); i++ {
		m.itl.Observe((st.StepTimes[i] - st.StepTimes[i-1]).Seconds())
	}
	if st.Mask > 0 {
		m.mask.Add(st.Mask.Seconds())
		if st.Tokens > 0 {
			m.maskTok.Observe(st.Mask.Seconds() / float64(st.Tokens))
		}
	}
}
