//go:build llamacpp

package engine_test

// End-to-end tests through llama.cpp (build tag llamacpp): the trained
// stories260K model (512-token SentencePiece vocabulary) and a random-weight
// Llama with the real Llama-3 vocabulary (128,256 tokens), written by the
// test with internal/testmodel.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/engine/llamacpp"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/internal/testmodel"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask/jsonkeys"
)

func loadModel(tb testing.TB, path string) *llamacpp.Model {
	tb.Helper()
	// One thread: on a loaded machine, llama.cpp's threads wait for each
	// other (the test machine has two cores shared by many jobs).
	m, err := llamacpp.Load(path, llamacpp.Options{ContextSize: 1024, Threads: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

func storiesModel(tb testing.TB) *llamacpp.Model {
	return loadModel(tb, sharedtest.Path(tb, "corpus", "models", "stories260K.gguf"))
}

var llama3 struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// llama3Path writes the random-weight Llama-3 model once per test binary.
func llama3Path(tb testing.TB) string {
	tb.Helper()
	vdir := sharedtest.Path(tb, "corpus", "vocab", "hf", "llama3.2")
	llama3.once.Do(func() {
		v, err := testmodel.Llama3Vocab(vdir)
		if err != nil {
			llama3.err = err
			return
		}
		llama3.dir, llama3.err = os.MkdirTemp("", "engine-llama3")
		if llama3.err != nil {
			return
		}
		llama3.path = filepath.Join(llama3.dir, "llama3-random.gguf")
		llama3.err = testmodel.WriteLlama(llama3.path, testmodel.SmallLlama(v))
	})
	if llama3.err != nil {
		tb.Fatal(llama3.err)
	}
	return llama3.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if llama3.dir != "" {
		os.RemoveAll(llama3.dir)
	}
	os.Exit(code)
}

func orderSchema(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(sharedtest.Path(tb, "bench", "cases", "02-order-schema", "schema.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// A GBNF grammar on the trained model: valid on every seed, reproducible.
func TestStoriesGrammar(t *testing.T) {
	const src = `root ::= "Once upon a time, " name " " verb " a " noun "." (" " [A-Z] [a-z ,]{3,40} ".")?
name ::= "Lily" | "Tom" | "Ben" | "Sue"
verb ::= "saw" | "found" | "had" | "wanted"
noun ::= [a-z]{2,10}`
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	rec := earley.New(g)
	m := storiesModel(t)
	e, err := engine.New(m, engine.WithGrammar(src), engine.WithMaxTokens(80))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seed := range uint32(6) {
		res := generate(t, e, "", engine.WithSeed(seed))
		if !rec.Accepts([]byte(res.Output)) {
			t.Fatalf("seed %d: %q rejected by the grammar", seed, res.Output)
		}
		if again := generate(t, e, "", engine.WithSeed(seed)); again.Output != res.Output {
			t.Errorf("seed %d: %q then %q", seed, res.Output, again.Output)
		}
		seen[res.Output] = true
		t.Logf("seed %d: %q (%s)", seed, res.Output, res.Stats.String())
	}
	if len(seen) < 4 {
		t.Errorf("%d distinct outputs of 6 seeds", len(seen))
	}
}

// A JSON Schema on the trained model: valid on every seed (also at a tight
// budget), reproducible.
func TestStoriesSchema(t *testing.T) {
	m := storiesModel(t)
	v, err := jsonschema2gbnf.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(m, engine.WithSchema([]byte(personSchema)))
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{120, 45} {
		for seed := range uint32(4) {
			res := generate(t, e, "Once upon a time", engine.WithSeed(seed), engine.WithMaxTokens(budget))
			doc, err := decodeJSON(res.Output)
			if err != nil {
				t.Fatalf("budget %d seed %d: %q: %v", budget, seed, res.Output, err)
			}
			if err := v.Validate(doc); err != nil {
				t.Fatalf("budget %d seed %d: %q: %v", budget, seed, res.Output, err)
			}
			if budget > 0 && len(res.Tokens) > budget {
				t.Errorf("budget %d: %d tokens", budget, len(res.Tokens))
			}
			again := generate(t, e, "Once upon a time", engine.WithSeed(seed), engine.WithMaxTokens(budget))
			if again.Output != res.Output {
				t.Errorf("budget %d seed %d: %q then %q", budget, seed, res.Output, again.Output)
			}
		}
	}
}

// The full cgo path at a realistic vocabulary size: the order schema on a
// random-weight model with the Llama-3 vocabulary, with its chat template,
// and unconstrained Gumbel-max decoding.
func TestLlama3Random(t *testing.T) {
	m := loadModel(t, llama3Path(t))
	schema := orderSchema(t)
	v, err := jsonschema2gbnf.CompileSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(m, engine.WithSchema(schema), engine.WithMaxTokens(250), engine.WithChat(true, "Answer in JSON."))
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint32(3) {
		res := generate(t, e, "An order, please.", engine.WithSeed(seed))
		doc, err := decodeJSON(res.Output)
		if err != nil {
			t.Fatalf("seed %d: %q: %v", seed, res.Output, err)
		}
		if err := v.Validate(doc); err != nil {
			t.Fatalf("seed %d: %q: %v", seed, res.Output, err)
		}
		if res.Stats.Forced == 0 || res.Stats.DecodeCalls >= len(res.Tokens) {
			t.Errorf("seed %d: jump-forward did nothing: %s", seed, res.Stats.String())
		}
		if again := generate(t, e, "An order, please.", engine.WithSeed(seed)); again.Output != res.Output {
			t.Errorf("seed %d not reproducible", seed)
		}
		t.Logf("seed %d: %d bytes, %s", seed, len(res.Output), res.Stats.String())
	}
	res := generate(t, e, "Hello", engine.WithGrammar(""), engine.WithMaxTokens(20), engine.WithSeed(1))
	if res.Stats.Gumbel != res.Stats.Sampled || len(res.Tokens) == 0 {
		t.Errorf("unconstrained: %s", res.Stats.String())
	}
}

// 16 concurrent generations on one model of 4 sequences, with 5
// constraints mixed (GBNF, JSON Schema, a lazy trigger, a small budget,
// free keys that must not repeat):
// every output is valid, and each is what the same seed gives alone on the
// trained model's first three generations' replays. Then a cancelled
// generation frees its sequence and the next one runs.
func TestConcurrentMixed(t *testing.T) {
	const grammar = `root ::= "Once upon a time, " ("Lily" | "Tom" | "Ben") " " ("saw" | "had") " a " [a-z]{2,10} "."`
	schema := []byte(personSchema)
	const freeKeys = `{"type":"object","additionalProperties":{"type":"integer","minimum":0,"maximum":99},"propertyNames":{"maxLength":2},"maxProperties":6}`
	freeValidator, err := jsonschema2gbnf.CompileSchema([]byte(freeKeys))
	if err != nil {
		t.Fatal(err)
	}
	rec := earley.New(mustParse(t, grammar))
	validator, err := jsonschema2gbnf.CompileSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []struct {
		name  string
		opts  []engine.Option
		check func(res *engine.Result) error
	}{
		{"gbnf", []engine.Option{engine.WithGrammar(grammar), engine.WithMaxTokens(60)}, func(res *engine.Result) error {
			if !rec.Accepts([]byte(res.Output)) {
				return fmt.Errorf("%q is not a sentence of the grammar", res.Output)
			}
			return nil
		}},
		{"schema", []engine.Option{engine.WithSchema(schema), engine.WithMaxTokens(120)}, nil},
		{"lazy", []engine.Option{engine.WithSchema(schema), engine.WithLazyTrigger(" the", ","), engine.WithMaxTokens(120)}, nil},
		{"budget", []engine.Option{engine.WithSchema(schema), engine.WithMaxTokens(40)}, nil},
		{"free keys", []engine.Option{engine.WithSchema([]byte(freeKeys)), engine.WithMaxTokens(80)}, func(res *engine.Result) error {
			if dups, err := jsonkeys.Duplicates([]byte(res.Output)); err != nil || len(dups) > 0 {
				return fmt.Errorf("%q: duplicate keys %v, %v", res.Output, dups, err)
			}
			doc, err := decodeJSON(res.Output)
			if err != nil {
				return err
			}
			return freeValidator.Validate(doc)
		}},
	}
	for _, md := range []struct {
		name string
		path func(testing.TB) string
	}{
		{"stories260K", func(tb testing.TB) string { return sharedtest.Path(tb, "corpus", "models", "stories260K.gguf") }},
		{"llama3-128k", llama3Path},
	} {
		t.Run(md.name, func(t *testing.T) {
			m := loadModel(t, md.path(t))
			e, err := engine.New(m)
			if err != nil {
				t.Fatal(err)
			}
			const n = 16
			results := make([]*engine.Result, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					k := kinds[i%len(kinds)]
					results[i], errs[i] = e.Generate(context.Background(), "Once upon a time", append(k.opts, engine.WithSeed(uint32(i)))...)
				}()
			}
			wg.Wait()
			triggered := 0
			for i, res := range results {
				k := kinds[i%len(kinds)]
				if errs[i] != nil {
					t.Fatalf("%d (%s): %v", i, k.name, errs[i])
				}
				if !res.Triggered {
					continue
				}
				triggered++
				check := k.check
				if check == nil {
					check = func(res *engine.Result) error {
						doc, err := decodeJSON(res.Output)
						if err != nil {
							return err
						}
						return validator.Validate(doc)
					}
				}
				if err := check(res); err != nil {
					t.Errorf("%d (%s): %v", i, k.name, err)
				}
				if k.name == "budget" && len(res.Tokens) > 40 {
					t.Errorf("%d: %d tokens, budget 40", i, len(res.Tokens))
				}
			}
			st := e.SchedulerStats()
			t.Logf("%d of %d triggered; %d steps, %.1f entries and %.2f sampled sequences per step, grammar %.1f%% of step time",
				triggered, n, st.Steps, float64(st.Entries)/float64(st.Steps), float64(st.Sampled)/float64(st.Steps), 100*st.GrammarShare())
			if float64(st.Sampled)/float64(st.Steps) < 1.5 {
				t.Errorf("%.2f sequences sampled per step: not batched", float64(st.Sampled)/float64(st.Steps))
			}

			// Alone, a seeded generation gives the same output twice.
			k := kinds[1]
			a := generate(t, e, "Once upon a time", append(k.opts, engine.WithSeed(5))...)
			b := generate(t, e, "Once upon a time", append(k.opts, engine.WithSeed(5))...)
			if a.Output != b.Output {
				t.Errorf("seed 5 alone: %q then %q", a.Output, b.Output)
			}

			// A cancelled generation leaves within a step and the next runs.
			ctx, cancel := context.WithCancel(context.Background())
			pieces := 0
			_, err = e.Generate(ctx, "Once upon a time", engine.WithMaxTokens(200), engine.WithStream(func([]byte) error {
				if pieces++; pieces == 3 {
					cancel()
				}
				return nil
			}))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled: %v", err)
			}
			// Generate returns at the cancel; the sequence leaves at the
			// scheduler's next step (exactly "within a step" is
			// TestCancelFreesSequence's, on the fake model).
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				st := e.SchedulerStats()
				if st.Active == 0 && st.Cells == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("10 s after the cancel: %d active, %d cells reserved", st.Active, st.Cells)
					break
				}
			}
			generate(t, e, "Once upon a time", append(kinds[0].opts, engine.WithSeed(1))...)
		})
	}
}

func mustParse(t *testing.T, src string) *gbnf.Grammar {
	t.Helper()
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// BenchmarkDecode measures tokens/s unconstrained and constrained (the
// order schema, with and without jump-forward) on both models, and the
// grammar work as a share of the model's decode time.
func BenchmarkDecode(b *testing.B) {
	schema := orderSchema(b)
	models := []struct {
		name   string
		path   func(testing.TB) string
		budget int // tokens per generation: the order schema needs ~290 with 512 tokens
	}{
		{"stories260K", func(tb testing.TB) string {
			return sharedtest.Path(tb, "corpus", "models", "stories260K.gguf")
		}, 600},
		{"llama3-128k", llama3Path, 200},
	}
	for _, md := range models {
		m := loadModel(b, md.path(b))
		for _, tc := range []struct {
			name string
			opts []engine.Option
		}{
			{"unconstrained", []engine.Option{engine.WithGrammar("")}},
			{"order-schema", []engine.Option{engine.WithSchema(schema)}},
			{"order-schema-nojump", []engine.Option{engine.WithSchema(schema), engine.WithJumpForward(false)}},
		} {
			b.Run(md.name+"/"+tc.name, func(b *testing.B) {
				e, err := engine.New(m, append(tc.opts, engine.WithMaxTokens(md.budget))...)
				if err != nil {
					b.Fatal(err)
				}
				var toks, sampled, forced, decoded int
				var st engine.Stats
				seed := uint32(0)
				for b.Loop() {
					res, err := e.Generate(context.Background(), "Once upon a time", engine.WithSeed(seed))
					if err != nil {
						b.Fatal(err)
					}
					seed++
					toks += len(res.Tokens)
					sampled += res.Stats.Sampled
					forced += res.Stats.Forced
					decoded += res.Stats.DecodedTokens
					st.Decode += res.Stats.Decode
					st.Mask += res.Stats.Mask
					st.Sample += res.Stats.Sample
					st.Total += res.Stats.Total - res.Stats.Prefill
				}
				b.ReportMetric(float64(toks)/st.Total.Seconds(), "tok/s")
				b.ReportMetric(float64(decoded)/st.Decode.Seconds(), "model-tok/s")
				b.ReportMetric(100*float64(st.Mask)/float64(st.Decode), "mask-%decode")
				b.ReportMetric(100*float64(st.Sample)/float64(st.Total), "sampler-%")
				b.ReportMetric(float64(toks)/float64(b.N), "tok/gen")
				b.ReportMetric(float64(sampled)/float64(b.N), "sampled/gen")
				b.ReportMetric(100*float64(forced)/float64(max(toks, 1)), "forced-%")
			})
		}
	}
}
