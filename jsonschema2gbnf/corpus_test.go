package jsonschema2gbnf_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math/rand"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/schemabench"
)

var (
	update     = flag.Bool("update", false, "rewrite testdata/jsonschemabench.baseline from a full corpus run")
	corpusFull = flag.Bool("corpus.full", os.Getenv("STRUCTGEN_CORPUS_FULL") != "", "run the whole JSONSchemaBench sample (default: every 16th schema)")
)

const baselinePath = "testdata/jsonschemabench.baseline"

// corpusStride is the sampling of the default run: every 16th schema
// (about 140) keeps the test around ten seconds on two cores; -corpus.full
// (or STRUCTGEN_CORPUS_FULL=1) runs all 2,238 (minutes).
const corpusStride = 16

func loadCorpus(t *testing.T) []*schemabench.Case {
	dir := sharedtest.Path(t, "corpus", "jsonschemabench")
	cases, err := schemabench.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestCorpusBaseline is the ratchet: per schema, strict and lenient
// conversion and the agreement of the strict grammar with the valid and
// invalid instances must be at least as good as the checked-in baseline.
// With -update (full run) the baseline is rewritten.
func TestCorpusBaseline(t *testing.T) {
	cases := loadCorpus(t)
	full := *corpusFull || *update
	if !full {
		var sample []*schemabench.Case
		for i, c := range cases {
			if i%corpusStride == 0 {
				sample = append(sample, c)
			}
		}
		cases = sample
	}
	rs := schemabench.Run(cases, schemabench.Options{Instances: true})
	rows := schemabench.Table(rs)
	t.Logf("\n%s", schemabench.FormatTable(rows))
	for _, r := range rs {
		if r.Strict == "bad-grammar" || r.Lenient == "bad-grammar" {
			t.Errorf("%s: the grammar does not parse: %s", r.ID, r.StrictErr)
		}
		if r.Strict == "ok" && r.InvalidOK < r.InvalidTotal {
			t.Errorf("%s: the strict grammar accepts invalid instances: %s", r.ID, strings.Join(r.Failures, "; "))
		}
	}
	if *update {
		if err := schemabench.WriteBaseline(baselinePath, rs); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d schemas)", baselinePath, len(rs))
		return
	}
	base, err := schemabench.ReadBaseline(baselinePath)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	regs, imps := schemabench.Compare(base, rs)
	for _, r := range regs {
		t.Errorf("regression: %s", r)
	}
	if len(imps) > 0 {
		t.Logf("%d improvements over the baseline (run with -update to record them): %s", len(imps), strings.Join(imps, "; "))
	}
}

// TestCorpusSoundness samples sentences from the strict grammars of a
// sample of the corpus and validates them: any violation is a bug.
func TestCorpusSoundness(t *testing.T) {
	cases := loadCorpus(t)
	stride := 11
	if *corpusFull {
		stride = 1
	}
	rng := rand.New(rand.NewSource(7))
	checked, sentences := 0, 0
	for i, c := range cases {
		if i%stride != 0 {
			continue
		}
		src, err := jsonschema2gbnf.Convert(c.Schema)
		if err != nil || len(src) > 200_000 {
			continue
		}
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Errorf("%s: grammar does not parse: %v", c.ID(), err)
			continue
		}
		sch, err := jsonschema2gbnf.CompileSchema(c.Schema)
		if err != nil {
			t.Errorf("%s: CompileSchema: %v", c.ID(), err)
			continue
		}
		checked++
		for k := 0; k < 4; k++ {
			doc, ok := earley.Generate(g, rng, 3000)
			if !ok {
				continue
			}
			sentences++
			v, err := decode(doc)
			if err != nil {
				t.Errorf("%s: generated non-JSON %q: %v", c.ID(), clip(doc), err)
				continue
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s: generated %s is invalid: %v", c.ID(), clip(doc), err)
			}
		}
	}
	t.Logf("%d schemas, %d sentences validated", checked, sentences)
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errTrailing
	}
	return v, nil
}

var errTrailing = &json.SyntaxError{}

// inNumberDomain reports whether every number of a decoded document is
// one the grammars write: at most MaxExponentDigits exponent digits and
// MaxFractionDigits fraction digits (llama.cpp's grammars allow more,
// e.g. 16-digit exponents, some beyond what the validator can read).
func inNumberDomain(v any) bool {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			e := strings.TrimLeft(s[i+1:], "+-")
			if len(e) > jsonschema2gbnf.MaxExponentDigits {
				return false
			}
			s = s[:i]
		}
		if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 > jsonschema2gbnf.MaxFractionDigits {
			return false
		}
	case map[string]any:
		for _, e := range x {
			if !inNumberDomain(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !inNumberDomain(e) {
				return false
			}
		}
	}
	return true
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// llama-schema-cases.json: the expected success/failure of each
// conversion, and, for the grammars llama.cpp writes, every valid
// document sampled from llama.cpp's grammar must be accepted by ours once
// formatted (llama.cpp's grammar is stricter in places, never looser on
// what we accept, except where the notes below say so).
func TestLlamaSchemaCases(t *testing.T) {
	raw, err := os.ReadFile(sharedtest.Path(t, "corpus", "llama-schema-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Schema   string `json:"schema"`
		Status   string `json:"expected_status"`
		Group    string `json:"group"`
		Expected string `json:"llama_expected_grammar"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	for _, tc := range cases {
		src, err := jsonschema2gbnf.Convert([]byte(tc.Schema))
		if (err == nil) != (tc.Status == "success") {
			t.Errorf("%s %s: Convert error %v, expected %s", tc.ID, tc.Name, err, tc.Status)
			continue
		}
		if err != nil {
			continue
		}
		ours, err := gbnf.Parse(src)
		if err != nil {
			t.Errorf("%s: our grammar does not parse: %v", tc.ID, err)
			continue
		}
		theirs, err := gbnf.Parse(tc.Expected)
		if err != nil {
			t.Logf("%s: llama.cpp's grammar does not parse here: %v", tc.ID, err)
			continue
		}
		sch, err := jsonschema2gbnf.CompileSchema([]byte(tc.Schema))
		if err != nil {
			t.Fatal(err)
		}
		r := earley.New(ours)
		for k := 0; k < 20; k++ {
			doc, ok := earley.Generate(theirs, rng, 400)
			if !ok {
				continue
			}
			v, err := decode(doc)
			if err != nil || sch.Validate(v) != nil || !inNumberDomain(v) {
				continue // llama.cpp's grammar is looser here (e.g. {} schema as object only, long exponents)
			}
			f, err := jsonschema2gbnf.Format([]byte(tc.Schema), doc)
			if err != nil {
				t.Errorf("%s: Format: %v", tc.ID, err)
				continue
			}
			if !r.Accepts(f) {
				t.Errorf("%s %s: llama.cpp's grammar generates the valid document %s; ours rejects it (formatted: %s)", tc.ID, tc.Name, doc, f)
			}
		}
	}
}

// llama-grammar-cases.json, kind json_schema: the pass/fail strings follow
// llama.cpp's converter. We follow JSON Schema: a string valid against the
// schema must be accepted once formatted, an invalid one rejected. The
// disagreements with llama.cpp's expectations are listed in the log
// (llama.cpp: property order, 16-digit integers, limited whitespace, {} as
// object).
func TestLlamaGrammarCases(t *testing.T) {
	raw, err := os.ReadFile(sharedtest.Path(t, "corpus", "llama-grammar-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		ID     string            `json:"id"`
		Name   string            `json:"name"`
		Kind   string            `json:"kind"`
		Schema string            `json:"schema"`
		Tokens bool              `json:"uses_tokens"`
		Pass   []json.RawMessage `json:"pass"`
		Fail   []json.RawMessage `json:"fail"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	var differ []string
	for _, tc := range cases {
		if tc.Kind != "json_schema" || tc.Tokens {
			continue
		}
		var warns []jsonschema2gbnf.Warning
		_, g := mustGrammar(t, tc.Schema, jsonschema2gbnf.Lenient(&warns))
		r := earley.New(g)
		sch, err := jsonschema2gbnf.CompileSchema([]byte(tc.Schema))
		if err != nil {
			t.Fatal(err)
		}
		check := func(item json.RawMessage, llamaPass bool) {
			var s string
			if err := json.Unmarshal(item, &s); err != nil {
				return // token segments
			}
			v, derr := decode([]byte(s))
			valid := derr == nil && sch.Validate(v) == nil
			if valid != llamaPass {
				differ = append(differ, tc.ID+" "+strings.TrimSpace(s))
			}
			if valid {
				f, err := jsonschema2gbnf.Format([]byte(tc.Schema), []byte(s))
				if err != nil || !r.Accepts(f) {
					t.Errorf("%s %s: valid %q (formatted %s) rejected", tc.ID, tc.Name, s, f)
				}
			} else if len(warns) == 0 && r.Accepts([]byte(s)) {
				t.Errorf("%s %s: invalid %q accepted", tc.ID, tc.Name, s)
			}
		}
		for _, p := range tc.Pass {
			check(p, true)
		}
		for _, f := range tc.Fail {
			check(f, false)
		}
	}
	sort.Strings(differ)
	t.Logf("%d strings where llama.cpp's expectation differs from JSON Schema validity (we follow JSON Schema):\n%s", len(differ), strings.Join(differ, "\n"))
}

func mustGrammar(t *testing.T, schema string, opts ...jsonschema2gbnf.Option) (string, *gbnf.Grammar) {
	t.Helper()
	src, err := jsonschema2gbnf.Convert([]byte(schema), opts...)
	if err != nil {
		t.Fatalf("Convert(%s): %v", schema, err)
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatalf("gbnf.Parse: %v\n%s", err, src)
	}
	return src, g
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
