package mask_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
	"github.com/structgen/structgen/vocab"
)

// BenchmarkSliceMemory reports the memory the Llama-3 vocabulary keeps
// after vocab.MaxSlices grammars of bounded strings, each of its own
// class, were compiled and dropped: the slices and the sets of their
// tokens by characters that package mask keeps with them (upToChars),
// the most that a long-running server compiling such schemas holds for
// them (MB-kept).
func BenchmarkSliceMemory(b *testing.B) {
	_, v := loadBench(b)
	mask.PrepareVocab(v)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	bs := make([]uint32, (v.Size()+31)/32)
	if sliceMemBase == 0 {
		sliceMemBase = heap()
	}
	// Each round's classes are new: the vocabulary's cache then holds
	// MaxSlices of them, whatever it held before.
	for b.Loop() {
		sliceMemRound++
		round := sliceMemRound
		for x := range vocab.MaxSlices {
			// [^"\\] less two printable ASCII bytes chosen by x and round:
			// a class of its own for each x.
			c1 := byte(0x21 + x%94)
			c2 := byte(0x21 + (x/94+round*7)%94)
			src := fmt.Sprintf(`root ::= "\"" [^"\\\x%02x\x%02x]{0,%d} "\""`, c1, c2, 5+x%40)
			g, err := gbnf.Parse(src)
			if err != nil {
				b.Fatal(src, err)
			}
			c, err := mask.Compile(g, v)
			if err != nil {
				b.Fatal(err)
			}
			c.NewMatcher().FillMask(bs)
		}
		b.ReportMetric(float64(int64(heap())-int64(sliceMemBase))/(1<<20), "MB-kept")
	}
}

// sliceMemBase is the heap before BenchmarkSliceMemory's first round;
// sliceMemRound numbers its rounds (classes of their own in each).
var (
	sliceMemBase  uint64
	sliceMemRound int
)
