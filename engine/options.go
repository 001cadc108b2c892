package engine

import (
	"fmt"
	"time"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/sampling/cpu"
)

// Limits on options.
const (
	// MaxTokensLimit bounds WithMaxTokens: no context window of the models
	// this library targets holds 2^24 positions, and a larger budget is a
	// mistake rather than a wish.
	MaxTokensLimit = 1 << 24
	// MaxTriggers bounds the lazy-grammar triggers: each generated token
	// is checked against every trigger, and real tool-call formats have
	// one or two.
	MaxTriggers = 16
	// MaxTriggerLen bounds one trigger, in bytes: triggers are markers
	// such as "```json" or "<tool_call>".
	MaxTriggerLen = 256
	// MaxBytesLimit bounds WithMaxBytes (no-model mode's byte budget).
	MaxBytesLimit = 16 << 20
	// MaxBatchTokensLimit bounds WithBatchTokens: llama.cpp sizes its
	// compute buffers for a full batch (512 KiB of logits per entry on a
	// 128k vocabulary); the model's own BatchSize caps it further.
	MaxBatchTokensLimit = 1 << 16
	// MaxQueueLimit bounds WithMaxQueue: a waiting generation holds its
	// prompt's tokens and its compiled grammar's matcher.
	MaxQueueLimit = 1 << 20
	// MaxStops bounds the stop strings of a generation, MaxStopLen each
	// one's bytes: every token of free text is searched for each of them
	// in a window of MaxStopLen bytes.
	MaxStops   = 16
	MaxStopLen = 256
)

// Whitespace says how a JSON Schema's grammar lays out whitespace.
type Whitespace int

const (
	// Compact allows no whitespace between JSON tokens (the fewest tokens
	// for a model to write; the default).
	Compact Whitespace = iota
	// Flexible allows one space, or a newline and an indentation of up to
	// jsonschema2gbnf.DefaultMaxIndent columns, between JSON tokens: what
	// pretty-printers write.
	Flexible
)

// String returns "compact" or "flexible".
func (w Whitespace) String() string {
	switch w {
	case Compact:
		return "compact"
	case Flexible:
		return "flexible"
	}
	return fmt.Sprintf("Whitespace(%d)", int(w))
}

// ParseWhitespace parses "compact" or "flexible".
func ParseWhitespace(s string) (Whitespace, error) {
	switch s {
	case "compact":
		return Compact, nil
	case "flexible":
		return Flexible, nil
	}
	return 0, fmt.Errorf("unknown whitespace mode %q (want compact or flexible)", s)
}

// An Option configures an Engine (New: the defaults of every generation)
// or one generation (Generate: on top of the defaults). Options are
// validated: an invalid value makes New or Generate return an
// *OptionError. Later options override earlier ones.
type Option func(*options) error

// OptionError reports an invalid option value.
type OptionError struct {
	Option string // e.g. "WithMaxTokens"
	Msg    string
}

func (e *OptionError) Error() string { return "engine: " + e.Option + ": " + e.Msg }

type options struct {
	// The constraint: at most one of grammar and schema.
	grammar    string
	schema     []byte
	whitespace Whitespace
	lenient    bool
	strictObj  bool
	anyOrder   bool

	sampling  cpu.Params
	seed      uint32
	seedSet   bool
	maxTokens int // 0: the context left after the prompt
	maxBytes  int // no-model mode; 0: nomodel.DefaultMaxBytes
	stream    func([]byte) error
	triggers  []string
	chat      bool
	system    string
	noJump    bool
	noOverlap bool
	// noCompileOverlap: the grammar is compiled before the prompt is read
	// (WithCompileOverlap(false))
	noCompileOverlap bool
	metrics          bool
	stepTimes        bool
	noGumbel         bool

	choiceStream func(int, []byte) error
	uniqueKeys   int8 // WithUniqueKeys: 0 default (schemas on), 1 on, -1 off
	partStream   func(int, Part, []byte) error

	// Conversations (chat.go, tools.go, phases.go).
	messages    []Message
	tools       []Tool
	toolChoice  ToolChoice
	stops       []string
	thinkOff    bool
	thinkBudget int
	// Set by the engine for tool constraints: the triggers are part of
	// the grammar's sentences (inclusive) and count only at the start of
	// the answer (anchored).
	triggerIncl     bool
	triggerAnchored bool
	toolSpec        *toolSpec // the tool constraint (ToolAuto, ToolRequired)
	thinkEnd        string    // the end-of-thinking marker: the generation starts thinking

	// no-model mode
	uniform bool
	policy  nomodel.Policy

	eng engineOptions // New only
}

// engineOptions are the settings of an Engine (New), not of a generation.
type engineOptions struct {
	batchTokens    int
	maxQueue       int
	cacheBytes     int64
	promptCache    bool
	compileTimeout time.Duration
}

func defaultOptions() options {
	return options{sampling: cpu.LlamaDefaults(), policy: nomodel.DefaultPolicy(),
		eng: engineOptions{cacheBytes: DefaultGrammarCacheBytes, compileTimeout: DefaultCompileTimeout}}
}

func (o *options) apply(opts []Option) error {
	for _, opt := range opts {
		if opt == nil {
			return &OptionError{Option: "Option", Msg: "nil option"}
		}
		if err := opt(o); err != nil {
			return err
		}
	}
	return nil
}

// WithGrammar constrains the output to a GBNF grammar (start rule root).
// It replaces a schema set earlier; "" removes the constraint.
func WithGrammar(gbnf string) Option {
	return func(o *options) error {
		o.grammar, o.schema = gbnf, nil
		return nil
	}
}

// WithSchema constrains the output to a JSON Schema (converted with
// jsonschema2gbnf); the final output is validated against the schema. It
// replaces a grammar set earlier.
func WithSchema(schema []byte) Option {
	return func(o *options) error {
		if len(schema) == 0 {
			return &OptionError{"WithSchema", "empty schema"}
		}
		o.schema, o.grammar = append([]byte(nil), schema...), ""
		return nil
	}
}

// WithWhitespace sets the whitespace of schema grammars (default Compact).
func WithWhitespace(w Whitespace) Option {
	return func(o *options) error {
		if w != Compact && w != Flexible {
			return &OptionError{"WithWhitespace", fmt.Sprintf("unknown mode %d", int(w))}
		}
		o.whitespace = w
		return nil
	}
}

// WithLenient makes schema conversion relax the keywords a grammar cannot
// enforce instead of rejecting them (jsonschema2gbnf.Lenient); the
// warnings are in Result.Warnings. The output is still validated against
// the schema, so a lenient generation can end in a *ValidationError.
func WithLenient(on bool) Option {
	return func(o *options) error { o.lenient = on; return nil }
}

// WithForbidAdditionalProperties makes schema objects accept only the
// properties they name (jsonschema2gbnf.ForbidAdditionalProperties).
func WithForbidAdditionalProperties(on bool) Option {
	return func(o *options) error { o.strictObj = on; return nil }
}

// WithAnyPropertyOrder lets small schema objects list their properties in
// any order (jsonschema2gbnf.AnyPropertyOrder).
func WithAnyPropertyOrder(on bool) Option {
	return func(o *options) error { o.anyOrder = on; return nil }
}

// WithSampling sets the sampler chain (default cpu.LlamaDefaults()). Its
// Seed is overridden by WithSeed when both are given. Constrained steps
// always use this chain; unconstrained spans use Gumbel-max with the same
// temperature, top-k, top-p, min-p and repeat penalty when the chain uses
// nothing else (see the package documentation).
func WithSampling(p cpu.Params) Option {
	return func(o *options) error {
		if _, err := cpu.NewChain(p); err != nil {
			return &OptionError{"WithSampling", err.Error()}
		}
		o.sampling = p
		return nil
	}
}

// WithSeed seeds every random choice of a generation: the same seed,
// model, prompt and options give the same output. Without it each
// generation draws a seed (reported in Result.Seed).
func WithSeed(seed uint32) Option {
	return func(o *options) error { o.seed, o.seedSet = seed, true; return nil }
}

// WithMaxTokens bounds the generated tokens (0: the context left after
// the prompt within one sequence's share of the model's cache,
// ContextSize/Sequences, or all the context left when the prompt alone
// fills that share; larger values are cut to the context left). A
// generation reserves its prompt and budget in the cache when it is
// admitted, so that it never runs out of cells halfway. A constrained generation
// closes out before the budget runs out, so its output stays valid.
func WithMaxTokens(n int) Option {
	return func(o *options) error {
		if n < 0 || n > MaxTokensLimit {
			return &OptionError{"WithMaxTokens", fmt.Sprintf("%d out of range [0, %d]", n, MaxTokensLimit)}
		}
		o.maxTokens = n
		return nil
	}
}

// WithMaxBytes bounds the output of no-model mode in bytes (0:
// nomodel.DefaultMaxBytes). It has no effect with a model.
func WithMaxBytes(n int) Option {
	return func(o *options) error {
		if n < 0 || n > MaxBytesLimit {
			return &OptionError{"WithMaxBytes", fmt.Sprintf("%d out of range [0, %d]", n, MaxBytesLimit)}
		}
		o.maxBytes = n
		return nil
	}
}

// WithStream calls fn with each piece of output as soon as it is final
// (a piece may end inside a UTF-8 character). The slice is valid only
// during the call. An error from fn stops the generation and is returned.
func WithStream(fn func(piece []byte) error) Option {
	return func(o *options) error { o.stream = fn; return nil }
}

// WithLazyTrigger makes the grammar lazy: the model writes free text
// (sampled with Gumbel-max) until the output contains one of the trigger
// strings, and the grammar constrains what follows the trigger. Without
// triggers (the default) the grammar applies from the first token.
func WithLazyTrigger(triggers ...string) Option {
	return func(o *options) error {
		if len(triggers) > MaxTriggers {
			return &OptionError{"WithLazyTrigger", fmt.Sprintf("%d triggers, more than %d", len(triggers), MaxTriggers)}
		}
		for i, t := range triggers {
			if t == "" {
				return &OptionError{"WithLazyTrigger", fmt.Sprintf("trigger %d is empty", i)}
			}
			if len(t) > MaxTriggerLen {
				return &OptionError{"WithLazyTrigger", fmt.Sprintf("trigger %d is %d bytes, more than %d", i, len(t), MaxTriggerLen)}
			}
		}
		o.triggers = append([]string(nil), triggers...)
		return nil
	}
}

// WithChat wraps the prompt in the model's chat template as one user
// message (after a system message, if system is not empty), ready for the
// assistant's answer. The model must have a chat template of a family the
// engine knows (see FormatChat).
func WithChat(on bool, system string) Option {
	return func(o *options) error { o.chat, o.system = on, system; return nil }
}

// WithMessages makes the prompt a conversation rendered in the model's
// chat format (RenderChat), ready for the assistant's answer; Generate's
// prompt must then be "". With WithTools the tools are described in it.
// A model whose template has a thinking block (<think>…</think>) thinks
// before it answers; see WithReasoning.
func WithMessages(msgs ...Message) Option {
	return func(o *options) error {
		if err := checkMessages(msgs); err != nil {
			return err
		}
		o.messages = append([]Message(nil), msgs...)
		return nil
	}
}

// WithTools gives the model functions to call (with WithMessages or
// WithChat; see RenderChat for how they are described). With ToolAuto the
// model writes free text or calls: from the family's call marker on
// (<tool_call>, a Llama 3 {"name" at the start of the answer, Mistral's
// [TOOL_CALLS]) a lazy grammar over the tools' schemas constrains the
// calls; with ToolRequired the calls are constrained from the first token.
// The calls are parsed into Result.ToolCalls, each validated against its
// tool's parameters schema. With ToolNone the tools are only described.
// A grammar or schema (WithGrammar, WithSchema) goes with ToolNone only.
func WithTools(tools []Tool, choice ToolChoice) Option {
	return func(o *options) error {
		if err := checkTools(tools); err != nil {
			return err
		}
		if choice.Mode < ToolAuto || choice.Mode > ToolNone {
			return &OptionError{"WithTools", fmt.Sprintf("unknown mode %d", choice.Mode)}
		}
		if choice.Name != "" && choice.Mode != ToolRequired {
			return &OptionError{"WithTools", "a named function needs ToolRequired"}
		}
		o.tools, o.toolChoice = append([]Tool(nil), tools...), choice
		return nil
	}
}

// WithStop ends the generation where the free text of its answer contains
// one of the strings, which is not part of the result (OpenAI's and
// Ollama's stop). Stop strings apply to free text only: not to the
// thinking block, nor inside a grammar's output, which the grammar ends.
func WithStop(stops ...string) Option {
	return func(o *options) error {
		if len(stops) > MaxStops {
			return &OptionError{"WithStop", fmt.Sprintf("%d stop strings, more than %d", len(stops), MaxStops)}
		}
		for i, s := range stops {
			if s == "" {
				return &OptionError{"WithStop", fmt.Sprintf("stop string %d is empty", i)}
			}
			if len(s) > MaxStopLen {
				return &OptionError{"WithStop", fmt.Sprintf("stop string %d is %d bytes, more than %d", i, len(s), MaxStopLen)}
			}
		}
		o.stops = append([]string(nil), stops...)
		return nil
	}
}

// WithReasoning sets how a reasoning model thinks (with WithMessages or
// WithChat, when the chat template has a thinking block such as
// <think>…</think>). On (the default), the prompt opens the block, the
// model thinks in free text (sampled like an unconstrained span, no
// grammar) and the grammar, tools and stop strings apply from the
// end-of-thinking marker on; Result.Reasoning holds the thinking. budget >
// 0 bounds the thinking in tokens: at the budget the engine writes the
// end marker itself. Off, the prompt holds an empty thinking block, as
// the templates' own switches (enable_thinking) write it.
func WithReasoning(on bool, budget int) Option {
	return func(o *options) error {
		if budget < 0 || budget > MaxTokensLimit {
			return &OptionError{"WithReasoning", fmt.Sprintf("budget %d out of range [0, %d]", budget, MaxTokensLimit)}
		}
		o.thinkOff, o.thinkBudget = !on, budget
		return nil
	}
}

// WithPartStream streams each choice's output (as WithChoiceStream does)
// with the part each piece belongs to: the thinking (PartReasoning), the
// answer (PartContent), tool calls (PartToolCall) or the markers between
// them (PartMarker). Pieces are final: text that may turn out to start a
// marker, trigger or stop string is held back until it is decided.
func WithPartStream(fn func(choice int, part Part, piece []byte) error) Option {
	return func(o *options) error { o.partStream = fn; return nil }
}

// WithJumpForward turns jump-forward on (the default) or off: bytes the
// grammar forces are tokenized and decoded as one batch instead of being
// sampled one token at a time.
func WithJumpForward(on bool) Option {
	return func(o *options) error { o.noJump = !on; return nil }
}

// WithMaskOverlap lets the scheduler fill a sequence's next mask while the
// model decodes the batch that holds its new tokens (the default), instead
// of before the decode: the mask depends only on the tokens committed, so
// its cost (up to milliseconds where a grammar's state is reached for the
// first time and its token set computed then) leaves the step's critical
// path and hides behind the model's. The mask is waited for after the
// decode, before the run's logits are sampled. Where nothing but the end
// can follow the output (mask.Matcher.CanContinue) or the budget is spent,
// the mask is filled before the decode, as with the overlap off, and the
// run stops without decoding its last token; only where bytes could follow
// that no token of the vocabulary starts with does a run decode one token
// more and stop after it. The tokens sampled are the same either way.
func WithMaskOverlap(on bool) Option {
	return func(o *options) error { o.noOverlap = !on; return nil }
}

// WithCompileOverlap lets the model read a generation's prompt while its
// grammar or schema compiles (the default), instead of after: on a cache
// miss whose compile takes more than a few milliseconds (5 ms),
// the sequences are admitted and prefill all of the prompt but its last
// token during the conversion and compilation, whose time (up to hundreds
// of milliseconds for the largest schemas) then overlaps the prefill's
// and the other sequences' steps, and the grammar starts (its forced
// start, its first mask) once compiled; the last token waits for it and
// its precomputation, as it does for the precomputation alone. A grammar
// or schema that does not compile fails the generation with the same
// error as without the overlap, which takes precedence over anything
// reading the prompt met meanwhile. A cached grammar is taken at once
// either way; the tokens sampled are the same. It pays where the prompt
// is read while others generate (and, not measured here, where a GPU
// reads it and leaves the CPU to the compile); with one sequence on a
// CPU-only machine of few cores, the compile and the prefill share the
// cores and a slow compile may end later than without it (see the
// README's measurements).
func WithCompileOverlap(on bool) Option {
	return func(o *options) error { o.noCompileOverlap = !on; return nil }
}

// WithTokenMetrics records, for every sampled token, the entropy of the
// model's distribution and the token's surprisal (Stats.Entropy,
// Stats.Surprisal, Stats.Perplexity). It costs a softmax over the
// vocabulary per token (about 0.5 ms for 128k logits), so it is off by
// default.
func WithTokenMetrics(on bool) Option {
	return func(o *options) error { o.metrics = on; return nil }
}

// WithUniqueKeys makes every JSON object of the output have distinct keys
// (on by default for schemas, off for GBNF grammars, whose output need not
// be JSON): a grammar cannot say "all keys differ", so the engine masks,
// at each step, the tokens that would close a key the object already has
// (package mask/jsonkeys). Turn it on for a GBNF grammar of JSON (such as
// llama.cpp's json.gbnf); with a grammar whose sentences are not JSON the
// generation fails at the first byte that is not.
func WithUniqueKeys(on bool) Option {
	return func(o *options) error {
		o.uniqueKeys = -1
		if on {
			o.uniqueKeys = 1
		}
		return nil
	}
}

// WithStepTimes records when each token was sampled (Stats.StepTimes),
// for latency measurements such as inter-token latency. It costs one clock
// read per token.
func WithStepTimes(on bool) Option {
	return func(o *options) error { o.stepTimes = on; return nil }
}

// WithGumbel lets unconstrained spans use the Gumbel-max sampler (the
// default) or, when off, the CPU chain like constrained steps.
func WithGumbel(on bool) Option {
	return func(o *options) error { o.noGumbel = !on; return nil }
}

// WithChoiceStream streams the text of each choice of GenerateN (and of
// Generate, as choice 0): fn gets the choice index and a piece of its
// output as soon as the piece is final. Pieces of one choice come in
// order; fn is called on the goroutine that called GenerateN, never
// concurrently. An error from fn stops that choice, and GenerateN returns
// it.
func WithChoiceStream(fn func(choice int, piece []byte) error) Option {
	return func(o *options) error { o.choiceStream = fn; return nil }
}

// WithBatchTokens bounds the entries of one decode of the model (New
// only; default DefaultBatchTokens, cut to the model's BatchSize): the
// committed tokens of running generations first, then prompt chunks of
// the generations being admitted. Smaller values keep running
// generations streaming more steadily while long prompts are read.
func WithBatchTokens(n int) Option {
	return func(o *options) error {
		if n < 1 || n > MaxBatchTokensLimit {
			return &OptionError{"WithBatchTokens", fmt.Sprintf("%d out of range [1, %d]", n, MaxBatchTokensLimit)}
		}
		o.eng.batchTokens = n
		return nil
	}
}

// WithMaxQueue bounds the generations waiting for a sequence of the
// model (New only; 0, the default: unbounded): beyond the free sequences,
// which take waiting generations at the next step, n may wait. A
// generation beyond it fails at once with ErrQueueFull.
func WithMaxQueue(n int) Option {
	return func(o *options) error {
		if n < 0 || n > MaxQueueLimit {
			return &OptionError{"WithMaxQueue", fmt.Sprintf("%d out of range [0, %d]", n, MaxQueueLimit)}
		}
		o.eng.maxQueue = n
		return nil
	}
}

// WithPromptCache keeps the prompt of each finished generation in its
// sequence of the model's cache (New only; off by default): a later
// generation whose prompt starts the same way (the same system prompt or
// conversation) reuses the longest such prefix instead of decoding it
// again (Stats.CachedTokens). Kept prompts are dropped, least recently
// used first, when their sequences or cells are needed. The logits after a
// reused prefix come from a different batch shape than a full prefill, so
// a seeded generation may differ in the last bits from the same
// generation without the cache (see Determinism in the package docs).
func WithPromptCache(on bool) Option {
	return func(o *options) error { o.eng.promptCache = on; return nil }
}

// WithGrammarCacheBytes bounds the compiled grammars the engine keeps, in
// bytes (New only; default DefaultGrammarCacheBytes). The least recently
// used ones go first; the one just compiled stays even when it alone is
// larger.
func WithGrammarCacheBytes(n int64) Option {
	return func(o *options) error {
		if n < 0 {
			return &OptionError{"WithGrammarCacheBytes", fmt.Sprintf("%d is negative", n)}
		}
		o.eng.cacheBytes = n
		return nil
	}
}

// WithCompileTimeout bounds the conversion and compilation of each grammar
// or schema (New only; default DefaultCompileTimeout; 0: no bound). A
// compile past it stops and the generations that wanted it fail with
// ErrCompileTimeout; a compile whose every waiting generation has gone
// (their contexts ended) stops at once.
func WithCompileTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return &OptionError{"WithCompileTimeout", fmt.Sprintf("%v is negative", d)}
		}
		o.eng.compileTimeout = d
		return nil
	}
}

// No-model options. They shape the test data that no-model mode draws
// (see package nomodel for the policy) and have no effect with a model.

// WithUniform makes no-model mode draw tokens uniformly by weight (the
// token-level sampler) instead of following the grammar's or schema's
// structure with realistic values (the default).
func WithUniform(on bool) Option {
	return func(o *options) error { o.uniform = on; return nil }
}

// WithOptionalRate sets the probability in [0, 1] that an optional
// property (or an optional part x? of a grammar) is present
// (default nomodel.DefaultOptionalRate).
func WithOptionalRate(p float64) Option {
	return func(o *options) error {
		if !(p >= 0 && p <= 1) {
			return &OptionError{"WithOptionalRate", fmt.Sprintf("%v out of range [0, 1]", p)}
		}
		o.policy.OptionalRate = p
		return nil
	}
}

// WithExampleRate sets the probability in [0, 1] that a value whose
// schema has examples or a default takes one of them
// (default nomodel.DefaultExampleRate).
func WithExampleRate(p float64) Option {
	return func(o *options) error {
		if !(p >= 0 && p <= 1) {
			return &OptionError{"WithExampleRate", fmt.Sprintf("%v out of range [0, 1]", p)}
		}
		o.policy.ExampleRate = p
		return nil
	}
}

// WithExtraKeyRate sets the probability in [0, 1] that an object with
// declared properties that allows other keys gets one or two
// (default nomodel.DefaultExtraKeyRate).
func WithExtraKeyRate(p float64) Option {
	return func(o *options) error {
		if !(p >= 0 && p <= 1) {
			return &OptionError{"WithExtraKeyRate", fmt.Sprintf("%v out of range [0, 1]", p)}
		}
		o.policy.ExtraKeyRate = p
		return nil
	}
}

// WithArrayLen bounds the lengths drawn for arrays, maps and unbounded
// repetitions (within the schema's own bounds; default
// nomodel.DefaultArrayMin, nomodel.DefaultArrayMax).
func WithArrayLen(lo, hi int) Option {
	return func(o *options) error {
		if lo < 0 || hi < lo || hi > nomodel.MaxArrayLen {
			return &OptionError{"WithArrayLen", fmt.Sprintf("[%d, %d]: want 0 <= min <= max <= %d", lo, hi, nomodel.MaxArrayLen)}
		}
		o.policy.ArrayMin, o.policy.ArrayMax = lo, hi
		return nil
	}
}

// WithDates anchors generated dates: date-time and date values fall
// within window of today (zero today: the current UTC date; zero window:
// nomodel.DefaultWindow). A seed reproduces its instances exactly only
// with the same today.
func WithDates(today time.Time, window time.Duration) Option {
	return func(o *options) error {
		p := o.policy
		p.Today, p.Window = today, window
		if err := p.Check(); err != nil {
			return &OptionError{"WithDates", err.Error()}
		}
		o.policy = p
		return nil
	}
}
