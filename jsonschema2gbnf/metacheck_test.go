package jsonschema2gbnf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/internal/sharedtest"
)

var checkedDrafts = []*jsonschema.Draft{jsonschema.Draft4, jsonschema.Draft7, jsonschema.Draft2020}

// checkMetaValid fails when metaValid proves a document whose compile
// the skipped meta-schema check would change: compileChecked must give
// what compileWith gives (the same error, or none). It reports whether
// metaValid proved the document, and whether it compiles.
func checkMetaValid(t testing.TB, data []byte, d *jsonschema.Draft) (proved, valid bool) {
	t.Helper()
	raw, err := parseOrdered(data)
	if err != nil {
		return false, false
	}
	if _, ok := raw.(*ordObj); !ok {
		if _, ok := raw.(bool); !ok {
			return false, false
		}
	}
	_, _, slow := compileWith(data, d)
	proved = metaValid(raw, data, d)
	if proved {
		_, _, fast := compileChecked(raw, data, d)
		if (slow == nil) != (fast == nil) || slow != nil && slow.Error() != fast.Error() {
			t.Errorf("metaValid under %v, but the compile changes: %v, without the meta-schema check %v\n%s", d, slow, fast, clipS(string(data)))
		}
	}
	return proved, slow == nil
}

// TestUncheckedDraft: the unchecked copies exist (the pinned validator
// still has the field they clear) and compile without the meta-schema
// check: a title that is not a string is rejected only by the original.
func TestUncheckedDraft(t *testing.T) {
	for _, d := range checkedDrafts {
		u := uncheckedDrafts[d]
		if u == nil {
			t.Fatalf("no unchecked copy of %v: santhosh-tekuri/jsonschema's Draft changed", d)
		}
		if u.URL() != d.URL() || u.String() != d.String() {
			t.Errorf("the unchecked copy of %v reads as %v (%s)", d, u, u.URL())
		}
		doc := []byte(`{"title":5,"type":"string"}`)
		if _, _, err := compileWith(doc, d); err == nil {
			t.Errorf("%v: the meta-schema accepts a numeric title", d)
		}
		s, _, err := compileWith(doc, u)
		if err != nil {
			t.Fatalf("%v unchecked: %v", d, err)
		}
		if s.Validate("x") != nil || s.Validate(json.Number("1")) == nil {
			t.Errorf("%v unchecked: the compiled schema does not validate like the original", d)
		}
	}
}

// metaCases: documents metaValid must not prove under the draft named
// (each breaks one rule of that draft's meta-schema), and documents it
// must prove (the fast path is taken).
var metaCases = []struct {
	doc    string
	drafts string // drafts (4, 7, 2020) under which the document compiles
	slow   bool   // metaValid may leave it to the validator where it is valid
}{
	{`{"type":"object","properties":{"a":{"type":["string","null"],"minLength":1}},"required":["a"]}`, "4 7 2020", false},
	{`{"definitions":{"x":{"enum":[1,2,"a",null,true]}},"$ref":"#/definitions/x"}`, "4 7 2020", false},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","definitions":{"x":{"enum":[1,2,"a",null,true]}},"$ref":"#/definitions/x"}`, "4 7 2020", true},
	{`{"minLength":-1}`, "", false},
	{`{"minLength":1.5}`, "", false},
	{`{"maxItems":"3"}`, "", false},
	{`{"multipleOf":0}`, "", false},
	{`{"multipleOf":-2}`, "", false},
	{`{"enum":[1,1.0]}`, "2020", false},
	{`{"enum":["a","a"]}`, "2020", false},
	{`{"enum":[{"a":1},{"a":1}]}`, "2020", false},
	{`{"enum":[]}`, "2020", false},
	{`{"enum":"a"}`, "", false},
	{`{"type":["string","string"]}`, "", false},
	{`{"type":"text"}`, "", false},
	{`{"type":[]}`, "", false},
	{`{"required":[]}`, "7 2020", false},
	{`{"required":["a","a"]}`, "", false},
	{`{"required":"a"}`, "", false},
	{`{"exclusiveMaximum":true}`, "", false},
	{`{"exclusiveMaximum":true,"maximum":3}`, "4", false},
	{`{"exclusiveMinimum":3}`, "7 2020", false},
	{`{"pattern":"(a"}`, "", false},
	{`{"patternProperties":{"(a":{}}}`, "", false},
	{`{"properties":{"a":5}}`, "", false},
	{`{"properties":{"a":true}}`, "7 2020", false},
	{`{"items":[{}]}`, "4 7", false},
	{`{"items":[]}`, "", false},
	{`{"allOf":[]}`, "", false},
	{`{"not":[]}`, "", false},
	{`{"dependencies":{"a":["b"],"c":{"type":"string"}}}`, "4 7 2020", false},
	{`{"dependencies":{"a":[]}}`, "7 2020", false},
	{`{"dependencies":{"a":[1]}}`, "", false},
	{`{"$id":"http://x.org/s.json#frag"}`, "4 7", false},
	{`{"$ref":"#/definitions/a","definitions":{"a":{"type":5}}}`, "", false},
	{`{"$ref":"#/components/a","components":{"a":{"type":"string"}}}`, "4 7 2020", false},
	{`{"$ref":"#/components/a","components":{"a":{"type":5}}}`, "", false},
	{`{"$ref":"#/components/a","components":{"a":"string"}}`, "", false},
	{`{"$ref":"#/components/a/b","components":{"a":{"b":{"minimum":"x"}}}}`, "", false},
	{`{"title":5}`, "", false},
	{`{"readOnly":"yes"}`, "4", true},
	{`{"examples":{}}`, "4", true},
	{`{"$anchor":"1a"}`, "4 7", true},
	{`{"$schema":"not a uri"}`, "", false},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","enum":[1,1]}`, "", false},
	{`{"$schema":"https://json-schema.org/draft-07/schema","$defs":{"a":{"type":5}}}`, "4 7 2020", true},
	{`{"$schema":"json-schema.org/draft-07/schema#"}`, "", false},
	{`{"$schema":"https://json-schema.org/schema","items":[{}]}`, "", false},
	{`{"$ref":"%"}`, "", false},
	{`true`, "7 2020", false},
	{`{"additionalProperties":false,"additionalItems":true}`, "4 7 2020", false},
	{`{"if":{"const":1},"then":{"minimum":"a"}}`, "4", true},
	{`{"prefixItems":[],"unevaluatedProperties":{"type":"x"}}`, "4 7", true},
	{`{"dependentRequired":{"a":["b","b"]}}`, "4 7", true},
}

func TestMetaValid(t *testing.T) {
	for _, c := range metaCases {
		for _, d := range checkedDrafts {
			want := strings.Contains(" "+c.drafts+" ", " "+strings.TrimPrefix(d.String(), "Draft")+" ")
			proved, valid := checkMetaValid(t, []byte(c.doc), d)
			if valid != want {
				t.Errorf("%s under %v: compiles=%v, the case says %v", c.doc, d, valid, want)
			}
			if want && !proved && !c.slow {
				t.Errorf("%s under %v: valid, but metaValid does not prove it (slow path)", c.doc, d)
			}
		}
	}
}

// TestMetaValidCorpus: over JSONSchemaBench schemas and every draft,
// metaValid never proves a document whose compile the skipped check would
// change, and it proves most of those that compile (the fast path is the
// common one).
func TestMetaValidCorpus(t *testing.T) {
	valid, proved := 0, 0
	for _, doc := range corpusSample(t) {
		named := ""
		if o, ok := decodeRoot(doc.Schema); ok {
			named, _ = o["$schema"].(string)
		}
		for _, d := range checkedDrafts {
			p, v := checkMetaValid(t, doc.Schema, d)
			if named != "" && validatorDraft(named) != d {
				continue // not a draft Convert compiles it under
			}
			if v {
				valid++
			}
			if p {
				proved++
			}
		}
	}
	t.Logf("%d (schema, draft) pairs compile, %d proved by metaValid", valid, proved)
	if proved < valid*9/10 {
		t.Errorf("metaValid proves %d of %d valid (schema, draft) pairs: the fast path became rare", proved, valid)
	}
}

// FuzzMetaValid: metaValid never proves a document whose compile the
// skipped meta-schema check would change.
func FuzzMetaValid(f *testing.F) {
	for _, c := range metaCases {
		f.Add([]byte(c.doc))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		for _, d := range checkedDrafts {
			checkMetaValid(t, data, d)
		}
	})
}

func TestWithoutRootSchemaKeyword(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"$schema":"x"}`, `{}`},
		{`{"$schema":"x","a":1}`, `{"a":1}`},
		{` { "$schema" : "x" , "a" : [1,{"b":"}"}] } `, ` { "a" : [1,{"b":"}"}] } `},
		{`{"a":{"$schema":"y"},"$schema":"x","b":"\"$schema\""}`, `{"a":{"$schema":"y"},"b":"\"$schema\""}`},
		{`{"a":1,"$schema":"x"}`, `{"a":1}`},
		{`{"a":"$schema","$schema":"x\\\"","c":true}`, `{"a":"$schema","c":true}`},
		{`{"a":1}`, ``},
		{`{"$schema":"x","$schema":"y"}`, ``},
		{`{"\u0024schema":"x"}`, ``},
		{`[]`, ``},
	} {
		got, ok := withoutRootSchemaKeyword([]byte(c.in))
		if c.want == "" {
			if ok {
				t.Errorf("%s: removed (%s), want left to the slow path", c.in, got)
			}
			continue
		}
		if !ok || string(got) != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.in, got, ok, c.want)
		}
	}
}

func decodeRoot(data []byte) (map[string]any, bool) {
	var m map[string]any
	return m, json.Unmarshal(data, &m) == nil
}

// TestRegexFormat: metaCheck.regex agrees with the validator's format
// "regex" (regexp.Compile).
func TestRegexFormat(t *testing.T) {
	for _, src := range []string{`a`, `(a`, `a{1000}`, `a{1001}`, `(?=x)`, `\p{Greek}`, `\p{Nope}`, `[z-a]`, `x**`, `(?P<n>a)`, `(?<n>a)`,
		`((((((((((a))))))))))`, strings.Repeat("(", 1001) + strings.Repeat(")", 1001), `\8`, `[[:alpha:]]`, `[[:nope:]]`, `\Q*\E`, "\xff"} {
		m := metaCheck{regexes: map[string]bool{}}
		if got, want := m.regex(src), jsonschema.Formats["regex"](src); got != want {
			t.Errorf("%q: metaCheck.regex %v, the validator's format %v", src, got, want)
		}
	}
}

// TestAddDecoded: the validator compiles the parsed document it is
// handed (addDecoded), not its text: with text that is not JSON at all
// the compile still works, and the schemas judge values alike; a
// document the meta-schema rejects gets the same error either way.
func TestAddDecoded(t *testing.T) {
	c := jsonschema.NewCompiler()
	if !addDecoded(c, map[string]any{}) {
		t.Fatal("addDecoded failed: santhosh-tekuri/jsonschema's resources changed")
	}
	for _, d := range checkedDrafts {
		for _, src := range []string{
			`{"type":"object","properties":{"a":{"type":"integer","minimum":3}},"required":["a"]}`,
			`{"anyOf":[{"type":"string","maxLength":2},{"enum":[1,"x",null]}]}`,
			`true`,
		} {
			raw, err := parseOrdered([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			want, _, e1 := compileWith([]byte(src), d)
			got, _, e2 := compileDoc([]byte("not JSON"), toPlain(raw), d)
			if (e1 == nil) != (e2 == nil) || e1 != nil && e1.Error() != e2.Error() {
				t.Fatalf("%v %s: %v against %v", d, src, e2, e1)
			}
			if e1 != nil {
				continue // (a boolean schema under draft 4)
			}
			for _, v := range []string{`{"a":5}`, `{"a":2}`, `{}`, `"ab"`, `"abc"`, `1`, `null`, `[]`} {
				x, _ := parseOrdered([]byte(v))
				if (want.Validate(toPlain(x)) == nil) != (got.Validate(toPlain(x)) == nil) {
					t.Errorf("%v %s: %s judged differently", d, src, v)
				}
			}
		}
		bad := `{"type":"object","minProperties":-1}`
		raw, _ := parseOrdered([]byte(bad))
		_, _, e1 := compileWith([]byte(bad), d)
		_, _, e2 := compileDoc([]byte(bad), toPlain(raw), d)
		if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
			t.Errorf("%v: a meta-invalid schema: %v against %v", d, e2, e1)
		}
	}
}

// sameAs2019 lets through only documents without a keyword that draft
// 2019-09 reads differently, items as a schema (or as a property name)
// included, an items array not.
func TestSameAs2019(t *testing.T) {
	for _, c := range []struct {
		doc  string
		same bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, true},
		{`{"type":"array","items":{"type":"string"},"contains":{"const":1}}`, true},
		{`{"type":"array","items" : true}`, true},
		{`{"properties":{"items":{"type":"array"}},"required":["items"]}`, true},
		{`{"$defs":{"a":{"$anchor":"x","type":"integer"}},"$ref":"#x"}`, true},
		{`{"type":"array","items" :  [{"type":"string"}]}`, false},
		{`{"prefixItems":[{"type":"string"}],"items":false}`, false},
		{`{"additionalItems":false}`, false},
		{`{"unevaluatedItems":false,"contains":{}}`, false},
		{`{"$dynamicAnchor":"n","$defs":{"a":{"$dynamicRef":"#n"}}}`, false},
		{`{"$recursiveAnchor":true,"$recursiveRef":"#"}`, false},
		{`{"$vocabulary":{"https://json-schema.org/draft/2020-12/vocab/core":true}}`, false},
		{`{"$defs":{"a":{"$schema":"http://json-schema.org/draft-07/schema#"}}}`, false},
		{`{"prefix\u0049tems":[{"type":"string"}]}`, false},
		{`{"description":"caf\u00e9","type":"string"}`, false},
	} {
		if got := sameAs2019([]byte(c.doc)); got != c.same {
			t.Errorf("sameAs2019(%s) = %v, want %v", c.doc, got, c.same)
		}
	}
}

// A draft 2020-12 document that sameAs2019 lets through compiles under
// draft 2019-09's rules (its items lands in Items, not Items2020, and
// validates alike); one with prefixItems stays under 2020-12's.
func TestCompileAs2019(t *testing.T) {
	doc := `{"type":"array","items":{"type":"string"},"minItems":1}`
	s, _, err := compileChecked(mustOrdered(t, doc), []byte(doc), jsonschema.Draft2020)
	if err != nil {
		t.Fatal(err)
	}
	if s.Items == nil || s.Items2020 != nil {
		t.Errorf("%s: Items %v, Items2020 %v: not compiled under draft 2019-09's rules", doc, s.Items, s.Items2020)
	}
	if s.Validate([]any{"a"}) != nil || s.Validate([]any{json.Number("1")}) == nil || s.Validate([]any{}) == nil {
		t.Errorf("%s: validates differently", doc)
	}
	doc = `{"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"string"}}`
	s, _, err = compileChecked(mustOrdered(t, doc), []byte(doc), jsonschema.Draft2020)
	if err != nil {
		t.Fatal(err)
	}
	if s.Items2020 == nil || len(s.PrefixItems) != 1 {
		t.Errorf("%s: not compiled under draft 2020-12's rules", doc)
	}
}

func mustOrdered(t *testing.T, doc string) any {
	t.Helper()
	raw, err := parseOrdered([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestSameAs2019Corpus: every JSONSchemaBench schema compiled as draft
// 2020-12 that sameAs2019 lets through judges its instances under draft
// 2019-09's rules exactly as under 2020-12's.
func TestSameAs2019Corpus(t *testing.T) {
	docs, instances := 0, 0
	for _, c := range corpusSample(t) {
		f := c.path
		raw, err := parseOrdered(c.Schema)
		if err != nil {
			continue
		}
		if o, ok := raw.(*ordObj); ok {
			if _, named := o.vals["$schema"]; named {
				continue
			}
		}
		if !sameAs2019(c.Schema) || !metaValid(raw, c.Schema, jsonschema.Draft2020) {
			continue
		}
		s20, s19, ok := compileBothDrafts(t, f, c.Schema)
		if !ok {
			continue
		}
		docs++
		for _, x := range c.Tests {
			if _, ok := judgeBothDrafts(t, f, s20, s19, x.Data); ok {
				instances++
			}
		}
	}
	t.Logf("%d documents, %d instances", docs, instances)
	if docs < 100 {
		t.Errorf("only %d corpus documents compiled as 2019-09: the test no longer covers the fast path", docs)
	}
}

// TestSameAs2019Suite: every schema of the draft 2020-12
// JSON-Schema-Test-Suite that compiles under the unchecked copy and that
// sameAs2019 lets through (its root "$schema" removed, as
// compileChecked does) judges every test instance under draft 2019-09's
// rules as under 2020-12's, and as the suite says.
func TestSameAs2019Suite(t *testing.T) {
	groups, tests := 0, 0
	for _, file := range suiteFiles(t) {
		for _, g := range readSuiteFile(t, file) {
			data := []byte(g.Schema)
			if stripped, ok := withoutRootSchemaKeyword(data); ok {
				data = stripped
			}
			if !sameAs2019(data) {
				continue
			}
			id := filepath.Base(file) + " | " + g.Description
			s20, s19, ok := compileBothDrafts(t, id, data)
			if !ok {
				continue
			}
			groups++
			for _, x := range g.Tests {
				valid, ok := judgeBothDrafts(t, id, s20, s19, x.Data)
				if !ok {
					continue
				}
				tests++
				if valid != x.Valid {
					t.Errorf("%s: %s is judged valid=%v under 2019-09's rules, the suite says valid=%v", id, x.Data, valid, x.Valid)
				}
			}
		}
	}
	t.Logf("%d groups, %d tests", groups, tests)
	if groups < 100 {
		t.Errorf("only %d suite groups compiled as 2019-09: the test no longer covers the fast path", groups)
	}
}

// compileBothDrafts compiles a document under the unchecked copies of
// draft 2020-12 and of 2019-09; ok is false where either fails (a
// failure under only one is reported).
func compileBothDrafts(t *testing.T, id string, data []byte) (s20, s19 *jsonschema.Schema, ok bool) {
	t.Helper()
	s20, _, err20 := compileDoc(data, nil, uncheckedDrafts[jsonschema.Draft2020])
	s19, _, err19 := compileDoc(data, nil, unchecked2019)
	if (err20 == nil) != (err19 == nil) {
		t.Errorf("%s: compiles with %v under 2020-12's rules, %v under 2019-09's", id, err20, err19)
	}
	return s20, s19, err20 == nil && err19 == nil
}

// judgeBothDrafts reports a JSON instance that s20 and s19 judge
// differently; it returns s19's verdict, and ok false for text that is
// not JSON.
func judgeBothDrafts(t *testing.T, id string, s20, s19 *jsonschema.Schema, data []byte) (valid, ok bool) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return false, false
	}
	e20, e19 := s20.Validate(v), s19.Validate(v)
	if (e20 == nil) != (e19 == nil) {
		t.Errorf("%s: %s is judged %v under 2020-12's rules, %v under 2019-09's", id, data, e20, e19)
	}
	return e19 == nil, true
}

// corpusDoc is a JSONSchemaBench file: its schema and its instances.
type corpusDoc struct {
	path   string
	Schema json.RawMessage `json:"schema"`
	Tests  []struct {
		Data json.RawMessage `json:"data"`
	} `json:"tests"`
}

// corpusSample reads the JSONSchemaBench files the corpus tests here
// read, those with a schema: every fourth (TestMetaValidCorpus: about
// 4 s), all with STRUCTGEN_CORPUS_FULL=1.
func corpusSample(t *testing.T) []corpusDoc {
	t.Helper()
	dir := sharedtest.Path(t, "corpus", "jsonschemabench")
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in %s: %v", dir, err)
	}
	sort.Strings(files)
	stride := 4
	if os.Getenv("STRUCTGEN_CORPUS_FULL") != "" {
		stride = 1
	}
	var out []corpusDoc
	for i, f := range files {
		if i%stride != 0 {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc := corpusDoc{path: f}
		if json.Unmarshal(b, &doc) == nil && len(doc.Schema) > 0 {
			out = append(out, doc)
		}
	}
	return out
}
