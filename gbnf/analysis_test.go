package gbnf_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"runtime"
)

// firstString prints a first set as a class, plus "+tok" when a token
// can come first.
func firstString(f gbnf.FirstSet) string {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < len(f.Ranges); i += 2 {
		if f.Ranges[i] == f.Ranges[i+1] {
			fmt.Fprintf(&b, "%c", f.Ranges[i])
		} else {
			fmt.Fprintf(&b, "%c-%c", f.Ranges[i], f.Ranges[i+1])
		}
	}
	b.WriteString("]")
	if f.Token {
		b.WriteString("+tok")
	}
	return b.String()
}

// analysisTests give, per rule in definition order,
// "name nullable minlen first reachable".
var analysisTests = []struct {
	src  string
	want []string
}{
	{"root ::= \"ab\" | x\nx ::= [c-d] \"e\"", []string{
		"root false 2 [ac-d] true",
		"x false 2 [c-d] true",
	}},
	{"root ::= x* \"z\"\nx ::= \"é\" | \"\"", []string{
		"root false 1 [zé] true",
		"x true 0 [é] true",
	}},
	{"root ::= a b c\na ::= \"\" | \"a\"\nb ::= \"b\"?\nc ::= \"c\"\nunused ::= \"u\"", []string{
		"root false 1 [a-c] true",
		"a true 0 [a] true",
		"b true 0 [b] true",
		"c false 1 [c] true",
		"unused false 1 [u] false",
	}},
	// Recursion: shortest sentences through the base case.
	{"root ::= \"(\" root \")\" | \"x\"", []string{"root false 1 [(x] true"}},
	{"root ::= e\ne ::= e \"+\" t | t\nt ::= [0-9]{3}", []string{
		"root false 3 [0-9] true",
		"e false 3 [0-9] true",
		"t false 3 [0-9] true",
	}},
	// No sentence at all.
	{"root ::= \"a\" x | \"b\"\nx ::= \"c\" x", []string{
		"root false 1 [a-b] true",
		"x false -1 [c] true",
	}},
	{`root ::= [^\x00-\U0010FFFF]`, []string{"root false -1 [] true"}},
	// Tokens count zero bytes and show in first sets.
	{"root ::= <[1]> \"a\" | \"b\"", []string{"root false 1 [b]+tok true"}},
	{"root ::= \"\"? !<[1]>", []string{"root false 0 []+tok true"}},
	// Repetitions.
	{`root ::= "ab"{3,5} "c"{0}`, []string{"root false 6 [a] true"}},
	{`root ::= [é]{2} | "😀"+`, []string{"root false 4 [é😀] true"}},
	{`root ::= ("a"{0} "b")`, []string{"root false 1 [b] true"}},
	{`root ::= .`, []string{"root false 1 [\x00-\uD7FF\uE000-\U0010FFFF] true"}},
}

func TestAnalyze(t *testing.T) {
	for _, tt := range analysisTests {
		g, err := gbnf.Parse(tt.src)
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		a := g.Analyze()
		var got []string
		for i, r := range g.Rules {
			got = append(got, fmt.Sprintf("%s %v %d %s %v", r.Name, a.Nullable[i], a.MinLen[i], firstString(a.First[i]), a.Reachable[i]))
		}
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%q:\n got %q\nwant %q", tt.src, got, tt.want)
		}
		// Node-level results agree with rule-level ones.
		for i, r := range g.Rules {
			if a.NodeNullable(r.Body) != a.Nullable[i] || a.NodeMinLen(r.Body) != a.MinLen[i] ||
				firstString(a.NodeFirst(r.Body)) != firstString(a.First[i]) {
				t.Errorf("%q: rule %s: node-level analysis differs", tt.src, r.Name)
			}
		}
	}
}

func TestMinLenSaturates(t *testing.T) {
	var b strings.Builder
	b.WriteString("root ::= r0\n")
	for i := 0; i < 70; i++ {
		fmt.Fprintf(&b, "r%d ::= r%d r%d\n", i, i+1, i+1)
	}
	b.WriteString("r70 ::= \"ab\"\n")
	g, err := gbnf.Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	a := g.Analyze()
	if got := a.MinLen[g.Root]; got <= 0 || got < 1<<50 {
		t.Errorf("min length %d: want saturated at 2^50", got)
	}
}

var leftRecursionTests = []struct {
	src, want string // want "" for none
}{
	{`root ::= "a" | root "a"`, "1:1: left recursion: root -> root"},
	{"\n  root ::= asdf\n  asdf ::= \"a\" | asdf \"a\"\n", "3:3: left recursion: asdf -> asdf"},
	{"root ::= asdf\nasdf ::= \"a\" | foo \"b\"\nfoo ::= \"c\" | asdf \"d\" | \"e\"", "2:1: left recursion: asdf -> foo -> asdf"},
	{"root ::= asdf\nasdf ::= \"a\" | foo \"b\"\nfoo ::= \"c\" | empty asdf \"d\" | \"e\"\nempty ::= \"blah\" | ", "2:1: left recursion: asdf -> foo -> asdf"},
	{"root ::= x* root \"a\" | \"b\"\nx ::= \"x\"", "1:1: left recursion: root -> root"},
	{"root ::= (\"a\"? (\"\" | root)) \"b\"", "1:1: left recursion: root -> root"},
	{"root ::= a\na ::= b\nb ::= c?\nc ::= a", "2:1: left recursion: a -> b -> c -> a"},
	// Not left recursive: something non-nullable comes first.
	{`root ::= "a" root | "b"`, ""},
	{"root ::= x root | \"b\"\nx ::= \"x\"", ""},
	{"root ::= \"(\" root \")\" | \"\"", ""},
	{`root ::= root{0} "a"`, ""},
	{"root ::= json\njson ::= \"[\" (json (\",\" json)*)? \"]\" | \"1\"", ""},
}

func TestLeftRecursion(t *testing.T) {
	for _, tt := range leftRecursionTests {
		g, err := gbnf.Parse(tt.src)
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		err = g.LeftRecursion()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%q: LeftRecursion() = %q, want %q", tt.src, got, tt.want)
		}
	}
}

// TestAnalyzeWide checks that the analyses are linear on a wide rule: the
// fixpoints used to re-evaluate root ::= r0 | … | rN after each of its
// callees, quadratic (65,535 rules: minutes and 100 GB allocated).
func TestAnalyzeWide(t *testing.T) {
	allocated := func(n int) uint64 {
		var b strings.Builder
		b.WriteString("root ::= r0")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, " | r%d", i)
		}
		b.WriteString("\n")
		for i := range n {
			fmt.Fprintf(&b, "r%d ::= \"k%d\" [a-z]\n", i, i)
		}
		g, err := gbnf.Parse(b.String())
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := g.LeftRecursion(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	a1, a2 := allocated(2000), allocated(4000)
	if a2 > a1*5/2 {
		t.Errorf("2,000 alternatives: %d bytes allocated; 4,000: %d (more than 2.5×)", a1, a2)
	}
}
