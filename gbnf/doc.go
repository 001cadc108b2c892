// Package gbnf reads llama.cpp's GBNF grammars into an IR that the rest of
// structgen compiles, analyses and prints.
//
// Parse (or ParseWithRoot) turns GBNF source into a *Grammar: rules in
// definition order, each a tree of Nodes (literals, code point classes,
// sequences, alternations, bounded and unbounded repetitions, rule and
// token references). The grammar is normalized: class ranges sorted and
// merged, "" is OpEmpty, nested sequences and alternations flattened,
// one-element sequences and alternations unwrapped, "." a negated class
// with no ranges. String prints canonical GBNF that parses back to an
// equal grammar (Equal). Analyze computes nullability, first sets,
// minimum sentence lengths and reachability; LeftRecursion finds
// left-recursive cycles.
//
// Errors are an ErrorList of *Error values that print as "line:col: msg"
// (1-based line, 1-based byte column). Parse never panics, and every
// limit (MaxSourceBytes, MaxRules, MaxDepth, MaxRepeat, MaxRepeatProduct,
// MaxTokenID) is an error naming the limit.
//
// A Grammar returned by Parse is never modified afterwards and is safe for
// concurrent use; so is an Analysis. A valid grammar parses at about
// 30-70 MB/s on one core (BenchmarkParseCorpus, BenchmarkParseLarge: the
// converter's JSONSchemaBench grammars; 15 MB/s on small hand-written
// ones such as BenchmarkParse's JSON grammar, 40-50 µs for a median 1.6 KB
// converter grammar): a direct parser reads the tokens straight into the
// IR, and building the IR (a Node per element) and the collector's work
// on it are most of the cost. An invalid grammar goes through participle,
// the definition of the syntax and the source of every error, at about
// 5 MB/s. Analyses are linear in the grammar size times a few fixpoint
// rounds (rules are evaluated callees first, so a rule with 65,535
// alternatives is evaluated once, not once per callee).
//
// # Limits
//
// Measured on the 2-core development machine under load (wall clock);
// "live" is the peak heap the run added, "kept" the grammar Parse returns,
// "compile" is mask.Compile with a 257-token byte vocabulary or Llama-3:
//
//	limit             value       bounds                                worst case allowed, measured
//	MaxSourceBytes    4 MiB       grammar text: parse time and memory   4 MiB of dense rules: parse 0.1-0.2 s,
//	                              (the IR; for an invalid grammar the   130 MB allocated, 100 MB kept; the same with
//	                              direct parser's attempt, then the     an undefined rule in the last one: 0.75-1.1 s,
//	                              participle AST)                       630 MB allocated — the most any one input costs
//	MaxRules          65,536      rules (dense per-rule tables)         root ::= r0 | … | r65534: parse and compile
//	                                                                    1.9 s, 230 MB live (the parse: 0.05 s)
//	MaxDepth          1,000       nesting of groups and node trees      999 nested groups: parse and compile
//	                              (recursion depth everywhere)          (Llama-3) 12 ms
//	MaxRepeat         100,000     m, n in {m,n} (counter width)         "a"{100000}: compile and accept 100,000
//	                                                                    bytes in 3 ms
//	MaxRepeatProduct  10^6        product of nested bounds in one rule  ("ab"{0,1000} "c"){0,1000}: 100 KB walked
//	                              (counter configurations)              in a few ms
//	MaxTokenID        2^31-1      <[id]> (int32 in the IR)              —
//	MaxErrors         10          errors one Parse reports              —
//
// # Syntax
//
// The syntax is llama.cpp's (src/llama-grammar.cpp), written here in GBNF
// itself (testdata/grammars/40-gbnf.txtar holds the same grammar and
// checks it against this parser):
//
//	root      ::= ws (rule (nl ws rule)*)? ws
//	rule      ::= name sp "::=" ws alts
//	alts      ::= seq ("|" ws seq)*
//	seq       ::= (primary sp (postfix sp)*)*
//	postfix   ::= [*+?] | "{" sp int sp ("}" | "," sp (int sp)? "}")
//	group     ::= "(" ws galts ")"
//	galts     ::= gseq ("|" ws gseq)*
//	gseq      ::= (primary ws (gpostfix ws)*)*
//	gpostfix  ::= [*+?] | "{" ws int ws ("}" | "," ws (int ws)? "}")
//	primary   ::= literal | class | "." | token | name | group
//	literal   ::= "\"" ([^"\\] | escape)* "\""
//	class     ::= "[" ("^" member+ | first member*) "]"
//	first     ::= ([^\]\\^] | escape) ("-" cchar)?
//	member    ::= cchar ("-" cchar)?
//	cchar     ::= [^\]\\] | escape
//	escape    ::= "\\" ("x" hex{2} | "u" hex{4} | "U" hex{8} | [trn\\"\[\]\-])
//	token     ::= "!"? "<" ("[" int "]" | "|" [^>]+ "|") ">"
//	name      ::= [a-zA-Z0-9\-]+
//	int       ::= [0-9]+
//	hex       ::= [0-9a-fA-F]
//	sp        ::= ([ \t] | comment)*
//	ws        ::= ([ \t] | comment | nl)*
//	nl        ::= "\r"? "\n" | "\r"
//	comment   ::= "#" [^\r\n]*
//
// In words:
//
//   - A rule is name ::= alternatives. Names are letters, digits and "-"
//     in any order. A rule may be used before it is defined; a use of an
//     undefined rule is an error at the use.
//   - A newline ends a rule, except right after "::=" or "|" (the
//     alternatives go on) and anywhere inside parentheses. A "|" at the
//     start of a line is an error, as in llama.cpp.
//   - "#" starts a comment that runs to the end of the line (not inside
//     literals and classes). Blanks are spaces and tabs; "\r\n", "\r" and
//     "\n" are newlines.
//   - Literals "..." and classes [...] hold any character but an
//     unescaped closing quote or bracket (raw newlines included) and the
//     escapes \xHH \uHHHH \UHHHHHHHH (code points, not bytes: "\xE9" is
//     "é", two bytes of UTF-8), \t \r \n \\ \" \[ \] \-. Any other escape
//     is an error.
//   - In a class, "^" first negates it; a char followed by "-" and then
//     anything but "]" starts a range, so "-" is literal first, last, or
//     right after a range. An empty class [] or [^], and an inverted
//     range [z-a], are errors.
//   - Repetition: x* x+ x? x{m} x{m,} x{m,n}, with blanks inside the
//     braces; operators stack (x*? is (x*)?); a repetition needs an
//     element before it.
//   - Token references: <[id]> matches token id, !<[id]> any single token
//     but id, <|text|> the token whose text is <|text|> (resolved against
//     a vocabulary later; Token is -1 until then), !<|text|> any other.
//
// # Unicode
//
// Terminals are Unicode scalar values; a literal matches the UTF-8 bytes
// of its code points, a class one code point of any UTF-8 length.
// Surrogates (U+D800-U+DFFF) and values above U+10FFFF can never occur
// in UTF-8 text, so: as a literal char or a class member they are an
// error; in a class range only the scalar values are kept
// ([\u0000-\uFFFF] holds U+0000-U+D7FF and U+E000-U+FFFF, and prints
// back as one range), and a range with none is an error. Class ranges
// in the IR never hold surrogates or values above U+10FFFF. The source
// itself must be valid UTF-8 without NUL bytes.
//
// # Differences from llama.cpp
//
// The accepted syntax is llama.cpp's, with these differences:
//
//   - Repetition bounds: llama.cpp expands x{m,n} into copies of rules
//     and caps it: m over 2000 is an error, n over 2000 silently becomes
//     unbounded, and nested repetitions whose expansion passes 2000 rules
//     are an error. structgen keeps counters: m and n may be up to
//     MaxRepeat (100000), the bound is exact, and the product of nested
//     bounds is limited by MaxRepeatProduct (10^6). x{3,2} is an error
//     (llama.cpp's expansion runs away on it).
//   - Token references: llama.cpp accepts <text> with any text and
//     tokenizes it with the model's vocabulary (an error without one). We
//     keep <|text|> (special tokens such as <|im_end|>) by text, and
//     reject other <text> forms. <[id]> takes ids up to MaxTokenID.
//   - Left recursion is not a parse error: LeftRecursion reports it, and
//     the consumer decides (llama.cpp rejects it when building the
//     grammar).
//   - Errors are reported for [] and [^] (llama.cpp reads them as
//     nothing), surrogates and code points above U+10FFFF, invalid UTF-8
//     and NUL bytes in the source (llama.cpp decodes leniently or stops at
//     NUL), and the limits above.
//   - As in llama.cpp, a rule defined twice takes its last definition
//     (keeping the place of the first).
package gbnf
