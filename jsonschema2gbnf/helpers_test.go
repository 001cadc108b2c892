package jsonschema2gbnf

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/sharedtest"
)

// compileGrammar converts a schema and parses the grammar.
func compileGrammar(t testing.TB, schema string, opts ...Option) (string, *gbnf.Grammar) {
	t.Helper()
	src, err := Convert([]byte(schema), opts...)
	if err != nil {
		t.Fatalf("Convert(%s): %v", schema, err)
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatalf("gbnf.Parse of the grammar for %s: %v\n%s", schema, err, src)
	}
	return src, g
}

// decodeJSON decodes a document the way the validator expects it.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// checkSound generates n random sentences of the grammar and validates
// each with santhosh-tekuri (format assertions on); it returns the
// number of violations and reports them.
func checkSound(t testing.TB, schema string, g *gbnf.Grammar, n int, seed int64, maxBytes int) int {
	t.Helper()
	sch, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatalf("CompileSchema: %v", err)
	}
	rng := rand.New(rand.NewSource(seed))
	bad := 0
	for i := 0; i < n; i++ {
		doc, ok := earley.Generate(g, rng, maxBytes)
		if !ok {
			continue
		}
		v, err := decodeJSON(doc)
		if err != nil {
			bad++
			t.Errorf("schema %s: generated non-JSON %q: %v", clipS(schema), doc, err)
			continue
		}
		if err := sch.Validate(v); err != nil {
			bad++
			t.Errorf("schema %s: generated %q is invalid: %v", clipS(schema), doc, err)
		}
	}
	return bad
}

func clipS(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// readShared reads a file of ../shared, skipping when it is absent.
func readShared(t testing.TB, elem ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(sharedtest.Path(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t testing.TB, src string) *gbnf.Grammar {
	t.Helper()
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatalf("gbnf.Parse: %v\n%s", err, src)
	}
	return g
}
