package engine

import (
	"sync"
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

// HoldCompile makes grammar and schema compiles (not tool constraints)
// wait until the returned function is called (the test's cleanup
// restores them).
func HoldCompile(t *testing.T) (release func()) {
	ch := make(chan struct{})
	hold := func() { <-ch }
	buildHook.Store(&hold)
	t.Cleanup(func() { buildHook.Store(nil) })
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// NoCompileGrace makes every generation with a compile overlap it with
// the prompt, however short (compileGrace 0), until the test ends.
func NoCompileGrace(t *testing.T) {
	old := compileGrace
	compileGrace = 0
	t.Cleanup(func() { compileGrace = old })
}

// OnEmptyBatch calls f each time the scheduler's batch comes out empty
// (its runs wait for their grammars' precomputation), then waits until
// those precomputations have ended, before the scheduler looks for one
// to wait for: the moment a precomputation ends between the two.
// AfterAdmit calls f(number of running groups) after each of the
// scheduler's admissions, on its loop, until the test ends.
func AfterAdmit(t *testing.T, f func(groups int)) {
	h := func(s *scheduler) { f(len(s.groups)) }
	afterAdmitHook.Store(&h)
	t.Cleanup(func() { afterAdmitHook.Store(nil) })
}

func OnEmptyBatch(t *testing.T, f func()) {
	emptyBatchHook = func(s *scheduler) {
		f()
		for _, g := range s.groups {
			for _, r := range g.runs {
				switch {
				case r.fut != nil:
					<-r.fut.ready
					if r.fut.con != nil {
						<-r.fut.con.compiled.Precomputed()
					}
				case r.con != nil:
					<-r.con.compiled.Precomputed()
				}
			}
		}
	}
	t.Cleanup(func() { emptyBatchHook = nil })
}
