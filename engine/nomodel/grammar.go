package nomodel

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/structgen/structgen/gbnf"
)

// grammarPlan is a grammar prepared for derivation: the shortest
// sentence of every node, and the height of a shortest derivation (which
// the closing phase follows so that recursion ends).
type grammarPlan struct {
	g       *gbnf.Grammar
	a       *gbnf.Analysis
	minLen  map[*gbnf.Node]int
	height  map[*gbnf.Node]int
	rulesH  []int
	tokens  bool                  // the grammar has token references
	classes map[*gbnf.Node][]rune // classes as positive ranges
}

const infHeight = math.MaxInt32

func newGrammarPlan(g *gbnf.Grammar) *grammarPlan {
	p := &grammarPlan{g: g, a: g.Analyze(), minLen: map[*gbnf.Node]int{}, height: map[*gbnf.Node]int{},
		classes: map[*gbnf.Node][]rune{}}
	var index func(n *gbnf.Node)
	index = func(n *gbnf.Node) {
		p.minLen[n] = p.a.NodeMinLen(n)
		switch n.Op {
		case gbnf.OpToken:
			p.tokens = true
		case gbnf.OpClass:
			if n.Negated {
				p.classes[n] = gbnf.ComplementRanges(n.Ranges)
			} else {
				p.classes[n] = n.Ranges
			}
		}
		for _, c := range n.Subs {
			index(c)
		}
	}
	for _, r := range g.Rules {
		index(r.Body)
	}
	// Heights of shortest derivations, by fixpoint over the rules.
	p.rulesH = make([]int, len(g.Rules))
	for i := range p.rulesH {
		p.rulesH[i] = infHeight
	}
	for changed := true; changed; {
		changed = false
		for i, r := range g.Rules {
			if h := p.nodeHeight(r.Body); h < infHeight && h+1 < p.rulesH[i] {
				p.rulesH[i] = h + 1
				changed = true
			}
		}
	}
	for _, r := range g.Rules {
		p.storeHeights(r.Body)
	}
	return p
}

// nodeHeight is the height of a shortest derivation of n, given the
// rule heights so far.
func (p *grammarPlan) nodeHeight(n *gbnf.Node) int {
	switch n.Op {
	case gbnf.OpRule:
		return p.rulesH[n.Rule]
	case gbnf.OpSeq:
		h := 0
		for _, c := range n.Subs {
			h = max(h, p.nodeHeight(c))
		}
		return h
	case gbnf.OpAlt:
		h := infHeight
		for _, c := range n.Subs {
			if p.minLen[c] == p.minLen[n] {
				h = min(h, p.nodeHeight(c))
			}
		}
		return h
	case gbnf.OpRepeat:
		if n.Min == 0 {
			return 0
		}
		return p.nodeHeight(n.Subs[0])
	}
	return 0
}

func (p *grammarPlan) storeHeights(n *gbnf.Node) {
	p.height[n] = p.nodeHeight(n)
	for _, c := range n.Subs {
		p.storeHeights(c)
	}
}

// shortestBranch returns the branch of an alternation that a closing
// derivation takes: the shortest sentence, then the lowest height.
func (p *grammarPlan) shortestBranch(n *gbnf.Node) *gbnf.Node {
	var best *gbnf.Node
	for _, c := range n.Subs {
		if p.minLen[c] == gbnf.NoSentence {
			continue
		}
		if best == nil || p.minLen[c] < p.minLen[best] || p.minLen[c] == p.minLen[best] && p.height[c] < p.height[best] {
			best = c
		}
	}
	return best
}

// gframe is a node being derived: a sequence at its next part, or a
// repetition with its drawn count.
type gframe struct {
	n    *gbnf.Node
	i, k int
}

// softFrames is the nesting (open sequences and repetitions) past which
// a derivation closes: recursive grammars (expressions, nested lists)
// whose uniform choices recurse more often than they end would
// otherwise grow to the budget. A JSON Schema grammar nests about two
// frames per level of the document.
const softFrames = 32

// maxDeriveSteps bounds the work of one derivation in node visits per
// budget byte; past it the derivation closes (chains of rules that
// derive the empty string could otherwise spin).
const maxDeriveSteps = 64

// errNoDerivation reports a grammar with no sentence within the budget.
var errNoDerivation = errors.New("nomodel: no sentence of the grammar within the budget")

// nextGrammar draws a sentence by deriving it from the grammar: every
// alternation picks uniformly among the branches whose shortest sentence
// still fits the budget, x? is taken at the policy's optional rate,
// repetition counts are uniform over their bounds (unbounded ones over
// min..min+ArrayMax-ArrayMin), runs of a character class are spelt from
// words. Past half the budget or softFrames of nesting the derivation
// closes: shortest branches, fewest iterations. The sentence is then fed to the matcher.
func (s *Sampler) nextGrammar() ([]byte, error) {
	if s.gram == nil || s.gram.g != s.c.Grammar() {
		s.gram = newGrammarPlan(s.c.Grammar())
	}
	p := s.gram
	if p.tokens {
		// Token references name tokens, not text: the token-level
		// sampler handles them.
		return s.nextUniform()
	}
	m := s.m
	m.Reset()
	s.out, s.toks, s.closed = s.out[:0], s.toks[:0], 0
	root := s.c.Grammar().Rules[s.c.Grammar().Root].Body
	if n := p.minLen[root]; n == gbnf.NoSentence || n > s.budget {
		return nil, fmt.Errorf("%w: it needs %d bytes, the budget is %d", ErrBudget, n, s.budget)
	}
	for attempt := 0; ; attempt++ {
		err := s.derive1(p, root, attempt == maxDeriveAttempts-1)
		if err == nil && len(s.pbuf) <= s.budget {
			break
		}
		if err != nil && err != errNoDerivation || attempt == maxDeriveAttempts-1 {
			if err == nil {
				err = errNoDerivation
			}
			return nil, err
		}
	}
	// The derivation is a sentence of the grammar by construction; the
	// matcher checks it (and stays the authority).
	if err := m.AcceptBytes(s.pbuf); err != nil {
		return nil, fmt.Errorf("nomodel: derived sentence rejected by the matcher: %w", err)
	}
	if err := m.Accept(eogID); err != nil {
		return nil, fmt.Errorf("nomodel: derived sentence is incomplete: %w", err)
	}
	s.out = append(s.out, s.pbuf...)
	for _, b := range s.out {
		s.toks = append(s.toks, int32(b))
	}
	return s.out, nil
}

// maxDeriveAttempts bounds the derivations of one sentence: one that
// overruns the budget (multi-byte characters where the shortest sentence
// counts one byte) is drawn again, the last time along shortest branches.
const maxDeriveAttempts = 4

// derive1 derives one sentence into s.pbuf; closeNow takes shortest
// branches throughout.
func (s *Sampler) derive1(p *grammarPlan, root *gbnf.Node, closeNow bool) error {
	s.pbuf = s.pbuf[:0]
	stack := s.gstack[:0]
	defer func() { s.gstack = stack[:0] }()
	steps, maxSteps := 0, maxDeriveSteps*(s.budget+16)
	soft := s.budget / 2
	pending := func() int {
		t := 0
		for _, f := range stack {
			if f.n.Op == gbnf.OpSeq {
				for _, c := range f.n.Subs[f.i:] {
					t += p.minLen[c]
				}
			} else {
				t += (f.k - f.i) * p.minLen[f.n.Subs[0]]
			}
		}
		return t
	}
	expand := func(n *gbnf.Node) error {
		for {
			steps++
			switch n.Op {
			case gbnf.OpEmpty:
				return nil
			case gbnf.OpLiteral:
				for _, r := range n.Runes {
					s.pbuf = utf8.AppendRune(s.pbuf, r)
				}
				return nil
			case gbnf.OpClass:
				r, ok := s.classRune(p.classes[n])
				if !ok {
					return errNoDerivation
				}
				s.pbuf = utf8.AppendRune(s.pbuf, r)
				return nil
			case gbnf.OpRule:
				n = s.c.Grammar().Rules[n.Rule].Body
			case gbnf.OpAlt:
				room := s.budget - len(s.pbuf) - pending()
				closing := closeNow || len(s.pbuf)+pending() >= soft || len(stack) > softFrames || steps > maxSteps
				var next *gbnf.Node
				if closing {
					next = p.shortestBranch(n)
				} else {
					viable := 0
					for _, c := range n.Subs {
						if l := p.minLen[c]; l != gbnf.NoSentence && l <= room {
							viable++
						}
					}
					if viable == 0 {
						return errNoDerivation
					}
					k := s.rng.IntN(viable)
					for i, c := range n.Subs {
						if l := p.minLen[c]; l != gbnf.NoSentence && l <= room {
							if k == 0 {
								next = c
								if s.onChoice != nil {
									s.onChoice(n, i, viable)
								}
								break
							}
							k--
						}
					}
				}
				if next == nil {
					return errNoDerivation
				}
				n = next
			case gbnf.OpSeq:
				stack = append(stack, gframe{n: n})
				return nil
			case gbnf.OpRepeat:
				sub := n.Subs[0]
				room := s.budget - len(s.pbuf) - pending()
				closing := closeNow || len(s.pbuf)+pending() >= soft || len(stack) > softFrames || steps > maxSteps
				hi := n.Max
				if ml := p.minLen[sub]; ml > 0 {
					if fit := room / ml; hi < 0 || fit < hi {
						hi = fit
					}
				}
				var k int
				cls, isRun := p.classes[sub]
				switch {
				case closing || hi == n.Min:
					k = n.Min
				case n.Min == 0 && n.Max == 1:
					if s.rng.Float64() < s.pol.OptionalRate {
						k = 1
					}
				case isRun:
					k = s.runLength(n.Min, hi, cls)
				default:
					k = s.repeatCount(n.Min, hi)
				}
				if s.onChoice != nil && !closing && hi != n.Min {
					s.onChoice(n, k, hi)
				}
				if isRun && k > 0 {
					if !s.spellRun(cls, k) {
						return errNoDerivation
					}
					return nil
				}
				stack = append(stack, gframe{n: n, k: k})
				return nil
			default:
				return fmt.Errorf("nomodel: cannot derive a %v node", n.Op)
			}
		}
	}
	if err := expand(root); err != nil {
		return err
	}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		var next *gbnf.Node
		if f.n.Op == gbnf.OpSeq {
			if f.i < len(f.n.Subs) {
				next = f.n.Subs[f.i]
			}
		} else if f.i < f.k {
			next = f.n.Subs[0]
		}
		if next == nil {
			stack = stack[:len(stack)-1]
			continue
		}
		f.i++
		if err := expand(next); err != nil {
			return err
		}
	}
	return nil
}
