package mask

import "slices"

// setTable interns sets of positions (sorted int32 lists, each with a
// tag) and gives every distinct (tag, set) an entry number, in order of
// first insertion. The sets are kept end to end in one arena and found
// through an open-addressing table of their hashes, so that the subset
// construction allocates per frame, not per state or per lookup (string
// keys in a map cost an allocation per new set and a copy per lookup).
type setTable struct {
	arena []int32  // the sets, end to end
	start []int32  // entry i's set is arena[start[i]:start[i+1]]
	tag   []uint8  // per entry
	hash  []uint64 // per entry
	val   []int32  // per entry: what the caller stored
	slots []int32  // entry+1, or 0 for an empty slot; len is a power of 2
}

// reset empties t, keeping its memory. It costs the entries, not the
// table: a grammar's many small frames reuse the table of a large one.
func (t *setTable) reset() {
	if len(t.slots) > 0 {
		mask := uint64(len(t.slots) - 1)
		for e, h := range t.hash {
			i := h & mask
			for t.slots[i] != int32(e)+1 {
				i = (i + 1) & mask
			}
			t.slots[i] = 0
		}
	}
	t.arena = t.arena[:0]
	t.start = append(t.start[:0], 0)
	t.tag, t.hash, t.val = t.tag[:0], t.hash[:0], t.val[:0]
}

// hashSet returns the hash of (tag, set).
func hashSet(tag uint8, set []int32) uint64 {
	h := uint64(tag)*0x9e3779b97f4a7c15 ^ uint64(len(set))
	for _, p := range set {
		h = (h ^ uint64(uint32(p))) * 0xff51afd7ed558ccd
		h ^= h >> 32
	}
	return h
}

// find returns the entry of (tag, set) and true, or the slot where it
// would go and false.
func (t *setTable) find(tag uint8, set []int32, h uint64) (int32, bool) {
	if len(t.slots) == 0 {
		return -1, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := t.slots[i] - 1
		if e < 0 {
			return int32(i), false
		}
		if t.hash[e] == h && t.tag[e] == tag && slices.Equal(t.arena[t.start[e]:t.start[e+1]], set) {
			return e, true
		}
	}
}

// lookup returns the value stored with (tag, set), if any, and the hash
// of (tag, set) for insert.
func (t *setTable) lookup(tag uint8, set []int32) (int32, bool, uint64) {
	h := hashSet(tag, set)
	e, ok := t.find(tag, set, h)
	if !ok {
		return 0, false, h
	}
	return t.val[e], true, h
}

// insert adds (tag, set), which must not be in t, with value v, and
// returns its entry number; h is its hash (from lookup).
func (t *setTable) insert(tag uint8, set []int32, h uint64, v int32) int32 {
	if 2*(len(t.val)+1) > len(t.slots) {
		t.grow()
	}
	slot, _ := t.find(tag, set, h)
	e := int32(len(t.val))
	t.arena = append(t.arena, set...)
	t.start = append(t.start, int32(len(t.arena)))
	t.tag = append(t.tag, tag)
	t.hash = append(t.hash, h)
	t.val = append(t.val, v)
	t.slots[slot] = e + 1
	return e
}

// set returns the set of entry e (valid until the next insert).
func (t *setTable) set(e int32) []int32 { return t.arena[t.start[e]:t.start[e+1]] }

func (t *setTable) grow() {
	n := max(2*len(t.slots), 64)
	t.slots = make([]int32, n)
	mask := uint64(n - 1)
	for e, h := range t.hash {
		i := h & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = int32(e) + 1
	}
}
