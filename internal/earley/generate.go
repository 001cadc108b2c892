package earley

import (
	"math/rand"
	"unicode/utf8"

	"github.com/structgen/structgen/gbnf"
)

// Generate returns a random sentence of g of at most maxBytes bytes, made
// of bytes only (derivations through token references are avoided), and
// true; or false if g has no such sentence that short.
//
// It expands a random derivation with an explicit stack, keeping the
// bytes written plus the shortest completion of everything pending within
// maxBytes: every choice (alternative, repetition count, character) is
// limited to what still fits. Once the output is past half of maxBytes,
// or after many steps, every choice is the one with the shortest
// completion (ties broken by the least derivation height), which always
// terminates. Repetition counts stay within their bounds, and characters
// of negated classes are drawn from all of Unicode (every UTF-8 length).
func Generate(g *gbnf.Grammar, rng *rand.Rand, maxBytes int) ([]byte, bool) {
	r := New(g)
	gen := newGenerator(r)
	return gen.run(rng, maxBytes)
}

const inf = 1 << 60

type generator struct {
	r      *Recognizer
	minLen []int // shortest byte sentence per node (tokens excluded); inf if none
	height []int // least derivation height among the shortest sentences
}

func newGenerator(r *Recognizer) *generator {
	n := len(r.nodes)
	gen := &generator{r: r, minLen: make([]int, n), height: make([]int, n)}
	for i := range gen.minLen {
		gen.minLen[i] = inf
		gen.height[i] = inf
	}
	// Shortest lengths: greatest fixpoint from inf (Bellman-Ford style).
	for changed := true; changed; {
		changed = false
		for i := range r.nodes {
			if v := gen.lenOf(int32(i)); v < gen.minLen[i] {
				gen.minLen[i] = v
				changed = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for i := range r.nodes {
			if v := gen.heightOf(int32(i)); v < gen.height[i] {
				gen.height[i] = v
				changed = true
			}
		}
	}
	return gen
}

func sat(a, b int) int { return min(a+b, inf) }

func (gen *generator) lenOf(i int32) int {
	n := &gen.r.nodes[i]
	switch n.op {
	case gbnf.OpEmpty:
		return 0
	case gbnf.OpLiteral:
		return len(n.lit)
	case gbnf.OpClass:
		if len(n.ranges) == 0 {
			return inf
		}
		return utf8.RuneLen(n.ranges[0])
	case gbnf.OpToken:
		return inf
	case gbnf.OpSeq:
		sum := 0
		for _, s := range n.subs {
			sum = sat(sum, gen.minLen[s])
		}
		return sum
	case gbnf.OpAlt:
		best := inf
		for _, s := range n.subs {
			best = min(best, gen.minLen[s])
		}
		return best
	case gbnf.OpRepeat:
		if n.min == 0 {
			return 0
		}
		v := gen.minLen[n.subs[0]]
		if v >= inf/int(n.min+1) {
			return inf
		}
		return v * n.min
	case gbnf.OpRule:
		return gen.minLen[n.subs[0]]
	}
	return inf
}

// heightOf is the least height of a shortest derivation of node i.
func (gen *generator) heightOf(i int32) int {
	n := &gen.r.nodes[i]
	if gen.minLen[i] >= inf {
		return inf
	}
	switch n.op {
	case gbnf.OpEmpty, gbnf.OpLiteral, gbnf.OpClass:
		return 1
	case gbnf.OpSeq:
		h := 0
		for _, s := range n.subs {
			h = max(h, gen.height[s])
		}
		return sat(h, 1)
	case gbnf.OpAlt:
		h := inf
		for _, s := range n.subs {
			if gen.minLen[s] == gen.minLen[i] {
				h = min(h, gen.height[s])
			}
		}
		return sat(h, 1)
	case gbnf.OpRepeat:
		if n.min == 0 {
			return 1
		}
		return sat(gen.height[n.subs[0]], 1)
	case gbnf.OpRule:
		return sat(gen.height[n.subs[0]], 1)
	}
	return inf
}

// shortest returns the child of alternation i with the shortest
// completion and least height.
func (gen *generator) shortest(i int32) int32 {
	n := &gen.r.nodes[i]
	best := int32(-1)
	for _, s := range n.subs {
		if gen.minLen[s] != gen.minLen[i] {
			continue
		}
		if best < 0 || gen.height[s] < gen.height[best] {
			best = s
		}
	}
	return best
}

func (gen *generator) run(rng *rand.Rand, maxBytes int) ([]byte, bool) {
	r := gen.r
	if gen.minLen[r.root] > maxBytes {
		return nil, false
	}
	var out []byte
	stack := []int32{r.root}
	pending := gen.minLen[r.root]
	maxSteps := 50*maxBytes + 10000
	for steps := 0; len(stack) > 0; steps++ {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		pending -= gen.minLen[i]
		short := steps > maxSteps || 2*(len(out)+pending) > maxBytes
		slack := maxBytes - len(out) - pending // bytes this node may use
		n := &r.nodes[i]
		switch n.op {
		case gbnf.OpLiteral:
			out = append(out, n.lit...)
		case gbnf.OpClass:
			out = utf8.AppendRune(out, gen.pickRune(rng, n.ranges, slack, short))
		case gbnf.OpSeq:
			for k := len(n.subs) - 1; k >= 0; k-- {
				stack = append(stack, n.subs[k])
				pending += gen.minLen[n.subs[k]]
			}
		case gbnf.OpAlt:
			c := gen.shortest(i)
			if !short {
				var fits []int32
				for _, s := range n.subs {
					if gen.minLen[s] <= slack {
						fits = append(fits, s)
					}
				}
				c = fits[rng.Intn(len(fits))]
			}
			stack = append(stack, c)
			pending += gen.minLen[c]
		case gbnf.OpRepeat:
			sub := n.subs[0]
			k := n.min
			if !short && gen.minLen[sub] < inf {
				hi := n.max
				if hi == gbnf.Unbounded {
					hi = n.min + geometric(rng)
				}
				if l := gen.minLen[sub]; l > 0 {
					hi = min(hi, n.min+(slack-n.min*l)/l)
				} else {
					hi = min(hi, n.min+8) // empty iterations add nothing but work
				}
				if hi > k {
					k += rng.Intn(hi - k + 1)
				}
			}
			for j := 0; j < k; j++ {
				stack = append(stack, sub)
			}
			pending += k * gen.minLen[sub]
		case gbnf.OpRule:
			stack = append(stack, n.subs[0])
			pending += gen.minLen[n.subs[0]]
		}
	}
	return out, true
}

// geometric returns 0 with probability 1/2, 1 with 1/4, ...
func geometric(rng *rand.Rand) int {
	k := 0
	for k < 16 && rng.Intn(2) == 1 {
		k++
	}
	return k
}

// pickRune draws a code point from ranges whose UTF-8 length fits in
// slack bytes: half the time from the first range (usually ASCII), else
// from a uniformly chosen range. short picks the smallest.
func (gen *generator) pickRune(rng *rand.Rand, ranges []rune, slack int, short bool) rune {
	if !short {
		for try := 0; try < 4; try++ {
			k := 0
			if rng.Intn(2) == 0 {
				k = rng.Intn(len(ranges) / 2)
			}
			lo, hi := ranges[2*k], ranges[2*k+1]
			c := lo + rune(rng.Int63n(int64(hi-lo)+1))
			if utf8.RuneLen(c) <= slack {
				return c
			}
		}
	}
	return ranges[0]
}
