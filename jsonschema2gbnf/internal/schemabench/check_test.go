package schemabench_test

import (
	"path/filepath"
	"testing"

	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/schemabench"
	"github.com/structgen/structgen/mask"
)

// TestWalksCheck runs schemabench's differential check of the masks (see
// Walks.Check) on every 25th schema of the JSONSchemaBench sample with
// the Llama-3 vocabulary: along a random generation per grammar, sampled
// tokens of the vocabulary and tokens that extend an allowed one are
// allowed by the mask exactly when Matcher.Accept takes them. (The whole
// sample: schemabench -accept mask -walks 1 -check 32, about 25 million
// tokens.)
func TestWalksCheck(t *testing.T) {
	dir := sharedtest.Dir(t)
	cases, err := schemabench.Load(filepath.Join(dir, "corpus", "jsonschemabench"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := llama3vocab.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	mask.PrepareVocab(v)
	wk := &schemabench.Walks{Walks: 1, Steps: 60, Seed: 1, NoFloor: true, Check: 16}
	n := 0
	schemabench.Run(cases, schemabench.Options{
		Accept:       schemabench.MatcherWalks(v, mask.Options{}, wk),
		AfterPrepare: wk.Run,
		Instances:    true,
		Filter: func(c *schemabench.Case) bool {
			n++
			return n%25 == 0
		},
	})
	t.Logf("%d grammars walked, %d tokens checked", len(wk.Max), wk.Checked)
	if len(wk.Max) < 80 || wk.Checked < 100_000 {
		t.Errorf("%d grammars walked, %d tokens checked: want at least 80 and 100,000", len(wk.Max), wk.Checked)
	}
	if wk.Disagree > 0 {
		t.Errorf("%d tokens whose mask bit and Accept disagree; the first:", wk.Disagree)
		for _, e := range wk.Examples {
			t.Log(e)
		}
	}
}
