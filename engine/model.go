package engine

import "errors"

// ErrContextFull reports that a request needs more positions than the
// model's cache holds (a prompt longer than the context, a budget that
// cannot fit), or that a Decode found no room for its batch.
// Implementations wrap it, so test with errors.Is.
var ErrContextFull = errors.New("context window full")

// ErrUnsupported reports a Model that cannot do what was asked, such as
// sharing a prefix between sequences (Copy) on a recurrent model. The
// engine falls back to what it can do; implementations wrap it.
var ErrUnsupported = errors.New("not supported by this model")

// Model is what the decode loop needs from a language model: its
// vocabulary, its tokenizer, and a cache of positions (the KV cache of a
// transformer) shared by several sequences, so that one forward pass
// (Decode) carries the next tokens of many generations at once.
//
// Token ids are int32 in [0, VocabSize()); sequence ids are
// 0..Sequences()-1. The cache is unified: its ContextSize() cells are
// shared by all sequences, each of which holds positions 0..n-1 of its
// own; cells a sequence shares with another (Copy) count once.
//
// Concurrency: the vocabulary methods and Tokenize are safe for concurrent
// use; Decode, Logits, Remove and Copy are called by one goroutine at a
// time (the engine's scheduler); Close may be called more than once.
//
// Cost: the vocabulary methods are table look-ups (no allocation);
// Tokenize allocates its result; Decode is the expensive call (a forward
// pass over the batch); Logits borrows a buffer and never copies.
type Model interface {
	// VocabSize is the number of token ids, which is also the length of
	// a Logits row.
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

	// ChatTemplate is the model's chat template (Jinja text from the
	// model file), or "" when the model has none.
	ChatTemplate() string

	// ContextSize is the number of cells of the cache, shared by all
	// sequences: the most positions all sequences together can hold.
	ContextSize() int

	// Sequences is the number of sequences the cache can hold at once.
	Sequences() int

	// BatchSize is the most entries one Decode takes.
	BatchSize() int

	// Decode runs the model over a batch of entries, each placing one
	// token of a sequence at a position. The entries of a sequence come
	// in position order and continue its cache exactly: the first is at
	// the number of positions the sequence holds. On error no sequence's
	// cache changes. A batch that does not fit the cache is an error
	// wrapping ErrContextFull.
	Decode(b *Batch) error

	// Logits returns the next-token logits after entry i of the last
	// successful Decode, which must have asked for them (Batch.Add with
	// logits set); VocabSize long. The slice is borrowed: the caller may
	// modify it in place, and different rows may be used by different
	// goroutines at once, until the next Decode, Remove, Copy or Close.
	Logits(i int) []float32

	// Remove drops the positions pos.. of sequence seq (pos 0: the whole
	// sequence), freeing its cells that no other sequence shares.
	Remove(seq, pos int) error

	// Copy makes sequence dst, which must be empty, share the positions
	// 0..n-1 of sequence src: the cells are shared, not duplicated. A
	// model that cannot share (a recurrent one) returns an error wrapping
	// ErrUnsupported.
	Copy(src, dst, n int) error

	// Close frees the model. It is safe to call more than once; every
	// other method is invalid afterwards.
	Close() error
}

// Batch is the input of Model.Decode: entries of (sequence, position,
// token, whether the logits after it are wanted). Its slices are reused
// from one step to the next (Reset), so that filling a batch does not
// allocate after the first steps.
type Batch struct {
	Seq    []int32
	Pos    []int32
	Token  []int32
	Logits []bool
}

// Len is the number of entries.
func (b *Batch) Len() int { return len(b.Token) }

// Reset empties the batch, keeping its storage.
func (b *Batch) Reset() {
	b.Seq, b.Pos, b.Token, b.Logits = b.Seq[:0], b.Pos[:0], b.Token[:0], b.Logits[:0]
}

// Add appends an entry and returns its index (the row to pass to
// Model.Logits when logits is set).
func (b *Batch) Add(seq, pos int, tok int32, logits bool) int {
	b.Seq = append(b.Seq, int32(seq))
	b.Pos = append(b.Pos, int32(pos))
	b.Token = append(b.Token, tok)
	b.Logits = append(b.Logits, logits)
	return len(b.Token) - 1
}
