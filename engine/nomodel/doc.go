// Package nomodel samples sentences of a grammar without a language model:
// the engine's no-model mode, a schema-driven test-data generator (like
// json-schema-faker, but exact: every sentence is accepted by the grammar,
// and for a schema grammar validates against the schema).
//
// A Sampler has three modes. The first two follow the structure of what
// the grammar was made from; the third is structure-blind.
//
// # Schema mode (Params.Schema set: the default for schemas)
//
// The sampler walks the JSON document the schema describes and proposes
// every piece to the matcher (mask.Matcher.AcceptBytes at the piece's
// position). The grammar decides: a proposal it rejects is taken back
// (Rollback) and another is tried; after a few (proposalTries), the
// grammar chooses the value byte by byte (the fallback). So the output is
// a sentence of the grammar by construction, whatever the schema says, and
// the engine still validates it with santhosh-tekuri/jsonschema.
//
// Choices, each with the documented weights of Policy:
//
//   - Value type: uniform among the JSON types the schema allows and the
//     grammar accepts here ("number or null" is an even choice). A schema
//     without "type" counts as the types its keywords apply to
//     ("properties" without "type" is an object), if it has any.
//   - enum and const: uniform among the members the grammar accepts here.
//   - examples and default: with probability Policy.ExampleRate a value
//     whose schema has them takes one (uniform among examples and
//     default, skipping those the grammar rejects in context).
//   - anyOf and oneOf: one branch, uniformly, steers the value; the grammar
//     corrects what the branch alone would get wrong.
//   - Object: declared properties in declaration order, required ones
//     always, optional ones with probability Policy.OptionalRate each
//     (whether or not the object allows other keys); free keys (names
//     from patternProperties patterns or words, never a declared or
//     already used name) — a map draws its number of keys like an array's
//     length, an object with declared properties gets one or two with
//     probability Policy.ExtraKeyRate. Where the grammar wants more before
//     the object may close (dependentRequired, minProperties, a required
//     name it has not seen), the sampler adds what it allows. No key is
//     written twice in an object.
//   - Array: a length uniform over [ArrayMin, ArrayMax] ∩ [minItems,
//     maxItems] (the schema's bound wins where they do not meet); items
//     from prefixItems then items, one of them from contains.
//   - Length-aware policy: once the output passes a quarter of the byte
//     budget, or the nesting passes softDepth (8), optional properties,
//     free keys and array items above the minimum fade out (to none at
//     three quarters of the budget), so that recursive schemas stay small;
//     and no sentence exceeds the budget: a piece that would leave too
//     little room for a shortest completion is undone and the output is
//     completed along a shortest completion (Stop "budget").
//
// Values, by the first generator that applies:
//
//   - format: date-time and date within Policy.Window of Policy.Today
//     (the past for names like created_at, the future for expires_at or
//     due_date, 18 to 90 years back for birth dates), time, duration,
//     email, hostname, uri and uri-reference (real-looking names and
//     TLDs), uuid (v4), ipv4, ipv6, json-pointer;
//   - the property name (camelCase, snake_case and kebab-case are split
//     into words; the parent's name helps: a "name" in "items" is a
//     product name): first/last/full name, username, email, phone,
//     street, address, city, state, country, country code, postal code,
//     company, url, domain, title, job title, description-like text,
//     id, sku/code-like values, currency, color, language, version, tags;
//     numbers: price/amount/total (1-500, cents), quantity (1-10), age
//     (18-90), year, rating (1-5), percent/discount, latitude, longitude,
//     counts and sizes, ids — always inside the schema's minimum, maximum
//     (exclusive or not) and multipleOf;
//   - the title and description, when the name says nothing ("The
//     customer's e-mail address");
//   - pattern: a derivation from the pattern's own syntax tree
//     (regexp/syntax): an alternation picks a branch uniformly, a
//     repetition draws its count (uniform over small bounded ranges),
//     letter runs spell words in the class's case, digits are uniform;
//   - otherwise a few words, cut or padded into minLength and maxLength.
//
// The realistic values come from github.com/brianvoe/gofakeit/v7 (MIT),
// which has no locales: the values are English and US-shaped.
//
// # Grammar mode (no schema)
//
// The sampler derives a sentence from the grammar's rules
// (gbnf.Grammar): every alternation picks uniformly among the branches
// whose shortest sentence still fits the budget, x? is taken with
// probability Policy.OptionalRate, a repetition's count is uniform over
// its bounds (an unbounded one over min..min+ArrayMax-ArrayMin), a run
// of one character class is spelt from words (letters), digits or
// readable characters. Past half the budget, or softFrames (32) of
// nesting, the derivation closes: the branch with the shortest sentence
// (then the lowest derivation height), the fewest iterations. The
// sentence is then fed to the matcher, which must accept it. Grammars
// with token references (<[id]>) are sampled in uniform mode.
//
// # Uniform mode (Params.Uniform)
//
// The structure-blind sampler of earlier versions: each step either takes
// a step along a shortest completion of the output (a random byte of the
// first byte class of a shortest completion, or the end-of-generation
// token where the output is complete), or draws an allowed token at
// random. The probability of the first grows with the output
// (quadratically towards the byte budget) and with the current run of
// random steps, so free strings, numbers and repetitions end after a few
// steps with a thin tail, and nothing exceeds the budget. Random draws are
// proportional to a weight per token: words weigh most — a bare word after
// a quote, space or punctuation, a space-led word after a letter or digit
// — then punctuation, digits, letters, non-ASCII lead bytes and control
// bytes. Where at most smallSet (64) tokens are allowed the draw is among
// the allowed single bytes only. Its alternatives are weighted by the
// tokens each allows, not evenly (root ::= ident | "COUNT" almost never
// gives COUNT), and free keys can repeat; the engine redraws such
// sentences.
//
// # Vocabulary
//
// The grammar is compiled against Vocab, a fixed built-in vocabulary: every
// byte value as a token of its own (ids 0..255), about 330 common English
// words, each as "word", " word" and "Word" (uniform mode's words), and one
// end-of-generation token, "<|end|>". The structural modes report their
// output one byte per token (Tokens).
//
// # Invalid instances
//
// Schema.NearMiss turns a valid instance into one that breaks exactly one
// constraint (a missing required property, an extra property where none
// is allowed, a value past a bound, a string off its pattern, format or
// enum, a wrong type, an array too long or too short), each kind of break
// as likely as any other, verified with the validator to fail with a
// single error at the changed value for the intended keyword.
//
// # Reproducibility
//
// The same seed, grammar, schema and params give the same sentences, in
// every mode. Dates depend on Policy.Today, which defaults to the current
// UTC date: set it to reproduce dated instances on another day.
//
// # Cost and concurrency
//
// A Sampler is one sequence and not safe for concurrent use; samplers may
// share a Compiled and a Schema (immutable). On the bench's order schema
// (~600 bytes an instance) schema mode draws about 11,000 instances/s on
// one core of the loaded 2-core development machine (BenchmarkOrderSchema;
// about 280 small allocations an instance, mostly the generators'
// strings), grammar mode about 12,000/s, uniform mode about 2,000/s; with
// the engine's validation of each instance schema mode gives about
// 4,700/s (engine BenchmarkNoModel). PrepareSchema walks the schema once.
package nomodel
