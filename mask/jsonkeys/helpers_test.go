package jsonkeys

import (
	"testing"

	"github.com/structgen/structgen/mask"
)

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
