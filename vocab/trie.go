package vocab

import (
	"bytes"
	"slices"
	"unsafe"
)

// A Trie holds the bytes of every normal token of a vocabulary. Node 0 is
// the root (the empty prefix); the other nodes are numbered in preorder,
// and the children of a node are in ascending byte order. Package mask
// walks it depth-first, so that tokens sharing a prefix share the work of
// matching it. A Trie is immutable and shared: its slices must not be
// modified.
//
// The Llama-3 vocabulary (128,000 normal tokens, 831 KB of token text)
// gives 274,520 nodes.
type Trie struct {
	// Nodes holds the nodes, then one more entry whose EdgeStart and
	// TokStart close the last node's ranges (its other fields are zero).
	Nodes    []Node
	EdgeByte []byte  // per edge: its byte; a node's edges are consecutive
	EdgeNode []int32 // per edge: the child it leads to
	Toks     []int32 // the tokens of each node, consecutive (Node.TokStart)
}

// A Node is one node of a Trie. Its fields are together, not in a slice
// per field: a walk reads most of them at every node it reaches, and the
// nodes a mask computed on first use starts from are scattered over a
// trie that compiles and collections have evicted from the caches, where
// each field in a slice of its own cost a miss of its own. The level
// below a JSON string's end (a walk from about 190 scattered nodes) took
// 110-127 µs with the caches evicted in that layout, 92-100 µs in this
// one, and 16 µs warm.
type Node struct {
	// Below is the byte buckets (Bucket) of every edge strictly inside
	// the node's subtree: a walk in a state that loops on all of them
	// can take the whole subtree without stepping.
	Below      uint64
	EdgeStart  int32  // the node's children: edges EdgeStart .. the next node's EdgeStart-1
	TokStart   int32  // the tokens ending at the node: Toks[TokStart : the next node's TokStart]
	SubtreeEnd int32  // nodes u .. SubtreeEnd-1 are u's subtree (preorder)
	Depth      uint16 // the length of the node's prefix
	FirstByte  byte   // the first byte of the node's prefix
	InByte     byte   // the last byte of the node's prefix (the edge from its parent)
}

// bucketOf maps a byte to one of 44 buckets, for the trie's per-subtree
// byte summaries (Trie.Below). A bucket is used only when a state treats
// all its bytes alike, so buckets follow the boundaries of the classes
// that grammars loop on: each ASCII punctuation byte alone (quotes,
// backslash, separators), digits, hex letters apart from the other
// letters, control bytes, and the UTF-8 lead and continuation ranges.
var bucketOf = func() (t [256]uint8) {
	k := uint8(0)
	for b := 0; b < 256; b++ {
		switch {
		case b == 0, b == ' ', b == '0', b == 'A', b == 'G', b == 'a', b == 'g',
			b == 0x80, b == 0xC0, b == 0xE0, b == 0xF0:
			if b > 0 {
				k++
			}
		case b > ' ' && b < '0', b > '9' && b < 'A', b > 'Z' && b < 'a', b > 'z' && b < 0x80:
			k++
		case b == '9'+1:
			k++
		}
		t[b] = k
	}
	return t
}()

// Bucket returns the bucket of byte b (see Trie.Below): one of 44, each
// ASCII punctuation byte alone (quotes, backslash, separators), digits,
// hex letters apart from the other letters, control bytes, and the UTF-8
// lead and continuation ranges.
func Bucket(b byte) uint8 { return bucketOf[b] }

// BucketMask returns the buckets of the bytes in set (bit b of word b/64:
// byte b is in the set).
func BucketMask(set *[4]uint64) uint64 {
	var m uint64
	for b := 0; b < 256; b++ {
		if set[b>>6]&(1<<(b&63)) != 0 {
			m |= 1 << bucketOf[b]
		}
	}
	return m
}

// Gather reads, for each node of us, its record, the record after it
// (whose starts close its ranges) and its first edge and token, if any,
// and returns a sum of what it read (for the caller to keep, so that the
// reads are not optimized away). It is a prefetch: a walk from many
// scattered nodes (the cross points below which a deeper level starts)
// reads each node's record only once the walk of the previous node is
// done, so each costs a cache miss in turn; here the reads of all of
// them are independent and overlap. On the slower machine of stop 29,
// the level below 48 cross points (332 work units, Github_hard/o21222)
// took 97 µs at the median of alternated runs without it, 70 µs with it.
func (t *Trie) Gather(us []int32) int64 {
	var s int64
	for _, u := range us {
		s += int64(t.Nodes[u].EdgeStart) + int64(t.Nodes[u+1].TokStart)
	}
	for _, u := range us {
		n, next := &t.Nodes[u], &t.Nodes[u+1]
		if n.EdgeStart < next.EdgeStart {
			s += int64(t.EdgeByte[n.EdgeStart]) + int64(t.EdgeNode[n.EdgeStart])
		}
		if n.TokStart < next.TokStart {
			s += int64(t.Toks[n.TokStart])
		}
	}
	return s
}

// NumNodes returns the number of nodes, the root included.
func (t *Trie) NumNodes() int { return len(t.Nodes) - 1 }

// Children returns the edge range of node u.
func (t *Trie) Children(u int32) (int32, int32) { return t.Nodes[u].EdgeStart, t.Nodes[u+1].EdgeStart }

// TokensAt returns the ids of the tokens whose bytes end at node u.
func (t *Trie) TokensAt(u int32) []int32 { return t.Toks[t.Nodes[u].TokStart:t.Nodes[u+1].TokStart] }

// TokensBelow returns the ids of the tokens whose bytes end strictly
// inside u's subtree (nodes are in preorder, so they are contiguous).
func (t *Trie) TokensBelow(u int32) []int32 {
	return t.Toks[t.Nodes[u+1].TokStart:t.Nodes[t.Nodes[u].SubtreeEnd].TokStart]
}

// TokensIn returns the ids of the tokens whose bytes end in u's subtree,
// u included.
func (t *Trie) TokensIn(u int32) []int32 {
	return t.Toks[t.Nodes[u].TokStart:t.Nodes[t.Nodes[u].SubtreeEnd].TokStart]
}

// Bytes returns the memory the trie holds.
func (t *Trie) Bytes() int {
	return int(unsafe.Sizeof(Node{}))*len(t.Nodes) + 4*(len(t.EdgeNode)+len(t.Toks)) + len(t.EdgeByte)
}

// buildTrie builds the trie of the normal tokens of v.
func buildTrie(v *Vocab) *Trie {
	ids := make([]int32, 0, v.Size())
	for id := int32(0); int(id) < v.Size(); id++ {
		if v.Kind(id) == TokenNormal && len(v.Token(id)) > 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(v.Token(a), v.Token(b)); c != 0 {
			return c
		}
		return int(a - b)
	})

	var (
		parent   = []int32{-1}
		inByte   = []byte{0}
		depth    = []uint16{0}
		tokNode  = make([]int32, 0, len(ids))
		path     = []int32{0} // path[i] = node of the prefix of length i of the previous token
		prev     []byte
		numNodes = int32(1)
	)
	for _, id := range ids {
		tok := v.Token(id)
		lcp := 0
		for lcp < len(prev) && lcp < len(tok) && prev[lcp] == tok[lcp] {
			lcp++
		}
		path = path[:lcp+1]
		for i := lcp; i < len(tok); i++ {
			parent = append(parent, path[i])
			inByte = append(inByte, tok[i])
			depth = append(depth, uint16(i+1))
			path = append(path, numNodes)
			numNodes++
		}
		tokNode = append(tokNode, path[len(tok)])
		prev = tok
	}

	n := int(numNodes)
	t := &Trie{Nodes: make([]Node, n+1)}
	nodes := t.Nodes
	for u := 0; u < n; u++ {
		nodes[u].Depth, nodes[u].InByte = depth[u], inByte[u]
	}
	// Subtree ranges and bucket summaries (nodes are in preorder, so a
	// child comes after its parent).
	for u := n - 1; u >= 0; u-- {
		if nodes[u].SubtreeEnd == 0 {
			nodes[u].SubtreeEnd = int32(u + 1)
		}
		if u > 0 {
			p := &nodes[parent[u]]
			p.SubtreeEnd = max(p.SubtreeEnd, nodes[u].SubtreeEnd)
			p.Below |= nodes[u].Below | 1<<bucketOf[inByte[u]]
		}
	}
	for u := 1; u < n; u++ {
		if parent[u] == 0 {
			nodes[u].FirstByte = inByte[u]
		} else {
			nodes[u].FirstByte = nodes[parent[u]].FirstByte
		}
	}
	// Children: nodes were created in preorder, so each parent's children
	// appear in ascending byte order; bucket them by parent.
	count := make([]int32, n+1)
	for u := 1; u < n; u++ {
		count[parent[u]+1]++
	}
	for u := 0; u < n; u++ {
		count[u+1] += count[u]
	}
	t.EdgeByte = make([]byte, n-1)
	t.EdgeNode = make([]int32, n-1)
	for u := 1; u < n; u++ {
		p := parent[u]
		t.EdgeByte[count[p]] = inByte[u]
		t.EdgeNode[count[p]] = int32(u)
		count[p]++
	}
	// (count[p] is now the end of p's edges, the start of p+1's.)
	nodes[0].EdgeStart = 0
	for u := 0; u < n; u++ {
		nodes[u+1].EdgeStart = count[u]
	}
	// Tokens per node.
	clear(count)
	for _, u := range tokNode {
		count[u+1]++
	}
	for u := 0; u < n; u++ {
		count[u+1] += count[u]
	}
	for u := 0; u <= n; u++ {
		nodes[u].TokStart = count[u]
	}
	t.Toks = make([]int32, len(ids))
	for i, u := range tokNode {
		t.Toks[count[u]] = ids[i]
		count[u]++
	}
	return t
}

// Trie returns the trie of the normal tokens of v, built on the first
// call (about 60 ms for the 128k Llama-3 vocabulary) and shared.
func (v *Vocab) Trie() *Trie {
	v.trieOnce.Do(func() { v.trie = buildTrie(v) })
	return v.trie
}

// FirstByteSet returns the normal tokens whose bytes start with b, as a
// bitset over token ids (bit id&31 of word id>>5, (Size()+31)/32 words),
// or nil if there are none. It is made on the first call for b (one pass
// over the tokens of the root's child b, whose number is added to *work)
// and kept for the life of the vocabulary: at most 256 sets, 16 KB each on
// Llama-3. A mask computation uses them to take from a set the tokens of
// some first bytes at the cost of a pass over the words (125 on Llama-3)
// instead of one per token (tens of thousands for a letter). The set is
// shared: it must not be modified.
func (v *Vocab) FirstByteSet(b byte, work *int64) []uint32 {
	v.firstMu.Lock()
	defer v.firstMu.Unlock()
	if v.firstDone[b] {
		return v.first[b]
	}
	t := v.Trie()
	es, ee := t.Children(0)
	for e := es; e < ee; e++ {
		if t.EdgeByte[e] != b {
			continue
		}
		toks := t.TokensIn(t.EdgeNode[e])
		*work += int64(len(toks))
		set := make([]uint32, (v.Size()+31)/32)
		for _, id := range toks {
			set[id>>5] |= 1 << (uint32(id) & 31)
		}
		v.first[b] = set
		break
	}
	v.firstDone[b] = true
	return v.first[b]
}
