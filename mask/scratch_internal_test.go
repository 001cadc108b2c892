package mask

import (
	"runtime"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/vocab"
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
	if _, ok := big.keepSize(); ok {
		t.Fatalf("a scratch of %d positions is kept", cap(big.g.pos))
	}
	p.Put(big)
	runtime.GC()
	runtime.GC()
	if got := p.Get(); got == big {
		t.Fatal("a scratch too large to keep survived two collections")
	}
	// The slot holds one object; the next goes to the pool, also when it
	// is larger, unless the pool keeps the largest.
	for _, largest := range []bool{false, true} {
		a, b := new(minScratch), new(minScratch)
		mp := &stickyPool[minScratch]{largest: largest}
		mp.Put(a)
		mp.Put(b)
		if got := mp.Get(); got != a {
			t.Fatalf("largest %v: Get = %p, want the kept %p", largest, got, a)
		}
		mp.Put(a)
		c := new(minScratch)
		c.block = make([]int32, 0, 64)
		mp.Put(c)
		mp.Put(b)
		runtime.GC()
		runtime.GC()
		want := a
		if largest {
			want = c
		}
		if got := mp.Get(); got != want {
			t.Fatalf("largest %v: after two collections Get = %p, want %p", largest, got, want)
		}
	}
}

// TestScratchPoolKeepsBuilders checks that a vocabulary's scratch pool
// keeps, across collections, the scratch with the most builders rather
// than the first given back.
func TestScratchPoolKeepsBuilders(t *testing.T) {
	p := &vocabPrep{words: 4, size: 128, pool: stickyPool[scratch]{largest: true}}
	bare := p.getScratch()
	rich := p.getScratch()
	rich.starts(3)
	rich.putBuilder(rich.builder())
	p.putScratch(bare)
	p.putScratch(rich)
	runtime.GC()
	runtime.GC()
	if got := p.getScratch(); got != rich {
		t.Fatalf("after two collections got a scratch with %d builders, want the one with %d", len(got.accs)+len(got.free), 4)
	}
	huge := p.getScratch()
	huge.starts(65)
	if _, ok := huge.keepSize(); ok {
		t.Fatal("a scratch of 65 builders is small enough to keep")
	}
}

// TestLoopBucketsOf checks the per-class computation of a state's loop
// buckets against a test of every byte, for every state and row of a
// grammar with many classes.
func TestLoopBucketsOf(t *testing.T) {
	g, err := gbnf.Parse(`root ::= ( [a-f] | [0-9]+ | "\"" [^"\\]* "\"" | [ \t\n]+ | "é" | [\x00-\x1f] )*`)
	if err != nil {
		t.Fatal(err)
	}
	v := lettersVocab(t, "\"", "0", "12", " ", "\n")
	c, err := Compile(g, v)
	if err != nil {
		t.Fatal(err)
	}
	a := c.a
	if a.nc < 8 {
		t.Fatalf("only %d classes", a.nc)
	}
	for q := range a.states {
		for r := range a.states {
			tr := a.row(int32(r))
			want := uint64(1)<<(vocab.Bucket(255)+1) - 1
			for b := 0; b < 256; b++ {
				if tr.next(int(a.classOf[b])) != int32(q) {
					want &^= 1 << vocab.Bucket(byte(b))
				}
			}
			if got := loopBucketsOf(a, int32(q), tr); got != want {
				t.Fatalf("state %d, row of %d: %x, want %x", q, r, got, want)
			}
		}
	}
}
