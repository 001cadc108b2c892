// Package jsonschema2gbnf converts a JSON Schema into a GBNF grammar
// (llama.cpp's grammar format, read by package gbnf) whose sentences are
// JSON documents valid against the schema.
//
//	grammar, err := jsonschema2gbnf.Convert(schemaJSON)                    // strict, compact
//	grammar, err := jsonschema2gbnf.Convert(schemaJSON, jsonschema2gbnf.FlexibleWhitespace(0))
//	var warns []jsonschema2gbnf.Warning
//	grammar, err := jsonschema2gbnf.Convert(schemaJSON, jsonschema2gbnf.Lenient(&warns))
//
// # Contract
//
// Soundness: in strict mode (the default) every sentence of the grammar is
// a document that santhosh-tekuri/jsonschema (with format assertions on)
// accepts against the schema as CompileSchema compiles it. A keyword the
// grammar cannot enforce is an error naming the keyword and its JSON
// pointer (an *UnsupportedError, several of them sorted in an ErrorList);
// it is never skipped. Lenient mode relaxes such keywords instead (the
// grammar then accepts a superset for that part) and reports each as a
// Warning; validate the output against CompileSchema's schema.
//
// Completeness: the grammar accepts every valid document once it is
// written the way Format writes it. The policies that make a valid
// document's spelling unique are:
//
//   - Whitespace: none (compact, the default: fewest tokens), or with
//     FlexibleWhitespace one space, or one newline and up to maxIndent
//     spaces/tabs, after { [ , : and before } ]. No whitespace before , or
//     : and none around the top-level value.
//   - Key order: declared properties in schema order (the order of first
//     declaration over merged schemas; names only listed in required
//     follow in required order), then other keys. AnyPropertyOrder lifts
//     this for objects with at most MaxAnyOrderProperties declared
//     properties.
//   - Strings: unconstrained strings (and strings with only length
//     bounds) accept every JSON encoding, escaped surrogate pairs
//     ("\ud83d\ude00") included; a lone surrogate escape is not a
//     character and is never accepted. Strings constrained by enum,
//     const, pattern or format, and object keys whenever some key must be
//     excluded, accept the canonical encoding only: `\"` `\\`, the short
//     escapes \b \f \n \r \t, `\u00XX` (lowercase) for other control
//     characters, everything else (`/`, non-ASCII, U+2028) raw. A length
//     counts characters (code points): in canonical strings a character
//     outside the BMP is written raw, never as an escaped pair.
//   - Numbers: integers in canonical form (no leading zeros, no exponent,
//     no fraction; "-0" accepted), any size. Plain numbers accept JSON's
//     syntax with an exponent of at most MaxExponentDigits digits and a
//     fraction of at most MaxFractionDigits, which keeps every number
//     within what the validator can read (ValidatorMaxExponent). A number
//     with bounds is written in plain decimal notation (no exponent),
//     except a single bound of exactly 0 (the sign decides). type number
//     with an integer multipleOf also accepts a ".0…" fraction.
//   - Enum and const values of any JSON type are written canonically
//     (objects with their keys in the schema's order).
//
// # Keywords
//
// Loading: drafts 4, 6, 7, 2019-09 and 2020-12 (from $schema; without it
// 2020-12, falling back to draft-07 then draft-04 when the schema is only
// valid there). An anchor ($anchor, $dynamicAnchor, an id's fragment)
// declared twice in one schema resource is an *InvalidSchemaError (the
// validator would pick either declaration at random). Local $ref (JSON pointers, $defs/definitions, $anchor,
// draft-4/6/7 ids, recursion) are resolved; a $ref to another document is
// a *RemoteRefError: nothing is loaded from disk or network. The
// meta-schema validation is santhosh-tekuri's, so a pattern Go's regexp
// cannot compile (lookaround, backreferences) is an *InvalidSchemaError.
//
// OpenAPI 3.0's nullable: true is read as adding null to the schema's type
// and enum (CompileSchema reads it the same way, so validation agrees).
//
// Enforced exactly: type (arrays of types, integer vs number); enum and
// const (each candidate value is validated against the whole schema, so
// they combine exactly with anything); properties, required,
// additionalProperties (false, true, schema), patternProperties (keys are
// split by which patterns match them), propertyNames (patterns, formats,
// lengths, enum/const), minProperties/maxProperties (counted; a minimum
// needing two or more undeclared keys is unsupported, since the grammar
// cannot keep their names distinct); items, prefixItems, additionalItems,
// minItems, maxItems; contains/minContains without positional items;
// minLength/maxLength (counted repetition); pattern (Go regexp syntax,
// search semantics: unanchored unless ^/$); format date-time, date, time,
// duration, period, email, hostname, ipv4, ipv6, uuid, uri, iri,
// uri-reference, iri-reference, json-pointer, relative-json-pointer
// (formats the validator does not assert are annotations, except
// idn-email and idn-hostname, which have no grammar and are unsupported);
// minimum,
// maximum, exclusive* as exact digit-range grammars; multipleOf on
// integers (remainder automaton up to MaxMultipleOf) and 10^-d on numbers;
// allOf (merged); anyOf; oneOf (each branch excludes the branches it may
// overlap with, using the exact negation of their keywords); not, if/then/
// else, dependencies/dependentRequired/dependentSchemas (rewritten with
// exact negations and case splits); unevaluatedProperties/Items, each in
// its own scope: what its schema object and the subschemas it applies in
// place ($ref, $dynamicRef, allOf, the passing branches of anyOf/oneOf/
// if/then/else, triggered dependentSchemas) evaluated, never a sibling
// in a parent's allOf nor anything under not (see unevaluated.go).
// $dynamicRef and $recursiveRef are resolved by the dynamic scope where
// the target is the same on every evaluation path (see dynamic.go),
// never read as static references otherwise. Numbers of the schema
// beyond the validator's range are a *NumberRangeError, except enum
// values, which are dropped (ValidatorMaxExponent). Annotations (title,
// description, default, examples, unknown keywords) are ignored, as the
// validator ignores them.
//
// Unsupported (errors in strict mode): uniqueItems (except maxItems ≤ 1),
// multipleOf that is neither an integer nor 10^-d, format regex and
// uri-template, $dynamicRef/$recursiveRef whose target depends on the
// dynamic scope, unevaluatedItems with contains in its scope,
// not/oneOf/if whose negation needs a keyword without an
// exact negation (e.g. uniqueItems, multipleOf, additionalProperties) for
// values of a type the context allows, and string languages whose
// automaton exceeds MaxDFAStates (e.g. a URI format with maxLength 255).
//
// Sound subsets (documented choices, not errors): in a oneOf, where
// another branch requires a property p, documents of this branch that
// carry p with a value the other branch rejects only through keywords
// without an exact negation are not generated; unevaluatedProperties/
// Items where several branches of an anyOf with more than
// MaxAnnotatedAnyOf branches pass count what one of them evaluated; a
// date-time leap second
// only at 23:59:60 UTC; hostnames/e-mails in the common shapes that fit
// the length limits (see formats.go); uri hosts without percent-escapes.
//
// # Grammar shape
//
// Pieces used in many places are shared rules (ws, value, string, char,
// kchar, number, integer, …) so a token-mask compiler computes each once;
// rules are named after the schema location (JSON pointer) they come
// from. Length bounds stay counted repetitions (char{0,5000}); bounds
// above 100,000 are nested blocks, up to MaxRepeatBound; a maximum above
// MaxRepeatBound is treated as none. Excluding declared names from the
// keys of additional properties, and patterns combined with other
// constraints, use automata written as one rule per state; these are the
// largest parts of large grammars.
//
// # Cost and concurrency
//
// Convert, Format and CompileSchema are safe for concurrent use (no shared
// mutable state). Converting a typical schema takes about 0.4 ms (most
// of it santhosh-tekuri's load and meta-validation); over the strict
// schemas of the JSONSchemaBench sample p95 is about 9 ms, p99 about
// 25 ms, the largest about 0.1 s (`schemabench -runs 5`, a loaded 2-core
// machine). Within one conversion, the automata of equal patterns and
// their products are built once (a bounded memo). The
// limits below bound time and memory on any input; exceeding one is a
// *LimitError naming it and the JSON pointer (or, for a keyword the
// grammar could only approximate past a limit, an *UnsupportedError, a
// warning in lenient mode).
//
// # Limits
//
// The first group applies to the raw JSON before santhosh-tekuri compiles
// it (its draft 2020-12 compilation is quadratic in the subschemas), the
// rest while the grammar is built, as it grows. Measured on the 2-core
// development machine under load (wall clock); "live" is the peak heap
// the run added; "compiled" means the grammar was also parsed and compiled
// by mask against Llama-3:
//
//	limit                   value     bounds                                  worst case allowed, measured
//	MaxSchemaBytes          8 MiB     schema text                             an 8 MB enum stops at MaxGrammarBytes
//	                                                                          after 3.0 s, 90 MB live
//	MaxNestingDepth         200       JSON nesting, and expansion depth       items nested 199 deep, compiled: 0.3 s
//	MaxSubschemas           16,384    subschemas of a document                16,383 (draft-07): 0.2 s, 56 MB live
//	MaxSubschemas2020       4,096     the same under draft 2020-12's rules    4,095: 0.7 s (100,000 took > 60 s);
//	                                  (documents that read the same under     16,383 read as 2019-09: as draft-07
//	                                  2019-09 are compiled under its rules)
//	MaxProperties           4,096     names one properties keyword declares   4,096 properties, compiled: 1.5 s,
//	                                                                          89 MB live (10,000 hit mask.MaxStates
//	                                                                          after 5 s)
//	MaxNumberLength         1,000     characters of one JSON number           checked in microseconds
//	MaxExponentSum          10^6      decimal exponents of the numbers the    one 1e999999: 40 ms (a hundred took
//	                                  validator reads, summed                 7.4 s); beyond ValidatorMaxExponent a
//	                                                                          number is a NumberRangeError (or a
//	                                                                          dropped enum value)
//	MaxTerms                4,000     distinct schema combinations expanded   3,990 property schemas, compiled: 3.1 s,
//	                                                                          114 MB live
//	MaxGrammarBytes         4 MiB     grammar text, checked as rules are      a grammar of 4 MiB costs gbnf.Parse
//	                                  added                                   3.8 s and 640 MB (package gbnf)
//	MaxEnumValues           10,000    values of one enum                      2,400 values of 400 bytes stop at
//	                                                                          mask.MaxStates after 2.6 s
//	MaxAlternatives         4,096     branches of one anyOf/oneOf expansion   4,096 branches stop at MaxTerms, 0.2 s
//	MaxOneOfExclusions      256       negated branches per oneOf branch       not measured separately
//	MaxNegBranches          64        branches of one negation                not measured separately
//	MaxPatternProperties    64        patternProperties of one object         63 disjoint ones, compiled: 0.3 s
//	MaxPatternCombos        64        combinations of them one key can match  (same)
//	MaxCountedObjectStates  4,096     (property, count) states of an object   200 properties counted to 19, compiled:
//	                                  with minProperties/maxProperties        1.0 s, 50 MB live
//	MaxPatternBytes         64 KiB    one pattern                             a 60 KB alternation, compiled: 0.6 s,
//	MaxDFAStates            4,096     states of one string automaton          35 MB live
//	MaxDFAWork              100,000   automaton states built per conversion   (same)
//	MaxRepeatBound          10^6      lengths and item counts written         maxLength 1,000,000, compiled: 19 ms
//	                                  exactly
//	MaxBoundDigits          400       digits of a numeric bound               a 400-digit minimum, compiled: 22 ms
//	MaxMultipleOf           1,000     an integer multipleOf (one rule per     multipleOf 997, compiled: 0.2 s,
//	                                  remainder)                              39 MB live
//	MaxDecimalPlaces        30        d in a multipleOf of 10^-d              1e-30 in [0,1], compiled: 1 ms
//	MaxEnumeratedMultiples  256       multiples of a bounded range listed     256 multiples of 7, compiled: 1 ms
//	MaxDependencyKeys       6         dependency keys of an object (2^n       6 keys, compiled: 38 ms
//	                                  branches)
//	MaxAnyOrderProperties   8         AnyPropertyOrder (2^n rules)            8 properties, compiled: 54 ms
//	MaxIndentLimit          256       FlexibleWhitespace's indent run         256, compiled: 16 ms
package jsonschema2gbnf
