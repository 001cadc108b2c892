package mask_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// sliceGrammars are grammars whose states loop over wide classes, where
// level 1 comes from the vocabulary's slices: string bodies with and
// without escapes, counted, bounded below, followed by more text, classes
// that leave out non-ASCII characters (no slice), free text, and a
// class whose follow set meets the loop (no slice for the repetition).
var sliceGrammars = map[string]string{
	"json-string": `root ::= "\"" char* "\"" ("," "\"" char* "\"")*` + "\n" +
		`char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`,
	"json-string-counted": `root ::= "{\"a\":\"" char{1,80} "\",\"b\":\"" char{0,12} "\"}"` + "\n" +
		`char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`,
	"plus":        `root ::= "<" [^<>]+ ">" [^<]*`,
	"no-escapes":  `root ::= "'" [^'\x00-\x1f]* "'" [a-z]*`,
	"free-text":   `root ::= .* "."`,
	"comment":     `root ::= ("#" [^\n]* "\n")+`,
	"ascii-only":  `root ::= "\"" [ -!#-~]* "\""`,
	"not-e-acute": `root ::= "\"" [^"é]* "\""`,
	"in-follow":   `root ::= [^;]{2,40} "x;" [^;]*`,
	"bounded-min": `root ::= "(" [^()]{3,} ")"`,
	"min-length":  `root ::= "\"" [^"\\\x00-\x1f]{3} [^"\\\x00-\x1f]* "\"" | "<" [a-z]{2} [a-z0-9_]* ">"`,
	"identifiers": `root ::= (id (" " | "+" | "(") )+ id` + "\n" + `id ::= ("let" | "in" | [a-z] [a-z0-9_]*)`,
	// Deeper levels and call continuations in loops over wide classes:
	// the text after a word-limit repetition (a frame that pops inside a
	// token), a call's continuation in a loop, one on a chain (minimum
	// length).
	"word-limit": `root ::= "{\"a\":" text "," "\"b\":" text2 "}"` + "\n" +
		`text ::= "\"" (word+ sep+){0,3} word+ "\""` + "\n" +
		`text2 ::= "\"" ("" | (word+ sep+){0,5} word+) "\""` + "\n" +
		`word ::= [^\x00- "\\] | "\\" ["\\b] | "\\u000" [0-7bef]` + "\n" + `sep ::= " " | "\\" [fnrt]`,
	// A bounded repetition over a class few tokens stay inside (the
	// slice's tokens as a list): 32 punctuation bytes, about 2,600
	// Llama-3 tokens; the slice's tokens still count their characters.
	"few-tokens": "root ::= [!-/:-@\\[-`{-~]{1,5} \"a\" ([!-/:-@\\[-`{-~]{6,40} \"a\" | [!-/:-@\\[-`{-~]{5,41} \"b\")+ \"z\"",
	// Digit loops (integers, a counted run): 1,110 Llama-3 tokens.
	"digits":         `root ::= "[" (int ("," int)*)? "]" [0-9]{2,30} "x"` + "\n" + `int ::= "-"? ("0" | [1-9] [0-9]*)`,
	"call-then-loop": `root ::= ("<" tag ">" [^<>]*)+ "." [^.]{2,} "."` + "\n" + `tag ::= [a-z]+ | "x" [0-9]`,
	// Strings that must contain one of some names, or a pattern: the
	// states of the match lead back to the same states on the bytes that
	// leave their loop (shared root-exit walks, rootExit), and borrow the
	// loop's tokens and exits by first byte (addSliceBorrowed).
	"contains": `root ::= "\"" kchar* ("apne1-az" [1-3] | "apse" [1-4] "-az" [1-3] | "euc1-" ("az" [1-3] | "ham1-az1") | "usw2-az" [1-4]) kchar* "\""` + "\n" +
		`kchar ::= [^"\\\x00-\x1F] | "\\" ["\\bfnrt]`,
	"dll-path": `root ::= "\"" kchar* [0-9A-Z_a-z]+ "\\\\" ([0-9A-Z_a-z]+ ".")* [0-9A-Z_a-z]+ ".dll" kchar* "\""` + "\n" +
		`kchar ::= [^"\\\x00-\x1F] | "\\" ["\\bfnrt]`,
}

// TestSlicesEqualWalks compiles grammars with loops over wide classes
// with the vocabulary's slices (eagerly, and lazily: nearly every state
// on first use) and without them (eagerly, the plain walks), on the
// Llama-3 vocabulary, and checks that the masks are bit for bit the same
// along the bench documents and random generations.
func TestSlicesEqualWalks(t *testing.T) {
	cases, v := loadBench(t)
	grammars := map[string]string{}
	for name, src := range sliceGrammars {
		grammars[name] = src
	}
	for _, bc := range cases {
		grammars[bc.ID] = grammarOf(t, bc)
	}
	addSchemas(t, grammars, map[string]string{
		"email":             `{"type":"object","properties":{"a":{"type":"string","format":"email"},"b":{"type":"string","maxLength":12}},"additionalProperties":{"type":"string","minLength":3}}`,
		"keys":              `{"type":"object","properties":{"name":{"type":"string"},"nick":{"type":"string","minLength":2,"maxLength":40}},"additionalProperties":{"type":"integer"}}`,
		"uri":               `{"type":"array","items":{"type":"string","format":"uri"}}`,
		"min-length-schema": `{"type":"array","items":{"type":"string","minLength":2}}`,
		"enum-tail":         `{"type":"array","items":{"anyOf":[{"type":"string","pattern":"^a.*z$"},{"type":"string","maxLength":5}]}}`,
	})
	for name, src := range grammars {
		t.Run(name, func(t *testing.T) {
			ref, eager, lazy := compileSliced(t, src, v)
			t.Logf("%d of %d states use a slice", eager.SliceStates(), eager.Stats().TopStates)
			// (The bench grammars are large and have their documents: fewer
			// random generations.)
			docs := docsOf(cases, name)
			walks := 8
			if docs != nil {
				walks = 2
			}
			sameMasks(t, ref, eager, docs, walks, 80, 5)
			sameMasks(t, ref, lazy, docs, walks, 80, 5)
		})
	}
}

// TestOpenChains: the states of a pattern under a length bound (one per
// pattern state and character count, each stepping on a class to the
// next) take their level 1 from open chains of the class's slice (capped
// where the bound is within a token's reach), eagerly and on first use,
// and the masks along random generations are bit for bit those of the
// walks without slices on the Llama-3 vocabulary: an ASCII class before
// another part, a class with non-ASCII characters, and states that may
// end the string (pops) or stay inside a search pattern.
func TestOpenChains(t *testing.T) {
	_, v := loadBench(t)
	grammars := map[string]string{}
	addSchemas(t, grammars, map[string]string{
		"email":   `{"type":"string","pattern":"^[a-z]+@[a-z]+\\.[a-z]+$","maxLength":40}`,
		"id":      `{"type":"object","properties":{"id":{"type":"string","pattern":"^[A-Za-z0-9_-]+:[0-9]+$","maxLength":32}},"required":["id"]}`,
		"unicode": `{"type":"string","pattern":"^[^@]+@[^@]+$","maxLength":30}`,
		"pops":    `{"type":"array","items":{"type":"string","pattern":"^[a-z]+[0-9]*$","maxLength":25}}`,
		"search":  `{"type":"string","pattern":".+[@].+[.]___","minLength":10,"maxLength":30}`,
	})
	for name, src := range grammars {
		t.Run(name, func(t *testing.T) {
			ref, eager, lazy := compileSliced(t, src, v)
			open, capped := eager.OpenSliceStates()
			t.Logf("%d of %d states use an open chain, %d capped", open, eager.Stats().TopStates, capped)
			if open == 0 || capped == 0 {
				t.Errorf("%d states use an open chain, %d capped; want some of each", open, capped)
			}
			sameMasks(t, ref, eager, nil, 8, 80, 5)
			sameMasks(t, ref, lazy, nil, 8, 80, 5)
		})
	}
}

// TestPreparedOpenSlices: where the eager phase leaves states with open
// chains to first use, it makes their classes' slices (vocabulary work),
// so that a first use walks exits instead of the vocabulary; with the
// preparation off, the slices are missing. (Classes no other test uses:
// the vocabulary keeps its slices.)
func TestPreparedOpenSlices(t *testing.T) {
	_, v := loadBench(t)
	for _, tc := range []struct {
		first, second string // the classes of the pattern's two parts
		prepare       bool
	}{{"b-y", "c-x", false}, {"d-w", "e-v", true}} {
		grammars := map[string]string{}
		addSchemas(t, grammars, map[string]string{"p": fmt.Sprintf(`{"type":"string","pattern":"^[%s]+@[%s]+$","maxLength":60}`, tc.first, tc.second)})
		g, err := gbnf.Parse(grammars["p"])
		if err != nil {
			t.Fatal(err)
		}
		func() {
			if !tc.prepare {
				defer mask.SetMaxPreparedSlices(0)()
			}
			c, err := mask.CompileWith(g, v, mask.Options{EagerWork: 1})
			if err != nil {
				t.Fatal(err)
			}
			ready, total := c.OpenSlicesReady()
			if total == 0 || (ready == total) != tc.prepare {
				t.Errorf("[%s]+@[%s]+, prepared %v: %d of %d states left to first use have their open chain's slice", tc.first, tc.second, tc.prepare, ready, total)
			}
		}()
	}
}

// TestOpenChainPops: a word of up to 40 letters in a frame of its own (a
// recursive rule): every state of its open chain may end the frame, so
// the parents of exits by the bytes that follow it are cross points.
// Masks along random generations are the Earley reference's, on a
// vocabulary with tokens that end the word inside them.
func TestOpenChainPops(t *testing.T) {
	var b strings.Builder
	b.WriteString("root ::= \"[\" w (\",\" w)* \"]\"\nw ::= [a-z] w1 | \"(\" w (\",\" w)* \")\"\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "w%d ::= ([a-z] w%d)?\n", i, i+1)
	}
	b.WriteString("w40 ::= \"\"\n")
	g, err := gbnf.Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	v := testVocab(t, append([]string{"ab,", "abc]", "ab)", "a,b", "xyz,(", "abcdefghij", "abcdefghijklmnopqrst", "pqrstuvwxyz]", "q],["}, commonExtra...)...)
	c := crossCheck(t, g, v, 30, 60, 3)
	open, capped := c.OpenSliceStates()
	if open == 0 || capped == 0 {
		t.Errorf("%d states use an open chain, %d capped; want some of each", open, capped)
	}
}

// TestMidCharacterSlices: a string's states inside a UTF-8 character
// (after a lead byte, or one continuation byte of three) take their level
// 1 from the vocabulary's mid-character slices, and the masks after
// prefixes that end inside every kind of character are those of the
// walks without slices, eagerly and on first use.
func TestMidCharacterSlices(t *testing.T) {
	_, v := loadBench(t)
	grammars := map[string]string{
		"json-string": sliceGrammars["json-string"],
		// A key language with an escape of its own, then a value: the
		// loop's exits go on in the frame.
		"keys": `root ::= "{" ("\"" kchar* "\":" [0-9]+ ("," "\"" kchar* "\":" [0-9]+)*)? "}"` + "\n" +
			`kchar ::= [^"\\\x00-\x1F] | "\\" ["\\bfnrt]`,
	}
	prefixes := map[string][]string{
		"json-string": {"\"\xc3", "\"\xe6", "\"\xe6\x97", "\"ab\xe0", "\"\xe0\xa4", "\"\xed", "\"\xed\x9f", "\"\xf0", "\"a\xf0\x9f", "\"\xf0\x9f\x98", "\"\xf4\x8f", "\"\xf3\x80\x80", "\"x\",\"\xe4\xb8"},
		"keys":        {"{\"\xc3", "{\"\xe6\x97", "{\"a\xf0\x9f\x98", "{\"a\":1,\"\xed"},
	}
	for name, src := range grammars {
		t.Run(name, func(t *testing.T) {
			ref, eager, lazy := compileSliced(t, src, v)
			if n := eager.MidSliceStates(); n < 6 {
				t.Errorf("%d states use a mid-character slice, want the 6 inside a character or more", n)
			}
			for _, p := range prefixes[name] {
				var masks [][]uint32
				for _, c := range []*mask.Compiled{ref, eager, lazy} {
					m := c.NewMatcher()
					if err := m.AcceptBytes([]byte(p)); err != nil {
						t.Fatalf("%q: %v", p, err)
					}
					bits := make([]uint32, c.Words())
					m.FillMask(bits)
					masks = append(masks, bits)
				}
				if !slices.Equal(masks[0], masks[1]) || !slices.Equal(masks[0], masks[2]) {
					t.Errorf("%q: the masks with slices (eager %v, on first use %v) differ from the walk's", p, slices.Equal(masks[0], masks[1]), slices.Equal(masks[0], masks[2]))
				}
				if popcount(masks[0]) == 0 {
					t.Errorf("%q: nothing allowed", p)
				}
			}
			sameMasks(t, ref, lazy, nil, 6, 60, 7)
		})
	}
}

// TestSliceDenseAdd: a listed set added to another costs a unit per id
// (and a read of each token's first byte when filtered by it), its bitset
// one per 32 words. The digits' slice (1,110 Llama-3 tokens) is a list
// with a bitset beside it; an integer's first state after "-" takes its
// tokens by first byte ([1-9]: "0" leads elsewhere), and an integer's
// digit loop whole. The masks must be those without the bitset form, and
// the first state after "-" cheaper.
func TestSliceDenseAdd(t *testing.T) {
	_, v := loadBench(t)
	g, err := gbnf.Parse(`root ::= "[" (int ("," int)*)? "]"` + "\n" + `int ::= "-"? ("0" | [1-9] [0-9]*)`)
	if err != nil {
		t.Fatal(err)
	}
	// firstUse compiles nearly nothing eagerly and returns the units of
	// the first use of the state after "-".
	firstUse := func(off bool) int64 {
		defer mask.SetNoDenseAdd(off)()
		c, err := mask.CompileWith(g, v, mask.Options{EagerWork: 1})
		if err != nil {
			t.Fatal(err)
		}
		m := c.NewMatcher()
		bits := make([]uint32, c.Words())
		// (The digit loop and its exits come with "12", on its first use.)
		var before, after int64
		for _, p := range []string{"[", "12", ",", "-"} {
			if err := m.AcceptBytes([]byte(p)); err != nil {
				t.Fatal(err)
			}
			_, before = c.LazyWork()
			m.FillMask(bits)
			_, after = c.LazyWork()
		}
		return after - before
	}
	// eager compiles every state eagerly (under the setting).
	eager := func(off bool) *mask.Compiled {
		defer mask.SetNoDenseAdd(off)()
		c, err := mask.CompileWith(g, v, mask.Options{EagerWork: -1, EagerTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	sameMasks(t, eager(true), eager(false), nil, 12, 40, 9)
	denseUnits, listUnits := firstUse(false), firstUse(true)
	t.Logf("first use of the state after \"-\": %d units with bitsets, %d with lists", denseUnits, listUnits)
	if denseUnits >= listUnits {
		t.Errorf("the state after \"-\" computed %d units with the bitset forms, %d without: want fewer", denseUnits, listUnits)
	}
}

// TestSlicesEqualWalksCorpus is TestSlicesEqualWalks on a sample of the
// JSONSchemaBench schemas (every 80th), lazily compiled.
func TestSlicesEqualWalksCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus sample")
	}
	_, v := loadBench(t)
	schemas, err := sharedtest.CorpusSchemas(sharedtest.Dir(t), 80)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cs := range schemas {
		src, err := jsonschema2gbnf.Convert(cs.Schema)
		if err != nil {
			continue
		}
		t.Run(filepath.Base(cs.Path), func(t *testing.T) {
			ref, _, lazy := compileSliced(t, src, v)
			sameMasks(t, ref, lazy, nil, 3, 60, uint64(cs.Index))
		})
		n++
	}
	t.Logf("%d schemas", n)
}

// compileSliced compiles src entirely eagerly without slices (the
// reference), entirely eagerly with them, and with slices and nearly no
// eager work.
func compileSliced(t *testing.T, src string, v *mask.Vocab) (ref, eager, lazy *mask.Compiled) {
	t.Helper()
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	full := mask.Options{EagerWork: -1, EagerTimeout: -1}
	if eager, err = mask.CompileWith(g, v, full); err != nil {
		t.Fatal(err)
	}
	if lazy, err = mask.CompileWith(g, v, mask.Options{EagerWork: 1}); err != nil {
		t.Fatal(err)
	}
	restore := mask.SetNoSlices(true)
	defer restore()
	if ref, err = mask.CompileWith(g, v, full); err != nil {
		t.Fatal(err)
	}
	return ref, eager, lazy
}

// TestSliceFoldedTail: [0-X]{n}[0] folds the [0] into the repetition (n+1
// iterations, the last one "0"), so the iteration end most bytes lead to
// cannot end the repetition. A slice there let "12" through as the last
// two characters (found by FuzzMatcher). Masks must equal those without
// slices after every prefix of 1s.
func TestSliceFoldedTail(t *testing.T) {
	bv := testVocab(t, "ab", "12", "123", "1234", "é")
	for n := 1; n <= 8; n++ {
		for _, tail := range []string{`[0]`, `"0"`, `[0-9]`, ``} {
			src := fmt.Sprintf(`root ::= [0-X]{%d}%s`, n, tail)
			g, err := gbnf.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			with, err := mask.Compile(g, bv)
			if err != nil {
				t.Fatal(err)
			}
			restore := mask.SetNoSlices(true)
			without, err := mask.Compile(g, bv)
			restore()
			if err != nil {
				t.Fatal(err)
			}
			mw, mo := with.NewMatcher(), without.NewMatcher()
			ww, wo := make([]uint32, with.Words()), make([]uint32, without.Words())
			for i := 0; i < n; i++ {
				mw.FillMask(ww)
				mo.FillMask(wo)
				if !slices.Equal(ww, wo) {
					t.Fatalf("%s after %d characters: the mask differs from the one without slices", src, i)
				}
				if err := mw.Accept('1'); err != nil {
					t.Fatal(err)
				}
				if err := mo.Accept('1'); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestRootExitsShared: in a string that must contain one of some names,
// the states of the match lead back to the same states on the bytes that
// leave their loop; their root-exit walks are done once per compilation
// (and their borrowed tokens and exits are taken by first byte), so an
// eager compilation does much less work than with every state walking its
// own, with the same masks as the walks without slices.
func TestRootExitsShared(t *testing.T) {
	_, v := loadBench(t)
	for _, name := range []string{"contains", "dll-path"} {
		t.Run(name, func(t *testing.T) {
			g, err := gbnf.Parse(sliceGrammars[name])
			if err != nil {
				t.Fatal(err)
			}
			// (Without regions, which take these states' exits from their
			// exit trees: TestRegions.)
			defer mask.SetNoRegions(true)()
			shared := compileFull(t, g, v, nil)
			apart := compileFull(t, g, v, func() func() { return mask.SetNoExitMemo(true) })
			// With the memo bounded to nothing, the walks are not shared:
			// the work of walking each (less the other exits' sharing).
			bounded := compileFull(t, g, v, func() func() { return mask.SetRootExitLimit(0) })
			ws, wa, wb := shared.Stats().EagerWork, apart.Stats().EagerWork, bounded.Stats().EagerWork
			t.Logf("eager work: %d shared, %d apart, %d with the memo bounded to nothing", ws, wa, wb)
			if 3*ws > 2*wa {
				t.Errorf("eager work %d with the root exits' walks shared, %d without: not shared", ws, wa)
			}
			if wb <= ws {
				t.Errorf("eager work %d with the memo bounded to nothing, %d without a bound: the bound is not checked", wb, ws)
			}
			sameMasks(t, apart, shared, nil, 6, 60, 9)
			sameMasks(t, apart, bounded, nil, 3, 60, 10)
		})
	}
}

// compileFull compiles g entirely eagerly (no budget, no timeout), with
// set's setting of the package (nil: none) in force during the compile.
func compileFull(t *testing.T, g *gbnf.Grammar, v *mask.Vocab, set func() func()) *mask.Compiled {
	t.Helper()
	if set != nil {
		defer set()()
	}
	c, err := mask.CompileWith(g, v, mask.Options{EagerWork: -1, EagerTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
