package nomodel_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

// chi2Crit holds the 0.999 quantiles of the chi-square distribution for
// 1..20 degrees of freedom: a fair draw fails a test at this bound once
// in a thousand seeds; the seeds here are fixed, so the tests are
// deterministic.
var chi2Crit = []float64{0, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877, 29.588,
	31.264, 32.909, 34.528, 36.123, 37.697, 39.252, 40.790, 42.312, 43.820, 45.315}

// chi2 returns the chi-square statistic of observed counts against
// expected probabilities.
func chi2(obs []int, p []float64) float64 {
	n := 0
	for _, o := range obs {
		n += o
	}
	x := 0.0
	for i, o := range obs {
		e := p[i] * float64(n)
		x += (float64(o) - e) * (float64(o) - e) / e
	}
	return x
}

// checkUniform fails if counts are not uniform at the 0.999 level.
func checkUniform(t *testing.T, what string, obs []int) {
	t.Helper()
	p := make([]float64, len(obs))
	for i := range p {
		p[i] = 1 / float64(len(obs))
	}
	checkDist(t, what, obs, p)
}

func checkDist(t *testing.T, what string, obs []int, p []float64) {
	t.Helper()
	df := len(obs) - 1
	if df < 1 || df >= len(chi2Crit) {
		t.Fatalf("%s: %d categories", what, len(obs))
	}
	if x := chi2(obs, p); x > chi2Crit[df] || math.IsNaN(x) {
		t.Errorf("%s: counts %v against %v: chi-square %.1f > %.1f (df %d)", what, obs, p, x, chi2Crit[df], df)
	} else {
		t.Logf("%s: counts %v, chi-square %.1f (df %d, bound %.1f)", what, obs, x, df, chi2Crit[df])
	}
}

func grammarSampler(t *testing.T, src string, seed uint64) *nomodel.Sampler {
	t.Helper()
	s, err := nomodel.NewSampler(compile(t, src), nomodel.Params{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The alternation: "COUNT" against an identifier is an even
// choice, not one weighted by how many tokens each side allows.
func TestGrammarAlternationEven(t *testing.T) {
	s := grammarSampler(t, `root ::= ident | "COUNT"
ident ::= [a-z]+`, 1)
	counts := []int{0, 0}
	for range 2000 {
		out, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) == "COUNT" {
			counts[1]++
		} else {
			counts[0]++
		}
	}
	checkUniform(t, "ident | COUNT", counts)
}

const sqlGrammar = `root ::= "SELECT " cols " FROM " ident where? order? ";"
cols ::= "*" | ident ("," ident)*
where ::= " WHERE " cond
cond ::= ident " " op " " value (" AND " cond)?
op ::= "=" | "<" | ">" | "<=" | ">=" | "<>"
value ::= [0-9]{1,4} | "'" [a-z]+ "'"
order ::= " ORDER BY " ident (" ASC" | " DESC")?
ident ::= [a-z] [a-z_]{0,11}`

// The SQL-like grammar: WHERE appears at the optional rate, and
// every alternation of every grammar here picks its branches evenly
// (chi-square per alternation over the derivation's choices).
func TestGrammarChoicesUniform(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		n         int
	}{
		{"sql", sqlGrammar, 3000},
		{"json.gbnf", readShared(t, "corpus", "llama-grammars", "json.gbnf"), 1000},
		{"arithmetic.gbnf", readShared(t, "corpus", "llama-grammars", "arithmetic.gbnf"), 300},
		{"order schema", schemaGrammar(t, orderSchema(t)), 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := gbnf.Parse(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			rec := earley.New(g)
			s := grammarSampler(t, tc.src, 7)
			type key struct {
				n  *gbnf.Node
				of int
			}
			alts := map[key][]int{}
			opts := map[*gbnf.Node][]int{}
			nodes := []key{}
			nomodel.SetOnChoice(s, func(n *gbnf.Node, k, of int) {
				switch {
				case n.Op == gbnf.OpAlt && of == len(n.Subs):
					kk := key{n, of}
					if alts[kk] == nil {
						alts[kk] = make([]int, of)
						nodes = append(nodes, kk)
					}
					alts[kk][k]++
				case n.Op == gbnf.OpRepeat && n.Min == 0 && n.Max == 1 && of == 1:
					if opts[n] == nil {
						opts[n] = make([]int, 2)
					}
					opts[n][k]++
				}
			})
			where := 0
			for range tc.n {
				out, err := s.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !rec.Accepts(out) {
					t.Fatalf("%q rejected by the reference recognizer", out)
				}
				if strings.Contains(string(out), " WHERE ") {
					where++
				}
			}
			tested := 0
			for _, kk := range nodes {
				obs := alts[kk]
				total := 0
				for _, o := range obs {
					total += o
				}
				if total < 20*len(obs) || len(obs) > 20 {
					continue // too few draws for the test
				}
				checkUniform(t, fmt.Sprintf("alternation at %d:%d (%d branches)", kk.n.Pos.Line, kk.n.Pos.Col, len(obs)), obs)
				tested++
			}
			for n, obs := range opts {
				if obs[0]+obs[1] < 40 {
					continue
				}
				checkDist(t, fmt.Sprintf("optional at %d:%d", n.Pos.Line, n.Pos.Col), obs, []float64{1 - nomodel.DefaultOptionalRate, nomodel.DefaultOptionalRate})
				tested++
			}
			if tested == 0 {
				t.Fatal("no alternation drawn often enough")
			}
			if tc.name == "sql" {
				checkDist(t, "WHERE present", []int{tc.n - where, where}, []float64{1 - nomodel.DefaultOptionalRate, nomodel.DefaultOptionalRate})
			}
		})
	}
}

func readShared(t *testing.T, elem ...string) string {
	b, err := os.ReadFile(sharedtest.Path(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func prepare(t testing.TB, schema []byte) *nomodel.Schema {
	t.Helper()
	v, err := jsonschema2gbnf.CompileSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := nomodel.PrepareSchema(v, schema)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// nextValid draws a sentence and checks it against the schema.
func nextValid(t *testing.T, s *nomodel.Sampler, validate func([]byte) error) []byte {
	t.Helper()
	out, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(out); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return out
}

// schemaSampler compiles a schema's grammar and prepares the schema.
func schemaSampler(t testing.TB, schema []byte, p nomodel.Params) (*nomodel.Sampler, func(doc []byte) error) {
	t.Helper()
	v, err := jsonschema2gbnf.CompileSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	p.Schema = prepare(t, schema)
	s, err := nomodel.NewSampler(compile(t, schemaGrammar(t, schema)), p)
	if err != nil {
		t.Fatal(err)
	}
	validate := func(doc []byte) error {
		var x any
		dec := json.NewDecoder(strings.NewReader(string(doc)))
		dec.UseNumber()
		if err := dec.Decode(&x); err != nil {
			return err
		}
		return v.Validate(x)
	}
	return s, validate
}

var testToday = time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC)

func testPolicy() *nomodel.Policy {
	p := nomodel.DefaultPolicy()
	p.Today = testToday
	return &p
}

// decodeDoc decodes a JSON document with json.Number numbers.
func decodeDoc(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var x map[string]any
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return x
}

// On the bench's order schema: enum members, optional properties, the
// type of "discount", booleans and array lengths follow the policy
// (chi-square each), and every instance validates.
func TestSchemaChoicesUniform(t *testing.T) {
	s, validate := schemaSampler(t, orderSchema(t), nomodel.Params{Seed: 3, Policy: testPolicy()})
	const n = 2000
	status := map[string]int{}
	country := map[string]int{}
	shipping := map[string]int{}
	present := map[string]int{}
	discountNull, paid := 0, 0
	itemsLen := make([]int, 5)
	phonesLen := make([]int, 4)
	for range n {
		out := nextValid(t, s, validate)
		doc := decodeDoc(t, out)
		status[doc["status"].(string)]++
		cust := doc["customer"].(map[string]any)
		country[cust["address"].(map[string]any)["country"].(string)]++
		for _, k := range []string{"discount", "shipping", "notes"} {
			if _, ok := doc[k]; ok {
				present[k]++
			}
		}
		for _, k := range []string{"age", "phones"} {
			if _, ok := cust[k]; ok {
				present[k]++
			}
		}
		if sh, ok := doc["shipping"]; ok {
			shipping[sh.(string)]++
		}
		if d, ok := doc["discount"]; ok && d == nil {
			discountNull++
		}
		if doc["paid"] == true {
			paid++
		}
		if l := len(doc["items"].([]any)); l < len(itemsLen) {
			itemsLen[l]++
		} else {
			t.Fatalf("%d items", l)
		}
		if ph, ok := cust["phones"]; ok {
			phonesLen[len(ph.([]any))]++
		}
	}
	values := func(m map[string]int, keys ...string) []int {
		var out []int
		for _, k := range keys {
			out = append(out, m[k])
		}
		return out
	}
	checkUniform(t, "status enum", values(status, "pending", "paid", "shipped", "delivered", "cancelled"))
	checkUniform(t, "country enum", values(country, "US", "CA", "DE", "FR", "JP"))
	checkUniform(t, "shipping enum", values(shipping, "standard", "express", "pickup"))
	for _, k := range []string{"discount", "shipping", "notes", "age", "phones"} {
		checkDist(t, "optional "+k, []int{n - present[k], present[k]}, []float64{1 - nomodel.DefaultOptionalRate, nomodel.DefaultOptionalRate})
	}
	checkUniform(t, "discount number|null", []int{present["discount"] - discountNull, discountNull})
	checkUniform(t, "paid boolean", []int{n - paid, paid})
	checkUniform(t, "items length 1..4 (minItems 1)", itemsLen[1:])
	checkUniform(t, "phones length 0..3 (maxItems 3)", phonesLen)
}

// The vanishing optional properties: an object that allows
// other keys still carries each optional property at the policy's rate,
// and a map (only additional properties) never repeats a key.
func TestOptionalWithAdditional(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"boolean"}}}`)
	s, validate := schemaSampler(t, schema, nomodel.Params{Seed: 5, Policy: testPolicy()})
	const n = 3000
	present := map[string]int{}
	for range n {
		out := nextValid(t, s, validate)
		for k := range decodeDoc(t, out) {
			present[k]++
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		checkDist(t, "optional "+k, []int{n - present[k], present[k]}, []float64{1 - nomodel.DefaultOptionalRate, nomodel.DefaultOptionalRate})
	}

	maps := []byte(`{"type":"object","additionalProperties":{"type":"object","additionalProperties":true}}`)
	s, validate = schemaSampler(t, maps, nomodel.Params{Seed: 5, Policy: testPolicy()})
	for range 500 {
		out := nextValid(t, s, validate)
		if k, ok := repeatedKey(out); ok {
			t.Fatalf("%s: key %q repeated", out, k)
		}
	}
}

// repeatedKey finds a key that an object of doc repeats.
func repeatedKey(doc []byte) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	type level struct {
		keys map[string]bool
		key  bool
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &level{keys: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, &level{})
				continue
			}
			stack = stack[:len(stack)-1]
		case string:
			if top != nil && top.keys != nil && top.key {
				if top.keys[t] {
					return t, true
				}
				top.keys[t] = true
				top.key = false
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].keys != nil {
			stack[len(stack)-1].key = true
		}
	}
}

const personSchema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "first_name": {"type": "string"},
    "lastName": {"type": "string"},
    "email": {"type": "string"},
    "work_email": {"type": "string", "format": "email"},
    "phone": {"type": "string"},
    "city": {"type": "string"},
    "country": {"type": "string"},
    "company": {"type": "string"},
    "website": {"type": "string", "format": "uri"},
    "created_at": {"type": "string", "format": "date-time"},
    "expires_at": {"type": "string", "format": "date-time"},
    "seen": {"type": "string", "format": "date-time"},
    "birth_date": {"type": "string", "format": "date"},
    "nickname": {"type": "string", "examples": ["ace", "jojo", "max"]},
    "plan": {"type": "string", "default": "free"},
    "theme": {"type": "string", "examples": ["dark", "light"], "default": "system"},
    "age": {"type": "integer", "minimum": 0, "maximum": 130},
    "price": {"type": "number", "minimum": 0, "exclusiveMaximum": 10000},
    "rating": {"type": "integer", "minimum": 1, "maximum": 5},
    "bio": {"type": "string", "maxLength": 40}
  },
  "required": ["id", "first_name", "lastName", "email", "work_email", "phone", "city", "country", "company", "website",
    "created_at", "expires_at", "seen", "birth_date", "nickname", "plan", "theme", "age", "price", "rating", "bio"],
  "additionalProperties": false
}`

// Realism, measured: on the order schema and a person schema, at least
// 95% of the email, date-time, name, city and country values come from
// the realistic generators (or the schema's own enum), dates fall inside
// their window, and examples and defaults appear at their documented
// rate.
func TestRealism(t *testing.T) {
	type tally struct{ gen, total int }
	for _, tc := range []struct {
		name   string
		schema []byte
		fields map[string]string // JSON pointer (indices as *) → kind
	}{
		{"order", orderSchema(t), map[string]string{"/customer/email": "email", "/created_at": "date-time",
			"/customer/name": "name", "/customer/address/city": "city", "/customer/address/country": "country"}},
		{"person", []byte(personSchema), map[string]string{"/email": "email", "/work_email": "email",
			"/created_at": "date-time", "/expires_at": "date-time", "/seen": "date-time", "/first_name": "name",
			"/lastName": "name", "/city": "city", "/country": "country"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tallies := map[string]*tally{}
			bySource := map[string]map[string]int{}
			var dates []struct{ ptr, text string }
			p := nomodel.Params{Seed: 11, Policy: testPolicy(), OnValue: func(v nomodel.Value) {
				if kind, ok := tc.fields[v.Pointer]; ok {
					tl := tallies[kind]
					if tl == nil {
						tl = &tally{}
						tallies[kind] = tl
					}
					tl.total++
					if v.Source == nomodel.SourceGenerator || v.Source == nomodel.SourceEnum {
						tl.gen++
					}
					if kind == "date-time" {
						dates = append(dates, struct{ ptr, text string }{v.Pointer, string(v.Text)})
					}
				}
				if bySource[v.Pointer] == nil {
					bySource[v.Pointer] = map[string]int{}
				}
				bySource[v.Pointer][v.Source.String()+":"+string(v.Text)]++
			}}
			s, validate := schemaSampler(t, tc.schema, p)
			const n = 1000
			for range n {
				nextValid(t, s, validate)
			}
			for kind, tl := range tallies {
				share := float64(tl.gen) / float64(tl.total)
				t.Logf("%s: %d of %d values (%.1f%%) from the generators", kind, tl.gen, tl.total, 100*share)
				if share < 0.95 {
					t.Errorf("%s: only %.1f%% of values from the generators", kind, 100*share)
				}
			}
			if len(tallies) != len(map[string]bool{"email": true, "date-time": true, "name": true, "city": true, "country": true}) {
				t.Errorf("kinds seen: %v", tallies)
			}
			window := nomodel.DefaultWindow
			for _, d := range dates {
				tm, err := time.Parse(time.RFC3339, strings.Trim(d.text, `"`))
				if err != nil {
					t.Fatalf("%s %s: %v", d.ptr, d.text, err)
				}
				lo, hi := testToday.Add(-window), testToday.Add(window)
				switch d.ptr {
				case "/created_at":
					hi = testToday
				case "/expires_at":
					lo = testToday
				}
				if tm.Before(lo) || tm.After(hi) {
					t.Errorf("%s %s outside [%s, %s]", d.ptr, d.text, lo, hi)
				}
			}
			if tc.name != "person" {
				return
			}
			// examples and default at ExampleRate, uniformly among them
			count := func(ptr, prefix string) int {
				c := 0
				for k, v := range bySource[ptr] {
					if strings.HasPrefix(k, prefix) {
						c += v
					}
				}
				return c
			}
			ex := nomodel.DefaultExampleRate
			nick := []int{count("/nickname", `example:"ace"`), count("/nickname", `example:"jojo"`), count("/nickname", `example:"max"`)}
			other := n - nick[0] - nick[1] - nick[2]
			checkDist(t, "nickname examples", append(nick, other), []float64{ex / 3, ex / 3, ex / 3, 1 - ex})
			plan := count("/plan", `default:"free"`)
			checkDist(t, "plan default", []int{plan, n - plan}, []float64{ex, 1 - ex})
			theme := []int{count("/theme", `example:"dark"`), count("/theme", `example:"light"`), count("/theme", `default:"system"`)}
			checkDist(t, "theme examples+default", append(theme, n-theme[0]-theme[1]-theme[2]), []float64{ex / 3, ex / 3, ex / 3, 1 - ex})
			for _, ptr := range []string{"/birth_date", "/age", "/rating", "/bio", "/phone", "/company", "/website", "/id"} {
				fb := count(ptr, "fallback:")
				if fb > n/20 {
					t.Errorf("%s: %d of %d values from the fallback", ptr, fb, n)
				}
			}
		})
	}
}

// A seed reproduces its sentences exactly, in every mode, from a new
// sampler or after Reset.
func TestSeedsReproduce(t *testing.T) {
	schema := orderSchema(t)
	for _, mode := range []string{"schema", "grammar", "uniform"} {
		draw := func(seed uint64) []string {
			p := nomodel.Params{Seed: seed, Policy: testPolicy(), Uniform: mode == "uniform"}
			if mode == "schema" {
				p.Schema = prepare(t, schema)
			}
			s, err := nomodel.NewSampler(compile(t, schemaGrammar(t, schema)), p)
			if err != nil {
				t.Fatal(err)
			}
			var outs []string
			for range 20 {
				out, err := s.Next()
				if err != nil {
					t.Fatal(err)
				}
				outs = append(outs, string(out))
			}
			// Reset to the same seed gives the same again.
			if err := s.Reset(p); err != nil {
				t.Fatal(err)
			}
			out, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != outs[0] {
				t.Errorf("%s: after Reset %q, first %q", mode, out, outs[0])
			}
			return outs
		}
		a, b, c := draw(9), draw(9), draw(10)
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: seed 9 gave different sentences", mode)
		}
		if strings.Join(a, "\n") == strings.Join(c, "\n") {
			t.Errorf("%s: seeds 9 and 10 gave the same sentences", mode)
		}
	}
}

// Structural modes keep the byte budget and stay valid when it is
// tight (close-out along a shortest completion).
func TestStructuralBudget(t *testing.T) {
	schema := orderSchema(t)
	for _, mb := range []int{300, 400, 600} {
		s, validate := schemaSampler(t, schema, nomodel.Params{Seed: 1, MaxBytes: mb, Policy: testPolicy()})
		closed := 0
		for range 200 {
			out, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > mb {
				t.Fatalf("budget %d: %d bytes", mb, len(out))
			}
			if err := validate(out); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if s.ClosedOut() > 0 {
				closed++
			}
		}
		t.Logf("budget %d: %d of 200 closed out", mb, closed)
	}
	s, err := nomodel.NewSampler(compile(t, readShared(t, "corpus", "llama-grammars", "arithmetic.gbnf")), nomodel.Params{Seed: 2, MaxBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	for range 300 {
		out, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 64 {
			t.Fatalf("%d bytes: %q", len(out), out)
		}
	}
}

// Patterns are derived readably: words for letter runs, uniform digits,
// lengths within the pattern's bounds; the grammar accepts them as they
// are (no fallback).
func TestPatternDerivation(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{
		"code":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"},
		"slug":{"type":"string","pattern":"^[a-z]+(-[a-z]+){1,3}$"},
		"ver":{"type":"string","pattern":"^v(0|[1-9][0-9]{0,2})\\.[0-9]+$"},
		"any":{"type":"string","pattern":"^(red|green|blue)$"}},
		"required":["code","slug","ver","any"],"additionalProperties":false}`)
	fallbacks := 0
	colors := map[string]int{}
	s, validate := schemaSampler(t, schema, nomodel.Params{Seed: 4, Policy: testPolicy(), OnValue: func(v nomodel.Value) {
		if v.Source == nomodel.SourceFallback {
			fallbacks++
		}
		if v.Pointer == "/any" {
			colors[string(v.Text)]++
		}
	}})
	var sample []string
	for i := range 600 {
		out := nextValid(t, s, validate)
		if i < 3 {
			sample = append(sample, string(out))
		}
	}
	t.Logf("sample: %s", strings.Join(sample, " "))
	if fallbacks > 0 {
		t.Errorf("%d pattern values fell back to the grammar", fallbacks)
	}
	checkUniform(t, "pattern alternation", []int{colors[`"red"`], colors[`"green"`], colors[`"blue"`]})
}

// Near misses break exactly one constraint each: the validator rejects
// every one with a single error at its pointer for its keyword, and the
// changes cover many keywords.
func TestNearMiss(t *testing.T) {
	for _, schema := range [][]byte{orderSchema(t), []byte(personSchema)} {
		sch := prepare(t, schema)
		s, validate := schemaSampler(t, schema, nomodel.Params{Seed: 8, Policy: testPolicy()})
		keywords := map[string]int{}
		for seed := range uint64(200) {
			doc, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			nm, err := sch.NearMiss(doc, seed)
			if err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
			verr := validate(nm.Doc)
			if !json.Valid(nm.Doc) {
				t.Fatalf("%s: not JSON", nm.Doc)
			}
			if verr == nil {
				t.Fatalf("near miss %s (%s at %q) validates", nm.Doc, nm.Keyword, nm.Pointer)
			}
			if !strings.Contains(verr.Error(), nm.Keyword) && !strings.Contains(verr.Error(), nm.Pointer) {
				t.Errorf("%s at %q: validator says %v", nm.Keyword, nm.Pointer, verr)
			}
			keywords[nm.Keyword]++
		}
		var ks []string
		for k, c := range keywords {
			ks = append(ks, fmt.Sprintf("%s:%d", k, c))
		}
		sort.Strings(ks)
		t.Logf("keywords: %s", strings.Join(ks, " "))
		if len(keywords) < 6 {
			t.Errorf("only %d kinds of near miss: %v", len(keywords), ks)
		}
	}
	// A schema that accepts everything has no near miss.
	sch := prepare(t, []byte(`{}`))
	if _, err := sch.NearMiss([]byte(`{"a":1}`), 1); err != nomodel.ErrNoNearMiss {
		t.Errorf("{}: %v", err)
	}
}
