package mask

import (
	"sync"
	"sync/atomic"
)

// scratch holds the vocabulary-sized buffers of the level computations:
// token-set builders and per-token marks, a few hundred kilobytes to a few
// megabytes for a 128k vocabulary. Every compilation and every first
// visit borrows one from the prepared vocabulary's pool (vocabPrep.get)
// instead of allocating and clearing its own, so that a first visit
// costs its walk, not a megabyte of memory traffic. Builders and marks
// are empty whenever a scratch is in the pool.
type scratch struct {
	words   int
	size    int           // vocabulary size
	acc     *setBuilder   // the walker's
	accs    []*setBuilder // per start of a parallel walk
	free    []*setBuilder // for compositions (nested: see builder)
	accMask []uint64      // per token: the starts that accept it (parallel walks of 2+ starts)
	cost    []uint16      // per token: fewest iterations (symbolic walks); valid for acc.ids only
	tmp     []uint32      // one mask
}

// builder returns an empty set builder; give it back with putBuilder,
// empty (build resets it).
func (s *scratch) builder() *setBuilder {
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free = s.free[:n-1]
		return b
	}
	return newSetBuilder(s.words)
}

func (s *scratch) putBuilder(b *setBuilder) {
	b.reset()
	s.free = append(s.free, b)
}

// starts returns n empty builders for the starts of a parallel walk.
func (s *scratch) starts(n int) []*setBuilder {
	for len(s.accs) < n {
		s.accs = append(s.accs, newSetBuilder(s.words))
	}
	return s.accs[:n]
}

// marks returns the per-token start masks (all zero).
func (s *scratch) marks() []uint64 {
	if s.accMask == nil {
		s.accMask = make([]uint64, s.size)
	}
	return s.accMask
}

// costs returns the per-token cost array.
func (s *scratch) costs() []uint16 {
	if s.cost == nil {
		s.cost = make([]uint16, s.size)
	}
	return s.cost
}

// mask returns a cleared one-mask buffer.
func (s *scratch) mask() []uint32 {
	if s.tmp == nil {
		s.tmp = make([]uint32, s.words)
	} else {
		clear(s.tmp)
	}
	return s.tmp
}

// getScratch borrows a scratch of the vocabulary's pool.
func (p *vocabPrep) getScratch() *scratch {
	if s := p.pool.Get(); s != nil {
		return s
	}
	return &scratch{words: p.words, size: p.size, acc: newSetBuilder(p.words)}
}

// keepSize returns the memory s holds and whether it is small enough for
// the pool's kept slot: its size is the vocabulary's, times the starts
// of the parallel walks it served.
func (s *scratch) keepSize() (int, bool) {
	n := 4*s.words*(1+len(s.accs)+len(s.free)) + 8*len(s.accMask) + 2*len(s.cost) + 4*len(s.tmp)
	return n, len(s.accs)+len(s.free) <= 64
}

// putScratch gives s back. Its builders are reset here (a computation cut
// short by an error may leave ids behind).
func (p *vocabPrep) putScratch(s *scratch) {
	s.acc.reset()
	for _, b := range s.accs {
		b.reset()
	}
	p.pool.Put(s)
}

// stickyPool is a sync.Pool of *T with one slot more that garbage
// collections do not empty. A collection empties a sync.Pool (what it
// held survives one more in its victim cache), and a compile between
// two collections found the construction's and the minimization's
// buffers gone and allocated them again: in a benchmark of the band of
// JSONSchemaBench grammars around the compile p95, whose process
// collects every few compiles, 6% of the automaton's time. The slot
// keeps the first object given back while it is empty, or with largest
// set the largest given back, if its keepSize says it is small enough
// (keepBytes: a compile of a huge grammar does not pin its buffers for
// good); the others go to the pool. (A vocabulary's pool keeps the
// largest: keeping the first, its slot held a scratch without builders
// that a matcher's deep walk had used, while the eager phase's, with its
// builders, went to the pool and a collection, and a first use after it
// allocated and cleared the 16 KB builders again, 13% of the first-use
// samples of a profile of Handwritten/allOfPProp1. The construction's
// and the minimization's keep the first, as before: keeping the largest
// there, a construction scratch of up to 4 MB whose follow lists are
// pointers every collection scans, showed no gain in corpus runs.)
type stickyPool[T any] struct {
	largest bool // keep the largest object, not the first
	kept    atomic.Pointer[T]
	// keptSize is the kept object's size, read when it was given back
	// (the object itself may be in use by then). It is stored after the
	// object: a Put in between may compare with the size of the one
	// before, which only makes the slot's choice less exact.
	keptSize atomic.Int64
	pool     sync.Pool
}

// keepBytes bounds the buffers a stickyPool keeps past collections:
// enough for the construction of grammars of tens of thousands of
// states (the JSONSchemaBench grammars at the compile p95 have 2,000 to
// 9,000), a few megabytes at most per pool.
const keepBytes = 4 << 20

// keeper is what a stickyPool's objects implement: their size (the
// memory they hold) and whether they are small enough to keep.
type keeper interface{ keepSize() (int, bool) }

// Get returns the kept object, or one of the pool's, or nil.
func (p *stickyPool[T]) Get() *T {
	if s := p.kept.Swap(nil); s != nil {
		return s
	}
	if s, ok := p.pool.Get().(*T); ok {
		return s
	}
	return nil
}

// Put gives s back: to the slot if s is small enough and the slot is
// empty, or with largest, s larger than the object there (which then
// goes to the pool); else to the pool.
func (p *stickyPool[T]) Put(s *T) {
	k, ok := any(s).(keeper)
	if !ok {
		p.pool.Put(s)
		return
	}
	n, small := k.keepSize()
	if !small {
		p.pool.Put(s)
		return
	}
	for {
		old := p.kept.Load()
		if old != nil && (!p.largest || p.keptSize.Load() >= int64(n)) {
			p.pool.Put(s)
			return
		}
		if p.kept.CompareAndSwap(old, s) {
			p.keptSize.Store(int64(n))
			if old != nil {
				p.pool.Put(old)
			}
			return
		}
	}
}
