package mask

import (
	"bytes"
	"slices"
	"sync"
	"time"
)

// A trie holds the bytes of every normal token of a vocabulary. Node 0 is
// the root (the empty prefix); the other nodes are numbered in preorder,
// and the children of a node are in ascending byte order. The mask
// computation walks it depth-first, so that tokens sharing a prefix share
// the work of matching it.
//
// The Llama-3 vocabulary (128,000 normal tokens, 831 KB of token text)
// gives 274,520 nodes.
type trie struct {
	edgeStart  []int32 // children of node u: edges edgeStart[u] .. edgeStart[u+1]-1
	edgeByte   []byte
	edgeNode   []int32
	tokStart   []int32 // tokens ending at node u: toks[tokStart[u]:tokStart[u+1]]
	toks       []int32
	depth      []uint16
	firstByte  []byte  // per node: the first byte of its prefix
	inByte     []byte  // per node: the last byte of its prefix (the edge from its parent)
	subtreeEnd []int32 // per node: nodes u..subtreeEnd[u]-1 are its subtree (preorder)
	// below is, per node, the byte buckets (bucketOf) of every edge
	// strictly inside its subtree: a walk in a state that loops on all of
	// them accepts the whole subtree without stepping (walker.bulkOK).
	below []uint64
}

// bucketOf maps a byte to one of 44 buckets, for the trie's per-subtree
// byte summaries (trie.below). A bucket is used only when a state treats
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

// bucketMask returns the buckets of the bytes in bs.
func bucketMask(bs *byteBits) uint64 {
	var m uint64
	for b := 0; b < 256; b++ {
		if bs.has(byte(b)) {
			m |= 1 << bucketOf[b]
		}
	}
	return m
}

func (t *trie) numNodes() int { return len(t.depth) }

// children returns the edge range of node u.
func (t *trie) children(u int32) (int32, int32) { return t.edgeStart[u], t.edgeStart[u+1] }

// tokensAt returns the ids of the tokens whose bytes end at node u.
func (t *trie) tokensAt(u int32) []int32 { return t.toks[t.tokStart[u]:t.tokStart[u+1]] }

// tokensBelow returns the ids of the tokens whose bytes end strictly
// inside u's subtree (nodes are in preorder, so they are contiguous).
func (t *trie) tokensBelow(u int32) []int32 {
	return t.toks[t.tokStart[u+1]:t.tokStart[t.subtreeEnd[u]]]
}

// tokensIn returns the ids of the tokens whose bytes end in u's subtree,
// u included.
func (t *trie) tokensIn(u int32) []int32 {
	return t.toks[t.tokStart[u]:t.tokStart[t.subtreeEnd[u]]]
}

func (t *trie) bytes() int {
	return 4*(len(t.edgeStart)+len(t.edgeNode)+len(t.tokStart)+len(t.toks)) + len(t.edgeByte) + 2*len(t.depth) + 8*len(t.below)
}

// buildTrie builds the trie of the normal tokens of v.
func buildTrie(v *Vocab) *trie {
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

	t := &trie{depth: depth, inByte: inByte}
	n := int(numNodes)
	// First bytes and subtree ranges (nodes are in preorder).
	t.firstByte = make([]byte, n)
	t.subtreeEnd = make([]int32, n)
	for u := n - 1; u >= 0; u-- {
		if t.subtreeEnd[u] == 0 {
			t.subtreeEnd[u] = int32(u + 1)
		}
		if u > 0 {
			p := parent[u]
			t.subtreeEnd[p] = max(t.subtreeEnd[p], t.subtreeEnd[u])
		}
	}
	t.below = make([]uint64, n)
	for u := n - 1; u > 0; u-- {
		t.below[parent[u]] |= t.below[u] | 1<<bucketOf[inByte[u]]
	}
	for u := 1; u < n; u++ {
		if parent[u] == 0 {
			t.firstByte[u] = inByte[u]
		} else {
			t.firstByte[u] = t.firstByte[parent[u]]
		}
	}
	// Children: nodes were created in preorder, so each parent's children
	// appear in ascending byte order; bucket them by parent.
	t.edgeStart = make([]int32, n+1)
	for u := 1; u < n; u++ {
		t.edgeStart[parent[u]+1]++
	}
	for u := 0; u < n; u++ {
		t.edgeStart[u+1] += t.edgeStart[u]
	}
	t.edgeByte = make([]byte, n-1)
	t.edgeNode = make([]int32, n-1)
	fill := slices.Clone(t.edgeStart[:n])
	for u := 1; u < n; u++ {
		p := parent[u]
		t.edgeByte[fill[p]] = inByte[u]
		t.edgeNode[fill[p]] = int32(u)
		fill[p]++
	}
	// Tokens per node.
	t.tokStart = make([]int32, n+1)
	for _, u := range tokNode {
		t.tokStart[u+1]++
	}
	for u := 0; u < n; u++ {
		t.tokStart[u+1] += t.tokStart[u]
	}
	t.toks = make([]int32, len(ids))
	fillT := slices.Clone(t.tokStart[:n])
	for i, u := range tokNode {
		t.toks[fillT[u]] = ids[i]
		fillT[u]++
	}
	return t
}

// vocabPrep is what Compile derives from a vocabulary once and shares
// between all grammars compiled against it.
type vocabPrep struct {
	trie     *trie
	words    int           // mask length in uint32 words
	special  []int32       // special, non-EOG tokens (matched only by token references)
	normal   []int32       // normal tokens (for negated token references)
	maxLen   int           // longest normal token in bytes
	size     int           // vocabulary size (token ids)
	duration time.Duration // time spent preparing
	pool     sync.Pool     // *scratch
	sliceMu  sync.Mutex
	slices   map[sliceKey]*slice // see vocabPrep.slice
}

var vocabPreps sync.Map // *Vocab → *vocabPrep (vocabularies are few and long-lived)

var vocabPrepMu sync.Mutex

// prepare returns the prepared form of v, building it on first use.
func prepare(v *Vocab) *vocabPrep {
	if p, ok := vocabPreps.Load(v); ok {
		return p.(*vocabPrep)
	}
	vocabPrepMu.Lock()
	defer vocabPrepMu.Unlock()
	if p, ok := vocabPreps.Load(v); ok {
		return p.(*vocabPrep)
	}
	start := time.Now()
	p := &vocabPrep{
		trie:   buildTrie(v),
		words:  (v.Size() + 31) / 32,
		size:   v.Size(),
		maxLen: v.MaxTokenLen(),
	}
	for id := int32(0); int(id) < v.Size(); id++ {
		switch v.Kind(id) {
		case TokenSpecial:
			if !v.IsEOG(id) {
				p.special = append(p.special, id)
			}
		case TokenNormal:
			p.normal = append(p.normal, id)
		}
	}
	for _, id := range p.normal {
		p.maxLen = max(p.maxLen, len(v.Token(id)))
	}
	// The slice of JSON string bodies, which nearly every JSON Schema
	// grammar has (see slice.go).
	var work int64
	p.slices = map[sliceKey]*slice{jsonString: buildSlice(p, jsonString, &work)}
	p.duration = time.Since(start)
	vocabPreps.Store(v, p)
	return p
}

// PrepareVocab builds the per-vocabulary structures Compile needs (the
// token trie) ahead of time and returns how long that took. Compile does
// it on first use otherwise; benchmarks call it to report the one-off
// vocabulary preparation apart from grammar compilation.
func PrepareVocab(v *Vocab) time.Duration { return prepare(v).duration }
