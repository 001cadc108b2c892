package nomodel_test

import (
	"testing"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// corpusStride samples the corpus for TestCorpusSources: every 16th
// schema (about 140) keeps it to a few seconds.
const corpusStride = 16

// TestCorpusSources measures where the values of realistic instances
// come from over a sample of the corpus (20 instances per schema that
// converts strictly): the grammar's byte-by-byte fallback must stay
// rare (under 1% of values), and so must rejected proposals (5%).
func TestCorpusSources(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus run skipped in -short mode")
	}
	schemas, err := sharedtest.CorpusSchemas(sharedtest.Dir(t), corpusStride)
	if err != nil {
		t.Fatal(err)
	}
	var tot nomodel.Stats
	n := 0
	for _, cs := range schemas {
		src, err := jsonschema2gbnf.Convert(cs.Schema)
		if err != nil {
			continue
		}
		g, err := gbnf.Parse(src)
		if err != nil {
			continue
		}
		c, err := mask.Compile(g, nomodel.Vocab())
		if err != nil {
			continue
		}
		sch := prepare(t, cs.Schema)
		s, err := nomodel.NewSampler(c, nomodel.Params{Seed: 1, Schema: sch, MaxBytes: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if _, err := s.Next(); err != nil {
				t.Fatalf("%s: %v", cs.Path, err)
			}
		}
		st := s.Stats()
		for k := range st.Values {
			tot.Values[k] += st.Values[k]
		}
		tot.Proposals += st.Proposals
		tot.Rejected += st.Rejected
		n++
	}
	all := 0
	for _, c := range tot.Values {
		all += c
	}
	t.Logf("%d schemas, %d values: enum %d, example %d, default %d, generator %d, fallback %d; %d proposals, %d rejected",
		n, all, tot.Values[nomodel.SourceEnum], tot.Values[nomodel.SourceExample], tot.Values[nomodel.SourceDefault],
		tot.Values[nomodel.SourceGenerator], tot.Values[nomodel.SourceFallback], tot.Proposals, tot.Rejected)
	if fb := tot.Values[nomodel.SourceFallback]; fb*100 > all {
		t.Errorf("%d of %d values from the fallback", fb, all)
	}
	if tot.Rejected*20 > tot.Proposals {
		t.Errorf("%d of %d proposals rejected", tot.Rejected, tot.Proposals)
	}
}
