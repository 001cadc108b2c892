// Package jsonkeys keeps generated JSON free of duplicate object keys.
//
// A grammar cannot say "all keys of an object are distinct", so a schema
// that allows free keys (additionalProperties, patternProperties,
// propertyNames) or json_object mode lets a model write {"a":1,"a":2}:
// valid by the grammar, read by validators as {"a":2}, so the document
// that passes validation is not the one that was written. A Guard follows
// the output as it grows and removes from each step's mask the tokens that
// would close a key its object already has.
//
// # Use
//
//	t := jsonkeys.NewTable(v)     // once per vocabulary: ~2 ms on 128k tokens; shared, immutable
//	g := t.NewGuard()             // once per sequence, beside its *mask.Matcher
//	for {
//		m.FillMask(bits)
//		if err := g.Filter(bits); err != nil { … }    // *DeadEndError: report it
//		tok := sample(logits masked by bits)
//		m.Accept(tok); g.Accept(tok)                   // every step mirrored, in the same order
//		(jump-forward: Accept the forced tokens in m and g)
//		if err := g.Check(m); err != nil {             // *DeadEndError (or g.Accept's
//			undo the commit in m and g                // *DuplicateKeyError on forced bytes)
//			ban tok; sample again                      // from the same logits, nothing decoded
//		}                                              // every token banned: report the error
//	}
//	// Near the token budget, instead of m.ShortestCompletion:
//	sc, err := jsonkeys.ShortestCompletion(m, g)
//	// then tokenize sc and Accept the tokens in m and g.
//
// Every Accept, AcceptBytes and Rollback of the matcher is mirrored on the
// guard (jump-forward batches, undone commits, lazy triggers: the guard
// starts where the matcher starts, and AcceptBytes takes the text after a
// trigger), so that g.Steps() == m.Tokens() throughout; a mark is a step
// count, as for the matcher. An error from g.Accept means the output is
// not JSON (*SyntaxError: the guard was put on a grammar whose sentences
// are not JSON texts) or that the step closes a duplicate key
// (*DuplicateKeyError: bytes added without Filter, such as the bytes the
// grammar forces after a sampled token); in both cases the guard is
// unchanged. Example_generate shows the whole loop with mask.Compile.
//
// # Semantics
//
// The output is read as one JSON text (RFC 8259: UTF-8, one value,
// whitespace around it). Keys are compared as decoded strings, the way
// encoding/json and the validator (santhosh-tekuri/jsonschema) decode
// them: escapes are resolved ("a" and "\u0061" are one key, surrogate
// pairs are one character), and a surrogate escape that is not part of a
// pair reads as U+FFFD. That is the coarsest reading of the common
// parsers (JavaScript and Python keep lone surrogates apart), so an output
// without duplicates here has none for any of them.
//
// Filter is exact: it clears a token iff scanning its bytes from the
// current output closes a key equal to an earlier key of the same object,
// before any syntax error — at the token's first quote or later, in the
// open object or in one the token opens, closes or returns to.
//
// # Dead ends
//
// Removing a duplicate can leave nothing: an object whose keys come from
// a small set (an enum of names, a narrow pattern) can run out of them
// while the grammar still offers ", another key". Filter alone would
// notice only when the last allowed token goes, after the comma and maybe
// part of the key have been decoded. Check prevents that: after each step
// that ends at a key position in question, it searches what the matcher
// allows for an unused key, and the engine undoes and redraws a step that
// leads to none. With Filter before and Check after every step, and the
// output starting at a viable point, every key position the output
// reaches can still be closed with an unused key, so Filter never empties
// the mask — except where the grammar itself requires a used key or more
// keys than are left: a grammar that forces a key the object already has,
// or more members than it has distinct names (jsonschema2gbnf's grammars
// do neither: free keys exclude the declared names in every spelling, and
// a minProperties that needs two free keys or more is rejected). Then no
// document exists, and the engine reports the
// *DeadEndError (or the *DuplicateKeyError of the forced bytes), with the
// JSON pointer of the object. Check gives up, returning nil, beyond
// MaxCheckSteps; the dead end then surfaces later as an error, never as a
// duplicate.
//
// # Cost
//
// Measured on the bench's JSON documents with Llama-3 tokens and the
// cases' grammars (BenchmarkBenchDocs, BenchmarkAccept; a loaded 2-core
// machine): Filter 0.1-0.2 µs per step at the median and 2-4 µs at the
// 99th percentile, at most 70 tokens scanned in a step; Check 0.03 µs at
// the median, 1-2 µs where it searches (after a comma, at a key's first
// character: about one step in three of indented JSON), 2-10 µs at the
// 99th percentile; Accept 30-50 ns per token. After warm-up nothing
// allocates per token but a new object's key list (once per key at
// most). ShortestCompletion costs one scan of the grammar's shortest
// completion (about 5 µs) unless that repeats a key (then 50-70 µs to
// lengthen a key). NewTable: 1-2 ms for Llama-3. Memory grows with the
// output: its bytes, keys and containers, and 80 bytes per step for
// Rollback.
//
// # Concurrency
//
// A Table is immutable and safe for concurrent use; a Guard is per
// sequence and not safe for concurrent use. Duplicates and the Table
// methods may be called from any goroutine.
package jsonkeys
