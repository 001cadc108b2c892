package engine

import (
	"testing"

	"github.com/structgen/structgen/mask"
)

// HoldPrecompute makes the grammar cache's precomputations wait until
// the returned function is called (the test's cleanup restores them).
func HoldPrecompute(t *testing.T) (release func()) {
	ch := make(chan struct{})
	old := precomputeGrammar
	precomputeGrammar = func(c *mask.Compiled) error {
		<-ch
		return old(c)
	}
	t.Cleanup(func() { precomputeGrammar = old })
	return func() { close(ch) }
}
