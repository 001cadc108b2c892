package mask

import (
	"runtime"
	"testing"
)

// TestStickyPool checks that a stickyPool keeps one small object across
// garbage collections, and no object too large to keep.
func TestStickyPool(t *testing.T) {
	var p stickyPool[frameScratch]
	if p.Get() != nil {
		t.Fatal("Get on an empty pool returned an object")
	}
	small := new(frameScratch)
	small.g.pos = make([]gpos, 0, 1024)
	p.Put(small)
	runtime.GC()
	runtime.GC()
	if got := p.Get(); got != small {
		t.Fatalf("after two collections Get = %p, want the kept %p", got, small)
	}
	big := new(frameScratch)
	big.g.pos = make([]gpos, 0, keepBytes)
	if big.keep() {
		t.Fatalf("a scratch of %d positions is kept", cap(big.g.pos))
	}
	p.Put(big)
	runtime.GC()
	runtime.GC()
	if got := p.Get(); got == big {
		t.Fatal("a scratch too large to keep survived two collections")
	}
	// The slot holds one object; the next goes to the pool.
	a, b := new(minScratch), new(minScratch)
	var mp stickyPool[minScratch]
	mp.Put(a)
	mp.Put(b)
	if got := mp.Get(); got != a {
		t.Fatalf("Get = %p, want the kept %p", got, a)
	}
}
