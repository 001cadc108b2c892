package nomodel_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

func compile(tb testing.TB, src string) *mask.Compiled {
	tb.Helper()
	g, err := gbnf.Parse(src)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := mask.Compile(g, nomodel.Vocab())
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func schemaGrammar(tb testing.TB, schema []byte) string {
	tb.Helper()
	src, err := jsonschema2gbnf.Convert(schema)
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

func TestVocab(t *testing.T) {
	v := nomodel.Vocab()
	for b := 0; b < nomodel.ByteTokens; b++ {
		if got := v.Token(int32(b)); len(got) != 1 || got[0] != byte(b) {
			t.Fatalf("token %d = %q", b, got)
		}
	}
	if eog := nomodel.EOG(); !v.IsEOG(eog) || string(v.Token(eog)) != nomodel.EOGName || int(eog) != v.Size()-1 {
		t.Errorf("EOG %d %q", eog, v.Token(eog))
	}
	seen := map[string]bool{}
	for id := int32(nomodel.ByteTokens); id < nomodel.EOG(); id++ {
		s := string(v.Token(id))
		if seen[s] || !utf8.ValidString(s) || nomodel.Weight(id, false) <= 0 || nomodel.Weight(id, true) <= 0 {
			t.Errorf("token %d %q: duplicate, invalid or weightless", id, s)
		}
		seen[s] = true
	}
	if nomodel.Weight('7', false) <= nomodel.Weight('e', false) || nomodel.Weight(0, false) >= nomodel.Weight('a', false) {
		t.Error("weights: digits should beat letters, letters control bytes")
	}
	// "order" reads as a word after a quote, " order" after a letter.
	bare, spaced := int32(nomodel.ByteTokens+3*1), int32(nomodel.ByteTokens+3*1+1)
	if string(v.Token(spaced)) != " "+string(v.Token(bare)) {
		t.Fatalf("layout: %q, %q", v.Token(bare), v.Token(spaced))
	}
	if nomodel.Weight(bare, false) <= nomodel.Weight(spaced, false) || nomodel.Weight(bare, true) >= nomodel.Weight(spaced, true) {
		t.Error("word weights do not follow the previous byte")
	}
}

// The sentences are valid: every one is accepted by the reference
// recognizer, for grammars with free text, nesting, repetition bounds and
// non-ASCII ranges.
func TestSentencesValid(t *testing.T) {
	for _, tc := range []struct {
		src      string
		distinct int // at least this many distinct sentences of 200
	}{
		{`root ::= [a-z]+ ("." [a-z]+)*`, 100},
		{`root ::= "(" root ")" | "x"`, 4}, // depth is geometric: few lengths
		{`root ::= [0-9]{3,5} "-" [A-Z]{2}`, 150},
		{`root ::= ([^"\\] | "\\" ["\\nt])*`, 50},
		{`root ::= [α-ω]+ "€"?`, 50},
		{`root ::= item ("," item){0,4}
item ::= "{" [a-z]* "}" | "[" item? "]"`, 50},
	} {
		src := tc.src
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		rec := earley.New(g)
		s, err := nomodel.NewSampler(compile(t, src), nomodel.Params{Seed: 1, MaxBytes: 200})
		if err != nil {
			t.Fatal(err)
		}
		distinct := map[string]bool{}
		for i := 0; i < 200; i++ {
			out, err := s.Next()
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if len(out) > 200 || !rec.Accepts(out) {
				t.Fatalf("%s: sentence %q (%d bytes) rejected", src, out, len(out))
			}
			distinct[string(out)] = true
		}
		if len(distinct) < tc.distinct {
			t.Errorf("%s: %d distinct sentences of 200", src, len(distinct))
		}
	}
}

func TestBudgets(t *testing.T) {
	c := compile(t, `root ::= "<" [a-z]* ">" ("<" [a-z]* ">")*`)
	for _, p := range []nomodel.Params{{MaxBytes: 2}, {MaxBytes: 5}, {MaxTokens: 2}, {MaxTokens: 7, MaxBytes: 100}} {
		s, err := nomodel.NewSampler(c, p)
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(50) {
			p.Seed = seed
			if err := s.Reset(p); err != nil {
				t.Fatal(err)
			}
			out, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if (p.MaxBytes > 0 && len(out) > p.MaxBytes) || (p.MaxTokens > 0 && len(s.Tokens()) > p.MaxTokens) || !strings.HasPrefix(string(out), "<") || !strings.HasSuffix(string(out), ">") {
				t.Fatalf("%+v: %q in %d tokens", p, out, len(s.Tokens()))
			}
		}
	}
	s, err := nomodel.NewSampler(c, nomodel.Params{MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(); !errors.Is(err, nomodel.ErrBudget) {
		t.Errorf("1-byte budget: %v", err)
	}
	for _, p := range []nomodel.Params{{MaxBytes: -1}, {MaxBytes: nomodel.MaxMaxBytes + 1}, {MaxTokens: -1}, {CloseRate: 1.5}} {
		if _, err := nomodel.NewSampler(c, p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

func TestOtherVocabRejected(t *testing.T) {
	v, err := mask.NewVocab([][]byte{[]byte("a")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gbnf.Parse(`root ::= "a"`)
	c, err := mask.Compile(g, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nomodel.NewSampler(c, nomodel.Params{}); err == nil {
		t.Error("a grammar compiled against another vocabulary was accepted")
	}
}

func orderSchema(tb testing.TB) []byte {
	b, err := os.ReadFile(sharedtest.Path(tb, "bench", "cases", "02-order-schema", "schema.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Every instance of the bench's order schema validates, instances vary,
// and a seed reproduces its instances.
func TestOrderSchema(t *testing.T) {
	schema := orderSchema(t)
	v, err := jsonschema2gbnf.CompileSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	c := compile(t, schemaGrammar(t, schema))
	draw := func(seed uint64, n int) []string {
		s, err := nomodel.NewSampler(c, nomodel.Params{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var outs []string
		for range n {
			out, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, string(out))
		}
		return outs
	}
	outs := draw(42, 500)
	distinct := map[string]bool{}
	optional := map[string]int{}
	for _, out := range outs {
		// Numbers may have exponents beyond float64 (valid JSON): decode
		// them as json.Number.
		var doc map[string]any
		dec := json.NewDecoder(strings.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		if err := v.Validate(doc); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		distinct[out] = true
		for _, k := range []string{"discount", "shipping", "notes"} {
			if _, ok := doc[k]; ok {
				optional[k]++
			}
		}
	}
	if len(distinct) != len(outs) {
		t.Errorf("%d distinct of %d", len(distinct), len(outs))
	}
	for _, k := range []string{"discount", "shipping", "notes"} {
		if optional[k] < 50 || optional[k] > 450 {
			t.Errorf("optional %q in %d of 500 instances", k, optional[k])
		}
	}
	again := draw(42, 5)
	for i := range again {
		if again[i] != outs[i] {
			t.Fatalf("seed 42 instance %d: %q then %q", i, outs[i], again[i])
		}
	}
}

// BenchmarkOrderSchema measures no-model instances per second on the
// bench's order schema (one sampler, warm) in each mode: realistic
// (the schema walk with generators, the default), grammar (derivation
// without the schema) and uniform (tokens by weight).
func BenchmarkOrderSchema(b *testing.B) {
	schema := orderSchema(b)
	c := compile(b, schemaGrammar(b, schema))
	v, err := jsonschema2gbnf.CompileSchema(schema)
	if err != nil {
		b.Fatal(err)
	}
	sch, err := nomodel.PrepareSchema(v, schema)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"realistic", "grammar", "uniform"} {
		b.Run(mode, func(b *testing.B) {
			p := nomodel.Params{Seed: 1, Uniform: mode == "uniform"}
			if mode == "realistic" {
				p.Schema = sch
			}
			s, err := nomodel.NewSampler(c, p)
			if err != nil {
				b.Fatal(err)
			}
			bytes, toks := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				out, err := s.Next()
				if err != nil {
					b.Fatal(err)
				}
				bytes += len(out)
				toks += len(s.Tokens())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
			b.ReportMetric(float64(bytes)/float64(b.N), "bytes/instance")
			b.ReportMetric(float64(toks)/float64(b.N), "tokens/instance")
		})
	}
}
