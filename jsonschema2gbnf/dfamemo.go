package jsonschema2gbnf

import (
	"encoding/binary"
	"regexp"
	"regexp/syntax"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// dfaMemo keeps, for one conversion, the automata built from equal
// inputs: the search automaton of each pattern source, and the products
// and length languages combined from them. A schema repeats its patterns
// (every branch of an expanded anyOf, every pair compared for oneOf,
// every combination of patternProperties), and each rebuild is a subset
// construction, a product and a minimization. Automata are never changed
// once built, so a memoized one is shared. It also keeps the compiled
// regexps and the character-class expressions, which repeat the same way. The memo does not change what
// is charged to MaxDFAWork: callers charge a result each time they use
// it, as when it was rebuilt, so that the limits (and the output) do not
// depend on the memo.
type dfaMemo struct {
	pats map[string]dfaResult
	ops  map[dfaOp]dfaResult
	lens map[[2]int]dfaResult
	all  *dfa // dfaAll(nil)
	held int  // states of the automata in ops
	res  map[string]regexpResult
	cls  map[string]string // classExpr by the set's ranges
}

type regexpResult struct {
	re  *regexp.Regexp
	err error
}

// regexp is regexp.Compile, memoized: checking many names or values
// against the same patterns compiles each once.
func (c *conv) regexp(src string) (*regexp.Regexp, error) {
	if r, ok := c.dfas.res[src]; ok {
		return r.re, r.err
	}
	re, err := regexp.Compile(src)
	if c.dfas.res == nil {
		c.dfas.res = map[string]regexpResult{}
	}
	c.dfas.res[src] = regexpResult{re, err}
	return re, err
}

type dfaResult struct {
	d   *dfa
	err error
}

// dfaOp is a product of two memoized automata.
type dfaOp struct {
	op   byte // '&' intersection, '-' difference
	a, b *dfa
}

// patternDFA returns the search automaton of the pattern src; re is its
// parse (nil: parsePattern(src)).
func (c *conv) patternDFA(src string, re *syntax.Regexp) (*dfa, error) {
	if r, ok := c.dfas.pats[src]; ok {
		return r.d, r.err
	}
	var d *dfa
	var err error
	if f := formatDFAs[src]; f != nil {
		f.once.Do(func() { f.d, f.err = buildPatternDFA(src, re) })
		d, err = f.d, f.err
		if d != nil {
			cp := *d // (the states are shared; complete's result is the conversion's)
			d = &cp
		}
	} else {
		d, err = buildPatternDFA(src, re)
	}
	if c.dfas.pats == nil {
		c.dfas.pats = map[string]dfaResult{}
	}
	c.dfas.pats[src] = dfaResult{d, err}
	return d, err
}

// buildPatternDFA builds the search automaton of the pattern src; re is
// its parse (nil: parsePattern(src)).
func buildPatternDFA(src string, re *syntax.Regexp) (*dfa, error) {
	var err error
	if re == nil {
		if re, err = parsePattern(src); err != nil {
			return nil, err
		}
	}
	return regexDFA(re, true)
}

// formatDFAs holds the search automata of the formats' regular
// expressions (formatRegex, validatorRegex), built once per process on
// first use: they are the same in every conversion, and some take
// milliseconds to build (on the machine of stop 39: uri-reference 6.7
// ms, hostname 6.0, uri 3.2, ipv6 2.7, email 2.2), once per conversion
// that combines a format with a length, a pattern or another branch of a
// oneOf. A conversion takes its own copy of the header, whose complete()
// result it keeps for itself; the states, which never change once
// built, are shared. A fixed set: nothing a schema supplies is kept.
var formatDFAs = func() map[string]*formatDFA {
	m := map[string]*formatDFA{}
	for name := range jsonschema.Formats { // (formatRegex knows only formats the validator has)
		for _, f := range []func(string) (string, bool){formatRegex, validatorRegex} {
			if src, ok := f(name); ok && m[src] == nil {
				m[src] = &formatDFA{}
			}
		}
	}
	return m
}()

type formatDFA struct {
	once sync.Once
	d    *dfa
	err  error
}

// anyString is dfaAll(nil), shared.
func (c *conv) anyString() *dfa {
	if c.dfas.all == nil {
		c.dfas.all = dfaAll(nil)
	}
	return c.dfas.all
}

// lengthDFA is dfaLength, memoized.
func (c *conv) lengthDFA(min, max int) (*dfa, error) {
	k := [2]int{min, max}
	if r, ok := c.dfas.lens[k]; ok {
		return r.d, r.err
	}
	d, err := dfaLength(min, max)
	if c.dfas.lens == nil {
		c.dfas.lens = map[[2]int]dfaResult{}
	}
	c.dfas.lens[k] = dfaResult{d, err}
	return d, err
}

// intersect is intersectDFA, memoized.
func (c *conv) intersect(a, b *dfa) (*dfa, error) { return c.product('&', a, b) }

// minus is minusDFA, memoized.
func (c *conv) minus(a, b *dfa) (*dfa, error) { return c.product('-', a, b) }

func (c *conv) product(op byte, a, b *dfa) (*dfa, error) {
	k := dfaOp{op, a, b}
	if r, ok := c.dfas.ops[k]; ok {
		return r.d, r.err
	}
	var d *dfa
	var err error
	if op == '&' {
		d, err = intersectDFA(a, b)
	} else {
		d, err = minusDFA(a, b)
	}
	if d != nil {
		if c.dfas.held+len(d.states) > maxMemoStates {
			return d, err // the memo is full: computed, not kept
		}
		c.dfas.held += len(d.states)
	}
	if c.dfas.ops == nil {
		c.dfas.ops = map[dfaOp]dfaResult{}
	}
	c.dfas.ops[k] = dfaResult{d, err}
	return d, err
}

// maxMemoStates bounds the states of the products the memo keeps for one
// conversion (about 100 bytes each with their edges: ~25 MB). Pairwise
// checks (oneOf branches compared two by two) build products that are
// used once; without a bound a schema with many patterned branches would
// keep them all.
const maxMemoStates = 1 << 18

// classExpr is classExpr, memoized: the classes of a grammar's tries and
// automata repeat (every trie node that one character leaves).
func (c *conv) classExpr(s runeSet) string {
	b := make([]byte, 0, 4*len(s))
	for _, r := range s {
		b = binary.AppendUvarint(b, uint64(r))
	}
	if x, ok := c.dfas.cls[string(b)]; ok {
		return x
	}
	x := classExpr(s)
	if c.dfas.cls == nil {
		c.dfas.cls = map[string]string{}
	}
	c.dfas.cls[string(b)] = x
	return x
}
