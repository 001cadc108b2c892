package mask

import (
	"fmt"
	"sync"
	"time"

	"github.com/structgen/structgen/gbnf"
)

// Error is a compilation error. Pos is the position in the grammar source
// when the error concerns one place (zero otherwise).
type Error struct {
	Pos gbnf.Pos
	Msg string
}

func (e *Error) Error() string {
	if e.Pos.Line > 0 {
		return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
	}
	return e.Msg
}

// Compiled is a grammar compiled against a vocabulary. It is immutable
// from the caller's point of view and safe for concurrent use by any
// number of Matchers: the deeper levels of the mask cache are filled on
// first use under an internal lock.
type Compiled struct {
	g      *gbnf.Grammar
	v      *Vocab
	prep   *vocabPrep
	a      *automaton
	maxLen int32 // longest normal token (bytes): the horizon of one mask step

	level1 []*level1 // per state; nil for states that are never a stack top

	mu         sync.Mutex
	repEntries map[ctxKey]*ctxEntry

	stats CompileStats
}

// CompileStats describes a compilation.
type CompileStats struct {
	Frames       int           // rule and repetition frames
	States       int           // automaton states
	ByteClasses  int           // byte equivalence classes
	TopStates    int           // states with a precomputed level-1 mask
	Duration     time.Duration // total compile time (vocabulary preparation excluded)
	WalkDuration time.Duration // of which: level-1 trie walks
}

// Stats returns statistics of the compilation.
func (c *Compiled) Stats() CompileStats { return c.stats }

// Vocab returns the vocabulary the grammar was compiled against.
func (c *Compiled) Vocab() *Vocab { return c.v }

// Grammar returns the compiled grammar.
func (c *Compiled) Grammar() *gbnf.Grammar { return c.g }

// Compile compiles g against vocabulary v. It prepares the vocabulary on
// first use (the token trie; see PrepareVocab), lowers the grammar to
// frames, builds their automata and walks the token trie once per
// possible stack-top state. Cost: milliseconds for typical grammars on a
// 128k vocabulary; the result is shared by any number of matchers.
//
// Supported beyond llama.cpp: direct left recursion (r ::= r α | β is
// rewritten to r ::= β α*). Indirect left recursion is an error.
func Compile(g *gbnf.Grammar, v *Vocab) (*Compiled, error) {
	if g == nil || v == nil {
		return nil, fmt.Errorf("mask: Compile needs a grammar and a vocabulary")
	}
	if len(g.Rules) == 0 || int(g.Root) < 0 || int(g.Root) >= len(g.Rules) {
		return nil, fmt.Errorf("mask: grammar has no root rule")
	}
	prep := prepare(v)
	start := time.Now()
	defs, err := lowerGrammar(g, v)
	if err != nil {
		return nil, err
	}
	a, err := buildAutomaton(defs)
	if err != nil {
		return nil, err
	}
	c := &Compiled{
		g:          g,
		v:          v,
		prep:       prep,
		a:          a,
		maxLen:     int32(max(prep.maxLen, 1)),
		level1:     make([]*level1, len(a.states)),
		repEntries: map[ctxKey]*ctxEntry{},
	}
	walkStart := time.Now()
	w := newWalker(c)
	tops := 0
	var batch []int32
	ps := &pwalkState{}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		ls, err := w.runLevel1Batch(batch, ps)
		if err != nil {
			return err
		}
		for i, q := range batch {
			c.level1[q] = ls[i]
		}
		batch = batch[:0]
		return nil
	}
	for q := range a.states {
		if a.states[q].flags&stTop == 0 {
			continue
		}
		tops++
		if !a.frames[a.states[q].frame].repeat {
			batch = append(batch, int32(q))
			if len(batch) == 64 {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			continue
		}
		w.acc = newSetBuilder(prep.words)
		l, err := w.runLevel1(int32(q))
		if err != nil {
			return nil, err
		}
		c.level1[q] = l
	}
	if err := flush(); err != nil {
		return nil, err
	}
	c.stats = CompileStats{
		Frames:       len(a.frames),
		States:       len(a.states),
		ByteClasses:  a.nc,
		TopStates:    tops,
		Duration:     time.Since(start),
		WalkDuration: time.Since(walkStart),
	}
	return c, nil
}

// MemoryBytes estimates the memory held by the compiled automaton and its
// mask cache (the shared vocabulary trie excluded).
func (c *Compiled) MemoryBytes() int {
	n := 4*len(c.a.trans) + 16*len(c.a.states) + 4*len(c.a.minLen)
	seen := map[*tokenSet]bool{}
	var addEntry func(e *ctxEntry)
	addEntry = func(e *ctxEntry) {
		if e == nil {
			return
		}
		if !seen[e.in] {
			seen[e.in] = true
			n += e.in.bytes()
		}
		n += 4 * len(e.cross)
		for _, x := range e.next {
			addEntry(x)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.level1 {
		if l == nil {
			continue
		}
		if !seen[&l.full] {
			seen[&l.full] = true
			n += l.full.bytes()
		}
		n += 8*len(l.cross) + 4*len(l.byCost) + 4*len(l.costOff)
		if l.plain != nil {
			n += 4 * len(l.plain.cross)
			for _, x := range l.plain.next {
				addEntry(x)
			}
		}
	}
	for _, e := range c.repEntries {
		addEntry(e)
	}
	return n
}
