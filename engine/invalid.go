package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/structgen/structgen/engine/nomodel"
)

// Invalid is a near-miss instance of a schema: a document that breaks
// exactly one constraint, verified by the validator.
type Invalid struct {
	// Output is the invalid document.
	Output string
	// Pointer is the JSON pointer of the value that breaks the
	// constraint ("" is the whole document); Keyword is the keyword it
	// breaks (required, additionalProperties, maximum, pattern, format,
	// type, maxItems, …) and Message the validator's message.
	Pointer, Keyword, Message string
	// Seed is the seed of the valid instance it was made from.
	Seed uint32
}

// maxNearMissBases bounds the valid instances GenerateInvalid draws
// looking for one with a change that breaks exactly one constraint.
const maxNearMissBases = 8

// GenerateInvalid draws a near-miss instance of the schema (no-model mode
// only): a valid instance (as Generate draws it, with the same options)
// with one change that breaks exactly one constraint — a missing
// required property, an extra property where none is allowed, a value
// past a bound, a string off its pattern or format, a wrong type, an
// array too long or too short — checked by santhosh-tekuri/jsonschema to
// fail with a single error at Pointer for Keyword. The same seed gives
// the same instance.
func (e *Engine) GenerateInvalid(ctx context.Context, opts ...Option) (*Invalid, error) {
	if e.model != nil {
		return nil, errors.New("engine: GenerateInvalid needs no-model mode")
	}
	o := e.defaults
	if err := o.apply(opts); err != nil {
		return nil, err
	}
	if o.schema == nil {
		return nil, errors.New("engine: GenerateInvalid needs a schema")
	}
	con, err := e.constraint(ctx, &o)
	if err != nil {
		return nil, err
	}
	sch, err := con.noModelSchema(o.schema)
	if err != nil {
		return nil, err
	}
	seed := o.seed
	if !o.seedSet {
		seed = rand.Uint32()
	}
	for try := uint32(0); try < maxNearMissBases; try++ {
		s := seed + try*0x9e3779b9
		res, err := e.Generate(ctx, "", append(append([]Option(nil), opts...), WithSeed(s))...)
		if err != nil {
			return nil, err
		}
		nm, err := sch.NearMiss([]byte(res.Output), uint64(s))
		if errors.Is(err, nomodel.ErrNoNearMiss) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &Invalid{Output: string(nm.Doc), Pointer: nm.Pointer, Keyword: nm.Keyword, Message: nm.Message, Seed: s}, nil
	}
	return nil, fmt.Errorf("engine: %w (tried %d instances)", nomodel.ErrNoNearMiss, maxNearMissBases)
}
