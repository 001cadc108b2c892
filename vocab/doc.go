// Package vocab is the vocabulary layer of structgen: a tokenizer's
// tokens as raw bytes, with a kind per token and the end-of-generation
// ids, and the loaders that read them from GGUF files, Hugging Face
// tokenizer.json files and GPT-2 encoder.json + vocab.bpe folders.
//
// It knows bytes and token ids only, no grammars: package mask compiles
// grammars against a *Vocab, and every grammar compiled against one
// vocabulary shares what is derived from it once and cached in the
// Vocab: the token trie (Trie, built on first use: about 60 ms for the
// 128k Llama-3 vocabulary) and the slices of character classes (Slice:
// the tokens inside a loop over a class and where tokens leave it, one
// pass over part of the trie per class, at most MaxSlices kept per
// vocabulary; and the same from inside a character, MidSlice, at most
// MaxMidSlices kept; past a bound the least recently used goes).
//
// In this package, v is always a *Vocab, id a token id (int32) and k a
// TokenKind.
//
// A *Vocab is immutable after construction and safe for concurrent use;
// so are its Trie and Slices.
package vocab
