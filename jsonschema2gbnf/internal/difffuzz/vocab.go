package difffuzz

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/mask"
)

// The walk vocabularies, by name: Llama-3 (128,256 ids, byte-level BPE)
// and Qwen2 (151,646 ids), both from ../shared/corpus/vocab/hf.
var vocabPaths = map[string]string{
	"qwen2": filepath.Join("corpus", "vocab", "hf", "qwen2"),
}

var (
	vocabMu    sync.Mutex
	vocabCache = map[string]*mask.Vocab{}
)

// LoadVocab loads a walk vocabulary ("llama3" or "qwen2") from the shared
// folder, once per process.
func LoadVocab(shared, name string) (Vocab, error) {
	vocabMu.Lock()
	defer vocabMu.Unlock()
	if v, ok := vocabCache[name]; ok {
		return Vocab{name, v}, nil
	}
	var v *mask.Vocab
	var err error
	switch name {
	case "llama3":
		v, err = llama3vocab.Load(shared)
	case "qwen2":
		v, err = mask.LoadVocab(filepath.Join(shared, vocabPaths[name]))
	default:
		return Vocab{}, fmt.Errorf("difffuzz: unknown vocabulary %q (llama3, qwen2)", name)
	}
	if err != nil {
		return Vocab{}, err
	}
	vocabCache[name] = v
	return Vocab{name, v}, nil
}
