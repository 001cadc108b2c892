package mask

import "github.com/structgen/structgen/vocab"

// Walks below a cross point from a slice below its node.
//
// The level below cross points walks each cross point's subtree from the
// state the frame below resumes in. Where that state enters a loop over a
// wide class on every character of it (the words after a space in a
// word-limited string: `([^ "\\]+ " "+){0,99}[^ "\\]+`), the walk below a
// node with a large subtree costs a pass over most of it: below Llama-3's
// node " ", 126,000 nodes and 58,000 tokens (Github_hard/o21072–6, a
// dozen such strings: 93,881 units, 1.1–2.2 ms, in one first use in the
// middle of a string, 460,000–650,000 units of first uses in three
// random generations). The vocabulary's slice of the class below the
// node (vocab.SliceBelow) holds the tokens inside the loop after the
// node's bytes and the nodes where they leave it, made once per
// vocabulary, class and node: the walk is then a copy of its bitset, the
// node's children that leave the class at once, and the walks of the
// slice's exits (below " ", 357 of them: o21073's whole first-use work
// in three generations went from 458,000 to 106,000 units).

// minBelowNodes is the smallest subtree (in trie nodes) whose walk is
// taken from a slice below its node. Smaller subtrees are walked: a
// slice keeps a bitset of the vocabulary (16 KB on Llama-3), and the
// vocabulary keeps at most vocab.MaxBelowSlices of them. On Llama-3, 12
// of the trie's 274,521 nodes have subtrees this large, 7 of depth 1
// (the space's the largest) and 5 of depth 2. (A variable for tests.)
var minBelowNodes int32 = 4096

// belowUse is how walks from a plain state take a slice below a node: the
// state steps along chain (itself first) into the loop state d on every
// character of the class cl (chain is [d] when the state is the loop).
type belowUse struct {
	cl    vocab.Class
	chain []int32
	d     int32
}

// belowFor returns how walks from state q can use slices below nodes
// (nil if they cannot), memoized. Deeper levels are walked by matchers
// concurrently, so it takes c.mu and none of the memos of the level-1
// computations (sliceFor's, mainSucc's, utf8Into's).
func (c *Compiled) belowFor(q int32) *belowUse {
	c.mu.Lock()
	bu, ok := c.belowOf[q]
	c.mu.Unlock()
	if ok {
		return bu
	}
	bu = c.findBelow(q)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.belowOf == nil {
		c.belowOf = map[int32]*belowUse{}
	}
	c.belowOf[q] = bu
	return bu
}

// findBelow is belowFor without its memo: the conditions of findSlice
// (loopClass) for a plain state with a chain of at most two states, and
// neither with calls (a walk below a node starts with the state alone).
func (c *Compiled) findBelow(q int32) *belowUse {
	a := c.a
	st := &a.states[q]
	if noSlices || a.frames[st.frame].repeat || len(st.toks) != 0 || len(st.calls) != 0 {
		return nil
	}
	d := a.mainSucc(q)
	if d < 0 {
		return nil
	}
	chain := []int32{q}
	if d != q {
		sd := &a.states[d]
		if a.mainSucc(d) != d || sd.frame != st.frame || len(sd.toks) != 0 || len(sd.calls) != 0 {
			return nil
		}
		chain = append(chain, d)
	}
	k, ok := c.loopClass(chain, d, d, a.canPopState(d), a.utf8Into)
	if !ok {
		return nil
	}
	return &belowUse{cl: k, chain: chain, d: d}
}

// belowSlice walks the subtree of cross point u (not the root) from the
// plain configuration base through the slice below u, if base's state
// can use one (belowFor) and the subtree is large; it reports whether it
// did. It does what visit(u) does at the start of a walk: u's cross
// points, the children whose byte leaves the class (stepped in full, as
// visit steps them), and in place of the others the slice's tokens and
// the walks of its exits. The slice's work goes to w.sliceWork.
func (w *walker) belowSlice(u int32, base node) bool {
	t := w.t
	if w.symbolic || base.cnt != 0 || t.Nodes[u].SubtreeEnd-u < minBelowNodes {
		return false
	}
	bu := w.c.belowFor(base.state)
	if bu == nil {
		return false
	}
	var work int64
	sl := w.c.v.SliceBelow(bu.cl, u, &work)
	w.sliceWork += work
	if sl == nil {
		return false
	}
	w.c.belowWalks.Add(1)
	w.work++
	w.nodes++
	es, ee := t.Children(u)
	if w.crossCheck(u, es, ee) {
		w.crossAt(u, w.buf[:1])
	}
	a := w.a
	for e := es; e < ee; e++ {
		b, x := t.EdgeByte[e], t.EdgeNode[e]
		if sl.RootExit[b] != x {
			continue // inside the class (the slice's), or dead
		}
		next := w.st.stepAll(w.buf[:1], int(a.classOf[b]))
		if len(next) > MaxConfig {
			w.st.overflow = true
			next = next[:0]
		}
		if len(next) == 0 {
			continue
		}
		w.buf = append(w.buf[:1], next...)
		w.visit(x, 1, len(w.buf), 1, false)
	}
	w.addSet(w.acc, w.c.prep.sliceAdded(sl))
	w.sliceExits(sliceUse{sl: sl, d: bu.d, chain: bu.chain}, nil, exitsAll)
	return true
}

// takeSliceWork returns the work of the slices below nodes that w made
// since the last call (see belowSlice).
func (w *walker) takeSliceWork() int64 {
	x := w.sliceWork
	w.sliceWork = 0
	return x
}
