package jsonkeys

import (
	"bytes"

	"github.com/structgen/structgen/mask"
)

// A Table holds what Filter needs to know about a vocabulary: which
// tokens can close a string, grouped by how. Build it once per vocabulary
// (NewTable: about 10 ms for the 128k-token Llama-3 vocabulary) and share
// it: a Table is immutable and safe for concurrent use by any number of
// Guards.
type Table struct {
	v     *mask.Vocab
	words int // mask length in uint32 words

	// atLeast[n] lists the normal tokens with at least n '"' bytes
	// (n = 1..5), ascending. A token must have two quotes to open and
	// close a key, three from inside a string; Filter tries only those.
	atLeast [6][]int32

	// Inside a key, a "simple" token — no '\' and no control byte before
	// its first '"', at most two '"' in all — closes the key at its first
	// quote with exactly the bytes before it (its head), and closes no
	// other key. heads indexes the simple tokens by head; keyTrial lists
	// the other tokens that can close a key from inside one (a '\' before
	// the first quote, or three quotes or more), which Filter scans.
	heads    map[string][]int32
	maxHead  int
	keyTrial []int32

	// byteTok[b] is a normal token whose bytes are the single byte b, or
	// -1. The searches (Check, ShortestCompletion) step the matcher one
	// byte at a time with them.
	byteTok [256]int32
}

// NewTable indexes vocabulary v. Only normal tokens are considered: special
// tokens (end of generation, token references) add no bytes to the JSON.
func NewTable(v *mask.Vocab) *Table {
	t := &Table{v: v, words: (v.Size() + 31) / 32, heads: make(map[string][]int32)}
	for i := range t.byteTok {
		t.byteTok[i] = -1
	}
	for id := int32(0); int(id) < v.Size(); id++ {
		if v.Kind(id) != mask.TokenNormal {
			continue
		}
		b := v.Token(id)
		if len(b) == 1 && t.byteTok[b[0]] < 0 {
			t.byteTok[b[0]] = id
		}
		q := bytes.Count(b, quote)
		if q == 0 {
			continue
		}
		for n := 1; n <= min(q, len(t.atLeast)-1); n++ {
			t.atLeast[n] = append(t.atLeast[n], id)
		}
		// How does the token behave inside a plain key?
		q1 := bytes.IndexByte(b, '"')
		head := b[:q1]
		switch {
		case hasControl(head) && bytes.IndexByte(head, '\\') < 0:
			// A raw control byte is a syntax error before the quote.
		case bytes.IndexByte(head, '\\') >= 0, q >= 3:
			t.keyTrial = append(t.keyTrial, id)
		default:
			t.heads[string(head)] = append(t.heads[string(head)], id)
			t.maxHead = max(t.maxHead, len(head))
		}
	}
	return t
}

var quote = []byte{'"'}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// Vocab returns the vocabulary the table indexes.
func (t *Table) Vocab() *mask.Vocab { return t.v }
