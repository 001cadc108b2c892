// Package nomodel samples sentences of a grammar without a language model:
// the engine's no-model mode, a schema-driven test-data generator (like
// json-schema-faker, but exact: every sentence is accepted by the grammar,
// and for a schema grammar validates against the schema).
//
// # Vocabulary
//
// The grammar is compiled against Vocab, a fixed built-in vocabulary:
//
//   - every byte value as a token of its own (ids 0..255), so every
//     sentence of every grammar can be produced, non-ASCII text and
//     escapes included;
//   - about 330 common English words, each as "word", " word" and "Word", so
//     that free strings read like (nonsense) text rather than byte soup;
//   - one end-of-generation token, "<|end|>".
//
// # Policy
//
// Each step either takes a step along a shortest completion of the output
// (a random byte of the first byte class of a shortest completion, or the
// end-of-generation token where the output is complete), or draws an
// allowed token at random. The probability of the first grows with the
// output (quadratically towards the byte budget) and with the current run of
// random steps, so free strings, numbers and repetitions end after a few
// steps with a thin tail, and nothing exceeds the budget: when a token would
// leave too few bytes (or tokens) for a shortest completion, it is undone
// and a shortest completion is appended.
//
// Random draws are proportional to a weight per token: words weigh most —
// a bare word after a quote, space or punctuation, a space-led word after a
// letter or digit, so that free text reads "quiet river" rather than
// "quietriver" or " quiet" — then punctuation, digits, letters, non-ASCII
// lead bytes and control bytes. Where at most smallSet (64) tokens are allowed — the next letter
// of an enum value, true or false, a digit or the end of a number, a
// pattern's character class — the draw is among the allowed single bytes
// only, so that values spelled by a word token ("paid") are not favoured
// over the others ("pending").
//
// Numbers can still have exponents (JSON allows 1e999), rarely and with a
// few digits.
//
// # Cost and concurrency
//
// A Sampler is one sequence and not safe for concurrent use; samplers may
// share a Compiled. After warm-up a sentence of the bench's order schema
// (~420 bytes) takes 0.15-0.25 ms on one core (BenchmarkOrderSchema: 4,000
// to 6,700 instances/s on the loaded 2-core development machine) and
// allocates nothing. Vocab is built once, shared and
// immutable.
package nomodel
