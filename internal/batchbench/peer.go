//go:build llamacpp

package batchbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ollama/ollama/sample"
	"github.com/ollama/ollama/tokenizer"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/engine/llamacpp"
)

// PeerParams are the sampling settings of the peer (Ollama's sampler).
type PeerParams struct {
	Temperature float32
	TopK        int
	TopP, MinP  float32
	MaxTokens   int // most tokens per generation (Ollama's num_predict)
}

// RunPeer runs requests generations on m, c at a time, the way Ollama's
// runner drives llama.cpp (ollama v0.24.0, runner/llamarunner and the
// sample package): one batch per step with the next token of every
// sequence (a new sequence's whole prompt in its first), then for each
// sequence, one after another, Ollama's sampler with llama.cpp's grammar
// (sample.NewGrammarSampler over llama.NewGrammar: it samples first, keeps
// the token if the grammar accepts it, and else masks the whole vocabulary
// with the grammar and samples again). There is no jump-forward and no
// close-out: a generation ends at an end-of-generation token or after
// MaxTokens tokens. grammar "" runs unconstrained.
func RunPeer(ctx context.Context, m *llamacpp.Model, grammar string, c, requests int, p PeerParams, req Request) (Result, error) {
	res := Result{Mode: "ollama sampler + llama.cpp grammar", Concurrency: c, Requests: requests, GrammarShare: -1}
	if grammar == "" {
		res.Mode = "ollama sampler, unconstrained"
	}
	if c > m.Sequences() {
		return res, fmt.Errorf("batchbench: concurrency %d, the model holds %d sequences", c, m.Sequences())
	}
	prompt, err := m.Tokenize([]byte(req.Prompt), true, false)
	if err != nil {
		return res, err
	}
	tok := newPeerTokenizer(m)
	type slot struct {
		seq     int
		busy    bool
		pending []int32
		pos     int
		out     []byte
		n       int
		sampler sample.Sampler
		gs      *sample.GrammarSampler
		t0      time.Time
		last    time.Time
		row     int
	}
	slots := make([]*slot, c)
	for i := range slots {
		slots[i] = &slot{seq: i}
	}
	started := 0
	var b engine.Batch
	start := time.Now()
	var ended []*slot // removed after the step: Remove invalidates the logits rows
	finish := func(s *slot) {
		s.busy = false
		if s.gs != nil {
			s.gs.Free()
			s.gs = nil
		}
		res.Tokens += s.n
		if req.Check != nil {
			res.Checked++
			if req.Check(string(s.out)) == nil {
				res.Valid++
			}
		}
		ended = append(ended, s)
	}
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		for _, s := range slots {
			if s.busy || started == requests {
				continue
			}
			*s = slot{seq: s.seq, busy: true, pending: slices.Clone(prompt), t0: time.Now()}
			if grammar != "" {
				if s.gs, err = sample.NewGrammarSampler(tok, grammar); err != nil {
					return res, err
				}
			}
			s.sampler = sample.NewSampler(p.Temperature, p.TopK, p.TopP, p.MinP, started, s.gs)
			started++
		}
		b.Reset()
		for _, s := range slots {
			s.row = -1
			if !s.busy {
				continue
			}
			for i, t := range s.pending {
				s.row = b.Add(s.seq, s.pos+i, t, i == len(s.pending)-1)
			}
			s.pos += len(s.pending)
			s.pending = s.pending[:0]
		}
		if b.Len() == 0 {
			break
		}
		if err := m.Decode(&b); err != nil {
			return res, err
		}
		for _, s := range slots {
			if s.row < 0 {
				continue
			}
			t, err := s.sampler.Sample(m.Logits(s.row))
			if err != nil {
				return res, fmt.Errorf("batchbench: ollama sampler: %w", err)
			}
			now := time.Now()
			if s.n == 0 {
				res.TTFT = append(res.TTFT, now.Sub(s.t0))
			} else {
				res.ITL = append(res.ITL, now.Sub(s.last))
			}
			s.last = now
			if m.IsEOG(t) {
				finish(s)
				continue
			}
			s.n++
			s.out = append(s.out, m.TokenBytes(t)...)
			if s.n >= p.MaxTokens {
				finish(s)
				continue
			}
			s.pending = append(s.pending, t)
		}
		for _, s := range ended {
			if err := m.Remove(s.seq, 0); err != nil {
				return res, err
			}
		}
		ended = ended[:0]
	}
	res.Wall = time.Since(start)
	if started != requests {
		return res, errors.New("batchbench: peer ended early")
	}
	return res, nil
}

// peerTokenizer is the model's vocabulary as Ollama's tokenizer interface,
// for sample.NewGrammarSampler: pieces are the tokens' raw bytes, control
// tokens have none (the grammar never allows them), and the
// end-of-generation ids are the model's.
type peerTokenizer struct {
	m *llamacpp.Model
	v *tokenizer.Vocabulary
}

func newPeerTokenizer(m *llamacpp.Model) *peerTokenizer {
	return &peerTokenizer{m: m, v: &tokenizer.Vocabulary{Values: make([]string, m.VocabSize()), EOS: m.EOG()}}
}

func (t *peerTokenizer) Encode(s string, addSpecial bool) ([]int32, error) {
	return t.m.Tokenize([]byte(s), addSpecial, false)
}

func (t *peerTokenizer) Decode(ids []int32) (string, error) {
	var b []byte
	for _, id := range ids {
		if !t.m.TokenIsSpecial(id) {
			b = append(b, t.m.TokenBytes(id)...)
		}
	}
	return string(b), nil
}

func (t *peerTokenizer) Is(id int32, s tokenizer.Special) bool {
	switch s {
	case tokenizer.SpecialEOS:
		return t.m.IsEOG(id)
	case tokenizer.SpecialBOS:
		bos, ok := t.m.BOS()
		return ok && id == bos
	}
	return false
}

func (t *peerTokenizer) Vocabulary() *tokenizer.Vocabulary { return t.v }
