package jsonkeys

import (
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

// CompileGBNF compiles grammar src against v (tests only; exported for
// the external test package).
func CompileGBNF(tb testing.TB, src string, v *mask.Vocab) *mask.Compiled {
	tb.Helper()
	g, err := gbnf.Parse(src)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := mask.Compile(g, v)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// byteVocab is a vocabulary of the 256 single bytes, extra tokens after
// them, and an end-of-generation token last. tb may be nil (it panics
// then).
func byteVocab(tb testing.TB, extra ...string) *mask.Vocab {
	var toks [][]byte
	for b := range 256 {
		toks = append(toks, []byte{byte(b)})
	}
	for _, e := range extra {
		toks = append(toks, []byte(e))
	}
	toks = append(toks, []byte("</s>"))
	v, err := mask.NewVocab(toks, []int32{int32(len(toks) - 1)})
	if err != nil {
		if tb == nil {
			panic(err)
		}
		tb.Fatal(err)
	}
	return v
}
