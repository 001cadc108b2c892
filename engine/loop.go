package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/structgen/structgen/mask"
	"github.com/structgen/structgen/mask/jsonkeys"
	"github.com/structgen/structgen/sampling/cpu"
	"github.com/structgen/structgen/sampling/gpu"
)

// In this file r is always the *run of one generation, tok a token id and
// mt the active matcher.

// run is one generation with a model: one sequence of the model's cache.
// Between two decodes its state belongs to one goroutine at a time: the
// caller of Generate while the run is prepared, then the scheduler (which
// hands it to a worker for step) until it ends.
type run struct {
	e     *Engine
	o     *options
	m     Model
	v     *mask.Vocab
	con   *constraint
	mt    *mask.Matcher   // the active matcher: nil when unconstrained or before a lazy trigger
	gk    *jsonkeys.Guard // with mt, for JSON outputs: no object repeats a key; else nil
	chain *cpu.Chain
	gp    gpu.Params
	useG  bool // unconstrained spans use Gumbel-max
	lastG bool // the last sampled token was drawn by Gumbel-max
	lastN int  // repeat-penalty window for Gumbel-max (0: off)

	bits    []uint32 // the mask of the next step (filled by prepare)
	maskDue bool     // bits is to be filled while the model decodes (prepare)
	scratch []uint32 // jump-forward's look-ahead mask
	forced  []byte   // jump-forward's forced bytes
	prompt  []int32  // prompt tokens: positions 0..len(prompt)-1
	budget  int      // most generated tokens
	gen     []int32  // generated tokens
	decoded int      // gen[:decoded] are in the model's cache
	out     []byte   // the text of gen
	sstart  int      // offset in out where the constrained part starts; -1 before a lazy trigger
	sent    int      // out[:sent] is final (handed to the stream)
	sc      []byte   // the last shortest completion computed ...
	scToks  []int32  // ... and its tokens
	stop    StopReason
	err     error // why the run failed (set once; the run ends)
	start   time.Time
	stats   Stats

	// Scheduling state, owned by the scheduler goroutine.
	g      *group
	index  int                // choice index in the group
	seq    int                // sequence id in the model; -1 when not admitted
	pdone  int                // prompt positions in the cache (shared ones included)
	row    int                // batch entry whose logits this run samples next; -1: none
	addP   int                // prompt tokens in the batch being decoded
	addG   int                // generated tokens in the batch being decoded
	logits []float32          // the row to step on (set by the scheduler)
	ready  bool               // the grammar's precomputation is done (precomputed)
	fut    *pendingConstraint // the constraint, while it compiles (WithCompileOverlap): begin has not run
	queued time.Time          // when the run was submitted
	admit  time.Time          // when it was admitted

	beginDue bool // fut compiled: begin runs next (beginRow)

	// Streaming: emit appends final text to spend under smu and signals
	// the group; the consumer (the Generate caller) swaps the buffer out
	// and calls the stream function, so a slow consumer never holds up
	// the batch. A stream error stops the run at the next step.
	streaming bool
	smu       sync.Mutex
	spend     []byte
	spans     []partSpan // the parts of spend, in order
	streamErr atomic.Pointer[error]

	// Phases (phases.go): offsets in out.
	tools     *toolSet // the constraint's tool calls, if any
	thinking  bool     // in the thinking block
	thinkEnd  int      // where the end-of-thinking marker starts; -1: none yet
	answer    int      // where the answer starts (after the marker)
	toolStart int      // where the tool calls start; -1: none
	thinkKeep int      // tokens kept, while thinking, for the marker and the shortest answer
}

// mark is a point a commit can be undone to (nothing of it decoded yet).
type mark struct {
	gen, out, sstart int
	mt               *mask.Matcher
	gk               *jsonkeys.Guard
	steps            int
	forced           int // Stats.Forced

	thinking                    bool
	thinkEnd, answer, toolStart int
}

func (r *run) mark() mark {
	k := mark{gen: len(r.gen), out: len(r.out), sstart: r.sstart, mt: r.mt, gk: r.gk, forced: r.stats.Forced,
		thinking: r.thinking, thinkEnd: r.thinkEnd, answer: r.answer, toolStart: r.toolStart}
	if r.mt != nil {
		k.steps = r.mt.Tokens()
	}
	return k
}

func (r *run) restore(k mark) error {
	if r.mt != nil && r.mt == k.mt {
		if err := r.rollback(r.mt.Tokens() - k.steps); err != nil {
			return err
		}
	}
	r.mt, r.gk, r.sstart = k.mt, k.gk, k.sstart
	r.gen, r.out = r.gen[:k.gen], r.out[:k.out]
	r.stats.Forced = k.forced
	r.thinking, r.thinkEnd, r.answer, r.toolStart = k.thinking, k.thinkEnd, k.answer, k.toolStart
	return nil
}

// newMatcher starts the grammar: a matcher, and a key guard when the
// output is JSON (WithUniqueKeys).
func (r *run) newMatcher() {
	r.mt = r.con.compiled.NewMatcher()
	r.gk = nil
	if r.e.uniqueKeys(r.o) {
		r.gk = r.e.keyTable().NewGuard()
	}
}

// accept steps the matcher, and the guard in step with it, over a token.
// A guard error (the token closes a repeated key, or the output is not
// JSON) leaves both unchanged.
func (r *run) accept(tok int32) error {
	if err := r.mt.Accept(tok); err != nil {
		return err
	}
	if r.gk != nil {
		if err := r.gk.Accept(tok); err != nil {
			if rerr := r.mt.Rollback(1); rerr != nil {
				return rerr
			}
			return err
		}
	}
	return nil
}

// acceptBytes is accept for raw bytes.
func (r *run) acceptBytes(b []byte) error {
	if err := r.mt.AcceptBytes(b); err != nil {
		return err
	}
	if r.gk != nil {
		if err := r.gk.AcceptBytes(b); err != nil {
			if rerr := r.mt.Rollback(1); rerr != nil {
				return rerr
			}
			return err
		}
	}
	return nil
}

// rollback undoes the last n steps of the matcher and the guard.
func (r *run) rollback(n int) error {
	if err := r.mt.Rollback(n); err != nil {
		return err
	}
	if r.gk != nil {
		return r.gk.Rollback(n)
	}
	return nil
}

func (r *run) push(toks ...int32) {
	for _, tok := range toks {
		r.gen = append(r.gen, tok)
		r.out = append(r.out, r.v.Token(tok)...)
	}
}

// newRun prepares a generation on the caller's goroutine: the chain, the
// grammar's forced start and the mask of the first step. prompt is the
// tokenized prompt, budget the most tokens it may generate. The run may
// already be finished (a grammar whose every sentence is forced): then
// r.stop is set and nothing needs decoding but its tokens. With fut (the
// constraint still compiling), the grammar starts later, in the
// scheduler (run.precomputed, beginRow).
func (e *Engine) newRun(g *group, o *options, con *constraint, fut *pendingConstraint, budget int, start time.Time) (*run, error) {
	r := &run{e: e, o: o, m: e.model, v: e.vocab, con: con, fut: fut, start: start, prompt: g.prompt, budget: budget,
		g: g, index: len(g.runs), seq: -1, row: -1, streaming: g.stream != nil}
	prompt := g.prompt
	chain, err := cpu.NewChain(o.sampling)
	if err != nil {
		return nil, &OptionError{"WithSampling", err.Error()}
	}
	r.chain = chain
	if gp, lastN, ok := gumbelParams(o.sampling); ok && !o.noGumbel {
		r.gp, r.lastN, r.useG = gp, lastN, true
	}
	r.bits = make([]uint32, (e.vocab.Size()+31)/32)
	r.stats.PromptTokens = len(prompt)
	r.sstart, r.thinkEnd, r.toolStart = 0, -1, -1
	if fut != nil {
		return r, nil
	}
	if err := r.begin(); err != nil {
		return nil, err
	}
	return r, nil
}

// begin starts what depends on the run's constraint (r.con, nil when
// unconstrained): the reasoning phase, a lazy grammar's wait for its
// trigger or the grammar's forced start, and the first step's mask.
func (r *run) begin() error {
	o := r.o
	if r.con != nil {
		r.tools = r.con.tools
	}
	switch {
	case o.thinkEnd != "":
		r.thinking, r.sstart = true, -1
		if err := r.reserveAnswer(); err != nil {
			return err
		}
	case r.con == nil:
	case len(o.triggers) > 0:
		r.sstart = -1
	default:
		if r.tools != nil {
			r.toolStart = 0
		}
		if err := r.startGrammar(); err != nil {
			return err
		}
	}
	return r.prepare(false)
}

// result is the Result of a finished run.
func (r *run) result() *Result {
	if r.stats.Total == 0 {
		r.stats.Total = time.Since(r.start)
	}
	r.stats.Tokens = len(r.gen)
	res := &Result{
		Text:      string(r.out),
		Triggered: r.sstart >= 0,
		Tokens:    r.gen,
		Stop:      r.stop,
		Stats:     r.stats,
	}
	if r.sstart >= 0 {
		res.Output = string(r.out[r.sstart:])
	}
	res.Reasoning, res.Content, res.calls = r.split()
	return res
}

// startGrammar activates the grammar at the current end of the output and
// jumps over its forced start. The grammar's shortest sentence must fit
// the budget.
func (r *run) startGrammar() error {
	r.newMatcher()
	r.sstart = len(r.out)
	ok, err := r.fits()
	if err != nil {
		return err
	}
	if !ok {
		sc, _ := r.mt.ShortestCompletion()
		return fmt.Errorf("%w: %d tokens left, the shortest output is %d bytes", ErrBudget, r.budget-len(r.gen), len(sc))
	}
	if !r.o.noJump {
		k := r.mark()
		if err := r.jumpForward(false); err != nil {
			return err
		}
		return r.settle(k, false)
	}
	return nil
}

// prepare fills the mask of the next step and decides whether the run
// goes on: it stops where the grammar has ended or allows nothing but
// end-of-generation, and where the budget is spent. After a step
// (overlap), where the run goes on whatever its mask, it leaves the mask
// to the scheduler, which fills it while the model decodes the batch with
// the run's new tokens (maskDue; WithMaskOverlap). The mask stops a run
// only where the output can end and nothing else can follow (else it
// allows a token besides the end, or it is a dead end, an error either
// way): there it is filled now, and the run does not decode its last
// token.
func (r *run) prepare(overlap bool) error {
	fill, err := r.beforeMask()
	if err != nil || !fill {
		return err
	}
	if overlap && !r.o.noOverlap && len(r.gen) < r.budget && (!r.mt.CanEnd() || r.mt.CanContinue()) {
		r.maskDue = true
		return nil
	}
	return r.fillMask()
}

// beforeMask is the part of prepare that does not need the mask: the
// thinking budget, the grammar's end, and the budget of an unconstrained
// run. It reports whether the mask is to be filled.
func (r *run) beforeMask() (bool, error) {
	if r.stop != "" {
		return false, nil
	}
	if r.thinking && (r.o.thinkBudget > 0 && len(r.gen) >= r.o.thinkBudget || len(r.gen)+r.thinkKeep >= r.budget) {
		if err := r.endThinking(); err != nil {
			return false, err
		}
		if r.stop != "" {
			return false, nil
		}
	}
	if r.mt != nil {
		if r.mt.Ended() {
			r.stop = StopEOG
			return false, nil
		}
		return true, nil
	}
	if len(r.gen) >= r.budget {
		r.stop = StopBudget
	}
	return false, nil
}

// fillMask fills the mask of the next step (r.mt is active and has not
// ended) and stops the run where it allows nothing but end-of-generation
// or the budget is spent.
func (r *run) fillMask() error {
	t := time.Now()
	r.mt.FillMask(r.bits)
	if r.gk != nil {
		if err := r.gk.Filter(r.bits); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	r.stats.Mask += time.Since(t)
	if r.onlyEOG(r.bits) {
		if !r.mt.CanEnd() {
			return fmt.Errorf("engine: the grammar allows no token after %q (a dead end of the mask)", r.out[r.sstart:])
		}
		r.stop = StopGrammar
		return nil
	}
	if len(r.gen) >= r.budget {
		r.stop = StopBudget
	}
	return nil
}

// step samples the next token from logits (the model's output after
// everything the run has committed; the mask was filled by prepare),
// commits it and prepares the next step. It runs on a worker, in
// parallel with the steps of the other sequences of the batch.
func (r *run) step(logits []float32) error {
	if len(logits) != r.v.Size() {
		return fmt.Errorf("engine: the model returned %d logits, its vocabulary has %d tokens", len(logits), r.v.Size())
	}
	var logZ float64
	if r.o.metrics {
		var h float64
		logZ, h = logSumExpEntropy(logits)
		r.stats.Entropy = append(r.stats.Entropy, float32(h))
	}
	gumbel := r.useG
	if r.mt != nil {
		t := time.Now()
		applyMask(logits, r.bits)
		gumbel = gumbel && covers(r.bits, r.e.normal)
		r.stats.Mask += time.Since(t)
	}
	pos := len(r.prompt) + len(r.gen)
	for redraw := 0; ; redraw++ {
		t := time.Now()
		var tok int32
		r.lastG = gumbel
		if gumbel {
			tok = gpu.Sample(logits, r.prev(), uint32(pos), r.gp)
			r.stats.Gumbel++
		} else {
			tok = r.chain.Sample(logits)
			if r.mt != nil {
				r.stats.Constrained++
			}
		}
		r.stats.Sample += time.Since(t)
		if tok < 0 {
			return fmt.Errorf("engine: no token can be sampled at position %d (every logit is -Inf or NaN)", pos)
		}
		r.stats.Sampled++
		if r.o.metrics {
			r.stats.Surprisal = append(r.stats.Surprisal, float32(logZ-float64(logits[tok])))
		}
		if r.stats.TimeToFirstToken == 0 || r.o.stepTimes {
			d := time.Since(r.start)
			if r.stats.TimeToFirstToken == 0 {
				r.stats.TimeToFirstToken = d
			}
			if r.o.stepTimes {
				r.stats.StepTimes = append(r.stats.StepTimes, d)
			}
		}
		if r.v.IsEOG(tok) {
			if r.mt != nil {
				if err := r.accept(tok); err != nil {
					return fmt.Errorf("engine: %w", err)
				}
			}
			r.stop = StopEOG
			return nil
		}
		err := r.commit(tok)
		if err == nil {
			return r.prepare(true)
		}
		dead, ok := err.(*redrawError)
		if !ok {
			return err
		}
		// The token leads where no unused key can follow (or its forced
		// continuation repeats a key): it was undone; draw another from
		// the same logits.
		if redraw == maxRedrawsPerStep {
			return fmt.Errorf("engine: %w (after %d redraws)", dead.err, redraw)
		}
		if r.o.metrics {
			r.stats.Surprisal = r.stats.Surprisal[:len(r.stats.Surprisal)-1]
		}
		if r.o.stepTimes {
			r.stats.StepTimes = r.stats.StepTimes[:len(r.stats.StepTimes)-1]
		}
		logits[tok] = float32(math.Inf(-1))
		r.bits[tok/32] &^= 1 << (tok % 32)
		if r.onlyEOG(r.bits) && !r.mt.CanEnd() {
			return fmt.Errorf("engine: %w", dead.err)
		}
		gumbel = false // the mask no longer covers every token
	}
}

// maxRedrawsPerStep bounds the tokens one step may draw and undo because
// they lead to a dead end of the key guard (jsonkeys.Guard.Check): each
// redraw costs a sample and a Check (microseconds); real grammars need
// none or one.
const maxRedrawsPerStep = 64

// redrawError reports a committed token that was undone because it leads
// where the output cannot go on without repeating a key.
type redrawError struct{ err error }

func (e *redrawError) Error() string { return e.err.Error() }

// commit adds a sampled token: the matcher accepts it (or a lazy trigger
// appears in it), jump-forward adds what the grammar forces after it, and
// the budget is checked, all before anything is decoded, so that any of it
// can be undone.
func (r *run) commit(tok int32) error {
	k := r.mark()
	r.push(tok)
	switch {
	case r.mt != nil:
		if err := r.accept(tok); err != nil {
			return fmt.Errorf("engine: the mask allowed a token the matcher rejects: %w", err)
		}
		if !r.o.noJump {
			if err := r.jumpForward(true); err != nil {
				return err
			}
		}
		if r.gk != nil {
			if err := r.gk.Check(r.mt); err != nil {
				// No unused key can follow: undo, and the step draws again.
				if rerr := r.restore(k); rerr != nil {
					return rerr
				}
				r.dropSampled()
				return &redrawError{err}
			}
		}
	case r.thinking:
		if err := r.checkThinkEnd(k); err != nil {
			return err
		}
	case r.sstart < 0:
		if !r.checkStop(k) {
			if err := r.checkTrigger(k); err != nil {
				return err
			}
		}
	default:
		r.checkStop(k)
	}
	return r.settle(k, true)
}

// settle checks the budget after a commit (undoing it and closing out if
// the output could no longer be completed in time), then hands the new
// tokens to the sampler history and the new text to the stream.
func (r *run) settle(k mark, sampled bool) error {
	if r.mt != nil {
		ok, err := r.fits()
		if err != nil {
			return err
		}
		if !ok {
			if err := r.restore(k); err != nil {
				return err
			}
			if sampled {
				r.dropSampled()
			}
			if err := r.closeOut(); err != nil {
				return err
			}
			k.gen = min(k.gen, len(r.gen))
		}
	}
	for _, tok := range r.gen[k.gen:] {
		r.chain.Accept(tok)
	}
	return r.emit()
}

// dropSampled uncounts the last sampled token, which a commit undid.
func (r *run) dropSampled() {
	r.stats.Sampled--
	switch {
	case r.lastG:
		r.stats.Gumbel--
	case r.mt != nil:
		r.stats.Constrained--
	}
}

// emit hands the text committed since the last call to the stream: it
// is final (nothing decoded is undone). The consumer goroutine calls the
// stream function, so a slow consumer never holds up the batch.
func (r *run) emit() error {
	if !r.streaming {
		r.sent = len(r.out)
		return nil
	}
	n := r.final()
	if r.sent >= n {
		return nil
	}
	r.smu.Lock()
	for i := r.sent; i < n; {
		p, end := r.partAt(i, n)
		r.spend = append(r.spend, r.out[i:end]...)
		if l := len(r.spans); l > 0 && r.spans[l-1].part == p {
			r.spans[l-1].n += end - i
		} else {
			r.spans = append(r.spans, partSpan{p, end - i})
		}
		i = end
	}
	r.smu.Unlock()
	r.sent = n
	select {
	case r.g.ready <- struct{}{}:
	default:
	}
	return nil
}

// fits reports whether a shortest completion of the constrained output
// still fits the tokens left.
func (r *run) fits() (bool, error) {
	left := r.budget - len(r.gen)
	if left < 0 {
		return false, nil // a jump-forward batch went past the budget
	}
	t := time.Now()
	defer func() { r.stats.Mask += time.Since(t) }()
	mc := r.mt.MinCompletion()
	if mc == 0 {
		return true, nil
	}
	if left == 0 {
		return false, nil
	}
	extra := 0
	if r.gk != nil {
		extra = jsonkeys.MaxCompletionExtra // a completion that repeats no key may be longer
	}
	if mc+extra <= left && r.e.byteComplete() {
		return true, nil // one token per byte at worst
	}
	_, toks, ok, err := r.completion(mc)
	if err != nil {
		return false, err
	}
	if !ok {
		return mc <= left, nil // needs a token reference: trust the byte count
	}
	return len(toks) <= left, nil
}

// completion returns a shortest completion of the constrained output (mc
// bytes long) and its tokens. Near the budget fits needs it at every step,
// and inside free text it does not change from step to step, so the last
// one is kept and reused when it is still a completion of mc bytes (one
// AcceptBytes and a rollback instead of a search over the byte classes).
func (r *run) completion(mc int) (sc []byte, toks []int32, ok bool, err error) {
	if r.sc != nil && len(r.sc) == mc && r.completes(r.sc) {
		return r.sc, r.scToks, true, nil
	}
	if r.gk != nil {
		var err error
		sc, err = jsonkeys.ShortestCompletion(r.mt, r.gk)
		var ce *jsonkeys.CompletionError
		if errors.As(err, &ce) {
			return nil, nil, false, fmt.Errorf("engine: no completion of the output repeats no key: %w", err)
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("engine: %w", err)
		}
		ok = true
	} else if sc, ok = r.mt.ShortestCompletion(); !ok {
		return sc, nil, false, nil
	}
	toks, err = r.tokenize(sc)
	if err != nil {
		return nil, nil, false, err
	}
	r.sc, r.scToks = sc, toks
	return sc, toks, true, nil
}

// completes reports whether b completes the constrained output.
func (r *run) completes(b []byte) bool {
	if err := r.acceptBytes(b); err != nil {
		return false
	}
	ok := r.mt.CanEnd()
	if err := r.rollback(1); err != nil {
		panic("engine: rollback of a completion check: " + err.Error()) // cannot happen: one step was accepted
	}
	return ok
}

// closeOut completes the output along a shortest completion and stops.
func (r *run) closeOut() error {
	r.stop = StopBudget
	if r.mt == nil {
		return nil
	}
	mc := r.mt.MinCompletion()
	if mc == 0 {
		return nil
	}
	_, toks, ok, err := r.completion(mc)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("engine: cannot close out the output at the token budget: its completion needs a token reference (after %q)", r.out[r.sstart:])
	}
	for _, tok := range toks {
		if err := r.accept(tok); err != nil {
			return fmt.Errorf("engine: close-out: %w", err)
		}
	}
	r.push(toks...)
	r.stats.CloseOut += len(toks)
	return nil
}

// tokenize splits text into normal tokens: the model's own tokenization
// when its tokens spell exactly text (a SentencePiece tokenizer adds a
// leading space), else the vocabulary's greedy tokenization.
func (r *run) tokenize(text []byte) ([]int32, error) {
	if len(text) == 0 {
		return nil, nil
	}
	if toks, err := r.m.Tokenize(text, false, false); err == nil && r.spells(toks, text) {
		return toks, nil
	}
	toks, err := r.v.GreedyTokenize(text)
	if err != nil {
		return nil, fmt.Errorf("engine: the vocabulary cannot spell %q: %w", text, err)
	}
	return toks, nil
}

func (r *run) spells(toks []int32, text []byte) bool {
	rest := text
	for _, tok := range toks {
		if r.v.Kind(tok) != mask.TokenNormal {
			return false
		}
		b := r.v.Token(tok)
		if !bytes.HasPrefix(rest, b) {
			return false
		}
		rest = rest[len(b):]
	}
	return len(rest) == 0
}

// jumpForward commits the bytes the grammar forces next, re-tokenized
// together with the token just sampled (replace) so that the batch is
// split as the tokenizer would split the text. The last token of the batch
// is held back when a longer token that the grammar allows starts with its
// bytes: the model then chooses between them. Nothing is decoded here.
func (r *run) jumpForward(replace bool) error {
	t := time.Now()
	defer func() { r.stats.Mask += time.Since(t) }()
	r.forced = r.mt.AppendForced(r.forced[:0])
	forced := r.forced
	if len(forced) == 0 {
		return nil
	}
	var tok int32 = -1
	var text []byte
	if replace {
		tok = r.gen[len(r.gen)-1]
		if r.v.Kind(tok) != mask.TokenNormal {
			replace = false // a token reference: keep it, jump after it
		}
	}
	if replace {
		text = append(slices.Clip(r.v.Token(tok)), forced...)
	} else {
		text = forced
	}
	toks, err := r.tokenize(text)
	if err != nil || len(toks) == 0 {
		return nil // no jump; the model samples the forced bytes
	}
	k := r.mark()
	if replace {
		if err := r.rollback(1); err != nil {
			return err
		}
		r.gen, r.out = r.gen[:k.gen-1], r.out[:k.out-len(r.v.Token(tok))]
	}
	n, ok := 0, true
	for i, t := range toks {
		if i == len(toks)-1 && r.mergeable(t) {
			break
		}
		if err := r.accept(t); err != nil {
			// Forced bytes the matcher rejects cannot happen; the key
			// guard rejects them where they repeat a key (the grammar
			// forces a used key): keep the sampled token, jump nothing.
			ok = false
			break
		}
		r.push(t)
		n++
	}
	if !ok || len(r.out) <= k.out {
		// No progress past the sampled token: undo.
		if err := r.rollback(n); err != nil {
			return err
		}
		r.gen, r.out = r.gen[:len(r.gen)-n], r.out[:k.out-len(r.v.Token(tok))*b2i(replace)]
		if replace {
			if err := r.accept(tok); err != nil {
				return fmt.Errorf("engine: jump-forward undo: %w", err)
			}
			r.push(tok)
		}
		return nil
	}
	r.stats.Forced += n - b2i(replace)
	return nil
}

// mergeable reports whether a longer token the grammar allows next starts
// with the bytes of tok (which the matcher has not accepted yet).
func (r *run) mergeable(tok int32) bool {
	if r.scratch == nil {
		r.scratch = make([]uint32, len(r.bits))
	}
	r.mt.FillMask(r.scratch)
	if r.gk != nil && r.gk.Filter(r.scratch) != nil {
		return false
	}
	found := false
	r.e.longer(r.v.Token(tok), func(t int32) bool {
		if r.scratch[t/32]&(1<<(t%32)) != 0 {
			found = true
			return false
		}
		return true
	})
	return found
}

// checkTrigger looks for a lazy trigger in the answer's text the last
// token added; at the first one, the grammar starts right after it (or at
// its start, when the grammar covers the trigger: tool calls). Text of the
// token past the trigger goes to the grammar; if the grammar rejects it,
// the token is replaced by the tokens of its part up to the trigger's end.
func (r *run) checkTrigger(k mark) error {
	from := max(r.answer, k.out-MaxTriggerLen)
	start, end := -1, -1
	for _, tr := range r.o.triggers {
		i := bytes.Index(r.out[from:], []byte(tr))
		if i < 0 {
			continue
		}
		s := from + i
		if r.o.triggerAnchored && len(bytes.TrimSpace(r.out[r.answer:s])) > 0 {
			continue // a call only at the start of the answer
		}
		if e := s + len(tr); end < 0 || e < end {
			start, end = s, e
		}
	}
	if end < 0 {
		return nil
	}
	if r.tools != nil {
		r.toolStart = start
	}
	pos := end
	if r.o.triggerIncl {
		pos = start
	}
	return r.grammarFrom(k, pos, end)
}

// prev returns the tokens the Gumbel-max repetition penalty looks at.
func (r *run) prev() []int32 {
	if r.lastN == 0 {
		return nil
	}
	if r.lastN < 0 || r.lastN >= len(r.gen) {
		return r.gen
	}
	return r.gen[len(r.gen)-r.lastN:]
}

// onlyEOG reports whether bits allows nothing but end-of-generation
// tokens (or nothing at all).
func (r *run) onlyEOG(bits []uint32) bool {
	eog := r.v.EOG()
	for wi, w := range bits {
		if w == 0 {
			continue
		}
		for _, id := range eog {
			if int(id/32) == wi {
				w &^= 1 << (id % 32)
			}
		}
		if w != 0 {
			return false
		}
	}
	return true
}

// covers reports whether bits allows every token of set.
func covers(bits, set []uint32) bool {
	for i, w := range set {
		if w&^bits[i] != 0 {
			return false
		}
	}
	return true
}

// applyMask sets the logits of the tokens bits does not allow to -Inf.
func applyMask(logits []float32, bits []uint32) {
	ninf := float32(math.Inf(-1))
	for wi, w := range bits {
		if w == math.MaxUint32 {
			continue
		}
		base := wi * 32
		end := min(base+32, len(logits))
		if w == 0 {
			for i := base; i < end; i++ {
				logits[i] = ninf
			}
			continue
		}
		for i := base; i < end; i++ {
			if w&(1<<uint(i-base)) == 0 {
				logits[i] = ninf
			}
		}
	}
}

// gumbelParams maps a chain's settings to the Gumbel-max sampler's, if
// the chain uses nothing Gumbel-max lacks (temperature, top-k, top-p,
// min-p and the repeat penalty in llama.cpp's order).
func gumbelParams(p cpu.Params) (gpu.Params, int, bool) {
	plain := (p.Preset == "" || p.Preset == cpu.PresetLlamaCpp) &&
		(p.Samplers == nil || slices.Equal(p.Samplers, cpu.DefaultOrder)) &&
		p.DynaTempRange == 0 && (p.TypicalP == 0 || p.TypicalP == 1) && p.TopNSigma == 0 &&
		p.FrequencyPenalty == 0 && p.PresencePenalty == 0 && p.DRYMultiplier == 0 &&
		p.XTCProbability == 0 && p.Mirostat == 0 && len(p.LogitBias) == 0 && p.MinKeep == 0
	if !plain {
		return gpu.Params{}, 0, false
	}
	g := gpu.Params{Temperature: p.Temperature, TopK: p.TopK, MinP: p.MinP, SeedOffset: p.Seed}
	if p.TopP > 0 && p.TopP < 1 {
		g.TopP = p.TopP
	}
	lastN := 0
	if p.RepeatPenalty > 0 && p.RepeatPenalty != 1 {
		g.RepeatPenalty = p.RepeatPenalty
		lastN = p.RepeatLastN
		if lastN == 0 {
			lastN = 64 // llama.cpp's default, as in the chain
		}
	}
	return g, lastN, true
}

// logSumExpEntropy returns log Σ e^x and the entropy (nats) of softmax(x).
func logSumExpEntropy(x []float32) (logZ, h float64) {
	mx := math.Inf(-1)
	for _, v := range x {
		if float64(v) > mx {
			mx = float64(v)
		}
	}
	if math.IsInf(mx, 0) {
		return mx, 0
	}
	var s, sx float64
	for _, v := range x {
		if v != v || math.IsInf(float64(v), -1) {
			continue
		}
		d := float64(v) - mx
		e := math.Exp(d)
		s += e
		sx += e * d
	}
	logS := math.Log(s)
	return mx + logS, logS - sx/s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
