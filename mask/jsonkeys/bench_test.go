package jsonkeys_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/internal/benchcases"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
	"github.com/structgen/structgen/mask/jsonkeys"
)

// llama3 returns the Llama-3 vocabulary and its table.
func llama3(tb testing.TB) *walkVocab { return realVocabs(tb)[0] }

// keyedObject writes an object with n keys prefix0..prefix{n-1}, left
// open after its last comma.
func keyedObject(prefix string, n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"%s%d":1,`, prefix, i)
	}
	return b.String()
}

// BenchmarkFilter measures one Filter call on the Llama-3 vocabulary with
// the mask of the json_object grammar, in the states a JSON generation
// goes through. Each iteration copies the mask first (16 KB; the "copy"
// case is that alone).
func BenchmarkFilter(b *testing.B) {
	wv := llama3(b)
	object := compileSchema(b, `{"type":"object"}`, wv.v)
	array := compileSchema(b, `{"type":"array"}`, wv.v)
	for _, bc := range []struct {
		name, prefix string
		c            *mask.Compiled
	}{
		{"copy", `{"a":"x`, object},
		{"value-string", `{"name":"Dana","city":"Mountain Vi`, object},
		{"after-comma", `{"name":"Dana","city":"Mountain View",`, object},
		{"number", `{"name":"Dana","age":4`, object},
		{"no-keys-string", `[1,2,"x`, array},
		{"no-keys-number", `[1,2,3`, array},
		{"key-start", `{"name":"Dana","city":"Mountain View","`, object},
		{"key-fresh-prefix", `{"name":"Dana","city":"Mountain View","zi`, object},
		{"key-shared-prefix", `{"name":"Dana","city":"Mountain View","nam`, object},
		{"key-64-sharing", keyedObject("k", 64) + `"k`, object},
		{"key-1000-sharing", keyedObject("k", 1000) + `"k`, object},
		{"key-escape", `{"name":"Dana","\u00`, object},
	} {
		c := bc.c
		m, g := startAt(b, wv, c, bc.prefix)
		base := make([]uint32, c.Words())
		m.FillMask(base)
		bits := make([]uint32, len(base))
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				copy(bits, base)
				if bc.name != "copy" {
					if err := g.Filter(bits); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// startAt returns a matcher of c and a guard, both at prefix.
func startAt(tb testing.TB, wv *walkVocab, c *mask.Compiled, prefix string) (*mask.Matcher, *jsonkeys.Guard) {
	tb.Helper()
	m := c.NewMatcher()
	g := wv.t.NewGuard()
	if err := m.AcceptBytes([]byte(prefix)); err != nil {
		tb.Fatal(err)
	}
	if err := g.AcceptBytes([]byte(prefix)); err != nil {
		tb.Fatal(err)
	}
	return m, g
}

// docSetup compiles a bench case's grammar and returns a matcher, a guard
// and a mask for it.
func docSetup(tb testing.TB, wv *walkVocab, bc *benchcases.Case) (*mask.Matcher, *jsonkeys.Guard, []uint32) {
	c := benchCaseGrammar(tb, wv, bc)
	return c.NewMatcher(), wv.t.NewGuard(), make([]uint32, c.Words())
}

// docStats collects the time of each Filter and Check call of runDoc and
// the most tokens Filter scanned one by one in a step.
type docStats struct {
	filter, check []time.Duration
	maxTrials     int
}

// runDoc runs a bench case's document through FillMask, Filter, Accept
// and Check (the matcher alone if g is nil); st may be nil.
func runDoc(tb testing.TB, wv *walkVocab, bc *benchcases.Case, m *mask.Matcher, g *jsonkeys.Guard, bits []uint32, st *docStats) {
	m.Reset()
	if g != nil {
		g.Reset()
	}
	for i, tok := range bc.Tokens {
		m.FillMask(bits)
		if g != nil {
			trials, t0 := g.Trials(), time.Now()
			if err := g.Filter(bits); err != nil {
				tb.Fatal(err)
			}
			if st != nil {
				st.filter = append(st.filter, time.Since(t0))
				st.maxTrials = max(st.maxTrials, g.Trials()-trials)
			}
			if bits[tok>>5]&(1<<(tok&31)) == 0 {
				tb.Fatalf("step %d: token %q of the document cleared", i, wv.v.Token(tok))
			}
		}
		if err := m.Accept(tok); err != nil {
			tb.Fatal(err)
		}
		if g == nil {
			continue
		}
		if err := g.Accept(tok); err != nil {
			tb.Fatal(err)
		}
		t0 := time.Now()
		if err := g.Check(m); err != nil {
			tb.Fatal(err)
		}
		if st != nil {
			st.check = append(st.check, time.Since(t0))
		}
	}
}

func benchCaseGrammar(tb testing.TB, wv *walkVocab, bc *benchcases.Case) *mask.Compiled {
	if bc.Grammar != "" {
		return jsonkeys.CompileGBNF(tb, bc.Grammar, wv.v)
	}
	src, err := jsonschema2gbnf.Convert(bc.Schema, jsonschema2gbnf.FlexibleWhitespace(16))
	if err != nil {
		tb.Fatal(err)
	}
	return jsonkeys.CompileGBNF(tb, src, wv.v)
}

func jsonBenchCases(tb testing.TB) []*benchcases.Case {
	cases, err := benchcases.Load(filepath.Join(sharedtest.Dir(tb), "bench"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []*benchcases.Case
	for _, bc := range cases {
		if bc.Kind != "ebnf" {
			out = append(out, bc)
		}
	}
	return out
}

// BenchmarkBenchDocs measures Filter and Check per step over the JSON
// bench documents (Llama-3 tokens, the cases' grammars), warm: p50, p99
// and max over all steps of all iterations.
func BenchmarkBenchDocs(b *testing.B) {
	wv := llama3(b)
	for _, bc := range jsonBenchCases(b) {
		m, g, bits := docSetup(b, wv, bc)
		runDoc(b, wv, bc, m, g, bits, nil) // warm the matcher's caches
		b.Run(bc.ID, func(b *testing.B) {
			st := &docStats{filter: make([]time.Duration, 0, 1<<20), check: make([]time.Duration, 0, 1<<20)}
			b.ReportAllocs()
			for b.Loop() {
				if len(st.filter)+len(bc.Tokens) > cap(st.filter) {
					st.filter, st.check = st.filter[:0], st.check[:0] // keep the last samples
				}
				runDoc(b, wv, bc, m, g, bits, st)
			}
			report := func(ts []time.Duration, what string) {
				slices.Sort(ts)
				n := len(ts)
				b.ReportMetric(float64(ts[n/2].Nanoseconds())/1e3, what+"-p50-us")
				b.ReportMetric(float64(ts[n*99/100].Nanoseconds())/1e3, what+"-p99-us")
				b.ReportMetric(float64(ts[n*999/1000].Nanoseconds())/1e3, what+"-p999-us")
				b.ReportMetric(float64(ts[n-1].Nanoseconds())/1e3, what+"-max-us")
			}
			report(st.filter, "filter")
			report(st.check, "check")
		})
	}
}

// BenchmarkAccept measures the guard's Accept per token over the bench's
// JSON documents (Llama-3 tokens).
func BenchmarkAccept(b *testing.B) {
	wv := llama3(b)
	g := wv.t.NewGuard()
	for _, bc := range jsonBenchCases(b) {
		b.Run(bc.ID, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g.Reset()
				for _, tok := range bc.Tokens {
					if err := g.Accept(tok); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(bc.Tokens)), "ns/token")
		})
	}
}

// BenchmarkCheck measures Check where it searches: at a key start of an
// object with keys (a fresh key exists), and where the names are used up
// (the search proves the dead end).
func BenchmarkCheck(b *testing.B) {
	wv := llama3(b)
	for _, bc := range []struct{ name, schema, prefix string }{
		{"fresh", `{"type":"object"}`, `{"name":"Dana","city":"Mountain View","`},
		{"fresh-shared-prefix", `{"type":"object"}`, `{"name":"Dana","city":"Mountain View","nam`},
		{"dead-enum", `{"type":"object","propertyNames":{"enum":["alpha","beta","gamma","delta"]}}`, `{"alpha":1,"beta":2,"gamma":3,"delta":4,`},
		{"dead-enum-400", enumSchema(400), enumObject(400)},
		{"spent-enum-5000", enumSchema(5000), enumObject(5000)}, // the search runs out of MaxCheckSteps
	} {
		c := compileSchema(b, bc.schema, wv.v)
		m, g := startAt(b, wv, c, bc.prefix)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				err := g.Check(m)
				if (err != nil) != strings.HasPrefix(bc.name, "dead") {
					b.Fatal(err)
				}
			}
		})
	}
}

// enumSchema allows the keys name0000..name{n-1}; enumObject is an
// object that uses them all, left open after a comma.
func enumSchema(n int) string {
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf(`"name%04d"`, i))
	}
	return `{"type":"object","propertyNames":{"enum":[` + strings.Join(names, ",") + `]}}`
}

func enumObject(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"name%04d":1,`, i)
	}
	return b.String()
}

// BenchmarkShortestCompletion measures the close-out: where the grammar's
// shortest completion has no duplicate (one scan of it) and where the
// open key must be lengthened (the search).
func BenchmarkShortestCompletion(b *testing.B) {
	wv := llama3(b)
	free := compileSchema(b, `{"type":"object","additionalProperties":{"type":"object"}}`, wv.v)
	three := jsonkeys.CompileGBNF(b, `root ::= "{" kv "," kv "," kv "}"`+"\n"+`kv ::= "\"" [ab] "\":1"`, wv.v)
	pairs := jsonkeys.CompileGBNF(b, `root ::= "{" kv ("," kv)* "}"`+"\n"+`kv ::= "\"" ([a-z]{2} | [a-z]{80}) "\":1"`, wv.v)
	var used strings.Builder // every two-letter key
	used.WriteString("{")
	for x := 'a'; x <= 'z'; x++ {
		for y := 'a'; y <= 'z'; y++ {
			fmt.Fprintf(&used, `"%c%c":1,`, x, y)
		}
	}
	for _, bc := range []struct {
		name, prefix string
		c            *mask.Compiled
	}{
		{"no-duplicate", `{"name":{"first":{},"la`, free},
		{"lengthen-key", `{"name":{"first":{},"last":{},"first`, free},
		{"new-key", `{"name":{},"":{},`, free},
		{"none", `{"a":1,"b":1,`, three}, // proves there is none
		{"spent", used.String(), pairs},  // runs out of MaxCompletionSteps
	} {
		c := bc.c
		m, g := startAt(b, wv, c, bc.prefix)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonkeys.ShortestCompletion(m, g); (err != nil) != (bc.name == "none" || bc.name == "spent") {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewTable measures the per-vocabulary preparation (Llama-3).
func BenchmarkNewTable(b *testing.B) {
	v := llama3(b).v
	b.ReportAllocs()
	for b.Loop() {
		jsonkeys.NewTable(v)
	}
}
