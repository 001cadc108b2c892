package jsonschema2gbnf_test

import (
	"sort"
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/schemabench"
	"github.com/structgen/structgen/mask"
)

// BenchmarkConvertBench converts the two bench schemas (02 order, 04 wide).
func BenchmarkConvertBench(b *testing.B) {
	for _, id := range []string{"02-order-schema", "04-wide-schema"} {
		schema := readFile(b, sharedtest.Path(b, "bench", "cases", id, "schema.json"))
		b.Run(id, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				g, err := jsonschema2gbnf.Convert(schema)
				if err != nil {
					b.Fatal(err)
				}
				n = len(g)
			}
			b.ReportMetric(float64(n), "grammar-bytes")
		})
	}
}

// BenchmarkConvertCorpus converts every 8th corpus schema per iteration
// and reports the p50/p95 convert time per schema (and the grammar
// parse time, the next step of the pipeline).
func BenchmarkConvertCorpus(b *testing.B) {
	cases, err := schemabench.Load(sharedtest.Path(b, "corpus", "jsonschemabench"))
	if err != nil {
		b.Fatal(err)
	}
	var sample []*schemabench.Case
	for i, c := range cases {
		if i%8 == 0 {
			sample = append(sample, c)
		}
	}
	b.ReportAllocs()
	var conv, parse []time.Duration
	for b.Loop() {
		conv, parse = conv[:0], parse[:0]
		for _, c := range sample {
			t0 := time.Now()
			g, err := jsonschema2gbnf.Convert(c.Schema)
			conv = append(conv, time.Since(t0))
			if err != nil {
				continue
			}
			t1 := time.Now()
			if _, err := gbnf.Parse(g); err == nil {
				parse = append(parse, time.Since(t1))
			}
		}
	}
	pct := func(ds []time.Duration, p int) float64 {
		if len(ds) == 0 {
			return 0
		}
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[len(s)*p/100].Microseconds())
	}
	b.ReportMetric(pct(conv, 50), "convert-p50-µs")
	b.ReportMetric(pct(conv, 95), "convert-p95-µs")
	b.ReportMetric(pct(parse, 50), "parse-p50-µs")
	b.ReportMetric(pct(parse, 95), "parse-p95-µs")
	b.ReportMetric(float64(len(sample)), "schemas")
}

// BenchmarkCompileBand converts, parses and compiles (the automaton:
// mask.Options.Deferred, against Llama-3) the corpus schemas whose
// strict grammars rank between the 90th and the 99th percentile by size
// (those within mask.Compile's limits), a fixed stand-in for
// schemabench's compile p95 band (most of that band's time is the
// automaton), and reports each phase's total per pass.
func BenchmarkCompileBand(b *testing.B) {
	shared := sharedtest.Dir(b)
	cases, err := schemabench.Load(sharedtest.Path(b, "corpus", "jsonschemabench"))
	if err != nil {
		b.Fatal(err)
	}
	v, err := llama3vocab.Load(shared)
	if err != nil {
		b.Fatal(err)
	}
	mask.PrepareVocab(v)
	type converted struct {
		schema []byte
		src    string
	}
	var all []converted
	for _, c := range cases {
		if src, err := jsonschema2gbnf.Convert(c.Schema); err == nil {
			all = append(all, converted{c.Schema, src})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return len(all[i].src) < len(all[j].src) })
	var band [][]byte
	for _, c := range all[len(all)*90/100 : len(all)*99/100] {
		if g, err := gbnf.Parse(c.src); err == nil {
			if _, err := mask.CompileWith(g, v, mask.Options{Deferred: true}); err == nil {
				band = append(band, c.schema)
			}
		}
	}
	b.ReportAllocs()
	var conv, parse, comp time.Duration
	for b.Loop() {
		for _, schema := range band {
			t0 := time.Now()
			src, err := jsonschema2gbnf.Convert(schema)
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			g, err := gbnf.Parse(src)
			if err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			_, err = mask.CompileWith(g, v, mask.Options{Deferred: true})
			t3 := time.Now()
			if err != nil {
				b.Fatal(err)
			}
			conv, parse, comp = conv+t1.Sub(t0), parse+t2.Sub(t1), comp+t3.Sub(t2)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(conv.Milliseconds())/n, "convert-ms/pass")
	b.ReportMetric(float64(parse.Milliseconds())/n, "parse-ms/pass")
	b.ReportMetric(float64(comp.Milliseconds())/n, "automaton-ms/pass")
	b.ReportMetric(float64(len(band)), "schemas")
}
