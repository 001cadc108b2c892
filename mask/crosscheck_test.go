package mask_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/mask"
)

// refAllowed computes the reference mask with the Earley recognizer.
func refAllowed(v *mask.Vocab, st *earley.State) []bool {
	out := make([]bool, v.Size())
	for id := int32(0); int(id) < v.Size(); id++ {
		if v.Kind(id) != mask.TokenNormal {
			continue
		}
		s := st
		for _, b := range v.Token(id) {
			if s = s.Next(b); s == nil {
				break
			}
		}
		out[id] = s != nil
	}
	return out
}

// crossCheck runs random walks through g with vocabulary v and compares
// every mask with the reference recognizer. It returns the compiled
// grammar (after the walks).
func crossCheck(t *testing.T, g *gbnf.Grammar, v *mask.Vocab, walks, steps int, seed uint64) *mask.Compiled {
	t.Helper()
	c, err := mask.Compile(g, v)
	if err != nil {
		t.Fatal(err)
	}
	r := earley.New(g)
	rng := rand.New(rand.NewPCG(seed, 1))
	words := make([]uint32, c.Words())
	for w := 0; w < walks; w++ {
		m := c.NewMatcher()
		st := r.Start()
		var out []byte
		for s := 0; s < steps; s++ {
			m.FillMask(words)
			ref := refAllowed(v, st)
			var allowed []int32
			for id := int32(0); int(id) < v.Size(); id++ {
				got := words[id>>5]&(1<<(uint32(id)&31)) != 0
				if v.IsEOG(id) {
					if got != st.CanEnd() {
						t.Fatalf("walk %d step %d after %q: EOG allowed=%v, reference CanEnd=%v", w, s, out, got, st.CanEnd())
					}
					continue
				}
				if got != ref[id] {
					t.Fatalf("walk %d step %d after %q: token %d %q allowed=%v, reference says %v", w, s, out, id, v.Token(id), got, ref[id])
				}
				if got {
					allowed = append(allowed, id)
				}
			}
			if m.CanEnd() != st.CanEnd() {
				t.Fatalf("walk %d step %d after %q: CanEnd=%v, reference %v", w, s, out, m.CanEnd(), st.CanEnd())
			}
			if sc, ok := m.ShortestCompletion(); ok {
				if len(sc) != m.MinCompletion() {
					t.Fatalf("walk %d step %d after %q: ShortestCompletion %q has %d bytes, MinCompletion says %d", w, s, out, sc, len(sc), m.MinCompletion())
				}
				if !r.Accepts(append(append([]byte(nil), out...), sc...)) {
					t.Fatalf("walk %d step %d after %q: ShortestCompletion %q does not complete it", w, s, out, sc)
				}
			}
			if len(allowed) == 0 {
				if !st.CanEnd() {
					t.Fatalf("walk %d step %d after %q: dead end", w, s, out)
				}
				break
			}
			tok := allowed[rng.IntN(len(allowed))]
			if err := m.Accept(tok); err != nil {
				t.Fatalf("walk %d step %d after %q: Accept(%d %q): %v", w, s, out, tok, v.Token(tok), err)
			}
			for _, b := range v.Token(tok) {
				st = st.Next(b)
			}
			out = append(out, v.Token(tok)...)
		}
	}
	return c
}

// testVocab is all 256 single bytes, the extra multi-byte tokens, and an
// end-of-generation token.
func testVocab(t testing.TB, extra ...string) *mask.Vocab {
	var toks [][]byte
	for b := 0; b < 256; b++ {
		toks = append(toks, []byte{byte(b)})
	}
	for _, e := range extra {
		toks = append(toks, []byte(e))
	}
	toks = append(toks, []byte("</s>"))
	v, err := mask.NewVocab(toks, []int32{int32(len(toks) - 1)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var commonExtra = []string{"at", "an", "-\n", " +", " + ", ")", "))", ") ", "ab", "abs", "abs(", "1.", "12", "123", "e+", "\",", "\":", "{\"", "\"}", "}}", "]]", "[[", "[{", "},{", "\"a", "a\"", "true", "null", ",\"", "\\u", "\\n", "00", "aaa", "aaaa", "xxxxxxxx", "é", "\xc3", "\xa9\"", "日本", "本語"}

// smallGrammars are the grammars TestCrossCheckSmall checks on testVocab
// (and TestCrossCheckDense with every plan's mask kept dense).
var smallGrammars = []string{
	`root ::= "a" | "b" "c"`,
	`root ::= [a-z]+`,
	`root ::= x x
x ::= "a" | "ab"`,
	`root ::= "-" root | "x"`,
	`root ::= "(" root ")" | ""`,
	`root ::= var | "abs" "(" root ")"
var ::= [a-z] [a-z0-9_]*`,
	`root ::= expr
expr ::= term ("+" term)*
term ::= unary
unary ::= "-" unary | primary
primary ::= [0-9]+ | "(" expr ")"`,
	`root ::= [^"]{0,10} "."`,
	`root ::= ("a" | "b"){2,40} "!"`,
	`root ::= "\"" [^"\\]{0,50} "\""`,
}

func TestCrossCheckSmall(t *testing.T) {
	crossCheckAll(t, smallGrammars, testVocab(t, commonExtra...), 20, 30)
}

// crossCheckAll runs crossCheck on each grammar of srcs (a subtest each,
// seeded by its index).
func crossCheckAll(t *testing.T, srcs []string, v *mask.Vocab, walks, steps int) {
	for i, src := range srcs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g, err := gbnf.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			crossCheck(t, g, v, walks, steps, uint64(i))
		})
	}
}

// A word-limit pattern (what ^(?:\S+\s+){0,n}\S+$ becomes) with tokens
// of several words: the entries of the repetition for each count differ
// in their cross points, and from perNodeCross of them the level below is
// a union of per-cross-point walks (Matcher.unionLevel). Both ways must
// agree with the reference, and so must the walks below cross points
// taken from slices below their nodes (belowSlice: with the threshold at
// one node, every cross point's).
func TestCrossCheckWordLimit(t *testing.T) {
	srcs := []string{
		`root ::= "\"" ([a-z]+ " "+){0,12} [a-z]+ "\""`,
		// The level below the repetition's frame has cross points too.
		`root ::= "[" item ("," item)* "]"
item ::= "\"" ([a-z]+ " "+){0,6} [a-z]+ "\"" | "(" item ")"`,
		// After the repetition: bytes outside the words' class at once
		// ("!"), and the end of the item (its pop at the cross point).
		`root ::= "[" item ("," item)* "]"
item ::= ([a-z]+ " "+){0,12} ([a-z]* | "!" [a-z]+)`,
	}
	var extra []string
	for _, w := range []string{"a", "ab", "abc", "b", "ba", "cab"} {
		extra = append(extra, w+" ", " "+w, " "+w+" ", w+" a", w+" a b", w+" ab c ", "a b c "+w, w+"\"", w+"\",\"", w+" a\"]", "b c\",\"a b")
		extra = append(extra, " !"+w, w+" !"+w, " ,"+w, " ]", w+" ,", " !"+w+",", w+" ]")
	}
	v := testVocab(t, extra...)
	for i, src := range srcs {
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 8, 1 << 30} {
			for _, below := range []int32{1, 1 << 30} {
				t.Run(fmt.Sprint(i, "/", n, "/", below), func(t *testing.T) {
					defer mask.SetPerNodeCross(n, 0)()
					defer mask.SetMinBelowNodes(below)()
					c := crossCheck(t, g, v, 24, 60, uint64(n))
					if got := c.NodeLevels(); (n < 1<<30) != (got > 0) {
						t.Errorf("perNodeCross %d: %d per-cross-point levels", n, got)
					}
					if got := c.BelowWalks(); (below == 1) != (got > 0) {
						t.Errorf("minBelowNodes %d: %d walks from slices below nodes", below, got)
					}
				})
			}
		}
	}
}

// TestCrossCheckWordLimitLlama3: the word-limit pattern of the corpus's
// Github_hard/o21072–6 on Llama-3, where the level below the space's
// node (126,000 nodes) comes from its slice below the node at the
// default threshold, against the reference on sampled tokens, and the
// same with the slices off.
func TestCrossCheckWordLimitLlama3(t *testing.T) {
	_, lv := loadBench(t)
	src := `root ::= "{\"a\":" words ",\"b\":" words "}"
words ::= "\"" (([^\x00- "\\] | "\\" ["\\bn])+ (" " | "\\" [fnrt])+){0,9} ([^\x00- "\\] | "\\" ["\\bn])+ "\""`
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprint("noSlices=", off), func(t *testing.T) {
			defer mask.SetNoSlices(off)()
			c, err := mask.Compile(g, lv)
			if err != nil {
				t.Fatal(err)
			}
			crossCheckSampled(t, c, g, 4, 60, 300, 7)
			if got := c.BelowWalks(); off != (got == 0) {
				t.Errorf("noSlices %v: %d walks from slices below nodes", off, got)
			}
		})
	}
}

// crossCheckSampled is crossCheck for large vocabularies: at each step it
// compares the mask with the reference on sample random tokens plus every
// token the mask allows (up to sample more), and walks by picking allowed
// tokens.
func crossCheckSampled(t *testing.T, c *mask.Compiled, g *gbnf.Grammar, walks, steps, sample int, seed uint64) {
	t.Helper()
	v := c.Vocab()
	r := earley.New(g)
	rng := rand.New(rand.NewPCG(seed, 2))
	words := make([]uint32, c.Words())
	viable := func(st *earley.State, id int32) bool {
		if v.Kind(id) != mask.TokenNormal {
			return false
		}
		s := st
		for _, b := range v.Token(id) {
			if s = s.Next(b); s == nil {
				return false
			}
		}
		return true
	}
	for w := 0; w < walks; w++ {
		m := c.NewMatcher()
		st := r.Start()
		var out []byte
		for s := 0; s < steps; s++ {
			m.FillMask(words)
			var allowed []int32
			for id := int32(0); int(id) < v.Size(); id++ {
				if words[id>>5]&(1<<(uint32(id)&31)) != 0 && !v.IsEOG(id) {
					allowed = append(allowed, id)
				}
			}
			check := func(id int32) {
				got := words[id>>5]&(1<<(uint32(id)&31)) != 0
				if v.IsEOG(id) {
					if got != st.CanEnd() {
						t.Fatalf("walk %d step %d after %q: EOG %d allowed=%v, reference CanEnd=%v", w, s, out, id, got, st.CanEnd())
					}
					return
				}
				if want := viable(st, id); got != want {
					t.Fatalf("walk %d step %d after %q: token %d %q allowed=%v, reference says %v", w, s, out, id, v.Token(id), got, want)
				}
			}
			for range sample {
				check(int32(rng.IntN(v.Size())))
			}
			for i := 0; i < sample && i < len(allowed); i++ {
				check(allowed[rng.IntN(len(allowed))])
			}
			for _, id := range v.EOG() {
				check(id)
			}
			if len(allowed) == 0 {
				if !st.CanEnd() {
					t.Fatalf("walk %d step %d after %q: dead end", w, s, out)
				}
				break
			}
			tok := allowed[rng.IntN(len(allowed))]
			if err := m.Accept(tok); err != nil {
				t.Fatalf("walk %d step %d after %q: Accept(%d %q): %v", w, s, out, tok, v.Token(tok), err)
			}
			for _, b := range v.Token(tok) {
				st = st.Next(b)
			}
			out = append(out, v.Token(tok)...)
		}
	}
}

func TestCrossCheckCorpusGrammars(t *testing.T) {
	dir := sharedtest.Path(t, "corpus", "llama-grammars")
	files, _ := filepath.Glob(filepath.Join(dir, "*.gbnf"))
	if len(files) == 0 {
		t.Fatal("no grammars")
	}
	bv := testVocab(t, commonExtra...)
	_, lv := loadBench(t)
	for i, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			g, err := gbnf.Parse(string(src))
			if err != nil {
				t.Fatal(err)
			}
			crossCheck(t, g, bv, 8, 40, uint64(i))
			c, err := mask.Compile(g, lv)
			if err != nil {
				t.Fatal(err)
			}
			crossCheckSampled(t, c, g, 3, 25, 300, uint64(i))
		})
	}
}

func TestCrossCheckRepetitions(t *testing.T) {
	grammars := []string{
		`root ::= "\"" [^"\\]{0,80} "\""`,
		`root ::= "\"" [^"\\]{5,40} "\"" " done"`,
		`root ::= [a-z]{3,50} ("," [a-z]{3,50})*`,
		`root ::= ("ab" | "c"){10,300} "."`,
		`root ::= ([0-9]{1,3} "."){3} [0-9]{1,3}`,
		`root ::= ("[" [a-z ]{0,20} "]"){2,100}`,
		`root ::= "{" ws ("\"k\"" ws ":" ws [0-9]{1,40} ws){0,5} "}"
ws ::= [ \t\n]{0,20}`,
		`root ::= ([^\x00-\x7F]{1,10} " "){1,30}`,
		`root ::= (item ","){0,200} item
item ::= "x" | "(" root ")"`,
		// Twin repetitions (same body, other bounds and followers) share
		// level-1 data: an email's local part.
		`root ::= "\"" ([a-z]{1,64} | [a-z]{1,20} ("." [a-z]{1,20}){1,2}) "@" [a-z]{5,30} "\""`,
		`root ::= ([0-9]{6,40} "-" | [0-9]{5,41} "+")+ ";"`,
	}
	crossCheckBoth(t, grammars, 10, 60, 3, 40)
}

// crossCheckBoth checks each grammar against the reference: on the small
// test vocabulary (walks of at most steps tokens) and, compiled against
// Llama-3, on sampled tokens (sWalks of at most sSteps).
func crossCheckBoth(t *testing.T, grammars []string, walks, steps, sWalks, sSteps int) {
	t.Helper()
	bv := testVocab(t, commonExtra...)
	_, lv := loadBench(t)
	for i, src := range grammars {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g, err := gbnf.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			crossCheck(t, g, bv, walks, steps, uint64(i))
			c, err := mask.Compile(g, lv)
			if err != nil {
				t.Fatal(err)
			}
			crossCheckSampled(t, c, g, sWalks, sSteps, 300, uint64(i))
		})
	}
}

// Classes whose one-byte characters take several ranges are one byte
// position (classRx): a JSON key trie as the converter writes it (any
// key but "h" and "ht"), counted and unrolled repetitions of such
// classes, negated classes with multi-byte characters after them.
func TestCrossCheckClassRanges(t *testing.T) {
	grammars := []string{
		`root ::= "\"" (([ !#-\[\]-gi-~] | "h" ([ !#-\[\]-su-~] | "t" [ !#-\[\]-~])) [ !#-\[\]-~]* | "" ) "\""`,
		`root ::= [a-cx-z0-5_]{1,20} "."`,
		`root ::= [^a-fm-q"\\]{0,12} "!"`,
		`root ::= [A-Za-z] [A-Za-z0-9_-]* ("," [A-Za-z] [A-Za-z0-9_-]*)*`,
		`root ::= ([^\x00-\x1F"\\a-z] | [b-df-hj-np-tv-z]{2,3})+ ";"`,
	}
	crossCheckBoth(t, grammars, 10, 40, 3, 30)
}

func TestCrossCheckTokenRefs(t *testing.T) {
	// Token references: the vocabulary's tokens 256.. are extras; the
	// special token </s> is the end of generation.
	extra := append([]string{"<think>", "</think>", "<|tool|>"}, commonExtra...)
	toks := [][]byte{}
	for b := 0; b < 256; b++ {
		toks = append(toks, []byte{byte(b)})
	}
	for _, e := range extra {
		toks = append(toks, []byte(e))
	}
	toks = append(toks, []byte("</s>"))
	kinds := make([]mask.TokenKind, len(toks))
	kinds[256], kinds[257], kinds[258] = mask.TokenSpecial, mask.TokenSpecial, mask.TokenSpecial
	kinds[len(toks)-1] = mask.TokenSpecial
	v, err := mask.NewVocabKinds(toks, kinds, []int32{int32(len(toks) - 1)})
	if err != nil {
		t.Fatal(err)
	}
	ab, ok := v.Lookup("ab")
	if !ok {
		t.Fatal("no token ab")
	}
	cases := []struct {
		src    string
		accept [][]int32
		reject [][]int32
	}{
		{`root ::= <[256]> "ab" <[257]>`, [][]int32{{256, 'a', 'b', 257}, {256, ab, 257}}, [][]int32{{'a', 'b'}, {256, 'a', 257}}},
		{`root ::= <[256]> (!<[257]>)* <[257]> "x"`, [][]int32{{256, 257, 'x'}, {256, 'a', 258, 'q', 257, 'x'}}, [][]int32{{256, 257, 257}}},
		{`root ::= <|tool|> [a-z]+`, [][]int32{{258, 'a'}}, [][]int32{{'<'}}},
	}
	for i, tc := range cases {
		g, err := gbnf.Parse(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		c, err := mask.Compile(g, v)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		words := make([]uint32, c.Words())
		for _, seq := range tc.accept {
			m := c.NewMatcher()
			for j, tok := range seq {
				m.FillMask(words)
				if words[tok>>5]&(1<<(uint32(tok)&31)) == 0 {
					t.Fatalf("%d: %v: token %d at %d not in mask", i, seq, tok, j)
				}
				if err := m.Accept(tok); err != nil {
					t.Fatalf("%d: %v: %v", i, seq, err)
				}
			}
			if !m.CanEnd() {
				t.Fatalf("%d: %v: cannot end", i, seq)
			}
		}
		for _, seq := range tc.reject {
			m := c.NewMatcher()
			ok := true
			for _, tok := range seq {
				m.FillMask(words)
				inMask := words[tok>>5]&(1<<(uint32(tok)&31)) != 0
				err := m.Accept(tok)
				if inMask != (err == nil) {
					t.Fatalf("%d: %v: mask says %v, Accept says %v", i, seq, inMask, err)
				}
				if err != nil {
					ok = false
					break
				}
			}
			if ok && m.CanEnd() {
				t.Fatalf("%d: %v accepted", i, seq)
			}
		}
	}
}

func TestCrossCheckLastClass(t *testing.T) {
	grammars := []string{
		`root ::= [0-9A-Za-z] ([\-0-9A-Za-z]{0,61} [0-9A-Za-z])? ("." [0-9A-Za-z] ([\-0-9A-Za-z]{0,61} [0-9A-Za-z])?)*`,
		`root ::= [a-z\-]{2,10} [a-z] "!"`,
		`root ::= "x" [ab]{0,40} [b] [ab]{0,5} [a]`,
		`root ::= ([a-z\-]{3,40} [a-z] ","){1,3}`,
	}
	bv := testVocab(t, append([]string{"a-", "-b", "ab-", "--", "a.b", "ab.", "-.", "zz", "a-b-c", "abab", "bbbb", "aaaa"}, commonExtra...)...)
	_, lv := loadBench(t)
	for i, src := range grammars {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g, err := gbnf.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			crossCheck(t, g, bv, 20, 70, uint64(i))
			c, err := mask.Compile(g, lv)
			if err != nil {
				t.Fatal(err)
			}
			crossCheckSampled(t, c, g, 4, 40, 300, uint64(i))
		})
	}
}

func TestShortestCompletion(t *testing.T) {
	bv := testVocab(t, commonExtra...)
	cases := []struct{ src, prefix, want string }{
		{`root ::= "{" ws ("\"a\"" ws ":" ws [0-9]+ ws)? "}"
ws ::= [ ]*`, `{ "a" :`, "0}"},
		{`root ::= "(" root ")" | "x"`, "(((", "x)))"},
		{`root ::= [a-z]{3,10} "!"`, "a", "aa!"},
		{`root ::= [0-9A-Za-z] ([\-0-9A-Za-z]{0,61} [0-9A-Za-z])? "."`, "a--", "0."},
	}
	for _, tc := range cases {
		g, err := gbnf.Parse(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		c, err := mask.Compile(g, bv)
		if err != nil {
			t.Fatal(err)
		}
		m := c.NewMatcher()
		if err := m.AcceptBytes([]byte(tc.prefix)); err != nil {
			t.Fatal(err)
		}
		got, ok := m.ShortestCompletion()
		if !ok || len(got) != len(tc.want) {
			t.Errorf("%q after %q: completion %q (ok=%v), want one as short as %q", tc.src, tc.prefix, got, ok, tc.want)
			continue
		}
		if m.MinCompletion() != len(tc.want) {
			t.Errorf("%q after %q: MinCompletion %d, want %d", tc.src, tc.prefix, m.MinCompletion(), len(tc.want))
		}
		if err := m.AcceptBytes(got); err != nil || !m.CanEnd() {
			t.Errorf("%q after %q: completion %q does not complete (%v)", tc.src, tc.prefix, got, err)
		}
		if !earley.New(g).Accepts(append([]byte(tc.prefix), got...)) {
			t.Errorf("reference rejects %q", tc.prefix+string(got))
		}
	}
}
