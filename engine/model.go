package engine

import "errors"

// ErrContextFull reports that a Decode would need more positions than the
// model's context holds (or, for llama.cpp, that the KV cache has no slot
// for the batch). Implementations wrap it, so test with errors.Is.
var ErrContextFull = errors.New("context window full")

// Model is what the decode loop needs from a language model: its
// vocabulary, its tokenizer, and a single sequence of positions 0..n-1
// kept in a cache (the KV cache of a transformer).
//
// Token ids are int32 in [0, VocabSize()). A Model is one sequence and is
// not safe for concurrent use; Close may be called more than once.
//
// Cost: the vocabulary methods are table look-ups (no allocation);
// Tokenize allocates its result; Decode is the expensive call (a forward
// pass over the batch); Logits borrows a buffer and never copies.
type Model interface {
	// VocabSize is the number of token ids, which is also the length of
	// the Logits slice.
	VocabSize() int

	// TokenBytes returns the raw bytes a token stands for: a byte-fallback
	// token (SentencePiece <0xXX>) gives its single byte, a byte-level BPE
	// token its decoded bytes (which may be part of a UTF-8 sequence), a
	// special token its text (e.g. "<|eot_id|>"). The slice is shared:
	// do not modify it. Out-of-range ids give nil.
	TokenBytes(tok int32) []byte

	// TokenIsSpecial reports whether tok is a control token (BOS, EOS,
	// chat markers, reserved and unknown tokens). Grammar text never
	// produces a special token; only a token reference in the grammar or
	// an end-of-generation decision can.
	TokenIsSpecial(tok int32) bool

	// EOG lists the end-of-generation ids (EOS, EOT, ...), sorted
	// ascending. The slice is shared: do not modify it.
	EOG() []int32

	// IsEOG reports whether tok ends generation.
	IsEOG(tok int32) bool

	// BOS returns the beginning-of-sequence token and whether the model's
	// tokenizer puts it in front of a prompt (Tokenize with addSpecial
	// does so by itself). ok is false when the model has no BOS token or
	// does not use one.
	BOS() (tok int32, ok bool)

	// Tokenize splits text into tokens. addSpecial adds the tokens the
	// model wants around a prompt (BOS for most); parseSpecial lets text
	// such as "<|eot_id|>" become the special token instead of plain
	// text (use it for chat-template output, never for user data).
	Tokenize(text []byte, addSpecial, parseSpecial bool) ([]int32, error)

	// Decode runs the model on tokens placed at positions pos,
	// pos+1, ...; the cache must hold exactly positions 0..pos-1 (call
	// Truncate(pos) first to go back). Long inputs are split into
	// batches internally; logits are computed for the last token only.
	// On error the cache is left as it was before the call (positions
	// 0..pos-1). Going past ContextSize is an error wrapping
	// ErrContextFull.
	Decode(tokens []int32, pos int) error

	// Logits returns the next-token logits after the last token of the
	// last successful Decode, VocabSize long. The slice is borrowed: it
	// is overwritten by the next Decode and invalid after Truncate or
	// Close; the caller may modify it in place (e.g. mask it) but must
	// not keep it. Nil before the first Decode and after Truncate.
	Logits() []float32

	// Truncate drops the cache from position pos on, so that the next
	// Decode starts at pos (rollback, re-tokenization after
	// jump-forward). To get logits for position pos-1 again, Truncate
	// to pos-1 and Decode that token once more.
	Truncate(pos int) error

	// ContextSize is the number of positions the cache holds.
	ContextSize() int

	// ChatTemplate is the model's chat template (Jinja text from the
	// model file), or "" when the model has none.
	ChatTemplate() string

	// Close frees the model. It is safe to call more than once; every
	// other method is invalid afterwards.
	Close() error
}
