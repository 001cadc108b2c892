package mask

import (
	"encoding/binary"
	"slices"

	"github.com/structgen/structgen/vocab"
)

// Level-1 sets shared between grammars. Much of what a JSON Schema
// grammar leaves to first use is in frames that most such grammars have:
// the string rule's escapes, the formats (uri, date-time, email),
// numbers with bounds. A state's level 1 depends only on its frame's
// automaton, those of the frames it calls (a format's counted parts), and
// the bytes that may follow them (Compiled.crossFollow: where a cross
// point is kept), so a state computed on first use in one grammar serves
// the same state of the same frame in every later grammar compiled
// against the vocabulary: the first visit costs a lookup there, not a
// walk (over the JSONSchemaBench grammars compiled in a row, 103 of them
// do less first-use work in their costliest step: Github_ultra/o6366 to
// o6375 3,481 units → 369, JsonSchemaStore/bundleconfig 2,552 → 380).
// The eager phase does not use them: its work, and so which states it
// precomputes, must not depend on what was compiled before.

// maxSharedBytes bounds the memory the shared level-1 sets of one
// vocabulary hold: a set is at most a bitset of the vocabulary (16 KB for
// Llama-3), so this keeps at least 4,000 states, more than the frames that
// recur across the JSONSchemaBench grammars need (those that do not
// recur gain nothing from it); the frames' keys count too. Once it is
// reached, new sets are not shared.
const maxSharedBytes = 64 << 20

// maxSharedKeyCells bounds the frames whose states are shared: their
// states and their callees', times the grammar's byte classes (the
// transition table's cells that frameKey encodes), at most this many.
// The key is made on the frame's first computation on first use in each
// compilation, at about a nanosecond per cell, so this keeps it under
// about 10 µs: a JSON string rule (20 states, 80–100 classes) is shared,
// a uri format (200 states, 88 classes: 150 µs to encode, more than half
// of its walk) is not, nor a key pattern's DFA of thousands of states,
// which is specific to its grammar anyway.
const maxSharedKeyCells = 8192

// shareLevel1 turns the sharing off for the grammars compiled meanwhile
// (tests: the masks must not change).
var shareLevel1 = true

// A sharedLevel1 is the level 1 of a plain state, as shared between
// grammars; its sets are never modified.
type sharedLevel1 struct {
	full  tokenSet
	cross []int32
	slice *vocab.Slice
}

// A sharedKey names a shared level 1: the frame's key (frameKey),
// interned per vocabulary, and the state's number within the frame.
type sharedKey struct{ frame, state int32 }

// frameID returns the number of frame key fk (frameKey) for this
// vocabulary, giving it one if the memory bound allows; -1 if not.
func (p *vocabPrep) frameID(fk string) int32 {
	p.sharedMu.Lock()
	defer p.sharedMu.Unlock()
	if id, ok := p.frameIDs[fk]; ok {
		return id
	}
	if p.sharedBytes+len(fk) > maxSharedBytes {
		return -1
	}
	if p.frameIDs == nil {
		p.frameIDs = map[string]int32{}
	}
	id := int32(len(p.frameIDs))
	p.frameIDs[fk] = id
	p.sharedBytes += len(fk)
	return id
}

// shared returns the level 1 shared under key, or nil.
func (p *vocabPrep) shared(key sharedKey) *sharedLevel1 {
	p.sharedMu.Lock()
	defer p.sharedMu.Unlock()
	return p.sharedSets[key]
}

// share records l, the level 1 of a plain state, under key, while the
// memory bound allows.
func (p *vocabPrep) share(key sharedKey, l *level1) {
	size := l.full.bytes() + 4*len(l.plain.cross)
	p.sharedMu.Lock()
	defer p.sharedMu.Unlock()
	if p.sharedSets[key] != nil || p.sharedBytes+size > maxSharedBytes {
		return
	}
	if p.sharedSets == nil {
		p.sharedSets = map[sharedKey]*sharedLevel1{}
	}
	p.sharedSets[key] = &sharedLevel1{full: l.full, cross: l.plain.cross, slice: l.slice}
	p.sharedBytes += size
}

// sharedKeyOf returns the key under which plain state q's level 1 is
// shared between grammars; ok is false if it is not shared (see
// frameKey). The frame's part is made once per compilation (c.frameIDs,
// guarded by lazyMu).
func (c *Compiled) sharedKeyOf(q int32) (key sharedKey, ok bool) {
	a := c.a
	f := a.states[q].frame
	if c.frameIDs == nil {
		c.frameIDs = map[int32]int32{}
	}
	id, done := c.frameIDs[f]
	if !done {
		id = -1
		if fk := c.frameKey(f); fk != "" {
			id = c.prep.frameID(fk)
		}
		c.frameIDs[f] = id
	}
	return sharedKey{id, q - a.frames[f].first_}, id >= 0
}

// closureSmall reports whether frame f and the frames it calls, directly
// or not, have at most maxSharedKeyCells cells together: frameKey's
// check before it encodes them (the root's frame calls most of its
// grammar).
func (c *Compiled) closureSmall(f int32) bool {
	a := c.a
	maxStates := maxSharedKeyCells / a.nc
	seen := []int32{f} // (closures that pass are a few frames)
	states := 0
	for i := 0; i < len(seen); i++ {
		fr := &a.frames[seen[i]]
		if states += int(fr.last_ - fr.first_); states > maxStates {
			return false
		}
		for s := fr.first_; s < fr.last_; s++ {
			for _, e := range a.states[s].calls {
				if !slices.Contains(seen, e.callee) {
					seen = append(seen, e.callee)
				}
			}
		}
	}
	return true
}

// frameKey encodes frame f's automaton, and those of the frames it calls
// (numbered in the order first called), independently of the grammar
// around them: each frame's flags, bounds, start and the bytes that may
// follow it (f's cross point filter too), and per state its flags, its
// transitions as runs of bytes with the same target (the grammar's byte
// classes differ from grammar to grammar) and its calls. "" if one of
// them matches token references, f is a repetition frame, or they are
// too large (maxSharedKeyCells).
func (c *Compiled) frameKey(f int32) string {
	a := c.a
	if a.frames[f].repeat || !c.closureSmall(f) {
		return ""
	}
	if c.classOrder == nil {
		// (Classes are byte intervals.)
		c.classOrder = make([]uint8, 0, a.nc)
		for b := range 256 {
			if b == 0 || a.classOf[b] != a.classOf[b-1] {
				c.classOrder = append(c.classOrder, a.classOf[b])
			}
		}
	}
	local := map[int32]int{f: 0} // frame → its number in the key
	order := []int32{f}
	var b, runs []byte
	for i := 0; i < len(order); i++ {
		fr := &a.frames[order[i]]
		flag := byte(0)
		for bit, on := range []bool{fr.root, fr.nullable, fr.repeat} {
			if on {
				flag |= 1 << bit
			}
		}
		b = append(b, flag)
		b = binary.AppendVarint(b, int64(fr.min))
		b = binary.AppendVarint(b, int64(fr.max))
		b = binary.AppendUvarint(b, uint64(fr.start-fr.first_))
		b = binary.AppendUvarint(b, uint64(fr.last_-fr.first_))
		follow := []byteBits{a.follow[order[i]]}
		if i == 0 {
			follow = append(follow, c.crossFollow[f])
		}
		for _, bits := range follow {
			for _, w := range bits {
				b = binary.LittleEndian.AppendUint64(b, w)
			}
		}
		for s := fr.first_; s < fr.last_; s++ {
			st := &a.states[s]
			if len(st.toks) > 0 {
				return ""
			}
			row := a.trans[int(s)*a.nc : int(s+1)*a.nc]
			runs = runs[:0]
			n := 0
			prev := int32(-2)
			for _, cl := range c.classOrder {
				t := row[cl]
				if t >= 0 {
					if t < fr.first_ || t >= fr.last_ {
						return ""
					}
					t -= fr.first_
				}
				if t != prev {
					runs = append(runs, a.classLo[cl])
					runs = binary.AppendVarint(runs, int64(t))
					prev = t
					n++
				}
			}
			b = binary.AppendUvarint(b, uint64(st.flags))
			b = binary.AppendUvarint(b, uint64(n))
			b = append(b, runs...)
			b = binary.AppendUvarint(b, uint64(len(st.calls)))
			for _, e := range st.calls {
				k, ok := local[e.callee]
				if !ok {
					k = len(order)
					local[e.callee] = k
					order = append(order, e.callee)
				}
				if e.ret < fr.first_ || e.ret >= fr.last_ {
					return ""
				}
				b = binary.AppendUvarint(b, uint64(k))
				b = binary.AppendUvarint(b, uint64(e.ret-fr.first_))
			}
		}
	}
	return string(b)
}

// resetShared forgets the level-1 sets shared between the grammars of v
// (tests).
func resetShared(v *Vocab) {
	p := prepare(v)
	p.sharedMu.Lock()
	p.sharedSets, p.frameIDs, p.sharedBytes = nil, nil, 0
	p.sharedMu.Unlock()
}
