package mask_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/structgen/structgen/internal/benchcases"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/mask"
)

// TestDensePlansMatch replays each bench document three times on one
// matcher (Reset between), its plans kept dense where that pays (the
// default), and compares every mask with a matcher that keeps none; each
// case must have made some. Also with the stacks compacted after every
// step (plans renumbered and dropped, their dense masks with them).
func TestDensePlansMatch(t *testing.T) {
	cases, v := loadBench(t)
	for _, always := range []bool{false, true} {
		if always {
			defer mask.CollectAlways()()
		}
		for _, bc := range cases {
			t.Run(fmt.Sprint(bc.ID, "/collect=", always), func(t *testing.T) { densePlansMatch(t, bc, v, always) })
		}
	}
}

func densePlansMatch(t *testing.T, bc *benchcases.Case, v *mask.Vocab, collect bool) {
	c := compileCase(t, bc, v)
	dense := c.NewMatcher()
	a := make([]uint32, c.Words())
	b := make([]uint32, c.Words())
	for pass := 0; pass < 3; pass++ {
		dense.Reset()
		plain := c.NewMatcher()
		for i, tok := range bc.Tokens {
			dense.FillMask(a)
			restore := mask.SetDenseIDs(1 << 30)
			plain.FillMask(b)
			restore()
			if !slices.Equal(a, b) {
				t.Fatalf("pass %d step %d: the masks differ", pass, i)
			}
			if err := dense.Accept(tok); err != nil {
				t.Fatal(err)
			}
			if err := plain.Accept(tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	if w := dense.DenseWords(); w < 0 || w*4 > 1<<20 || (w == 0 && !collect) {
		t.Errorf("dense plan masks: %d words", w)
	}
}

// TestCrossCheckDense runs TestCrossCheckSmall's grammars and llama.cpp's grammars
// against the reference with every plan kept dense from its second use.
func TestCrossCheckDense(t *testing.T) {
	defer mask.SetDenseIDs(0)()
	srcs := slices.Clone(smallGrammars)
	files, _ := filepath.Glob(filepath.Join(sharedtest.Path(t, "corpus", "llama-grammars"), "*.gbnf"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, string(src))
	}
	crossCheckAll(t, srcs, testVocab(t, commonExtra...), 8, 40)
}
