//go:build unix

package engine

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/structgen/structgen/mask"
)

// cpuTime is the process's user+system CPU time: on a machine shared with
// other jobs, it measures the work where wall-clock time measures the
// load.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTools128 measures what a request with 128 realistic tools (the
// BFCL functions of JSONSchemaBench) costs before its first token on the
// Llama-3 vocabulary: each tool's parameters converted (one load gives
// the arguments' grammar and validator) and parsed, in parallel, the
// grammars merged into the grammar of the calls, and that compiled. The
// target is 100 ms. No cache: every iteration compiles. It reports wall
// time (ns/op, ms/compile), the median wall time of one compile
// (ready-ms/compile; built-ms/compile without the eager precomputation,
// which a generation overlaps with its prompt), the process's CPU time (cpu-ms/compile, all
// goroutines and the GC), and the parts on their own.
func BenchmarkTools128(b *testing.B) {
	e := llama3Engine(b)
	tools := bfclTools(b, 128)
	run := func(b *testing.B, f func()) {
		b.ReportAllocs()
		c0 := cpuTime(b)
		for b.Loop() {
			f()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/compile")
		b.ReportMetric(float64((cpuTime(b)-c0).Microseconds())/1000/float64(b.N), "cpu-ms/compile")
	}
	for _, tc := range []struct {
		name string
		ts   toolSpec
	}{
		{"hermes-required", toolSpec{format: toolHermes, mode: ToolRequired}},
		{"hermes-auto", toolSpec{format: toolHermes, mode: ToolAuto}},
		{"llama3-required", toolSpec{format: toolLlama3, mode: ToolRequired}},
		{"mistral-required", toolSpec{format: toolMistral, mode: ToolRequired}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ts := tc.ts
			ts.tools = tools
			var ready, built []time.Duration
			run(b, func() {
				t := time.Now()
				con, err := e.buildTools(&ts, nil)
				if err != nil {
					b.Fatal(err)
				}
				built = append(built, time.Since(t))
				// Ready: with the precomputation the grammar cache runs
				// next (overlapped with the prompt in a generation).
				if err := con.compiled.Precompute(nil); err != nil {
					b.Fatal(err)
				}
				ready = append(ready, time.Since(t))
				if len(con.tools.validators) == 0 {
					b.Fatal("no validators")
				}
			})
			slices.Sort(ready)
			slices.Sort(built)
			b.ReportMetric(float64(ready[len(ready)/2].Microseconds())/1000, "ready-ms/compile")
			b.ReportMetric(float64(built[len(built)/2].Microseconds())/1000, "built-ms/compile")
		})
	}
	// The parts of hermes-required.
	ts := &toolSpec{tools: tools, format: toolHermes, mode: ToolRequired}
	b.Run("part=convert+parse", func(b *testing.B) {
		run(b, func() {
			if _, err := ts.convert(nil); err != nil {
				b.Fatal(err)
			}
		})
	})
	parts, err := ts.convert(nil)
	if err != nil {
		b.Fatal(err)
	}
	g, err := ts.grammar(parts)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("part=compile", func(b *testing.B) {
		run(b, func() {
			if _, err := mask.CompileWith(g, e.vocab, mask.Options{}); err != nil {
				b.Fatal(err)
			}
		})
	})
}
