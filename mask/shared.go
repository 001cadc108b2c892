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
// walk (Github_ultra/o42127 after o39230, both with a uri: 18,219 units
// of first-use work → 7,044). The eager phase does not use them: its
// work, and so which states it precomputes, must not depend on what was
// compiled before.

// maxSharedBytes bounds the memory the shared level-1 sets of one
// vocabulary hold: a set is at most a bitset of the vocabulary (16 KB for
// Llama-3), so this keeps at least 4,000 states, more than the frames that
// recur across the JSONSchemaBench grammars need (those that do not
// recur gain nothing from it). Once it is reached, new sets are not
// shared.
const maxSharedBytes = 64 << 20

// maxSharedFrameStates bounds the frames whose states are shared (their
// states and their callees'): the key is their whole automata, made on
// the frame's first lazy computation, and a frame of thousands of states
// (a key pattern's DFA) is specific to its grammar.
const maxSharedFrameStates = 1024

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

// shared returns the level 1 shared under key, or nil.
func (p *vocabPrep) shared(key string) *sharedLevel1 {
	p.sharedMu.Lock()
	defer p.sharedMu.Unlock()
	return p.sharedSets[key]
}

// share records l, the level 1 of a plain state, under key, while the
// memory bound allows.
func (p *vocabPrep) share(key string, l *level1) {
	size := len(key) + l.full.bytes() + 4*len(l.plain.cross)
	p.sharedMu.Lock()
	defer p.sharedMu.Unlock()
	if p.sharedSets[key] != nil || p.sharedBytes+size > maxSharedBytes {
		return
	}
	if p.sharedSets == nil {
		p.sharedSets = map[string]*sharedLevel1{}
	}
	p.sharedSets[key] = &sharedLevel1{full: l.full, cross: l.plain.cross, slice: l.slice}
	p.sharedBytes += size
}

// sharedKey returns the key under which plain state q's level 1 is shared
// between grammars, or "" if it is not shared (see frameKey). The
// frame's part is made once per compilation (c.frameKeys, guarded by
// lazyMu).
func (c *Compiled) sharedKey(q int32) string {
	a := c.a
	f := a.states[q].frame
	if c.frameKeys == nil {
		c.frameKeys = map[int32]string{}
	}
	fk, ok := c.frameKeys[f]
	if !ok {
		fk = c.frameKey(f)
		c.frameKeys[f] = fk
	}
	if fk == "" {
		return ""
	}
	return string(binary.AppendUvarint([]byte(fk), uint64(q-a.frames[f].first_)))
}

// frameKey encodes frame f's automaton, and those of the frames it calls
// (numbered in the order first called), independently of the grammar
// around them: each frame's flags, bounds, start and the bytes that may
// follow it (f's cross point filter too), and per state its flags, its
// transitions as runs of bytes with the same target (the grammar's byte
// classes differ from grammar to grammar) and its calls. "" if one of
// them matches token references, f is a repetition frame, or they have
// more than maxSharedFrameStates states together.
func (c *Compiled) frameKey(f int32) string {
	a := c.a
	if a.frames[f].repeat {
		return ""
	}
	if c.classOrder == nil {
		c.classOrder = make([]uint8, a.nc)
		for i := range c.classOrder {
			c.classOrder[i] = uint8(i)
		}
		slices.SortFunc(c.classOrder, func(x, y uint8) int { return int(a.classLo[x]) - int(a.classLo[y]) })
	}
	local := map[int32]int{f: 0} // frame → its number in the key
	order := []int32{f}
	states := 0
	var b, runs []byte
	for i := 0; i < len(order); i++ {
		fr := &a.frames[order[i]]
		if states += int(fr.last_ - fr.first_); states > maxSharedFrameStates {
			return ""
		}
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
	p.sharedSets, p.sharedBytes = nil, 0
	p.sharedMu.Unlock()
}
