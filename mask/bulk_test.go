package mask_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/benchcases"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// TestBulkEqualsStepping compiles grammars whose states loop over wide
// byte classes (string bodies, counted strings, e-mail parts, free keys)
// with and without the walkers' bulk acceptance of self-loop subtrees,
// on the Llama-3 vocabulary, and checks that the masks are bit for bit
// the same along random generations (and the bench documents): bulk is
// only a shortcut. (Only the compile-time walks differ: the deeper levels
// that matchers compute on first use walk with bulk in both.)
func TestBulkEqualsStepping(t *testing.T) {
	cases, v := loadBench(t)
	grammars := map[string]string{
		"string":        `root ::= "\"" [^"\\]* "\""`,
		"counted":       `root ::= "\"" [^"\\\x00-\x1f]{1,80} "\"" | "<" [a-z]{0,40} ">"`,
		"counted-above": `root ::= "[" item ("," item){0,9} "]"` + "\n" + `item ::= "\"" [ -!#-~]{2,30} "\""`,
		"loop-follow":   `root ::= w (" " w)*` + "\n" + `w ::= [a-z]+`,
		"unbounded":     `root ::= ([a-z0-9]{3,})? "." [a-z]+`,
		// The byte after the repetition is also in its loop: cross points
		// inside loop subtrees matter once few iterations are left.
		"follow-in-loop": `root ::= ([a-z]{5,8} "e" [0-9] " ")+`,
		// Labels: an iteration ending in "-" cannot end the repetition.
		"labels": `root ::= ([a-z0-9] ([a-z0-9-]{0,10} [a-z0-9])? "."){1,3} [a-z]{2,9}`,
	}
	for _, bc := range cases {
		grammars[bc.ID] = grammarOf(t, bc)
	}
	addSchemas(t, grammars, map[string]string{
		"email":    `{"type":"object","properties":{"a":{"type":"string","format":"email"},"b":{"type":"string","maxLength":12}},"additionalProperties":{"type":"string","minLength":3}}`,
		"hostname": `{"type":"array","items":{"type":"string","format":"hostname"}}`,
		"uri":      `{"type":"string","format":"uri"}`,
	})
	for name, src := range grammars {
		t.Run(name, func(t *testing.T) {
			bulk, step := compileBulkAndStep(t, src, v)
			sameMasks(t, bulk, step, docsOf(cases, name), 20, 120, 7)
		})
	}
}

// addSchemas adds to grammars the GBNF of each schema (compact
// whitespace).
func addSchemas(t *testing.T, grammars, schemas map[string]string) {
	t.Helper()
	for name, schema := range schemas {
		src, err := jsonschema2gbnf.Convert([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		grammars[name] = src
	}
}

// docsOf returns the token documents of the bench case id (none for
// other names).
func docsOf(cases []*benchcases.Case, id string) [][]int32 {
	var docs [][]int32
	for _, bc := range cases {
		if bc.ID == id {
			docs = append(docs, bc.Tokens)
		}
	}
	return docs
}

// compileBulkAndStep compiles src entirely eagerly with and without bulk
// acceptance.
func compileBulkAndStep(t *testing.T, src string, v *mask.Vocab) (bulk, step *mask.Compiled) {
	t.Helper()
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	bulk, err = mask.CompileWith(g, v, mask.Options{EagerWork: -1, EagerTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	restore := mask.SetNoBulk(true)
	defer restore()
	step, err = mask.CompileWith(g, v, mask.Options{EagerWork: -1, EagerTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	return bulk, step
}

// sameMasks checks that compilations x and y of the same grammar give
// the same mask at every step of each document in docs and of walks
// random generations of up to steps tokens (tokens drawn uniformly from
// the allowed ones).
func sameMasks(t *testing.T, x, y *mask.Compiled, docs [][]int32, walks, steps int, seed uint64) {
	t.Helper()
	wx, wy := make([]uint32, x.Words()), make([]uint32, y.Words())
	rng := rand.New(rand.NewPCG(seed, 1))
	for k := 0; k < len(docs)+walks; k++ {
		mx, my := x.NewMatcher(), y.NewMatcher()
		var doc []int32
		if k < len(docs) {
			doc = docs[k]
		}
		for i := 0; ; i++ {
			mx.FillMask(wx)
			my.FillMask(wy)
			var allowed []int32
			for w := range wx {
				if wx[w] != wy[w] {
					t.Fatalf("generation %d step %d: masks differ at word %d: %032b vs %032b", k, i, w, wx[w], wy[w])
				}
				for b := 0; b < 32; b++ {
					if wx[w]&(1<<b) != 0 {
						allowed = append(allowed, int32(w*32+b))
					}
				}
			}
			var tok int32
			if doc != nil {
				if i == len(doc) {
					break
				}
				tok = doc[i]
			} else {
				if i == steps || len(allowed) == 0 {
					break
				}
				tok = allowed[rng.IntN(len(allowed))]
			}
			if x.Vocab().IsEOG(tok) {
				break
			}
			if err := mx.Accept(tok); err != nil {
				t.Fatalf("generation %d step %d: %v", k, i, err)
			}
			if err := my.Accept(tok); err != nil {
				t.Fatalf("generation %d step %d: %v", k, i, err)
			}
		}
	}
}

// TestBulkEqualsSteppingSmall is TestBulkEqualsStepping on a small
// vocabulary of runs ("--", "----", "abab…"; the longer ones with no
// other continuation), where loop subtrees are deep and short
// repetitions run out of iterations inside them.
func TestBulkEqualsSteppingSmall(t *testing.T) {
	var extra []string
	for _, unit := range []string{"-", "a", "ab", "a-", "e", "é"} {
		for n := 2; n <= 9; n++ {
			extra = append(extra, strings.Repeat(unit, n))
			if n <= 3 {
				extra = append(extra, strings.Repeat(unit, n)+".", strings.Repeat(unit, n)+"e1")
			}
		}
	}
	v := testVocab(t, extra...)
	for name, src := range map[string]string{
		"labels":         `root ::= ([a-z0-9] ([a-z0-9-]{0,6} [a-z0-9])? "."){1,3} [a-z]{2,5}`,
		"follow-in-loop": `root ::= ([a-z]{5,8} "e" [0-9] " ")+ "."`,
		"string":         `root ::= "\"" [^"\\]{0,7} "\"" ("." [^.]{2,6})?`,
		"above":          `root ::= "[" item ("," item){0,3} "]"` + "\n" + `item ::= [a-z-]{1,6} "e"?`,
	} {
		t.Run(name, func(t *testing.T) {
			bulk, step := compileBulkAndStep(t, src, v)
			sameMasks(t, bulk, step, nil, 300, 30, 11)
		})
	}
}
