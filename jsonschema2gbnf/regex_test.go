package jsonschema2gbnf

import (
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
)

var crossPatterns = []string{
	`abc`, `^abc$`, `^a+b*$`, `(^a|b$)`, `\bcat\b`, `\Bx`, `^$`, ``, `^(?:\S+\s+){0,2}\S+$`,
	`(?i)^ab$`, `(?m)^a$`, `[^a-c]{2}`, `^[\d]{2,3}-?x?$`, `a|^b|c$`, `^.{0,3}$`, `(?s)^.$`,
	`^(foo|bar)baz$`, `^\p{Lu}\p{Ll}*$`, `x*`, `^[a"\\\n]+$`, `é+`, `^[^\x00-\x1f]*$`,
}

// randString draws from a small alphabet that hits the patterns' edges.
func randString(rng *rand.Rand) string {
	alphabet := []rune{'a', 'b', 'c', 'x', 'A', 'B', ' ', '\n', '-', '1', '2', '"', '\\', 'é', 'É', '_', '\t', 0x1, 'z'}
	n := rng.Intn(7)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(alphabet[rng.Intn(len(alphabet))])
	}
	return b.String()
}

// The automaton agrees with Go's regexp (search semantics) on random
// strings; it is the reference for the grammar's string languages.
func TestRegexDFAMatchesGoRegexp(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for _, p := range crossPatterns {
		re := regexp.MustCompile(p)
		parsed, err := parsePattern(p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := regexDFA(parsed, true)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		for i := 0; i < 3000; i++ {
			s := randString(rng)
			if got, want := d.matches(s), re.MatchString(s); got != want {
				t.Fatalf("pattern %q, string %q: automaton %v, regexp %v", p, s, got, want)
			}
		}
	}
}

// The grammar for a pattern (structural or through the automaton) accepts
// exactly the canonical JSON encodings of the strings the pattern matches.
func TestPatternGrammarMatchesGoRegexp(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for _, p := range crossPatterns {
		schema := `{"type":"string","pattern":` + encodeJSONString(p) + `}`
		src, err := Convert([]byte(schema))
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatalf("%q: %v\n%s", p, err, src)
		}
		r := earley.New(g)
		re := regexp.MustCompile(p)
		for i := 0; i < 400; i++ {
			s := randString(rng)
			if got, want := r.Accepts([]byte(encodeJSONString(s))), re.MatchString(s); got != want {
				t.Fatalf("pattern %q, string %q: grammar %v, regexp %v\n%s", p, s, got, want, src)
			}
		}
	}
}

// DFA operations against their definitions on random strings.
func TestDFAOperations(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	mk := func(p string) (*dfa, *regexp.Regexp) {
		parsed, _ := parsePattern(p)
		d, err := regexDFA(parsed, true)
		if err != nil {
			t.Fatal(err)
		}
		return d, regexp.MustCompile(p)
	}
	a, ra := mk(`^[ab]+$`)
	b, rb := mk(`b`)
	inter, _ := intersectDFA(a, b)
	minus, _ := minusDFA(a, b)
	union, _ := unionDFA(a, b)
	comp := a.complement()
	words := dfaStrings([]string{"ab", "abc", ""})
	notWords := words.complement()
	ld, _ := dfaLength(1, 3)
	for i := 0; i < 3000; i++ {
		s := randString(rng)
		x, y := ra.MatchString(s), rb.MatchString(s)
		if inter.matches(s) != (x && y) || minus.matches(s) != (x && !y) || union.matches(s) != (x || y) || comp.matches(s) == x {
			t.Fatalf("%q: set operations disagree", s)
		}
		in := s == "ab" || s == "abc" || s == ""
		if words.matches(s) != in || notWords.matches(s) == in {
			t.Fatalf("%q: string set disagrees", s)
		}
		n := len([]rune(s))
		if ld.matches(s) != (n >= 1 && n <= 3) {
			t.Fatalf("%q: length automaton disagrees", s)
		}
		if m := minus.minimize(); m.matches(s) != minus.matches(s) {
			t.Fatalf("%q: minimization changed the language", s)
		}
	}
}

// The complement of a name set (keys of additional properties).
func TestNotInSet(t *testing.T) {
	schema := `{"properties":{"a":{},"ab":{},"b\"":{},"":{},"é":{}},"additionalProperties":{"type":"integer"}}`
	_, g := compileGrammar(t, schema)
	r := earley.New(g)
	for _, s := range []string{`{"x":1}`, `{"abc":1}`, `{"b":1}`, `{"b\"c":1}`, `{"e":1}`, `{"éé":1}`, `{"a":"s","x":1}`} {
		if !r.Accepts([]byte(s)) {
			t.Errorf("rejects %s", s)
		}
	}
	for _, s := range []string{`{"a":"s","a":1}`, `{"ab":"s","ab":1}`, `{"":"s","":1}`, `{"é":"s","é":1}`, `{"b\"":"s","b\"":1}`, `{"x":"s"}`} {
		if r.Accepts([]byte(s)) {
			t.Errorf("accepts %s", s)
		}
	}
}

// Languages that leave a pattern at many states (a key or string that
// must not match it) are written as P kchar* | F with one copy of the
// free tail and of the wide characters (dfaExpr), and stay exact: the
// grammar against Go's regexp on strings near the pattern's matches.
func TestPatternComplementShared(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	alphabet := []rune{'a', 'f', 'g', '0', '9', '-', '_', 'é', '"', '\\', '日', 0x1, '😀'}
	cases := []struct {
		pattern string
		match   string // a matching string, mutated for the probes
	}{
		{`^[0-9a-f]{8}-[0-9a-f]{4}$`, "0a1b2c3d-9f9f"},
		{`^[_a-z]+$`, "ab_c"},
		{`^x-[a-z]{2,5}$`, "x-abc"},
		{`^(ab|a-f)+$`, "aba-f"},
	}
	for _, tc := range cases {
		re := regexp.MustCompile(tc.pattern)
		schemas := []string{
			// the keys of additionalProperties: not the pattern
			`{"type":"object","patternProperties":{` + encodeJSONString(tc.pattern) + `:{"const":1}},"additionalProperties":{"const":2}}`,
			// a string that must not match
			`{"type":"string","not":{"pattern":` + encodeJSONString(tc.pattern) + `}}`,
		}
		for si, schema := range schemas {
			src, g := compileGrammar(t, schema)
			// one free tail and one wide character for the whole
			// language (before: one per state of the pattern)
			if n := strings.Count(src, "kchar*"); n > 2 {
				t.Errorf("%s: %d copies of kchar*:\n%s", schema, n, src)
			}
			r := earley.New(g)
			for i := 0; i < 600; i++ {
				s := []rune(tc.match)
				switch k := rng.Intn(4); {
				case k == 0 && len(s) > 0:
					s = s[:rng.Intn(len(s))]
				case k == 1:
					s = append(s, alphabet[rng.Intn(len(alphabet))])
				case k == 2 && len(s) > 0:
					s[rng.Intn(len(s))] = alphabet[rng.Intn(len(alphabet))]
				case k == 3:
					s = []rune(randString(rng))
				}
				str := string(s)
				var doc string
				var want bool
				if si == 0 {
					v := 1 + rng.Intn(2)
					doc = fmt.Sprintf("{%s:%d}", encodeJSONString(str), v)
					want = re.MatchString(str) == (v == 1)
				} else {
					doc = encodeJSONString(str)
					want = !re.MatchString(str)
				}
				if got := r.Accepts([]byte(doc)); got != want {
					t.Fatalf("%s: accepts %s = %v, want %v\n%s", schema, doc, got, want, src)
				}
			}
		}
	}
}
