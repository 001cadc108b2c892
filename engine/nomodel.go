package engine

import (
	"context"
	"errors"
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
	p := nomodel.Params{Seed: uint64(o.seed), MaxBytes: o.maxBytes, MaxTokens: o.maxTokens}
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
		// exponent of millions; about one in 10^4 order instances) is
		// drawn again, from the same random stream.
		invalid = validate(con.validator, string(out))
		if try == maxRedraws || !errors.Is(invalid, errUncheckable) {
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
