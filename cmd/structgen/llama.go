//go:build llamacpp

package main

import (
	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/engine/llamacpp"
	"github.com/structgen/structgen/internal/maskbench/llamapeer"
)

// This file links llama.cpp in (build tag llamacpp): --model and
// bench --peer.
func init() {
	modelLoader = func(path string, o modelOptions) (engine.Model, error) {
		return llamacpp.Load(path, llamacpp.Options{ContextSize: o.ContextSize, Sequences: o.Sequences, Threads: o.Threads, Progress: o.Progress})
	}
	benchPeer = llamapeer.New
}
