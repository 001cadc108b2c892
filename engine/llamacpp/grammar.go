//go:build llamacpp

package llamacpp

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ollama/ollama/llama"
)

// GrammarPeer runs llama.cpp's own grammar engine (llama.NewGrammar of
// ollama v0.24.0) over a vocabulary, for the mask benchmark and for
// cross-checks against package mask. It is slow by design of llama.cpp:
// every Fill walks the grammar for every token of the vocabulary (tens of
// milliseconds for 128k tokens). Not safe for concurrent use.
//
// llama.cpp aborts the process when it is made to accept a token its
// grammar rejects, so Accept first checks the token against the mask of
// the current step (computing it when Fill was not called since the last
// Accept).
type GrammarPeer struct {
	g       *llama.Grammar
	n       int
	isEOG   []bool
	eog     []int32
	data    []llama.TokenData // one entry per token, reused every step
	allowed []bool            // mask of the current step, valid if fresh
	count   int               // allowed tokens in the current step
	fresh   bool
}

// MaxPeerVocab bounds the vocabulary of a GrammarPeer: llama.cpp's grammar
// takes token ids as uint32 and ollama passes each piece as a C string.
const MaxPeerVocab = math.MaxInt32

// NewGrammarPeer compiles gbnf (llama.cpp GBNF, start rule "root") with
// llama.cpp against a vocabulary: vocab[i] holds the raw bytes of token i,
// eog the end-of-generation ids (allowed exactly where the grammar can
// end). Tokens with no bytes are never allowed: pass nil for control
// tokens, which grammar text must never produce. A byte 0 ends a token's
// text for llama.cpp (its pieces are C strings). llama.cpp prints its
// grammar parse errors on stderr itself; the error returned here says
// only that the grammar was rejected (plus what llama.cpp logged, e.g.
// left recursion).
func NewGrammarPeer(gbnf string, vocab [][]byte, eog []int32) (*GrammarPeer, error) {
	n := len(vocab)
	if n == 0 || n > MaxPeerVocab {
		return nil, fmt.Errorf("llamacpp: grammar peer: vocabulary of %d tokens (want 1..%d)", n, MaxPeerVocab)
	}
	p := &GrammarPeer{
		n:       n,
		isEOG:   make([]bool, n),
		data:    make([]llama.TokenData, n),
		allowed: make([]bool, n),
	}
	eogIDs := make([]int32, 0, len(eog))
	for i, t := range eog {
		if t < 0 || int(t) >= n {
			return nil, fmt.Errorf("llamacpp: grammar peer: end-of-generation id %d (index %d) is out of range [0, %d)", t, i, n)
		}
		if !p.isEOG[t] {
			p.isEOG[t] = true
			eogIDs = append(eogIDs, t)
		}
	}
	ids := make([]uint32, n)
	pieces := make([]string, n)
	for i, b := range vocab {
		ids[i] = uint32(i)
		pieces[i] = string(b)
	}
	loadMu.Lock()
	takeLog()
	p.g = llama.NewGrammar(gbnf, ids, pieces, eogIDs)
	msg := takeLog()
	loadMu.Unlock()
	if p.g == nil {
		if msg == "" {
			msg = "see llama.cpp's message on stderr"
		}
		return nil, fmt.Errorf("llamacpp: grammar peer: llama.cpp rejected the grammar (%s)", msg)
	}
	p.eog = eogIDs
	return p, nil
}

// VocabSize is the number of tokens the peer masks.
func (p *GrammarPeer) VocabSize() int { return p.n }

// Close frees llama.cpp's grammar. It is idempotent.
func (p *GrammarPeer) Close() {
	if p.g != nil {
		p.g.Free()
		p.g = nil
	}
	p.fresh = false
}

var errPeerClosed = errors.New("llamacpp: grammar peer is closed")

// compute runs llama.cpp's grammar over every token.
func (p *GrammarPeer) compute() error {
	if p.g == nil {
		return errPeerClosed
	}
	if !p.fresh {
		for i := range p.data {
			p.data[i] = llama.TokenData{ID: int32(i)}
		}
		p.g.Apply(p.data)
		p.count = 0
		for i, d := range p.data {
			ok := !math.IsInf(float64(d.Logit), -1)
			p.allowed[i] = ok
			if ok {
				p.count++
			}
		}
		p.fresh = true
	}
	return nil
}

// Fill computes the mask of the current step with llama.cpp — the slow
// call a benchmark times — and writes it to bits (len (VocabSize()+31)/32,
// bit i set iff token i is allowed; nil to skip). It returns the number of
// allowed tokens, end-of-generation ids included.
func (p *GrammarPeer) Fill(bits []uint32) (int, error) {
	if bits != nil && len(bits) != (p.n+31)/32 {
		return 0, fmt.Errorf("llamacpp: grammar peer: bitset of %d words for %d tokens (want %d)", len(bits), p.n, (p.n+31)/32)
	}
	p.fresh = false
	if err := p.compute(); err != nil {
		return 0, err
	}
	if bits != nil {
		clear(bits)
		for i, ok := range p.allowed {
			if ok {
				bits[i/32] |= 1 << (i % 32)
			}
		}
	}
	return p.count, nil
}

// Allowed reports whether tok is allowed at the current step (computing
// the mask if needed).
func (p *GrammarPeer) Allowed(tok int32) (bool, error) {
	if tok < 0 || int(tok) >= p.n {
		return false, fmt.Errorf("llamacpp: grammar peer: token %d is out of range [0, %d)", tok, p.n)
	}
	if err := p.compute(); err != nil {
		return false, err
	}
	return p.allowed[tok], nil
}

// Accept advances the grammar by tok. A token the grammar rejects is an
// error and leaves the state unchanged. An end-of-generation token is
// accepted only where the grammar can end, and changes nothing.
func (p *GrammarPeer) Accept(tok int32) error {
	ok, err := p.Allowed(tok)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("llamacpp: grammar peer: token %d is not allowed here", tok)
	}
	if p.isEOG[tok] {
		return nil
	}
	p.g.Accept(tok)
	p.fresh = false
	return nil
}

// Replay is the result of (*GrammarPeer).Replay.
type Replay struct {
	// MaskTimes[i] is how long llama.cpp took for the mask before token i.
	MaskTimes []time.Duration
	// Allowed[i] is the number of allowed tokens before token i, without
	// the end-of-generation ids; CanEnd[i] whether those were allowed.
	Allowed []int
	CanEnd  []bool
	// Rejected is the index of the first token the grammar rejected, or -1.
	Rejected int
}

// Replay feeds tokens one by one as the mask benchmark does: before each
// token it times Fill, then Accepts the token. It stops after maxSteps
// tokens (0: all), or at the first token the grammar rejects (Rejected).
// When every token was accepted and the replay was not cut short, one more
// step is measured: the mask after the last token, where an
// end-of-generation id must be allowed for a complete document.
func (p *GrammarPeer) Replay(tokens []int32, maxSteps int) (*Replay, error) {
	steps := len(tokens)
	final := true
	if maxSteps > 0 && maxSteps < steps {
		steps, final = maxSteps, false
	}
	r := &Replay{Rejected: -1}
	for i := 0; i <= steps; i++ {
		if i == steps && !final {
			break
		}
		start := time.Now()
		n, err := p.Fill(nil)
		d := time.Since(start)
		if err != nil {
			return r, err
		}
		canEnd := false
		for _, t := range p.eog {
			if p.allowed[t] {
				canEnd = true
				n--
			}
		}
		r.MaskTimes = append(r.MaskTimes, d)
		r.Allowed = append(r.Allowed, n)
		r.CanEnd = append(r.CanEnd, canEnd)
		if i == steps {
			break
		}
		if tok := tokens[i]; tok < 0 || int(tok) >= p.n || !p.allowed[tok] {
			r.Rejected = i
			return r, nil
		}
		if err := p.Accept(tokens[i]); err != nil {
			return r, err
		}
	}
	return r, nil
}
