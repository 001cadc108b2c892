package gbnf_test

import (
	"flag"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/sharedtest"
)

var directDump = flag.String("directdump", "", "TestDirectParser: also compare the two parsers on every .gbnf file under this folder (schemabench -dump DIR writes the converter's 4,476 grammars there)")

// checkDirect compares the direct parser with the reference path
// (participle and the lowering of its AST) on src: where the reference
// gives a grammar, the direct parser gives the same one, positions
// included; where it gives an error, the direct parser gives nothing
// (Parse then returns the reference's error); and Parse returns what
// the reference returns.
func checkDirect(t *testing.T, name, src string) {
	t.Helper()
	want, werr := gbnf.ParseReference(src, "root")
	got := gbnf.ParseDirect(src, "root")
	switch {
	case werr != nil && got != nil:
		t.Errorf("%s: the direct parser accepts what the reference rejects (%v)\n%q", name, werr, src)
	case werr == nil && got == nil:
		t.Errorf("%s: the direct parser leaves a valid grammar to the reference\n%q", name, src)
	case werr == nil && !reflect.DeepEqual(got, want):
		t.Errorf("%s: the direct parser's grammar differs from the reference's\n%q\ndirect: %s\nreference: %s", name, src, got, want)
	}
	g, err := gbnf.Parse(src)
	if !reflect.DeepEqual(g, want) || !reflect.DeepEqual(err, werr) {
		t.Errorf("%s: Parse returns %v, %v; the reference %v, %v\n%q", name, g, err, want, werr, src)
	}
}

// mutations returns n variants of src, each cut short, missing a byte,
// or with a byte of GBNF syntax inserted: mostly invalid grammars, some
// valid ones laid out differently.
func mutations(rng *rand.Rand, src string, n int) []string {
	const ins = "()|{}*+?,:=\"[]\n 1a<!.-#^\\"
	var out []string
	for k := 0; k < n && src != ""; k++ {
		p := rng.Intn(len(src))
		switch k % 3 {
		case 0:
			out = append(out, src[:p])
		case 1:
			out = append(out, src[:p]+src[p+1:])
		default:
			out = append(out, src[:p]+ins[rng.Intn(len(ins)):][:1]+src[p:])
		}
	}
	return out
}

// TestDirectParser checks the direct parser against the reference
// (checkDirect) on the table tests, the regression suite, the llama.cpp
// grammars and test cases, random grammars printed from the IR, the
// converter's grammars for every 8th JSONSchemaBench schema, and
// mutations of all the small ones. With -directdump DIR, also on every
// grammar under DIR.
func TestDirectParser(t *testing.T) {
	srcs := testSources(t)
	// Groups and repetitions nested up to MaxDepth and one past it, the
	// repetitions inside the innermost group or after the groups.
	for _, g := range []int{0, 1, 500, gbnf.MaxDepth - 1, gbnf.MaxDepth} {
		for _, total := range []int{gbnf.MaxDepth - 1, gbnf.MaxDepth, gbnf.MaxDepth + 1} {
			if r := total - g; r >= 0 {
				open, reps, close := strings.Repeat("(", g), strings.Repeat("?", r), strings.Repeat(")", g)
				srcs = append(srcs, "root ::= "+open+`"a"`+reps+close, "root ::= "+open+`"a"`+close+reps)
			}
		}
	}
	rng := rand.New(rand.NewSource(16))
	for i := 0; i < 500; i++ {
		srcs = append(srcs, randomGrammar(rng).String())
	}
	if shared, _ := sharedtest.Find(); shared != "" {
		schemas, _ := filepath.Glob(filepath.Join(shared, "corpus", "jsonschemabench", "*", "*.json"))
		for i := 3; i < len(schemas); i += 8 {
			if src, ok := corpusGrammar(t, schemas[i]); ok {
				srcs = append(srcs, src)
			}
		}
	}
	for i, src := range srcs {
		checkDirect(t, "source "+itoa(int32(i)), src)
		if len(src) <= 4096 {
			for k, m := range mutations(rng, src, 6) {
				checkDirect(t, "source "+itoa(int32(i))+" mutation "+itoa(int32(k)), m)
			}
		}
	}
	t.Logf("%d sources and mutations of those up to 4 KB", len(srcs))
	if *directDump == "" {
		return
	}
	n := 0
	err := filepath.WalkDir(*directDump, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".gbnf") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checkDirect(t, path, string(b))
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d grammars under %s", n, *directDump)
}
