// Package mask compiles a GBNF grammar against a tokenizer vocabulary into
// a token-level automaton and, at each decoding step, tells exactly which
// tokens keep the output a prefix of a sentence of the grammar.
//
// In this package, g is a *gbnf.Grammar, v a *Vocab, c a *Compiled, m a
// *Matcher, q a state, n a node (the top of a stack), tok a token id.
//
// The vocabulary layer (token bytes, kinds, loaders, the token trie, the
// slices of character classes) is package vocab; Vocab, NewVocab,
// LoadVocab and the other vocabulary names here are aliases of it.
//
// # Use
//
//	v, _ := mask.LoadVocab("model.gguf")      // once per vocabulary
//	c, _ := mask.Compile(g, v)                 // once per grammar: milliseconds
//	m := c.NewMatcher()                        // once per sequence: cheap
//	for {
//		m.Apply(logits)                        // or m.FillMask(bits)
//		tok := sample(logits)
//		if err := m.Accept(tok); err != nil { … }
//		if m.Ended() { break }
//	}
//
// A *Compiled is safe for concurrent use by any number of goroutines; a
// *Matcher is per sequence and not safe for concurrent use.
//
// # Semantics
//
// A token is allowed iff appending its bytes keeps the output a prefix of
// some sentence of the grammar (tokens are bytes: a token may end inside a
// UTF-8 character). End-of-generation tokens are allowed iff CanEnd. Every
// allowed token can be completed to a sentence (no dead ends), as long as
// the vocabulary has tokens for the bytes the grammar needs. Terminals are
// Unicode scalar values: the output is always valid UTF-8 (see
// "Differences from llama.cpp"). Special tokens are produced only through
// token references (<[id]>, !<[id]>, <|text|>); unused tokens never.
//
// # How it works
//
// Lowering (lower.go) turns the grammar into frames, the units of the
// matcher's stack: the root rule, enough recursive rules to break every
// cycle of references (a feedback vertex set), rules used in several
// places (unless small, or one character such as a JSON string's with
// its escapes), and counted repetitions X{m,n} with large bounds
// (which count their iterations instead of being unrolled, so {0,5000}
// costs what {0,5} does). Everything else is inlined. Direct left recursion r ::= r α | β
// becomes r ::= β α*, tail self-recursion r ::= α r | β becomes
// r ::= α* β, and C1{m,n} C2 with C2 ⊆ C1 (hostname labels) becomes one
// counting frame whose last iteration must be in C2. A set of rules that
// refer to each other only in tail position (the states of a DFA, as the
// JSON Schema converter writes a multipleOf or a key pattern) is no
// frame at all: each rule is lowered once as a label, references to it
// are gotos, and every place that uses the set gets one copy of the
// labels it reaches, ending with what follows that place. So is an
// acyclic set of plain rules (characters and references only) that refer
// to each other only in tail position, to other rules only there or to
// small atoms, and that one rule enters (markTailGroups): a pattern's
// automaton under a length bound, a rule per state and character count.
//
// Each frame is compiled (automaton.go) to a deterministic automaton over
// byte classes, calls of other frames and token references (Glushkov
// positions, subset construction, Hopcroft minimization), with states that
// cannot finish removed.
//
// A configuration is a graph-structured stack (stack.go): the tops, each a
// state with its repetition counter and a set of predecessor nodes. Tops
// with the same state and counter are merged, so ambiguity costs nodes,
// not parses; recursion over predecessors visits each node once.
//
// The mask of a configuration is the union over its tops of a few cached
// token sets (walk.go, pwalk.go). For a top state q, level 1 is every
// token that stays inside q's frame (possibly pushing other frames
// above it), found by walking the vocabulary's token trie; it is computed
// for every state that can be a stack top or a return state,
// compositionally: a callee's tokens are walked once and shared by
// every state that calls it. A state that loops over a wide character
// class (a JSON string body, an identifier, free text), or leads into
// such a loop, takes most of its level 1 from the vocabulary's slice of
// that class (vocab.Slice: the tokens inside the loop and the trie nodes
// where a token can leave it, made once per vocabulary and class) and
// walks only the exits (slice.go; the walk of the exits from the loop is
// shared by every state that leads into it, and in the eager phase so is
// each walk below a byte that leaves the loop, by the state it leads to;
// a state that mostly leads into the loop takes the loop's tokens and
// exits by their first byte, vocab.FirstByteSet); so does a state inside a
// UTF-8 character of such a loop (a mid-character slice, vocab.MidSlice:
// the tokens that finish the character and go on in the loop), and a
// state that steps on a class through a chain of states that ends
// without a loop (an open chain: a pattern under a length bound), which
// takes the slice's tokens of at most the characters left and walks each
// exit from the chain's state at its character count, and a state of a
// region, states that lead each other on every character of a class
// (the states of a match inside a string; a key that must not match a
// bounded pattern), which takes the slice's tokens and walks each exit
// from the state its characters lead to (region.go). The trie nodes where q's
// frame can end while
// the token goes on (cross points, kept only where a byte of the frame's
// follow set comes next) continue in the frame below, level 2, and so on;
// deeper levels are keyed by the states and counter classes they looked
// at and cached in the Compiled: the eager phase computes those below
// every stack top while its budget lasts (for the return states of the
// calls: one pop deep, two, …; for a repetition frame's top, each class
// of its counter), the rest are computed on first use. In a
// repetition frame level 1 is computed once with a symbolic counter,
// recording each token's number of iterations, and filtered for the
// actual counter.
//
// # Cost
//
// Compile: lowering and automaton construction (under half a
// millisecond for half of the JSONSchemaBench grammars, under 8 ms for
// 95% and 27 ms for 99% of them, about 0.4 s for the largest, 167,669
// states),
// then the level-1 sets until DefaultEagerWork units of work are done
// (about 27 ms of one core; work is counted, not timed, so the same
// grammar gets the same precomputed states on any machine under any
// load); the root's start goes first whatever the budget (every
// generation's first mask needs it), then the states whose walks look
// expensive, nearest the start first, so that what is left to first use
// is cheap to compute then. With Options.Deferred, CompileWith stops after the automaton
// (about a fifth of a median compile) and Compiled.Precompute runs the
// same eager part later, on another goroutine — the engine overlaps it
// with reading the prompt and starts sampling once it is done
// (Compiled.Precomputed); a matcher that needs a state meanwhile computes
// it itself, waiting for at most one batch of Precompute's walks (it
// lets such computations go first). This follows a one-off
// vocabulary preparation (the token trie, the JSON-string slice and its
// tokens by length: ~66 ms for Llama-3, PrepareVocab). FillMask: one copy
// of a bitset (V/8 bytes) plus a few small sets, about a microsecond; a
// first use of a state or a deeper context costs its walk
// (Compiled.LazyWork counts it, Compiled.LazyTime times it: over random
// generations right after compile on the JSONSchemaBench sample, half the
// grammars compute nothing on first use, and the most one step computed
// is under 450 units in 90% of them, under 1,900 units (80–100 µs) in
// 95% and under 9,200 (130–170 µs on the machine of stop 27, 210–220 on
// the slower one of stop 29) in 99%; nearly every grammar above 100 µs is
// one whose budget ran out). Such a computation is bound by cache misses
// on the trie, which the work before it has evicted; a walk from several
// scattered nodes reads their records first, with loads that overlap
// (vocab.Trie.Gather). Accept: stepping the configuration over the
// token's bytes.
// After warm-up neither allocates, except to grow the matcher's history
// up to its bound and, when the parse stack has doubled, to compact it
// (see Limits).
//
// # Limits
//
// Every resource a grammar, a vocabulary or an output can make this
// package use is bounded by a named constant; going past one is an error
// that names it — a *Error (with line:col) from Compile, a *LimitError
// (with the step and byte; errors.Is ErrTooAmbiguous) from a Matcher,
// a *VocabFileError from LoadVocab — never a panic, a hang or an
// unbounded allocation. Grammar text is bounded first by package gbnf's
// limits. Measured on the 2-core development machine while other work
// loaded it (times are wall clock, so indicative), Llama-3 vocabulary
// unless said; "live" is the peak heap above the heap before the run:
//
//	limit         value     bounds                                     worst case allowed, measured
//	MaxPositions  2^20      positions (byte ranges, calls, token refs)  a 250 KB literal (250,000 positions and
//	                        of one frame after inlining                 states): compile 0.75 s, 172 MB live; a 1 MB
//	                                                                    literal stops at MaxStates after 2.1 s
//	MaxStates     2^18      automaton states (construction time and     65,536 states ([ab]* "a" [ab]{15}): 0.2 s,
//	                        memory; each may need a trie walk)          50 MB live; 2^18 needed: the error after
//	                                                                    0.5 s, 118 MB live
//	MaxConfig     4,096     parse-stack tops of one configuration       steps over about 1,000 tops take up to 7 ms;
//	                                                                    MaxStepWork mostly ends such growth first
//	MaxStepWork   2^18      work of one step: one byte of Accept or     a byte at the budget takes 2–3 ms (s ::= "a"
//	              units     AcceptBytes, or the new plans of one        s s | "": byte 513 is refused); a mask at
//	                        FillMask (first-use walks included)         the budget 3–30 ms (loaded machine)
//	MaxStackSize  2^20      parse-stack nodes and links kept live       600,000 nested brackets: refused at byte
//	                                                                    524,318 after 0.75 s, 130 MB live
//	MaxRollback   1,024     steps Rollback can undo (the history kept)  at most 2,049 configurations: 200,000 steps
//	                                                                    of ("a"{1000} | "aa"{499}){1000} keep
//	                                                                    32 MB live (≤ 100 MB at MaxConfig tops)
//	MaxMinLen     2^62-1    MinCompletion's arithmetic (saturates)      exact below; 10^11 reported as 10^11
//	MaxVocabSize  2^21      token ids of a vocabulary                   (the largest real ones have ~260,000)
//	MaxTokenLen   4,096     bytes of one token; Accept steps each byte  a token costs at most its length times
//	                                                                    MaxStepWork
//
// Vocabulary files are read whole up to 256 MiB (tokenizer.json,
// vocab.json, merges) and GGUF headers are checked by structure before
// they are decoded (internal/ggufcheck: keys ≤ 64 KiB, arrays ≤ 2^24
// elements, every length within the file); a GGUF's per-token arrays
// must have the vocabulary's length and its metadata must end a file
// without tensors. Indirect left recursion is an error naming the cycle
// of rules. A vocabulary keeps at most vocab.MaxSlices slices (and
// vocab.MaxMidSlices mid-character ones); past that, a new class's
// slice takes the place of the one used least recently. The eager part
// of Compile stops after DefaultEagerWork units or, as a safety net,
// DefaultEagerTimeout (Options): a bound on precomputation, not on an
// input.
//
// Matchers keep no more than they need: the history beyond MaxRollback
// is dropped as the output grows, and the parse stack is compacted to
// what the kept history reaches whenever it has doubled (also between
// the bytes of one AcceptBytes), so a generation of a million bytes of
// ("a"{1000} | "a"{999}){1000} runs in 28 MB. Nested counted
// repetitions whose counts form one interval are folded into one counter
// at compile time ((X{0,50}){0,50} is X{0,2500}): they were the most
// ambiguous grammars, tracking one configuration per split of the
// output. The adversarial suite (testdata/adversarial) holds the inputs
// each limit was measured on, with their bounds.
//
// # Differences from llama.cpp
//
//   - Direct left recursion is supported (llama.cpp rejects it); indirect
//     left recursion is rejected as in llama.cpp.
//   - Only valid UTF-8 is produced. llama.cpp's decoder reads the bytes
//     F5–FF as lead bytes of code points above U+10FFFF (and surrogate
//     encodings as code points), which its negated classes then accept;
//     so inside a JSON string llama.cpp allows the 11 single-byte tokens
//     F5–FF of the Llama-3 vocabulary, and this package does not.
//   - A token reference to an end-of-generation token is an error: the end
//     of the grammar allows those tokens.
package mask
