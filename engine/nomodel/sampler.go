package nomodel

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/brianvoe/gofakeit/v7"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

// Limits and defaults.
const (
	// DefaultMaxBytes is the byte budget when Params.MaxBytes is 0: room
	// for the nested records of typical API schemas (instances of the
	// bench's order schema average ~490 bytes) while keeping recursive
	// grammars (trees, nested arrays) short.
	DefaultMaxBytes = 4096
	// MaxMaxBytes bounds Params.MaxBytes: instances are test data, and
	// 16 MiB is far beyond what a fixture needs.
	MaxMaxBytes = 16 << 20
	// DefaultCloseRate is the base probability, per step, of a step along
	// a shortest completion instead of a random token, when
	// Params.CloseRate is 0. It sets the typical size of the free parts:
	// a free string runs for about 1/DefaultCloseRate = 5 tokens, and an
	// array of optional items gets a few items.
	DefaultCloseRate = 0.2
)

// ErrBudget reports a budget smaller than the shortest sentence of the
// grammar.
var ErrBudget = errors.New("nomodel: budget too small for the shortest sentence of the grammar")

// Params configures a Sampler. The zero value is usable: seed 0, the
// default byte budget and close rate, no token budget.
type Params struct {
	// Seed seeds the random choices: the same seed, grammar and params
	// give the same sentence.
	Seed uint64
	// MaxBytes is the byte budget of one sentence (0: DefaultMaxBytes).
	// No sentence is longer: near the budget the sampler steers to a
	// shortest completion.
	MaxBytes int
	// MaxTokens, if positive, bounds the tokens of one sentence (the
	// end-of-generation token not counted) the same way.
	MaxTokens int
	// CloseRate in [0, 1] is the base probability per step of a step
	// along a shortest completion (0: DefaultCloseRate). It grows with the
	// output: at L bytes of a budget of B it is CloseRate +
	// (1-CloseRate)·(L/B)². Uniform mode only.
	CloseRate float64

	// Uniform selects the token-level sampler: each step draws an
	// allowed token (words, bytes) by weight, without regard to the
	// grammar's structure. Otherwise (the default) the sampler follows
	// the structure: the schema's when Schema is set, else the grammar's.
	Uniform bool
	// Schema is the JSON Schema the grammar was converted from: values
	// are then proposed by realistic generators and checked by the
	// grammar. It must be the schema of the compiled grammar.
	Schema *Schema
	// Policy is the structural policy (nil: DefaultPolicy()).
	Policy *Policy
	// OnValue, if set, is called with each scalar value of a schema
	// sentence as it is generated (for tests and statistics; the Value
	// is valid only during the call).
	OnValue func(Value)
}

func (p *Params) check() error {
	if p.MaxBytes < 0 || p.MaxBytes > MaxMaxBytes {
		return fmt.Errorf("nomodel: MaxBytes %d out of range [0, %d]", p.MaxBytes, MaxMaxBytes)
	}
	if p.MaxTokens < 0 {
		return fmt.Errorf("nomodel: MaxTokens %d is negative", p.MaxTokens)
	}
	if !(p.CloseRate >= 0 && p.CloseRate <= 1) {
		return fmt.Errorf("nomodel: CloseRate %v out of range [0, 1]", p.CloseRate)
	}
	if p.MaxBytes == 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	if p.CloseRate == 0 {
		p.CloseRate = DefaultCloseRate
	}
	if p.Policy != nil {
		if err := p.Policy.Check(); err != nil {
			return err
		}
	}
	return nil
}

// A Sampler draws sentences of one compiled grammar. It is not safe for
// concurrent use; make one per goroutine (they may share the Compiled).
// After warm-up (the matcher's first visit of each grammar context) a
// sentence costs a few microseconds per token.
type Sampler struct {
	c      *mask.Compiled
	m      *mask.Matcher
	rng    *rand.Rand
	p      Params
	bits   []uint32
	out    []byte
	toks   []int32
	streak int // random steps since the last step along a shortest completion
	closed int // bytes the last Next added by a budget close-out

	// structural modes
	pol    Policy
	fk     faker
	stats  Stats
	gram   *grammarPlan // grammar mode, built on first use
	views  []*view      // one per nesting level, reused
	pbuf   []byte       // pattern derivation
	pwork  int          // nodes the current pattern derivation visited
	vbuf   []byte       // a proposed value
	names  []string     // property name of the value at each depth (an array's for its items)
	words  []string     // name words of the current value (scratch)
	ptr    []string     // JSON pointer of the current value (OnValue only)
	keys   [][]string   // keys of the objects being written, per level
	budget int          // min(MaxBytes, MaxTokens) in structural modes
	gstack []gframe     // grammar mode

	onChoice func(n *gbnf.Node, k, of int) // tests: grammar-mode choices
}

// NewSampler returns a sampler for c, which must be compiled against
// Vocab().
func NewSampler(c *mask.Compiled, p Params) (*Sampler, error) {
	if c.Vocab() != Vocab() {
		return nil, errors.New("nomodel: grammar compiled against another vocabulary (compile against nomodel.Vocab())")
	}
	s := &Sampler{c: c, m: c.NewMatcher(), bits: make([]uint32, c.Words())}
	if err := s.Reset(p); err != nil {
		return nil, err
	}
	return s, nil
}

// Reset sets new params (and seed) for the following sentences, keeping
// the matcher's warm caches.
func (s *Sampler) Reset(p Params) error {
	if err := p.check(); err != nil {
		return err
	}
	s.p = p
	s.rng = rand.New(rand.NewPCG(p.Seed, 0x9e3779b97f4a7c15))
	s.pol = DefaultPolicy()
	if p.Policy != nil {
		s.pol = *p.Policy
	}
	if s.pol.Window == 0 {
		s.pol.Window = DefaultWindow
	}
	if s.pol.Today.IsZero() {
		s.pol.Today = time.Now().UTC().Truncate(24 * time.Hour)
	}
	// The faker draws from its own stream, seeded from the same seed, so
	// that its use of random numbers does not shift the structure's.
	s.fk = faker{f: gofakeit.NewFaker(rand.NewPCG(p.Seed, 0x2545f4914f6cdd1d), false), anchor: s.pol.Today, window: s.pol.Window}
	s.stats = Stats{}
	s.budget = p.MaxBytes
	if p.MaxTokens > 0 {
		s.budget = min(s.budget, p.MaxTokens)
	}
	return nil
}

// Stats returns the value counts since the sampler was made or Reset
// (schema sentences only).
func (s *Sampler) Stats() Stats { return s.stats }

// Tokens returns the tokens of the last sentence (the end-of-generation
// token excluded; a close-out counts one token per byte). The slice is
// valid until the next call of Next.
func (s *Sampler) Tokens() []int32 { return s.toks }

// ClosedOut returns how many bytes of the last sentence a budget
// close-out added (0 when the sentence ended by itself).
func (s *Sampler) ClosedOut() int { return s.closed }

// Next draws one sentence. The result is valid until the next call.
func (s *Sampler) Next() ([]byte, error) {
	switch {
	case s.p.Uniform:
		return s.nextUniform()
	case s.p.Schema != nil:
		return s.nextSchema()
	}
	return s.nextGrammar()
}

// nextUniform draws a sentence token by token (Params.Uniform).
func (s *Sampler) nextUniform() ([]byte, error) {
	m := s.m
	m.Reset()
	s.out, s.toks, s.closed = s.out[:0], s.toks[:0], 0
	if n := m.MinCompletion(); !s.fits(n) {
		return nil, fmt.Errorf("%w: it needs %d bytes, the budget is %d bytes and %d tokens", ErrBudget, n, s.p.MaxBytes, s.p.MaxTokens)
	}
	s.streak = 0
	for !m.Ended() {
		if s.rng.Float64() < s.closeProb() {
			ok, err := s.closeStep()
			if err != nil {
				return nil, err
			}
			if ok {
				s.streak = 0
				continue
			}
		}
		tok, n := s.pick()
		if n == 1 {
			s.streak = 0 // forced: not a choice
		} else {
			s.streak++
		}
		if tok < 0 {
			return nil, fmt.Errorf("nomodel: no token allowed after %d bytes %q", len(s.out), s.out)
		}
		if err := m.Accept(tok); err != nil {
			return nil, fmt.Errorf("nomodel: the mask allowed a token the matcher rejects: %w", err)
		}
		if tok == eogID {
			break
		}
		s.push(tok)
		if !s.fits(m.MinCompletion()) {
			// Over budget: undo the token and finish along a shortest
			// completion, which fits (it did before the token).
			if err := m.Rollback(1); err != nil {
				return nil, err
			}
			s.toks = s.toks[:len(s.toks)-1]
			s.out = s.out[:len(s.out)-len(vocab.Token(tok))]
			return s.finish()
		}
	}
	return s.out, nil
}

// closeProb is the probability of a step along a shortest completion:
// the base rate, raised as the output nears its byte budget and as the
// current run of random steps grows (so free strings, numbers and
// repetitions end after a few steps, with a thin tail).
func (s *Sampler) closeProb() float64 {
	l := float64(len(s.out)) / float64(s.p.MaxBytes)
	grow := max(l*l, 1-math.Pow(streakDecay, float64(s.streak)))
	return 1 - (1-s.p.CloseRate)*(1-grow)
}

// fits reports whether a completion of n more bytes (one token each)
// stays within the budgets.
func (s *Sampler) fits(n int) bool {
	return len(s.out)+n <= s.p.MaxBytes && (s.p.MaxTokens <= 0 || len(s.toks)+n <= s.p.MaxTokens)
}

func (s *Sampler) push(tok int32) {
	s.toks = append(s.toks, tok)
	s.out = append(s.out, vocab.Token(tok)...)
}

// closeStep takes one step along a shortest completion: a random byte of
// its first step, or the end-of-generation token where the output is
// complete. It reports false where there is no such step (the completion
// needs a token reference).
func (s *Sampler) closeStep() (bool, error) {
	m := s.m
	lo, hi, ok := m.ShortestStep()
	if !ok {
		if !m.CanEnd() {
			return false, nil
		}
		return true, m.Accept(eogID)
	}
	b := lo + byte(s.rng.IntN(int(hi-lo)+1))
	if err := m.Accept(int32(b)); err != nil {
		return false, fmt.Errorf("nomodel: shortest completion rejected: %w", err)
	}
	s.push(int32(b))
	return true, nil
}

// finish appends a shortest completion and ends.
func (s *Sampler) finish() ([]byte, error) {
	sc, ok := s.m.ShortestCompletion()
	if !ok {
		return nil, fmt.Errorf("nomodel: cannot complete the output within the budget (the completion needs a token reference)")
	}
	if len(sc) > 0 {
		if err := s.m.AcceptBytes(sc); err != nil {
			return nil, fmt.Errorf("nomodel: shortest completion rejected: %w", err)
		}
		for _, b := range sc {
			s.push(int32(b))
		}
		s.closed = len(sc)
	}
	if err := s.m.Accept(eogID); err != nil {
		return nil, fmt.Errorf("nomodel: end after the shortest completion rejected: %w", err)
	}
	return s.out, nil
}

// smallSet is the most allowed tokens for which a step picks among the
// allowed single bytes only. Such steps are choices between a few values
// (an enum's next letter, true or false, a digit or the end of a number, a
// pattern's character class): word tokens there would favour the values
// that happen to be words ("paid" over "pending"). Free text allows
// hundreds of tokens.
const smallSet = 64

// streakDecay sets how fast a run of random steps makes a close step
// likelier: after k random steps the close probability is at least
// 1-streakDecay^k (0.56 after 5, 0.8 after 10). Without it a number would
// grow digits with a constant probability, and exponents of millions of
// digits (which big.Rat, and so the schema validator, cannot even parse)
// would turn up in a few percent of instances.
const streakDecay = 0.85

// pick draws an allowed token with probability proportional to its
// weight (and the number of allowed tokens), or returns -1 if none is
// allowed. Where few tokens are allowed
// (smallSet) it draws among the allowed single-byte tokens and the
// end-of-generation token, if any of them is allowed.
func (s *Sampler) pick() (int32, int) {
	s.m.FillMask(s.bits)
	n := 0
	for _, w := range s.bits {
		n += bits.OnesCount32(w)
	}
	if n <= smallSet {
		var bytesOnly bool
		for _, w := range s.bits[:ByteTokens/32] {
			if w != 0 {
				bytesOnly = true
				break
			}
		}
		if bytesOnly {
			for i := ByteTokens / 32; i < len(s.bits); i++ {
				if i == int(eogID)/32 {
					s.bits[i] &= 1 << (eogID % 32)
				} else {
					s.bits[i] = 0
				}
			}
		}
	}
	weight := weights[1]
	if l := len(s.out); l > 0 && isAlnum(s.out[l-1]) {
		weight = weights[0]
	}
	var total float64
	for wi, w := range s.bits {
		for w != 0 {
			i := wi*32 + bits.TrailingZeros32(w)
			w &= w - 1
			total += weight[i]
		}
	}
	if total == 0 {
		return -1, n
	}
	r := s.rng.Float64() * total
	last := int32(-1)
	for wi, w := range s.bits {
		for w != 0 {
			i := wi*32 + bits.TrailingZeros32(w)
			w &= w - 1
			r -= weight[i]
			last = int32(i)
			if r < 0 {
				return last, n
			}
		}
	}
	return last, n // rounding: the last allowed token
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}
