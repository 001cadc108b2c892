package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/mask"
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
//
// TEMPORARY (until issue 14a's key tracker lands in mask): the
// structural sampler never repeats a key by construction, but the
// uniform one and budget close-outs can; such a sentence is redrawn.
var errDuplicateKey = errors.New("an object repeats a key")

// duplicateKey returns errDuplicateKey if a JSON document has an object
// with a repeated key (nil for documents that do not decode).
func duplicateKey(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	type level struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string token is a key
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, level{obj: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, level{})
				continue
			default:
				stack = stack[:top]
			}
		case string:
			if top >= 0 && stack[top].obj && stack[top].key {
				if stack[top].keys[t] {
					return fmt.Errorf("%w: %q", errDuplicateKey, t)
				}
				stack[top].keys[t] = true
				stack[top].key = false
				continue
			}
		}
		if top = len(stack) - 1; top >= 0 && stack[top].obj {
			stack[top].key = true
		}
	}
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
