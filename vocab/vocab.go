package vocab

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync"
)

// In the vocabulary files, v is always a *Vocab, id a token id (int32) and
// k a TokenKind.

// Limits on a vocabulary. They reject malformed or hostile files before they
// cost memory; real vocabularies are far below them.
const (
	// MaxVocabSize is the largest number of token ids. The largest real
	// vocabularies have 262,144 ids (Gemma 3) and 256,000 (Gemma 2); the
	// corpus tops out at 151,646 (Qwen2). 2^21 leaves 8× headroom while a
	// mask (one bit per id) stays at 256 KiB and ids keep 10 spare bits of
	// an int32 (the lookup index uses one of them as a flag).
	MaxVocabSize = 1 << 21

	// MaxTokenLen is the longest token, in bytes. The longest tokens in
	// the corpus vocabularies are runs of spaces: 512 bytes in GPT-NeoX
	// and MPT, 256 in StarCoder and Refact, 128 in Llama-3, Qwen2, GPT-2
	// and DeepSeek-LLM. The automaton walks a token's bytes (token-trie
	// depth) on mask steps, so a token of megabytes would be a denial of
	// service; 4 KiB is 8× the longest real token.
	MaxTokenLen = 4096
)

// TokenKind says how the automaton may use a token.
type TokenKind uint8

const (
	// TokenNormal tokens stand for their bytes: grammar text can produce
	// them, and they are allowed whenever their bytes keep the output a
	// viable prefix. A normal token is never empty.
	TokenNormal TokenKind = iota

	// TokenSpecial tokens are control tokens (<|eot_id|>, <s>, [CLS],
	// <|im_start|>, <unk>, …). Grammar text never produces them, even if
	// the text equals their name: they are allowed only through token
	// references (<[id]>, <|text|>) and, for end-of-generation tokens,
	// when the grammar can end. Token returns their name.
	TokenSpecial

	// TokenUnused tokens are never allowed: unused or padding slots
	// (<|reserved_…|> slots a file marks unused, [PAD123] fillers,
	// [unused5]) and empty tokens.
	TokenUnused

	numTokenKinds
)

var tokenKindNames = [...]string{"normal", "special", "unused"}

// String returns "normal", "special" or "unused".
func (k TokenKind) String() string {
	if k < numTokenKinds {
		return tokenKindNames[k]
	}
	return fmt.Sprintf("TokenKind(%d)", uint8(k))
}

// Vocab is a tokenizer vocabulary seen from the automaton: token id →
// raw bytes, a kind per token, and the end-of-generation (EOG) ids.
//
// A Vocab is immutable after construction and safe for concurrent use.
// Its accessors (Size, Token, Kind, IsEOG, EOG, MaxTokenLen) are O(1) and
// never allocate; Lookup is one hash probe and never allocates.
// GreedyTokenize builds a sorted index on its first call (tens of
// milliseconds for 128k tokens) and reuses it afterwards.
//
// Token bytes are raw bytes, not decoded strings: a token may hold part
// of a UTF-8 sequence (byte-fallback tokens, byte-level BPE pieces), and
// concatenating the bytes of a token sequence gives exactly the text a
// detokenizer outputs (see LoadVocab for the per-format rules).
type Vocab struct {
	arena []byte      // the bytes of all tokens, back to back
	offs  []uint32    // token id's bytes are arena[offs[id]:offs[id+1]]
	kinds []TokenKind // per token id

	eog     []int32  // end-of-generation ids, ascending
	eogBits []uint64 // bit id set ⇔ id is EOG

	maxLen int // longest normal token, in bytes

	// index is an open-addressing hash table over the bytes of every
	// normal and special token: a slot holds id, id|indexAmbiguous, or
	// indexEmpty. See Lookup.
	index []int32
	seed  maphash.Seed

	sortOnce sync.Once
	sorted   []int32 // normal ids sorted by bytes (then id); see GreedyTokenize

	trieOnce sync.Once
	trie     *Trie // see Trie

	sliceMu    sync.Mutex
	slices     map[sliceKey]*sliceEntry // see Slice
	sliceCount [sliceKinds]int          // of which of each kind (sliceKey.kind)
	sliceClock uint64                   // counts calls of slice (sliceEntry.used)

	firstMu   sync.Mutex
	first     [256][]uint32 // see FirstByteSet
	firstDone [256]bool
}

const (
	indexEmpty     = int32(-1)
	indexAmbiguous = int32(1) << 30 // several tokens of the winning kind share these bytes
)

// NewVocab builds a vocabulary from raw token bytes (tokens[i] is the text
// of token id i) and end-of-generation ids. Every EOG token is
// TokenSpecial, every other empty token TokenUnused, every other token
// TokenNormal. The bytes are copied.
//
// It returns an error if there are no tokens or more than MaxVocabSize, a
// token is longer than MaxTokenLen, or an EOG id is out of range or
// repeated. An empty eog is allowed (such a vocabulary has no way to end
// a generation by token).
func NewVocab(tokens [][]byte, eog []int32) (*Vocab, error) {
	if err := checkSize(len(tokens)); err != nil {
		return nil, err
	}
	kinds := make([]TokenKind, len(tokens))
	for i, t := range tokens {
		if len(t) == 0 {
			kinds[i] = TokenUnused
		}
	}
	for _, id := range eog {
		if id >= 0 && int(id) < len(tokens) {
			kinds[id] = TokenSpecial
		}
	}
	return NewVocabKinds(tokens, kinds, eog)
}

// NewVocabKinds is NewVocab with an explicit kind per token, for loaders
// that know which tokens are control tokens. kinds[i] is the kind of token
// i. Besides NewVocab's checks it requires len(kinds) == len(tokens), a
// known kind for each token, normal tokens to be non-empty, and EOG tokens
// to be TokenSpecial.
func NewVocabKinds(tokens [][]byte, kinds []TokenKind, eog []int32) (*Vocab, error) {
	n := len(tokens)
	if err := checkSize(n); err != nil {
		return nil, err
	}
	if len(kinds) != n {
		return nil, fmt.Errorf("mask: %d token kinds for %d tokens", len(kinds), n)
	}
	total := 0
	for i, t := range tokens {
		if len(t) > MaxTokenLen {
			return nil, fmt.Errorf("mask: token %d is %d bytes long (limit MaxTokenLen = %d)", i, len(t), MaxTokenLen)
		}
		switch k := kinds[i]; {
		case k >= numTokenKinds:
			return nil, fmt.Errorf("mask: token %d has unknown kind %d", i, uint8(k))
		case k == TokenNormal && len(t) == 0:
			return nil, fmt.Errorf("mask: token %d is normal but empty (empty tokens must be TokenUnused)", i)
		}
		total += len(t)
	}

	v := &Vocab{
		arena:   make([]byte, 0, total),
		offs:    make([]uint32, n+1),
		kinds:   append([]TokenKind(nil), kinds...),
		eogBits: make([]uint64, (n+63)/64),
		seed:    maphash.MakeSeed(),
	}
	for i, t := range tokens {
		v.arena = append(v.arena, t...)
		v.offs[i+1] = uint32(len(v.arena))
		if kinds[i] == TokenNormal {
			v.maxLen = max(v.maxLen, len(t))
		}
	}

	seen := make(map[int32]int, len(eog))
	for i, id := range eog {
		if id < 0 || int(id) >= n {
			return nil, fmt.Errorf("mask: eog[%d] = %d is out of range [0, %d)", i, id, n)
		}
		if j, dup := seen[id]; dup {
			return nil, fmt.Errorf("mask: eog[%d] = %d repeats eog[%d]", i, id, j)
		}
		seen[id] = i
		if kinds[id] != TokenSpecial {
			return nil, fmt.Errorf("mask: eog[%d] = %d is a %s token (end-of-generation tokens must be TokenSpecial)", i, id, kinds[id])
		}
		v.eogBits[id/64] |= 1 << (id % 64)
	}
	// Ascending order: EOG() lists ids by the bit set.
	v.eog = make([]int32, 0, len(eog))
	for w, word := range v.eogBits {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			v.eog = append(v.eog, int32(w*64+b))
			word &= word - 1
		}
	}

	v.buildIndex()
	return v, nil
}

func checkSize(n int) error {
	if n == 0 {
		return fmt.Errorf("mask: empty vocabulary")
	}
	if n > MaxVocabSize {
		return fmt.Errorf("mask: %d tokens (limit MaxVocabSize = %d)", n, MaxVocabSize)
	}
	return nil
}

// Size returns the number of token ids, the length of a mask in bits.
func (v *Vocab) Size() int { return len(v.kinds) }

// Token returns the raw bytes of token id: what the token adds to the
// output for a normal token, the token's name for a special one. The
// slice aliases the vocabulary's storage (its capacity is clipped, so
// appending to it copies) and must not be modified. Token returns nil for
// an id out of range.
func (v *Vocab) Token(id int32) []byte {
	if uint32(id) >= uint32(len(v.kinds)) {
		return nil
	}
	a, b := v.offs[id], v.offs[id+1]
	return v.arena[a:b:b]
}

// Kind returns the kind of token id; TokenUnused for an id out of range.
func (v *Vocab) Kind(id int32) TokenKind {
	if uint32(id) >= uint32(len(v.kinds)) {
		return TokenUnused
	}
	return v.kinds[id]
}

// EOG returns the end-of-generation ids in ascending order. The slice is
// shared and must not be modified. It is empty only for a vocabulary built
// with NewVocab(tokens, nil) or taken from a *NoEOGError (LoadVocab never
// returns one): masks then never allow an end token, and only
// Matcher.CanEnd tells when the grammar may end.
func (v *Vocab) EOG() []int32 { return v.eog[:len(v.eog):len(v.eog)] }

// IsEOG reports whether id is an end-of-generation token.
func (v *Vocab) IsEOG(id int32) bool {
	if uint32(id) >= uint32(len(v.kinds)) {
		return false
	}
	return v.eogBits[id/64]&(1<<(id%64)) != 0
}

// MaxTokenLen returns the length in bytes of the longest normal token:
// the most bytes one step of grammar text can consume.
func (v *Vocab) MaxTokenLen() int { return v.maxLen }

// Lookup finds a token by its exact bytes, for <|text|> token references.
// A special token whose name is text wins over normal tokens; otherwise a
// normal token matches only if it is the only normal token with exactly
// these bytes. Unused tokens are never found. If several special tokens
// share the name, Lookup reports false.
func (v *Vocab) Lookup(text string) (int32, bool) {
	if len(text) == 0 || len(v.index) == 0 {
		return 0, false
	}
	mask := uint64(len(v.index) - 1)
	for h := maphash.String(v.seed, text) & mask; ; h = (h + 1) & mask {
		e := v.index[h]
		if e == indexEmpty {
			return 0, false
		}
		id := e &^ indexAmbiguous
		if string(v.Token(id)) == text {
			return id, e&indexAmbiguous == 0
		}
	}
}

// buildIndex fills v.index with every normal and special token.
func (v *Vocab) buildIndex() {
	n := 0
	for id, k := range v.kinds {
		if k != TokenUnused && v.offs[id+1] > v.offs[id] {
			n++
		}
	}
	if n == 0 {
		return
	}
	size := 1 << bits.Len(uint(2*n-1)) // power of two ≥ 2n: load factor ≤ 1/2
	v.index = make([]int32, size)
	for i := range v.index {
		v.index[i] = indexEmpty
	}
	mask := uint64(size - 1)
	for i, k := range v.kinds {
		id := int32(i)
		t := v.Token(id)
		if k == TokenUnused || len(t) == 0 {
			continue
		}
	probe:
		for h := maphash.Bytes(v.seed, t) & mask; ; h = (h + 1) & mask {
			e := v.index[h]
			if e == indexEmpty {
				v.index[h] = id
				break
			}
			old := e &^ indexAmbiguous
			if string(v.Token(old)) != string(t) {
				continue
			}
			switch ok := v.kinds[old]; {
			case ok == k:
				v.index[h] = e | indexAmbiguous
			case k == TokenSpecial: // a special name beats normal tokens
				v.index[h] = id
			}
			break probe
		}
	}
}
