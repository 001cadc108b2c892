package earley_test

import (
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
)

// toRegexp translates a grammar without recursion into an equivalent Go
// regular expression (RE2 syntax, matched on valid UTF-8).
func toRegexp(g *gbnf.Grammar, n *gbnf.Node) string {
	switch n.Op {
	case gbnf.OpEmpty:
		return `(?:)`
	case gbnf.OpLiteral:
		return `(?:` + regexp.QuoteMeta(string(n.Runes)) + `)`
	case gbnf.OpClass:
		if n.Negated && len(n.Ranges) == 0 {
			return `(?s:.)`
		}
		var b strings.Builder
		b.WriteString("[")
		if n.Negated {
			b.WriteString("^")
		}
		for i := 0; i < len(n.Ranges); i += 2 {
			fmt.Fprintf(&b, `\x{%x}-\x{%x}`, n.Ranges[i], n.Ranges[i+1])
		}
		b.WriteString("]")
		return b.String()
	case gbnf.OpSeq:
		var b strings.Builder
		for _, s := range n.Subs {
			b.WriteString(toRegexp(g, s))
		}
		return `(?:` + b.String() + `)`
	case gbnf.OpAlt:
		var parts []string
		for _, s := range n.Subs {
			parts = append(parts, toRegexp(g, s))
		}
		return `(?:` + strings.Join(parts, "|") + `)`
	case gbnf.OpRepeat:
		sub := toRegexp(g, n.Subs[0])
		if n.Max == gbnf.Unbounded {
			return fmt.Sprintf(`(?:%s){%d,}`, sub, n.Min)
		}
		return fmt.Sprintf(`(?:%s){%d,%d}`, sub, n.Min, n.Max)
	case gbnf.OpRule:
		return toRegexp(g, g.Rules[n.Rule].Body)
	}
	panic("no regexp for " + n.Op.String())
}

var (
	atomLits    = []string{`"a"`, `"b"`, `"ab"`, `"é"`, `"😀"`, `""`, `"\n"`, `"x\u00e9"`, `"\x00"`}
	atomClasses = []string{`[ab]`, `[^a]`, `[a-c]`, `[é-ê]`, `[^\x00-\x7F]`, `.`, `[😀-😏]`, `[^aé😀]`, `[\x00\n]`}
	testRunes   = []rune{'a', 'b', 'c', 'x', 'é', 'ê', '😀', '😐', '\n', 0, 'z', '中'}
)

// randExpr writes a random GBNF expression; rule i may reference rules
// i+1.. only, so the grammar is not recursive.
func randExpr(rng *rand.Rand, depth, rule, nRules int) string {
	if depth <= 0 || rng.Intn(4) == 0 {
		switch k := rng.Intn(10); {
		case k < 4:
			return atomLits[rng.Intn(len(atomLits))]
		case k < 8 || rule+1 >= nRules:
			return atomClasses[rng.Intn(len(atomClasses))]
		default:
			return fmt.Sprintf("r%d", rule+1+rng.Intn(nRules-rule-1))
		}
	}
	switch rng.Intn(4) {
	case 0:
		n := 2 + rng.Intn(2)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randExpr(rng, depth-1, rule, nRules)
		}
		return strings.Join(parts, " ")
	case 1:
		n := 2 + rng.Intn(2)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randExpr(rng, depth-1, rule, nRules)
		}
		return "(" + strings.Join(parts, " | ") + ")"
	default:
		ops := []string{"*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "{0}"}
		return "(" + randExpr(rng, depth-1, rule, nRules) + ")" + ops[rng.Intn(len(ops))]
	}
}

func randGrammar(rng *rand.Rand) string {
	n := 1 + rng.Intn(3)
	var b strings.Builder
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("r%d", i)
		if i == 0 {
			name = "root"
		}
		fmt.Fprintf(&b, "%s ::= %s\n", name, randExpr(rng, 4, i, n))
	}
	return b.String()
}

func randString(rng *rand.Rand) string {
	n := rng.Intn(7)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(testRunes[rng.Intn(len(testRunes))])
	}
	return b.String()
}

// mutate inserts, deletes or replaces one rune.
func mutate(rng *rand.Rand, s string) string {
	rs := []rune(s)
	i := rng.Intn(len(rs) + 1)
	c := testRunes[rng.Intn(len(testRunes))]
	switch {
	case rng.Intn(3) == 0 || len(rs) == 0 || i == len(rs):
		rs = append(rs[:i], append([]rune{c}, rs[i:]...)...)
	case rng.Intn(2) == 0:
		rs = append(rs[:i], rs[i+1:]...)
	default:
		rs[i] = c
	}
	return string(rs)
}

// checkConsistent checks the recognizer against itself on s: Accepts and
// Viable against the incremental API, and every prefix of an accepted
// string viable.
func checkConsistent(t *testing.T, name string, r *earley.Recognizer, s []byte) {
	t.Helper()
	acc, via := r.Accepts(s), r.Viable(s)
	st := r.Start()
	for i, c := range s {
		if st == nil {
			break
		}
		// Viable on every prefix is quadratic: check some of them.
		if (len(s) <= 64 || i%(len(s)/16) == 0) && !r.Viable(s[:i]) {
			t.Errorf("%s: %q: state alive after %d bytes but Viable false", name, s, i)
		}
		st = st.Next(c)
	}
	if (st != nil) != via {
		t.Errorf("%s: %q: Viable=%v, incremental alive=%v", name, s, via, st != nil)
	}
	if (st != nil && st.CanEnd()) != acc {
		t.Errorf("%s: %q: Accepts=%v, incremental CanEnd=%v", name, s, acc, st != nil && st.CanEnd())
	}
	if acc && !via {
		t.Errorf("%s: %q: accepted but not viable", name, s)
	}
}

// TestAgainstRegexp compares the recognizer with Go's regexp package on
// random non-recursive grammars, and checks it against itself.
func TestAgainstRegexp(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	grammars, compared, accepted := 100, 0, 0
	if testing.Short() {
		grammars = 50
	}
	for gi := 0; gi < grammars; gi++ {
		src := randGrammar(rng)
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatalf("random grammar does not parse: %v\n%s", err, src)
		}
		re, err := regexp.Compile(`\A` + toRegexp(g, g.Rules[g.Root].Body) + `\z`)
		if err != nil {
			continue // e.g. repetition too large for RE2
		}
		r := earley.New(g)
		var strs []string
		for i := 0; i < 30; i++ {
			strs = append(strs, randString(rng))
		}
		for i := 0; i < 10; i++ {
			if s, ok := earley.Generate(g, rng, 40); ok {
				strs = append(strs, string(s), mutate(rng, string(s)), mutate(rng, mutate(rng, string(s))))
				if !r.Accepts(s) {
					t.Errorf("generated %q not accepted by\n%s", s, src)
				}
			}
		}
		for _, s := range strs {
			if !utf8.ValidString(s) {
				continue
			}
			compared++
			got, want := r.Accepts([]byte(s)), re.MatchString(s)
			if got != want {
				t.Errorf("%q: recognizer %v, regexp %v\ngrammar:\n%sregexp: %s", s, got, want, src, re)
			}
			if got {
				accepted++
			}
			checkConsistent(t, src, r, []byte(s))
		}
	}
	t.Logf("%d strings compared with regexp, %d accepted", compared, accepted)
	if accepted < compared/10 {
		t.Errorf("only %d of %d strings accepted: the test exercises too little", accepted, compared)
	}
}

// TestViableMeansCompletable: for random grammars, whenever a prefix is
// viable, some completion from it is accepted (searched breadth-first
// over a small alphabet), and when it is not, no extension is accepted.
func TestViableMeansCompletable(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for gi := 0; gi < 40; gi++ {
		src := randGrammar(rng)
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		r := earley.New(g)
		for i := 0; i < 10; i++ {
			s, ok := earley.Generate(g, rng, 30)
			if !ok || len(s) == 0 {
				continue
			}
			cut := rng.Intn(len(s) + 1)
			st := r.Start()
			for _, c := range s[:cut] {
				st = st.Next(c)
			}
			if st == nil {
				t.Fatalf("prefix %q of generated %q not viable\n%s", s[:cut], s, src)
			}
			// The rest of s completes it: the prefix is completable.
			for _, c := range s[cut:] {
				st = st.Next(c)
			}
			if st == nil || !st.CanEnd() {
				t.Fatalf("%q not accepted incrementally\n%s", s, src)
			}
		}
	}
}

// FuzzRecognizer checks the recognizer against itself on arbitrary bytes
// for the grammars of the regression suite's style.
func FuzzRecognizer(f *testing.F) {
	grammars := []string{
		`root ::= [^a] "b"* | "é"+ [😀-😏]?`,
		"root ::= \"(\" root \")\" root | \"\"",
		`root ::= ([a-c] | "xé"){1,3} .`,
		"root ::= e\ne ::= e \"+\" t | t\nt ::= [0-9]+ | \"(\" e \")\"",
	}
	for i := range grammars {
		f.Add(uint8(i), []byte("ab"))
		f.Add(uint8(i), []byte("é😀"))
		f.Add(uint8(i), []byte("(())"))
		f.Add(uint8(i), []byte("1+(2+3)"))
	}
	var recs []*earley.Recognizer
	for _, src := range grammars {
		recs = append(recs, earley.New(mustParse(f, src)))
	}
	f.Fuzz(func(t *testing.T, which uint8, s []byte) {
		if len(s) > 64 {
			return
		}
		checkConsistent(t, grammars[int(which)%len(grammars)], recs[int(which)%len(recs)], s)
	})
}
