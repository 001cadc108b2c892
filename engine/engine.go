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
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// MaxCachedGrammars bounds the compiled grammars (and converted schemas)
// an Engine keeps: a compiled grammar holds a mask cache of up to a few
// MB on a 128k vocabulary, and a program rarely uses more than a handful
// of grammars. The cache is cleared when it is full.
const MaxCachedGrammars = 32

// Engine generates text with a model (or without one: no-model mode),
// constrained by a grammar or a JSON Schema. It compiles each grammar
// once (against the model's vocabulary) and keeps it for later
// generations.
//
// An Engine is safe for concurrent use. With a model, generations run one
// at a time (a Model is one sequence); in no-model mode they run in
// parallel.
type Engine struct {
	model    Model
	vocab    *mask.Vocab
	defaults options

	run sync.Mutex // one generation at a time on the model

	mu       sync.Mutex
	grammars map[string]*mask.Compiled
	schemas  map[schemaKey]*schemaEntry
	samplers map[*mask.Compiled]*sync.Pool // no-model mode

	derived sync.Once
	normal  []uint32 // bit i: token i is a normal token
	sorted  []int32  // normal tokens sorted by their bytes (jump-forward)
	bytesOK bool     // every byte value is a normal token of its own
}

// New returns an engine for model m, or a no-model engine when m is nil.
// The options are the defaults of every generation (Generate can override
// them). The engine does not take ownership of m: close it after the last
// generation.
func New(m Model, opts ...Option) (*Engine, error) {
	e := &Engine{
		model:    m,
		defaults: defaultOptions(),
		grammars: make(map[string]*mask.Compiled),
		schemas:  make(map[schemaKey]*schemaEntry),
		samplers: make(map[*mask.Compiled]*sync.Pool),
	}
	if err := e.defaults.apply(opts); err != nil {
		return nil, err
	}
	if m == nil {
		e.vocab = nomodel.Vocab()
		return e, nil
	}
	v, err := VocabOf(m)
	if err != nil {
		return nil, err
	}
	e.vocab = v
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

	validated bool  // no-model mode validated Output already ...
	invalid   error // ... with this result
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
// With a schema, the output is validated against it: a failure (possible
// only with WithLenient) returns the Result together with a
// *ValidationError. Other errors return a nil Result. Matcher errors are
// sticky: the first one ends the generation.
func (e *Engine) Generate(ctx context.Context, prompt string, opts ...Option) (*Result, error) {
	o := e.defaults
	o.triggers = append([]string(nil), o.triggers...)
	if err := o.apply(opts); err != nil {
		return nil, err
	}
	if !o.seedSet {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.seed = binary.LittleEndian.Uint32(b[:])
	}
	o.sampling.Seed = o.seed
	con, err := e.constraint(&o)
	if err != nil {
		return nil, err
	}
	var res *Result
	if e.model == nil {
		res, err = e.generateNoModel(ctx, prompt, &o, con)
	} else {
		e.run.Lock()
		res, err = e.generateModel(ctx, prompt, &o, con)
		e.run.Unlock()
	}
	if err != nil {
		return nil, err
	}
	res.Seed = o.seed
	if con != nil {
		res.Warnings = con.warnings
		if con.validator != nil && res.Triggered {
			err := res.invalid
			if !res.validated {
				err = validate(con.validator, res.Output)
			}
			if err != nil {
				return res, &ValidationError{Output: res.Output, Err: err}
			}
		}
	}
	return res, nil
}

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

// constraint is a compiled grammar with what it came from.
type constraint struct {
	src       string // GBNF
	compiled  *mask.Compiled
	validator *jsonschema.Schema // schema constraints only
	warnings  []jsonschema2gbnf.Warning
}

type schemaKey struct {
	schema     string
	whitespace Whitespace
	lenient    bool
	strictObj  bool
	anyOrder   bool
}

type schemaEntry struct {
	gbnf      string
	validator *jsonschema.Schema
	warnings  []jsonschema2gbnf.Warning
}

// constraint converts and compiles the grammar or schema of o (nil if
// none), through the engine's caches.
func (e *Engine) constraint(o *options) (*constraint, error) {
	var con constraint
	start := time.Now() // the compiler's eager budget covers the conversion too
	switch {
	case o.schema != nil:
		se, err := e.convert(o)
		if err != nil {
			return nil, err
		}
		con.src, con.validator, con.warnings = se.gbnf, se.validator, se.warnings
	case o.grammar != "":
		con.src = o.grammar
	default:
		return nil, nil
	}
	c, err := e.compile(con.src, start)
	if err != nil {
		return nil, err
	}
	con.compiled = c
	return &con, nil
}

func (e *Engine) convert(o *options) (*schemaEntry, error) {
	key := schemaKey{string(o.schema), o.whitespace, o.lenient, o.strictObj, o.anyOrder}
	e.mu.Lock()
	se := e.schemas[key]
	e.mu.Unlock()
	if se != nil {
		return se, nil
	}
	var copts []jsonschema2gbnf.Option
	se = &schemaEntry{}
	if o.whitespace == Flexible {
		copts = append(copts, jsonschema2gbnf.FlexibleWhitespace(0))
	}
	if o.lenient {
		copts = append(copts, jsonschema2gbnf.Lenient(&se.warnings))
	}
	if o.strictObj {
		copts = append(copts, jsonschema2gbnf.ForbidAdditionalProperties())
	}
	if o.anyOrder {
		copts = append(copts, jsonschema2gbnf.AnyPropertyOrder())
	}
	src, err := jsonschema2gbnf.Convert(o.schema, copts...)
	if err != nil {
		return nil, err
	}
	v, err := jsonschema2gbnf.CompileSchema(o.schema)
	if err != nil {
		return nil, err
	}
	se.gbnf, se.validator = src, v
	e.mu.Lock()
	if len(e.schemas) >= MaxCachedGrammars {
		clear(e.schemas)
	}
	e.schemas[key] = se
	e.mu.Unlock()
	return se, nil
}

// compile parses and compiles GBNF source against the engine's
// vocabulary, through the cache; start is when the preparation began
// (see mask.Options.Start).
func (e *Engine) compile(src string, start time.Time) (*mask.Compiled, error) {
	e.mu.Lock()
	c := e.grammars[src]
	e.mu.Unlock()
	if c != nil {
		return c, nil
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		return nil, err
	}
	c, err = mask.CompileWith(g, e.vocab, mask.Options{Start: start})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if old := e.grammars[src]; old != nil {
		c = old
	} else {
		if len(e.grammars) >= MaxCachedGrammars {
			clear(e.grammars)
			clear(e.samplers)
		}
		e.grammars[src] = c
	}
	e.mu.Unlock()
	return c, nil
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
	con, err := e.constraint(&o)
	if err != nil {
		return nil, err
	}
	if con == nil {
		return nil, errors.New("engine: Compile: no grammar or schema given")
	}
	return con.compiled, nil
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
