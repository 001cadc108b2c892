package vocab

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
)

// GreedyTokenize returns a tokenization of b into normal tokens: a valid
// one (the tokens' bytes concatenate to b), not the canonical one a
// tokenizer would produce. At each offset it takes the longest normal
// token that matches there and still lets the rest of b be covered, so it
// finds a tokenization whenever one exists. Special and unused tokens are
// never used.
//
// Byte-level BPE vocabularies and SentencePiece vocabularies with byte
// fallback cover every byte string; a WordPiece vocabulary may not (no
// token for some characters). If no tokenization exists, the error gives
// the farthest offset a tokenization of a prefix of b reaches.
//
// The first call builds a sorted index of the normal tokens (tens of
// milliseconds for 128k tokens); later calls cost O(len(b) · L · log V)
// for matches of up to L bytes. Safe for concurrent use.
func (v *Vocab) GreedyTokenize(b []byte) ([]int32, error) {
	if len(b) == 0 {
		return []int32{}, nil
	}
	v.sortOnce.Do(v.buildSorted)

	// best[i] is the token chosen at offset i (the longest one after
	// which b[i+len:] can still be covered), or -1 if b[i:] cannot be
	// covered. Computed from the end.
	n := len(b)
	best := make([]int32, n+1)
	best[n] = 0 // sentinel: the empty suffix is covered
	for i := n - 1; i >= 0; i-- {
		best[i] = -1
		v.prefixMatches(b[i:], func(id int32, l int) {
			if i+l == n || best[i+l] >= 0 {
				best[i] = id // matches come shortest first: keep the last
			}
		})
	}
	if best[0] < 0 {
		return nil, v.uncoverable(b)
	}
	var out []int32
	for i := 0; i < n; {
		id := best[i]
		out = append(out, id)
		i += int(v.offs[id+1] - v.offs[id])
	}
	return out, nil
}

// uncoverable builds the error for a b that has no tokenization: it finds
// the farthest offset that some tokenization of a prefix of b reaches.
func (v *Vocab) uncoverable(b []byte) error {
	n := len(b)
	reach := make([]bool, n+1)
	reach[0] = true
	far := 0
	for i := 0; i < n; i++ {
		if !reach[i] {
			continue
		}
		far = i
		v.prefixMatches(b[i:], func(_ int32, l int) { reach[i+l] = true })
	}
	if reach[n] { // cannot happen: best[0] would have been found
		far = n
	}
	return fmt.Errorf("mask: no tokenization of %d bytes into normal tokens: none reaches past offset %d (next byte %#02x)", n, far, b[far])
}

// prefixMatches calls f for every normal token that is a prefix of b,
// shortest first (and, among equal bytes, lowest id first).
func (v *Vocab) prefixMatches(b []byte, f func(id int32, l int)) {
	lo, hi := 0, len(v.sorted)
	for k := 0; lo < hi; k++ {
		// All tokens in sorted[lo:hi] start with b[:k]; a token equal to
		// b[:k] sorts before its extensions.
		for lo < hi && v.tokenLen(v.sorted[lo]) == k {
			f(v.sorted[lo], k)
			lo++
		}
		if k == len(b) || lo == hi {
			return
		}
		c := b[k]
		// Narrow to tokens whose byte k is c; byte k is non-decreasing
		// over sorted[lo:hi] because they share the prefix b[:k].
		lo, hi = v.byteBound(lo, hi, k, c, false), v.byteBound(lo, hi, k, c, true)
	}
}

// byteBound returns the first i in [lo, hi) whose token has byte k
// greater than c (after) or not less than c (!after), or hi if none.
func (v *Vocab) byteBound(lo, hi, k int, c byte, after bool) int {
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		x := v.arena[int(v.offs[v.sorted[m]])+k]
		if x < c || (after && x == c) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (v *Vocab) tokenLen(id int32) int { return int(v.offs[id+1] - v.offs[id]) }

// buildSorted fills v.sorted: the normal token ids ordered by bytes, ties
// by id.
func (v *Vocab) buildSorted() {
	ids := make([]int32, 0, len(v.kinds))
	for i, k := range v.kinds {
		if k == TokenNormal {
			ids = append(ids, int32(i))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(v.Token(a), v.Token(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	v.sorted = ids
}
