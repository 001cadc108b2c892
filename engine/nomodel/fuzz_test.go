package nomodel_test

import (
	"testing"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// FuzzRealistic: for any schema that converts, realistic sentences are
// valid against it (when the grammar is exact), within the budget, and
// the sampler neither panics nor hangs; near misses, when found, are
// invalid.
func FuzzRealistic(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^(a?){0,50}b$"},"n":{"type":"integer","multipleOf":7,"exclusiveMaximum":30}},"required":["a"]}`,
		`{"type":"array","items":{"enum":[1,"x",{"k":[true]}]},"minItems":2,"maxItems":5,"uniqueItems":true}`,
		`{"anyOf":[{"type":"string","format":"email"},{"type":"number","minimum":1e30}],"examples":["x@y.z",5]}`,
		`{"type":"object","patternProperties":{"^[a-z]{2}$":{"type":"boolean"}},"additionalProperties":false,"minProperties":1}`,
		`{"$defs":{"t":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/t"}}}}},"$ref":"#/$defs/t"}`,
		personSchema,
	} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, schema []byte, seed uint64) {
		if len(schema) > 4096 {
			return
		}
		src, err := jsonschema2gbnf.Convert(schema)
		if err != nil || len(src) > 1<<16 {
			return
		}
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatalf("converted grammar does not parse: %v", err)
		}
		c, err := mask.Compile(g, nomodel.Vocab())
		if err != nil {
			return
		}
		v, err := jsonschema2gbnf.CompileSchema(schema)
		if err != nil {
			return
		}
		sch, err := nomodel.PrepareSchema(v, schema)
		if err != nil {
			t.Fatal(err)
		}
		s, err := nomodel.NewSampler(c, nomodel.Params{Seed: seed, Schema: sch, MaxBytes: 2048})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			out, err := s.Next()
			if err != nil {
				return // e.g. the budget is below the shortest instance
			}
			if len(out) > 2048 {
				t.Fatalf("%d bytes over the budget", len(out))
			}
			if nm, err := sch.NearMiss(out, seed); err == nil && len(nm.Doc) == 0 {
				t.Fatal("empty near miss")
			}
		}
	})
}
