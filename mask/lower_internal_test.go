package mask

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
)

// TestClassRxRanges checks that a class's one-byte characters are one
// byte position whatever their ranges, its other characters sequences
// as before, and that repetition keys tell such positions apart.
func TestClassRxRanges(t *testing.T) {
	r := new(rxArena).classRx([]rune{' ', '!', '#', '[', ']', 'g', 'i', '~'}, false)
	if r.op != rxByte || r.rng == nil || !slices.Equal(*r.rng, []byte{' ', '!', '#', '[', ']', 'g', 'i', '~'}) || r.lo != ' ' || r.hi != '~' || r.size() != 1 {
		t.Fatalf("ASCII class of four ranges: %+v, want one byte position with its ranges", r)
	}
	if w := r.byteWidth(); w != 2+57+11+22 {
		t.Errorf("byteWidth = %d, want %d", w, 2+57+11+22)
	}
	one := new(rxArena).classRx([]rune{'a', 'z'}, false)
	if one.op != rxByte || one.rng != nil || one.lo != 'a' || one.hi != 'z' {
		t.Errorf("[a-z]: %+v, want one range", one)
	}
	// [^"\\]: the one-byte characters (three ranges) first, then the
	// multi-byte sequences.
	neg := new(rxArena).classRx([]rune{'"', '"', '\\', '\\'}, true)
	if neg.op != rxAlt || neg.subs[0].op != rxByte || neg.subs[0].rng == nil || !slices.Equal(*neg.subs[0].rng, []byte{0, '!', '#', '[', ']', 0x7F}) {
		t.Fatalf(`[^"\\]: %+v, want an alternation led by one position of three ranges`, neg)
	}
	for _, s := range neg.subs[1:] {
		if s.op == rxByte {
			t.Errorf(`[^"\\]: a second one-byte alternative %+v`, s)
		}
	}
	var k1, k2 strings.Builder
	new(rxArena).classRx([]rune{'a', 'c', 'x', 'z'}, false).key(&k1)
	new(rxArena).classRx([]rune{'a', 'z'}, false).key(&k2)
	if k1.String() == k2.String() {
		t.Errorf("[a-cx-z] and [a-z] have the same key %q", k1.String())
	}
}

// TestLowerPositionCap checks that lowerGrammar's maxPositions stops the
// lowering exactly when its frames would hold more positions than that
// (a cap at the total lowers everything, the same frames; one below
// stops), and that the lowerer it returns then serves the fallback
// lowering as a fresh one would.
func TestLowerPositionCap(t *testing.T) {
	v := lettersVocab(t, "a", "b", "{", "}")
	for _, src := range []string{
		`root ::= "{" (kv ("," kv)*)? "}"
kv ::= [a-z]{1,4} ":" (num | root)
num ::= "-"? [0-9]{1,3} ("." [0-9]+)?`,
		`root ::= a b c
a ::= [a-z]{2,5} "x" a | "y"
b ::= ("k" [0-9]{3})* "." [a-f]{0,6}
c ::= "(" c ")" | [xyz]{3} b`,
		`root ::= ([a-z] [0-9]{2,3}){1,20} | "z"`,
	} {
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		defs, _, err := lowerGrammar(g, v, false, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, d := range defs {
			total += d.body.size()
		}
		at, _, err := lowerGrammar(g, v, false, nil, total)
		if err != nil || !slices.Equal(frameKeys(at), frameKeys(defs)) {
			t.Errorf("%s\ncap %d (the total): %v, frames %q; want %q", src, total, err, frameKeys(at), frameKeys(defs))
		}
		_, lw, err := lowerGrammar(g, v, false, nil, total-1)
		if err != errPositionCap || lw == nil {
			t.Errorf("%s\ncap %d (one below the total): %v, lowerer %v", src, total-1, err, lw != nil)
			continue
		}
		reused, _, err1 := lowerGrammar(g, v, true, lw, 0)
		fresh, _, err2 := lowerGrammar(g, v, true, nil, 0)
		if err1 != nil || err2 != nil || !slices.Equal(frameKeys(reused), frameKeys(fresh)) {
			t.Errorf("%s\nfallback after the cap: %v %q; fresh: %v %q", src, err1, frameKeys(reused), err2, frameKeys(fresh))
		}
	}
}

// frameKeys describes frames: name, bounds and body.
func frameKeys(defs []*frameDef) []string {
	var out []string
	for _, d := range defs {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %v %d %d ", d.name, d.repeat, d.min, d.max)
		d.body.key(&b)
		out = append(out, b.String())
	}
	return out
}

// rxArena.list hands out empty lists with room for exactly what was
// asked, apart from each other, whatever the size and the chunk left:
// a list longer than a fresh chunk (an alternation of hundreds as the
// first list a lowering asks for) included.
func TestRxArenaList(t *testing.T) {
	var a rxArena
	var lists [][]*rx
	nodes := make([]rx, 4000)
	for i, k := range []int{200, 1, 129, 512, 513, 3000, 1, 128, 64, 2048, 7, 511} {
		l := a.list(k)
		if len(l) != 0 || cap(l) != k {
			t.Fatalf("list %d (%d): len %d cap %d", i, k, len(l), cap(l))
		}
		for j := range k {
			l = append(l, &nodes[j])
		}
		lists = append(lists, l)
	}
	for i, l := range lists {
		for j, x := range l {
			if x != &nodes[j] {
				t.Fatalf("list %d entry %d overwritten", i, j)
			}
		}
	}
	// A grammar whose first list is an alternation of 300.
	var alts []string
	for i := range 300 {
		alts = append(alts, fmt.Sprintf(`"k%d"`, i))
	}
	g, err := gbnf.Parse("root ::= " + strings.Join(alts, " | "))
	if err != nil {
		t.Fatal(err)
	}
	defs, _, err := lowerGrammar(g, lettersVocab(t), false, nil, 0)
	if err != nil || len(defs) != 1 || len(defs[0].body.subs) != 300 {
		t.Fatalf("lowering: %v", err)
	}
}
