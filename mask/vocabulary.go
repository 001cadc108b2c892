package mask

import "github.com/structgen/structgen/vocab"

// The vocabulary layer (token bytes, kinds, end-of-generation ids and the
// loaders) is package vocab; these names keep the mask API of earlier
// releases working.

// Vocab is a tokenizer vocabulary: see vocab.Vocab.
type Vocab = vocab.Vocab

// TokenKind says how the automaton may use a token: see vocab.TokenKind.
type TokenKind = vocab.TokenKind

// The token kinds (see vocab.TokenKind).
const (
	TokenNormal  = vocab.TokenNormal
	TokenSpecial = vocab.TokenSpecial
	TokenUnused  = vocab.TokenUnused
)

// VocabFileError is a vocabulary file that cannot be read: see
// vocab.VocabFileError.
type VocabFileError = vocab.VocabFileError

// NoEOGError is a vocabulary file with no end-of-generation token: see
// vocab.NoEOGError.
type NoEOGError = vocab.NoEOGError

// Limits on a vocabulary (see package vocab).
const (
	MaxVocabSize = vocab.MaxVocabSize
	MaxTokenLen  = vocab.MaxTokenLen
)

// NewVocab builds a vocabulary from raw token bytes: see vocab.NewVocab.
func NewVocab(tokens [][]byte, eog []int32) (*Vocab, error) { return vocab.NewVocab(tokens, eog) }

// NewVocabKinds is NewVocab with a kind per token: see vocab.NewVocabKinds.
func NewVocabKinds(tokens [][]byte, kinds []TokenKind, eog []int32) (*Vocab, error) {
	return vocab.NewVocabKinds(tokens, kinds, eog)
}

// LoadVocab loads a vocabulary file or folder: see vocab.LoadVocab.
func LoadVocab(path string) (*Vocab, error) { return vocab.LoadVocab(path) }
