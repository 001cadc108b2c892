package jsonkeys

import (
	"bytes"

	"github.com/structgen/structgen/mask"
)

// A Table holds what Filter needs to know about a vocabulary: which
// tokens can close a key, and with which name. Build it once per
// vocabulary (NewTable: 1-2 ms for the 128k-token Llama-3 vocabulary,
// BenchmarkNewTable) and share it: a Table is immutable and safe for
// concurrent use by any number of Guards.
type Table struct {
	v     *mask.Vocab
	words int // mask length in uint32 words

	// atLeast[n] lists the normal tokens with at least n '"' bytes
	// (n = 1..5), ascending. A token needs two quotes to open and close a
	// key, three from inside a string; Filter scans only those.
	atLeast [6][]int32

	// The two places where keys close most: inside a key (no escape
	// pending) and at a key position after a comma.
	inKey, atKey keyIndex

	// byteTok[b] is a normal token whose bytes are the single byte b, or
	// -1. The searches (Check, ShortestCompletion) step the matcher one
	// byte at a time with them.
	byteTok [256]int32
}

// A keyIndex sorts the tokens that close a key when scanned from one kind
// of state. Where the token closes the key with decoded bytes D and has at
// most one quote after that, it closes exactly one key, P+D (P: the key
// so far), and is in heads[D]; Filter then finds it from the object's keys
// that start with P. Tokens with two quotes or more after the close may
// close more keys and are in trial, which Filter scans one by one. Tokens
// that cannot close the key from that kind of state (no closing quote, a
// syntax error before it) are in neither.
type keyIndex struct {
	heads   map[string][]int32
	maxHead int // longest D
	trial   []int32
}

// NewTable indexes vocabulary v. Only normal tokens are considered: special
// tokens (end of generation, token references) add no bytes to the JSON.
func NewTable(v *mask.Vocab) *Table {
	t := &Table{v: v, words: (v.Size() + 31) / 32}
	for i := range t.byteTok {
		t.byteTok[i] = -1
	}
	// Scanners at the two kinds of state. The one inside a key reads raw
	// bytes unchecked: whether a byte of a multi-byte character is valid
	// depends on the bytes before the token, and a token whose P+D is a
	// key the object has is valid where it matters (keys are valid UTF-8).
	var in, at scanner
	in.reset()
	in.raw = true
	at.reset()
	for _, c := range []byte(`{"`) {
		in.step(c)
	}
	for _, c := range []byte(`{"":0,`) {
		at.step(c)
	}
	inMark, atMark := in.mark(), at.mark()
	t.inKey.heads = make(map[string][]int32)
	t.atKey.heads = make(map[string][]int32)
	for id := int32(0); int(id) < v.Size(); id++ {
		if v.Kind(id) != mask.TokenNormal {
			continue
		}
		b := v.Token(id)
		if len(b) == 1 && t.byteTok[b[0]] < 0 {
			t.byteTok[b[0]] = id
		}
		q := bytes.Count(b, quote)
		for n := 1; n <= min(q, len(t.atLeast)-1); n++ {
			t.atLeast[n] = append(t.atLeast[n], id)
		}
		if q > 0 {
			t.inKey.add(&in, inMark, id, b)
		}
		if q > 1 {
			t.atKey.add(&at, atMark, id, b)
		}
	}
	return t
}

// add scans token id (bytes b) from mark k of s and files it.
func (x *keyIndex) add(s *scanner, k mark, id int32, b []byte) {
	s.undo(k)
	for i, c := range b {
		switch s.step(c) {
		case evError:
			return
		case evKey, evDup:
			if bytes.Count(b[i+1:], quote) >= 2 {
				x.trial = append(x.trial, id)
				return
			}
			d := string(s.openKey())
			x.heads[d] = append(x.heads[d], id)
			x.maxHead = max(x.maxHead, len(d))
			return
		}
	}
}

var quote = []byte{'"'}

// Vocab returns the vocabulary the table indexes.
func (t *Table) Vocab() *mask.Vocab { return t.v }
