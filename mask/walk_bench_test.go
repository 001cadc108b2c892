package mask_test

import (
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

// BenchmarkFullWalk compiles a grammar whose one state allows most of the
// Llama-3 vocabulary: about one walk of the whole token trie (275k nodes).
// min-us is the fastest run (least disturbed by the shared machine).
func BenchmarkFullWalk(b *testing.B) {
	_, v := loadBench(b)
	mask.PrepareVocab(v)
	g, err := gbnf.Parse(`root ::= "\"" [^"\\]* "\""`)
	if err != nil {
		b.Fatal(err)
	}
	best := time.Hour
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, err := mask.Compile(g, v); err != nil {
			b.Fatal(err)
		}
		best = min(best, time.Since(t0))
	}
	b.ReportMetric(float64(best.Microseconds()), "min-us")
}
