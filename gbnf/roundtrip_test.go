package gbnf_test

import (
	"math/rand"
	"testing"

	"github.com/structgen/structgen/gbnf"
)

// interestingRunes are code points the printer must take care of.
var interestingRunes = []rune{
	'"', '\\', '[', ']', '-', '^', '#', '|', '(', ')', ' ', '.', '*', '<', '>', '{', '}',
	'\n', '\t', '\r', 0, 0x1F, 0x7F, 0x80, 0x9F, 0xA0, 0xAD, 0xFF, 0x100,
	0x2028, 0x2029, 0x3000, 0xFEFF, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF,
	'a', 'z', 'A', '0', 'é', '中', '😀', 0x0301, 0x200B,
}

type irGen struct {
	rng    *rand.Rand
	nRules int
}

func (x *irGen) rune() rune {
	if x.rng.Intn(3) > 0 {
		return interestingRunes[x.rng.Intn(len(interestingRunes))]
	}
	for {
		r := rune(x.rng.Intn(0x110000))
		if r < 0xD800 || r > 0xDFFF {
			return r
		}
	}
}

func (x *irGen) class() *gbnf.Node {
	var rs []rune
	for i := 0; i < 1+x.rng.Intn(4); i++ {
		lo, hi := x.rune(), x.rune()
		if x.rng.Intn(2) == 0 {
			hi = lo
		}
		if lo > hi {
			lo, hi = hi, lo
		}
		// Keep scalar values only, as the parser does.
		if lo < 0xD800 {
			rs = append(rs, lo, min(hi, 0xD7FF))
		}
		if hi > 0xDFFF {
			rs = append(rs, max(lo, 0xE000), hi)
		}
	}
	rs = gbnf.NormalizeRanges(rs)
	neg := x.rng.Intn(3) == 0
	if len(rs) == 0 && !neg {
		rs = []rune{'a', 'a'}
	}
	if x.rng.Intn(8) == 0 {
		return &gbnf.Node{Op: gbnf.OpClass, Negated: true} // "."
	}
	return &gbnf.Node{Op: gbnf.OpClass, Ranges: rs, Negated: neg}
}

func (x *irGen) leaf() *gbnf.Node {
	switch x.rng.Intn(6) {
	case 0, 1:
		rs := make([]rune, 1+x.rng.Intn(4))
		for i := range rs {
			rs[i] = x.rune()
		}
		return &gbnf.Node{Op: gbnf.OpLiteral, Runes: rs}
	case 2, 3:
		return x.class()
	case 4:
		return &gbnf.Node{Op: gbnf.OpRule, Rule: gbnf.RuleID(x.rng.Intn(x.nRules))}
	default:
		n := &gbnf.Node{Op: gbnf.OpToken, Negated: x.rng.Intn(2) == 0, Token: int32(x.rng.Intn(200000))}
		if x.rng.Intn(2) == 0 {
			texts := []string{"im_end", "a|b", "x y", "é", "#", "|", "eot_id", "\n"}
			n.Token, n.TokenText = -1, texts[x.rng.Intn(len(texts))]
		}
		return n
	}
}

// node builds a random node in the parser's normal form: sequences hold
// no empty nodes and no sequences, alternations no alternations.
func (x *irGen) node(depth int) *gbnf.Node {
	if depth == 0 || x.rng.Intn(3) == 0 {
		if x.rng.Intn(10) == 0 {
			return &gbnf.Node{Op: gbnf.OpEmpty}
		}
		return x.leaf()
	}
	switch x.rng.Intn(3) {
	case 0:
		var subs []*gbnf.Node
		for len(subs) < 2+x.rng.Intn(2) {
			s := x.node(depth - 1)
			switch s.Op {
			case gbnf.OpEmpty:
			case gbnf.OpSeq:
				subs = append(subs, s.Subs...)
			default:
				subs = append(subs, s)
			}
		}
		return &gbnf.Node{Op: gbnf.OpSeq, Subs: subs}
	case 1:
		var subs []*gbnf.Node
		for len(subs) < 2+x.rng.Intn(2) {
			s := x.node(depth - 1)
			if s.Op == gbnf.OpAlt {
				subs = append(subs, s.Subs...)
			} else {
				subs = append(subs, s)
			}
		}
		return &gbnf.Node{Op: gbnf.OpAlt, Subs: subs}
	default:
		bounds := [][2]int{{0, gbnf.Unbounded}, {1, gbnf.Unbounded}, {0, 1}, {2, 2}, {0, 0}, {3, gbnf.Unbounded}, {1, 4}, {0, 3}}
		bd := bounds[x.rng.Intn(len(bounds))]
		return &gbnf.Node{Op: gbnf.OpRepeat, Subs: []*gbnf.Node{x.node(depth - 1)}, Min: bd[0], Max: bd[1]}
	}
}

// randomGrammar builds a random grammar of one to six rules in the IR.
func randomGrammar(rng *rand.Rand) *gbnf.Grammar {
	names := []string{"root", "a", "b-2", "3c", "-", "x-y-z"}
	x := &irGen{rng: rng, nRules: 1 + rng.Intn(len(names))}
	g := &gbnf.Grammar{}
	for id := 0; id < x.nRules; id++ {
		g.Rules = append(g.Rules, &gbnf.Rule{ID: gbnf.RuleID(id), Name: names[id], Body: x.node(4)})
	}
	return g
}

// TestPrintRandomIR prints random grammars built directly in the IR
// (normal form, every kind of node, code points the printer must escape)
// and parses them back: the result must be equal.
func TestPrintRandomIR(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	for i := 0; i < 3000; i++ {
		g := randomGrammar(rng)
		src := g.String()
		g2, err := gbnf.Parse(src)
		if err != nil {
			t.Fatalf("printed grammar does not parse: %v\n%s", err, src)
		}
		if !g.Equal(g2) {
			t.Fatalf("round trip differs:\n%s\nreprinted:\n%s", src, g2.String())
		}
	}
}
