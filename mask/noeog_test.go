package mask_test

import (
	"errors"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/mask"
)

// TestNoEOGVocab: the vocabulary that LoadVocab hands over in a
// *NoEOGError (the Llama 3.2 folder without its special-token files)
// compiles, and its matchers still say when the grammar may end, with no
// token allowed after it.
func TestNoEOGVocab(t *testing.T) {
	src := sharedtest.Path(t, "corpus", "vocab", "hf", "llama3.2")
	_, err := mask.LoadVocab(src)
	var ne *mask.NoEOGError
	if !errors.As(err, &ne) {
		t.Fatalf("LoadVocab(%s) = %v, want a *NoEOGError", src, err)
	}
	g, err := gbnf.Parse(`root ::= "{" [a-z]+ "}"`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mask.Compile(g, ne.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	m := c.NewMatcher()
	if err := m.AcceptBytes([]byte("{ab}")); err != nil || !m.CanEnd() {
		t.Fatalf("AcceptBytes: %v, CanEnd %v", err, m.CanEnd())
	}
	bits := make([]uint32, (ne.Vocab.Size()+31)/32)
	m.FillMask(bits)
	for i, w := range bits {
		if w != 0 {
			t.Fatalf("a token is allowed after the end (word %d = %#x)", i, w)
		}
	}
}
