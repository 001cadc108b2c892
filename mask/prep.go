package mask

import (
	"sync"
	"time"

	"github.com/structgen/structgen/vocab"
)

// vocabPrep is what Compile derives from a vocabulary once and shares
// between all grammars compiled against it.
type vocabPrep struct {
	trie     *vocab.Trie
	words    int           // mask length in uint32 words
	special  []int32       // special, non-EOG tokens (matched only by token references)
	normal   []int32       // normal tokens (for negated token references)
	maxLen   int           // longest normal token in bytes
	size     int           // vocabulary size (token ids)
	duration time.Duration // time spent preparing
	pool     stickyPool[scratch]
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
		trie:   v.Trie(),
		words:  (v.Size() + 31) / 32,
		size:   v.Size(),
		maxLen: v.MaxTokenLen(),
		pool:   stickyPool[scratch]{largest: true},
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
	// grammar has (see slice.go), and its tokens by how many characters
	// they start (upToChars: a string with a maxLength needs one set per
	// count left, and making one is up to a millisecond of a decode step).
	var work int64
	if sl := v.Slice(jsonString, &work); sl != nil {
		p.upToChars(sl, 0, nil)
	}
	// Its mid-character slices (midSlice), one per way a character can
	// still need continuation bytes: a string's states inside a character.
	for _, e := range vocab.CharEnds() {
		v.MidSlice(jsonString, e.Need, e.Lo, e.Hi, &work)
	}
	// Its ASCII part, for the regions of keys whose non-ASCII characters
	// are read by a call (regionFor).
	v.Slice(jsonStringASCII, &work)
	p.duration = time.Since(start)
	vocabPreps.Store(v, p)
	return p
}

// PrepareVocab builds the per-vocabulary structures Compile needs (the
// token trie, the slices of JSON string bodies and its tokens by length)
// ahead of time and returns
// how long that took. Compile does
// it on first use otherwise; benchmarks call it to report the one-off
// vocabulary preparation apart from grammar compilation.
func PrepareVocab(v *Vocab) time.Duration { return prepare(v).duration }
