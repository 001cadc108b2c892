package jsonschema2gbnf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/sharedtest"
)

// fuzzSeeds are small schemas that reach every part of the converter.
var fuzzSeeds = []string{
	`{}`, `true`, `false`, `{"type":"integer","minimum":-12,"maximum":207}`,
	`{"type":"number","exclusiveMinimum":0.5,"maximum":1e3,"multipleOf":0.01}`,
	`{"type":"string","pattern":"^(a|b)+\\bc$","minLength":2,"maxLength":9}`,
	`{"type":"string","format":"date-time"}`, `{"type":"string","format":"email","maxLength":40}`,
	`{"enum":["a",1,null,[true],{"x":{}}]}`, `{"const":"\u0000\"\\"}`,
	`{"properties":{"a":{"$ref":"#"},"b":{"type":"array","items":{"$ref":"#/properties/a"}}},"required":["b"]}`,
	`{"type":"object","patternProperties":{"^x":{"type":"integer"},"y$":{"type":"string"}},"additionalProperties":{"type":"boolean"},"propertyNames":{"maxLength":5},"minProperties":1,"maxProperties":3}`,
	`{"oneOf":[{"required":["a"]},{"required":["b"]},{"type":"string"}],"not":{"enum":["x"]}}`,
	`{"if":{"properties":{"k":{"const":1}}},"then":{"required":["v"]},"else":{"maxProperties":1}}`,
	`{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"number"},"contains":{"minimum":3},"minItems":2}`,
	`{"allOf":[{"anyOf":[{"type":"string"},{"type":"integer"}]},{"anyOf":[{"minLength":1},{"minimum":1}]}]}`,
	`{"$schema":"http://json-schema.org/draft-04/schema#","id":"#r","properties":{"n":{"$ref":"#r"}},"dependencies":{"a":["b"]}}`,
	`{"$defs":{"a":{"$dynamicAnchor":"x","type":"object"}},"$dynamicRef":"#x"}`,
}

// FuzzConvert: no input makes Convert (strict or lenient) or Format panic
// or run away, and every grammar Convert returns parses.
func FuzzConvert(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	if dir, _ := sharedtest.Find(); dir != "" {
		// a few real schemas for the mutator to start from
		matches, _ := filepath.Glob(filepath.Join(dir, "corpus", "jsonschemabench", "Handwritten", "*.json"))
		for i, m := range matches {
			if i%10 != 0 {
				continue
			}
			if b, err := os.ReadFile(m); err == nil {
				if v, err := parseOrdered(b); err == nil {
					if o, ok := v.(*ordObj); ok {
						f.Add([]byte(canonicalJSON(o.vals["schema"])))
					}
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		if len(schema) > 64<<10 {
			return
		}
		for _, opts := range [][]Option{nil, {Lenient(nil), FlexibleWhitespace(4), AnyPropertyOrder()}} {
			src, err := Convert(schema, opts...)
			if err != nil {
				if src != "" {
					t.Fatalf("Convert returned both a grammar and an error: %v", err)
				}
				continue
			}
			if _, err := gbnf.Parse(src); err != nil {
				t.Fatalf("Convert(%q) wrote a grammar gbnf.Parse rejects: %v\n%s", schema, err, src)
			}
		}
		_, _ = Format(schema, []byte(`{"a":[1,"x",{"b":null}]}`))
	})
}
