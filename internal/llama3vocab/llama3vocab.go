// Package llama3vocab loads the full Llama-3 / Llama-3.2 vocabulary used
// by the bench cases (../shared/bench): 128,256 ids, the 128,000 regular
// byte-level BPE tokens of corpus/vocab/hf/llama3.2/encoder.json followed
// by the 256 special tokens 128000–128255 with Meta's Llama-3.1/3.2 names.
//
// The end-of-generation ids are exactly {128001 <|end_of_text|>,
// 128009 <|eot_id|>}: the bench's stop ids (bench/cases/manifest.json
// tokenizer.stop_token_ids), which are the two special tokens XGrammar's
// allowed-token counts include (bench/README.md). A Llama-3.1 GGUF loaded
// through llama.cpp would also treat 128008 <|eom_id|> as end of
// generation; it stays a special token here so that mask counts match
// the bench's reference numbers.
//
// Load caches the vocabulary per path for the life of the process, since
// many tests and benchmarks need it; the *mask.Vocab is immutable and
// safe to share. The first load takes about 60 ms (parsing 2.7 MB of
// encoder.json, checking 280k merges); later ones are free.
package llama3vocab

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/structgen/structgen/mask"
)

// Sizes of the Llama-3 vocabulary.
const (
	Regular = 128000 // byte-level BPE tokens 0..127999
	Special = 256    // special tokens 128000..128255
	Size    = Regular + Special
)

// Well-known ids.
const (
	BeginOfText = 128000 // <|begin_of_text|>
	EndOfText   = 128001 // <|end_of_text|>, end of generation
	StartHeader = 128006 // <|start_header_id|>
	EndHeader   = 128007 // <|end_header_id|>
	EOM         = 128008 // <|eom_id|>, special but not end of generation here
	EOT         = 128009 // <|eot_id|>, end of generation
	PythonTag   = 128010 // <|python_tag|>
)

// Dir is the folder of the regular tokens, relative to the shared folder.
var Dir = filepath.Join("corpus", "vocab", "hf", "llama3.2")

// SpecialName returns the name of special token id (128000 ≤ id < 128256)
// in Llama 3.1 / 3.2: the named tokens, <|finetune_right_pad_id|> at
// 128004, and <|reserved_special_token_N|> for the rest, numbered in id
// order (0, 1 at 128002–128003; 2 at 128005; 3…247 from 128011 on).
func SpecialName(id int) string {
	switch id {
	case 128000:
		return "<|begin_of_text|>"
	case 128001:
		return "<|end_of_text|>"
	case 128002, 128003:
		return fmt.Sprintf("<|reserved_special_token_%d|>", id-128002)
	case 128004:
		return "<|finetune_right_pad_id|>"
	case 128005:
		return "<|reserved_special_token_2|>"
	case 128006:
		return "<|start_header_id|>"
	case 128007:
		return "<|end_header_id|>"
	case 128008:
		return "<|eom_id|>"
	case 128009:
		return "<|eot_id|>"
	case 128010:
		return "<|python_tag|>"
	}
	if id > 128010 && id < Size {
		return fmt.Sprintf("<|reserved_special_token_%d|>", id-128011+3)
	}
	return ""
}

type entry struct {
	once sync.Once
	v    *mask.Vocab
	err  error
}

var cache sync.Map // cleaned absolute path of the llama3.2 folder → *entry

// Load returns the Llama-3 vocabulary whose regular tokens are in
// sharedDir/corpus/vocab/hf/llama3.2 (encoder.json + vocab.bpe). All
// special tokens are mask.TokenSpecial; EOG is {128001, 128009}. Results
// (and errors) are cached per folder.
func Load(sharedDir string) (*mask.Vocab, error) {
	dir := filepath.Join(sharedDir, Dir)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	e, _ := cache.LoadOrStore(dir, &entry{})
	en := e.(*entry)
	en.once.Do(func() { en.v, en.err = load(dir) })
	return en.v, en.err
}

func load(dir string) (*mask.Vocab, error) {
	// The folder lists only the regular tokens, so LoadVocab finds no end
	// token and returns what it read in a *mask.NoEOGError.
	var noEOG *mask.NoEOGError
	_, err := mask.LoadVocab(dir)
	if !errors.As(err, &noEOG) {
		return nil, fmt.Errorf("llama3vocab: %s: want the regular tokens without end tokens, got %v", dir, err)
	}
	reg := noEOG.Vocab
	if reg.Size() != Regular {
		return nil, fmt.Errorf("llama3vocab: %s has %d tokens, want %d", dir, reg.Size(), Regular)
	}
	tokens := make([][]byte, Size)
	kinds := make([]mask.TokenKind, Size)
	for id := range Regular {
		tokens[id] = reg.Token(int32(id))
		if k := reg.Kind(int32(id)); k != mask.TokenNormal {
			return nil, fmt.Errorf("llama3vocab: %s: token %d (%q) is %s, want every regular token normal", dir, id, tokens[id], k)
		}
	}
	for id := Regular; id < Size; id++ {
		tokens[id] = []byte(SpecialName(id))
		kinds[id] = mask.TokenSpecial
	}
	v, err := mask.NewVocabKinds(tokens, kinds, []int32{EndOfText, EOT})
	if err != nil {
		return nil, fmt.Errorf("llama3vocab: %w", err)
	}
	return v, nil
}
