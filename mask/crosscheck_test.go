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
// every mask with the reference recognizer.
func crossCheck(t *testing.T, g *gbnf.Grammar, v *mask.Vocab, walks, steps int, seed uint64) {
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

func TestCrossCheckSmall(t *testing.T) {
	grammars := []string{
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
	v := testVocab(t, commonExtra...)
	for i, src := range grammars {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g, err := gbnf.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			crossCheck(t, g, v, 20, 30, uint64(i))
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
