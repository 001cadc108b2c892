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
// Go numbers have ranges a schema without bounds does not express: a
// generated integer beyond int64 (or a float beyond float64) is valid
// JSON but fails to unmarshal, which Generate reports as an error. Add
// minimum/maximum tags where that matters. time.Time fields get format
// date-time narrowed by a pattern to what time.Time parses (an uppercase T
// and Z, no leap second).
//
// The functions are safe for concurrent use (the engine serializes
// generations on one model).
package structgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// mapType gives the schemas of types invopop's defaults do not fit.
func mapType(t reflect.Type) *jsonschema.Schema {
	if t == reflect.TypeFor[time.Time]() {
		return &jsonschema.Schema{Type: "string", Format: "date-time", Pattern: timePattern}
	}
	return nil
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
	dec := json.NewDecoder(bytes.NewReader([]byte(res.Output)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return zero, fmt.Errorf("structgen: output %q does not unmarshal into %v: %w", res.Output, reflect.TypeFor[T](), err)
	}
	return v, nil
}
