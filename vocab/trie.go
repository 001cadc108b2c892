package vocab

import (
	"bytes"
	"slices"
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
	EdgeStart  []int32 // children of node u: edges EdgeStart[u] .. EdgeStart[u+1]-1
	EdgeByte   []byte
	EdgeNode   []int32
	TokStart   []int32 // tokens ending at node u: Toks[TokStart[u]:TokStart[u+1]]
	Toks       []int32
	Depth      []uint16
	FirstByte  []byte  // per node: the first byte of its prefix
	InByte     []byte  // per node: the last byte of its prefix (the edge from its parent)
	SubtreeEnd []int32 // per node: nodes u..SubtreeEnd[u]-1 are its subtree (preorder)
	// Below is, per node, the byte buckets (Bucket) of every edge
	// strictly inside its subtree: a walk in a state that loops on all of
	// them can take the whole subtree without stepping.
	Below []uint64
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

// NumNodes returns the number of nodes, the root included.
func (t *Trie) NumNodes() int { return len(t.Depth) }

// Children returns the edge range of node u.
func (t *Trie) Children(u int32) (int32, int32) { return t.EdgeStart[u], t.EdgeStart[u+1] }

// TokensAt returns the ids of the tokens whose bytes end at node u.
func (t *Trie) TokensAt(u int32) []int32 { return t.Toks[t.TokStart[u]:t.TokStart[u+1]] }

// TokensBelow returns the ids of the tokens whose bytes end strictly
// inside u's subtree (nodes are in preorder, so they are contiguous).
func (t *Trie) TokensBelow(u int32) []int32 {
	return t.Toks[t.TokStart[u+1]:t.TokStart[t.SubtreeEnd[u]]]
}

// TokensIn returns the ids of the tokens whose bytes end in u's subtree,
// u included.
func (t *Trie) TokensIn(u int32) []int32 {
	return t.Toks[t.TokStart[u]:t.TokStart[t.SubtreeEnd[u]]]
}

// Bytes returns the memory the trie holds.
func (t *Trie) Bytes() int {
	return 4*(len(t.EdgeStart)+len(t.EdgeNode)+len(t.TokStart)+len(t.Toks)) + len(t.EdgeByte) + 2*len(t.Depth) + 8*len(t.Below)
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

	t := &Trie{Depth: depth, InByte: inByte}
	n := int(numNodes)
	// First bytes and subtree ranges (nodes are in preorder).
	t.FirstByte = make([]byte, n)
	t.SubtreeEnd = make([]int32, n)
	for u := n - 1; u >= 0; u-- {
		if t.SubtreeEnd[u] == 0 {
			t.SubtreeEnd[u] = int32(u + 1)
		}
		if u > 0 {
			p := parent[u]
			t.SubtreeEnd[p] = max(t.SubtreeEnd[p], t.SubtreeEnd[u])
		}
	}
	t.Below = make([]uint64, n)
	for u := n - 1; u > 0; u-- {
		t.Below[parent[u]] |= t.Below[u] | 1<<bucketOf[inByte[u]]
	}
	for u := 1; u < n; u++ {
		if parent[u] == 0 {
			t.FirstByte[u] = inByte[u]
		} else {
			t.FirstByte[u] = t.FirstByte[parent[u]]
		}
	}
	// Children: nodes were created in preorder, so each parent's children
	// appear in ascending byte order; bucket them by parent.
	t.EdgeStart = make([]int32, n+1)
	for u := 1; u < n; u++ {
		t.EdgeStart[parent[u]+1]++
	}
	for u := 0; u < n; u++ {
		t.EdgeStart[u+1] += t.EdgeStart[u]
	}
	t.EdgeByte = make([]byte, n-1)
	t.EdgeNode = make([]int32, n-1)
	fill := slices.Clone(t.EdgeStart[:n])
	for u := 1; u < n; u++ {
		p := parent[u]
		t.EdgeByte[fill[p]] = inByte[u]
		t.EdgeNode[fill[p]] = int32(u)
		fill[p]++
	}
	// Tokens per node.
	t.TokStart = make([]int32, n+1)
	for _, u := range tokNode {
		t.TokStart[u+1]++
	}
	for u := 0; u < n; u++ {
		t.TokStart[u+1] += t.TokStart[u]
	}
	t.Toks = make([]int32, len(ids))
	fillT := slices.Clone(t.TokStart[:n])
	for i, u := range tokNode {
		t.Toks[fillT[u]] = ids[i]
		fillT[u]++
	}
	return t
}

// Trie returns the trie of the normal tokens of v, built on the first
// call (about 60 ms for the 128k Llama-3 vocabulary) and shared.
func (v *Vocab) Trie() *Trie {
	v.trieOnce.Do(func() { v.trie = buildTrie(v) })
	return v.trie
}
