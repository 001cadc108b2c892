package mask_test

import (
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

// BenchmarkFirstUseNumber measures the first mask (FillMask) at the
// states of a JSON number on a fresh compilation that leaves every state
// to first use (Llama-3): where a value starts, after a minus sign, and
// after a decimal point, with the fraction a digit loop and a bounded
// repetition (the converter's). The compilation is not timed.
func BenchmarkFirstUseNumber(b *testing.B) {
	_, v := loadBench(b)
	mask.PrepareVocab(v)
	for _, g := range []struct{ name, src string }{
		{"loop", `root ::= "{\"a\":" "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? "}"`},
		{"repeat", `root ::= "{\"a\":" "-"? ("0" | [1-9] [0-9]*) ("." [0-9]{1,1001})? "}"`},
	} {
		gr, err := gbnf.Parse(g.src)
		if err != nil {
			b.Fatal(err)
		}
		for _, at := range []struct{ name, prefix string }{
			{"value", `{"a":`}, {"minus", `{"a":-`}, {"fraction", `{"a":-12.`},
		} {
			b.Run(g.name+"/"+at.name, func(b *testing.B) {
				words := make([]uint32, (v.Size()+31)/32)
				for b.Loop() {
					b.StopTimer()
					c, err := mask.CompileWith(gr, v, mask.Options{EagerWork: 1})
					if err != nil {
						b.Fatal(err)
					}
					m := c.NewMatcher()
					if err := m.AcceptBytes([]byte(at.prefix)); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					m.FillMask(words)
				}
			})
		}
	}
}
