package jsonschema2gbnf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/internal/earley"
)

// countedSchema is an object with n optional integer properties and
// the given extra keywords.
func countedSchema(n int, extra string) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","additionalProperties":false,"properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"integer"}`, i)
	}
	b.WriteString("}" + extra + "}")
	return b.String()
}

// TestCountedObjectSize checks that a counted object's grammar grows
// linearly with its properties times the bound that binds (it used to
// double with every property: 25 optional properties with minProperties
// 1 ran out of memory), and that it stays exact.
func TestCountedObjectSize(t *testing.T) {
	for _, tc := range []struct {
		extra string
		n     int
	}{
		{`,"minProperties":1`, 25},
		{`,"minProperties":1`, 200},
		{`,"maxProperties":5`, 200},
		{`,"minProperties":2,"maxProperties":4`, 60},
	} {
		src, err := Convert([]byte(countedSchema(tc.n, tc.extra)))
		if err != nil {
			t.Fatalf("%d properties %s: %v", tc.n, tc.extra, err)
		}
		// About 60 bytes per (property, count) state.
		if max := 200 * tc.n * 7; len(src) > max {
			t.Errorf("%d properties %s: %d bytes of grammar, more than %d", tc.n, tc.extra, len(src), max)
		}
	}
	// Exactness on a small one, all ways.
	schema := countedSchema(6, `,"minProperties":2,"maxProperties":3`)
	_, g := compileGrammar(t, schema)
	r := earley.New(g)
	for mask := range 1 << 6 {
		var parts []string
		for i := range 6 {
			if mask&(1<<i) != 0 {
				parts = append(parts, fmt.Sprintf(`"p%d":%d`, i, i))
			}
		}
		doc := "{" + strings.Join(parts, ",") + "}"
		if want := len(parts) >= 2 && len(parts) <= 3; r.Accepts([]byte(doc)) != want {
			t.Errorf("%s: accepted %v, want %v", doc, !want, want)
		}
	}
	if checkSound(t, schema, g, 200, 1, 400) > 0 {
		t.Error("unsound")
	}
}

// TestCountedObjectLimit checks the error of an object over
// MaxCountedObjectStates: it names the keyword that binds, and lenient
// mode drops it.
func TestCountedObjectLimit(t *testing.T) {
	for _, tc := range []struct{ extra, keyword string }{
		{`,"minProperties":1000`, "minProperties"},
		{`,"maxProperties":100`, "maxProperties"},
	} {
		_, err := Convert([]byte(countedSchema(2500, tc.extra)))
		var ue *UnsupportedError
		if !errorsAs(err, &ue) || ue.Keyword != tc.keyword || !strings.Contains(err.Error(), "MaxCountedObjectStates") {
			t.Errorf("%s: %v, want an unsupported %s naming MaxCountedObjectStates", tc.extra, err, tc.keyword)
		}
	}
	var w []Warning
	if _, err := Convert([]byte(countedSchema(2500, `,"maxProperties":100`)), Lenient(&w)); err != nil || len(w) == 0 {
		t.Errorf("lenient: %v, warnings %v", err, w)
	}
}

// TestStructuralLimits checks the limits applied to the raw schema
// before santhosh-tekuri compiles it: each input fails fast with a
// *LimitError naming the limit and the place.
func TestStructuralLimits(t *testing.T) {
	props := func(n int, draft string) string {
		var b strings.Builder
		b.WriteString(`{` + draft + `"properties":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{}`, i)
		}
		b.WriteString("}}")
		return b.String()
	}
	spread := func(objects, per int) string {
		var b strings.Builder
		b.WriteString(`{"properties":{`)
		for o := range objects {
			if o > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"o%d":{"properties":{`, o)
			for i := range per {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"p%d":true`, i)
			}
			b.WriteString("}}")
		}
		b.WriteString("}}")
		return b.String()
	}
	const d7 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	for _, tc := range []struct{ schema, limit, ptr string }{
		{props(MaxProperties+1, d7), "MaxProperties", "#/properties"},
		{`{"prefixItems":[true],` + spread(5, 1000)[1:], "MaxSubschemas2020", "#/properties/o4/properties/p89"},
		{`{` + d7 + spread(40, 500)[1:], "MaxSubschemas", "#/properties/o32/properties/p350"},
		{`{"enum":[` + strings.Repeat(`1e999999,`, 99) + `1e999999]}`, "MaxExponentSum", "#/enum/1"},
		{`{"type":"number","minimum":1e-600000,"maximum":1e600000}`, "MaxExponentSum", "#/maximum"},
		{`{"const":[1,2,3` + strings.Repeat("0", MaxNumberLength) + `]}`, "MaxNumberLength", "#/const/2"},
		{`{"properties":{"a/b":{"enum":[0,{"x~":[1,` + strings.Repeat("9", MaxNumberLength+1) + `]}]}}}`, "MaxNumberLength", "#/properties/a~1b/enum/1/x~0/1"},
		{`{"anyOf":[{},{"const":{"":` + strings.Repeat("9", MaxNumberLength+1) + `}}]}`, "MaxNumberLength", "#/anyOf/1/const"},
		{`{` + d7 + `"definitions":{"x/y":{"allOf":[{},` + props(MaxProperties+1, "") + `]}}}`, "MaxProperties", "#/definitions/x~1y/allOf/1/properties"},
	} {
		_, err := Convert([]byte(tc.schema))
		var le *LimitError
		if !errorsAs(err, &le) || le.Limit != tc.limit || le.Pointer != tc.ptr {
			t.Errorf("%s: %v, want %s at %s", clipS(tc.schema), err, tc.limit, tc.ptr)
		}
	}
	// Within the limits.
	// (spread(5, 1000) reads the same under draft 2019-09: compiled
	// under its rules, MaxSubschemas bounds it.)
	for _, schema := range []string{props(MaxProperties, d7), spread(4, 1000), spread(5, 1000), `{"type":"number","minimum":1e400}`,
		`{"enum":[1e99999999,2]}`} { // beyond the validator's range: dropped, not counted
		if _, err := CompileSchema([]byte(schema)); err != nil {
			t.Errorf("%s: %v", clipS(schema), err)
		}
	}
}

// TestUnknownMetaSchema checks that an unknown $schema is reported as
// what it is, not as a remote reference.
func TestUnknownMetaSchema(t *testing.T) {
	_, err := Convert([]byte(`{"$schema":"https://example.com/my-meta","type":"string"}`))
	var ie *InvalidSchemaError
	if !errorsAs(err, &ie) || ie.Pointer != "#/$schema" || !strings.Contains(err.Error(), "unknown meta-schema") {
		t.Errorf("%v (%T), want an InvalidSchemaError at #/$schema", err, err)
	}
}

// TestSubschemaKeywordCoversDrafts: the walks skip the keyword lookups
// of a schema object with no keyword of subschemaKeyword, so every
// keyword a draft lists as holding subschemas must be in it.
func TestSubschemaKeywordCoversDrafts(t *testing.T) {
	for _, d := range []*jsonschema.Draft{jsonschema.Draft4, jsonschema.Draft6, jsonschema.Draft7, jsonschema.Draft2019, jsonschema.Draft2020} {
		self, items, props := subschemaKeys(d)
		for _, ks := range [][]string{self, items, props} {
			for _, k := range ks {
				if !subschemaKeyword[k] {
					t.Errorf("%v: %q holds subschemas but is not in subschemaKeyword", d, k)
				}
			}
		}
	}
}
