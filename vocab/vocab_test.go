package vocab

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

func bs(tokens ...string) [][]byte {
	out := make([][]byte, len(tokens))
	for i, t := range tokens {
		out[i] = []byte(t)
	}
	return out
}

func TestNewVocabErrors(t *testing.T) {
	long := strings.Repeat("x", MaxTokenLen+1)
	tests := []struct {
		name    string
		tokens  [][]byte
		kinds   []TokenKind // nil: NewVocab
		eog     []int32
		wantErr string
	}{
		{"empty", nil, nil, nil, "empty vocabulary"},
		{"too long token", bs("a", long), nil, nil, "token 1 is 4097 bytes long (limit MaxTokenLen = 4096)"},
		{"eog out of range", bs("a", "b"), nil, []int32{2}, "eog[0] = 2 is out of range [0, 2)"},
		{"eog negative", bs("a", "b"), nil, []int32{-1}, "eog[0] = -1 is out of range [0, 2)"},
		{"eog repeated", bs("a", "b", "c"), nil, []int32{1, 2, 1}, "eog[2] = 1 repeats eog[0]"},
		{"kinds length", bs("a", "b"), []TokenKind{TokenNormal}, nil, "1 token kinds for 2 tokens"},
		{"unknown kind", bs("a", "b"), []TokenKind{TokenNormal, 7}, nil, "token 1 has unknown kind 7"},
		{"empty normal", bs("a", ""), []TokenKind{TokenNormal, TokenNormal}, nil, "token 1 is normal but empty"},
		{"eog not special", bs("a", "</s>"), []TokenKind{TokenNormal, TokenNormal}, []int32{1}, "eog[0] = 1 is a normal token (end-of-generation tokens must be TokenSpecial)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.kinds == nil {
				_, err = NewVocab(tt.tokens, tt.eog)
			} else {
				_, err = NewVocabKinds(tt.tokens, tt.kinds, tt.eog)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewVocabTooLarge(t *testing.T) {
	tokens := make([][]byte, MaxVocabSize+1)
	_, err := NewVocab(tokens, nil)
	if err == nil || !strings.Contains(err.Error(), "limit MaxVocabSize") {
		t.Fatalf("err = %v, want the MaxVocabSize limit", err)
	}
}

func TestVocabAccessors(t *testing.T) {
	src := bs("a", "bc", "", "</s>", "héllo", "\xe2\x96", "<s>")
	v, err := NewVocab(src, []int32{6, 3})
	if err != nil {
		t.Fatal(err)
	}
	src[0][0] = 'z' // NewVocab copied the bytes
	if got := v.Size(); got != 7 {
		t.Errorf("Size = %d, want 7", got)
	}
	wantKinds := []TokenKind{TokenNormal, TokenNormal, TokenUnused, TokenSpecial, TokenNormal, TokenNormal, TokenSpecial}
	wantText := []string{"a", "bc", "", "</s>", "héllo", "\xe2\x96", "<s>"}
	for id := range int32(7) {
		if got := v.Kind(id); got != wantKinds[id] {
			t.Errorf("Kind(%d) = %v, want %v", id, got, wantKinds[id])
		}
		if got := string(v.Token(id)); got != wantText[id] {
			t.Errorf("Token(%d) = %q, want %q", id, got, wantText[id])
		}
		if got, want := v.IsEOG(id), id == 3 || id == 6; got != want {
			t.Errorf("IsEOG(%d) = %v, want %v", id, got, want)
		}
	}
	if got := v.EOG(); !slices.Equal(got, []int32{3, 6}) {
		t.Errorf("EOG = %v, want [3 6] (ascending)", got)
	}
	if got := v.MaxTokenLen(); got != 6 { // "héllo"; the special "</s>" does not count
		t.Errorf("MaxTokenLen = %d, want 6", got)
	}
	for _, id := range []int32{-1, 7, 1 << 30} {
		if v.Token(id) != nil || v.Kind(id) != TokenUnused || v.IsEOG(id) {
			t.Errorf("id %d out of range: Token = %q, Kind = %v, IsEOG = %v; want nil, unused, false", id, v.Token(id), v.Kind(id), v.IsEOG(id))
		}
	}
	// Token's capacity is clipped: appending must not overwrite token 1.
	_ = append(v.Token(0), 'X')
	if got := string(v.Token(1)); got != "bc" {
		t.Errorf("append to Token(0) changed Token(1) to %q", got)
	}
	if got := fmt.Sprint(TokenNormal, TokenSpecial, TokenUnused, TokenKind(9)); got != "normal special unused TokenKind(9)" {
		t.Errorf("TokenKind names = %q", got)
	}
}

func TestVocabLookup(t *testing.T) {
	tokens := bs("<|eot_id|>", "a", "a", "<|eot_id|>", "b", "dup", "dup", "gone", "x")
	kinds := []TokenKind{TokenNormal, TokenNormal, TokenNormal, TokenSpecial, TokenNormal, TokenSpecial, TokenSpecial, TokenUnused, TokenNormal}
	v, err := NewVocabKinds(tokens, kinds, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		id   int32
		ok   bool
	}{
		{"<|eot_id|>", 3, true}, // the special token wins over the normal one
		{"b", 4, true},          // unique normal token
		{"x", 8, true},
		{"a", 0, false},    // two normal tokens: ambiguous
		{"dup", 0, false},  // two special tokens: ambiguous
		{"gone", 0, false}, // unused tokens are never found
		{"", 0, false},
		{"c", 0, false},
		{"<|eot_id", 0, false},
	}
	for _, tt := range tests {
		id, ok := v.Lookup(tt.text)
		if ok != tt.ok || (ok && id != tt.id) {
			t.Errorf("Lookup(%q) = %d, %v; want %d, %v", tt.text, id, ok, tt.id, tt.ok)
		}
	}
}

// TestVocabLookupAgainstMap cross-checks the hash index against a map on
// a random vocabulary with many collisions of equal bytes.
func TestVocabLookupAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 5000
	tokens := make([][]byte, n)
	kinds := make([]TokenKind, n)
	for i := range tokens {
		l := 1 + r.IntN(3)
		for range l {
			tokens[i] = append(tokens[i], "abc\x00\xff"[r.IntN(5)])
		}
		kinds[i] = TokenKind(r.IntN(3))
	}
	v, err := NewVocabKinds(tokens, kinds, nil)
	if err != nil {
		t.Fatal(err)
	}
	type agg struct{ special, normal []int32 }
	m := map[string]*agg{}
	for i, tok := range tokens {
		a := m[string(tok)]
		if a == nil {
			a = &agg{}
			m[string(tok)] = a
		}
		switch kinds[i] {
		case TokenSpecial:
			a.special = append(a.special, int32(i))
		case TokenNormal:
			a.normal = append(a.normal, int32(i))
		}
	}
	for text, a := range m {
		wantID, wantOK := int32(0), false
		switch {
		case len(a.special) == 1:
			wantID, wantOK = a.special[0], true
		case len(a.special) == 0 && len(a.normal) == 1:
			wantID, wantOK = a.normal[0], true
		}
		id, ok := v.Lookup(text)
		if ok != wantOK || (ok && id != wantID) {
			t.Errorf("Lookup(%q) = %d, %v; want %d, %v (special %v, normal %v)", text, id, ok, wantID, wantOK, a.special, a.normal)
		}
	}
}

func TestVocabAccessorsDoNotAllocate(t *testing.T) {
	v, err := NewVocab(bs("a", "bc", "<|eot_id|>"), []int32{2})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Clone("<|eot_id|>")
	var sink int
	allocs := testing.AllocsPerRun(100, func() {
		for id := range int32(3) {
			sink += len(v.Token(id)) + int(v.Kind(id)) + len(v.EOG()) + v.Size() + v.MaxTokenLen()
			if v.IsEOG(id) {
				sink++
			}
		}
		if id, ok := v.Lookup(text); ok {
			sink += int(id)
		}
	})
	if allocs != 0 {
		t.Errorf("accessors allocate %v times per run, want 0", allocs)
	}
	_ = sink
}

func TestGreedyTokenize(t *testing.T) {
	// "ab" is the longest match at 0, but "abc" needs "a" + "bc": the
	// tokenizer must look ahead rather than take the longest match blindly.
	v, err := NewVocabKinds(bs("a", "ab", "bc", "abcd", "<x>", "q"),
		[]TokenKind{TokenNormal, TokenNormal, TokenNormal, TokenNormal, TokenSpecial, TokenUnused}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in      string
		want    []int32
		wantErr string
	}{
		{"", []int32{}, ""},
		{"abc", []int32{0, 2}, ""},
		{"abcd", []int32{3}, ""},
		{"abab", []int32{1, 1}, ""},
		{"abcabc", []int32{0, 2, 0, 2}, ""},
		{"<x>", nil, "none reaches past offset 0 (next byte 0x3c)"}, // special tokens are never used
		{"aq", nil, "none reaches past offset 1 (next byte 0x71)"},  // nor unused ones
		{"abd", nil, "none reaches past offset 2 (next byte 0x64)"},
	}
	for _, tt := range tests {
		got, err := v.GreedyTokenize([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("GreedyTokenize(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("GreedyTokenize(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// TestGreedyTokenizeAgainstReference compares GreedyTokenize with a
// brute-force reference on random small vocabularies: a tokenization
// exists iff the reference finds one, the result is made of normal tokens
// that concatenate to the input, and at each step it takes the longest
// token after which the rest can be covered.
func TestGreedyTokenizeAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "ab\x00\xff"
	for iter := range 300 {
		n := 1 + r.IntN(12)
		tokens := make([][]byte, n)
		kinds := make([]TokenKind, n)
		for i := range tokens {
			for range 1 + r.IntN(4) {
				tokens[i] = append(tokens[i], alphabet[r.IntN(len(alphabet))])
			}
			if r.IntN(5) == 0 {
				kinds[i] = TokenSpecial
			}
		}
		v, err := NewVocabKinds(tokens, kinds, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			var in []byte
			for range r.IntN(10) {
				in = append(in, alphabet[r.IntN(len(alphabet))])
			}
			// coverable[i]: b[i:] has a tokenization (reference DP over
			// all tokens, by brute force).
			coverable := make([]bool, len(in)+1)
			coverable[len(in)] = true
			for i := len(in) - 1; i >= 0; i-- {
				for id, tok := range tokens {
					if kinds[id] == TokenNormal && bytes.HasPrefix(in[i:], tok) && coverable[i+len(tok)] {
						coverable[i] = true
					}
				}
			}
			got, err := v.GreedyTokenize(in)
			if !coverable[0] {
				if err == nil {
					t.Fatalf("iter %d: %q over %q: got %v, want an error", iter, in, tokens, got)
				}
				continue
			}
			if err != nil {
				t.Fatalf("iter %d: %q over %q: %v", iter, in, tokens, err)
			}
			pos := 0
			for _, id := range got {
				tok := v.Token(id)
				if v.Kind(id) != TokenNormal || !bytes.HasPrefix(in[pos:], tok) {
					t.Fatalf("iter %d: %q over %q: token %d %q does not match at %d", iter, in, tokens, id, tok, pos)
				}
				longest := 0
				for id2, tok2 := range tokens {
					if kinds[id2] == TokenNormal && bytes.HasPrefix(in[pos:], tok2) && coverable[pos+len(tok2)] {
						longest = max(longest, len(tok2))
					}
				}
				if len(tok) != longest {
					t.Fatalf("iter %d: %q over %q: at %d took %q, a viable token of %d bytes exists", iter, in, tokens, pos, tok, longest)
				}
				pos += len(tok)
			}
			if pos != len(in) {
				t.Fatalf("iter %d: %q over %q: tokens cover %d bytes", iter, in, tokens, pos)
			}
		}
	}
}

// TestVocabConcurrent shares one Vocab between goroutines, including the
// lazy index of GreedyTokenize (run with -race).
func TestVocabConcurrent(t *testing.T) {
	tokens := [][]byte{[]byte("<|end|>")}
	for b := range 256 {
		tokens = append(tokens, []byte{byte(b)}, []byte{byte(b), 'x'})
	}
	v, err := NewVocab(tokens, []int32{0})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			in := []byte(fmt.Sprintf("goroutine %d\xff\x00x", g))
			ids, err := v.GreedyTokenize(in)
			if err != nil {
				t.Error(err)
				return
			}
			var out []byte
			for _, id := range ids {
				out = append(out, v.Token(id)...)
			}
			if !bytes.Equal(out, in) {
				t.Errorf("round trip %q → %q", in, out)
			}
			if id, ok := v.Lookup("<|end|>"); !ok || id != 0 || !v.IsEOG(id) {
				t.Errorf("Lookup(<|end|>) = %d, %v", id, ok)
			}
		})
	}
	wg.Wait()
}

func TestByteLevelAlphabet(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	enc := encodeByteLevel(all)
	dec, err := decodeByteLevel(nil, enc)
	if err != nil || !bytes.Equal(dec, all) {
		t.Fatalf("decode(encode(0..255)) = %v, %v", dec, err)
	}
	for _, c := range []struct {
		b byte
		r rune
	}{{' ', 'Ġ'}, {'\n', 'Ċ'}, {'\t', 'ĉ'}, {'!', '!'}, {0xAD, 'Ń'}, {0xFF, 'ÿ'}, {0x00, 'Ā'}, {0x7F, 'ġ'}} {
		if gpt2Rune[c.b] != c.r {
			t.Errorf("byte %#02x ↔ %q, want %q", c.b, gpt2Rune[c.b], c.r)
		}
	}
	for _, bad := range []string{" ", "a b", "\u2581", "\xff", "é\u0144"} {
		if _, err := decodeByteLevel(nil, bad); err == nil {
			t.Errorf("decodeByteLevel(%q) succeeded, want an error", bad)
		}
	}
}
