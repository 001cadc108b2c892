package engine_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/internal/sharedtest"
)

func benchOrderSchema(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(sharedtest.Path(tb, "bench", "cases", "02-order-schema", "schema.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// No-model generations run in parallel on one engine and give the same
// output for a seed as a sequential run.
func TestNoModelConcurrent(t *testing.T) {
	e, err := engine.New(nil, engine.WithSchema([]byte(personSchema)))
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	want := make([]string, n)
	for i := range n {
		want[i] = generate(t, e, "", engine.WithSeed(uint32(i))).Output
	}
	got := make([]string, n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				res, err := e.Generate(context.Background(), "", engine.WithSeed(uint32(i)))
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = res.Output
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if got[i] != want[i] {
			t.Errorf("seed %d: %q in parallel, %q alone", i, got[i], want[i])
		}
	}
}

// BenchmarkNoModel measures validated instances per second of the bench's
// order schema through Engine.Generate (grammar from the cache, a pooled
// sampler, santhosh-tekuri validation of every instance), realistic (the
// default) and uniform. Target (issue 18): realistic >= 1,000/s.
func BenchmarkNoModel(b *testing.B) {
	for _, mode := range []string{"realistic", "uniform"} {
		b.Run(mode, func(b *testing.B) {
			e, err := engine.New(nil, engine.WithSchema(benchOrderSchema(b)), engine.WithUniform(mode == "uniform"))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			seed := uint32(0)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Generate(ctx, "", engine.WithSeed(seed)); err != nil {
					b.Fatal(err)
				}
				seed++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
		})
	}
}

// BenchmarkNoModelInvalid measures near-miss instances per second of the
// order schema (a valid instance, its changes, one validation per change
// tried).
func BenchmarkNoModelInvalid(b *testing.B) {
	e, err := engine.New(nil, engine.WithSchema(benchOrderSchema(b)))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	seed := uint32(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.GenerateInvalid(ctx, engine.WithSeed(seed)); err != nil {
			b.Fatal(err)
		}
		seed++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
}
