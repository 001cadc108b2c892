package cpu

// ring is llama.cpp's ring_buffer<llama_token>: a fixed-capacity FIFO of the
// most recent tokens. rat(0) is the newest.
type ring struct {
	data             []int32
	first, pos, size int
}

func (r *ring) init(capacity int) {
	r.data = make([]int32, capacity)
	r.clear()
}

func (r *ring) clear()   { r.first, r.pos, r.size = 0, 0, 0 }
func (r *ring) len() int { return r.size }

func (r *ring) push(v int32) {
	if len(r.data) == 0 {
		return
	}
	if r.size == len(r.data) {
		r.first = (r.first + 1) % len(r.data)
	} else {
		r.size++
	}
	r.data[r.pos] = v
	r.pos = (r.pos + 1) % len(r.data)
}

func (r *ring) front() int32 { return r.data[r.first] }

// rat returns the i-th newest element (0 = the last pushed).
func (r *ring) rat(i int) int32 {
	return r.data[(r.first+r.size-i-1)%len(r.data)]
}

// countMap counts token occurrences in a window (llama.cpp uses an
// unordered_map): open addressing with linear probing and backward-shift
// deletion, sized once so that Accept never allocates. stamp marks slots
// already visited in the current pass (see visit).
type countMap struct {
	keyTable
	counts []int32
	stamps []uint32
	size   int
	gen    uint32
}

const emptyKey = -1

func (m *countMap) init(maxDistinct int) {
	n := m.initKeys(maxDistinct)
	m.counts = make([]int32, n)
	m.stamps = make([]uint32, n)
	m.clear()
}

func (m *countMap) clear() {
	for i := range m.keys {
		m.keys[i] = emptyKey
		m.counts[i] = 0
	}
	m.size = 0
}

func hash32(k int32) int {
	h := uint32(k) * 0x9e3779b1
	return int(h ^ h>>16)
}

// keyTable is the key array of an open-addressing map from tokens with
// linear probing, sized once (at least twice the distinct keys it will
// hold, so probes stay short); countMap and maxMap keep their values in
// arrays beside it.
type keyTable struct {
	keys []int32
	mask int
}

// initKeys sizes the table for maxDistinct keys, all slots empty, and
// returns its size.
func (t *keyTable) initKeys(maxDistinct int) int {
	n := 8
	for n < 2*maxDistinct {
		n <<= 1
	}
	t.keys = make([]int32, n)
	for i := range t.keys {
		t.keys[i] = emptyKey
	}
	t.mask = n - 1
	return n
}

// slot returns k's slot and true, or the empty slot where k would go and
// false.
func (t *keyTable) slot(k int32) (int, bool) {
	i := hash32(k) & t.mask
	for {
		switch t.keys[i] {
		case k:
			return i, true
		case emptyKey:
			return i, false
		}
		i = (i + 1) & t.mask
	}
}

func (m *countMap) get(k int32) int32 {
	if m.size == 0 {
		return 0
	}
	if i, ok := m.slot(k); ok {
		return m.counts[i]
	}
	return 0
}

// add changes k's count by delta, removing it when the count reaches 0.
func (m *countMap) add(k int32, delta int32) {
	i, ok := m.slot(k)
	if !ok {
		if delta <= 0 {
			return
		}
		m.keys[i] = k
		m.counts[i] = delta
		m.stamps[i] = 0
		m.size++
		return
	}
	m.counts[i] += delta
	if m.counts[i] > 0 {
		return
	}
	m.remove(i)
}

// remove deletes slot i, shifting later members of its probe run back.
func (m *countMap) remove(i int) {
	m.size--
	for {
		m.keys[i] = emptyKey
		m.counts[i] = 0
		j := i
		for {
			j = (j + 1) & m.mask
			if m.keys[j] == emptyKey {
				return
			}
			h := hash32(m.keys[j]) & m.mask
			// Move j back to i if its home h is not in (i, j] cyclically.
			if (i < j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
				m.keys[i], m.counts[i], m.stamps[i] = m.keys[j], m.counts[j], m.stamps[j]
				i = j
				break
			}
		}
	}
}

// newPass starts a visiting pass: visit returns each key's count the first
// time it is asked about in the pass and 0 afterwards.
func (m *countMap) newPass() {
	m.gen++
	if m.gen == 0 { // wrapped: clear stale stamps
		for i := range m.stamps {
			m.stamps[i] = 0
		}
		m.gen = 1
	}
}

func (m *countMap) visit(k int32) int32 {
	i, ok := m.slot(k)
	if !ok || m.stamps[i] == m.gen {
		return 0
	}
	m.stamps[i] = m.gen
	return m.counts[i]
}
