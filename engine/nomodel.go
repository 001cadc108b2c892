package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/mask"
	"github.com/structgen/structgen/mask/jsonkeys"
)

// maxRedraws bounds the redraws of sentences the validator cannot check.
const maxRedraws = 8

// generateNoModel draws one sentence of the grammar with nomodel.Sampler.
func (e *Engine) generateNoModel(ctx context.Context, prompt string, o *options, con *constraint) (*Result, error) {
	switch {
	case prompt != "":
		return nil, errors.New("engine: no-model mode takes no prompt (it samples the grammar itself)")
	case con == nil:
		return nil, ErrNoConstraint
	case len(o.triggers) > 0:
		return nil, errors.New("engine: a lazy trigger needs a model (no-model mode samples the grammar from its start)")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The grammar's precomputation (run by the cache, see
	// grammarCache.compile) is not waited for: a draw visits few states
	// and computes those it needs (the same sets either way). Should it
	// have failed already, that is the error.
	select {
	case <-con.compiled.Precomputed():
		if err := con.compiled.Precompute(nil); err != nil {
			return nil, err
		}
	default:
	}
	start := time.Now()
	p := nomodel.Params{Seed: uint64(o.seed), MaxBytes: o.maxBytes, MaxTokens: o.maxTokens,
		Uniform: o.uniform, Policy: &o.policy}
	p.Policy.AnyOrder = o.anyOrder
	if con.validator != nil && !o.uniform {
		sch, err := con.noModelSchema(o.schema)
		if err != nil {
			return nil, err
		}
		p.Schema = sch
	}
	pool := e.samplerPool(con.compiled)
	s, _ := pool.Get().(*nomodel.Sampler)
	var err error
	if s == nil {
		s, err = nomodel.NewSampler(con.compiled, p)
	} else {
		err = s.Reset(p)
	}
	if err != nil {
		return nil, err
	}
	defer pool.Put(s)
	var out []byte
	var invalid error
	for try := 0; ; try++ {
		out, err = s.Next()
		if err != nil {
			return nil, err
		}
		if con.validator == nil {
			break
		}
		// A sentence the schema validator cannot check (a number with an
		// exponent of millions; about one in 10^4 uniform order
		// instances) is drawn again, from the same random stream; so is
		// one with a repeated key.
		invalid = validate(con.validator, string(out))
		if invalid == nil {
			invalid = duplicateKey(out)
		}
		if try == maxRedraws || !errors.Is(invalid, errUncheckable) && !errors.Is(invalid, errDuplicateKey) {
			break
		}
	}
	text := string(out)
	if o.stream != nil && len(text) > 0 {
		if err := o.stream(out); err != nil {
			return nil, err
		}
	}
	toks := append([]int32(nil), s.Tokens()...)
	res := &Result{Text: text, Output: text, Triggered: true, Tokens: toks, Stop: StopEOG,
		validated: con.validator != nil, invalid: invalid}
	res.Stats.Tokens = len(toks)
	res.Stats.Sampled = len(toks) + 1 // the end-of-generation token included
	if n := s.ClosedOut(); n > 0 {
		res.Stop = StopBudget
		res.Stats.CloseOut = n
		res.Stats.Sampled = len(toks) - n
	}
	res.Stats.Total = time.Since(start)
	return res, nil
}

// noModelSchema is the schema prepared for no-model sampling
// (nomodel.PrepareSchema), made on first use and kept with the compiled
// constraint in the engine's cache. raw is the schema's text.
func (con *constraint) noModelSchema(raw []byte) (*nomodel.Schema, error) {
	con.nmOnce.Do(func() { con.nmSchema, con.nmErr = nomodel.PrepareSchema(con.validator, raw) })
	return con.nmSchema, con.nmErr
}

// errDuplicateKey reports an object with a repeated key.
var errDuplicateKey = errors.New("an object repeats a key")

// duplicateKey returns an error wrapping errDuplicateKey if a JSON
// document has an object with a repeated key (jsonkeys.Duplicates; nil
// for text that is not JSON). The structural sampler never repeats a key
// by construction; the uniform one (WithUniform) can, and such a
// sentence is drawn again.
func duplicateKey(doc []byte) error {
	dups, err := jsonkeys.Duplicates(doc)
	if err != nil || len(dups) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %q in the object at #%s", errDuplicateKey, dups[0].Key, dups[0].Pointer)
}

func (e *Engine) samplerPool(c *mask.Compiled) *sync.Pool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.samplers[c]
	if p == nil {
		p = &sync.Pool{}
		e.samplers[c] = p
	}
	return p
}
