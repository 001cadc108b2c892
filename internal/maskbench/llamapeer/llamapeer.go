//go:build llamacpp

// Package llamapeer runs llama.cpp's grammar engine as the mask
// benchmark's peer (maskbench.Peer), through engine/llamacpp. It needs
// cgo and the llamacpp build tag.
package llamapeer

import (
	"time"

	"github.com/structgen/structgen/engine/llamacpp"
	"github.com/structgen/structgen/internal/maskbench"
	"github.com/structgen/structgen/mask"
)

// Peer is llama.cpp's grammar engine (ollama v0.24.0 llama.NewGrammar).
type Peer struct{}

// New returns the llama.cpp peer.
func New() maskbench.Peer { return Peer{} }

// Name names the peer in tables.
func (Peer) Name() string { return "llama.cpp's grammar engine (ollama v0.24.0 llama.NewGrammar)" }

// Replay compiles grammar with llama.cpp against v and replays tokens.
// Special tokens are given no bytes (llama.cpp then never allows them),
// as grammar text must never produce them.
func (Peer) Replay(grammar string, v *mask.Vocab, tokens []int32, maxSteps int) (*maskbench.PeerResult, error) {
	raw := make([][]byte, v.Size())
	for id := int32(0); int(id) < v.Size(); id++ {
		if v.Kind(id) == mask.TokenNormal {
			raw[id] = v.Token(id)
		}
	}
	t0 := time.Now()
	p, err := llamacpp.NewGrammarPeer(grammar, raw, v.EOG())
	if err != nil {
		return nil, err
	}
	defer p.Close()
	compile := time.Since(t0)
	r, err := p.Replay(tokens, maxSteps)
	if err != nil {
		return nil, err
	}
	return &maskbench.PeerResult{Compile: compile, MaskTimes: r.MaskTimes, Allowed: r.Allowed, Rejected: r.Rejected}, nil
}
