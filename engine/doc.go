// Package engine runs the decode loop of structgen: prefill the prompt, then
// per step take the model's logits, mask them with the grammar (constrained
// steps) or sample them with Gumbel-max (unconstrained spans), and feed the
// chosen token back.
//
// The loop sees a language model only through the Model interface, so it is
// tested without cgo. The llama.cpp adapter (package engine/llamacpp, build
// tag llamacpp) is the only implementation that needs a C toolchain. Without
// a model (New(nil)), the engine samples the grammar itself: see package
// engine/nomodel.
//
//	e, err := engine.New(model, engine.WithSchema(schema))
//	res, err := e.Generate(ctx, "An order for three apples:", engine.WithSeed(1))
//	fmt.Println(res.Output, res.Stats.String())
//
// # Batching
//
// One model serves every generation of an engine at once. The model's cache
// holds Model.Sequences() sequences in ContextSize() cells (a unified KV
// cache); each generation takes a sequence, and every decode carries the
// next tokens of all running generations in one batch (continuous
// batching, as llama.cpp's server and vLLM do):
//
//   - Admission. Generate tokenizes the prompt, prepares the grammar's
//     forced start and first mask on the caller's goroutine, and queues the
//     generation. The scheduler admits queued generations at step
//     boundaries, first come first served, while there is a free sequence
//     and room in the cache for the prompt and the whole token budget (so
//     that no admitted generation can run out of cells halfway). A
//     generation that could never fit is an error at once (ErrContextFull);
//     with WithMaxQueue, one beyond the queue is ErrQueueFull.
//   - Batches. Each step decodes, within WithBatchTokens entries
//     (DefaultBatchTokens), first the committed tokens of every running
//     generation (the sampled token and whatever jump-forward added), then
//     chunks of the prompts being read: a long prompt is read over several
//     steps while the others keep streaming.
//   - Grammar work in parallel. After the decode, every generation that got
//     logits runs its step (mask, sampler, commit, jump-forward, budget
//     check, the next mask) on a pool of worker goroutines, one shared
//     mask.Compiled per grammar and a Matcher per generation; nothing on
//     this path allocates per token after warm-up (the output buffers grow
//     amortized).
//   - Leaving. A generation that ends (grammar, end-of-generation, budget,
//     error), whose context is done, or whose stream fails, leaves at that
//     step boundary and its sequence's cells are freed at once.
//   - Sharing. GenerateN decodes its prompt once and shares its cells
//     (Model.Copy, llama_memory_seq_cp) with the other choices. With
//     WithPromptCache, a finished generation's prompt stays in its
//     sequence, and a later generation that starts the same way (a
//     system prompt, a conversation) decodes only the rest; kept prompts
//     give way, least recently used first, when their sequences or cells
//     are needed.
//
// Streams are fed from the scheduler into a buffer per generation and
// handed to the stream function on the caller's goroutine, so a slow
// consumer gets longer pieces and never holds up the batch.
//
// # The loop of one generation
//
// Per step, with the logits of everything it committed:
//
//   - constrained (a grammar is active): the matcher fills the token mask;
//     if it allows nothing but end-of-generation, the output is complete
//     and the generation stops (StopGrammar) without another decode.
//     Otherwise the disallowed logits become -Inf and the CPU chain
//     (sampling/cpu) draws the token; where the mask allows every normal
//     token, Gumbel-max draws it instead, as in an unconstrained span;
//   - unconstrained (no grammar, or before a lazy trigger): Gumbel-max
//     (sampling/gpu) draws the token, with the chain's temperature, top-k,
//     top-p, min-p and repeat penalty. A chain using anything Gumbel-max
//     does not have (typical-p, DRY, mirostat, other penalties, a custom
//     order, logit bias) draws every token, as does WithGumbel(false);
//   - an end-of-generation token stops the generation (StopEOG); the mask
//     allows one only where the grammar can end.
//
// Tokens are committed before they are decoded, so that a commit can still
// be undone: the next batch holds the sampled token and whatever
// jump-forward added after it. The model's cache and the matcher never
// disagree: nothing decoded is ever rolled back within a generation.
//
// # Determinism
//
// A seed (WithSeed; choice i of GenerateN uses seed+i) fixes every random
// choice: the CPU chain is seeded per generation, and Gumbel-max noise is a
// function of the seed and the position. So the output is a deterministic
// function of the seed and the model's logits. What is guaranteed:
//
//   - No-model mode: the same seed, grammar and options give the same
//     output, whatever else runs.
//   - With a model, a seeded generation that runs alone (no other
//     generation in its batches, no prompt reused from WithPromptCache)
//     gives the same output every time, on the same machine, build and
//     thread count.
//   - With other generations in the same batches, llama.cpp computes the
//     logits with other matrix shapes and over more cache cells, and their
//     last bits can differ; a near-tie between two tokens can then flip and
//     the output differ from there on. It is still a valid sample of the
//     same distribution, and every constraint holds. The engine itself adds
//     no such effect: with a model whose logits do not depend on the batch
//     (the tests' fake model), every generation gives exactly what it gives
//     alone, under any interleaving of admission, finish and cancellation.
//
// # Jump-forward
//
// After a token, the bytes the grammar forces next (mask.Matcher.Forced)
// are tokenized together with the sampled token's bytes, so that the batch
// is split as the model's tokenizer would split the text (`"` sampled before
// a forced `name":` becomes `"name` `":` where those are tokens). The model's
// own tokenization is used where its tokens spell exactly the text (a
// SentencePiece tokenizer adds a leading space to a fragment; then the
// vocabulary's greedy tokenization is used). The last token of the batch is
// held back when a longer token that the grammar allows starts with its bytes
// (`":` before `[` could be `":[`): the model then chooses. The committed
// tokens are decoded in one batch (Stats.Forced counts them).
//
// # Budget and close-out
//
// WithMaxTokens bounds the generated tokens (by default the context left
// after the prompt within one sequence's share of the cache, see
// WithMaxTokens). With a grammar, every commit keeps room for a shortest
// completion of the output, tokenized: when a token would leave too little,
// it is undone and the shortest completion (mask.Matcher.ShortestCompletion)
// is committed instead, so that the output is complete and valid
// (StopBudget, Stats.CloseOut). A budget smaller than the grammar's
// shortest sentence is ErrBudget. Without a grammar the budget just stops
// the generation.
//
// # Unique keys
//
// A grammar cannot say "all keys of an object differ", so a schema with
// free keys (additionalProperties, patternProperties, propertyNames) would
// let a model write {"a":1,"a":2}, which validators read as {"a":2}. With a
// schema (or WithUniqueKeys(true) for a GBNF grammar of JSON) each
// generation has a key guard (package mask/jsonkeys) beside its matcher:
// every mask loses the tokens that would close a key the object already
// has; a token after which no unused key could follow is undone and another
// drawn from the same logits; near the budget the close-out completes
// without repeating a key. The guard costs about a microsecond per step.
//
// # Lazy grammars
//
// WithLazyTrigger lets the model write free text until one of the trigger
// strings appears (e.g. "<tool_call>" or "```json"); the grammar constrains
// what follows the trigger (Result.Output), and the generation stops when
// the grammar is complete. Text of the triggering token past the trigger goes
// to the grammar; if the grammar rejects it, the token is replaced by the
// tokens of its part up to the trigger.
//
// # Conversations, tools and reasoning
//
// WithMessages renders a conversation with the model's chat template
// (RenderChat runs its Jinja with gonja, as transformers does, or writes
// its family's format). WithTools describes functions in it and constrains
// the calls: ToolAuto is a lazy grammar whose trigger is the family's call
// marker (<tool_call>, a Llama 3 {"name" at the start of the answer,
// Mistral's [TOOL_CALLS]), ToolRequired a grammar from the first token;
// the calls are parsed into Result.ToolCalls and each is validated against
// its tool's schema. With a template that has a thinking block
// (<think>…</think>), the prompt opens it and the generation starts in
// free text; at the end-of-thinking marker (which the engine writes itself
// at the WithReasoning budget, or when only the room for the answer is
// left) the answer begins, and grammars, tools and stop strings apply from
// there. WithStop ends free text at a stop string. Result.Reasoning,
// Result.Content and WithPartStream's parts tell the thinking, the answer
// and the calls apart; a stream holds text back while it may still turn
// out to be a marker, a trigger or a stop string.
//
// # Validation
//
// With a schema (WithSchema) the output is validated against it with
// santhosh-tekuri/jsonschema (jsonschema2gbnf.CompileSchema) before Generate
// returns; a failure, possible only with WithLenient, comes back as a
// *ValidationError together with the Result. Errors of the matcher end the
// generation at once and are returned (they are sticky: nothing runs after
// them).
//
// # Stats
//
// Result.Stats has prefill and output tokens/s, the model's own decode speed,
// time to first token, the share of tokens committed by jump-forward and by
// close-out, the grammar work (masks, jump-forward, budget checks) and sampler
// time as shares of the decode phase, and with WithTokenMetrics the entropy
// and surprisal of every sampled token under the model's distribution (before
// the mask, temperature 1; in nats) and their perplexity.
//
// # Cost and concurrency
//
// An Engine is safe for concurrent use; with a model, concurrent
// generations share decodes (see Batching), in no-model mode they run in
// parallel. Each grammar or schema is converted and compiled once per
// engine (milliseconds; see mask.Compile) and kept in a cache bounded by
// bytes (WithGrammarCacheBytes, DefaultGrammarCacheBytes; least recently
// used out); concurrent requests for a grammar being compiled wait for that
// one compile (CacheStats counts hits, misses and evictions). With a
// model, a request whose grammar is not cached and takes more than a few
// milliseconds to compile is admitted and its prompt read while the
// grammar is converted and compiled (WithCompileOverlap, on by default);
// the automaton done
// (mask.Options.Deferred), its eager precomputation
// (mask.Compiled.Precompute) runs on the cache's goroutine, and the
// generation is first sampled once both are done (its prompt's last
// token waits; the other sequences of the batch go on), so it samples
// with the same precomputed states as after a plain compile. A grammar
// that does not compile fails the request with its error, as before. New builds
// the model's mask vocabulary (tens of milliseconds for 128k tokens); the
// first constrained generation also sorts the vocabulary for jump-forward.
// Per step and generation the grammar work costs microseconds to tens of
// microseconds and the chain 50-100 µs on 128k logits (Gumbel-max less),
// run in parallel across the batch: about 2-3% of a step of the
// 128k-vocabulary test model (SchedulerStats.GrammarShare). A sequence's
// next mask depends only on the tokens it committed, so the scheduler
// fills it while the model decodes the batch that holds them
// (WithMaskOverlap, on by default): a mask that costs more than usual (a
// grammar state reached for the first time, its token set computed then)
// delays the step only by what the decode does not hide
// (SchedulerStats.MaskWait). The scheduler's
// goroutines run while there is work and exit when the engine is idle.
package engine
