package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
	"github.com/structgen/structgen/mask/jsonkeys"
)

// Engine generates text with a model (or without one: no-model mode),
// constrained by a grammar or a JSON Schema. It compiles each grammar
// once (against the model's vocabulary) and keeps it in a cache bounded
// by bytes (WithGrammarCacheBytes).
//
// An Engine is safe for concurrent use, and concurrent generations run
// together: with a model, each takes a sequence of the model's cache and
// every decode carries the next tokens of all of them (continuous
// batching; see the package documentation); in no-model mode they run in
// parallel.
type Engine struct {
	model    Model
	vocab    *mask.Vocab
	defaults options
	sched    *scheduler // nil in no-model mode
	cache    *grammarCache

	mu       sync.Mutex
	samplers map[*mask.Compiled]*sync.Pool // no-model mode

	keysOnce sync.Once
	keys     *jsonkeys.Table // duplicate-key masks of the vocabulary (built on first use)

	derived sync.Once
	normal  []uint32 // bit i: token i is a normal token
	sorted  []int32  // normal tokens sorted by their bytes (jump-forward)
	bytesOK bool     // every byte value is a normal token of its own
}

// New returns an engine for model m, or a no-model engine when m is nil.
// The options are the defaults of every generation (Generate can override
// them) and the engine's own settings (WithBatchTokens, WithMaxQueue,
// WithGrammarCacheBytes). The engine does not take ownership of m: close
// it after the last generation.
func New(m Model, opts ...Option) (*Engine, error) {
	e := &Engine{
		model:    m,
		defaults: defaultOptions(),
		samplers: make(map[*mask.Compiled]*sync.Pool),
	}
	if err := e.defaults.apply(opts); err != nil {
		return nil, err
	}
	e.cache = newGrammarCache(e.defaults.eng.cacheBytes, func(con *constraint) {
		e.mu.Lock()
		delete(e.samplers, con.compiled)
		e.mu.Unlock()
	})
	if m == nil {
		e.vocab = nomodel.Vocab()
		return e, nil
	}
	v, err := VocabOf(m)
	if err != nil {
		return nil, err
	}
	e.vocab = v
	// The vocabulary's one-off preparation for grammar compilation (the
	// token trie, the JSON-string slice: ~66 ms for Llama-3) starts now,
	// beside whatever the caller does next, instead of in the first
	// request's compile; a compile that comes sooner waits for it.
	go mask.PrepareVocab(v)
	e.sched, err = newScheduler(m, e.defaults.eng.batchTokens, e.defaults.eng.maxQueue, e.defaults.eng.promptCache)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// VocabOf builds the mask vocabulary of a model: each token's bytes, its
// kind (end-of-generation and special tokens are mask.TokenSpecial, empty
// ones mask.TokenUnused) and the end-of-generation ids.
func VocabOf(m Model) (*mask.Vocab, error) {
	n := m.VocabSize()
	if n <= 0 {
		return nil, fmt.Errorf("engine: model has %d tokens", n)
	}
	toks := make([][]byte, n)
	kinds := make([]mask.TokenKind, n)
	for i := range n {
		id := int32(i)
		toks[i] = m.TokenBytes(id)
		switch {
		case m.IsEOG(id) || m.TokenIsSpecial(id):
			kinds[i] = mask.TokenSpecial
		case len(toks[i]) == 0:
			kinds[i] = mask.TokenUnused
		}
	}
	v, err := mask.NewVocabKinds(toks, kinds, m.EOG())
	if err != nil {
		return nil, fmt.Errorf("engine: model vocabulary: %w", err)
	}
	return v, nil
}

// Model returns the engine's model (nil in no-model mode).
func (e *Engine) Model() Model { return e.model }

// Vocab returns the vocabulary grammars are compiled against: the model's,
// or nomodel.Vocab() in no-model mode.
func (e *Engine) Vocab() *mask.Vocab { return e.vocab }

// StopReason says why a generation stopped.
type StopReason string

const (
	// StopEOG: the model produced an end-of-generation token (allowed by
	// the grammar: the output is complete).
	StopEOG StopReason = "eog"
	// StopGrammar: the grammar allows nothing more; the output is a
	// complete sentence.
	StopGrammar StopReason = "grammar"
	// StopBudget: the token (or byte) budget ran out. A constrained
	// output was closed out along a shortest completion and is complete.
	StopBudget StopReason = "budget"
)

// Result is the outcome of a generation.
type Result struct {
	// Text is everything generated: with a lazy grammar, the free text,
	// the trigger and the constrained part.
	Text string
	// Output is the constrained part (Text after the trigger with a lazy
	// grammar, else Text). For a schema it is the validated JSON document.
	Output string
	// Triggered reports whether a lazy grammar's trigger appeared (always
	// true without a lazy grammar when a grammar is set).
	Triggered bool
	// Tokens are the generated token ids (the end-of-generation token
	// excluded).
	Tokens []int32
	Stop   StopReason
	// Seed is the seed the generation used.
	Seed uint32
	// Warnings lists what lenient schema conversion relaxed.
	Warnings []jsonschema2gbnf.Warning
	Stats    Stats

	// With a conversation (WithMessages, WithChat): Reasoning is the
	// thinking of a reasoning model (its markers and the whitespace after
	// them excluded), Content the answer's text outside tool calls (a
	// grammar's output included), ToolCalls the calls parsed from the
	// output (WithTools), each validated against its tool's schema.
	Reasoning string
	Content   string
	ToolCalls []ToolCall

	validated bool   // no-model mode validated Output already ...
	invalid   error  // ... with this result
	calls     string // the text of the tool calls
}

// ValidationError reports a schema output that santhosh-tekuri/jsonschema
// rejects. It happens only with lenient conversion (the grammar accepts a
// superset of the schema) or through a bug; Generate returns it together
// with the Result.
type ValidationError struct {
	Output string
	Err    error
}

func (e *ValidationError) Error() string {
	return "engine: output does not validate against the schema: " + e.Err.Error()
}

func (e *ValidationError) Unwrap() error { return e.Err }

// ErrNoConstraint reports a no-model generation without a grammar or
// schema.
var ErrNoConstraint = errors.New("engine: no-model mode needs a grammar or a schema")

// ErrBudget reports a token budget smaller than the shortest output the
// grammar allows.
var ErrBudget = errors.New("engine: token budget too small for the shortest output of the grammar")

// Generate runs one generation: prompt → model → output, under the
// engine's default options overridden by opts. In no-model mode the
// prompt must be empty and the output is a random sentence of the grammar.
//
// With a model, Generate waits for a sequence of the model's cache
// (admission; WithMaxQueue bounds the waiting generations) and then runs
// in the same decodes as every other generation of the engine. When ctx
// ends, the generation leaves within one decode step, frees its sequence
// and returns ctx's error.
//
// With a schema, the output is validated against it: a failure (possible
// only with WithLenient) returns the Result together with a
// *ValidationError. Other errors return a nil Result. Matcher errors are
// sticky: the first one ends the generation.
func (e *Engine) Generate(ctx context.Context, prompt string, opts ...Option) (*Result, error) {
	res, err := e.generate(ctx, prompt, 1, opts)
	if len(res) == 1 {
		return res[0], err
	}
	return nil, err
}

// GenerateN runs n generations of one prompt (n completions, "choices"):
// choice i uses seed+i (WithSeed; without it a drawn seed), and the
// prompt is decoded once, its cache cells shared by the n sequences of
// the model (Model.Copy). The results come in choice order. With
// WithChoiceStream each choice's text is streamed with its index. n must
// be within 1..min(MaxChoices, the model's sequences); in no-model mode
// the choices are drawn one after another.
//
// Errors are as for Generate; the first failed choice's error is
// returned, with the results of all choices (nil for the failed ones)
// when the failure is a *ValidationError.
func (e *Engine) GenerateN(ctx context.Context, prompt string, n int, opts ...Option) ([]*Result, error) {
	return e.generate(ctx, prompt, n, opts)
}

func (e *Engine) generate(ctx context.Context, prompt string, n int, opts []Option) ([]*Result, error) {
	start := time.Now()
	if n < 1 || n > MaxChoices {
		return nil, &OptionError{"GenerateN", fmt.Sprintf("n = %d, want 1..%d", n, MaxChoices)}
	}
	o := e.defaults
	o.triggers = append([]string(nil), o.triggers...)
	if err := o.apply(opts); err != nil {
		return nil, err
	}
	if o.eng != e.defaults.eng {
		return nil, &OptionError{"Generate", "WithBatchTokens, WithMaxQueue, WithGrammarCacheBytes and WithCompileTimeout are engine settings: give them to New"}
	}
	if o.stream != nil && n > 1 {
		return nil, &OptionError{"WithStream", "several choices stream through WithChoiceStream"}
	}
	if err := e.conversation(&o, prompt); err != nil {
		return nil, err
	}
	if !o.seedSet {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.seed = binary.LittleEndian.Uint32(b[:])
	}
	o.sampling.Seed = o.seed
	var con *constraint
	var fut *pendingConstraint
	var err error
	if e.model != nil && !o.noCompileOverlap {
		// The prompt is read while the grammar compiles (see
		// pendingConstraint); a cached one is taken at once.
		if con, fut, err = e.startConstraint(ctx, &o); fut != nil {
			t := time.NewTimer(compileGrace)
			select {
			case <-fut.ready:
				con, err, fut = fut.con, fut.err, nil
			case <-t.C:
			}
			t.Stop()
		}
	} else {
		con, err = e.constraint(ctx, &o)
	}
	if err != nil {
		return nil, err
	}
	var res []*Result
	if e.model == nil {
		res = make([]*Result, n)
		for i := range n {
			oi := o
			oi.seed += uint32(i)
			oi.sampling.Seed = oi.seed
			switch {
			case oi.partStream != nil:
				oi.stream = func(p []byte) error { return o.partStream(i, PartContent, p) }
			case oi.choiceStream != nil:
				oi.stream = func(p []byte) error { return o.choiceStream(i, p) }
			}
			if res[i], err = e.generateNoModel(ctx, prompt, &oi, con); err != nil {
				return nil, err
			}
			res[i].Seed = oi.seed
		}
	} else {
		res, err = e.generateModel(ctx, prompt, n, &o, con, fut, start)
		if fut != nil {
			// The compile's outcome comes first, as without the overlap:
			// a schema that does not compile is the error, not what
			// reading the prompt met meanwhile (a full queue, a
			// cancellation).
			<-fut.ready
			if fut.err != nil {
				return nil, fut.err
			}
			con = fut.con
		}
		if err != nil {
			return nil, err
		}
	}
	var first error
	for _, r := range res {
		if con == nil {
			continue
		}
		r.Warnings = con.warnings
		if con.tools != nil && r.Triggered {
			calls, err := con.tools.parse(r.calls, r.Seed)
			if err != nil && first == nil {
				first = &ValidationError{Output: r.Output, Err: err}
			}
			r.ToolCalls = calls
			continue
		}
		if con.validator == nil || !r.Triggered {
			continue
		}
		err := r.invalid
		if !r.validated {
			err = validate(con.validator, r.Output)
		}
		if err != nil && first == nil {
			first = &ValidationError{Output: r.Output, Err: err}
		}
	}
	return res, first
}

// generateModel runs the n choices of a prompt on the model through the
// scheduler, streaming on the caller's goroutine.
func (e *Engine) generateModel(ctx context.Context, prompt string, n int, o *options, con *constraint, fut *pendingConstraint, start time.Time) ([]*Result, error) {
	e.derive()
	m := e.model
	text, parseSpecial := prompt, false
	if o.chat || o.messages != nil {
		var err error
		if text, err = e.renderChat(o, prompt); err != nil {
			return nil, err
		}
		parseSpecial = true
	}
	toks, err := m.Tokenize([]byte(text), true, parseSpecial)
	if err != nil {
		return nil, fmt.Errorf("engine: tokenize the prompt: %w", err)
	}
	if len(toks) == 0 {
		return nil, errors.New("engine: empty prompt (the model adds no BOS token): give a prompt")
	}
	s := e.sched
	if len(toks) >= s.cells {
		return nil, fmt.Errorf("engine: the prompt is %d tokens, the context holds %d: %w", len(toks), s.cells, ErrContextFull)
	}
	budget := s.budget(len(toks))
	if o.maxTokens > 0 {
		budget = min(o.maxTokens, s.cells-len(toks))
	}
	g := &group{ctx: ctx, prompt: toks, ready: make(chan struct{}, 1), done: make(chan struct{})}
	switch {
	case o.partStream != nil:
		g.stream = o.partStream
	case o.choiceStream != nil:
		g.stream = func(i int, _ Part, p []byte) error { return o.choiceStream(i, p) }
	case o.stream != nil:
		g.stream = func(_ int, _ Part, p []byte) error { return o.stream(p) }
	}
	if n > 1 {
		g.shared = len(toks) - 1
	}
	seeds := make([]uint32, n)
	for i := range n {
		oi := *o
		oi.seed += uint32(i)
		oi.sampling.Seed = oi.seed
		seeds[i] = oi.seed
		r, err := e.newRun(g, &oi, con, fut, budget, start)
		if err != nil {
			return nil, err
		}
		g.runs = append(g.runs, r)
	}
	if err := e.wait(ctx, g); err != nil {
		return nil, err
	}
	res := make([]*Result, n)
	for i, r := range g.runs {
		if r.err != nil {
			return nil, r.err
		}
		res[i] = r.result()
		res[i].Seed = seeds[i]
	}
	return res, nil
}

// wait submits g's runs that need the model (a grammar can be done before
// any decode), calls the stream function with their text as it becomes
// final, and returns when every run has ended.
func (e *Engine) wait(ctx context.Context, g *group) error {
	all := g.runs
	live := all[:0:0]
	for _, r := range all {
		if !r.ended() {
			live = append(live, r)
		}
	}
	var buf []byte
	var spans []partSpan
	flush := func() {
		for _, r := range all {
			r.smu.Lock()
			buf, r.spend = r.spend, buf[:0]
			spans, r.spans = r.spans, spans[:0]
			r.smu.Unlock()
			if len(buf) == 0 || r.streamErr.Load() != nil {
				continue
			}
			off := 0
			for _, sp := range spans {
				if err := g.stream(r.index, sp.part, buf[off:off+sp.n]); err != nil {
					r.streamErr.Store(&err)
					break
				}
				off += sp.n
			}
		}
	}
	// A run's last text, held back while it could still become a marker or
	// stop string, is final once the run has ended.
	last := func() {
		for _, r := range all {
			if r.ended() {
				_ = r.emit()
			}
		}
		flush()
	}
	if len(live) == 0 {
		if g.stream != nil {
			last()
		}
		return e.streamErrOf(all)
	}
	// Runs that are done before the first decode keep their index but do
	// not take a sequence.
	g.runs = live
	if len(live) < len(all) {
		g.shared = 0
	}
	if err := e.sched.submit(g); err != nil {
		g.runs = all
		return err
	}
	done := ctx.Done()
	for {
		select {
		case <-g.ready:
			flush()
			continue
		case <-done:
			if e.sched.withdraw(g) {
				g.runs = all
				return ctx.Err()
			}
			done = nil // admitted: the scheduler ends the runs within a step
			continue
		case <-g.done:
		}
		break
	}
	g.runs = all
	if g.stream != nil {
		last()
	}
	if g.err != nil {
		return g.err
	}
	return e.streamErrOf(all)
}

// streamErrOf returns the stream error of the first run that has one and
// no other error.
func (e *Engine) streamErrOf(runs []*run) error {
	for _, r := range runs {
		if p := r.streamErr.Load(); p != nil && r.err == nil {
			return fmt.Errorf("engine: stream: %w", *p)
		}
	}
	return nil
}

// SchedulerStats returns the counters and gauges of the engine's
// scheduler (zero in no-model mode).
func (e *Engine) SchedulerStats() SchedulerStats {
	if e.sched == nil {
		return SchedulerStats{}
	}
	return e.sched.Stats()
}

// CacheStats returns the counters of the engine's grammar cache.
func (e *Engine) CacheStats() CacheStats { return e.cache.Stats() }

// errUncheckable reports a document the validator cannot check: it
// panics on a number whose exponent big.Rat cannot parse (10^7 or more).
var errUncheckable = errors.New("the validator cannot check this document (a number beyond big.Rat's range)")

func validate(s *jsonschema.Schema, doc string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errUncheckable, r)
		}
	}()
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return errors.New("not JSON: data after the document")
	}
	return s.Validate(v)
}

// constraint converts and compiles the grammar or schema of o (nil if
// none), through the engine's cache.
func (e *Engine) constraint(ctx context.Context, o *options) (*constraint, error) {
	key, build, ok := e.constraintKey(o)
	if !ok {
		return nil, nil
	}
	return e.cache.get(ctx, key, e.defaults.eng.compileTimeout, build)
}

// buildHook, when set (tests), runs at the start of every build.
var buildHook atomic.Pointer[func()]

// constraintKey returns the cache key of o's constraint and the function
// that builds it; false if o has none.
func (e *Engine) constraintKey(o *options) (cacheKey, func(done <-chan struct{}) (*constraint, error), bool) {
	if o.schema == nil && o.grammar == "" && o.toolSpec == nil {
		return cacheKey{}, nil, false
	}
	if o.toolSpec != nil {
		spec := o.toolSpec
		return cacheKey{tools: spec.key(), vocab: e.vocab}, func(done <-chan struct{}) (*constraint, error) { return e.buildTools(spec, done) }, true
	}
	key := cacheKey{grammar: o.grammar, schema: string(o.schema), whitespace: o.whitespace,
		lenient: o.lenient, strictObj: o.strictObj, anyOrder: o.anyOrder, vocab: e.vocab}
	if o.schema == nil {
		key.whitespace, key.lenient, key.strictObj, key.anyOrder = 0, false, false, false
	}
	return key, func(done <-chan struct{}) (*constraint, error) { return e.build(o, done) }, true
}

// compileGrace is how long a generation waits for its grammar's compile
// before its prompt is read alongside it (WithCompileOverlap): a compile
// done within it starts the grammar before admission, as without the
// overlap, so that the prompt's last chunk carries the grammar's forced
// start and is sampled at once. Overlapped, the grammar starts only after
// the prompt but its last token is read, which costs a batch decode more:
// with 4 clients at once on the 128k-vocabulary test model, the schemas
// that compile in under a millisecond took 6 ms longer to their first
// token overlapped (per schema, median), and gained nothing. Most
// compiles end well within it (corpus median under 1 ms); a variable so
// that tests can overlap every compile.
var compileGrace = 5 * time.Millisecond

// A pendingConstraint is a constraint being compiled for a generation
// whose prompt the model reads meanwhile (WithCompileOverlap): its runs
// take their sequences and prefill all of the prompt but its last token,
// and start their grammar (forced start, first mask) once ready is
// closed, on a scheduler's worker during a decode or on its loop when
// nothing is to be decoded (run.precomputed); a compile that fails fails
// them with its error.
type pendingConstraint struct {
	ready chan struct{} // closed when con or err is set
	con   *constraint
	err   error
}

// startConstraint returns o's constraint when it needs no compile (none,
// or one the cache holds compiled); otherwise it starts the compile
// through the cache on a goroutine of its own, which waits for it as a
// caller of Engine.constraint does (ctx ending stops the wait, and the
// compile if nobody else wants it), and returns it pending. The key is
// made once, for the lookup and the compile.
func (e *Engine) startConstraint(ctx context.Context, o *options) (*constraint, *pendingConstraint, error) {
	oc := *o // the build's own copy: the generation goes on with o
	key, build, ok := e.constraintKey(&oc)
	if !ok {
		return nil, nil, nil
	}
	if con, err, ready := e.cache.peek(key); ready {
		return con, nil, err
	}
	p := &pendingConstraint{ready: make(chan struct{})}
	go func() {
		defer close(p.ready)
		p.con, p.err = e.cache.get(ctx, key, e.defaults.eng.compileTimeout, build)
	}()
	return nil, p, nil
}

// build converts (a schema) and compiles a constraint; closing done stops
// it (mask.ErrCanceled).
func (e *Engine) build(o *options, done <-chan struct{}) (*constraint, error) {
	if h := buildHook.Load(); h != nil {
		(*h)()
	}
	con := &constraint{src: o.grammar, schemaLen: len(o.schema)}
	if o.schema != nil {
		var copts []jsonschema2gbnf.Option
		if o.whitespace == Flexible {
			copts = append(copts, jsonschema2gbnf.FlexibleWhitespace(0))
		}
		if o.lenient {
			copts = append(copts, jsonschema2gbnf.Lenient(&con.warnings))
		}
		if o.strictObj {
			copts = append(copts, jsonschema2gbnf.ForbidAdditionalProperties())
		}
		if o.anyOrder {
			copts = append(copts, jsonschema2gbnf.AnyPropertyOrder())
		}
		src, v, err := jsonschema2gbnf.ConvertAndCompile(o.schema, copts...)
		if err != nil {
			return nil, err
		}
		con.src, con.validator = src, v
	}
	g, err := gbnf.Parse(con.src)
	if err != nil {
		return nil, err
	}
	c, err := mask.CompileWith(g, e.vocab, mask.Options{Done: done, Deferred: true})
	if err != nil {
		return nil, err
	}
	con.compiled = c
	return con, nil
}

// Compile returns the grammar the options describe (WithGrammar or
// WithSchema and its conversion options) compiled against the engine's
// vocabulary, from the engine's cache. It is how callers check a grammar
// or schema before generating.
func (e *Engine) Compile(opts ...Option) (*mask.Compiled, error) {
	o := e.defaults
	if err := o.apply(opts); err != nil {
		return nil, err
	}
	con, err := e.constraint(context.Background(), &o)
	if err != nil {
		return nil, err
	}
	if con == nil {
		return nil, errors.New("engine: Compile: no grammar or schema given")
	}
	if err := con.compiled.Precompute(nil); err != nil {
		return nil, err
	}
	return con.compiled, nil
}

// keyTable returns the vocabulary's duplicate-key table (built once).
func (e *Engine) keyTable() *jsonkeys.Table {
	e.keysOnce.Do(func() { e.keys = jsonkeys.NewTable(e.vocab) })
	return e.keys
}

// uniqueKeys reports whether a generation's output gets a key guard: a
// schema's by default, a grammar's with WithUniqueKeys(true).
func (e *Engine) uniqueKeys(o *options) bool {
	if o.uniqueKeys != 0 {
		return o.uniqueKeys > 0
	}
	return o.schema != nil
}

// derive builds the vocabulary tables the model loop needs (once).
func (e *Engine) derive() {
	e.derived.Do(func() {
		v := e.vocab
		n := v.Size()
		e.normal = make([]uint32, (n+31)/32)
		var single [256]bool
		for i := range n {
			if v.Kind(int32(i)) == mask.TokenNormal {
				e.sorted = append(e.sorted, int32(i))
				e.normal[i/32] |= 1 << (i % 32)
				if t := v.Token(int32(i)); len(t) == 1 {
					single[t[0]] = true
				}
			}
		}
		e.bytesOK = !slices.Contains(single[:], false)
		sort.Slice(e.sorted, func(a, b int) bool {
			return bytes.Compare(v.Token(e.sorted[a]), v.Token(e.sorted[b])) < 0
		})
	})
}

// byteComplete reports whether every byte value is a token of its own,
// so that n bytes never need more than n tokens.
func (e *Engine) byteComplete() bool { return e.bytesOK }

// longer calls fn for each normal token whose bytes start with b and are
// longer than b, until fn returns false.
func (e *Engine) longer(b []byte, fn func(tok int32) bool) {
	v := e.vocab
	i := sort.Search(len(e.sorted), func(i int) bool {
		return bytes.Compare(v.Token(e.sorted[i]), b) >= 0
	})
	for ; i < len(e.sorted); i++ {
		t := v.Token(e.sorted[i])
		if !bytes.HasPrefix(t, b) {
			return
		}
		if len(t) > len(b) && !fn(e.sorted[i]) {
			return
		}
	}
}
