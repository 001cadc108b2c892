package mask

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
	if s, ok := p.pool.Get().(*scratch); ok {
		return s
	}
	return &scratch{words: p.words, size: p.size, acc: newSetBuilder(p.words)}
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
