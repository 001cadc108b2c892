package earley_test

import (
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
)

func mustParse(t testing.TB, src string) *gbnf.Grammar {
	t.Helper()
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return g
}

// recognizerTests: accept = complete sentences; prefix = viable prefixes
// that are not sentences; reject = not even a prefix.
var recognizerTests = []struct {
	grammar                string
	accept, prefix, reject []string
}{
	{`root ::= "ab" | "ac"`, []string{"ab", "ac"}, []string{"", "a"}, []string{"b", "abc", "ad"}},
	{`root ::= ""`, []string{""}, nil, []string{"a"}},
	{`root ::= "a"*`, []string{"", "a", "aaaa"}, nil, []string{"b", "ab"}},
	{`root ::= "a"{2,3}`, []string{"aa", "aaa"}, []string{"", "a"}, []string{"aaaa", "b"}},
	{`root ::= ("a"?){0,3} "b"`, []string{"b", "ab", "aaab"}, []string{"", "a", "aaa"}, []string{"aaaa", "c"}},
	{`root ::= ( [x]* )*`, []string{"", "x", "xx"}, nil, []string{"y"}},
	{`root ::= ("" | "a"){2}`, []string{"", "a", "aa"}, nil, []string{"aaa"}},
	{`root ::= "a"{0}`, []string{""}, nil, []string{"a"}},
	// UTF-8: literals and classes match byte by byte.
	{`root ::= "é"`, []string{"é"}, []string{"\xc3"}, []string{"\xc3\xa8", "e", "\xc3a"}},
	{`root ::= [é]`, []string{"é"}, []string{"\xc3"}, []string{"\xc3\xa8", "\xc3\xa9\xa9"}},
	{`root ::= [α]`, []string{"α"}, []string{"\xce"}, []string{"\xcf", "\xce\xb0"}},
	{`root ::= [^a]`, []string{"b", "é", "😀", "\x00", "\n", "\U0010FFFF", "\uFFFF"},
		[]string{"", "\xc3", "\xe2\x82", "\xf0\x9f", "\xf0\x9f\x98", "\xf4\x8f\xbf"},
		[]string{"a", "\xc0\x80", "\xc1\xbf", "\xed\xa0", "\xed\xa0\x80", "\xf4\x90", "\xf5", "\xff", "\x80", "\xe0\x80", "\xf0\x80", "bb"}},
	{`root ::= [^é]`, []string{"è", "e"}, []string{"\xc3"}, []string{"é"}},
	{`root ::= .`, []string{"a", "é"}, []string{"", "\xe4\xb8"}, []string{"\xed\xbf\xbf", "ab"}},
	{`root ::= [一-鿿]+`, []string{"日本", "一"}, []string{"\xe4", "日\xe6\x9c"}, []string{"a", "\xe3\x81\x81"}},
	{`root ::= [😀-😏]`, []string{"😀", "😏"}, []string{"\xf0", "\xf0\x9f\x98"}, []string{"😐", "\xf0\x9f\x99"}},
	{`root ::= [^\x00-\x7F]`, []string{"é"}, []string{"\xc3"}, []string{"a"}},
	// Left recursion is fine for Earley.
	{`root ::= root "a" | "b"`, []string{"b", "baaa"}, nil, []string{"a", "bab"}},
	{"root ::= e\ne ::= e \"+\" t | t\nt ::= [0-9]", []string{"1", "1+2+3"}, []string{"1+"}, []string{"+", "1++"}},
	// Ambiguity.
	{"root ::= x x\nx ::= \"a\" | \"aa\" | \"\"", []string{"", "a", "aa", "aaa", "aaaa"}, nil, []string{"aaaaa"}},
	// Unproductive parts are never predicted: "a" is not viable.
	{"root ::= \"a\" x | \"b\"\nx ::= \"c\" x", []string{"b"}, nil, []string{"a", "ac"}},
	{`root ::= "a" [^\x00-\U0010FFFF] | "b"`, []string{"b"}, nil, []string{"a"}},
	// Right recursion.
	{"root ::= \"(\" root \")\" | \"\"", []string{"", "()", "((()))"}, []string{"((", "(()"}, []string{")", "())"}},
	// A sentence that must go on with a token is a viable prefix.
	{`root ::= "a" <[5]>`, nil, []string{"", "a"}, []string{"b", "a<[5]>"}},
}

func TestRecognizer(t *testing.T) {
	for _, tt := range recognizerTests {
		g := mustParse(t, tt.grammar)
		r := earley.New(g)
		for _, s := range tt.accept {
			if !r.Accepts([]byte(s)) || !r.Viable([]byte(s)) {
				t.Errorf("%s: %q: Accepts=%v Viable=%v, want true, true", tt.grammar, s, r.Accepts([]byte(s)), r.Viable([]byte(s)))
			}
		}
		for _, s := range tt.prefix {
			if r.Accepts([]byte(s)) || !r.Viable([]byte(s)) {
				t.Errorf("%s: %q: Accepts=%v Viable=%v, want false, true", tt.grammar, s, r.Accepts([]byte(s)), r.Viable([]byte(s)))
			}
		}
		for _, s := range tt.reject {
			if r.Accepts([]byte(s)) || r.Viable([]byte(s)) {
				t.Errorf("%s: %q: Accepts=%v Viable=%v, want false, false", tt.grammar, s, r.Accepts([]byte(s)), r.Viable([]byte(s)))
			}
		}
	}
}

// tok is one step of a token test: a token (id, text) or, with isByte,
// one byte.
type step struct {
	id     int32
	text   string
	isByte bool
}

func tk(id int32, text string) step { return step{id: id, text: text} }
func bs(s string) []step {
	var out []step
	for i := 0; i < len(s); i++ {
		out = append(out, step{isByte: true, text: s[i : i+1]})
	}
	return out
}
func seq(parts ...any) []step {
	var out []step
	for _, p := range parts {
		switch p := p.(type) {
		case step:
			out = append(out, p)
		case []step:
			out = append(out, p...)
		}
	}
	return out
}

var tokenTests = []struct {
	grammar string
	steps   []step
	want    string // "accept", "prefix" or "reject"
}{
	{`root ::= <[10]> "x"`, seq(tk(10, "<[10]>"), bs("x")), "accept"},
	{`root ::= <[10]> "x"`, seq(tk(10, "<[10]>")), "prefix"},
	{`root ::= <[10]> "x"`, seq(tk(11, "<[10]>")), "reject"},
	{`root ::= <[10]> "x"`, seq(bs("<")), "reject"},
	// A token's text is matched by ordinary terminals.
	{`root ::= "ab" "c"`, seq(tk(5, "ab"), bs("c")), "accept"},
	{`root ::= "ab" "c"`, seq(tk(5, "abc")), "accept"},
	{`root ::= "ab" "c"`, seq(tk(5, "a"), tk(6, "bc")), "accept"},
	{`root ::= "ab" "c"`, seq(tk(5, "abcd")), "reject"},
	{`root ::= "ab" "c"`, seq(tk(5, "")), "reject"},
	{`root ::= [é]`, seq(tk(1, "\xc3"), tk(2, "\xa9")), "accept"},
	{`root ::= [é]`, seq(tk(1, "\xc3")), "prefix"},
	// ... but never runs into a token reference.
	{`root ::= "a" <[3]>`, seq(tk(9, "a<[3]>")), "reject"},
	{`root ::= "a" <[3]>`, seq(tk(9, "a"), tk(3, "<[3]>")), "accept"},
	// A token reference matches by id, whatever the text.
	{`root ::= <[3]>`, seq(tk(3, "")), "accept"},
	{`root ::= <[3]>`, seq(tk(3, "anything")), "accept"},
	{`root ::= !<[3]>`, seq(tk(4, "zz")), "accept"},
	{`root ::= !<[3]>`, seq(tk(3, "zz")), "reject"},
	{`root ::= !<[3]>*`, seq(tk(4, "a"), tk(5, "b"), tk(0, "c")), "accept"},
	{`root ::= !<[3]>*`, seq(tk(4, "a"), tk(3, "b")), "reject"},
	// Either way: the id path and the text path of one token.
	{`root ::= (<[7]> | "hi") "!"`, seq(tk(7, "hi"), bs("!")), "accept"},
	{`root ::= (<[7]> | "hi") "!"`, seq(tk(8, "hi"), bs("!")), "accept"},
	{`root ::= (<[7]> | "hi") "!"`, seq(tk(8, "ho")), "reject"},
	// <|text|> matches a token whose text is "<|text|>".
	{`root ::= "x" <|eot|>`, seq(bs("x"), tk(99, "<|eot|>")), "accept"},
	{`root ::= "x" <|eot|>`, seq(bs("x"), tk(99, "<|eos|>")), "reject"},
	{`root ::= !<|eot|>+`, seq(tk(1, "a"), tk(2, "<|eos|>")), "accept"},
	{`root ::= !<|eot|>+`, seq(tk(1, "<|eot|>")), "reject"},
	// llama.cpp's harness: each char a token with id 0.
	{"root ::= <[10]> content <[11]>\ncontent ::= (!<[11]>)*", seq(tk(10, "<[10]>"), tk(0, "h"), tk(0, "i"), tk(11, "<[11]>")), "accept"},
	{"root ::= <[10]> content <[11]>\ncontent ::= (!<[11]>)*", seq(tk(10, "<[10]>"), tk(11, "<[11]>"), tk(11, "<[11]>")), "reject"},
}

func TestNextToken(t *testing.T) {
	for _, tt := range tokenTests {
		g := mustParse(t, tt.grammar)
		st := earley.New(g).Start()
		for _, s := range tt.steps {
			if st == nil {
				break
			}
			if s.isByte {
				st = st.Next(s.text[0])
			} else {
				st = st.NextToken(s.id, []byte(s.text))
			}
		}
		got := "reject"
		if st != nil {
			got = "prefix"
			if st.CanEnd() {
				got = "accept"
			}
		}
		if got != tt.want {
			t.Errorf("%s: %+v: got %s, want %s", tt.grammar, tt.steps, got, tt.want)
		}
	}
}

// TestStatesImmutable branches one state many ways.
func TestStatesImmutable(t *testing.T) {
	g := mustParse(t, `root ::= "ab" | "ac" | "a" [b-d]{2}`)
	r := earley.New(g)
	a := r.Start().Next('a')
	b := a.Next('b')
	c := a.Next('c')
	d := a.Next('d')
	if !b.CanEnd() || !c.CanEnd() || d.CanEnd() {
		t.Fatalf("after a: b %v c %v d %v", b.CanEnd(), c.CanEnd(), d.CanEnd())
	}
	if b2 := a.Next('b'); !b2.CanEnd() || b2.Next('b') == nil || b.Next('d') == nil {
		t.Fatalf("branching again from a changed a state")
	}
	if d.Next('d') == nil || !d.Next('d').CanEnd() || d.Next('e') != nil {
		t.Fatalf("d path broken")
	}
	if r.Start().Next('x') != nil {
		t.Fatalf("x accepted")
	}
}

func TestStartNoSentence(t *testing.T) {
	g := mustParse(t, "root ::= x\nx ::= \"a\" x")
	r := earley.New(g)
	if r.Start() != nil || r.Viable(nil) || r.Accepts(nil) {
		t.Errorf("a grammar without sentences has a start state")
	}
}
