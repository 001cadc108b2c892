package gbnf

// Limits on what Parse accepts. Each keeps the parser, the analyses and the
// automaton built from a grammar bounded in time and memory; a grammar over
// a limit is rejected with an error that names the limit.
const (
	// MaxSourceBytes bounds the grammar text. A valid grammar parses at
	// about 30 MB/s on one core on BenchmarkParse's dense generated
	// grammar (the direct parser; the IR dominates: it allocates about
	// 30 bytes per source byte). An invalid one costs more: the direct
	// parser gives up where it finds the problem, and the participle path
	// (about 5 MB/s, 120 bytes allocated per source byte) reads the whole
	// source again for the error. So 4 MiB caps a hostile input at about a
	// second (0.75-1.1 s measured under load, for 4 MiB of dense rules whose
	// last one refers to an undefined rule), while leaving room far beyond
	// hand-written grammars and the grammars JSON Schema conversion
	// produces (tens of KB, at most 1.6 MB on JSONSchemaBench).
	MaxSourceBytes = 4 << 20

	// MaxRules bounds the number of rules. Rule ids are dense indexes
	// that the automaton uses in per-rule tables.
	MaxRules = 1 << 16

	// MaxDepth bounds the nesting of parentheses and the depth of a rule
	// body's node tree (groups, repetitions, sequences, alternations).
	// The parser (participle is recursive descent), the printer, the
	// analyses and the reference recognizer recurse once per level; 1000
	// levels use well under 10 MB of goroutine stack. Parentheses are
	// counted by the lexer, before the recursive parser runs, so that no
	// input can exhaust the stack.
	MaxDepth = 1000

	// MaxRepeat bounds m and n in {m}, {m,} and {m,n}. llama.cpp stops
	// at 2000 (it expands repetitions into copies of rules); the
	// automaton keeps a counter per repetition instead, so a larger bound
	// costs no states, only counter width.
	MaxRepeat = 100000

	// MaxRepeatProduct bounds the product of the bounds of repetitions
	// nested inside each other within one rule body (a repetition
	// without an upper bound counts its minimum, at least 1). Nested
	// counters multiply the number of distinct automaton configurations
	// along a chain: ((x{0,99}){0,99}){0,99} has about 10^6. llama.cpp
	// has the same kind of guard (its product limit is 2000).
	MaxRepeatProduct = 1_000_000

	// MaxTokenID bounds the id in <[id]>: ids are int32 in the IR.
	MaxTokenID = 1<<31 - 1

	// MaxErrors bounds how many errors one Parse reports.
	MaxErrors = 10
)
