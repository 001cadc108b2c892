// Package cpu is llama.cpp's sampler chain in pure Go: the CPU path that
// picks a token from (grammar-masked) logits.
//
//	c, err := cpu.NewChain(cpu.Params{Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: 42})
//	tok := c.Sample(logits) // logits: one float32 per vocabulary id, not modified
//	c.Accept(tok)           // the token kept: history for penalties and DRY
//
// # Samplers and order
//
// The chain is llama.cpp's common_sampler: logit bias first, then the
// samplers of Params.Samplers in order (default DefaultOrder: penalties,
// dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature), then
// dist, which draws the token. Mirostat 1 or 2 replaces the order by
// temperature + mirostat, as in llama.cpp. Every sampler keeps llama.cpp's
// edge semantics: top-k ≤ 0 is off and top-k ≥ n keeps (and sorts) all;
// top-p ≥ 1 is off and top-p ≤ 0 keeps the most likely token; min-p keeps at
// least the top token; top-n-sigma ≤ 0 is off; XTC with a threshold above
// 0.5 is off; temperature ≤ 0 keeps only the first maximal logit, so
// Temperature 0 is greedy and penalties, DRY and bias still apply before it.
// When every filter in the order keeps the most likely token (all but
// typical-p and XTC), greedy skips them and takes the argmax directly.
//
// Params use Go zero values: 0 means off (mapped inside to llama.cpp's
// neutral values: top-p 1, typical-p 1, repeat penalty 1, …) or, for a
// sub-setting of a feature that is on, llama.cpp's default (RepeatLastN 64,
// DRYBase 1.75, DRYAllowedLength 2, XTCThreshold 0.1, MirostatTau 5,
// MirostatEta 0.1). NewChain rejects invalid settings with a *ParamError
// naming the field; a sampler that is on but missing from a custom order is
// an error too.
//
// # Parity with llama.cpp
//
// Each sampler follows the pinned llama.cpp (ollama v0.24.0,
// src/llama-sampling.cpp) operation by operation: float32 arithmetic and
// summation order, the candidate order each step leaves behind, and the
// random streams — every random step owns an mt19937 seeded with Seed, and
// uniform draws are libstdc++'s generate_canonical. So for the same seed and
// logits, the chain draws the same tokens as llama.cpp's own chain: the
// cgo test engine/llamacpp/sampling_parity_test.go finds every one of
// thousands of draws identical on stories260K, with and without penalties.
// The known differences: the order among exactly equal logits after a sort
// (unspecified in C++ too); mirostat's full-vocabulary softmax sums in
// float64 instead of llama.cpp's sorted float32 order (last bits only);
// DRY sequence breakers are token sequences (DRYSequenceBreakers derives
// them from strings with a tokenizer); the infill sampler, which needs a
// vocabulary, is not provided.
//
// Degenerate input: NaN logits count as -Inf; a +Inf logit is picked
// outright (the lowest such id); Sample returns -1 when no logit is
// finite (or there are none).
//
// # The akunu preset
//
// Params{Preset: "akunu"} is akunu's fixed pipeline (seed 000's order):
// repeat penalty over the last RepeatLastN tokens, once per distinct token,
// sign-aware → temperature (0: argmax) → softmax over the whole vocabulary
// → top-k (TopK, or 256 when TopK is 0) → min-p (p ≥ MinP·p_max) → top-p
// (the shortest prefix whose full-softmax mass reaches TopP) → renormalise
// → one uniform draw (mt19937, as dist) walked along the cumulative
// probabilities. Settings outside that pipeline are an error with this
// preset.
//
// # Cost and concurrency
//
// A Chain is one sequence: not safe for concurrent use. Sample allocates
// nothing once its buffers have grown to the vocabulary (the first call).
// When top-k comes first (the default order with penalties off) and the
// logits are float32, top-k selects straight from them in one read-only
// pass with a bounded heap and the rest of the chain sees k candidates:
// ≈ 50–100 µs for 128k logits on one core. Otherwise the candidates are materialised (one copy
// of the vocabulary); samplers that need probabilities over a large set
// (top-p, typical-p, XTC, top-n-sigma, dynamic temperature, mirostat
// without top-k before them) cost a softmax over it and, like llama.cpp,
// a sort when they must rank it all (top-p sorts only the best 256 unless
// their mass is short of p).
package cpu
