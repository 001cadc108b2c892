// Package structgen is the typed front of the structgen engine: generate a
// Go value whose JSON follows the schema of its type.
//
//	eng, _ := engine.New(model)                       // or engine.New(nil): no model, random valid values
//	order, err := structgen.Generate[Order](ctx, eng, "An order for three apples:")
//
// SchemaFor derives the JSON Schema of a Go type with
// github.com/invopop/jsonschema: properties in struct field order, field
// names from json tags, fields without omitempty required, no additional
// properties, and constraints from jsonschema tags (description=...,
// enum=a,enum=b, minimum=, maximum=, minLength=, maxLength=, pattern=,
// minItems=, maxItems=, format=...). Named struct types become $defs with
// local $refs (qualified by package path, so that two types of the same name
// do not collide); recursive types work. Generate converts that schema to a
// grammar (once per type and engine: the engine caches it), constrains the
// generation with it, validates the output against the schema
// (santhosh-tekuri/jsonschema, in the engine) and unmarshals it into T.
//
// Go numbers have ranges: every integer and floating-point type, wherever
// it appears (fields, elements, map values, T itself), gets the minimum
// and maximum it can hold (int8 -128..127, uint64 0..18446744073709551615,
// float32 ±3.4028234663852886e38, float64 ±1.7976931348623157e308;
// bounds from tags are kept where they are narrower), so Generate never
// produces a number T cannot hold. The number -0 (valid JSON, equal to 0,
// but refused by Go's decoder for unsigned types) is read as 0. time.Time
// fields get format date-time narrowed by a pattern to what time.Time
// parses (an uppercase T and Z, no leap second); []byte fields, base64
// strings, a pattern of what encoding/json decodes.
//
// The functions are safe for concurrent use, and concurrent Generate calls
// on one engine run together: the engine batches them on its model (see
// package engine).
package structgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/structgen/structgen/engine"
)

var schemas sync.Map // reflect.Type → []byte

// SchemaFor returns the JSON Schema (draft 2020-12) of T as
// invopop/jsonschema reflects it (see the package documentation). The
// result is cached per type; callers must not modify it.
func SchemaFor[T any]() ([]byte, error) {
	t := reflect.TypeFor[T]()
	if s, ok := schemas.Load(t); ok {
		return s.([]byte), nil
	}
	if t == nil || t.Kind() == reflect.Interface {
		return nil, fmt.Errorf("structgen: SchemaFor: %v is an interface type, which has no schema", t)
	}
	r := &jsonschema.Reflector{Namer: qualifiedName, Mapper: mapType}
	s := r.ReflectFromType(t)
	s.ID = "" // no base URL: every $ref stays local to the document
	boundNumbers(t, s, s.Definitions, map[*jsonschema.Schema]bool{})
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("structgen: SchemaFor[%v]: %w", t, err)
	}
	schemas.Store(t, b)
	return b, nil
}

// timePattern narrows format date-time (RFC 3339) to what time.Time's
// UnmarshalJSON parses: RFC 3339 also allows a lowercase 't' and 'z' and
// the leap second 60, which Go rejects.
const timePattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`

// base64Pattern is what encoding/json decodes into a []byte: standard
// base64 with padding (invopop only says contentEncoding base64, which
// constrains nothing).
const base64Pattern = `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`

// mapType gives the schemas of types invopop's defaults do not fit.
func mapType(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeFor[time.Time]():
		return &jsonschema.Schema{Type: "string", Format: "date-time", Pattern: timePattern}
	case reflect.TypeFor[[]byte]():
		return &jsonschema.Schema{Type: "string", ContentEncoding: "base64", Pattern: base64Pattern}
	}
	return nil
}

// boundNumbers narrows the bounds of every integer and number schema
// that a Go numeric type reflected to (s is t's schema) to the range of
// that type, walking fields, elements and map values as invopop does.
func boundNumbers(t reflect.Type, s *jsonschema.Schema, defs jsonschema.Definitions, seen map[*jsonschema.Schema]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s != nil && s.Ref != "" {
		s = defs[strings.TrimPrefix(s.Ref, "#/$defs/")]
	}
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	switch k := t.Kind(); {
	case k == reflect.Struct:
		if s.Properties == nil {
			return // a mapped type such as time.Time
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-" || !f.IsExported() && !f.Anonymous:
			case f.Anonymous && name == "":
				delete(seen, s) // embedded fields are inlined into s
				boundNumbers(f.Type, s, defs, seen)
			default:
				if name == "" {
					name = f.Name
				}
				if p, ok := s.Properties.Get(name); ok {
					boundNumbers(f.Type, p, defs, seen)
				}
			}
		}
	case k == reflect.Slice || k == reflect.Array:
		boundNumbers(t.Elem(), s.Items, defs, seen) // []byte is a string: no Items
	case k == reflect.Map:
		boundNumbers(t.Elem(), s.AdditionalProperties, defs, seen)
		for _, p := range s.PatternProperties {
			boundNumbers(t.Elem(), p, defs, seen)
		}
	case s.Type == "integer" && (k >= reflect.Int && k <= reflect.Int64 || k >= reflect.Uint && k <= reflect.Uint64):
		lo, hi := new(big.Int), new(big.Int).Lsh(big.NewInt(1), uint(t.Bits()))
		if k <= reflect.Int64 {
			hi.Rsh(hi, 1)
			lo.Neg(hi)
		}
		narrow(s, lo.String(), hi.Sub(hi, big.NewInt(1)).String())
	case s.Type == "number" && k == reflect.Float32:
		narrow(s, "-3.4028234663852886e38", "3.4028234663852886e38")
	case s.Type == "number" && k == reflect.Float64:
		narrow(s, "-1.7976931348623157e308", "1.7976931348623157e308")
	}
}

// narrow sets s's minimum and maximum to lo and hi unless they are
// narrower already.
func narrow(s *jsonschema.Schema, lo, hi string) {
	if s.Minimum == "" || cmpNumber(s.Minimum, lo) < 0 {
		s.Minimum = json.Number(lo)
	}
	if s.Maximum == "" || cmpNumber(s.Maximum, hi) > 0 {
		s.Maximum = json.Number(hi)
	}
}

// cmpNumber compares two JSON numbers exactly (a tag that is not a
// number compares as below everything, so the type's bound replaces it).
func cmpNumber(a json.Number, b string) int {
	x, ok := new(big.Rat).SetString(string(a))
	if !ok {
		return -1
	}
	y, _ := new(big.Rat).SetString(b)
	return x.Cmp(y)
}

// unsignZero rewrites every number -0 in a JSON document to 0 (they are
// the same number; Go's decoder refuses -0 for unsigned integers).
func unsignZero(doc []byte) []byte {
	var out []byte
	inString, escaped := false, false
	for i, c := range doc {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' && i+1 < len(doc) && doc[i+1] == '0' && (i+2 == len(doc) || !strings.ContainsRune("0123456789.eE", rune(doc[i+2]))):
			if out == nil {
				out = append(make([]byte, 0, len(doc)), doc[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return doc
	}
	return out
}

// qualifiedName names a type's $defs entry by package path and name, with
// characters other than letters, digits, '.', '_' and '-' replaced, so that
// two types of the same name in different packages do not collide.
func qualifiedName(t reflect.Type) string {
	name := t.Name()
	if p := t.PkgPath(); p != "" {
		name = p + "." + name
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
}

// ErrNotTriggered reports a generation with a lazy trigger (engine.WithLazyTrigger)
// in which the trigger never appeared: there is no structured output.
var ErrNotTriggered = errors.New("structgen: the lazy grammar's trigger never appeared: no structured output")

// Generate runs one generation on e constrained by the schema of T
// (SchemaFor), after the engine's defaults and opts (a grammar or schema
// among them is replaced by T's), and returns the output unmarshalled into
// T. The output has been validated against the schema; a
// *engine.ValidationError (possible only with engine.WithLenient) or an
// unmarshalling error is returned with the zero T.
func Generate[T any](ctx context.Context, e *engine.Engine, prompt string, opts ...engine.Option) (T, error) {
	var zero T
	schema, err := SchemaFor[T]()
	if err != nil {
		return zero, err
	}
	all := append(append([]engine.Option(nil), opts...), engine.WithSchema(schema))
	res, err := e.Generate(ctx, prompt, all...)
	if err != nil {
		return zero, err
	}
	if !res.Triggered {
		return zero, ErrNotTriggered
	}
	var v T
	dec := json.NewDecoder(bytes.NewReader(unsignZero([]byte(res.Output))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return zero, fmt.Errorf("structgen: output %q does not unmarshal into %v: %w", res.Output, reflect.TypeFor[T](), err)
	}
	return v, nil
}
