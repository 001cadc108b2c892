package gbnf_test

import (
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/sharedtest"
)

// roundTrip checks the printer fixpoint on g: Parse(g.String()) equals g,
// and printing that again gives the same text.
func roundTrip(t *testing.T, name string, g *gbnf.Grammar, root string) {
	t.Helper()
	out := g.String()
	g2, err := gbnf.ParseWithRoot(out, root)
	if err != nil {
		t.Errorf("%s: printed grammar does not parse: %v\n%s", name, err, out)
		return
	}
	if !g.Equal(g2) {
		t.Errorf("%s: Parse(String()) differs from the grammar:\n%s\nreprinted:\n%s", name, out, g2.String())
	}
	if out2 := g2.String(); out2 != out {
		t.Errorf("%s: printing is not a fixpoint:\n%s\nthen:\n%s", name, out, out2)
	}
}

func TestLlamaGrammars(t *testing.T) {
	dir := sharedtest.Path(t, "corpus", "llama-grammars")
	paths, err := filepath.Glob(filepath.Join(dir, "*.gbnf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 8 {
		t.Errorf("found %d grammars in %s, want 8", len(paths), dir)
	}
	for _, p := range paths {
		name := filepath.Base(p)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			g, err := gbnf.Parse(string(src))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			roundTrip(t, name, g, "root")
			if err := g.LeftRecursion(); err != nil {
				t.Errorf("LeftRecursion: %v", err)
			}
			// The grammars generate, and what they generate is accepted,
			// with every prefix viable.
			r := earley.New(g)
			rng := rand.New(rand.NewSource(1))
			for i := 0; i < 20; i++ {
				s, ok := earley.Generate(g, rng, 200)
				if !ok {
					t.Fatalf("Generate failed")
				}
				if !r.Accepts(s) {
					t.Errorf("generated %q is not accepted", s)
				}
			}
		})
	}
}

type parserCase struct {
	ID      string `json:"id"`
	Grammar string `json:"grammar"`
	Valid   bool   `json:"valid"`
	Stage   string `json:"stage"`
	Root    string `json:"root"`
	Note    string `json:"note"`
}

func TestLlamaParserCases(t *testing.T) {
	data, err := os.ReadFile(sharedtest.Path(t, "corpus", "llama-grammar-parser-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []parserCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	agree := 0
	for _, c := range cases {
		g, err := gbnf.ParseWithRoot(c.Grammar, c.Root)
		valid := err == nil
		leftRec := error(nil)
		if valid {
			leftRec = g.LeftRecursion()
			valid = leftRec == nil
		}
		ok := valid == c.Valid
		// The stage must agree too: a parse-stage failure is a Parse
		// error; a build-stage one is a root error from ParseWithRoot or
		// left recursion.
		if ok && !c.Valid {
			switch {
			case c.Stage == "parse" && err == nil:
				ok = false
			case c.Stage == "build" && strings.Contains(c.Note, "left recursion") && leftRec == nil:
				ok = false
			case c.Stage == "build" && !strings.Contains(c.Note, "left recursion") && (err == nil || !strings.Contains(err.Error(), "root rule")):
				ok = false
			}
		}
		if ok {
			agree++
		} else {
			t.Errorf("%s (%s, want valid=%v): Parse: %v; LeftRecursion: %v\n%s", c.ID, c.Stage, c.Valid, err, leftRec, c.Grammar)
		}
		if err != nil {
			var e *gbnf.Error
			if !errors.As(err, &e) || e.Pos.Line < 1 || e.Pos.Col < 1 {
				t.Errorf("%s: error without a position: %v", c.ID, err)
			}
		}
		if g != nil && err == nil {
			roundTrip(t, c.ID, g, c.Root)
		}
	}
	t.Logf("llama.cpp parser cases: %d/%d agree", agree, len(cases))
	if len(cases) != 27 {
		t.Errorf("%d parser cases, want 27", len(cases))
	}
}

type grammarCase struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Kind       string            `json:"kind"`
	Grammar    string            `json:"grammar"`
	UsesTokens bool              `json:"uses_tokens"`
	Pass       []json.RawMessage `json:"pass"`
	Fail       []json.RawMessage `json:"fail"`
}

// corpusInput is a pass/fail item: a string, or {"segments": [...]}.
type corpusInput struct {
	text   string
	tokens []earleyToken // set when the item has segments
}

type earleyToken struct {
	id   int32
	text []byte
}

func decodeInput(t *testing.T, raw json.RawMessage) corpusInput {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return corpusInput{text: s}
	}
	var seg struct {
		Segments []json.RawMessage `json:"segments"`
	}
	if err := json.Unmarshal(raw, &seg); err != nil {
		t.Fatalf("bad item %s: %v", raw, err)
	}
	in := corpusInput{tokens: []earleyToken{}}
	for _, sg := range seg.Segments {
		var text string
		if err := json.Unmarshal(sg, &text); err == nil {
			// llama.cpp's harness: each code point is its own piece,
			// token id 0.
			for _, r := range text {
				in.tokens = append(in.tokens, earleyToken{id: 0, text: []byte(string(r))})
			}
			continue
		}
		var tok struct {
			Token int32 `json:"token"`
		}
		if err := json.Unmarshal(sg, &tok); err != nil {
			t.Fatalf("bad segment %s: %v", sg, err)
		}
		in.tokens = append(in.tokens, earleyToken{id: tok.Token, text: []byte("<[" + itoa(tok.Token) + "]>")})
	}
	return in
}

func itoa(i int32) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func (in corpusInput) String() string {
	if in.tokens == nil {
		return in.text
	}
	var b strings.Builder
	for _, tk := range in.tokens {
		b.Write(tk.text)
	}
	return b.String()
}

// matches feeds in to the recognizer as llama.cpp's harness would.
func matches(r *earley.Recognizer, in corpusInput) bool {
	if in.tokens == nil {
		return r.Accepts([]byte(in.text))
	}
	st := r.Start()
	for _, tk := range in.tokens {
		if st == nil {
			return false
		}
		st = st.NextToken(tk.id, tk.text)
	}
	return st != nil && st.CanEnd()
}

func TestLlamaGrammarCases(t *testing.T) {
	data, err := os.ReadFile(sharedtest.Path(t, "corpus", "llama-grammar-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []grammarCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	nCases, agree, total := 0, 0, 0
	for _, c := range cases {
		if c.Kind != "gbnf" {
			continue
		}
		nCases++
		g, err := gbnf.Parse(c.Grammar)
		if err != nil {
			t.Errorf("%s %s: %v", c.ID, c.Name, err)
			continue
		}
		roundTrip(t, c.ID, g, "root")
		r := earley.New(g)
		check := func(raw json.RawMessage, want bool) {
			in := decodeInput(t, raw)
			total++
			if got := matches(r, in); got != want {
				t.Errorf("%s %s: %q: accepted=%v, want %v", c.ID, c.Name, in, got, want)
				return
			}
			if in.tokens == nil && utf8.ValidString(in.text) {
				// The same verdict through the round-tripped grammar.
				g2, _ := gbnf.Parse(g.String())
				if got := earley.New(g2).Accepts([]byte(in.text)); got != want {
					t.Errorf("%s: printed grammar: %q: accepted=%v, want %v", c.ID, in, got, want)
					return
				}
			}
			agree++
		}
		for _, p := range c.Pass {
			check(p, true)
		}
		for _, f := range c.Fail {
			check(f, false)
		}
	}
	t.Logf("llama.cpp GBNF cases: %d grammars, %d/%d pass/fail strings agree", nCases, agree, total)
	if nCases != 14 {
		t.Errorf("%d GBNF cases, want 14", nCases)
	}
}
