package vocab

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/structgen/structgen/internal/sharedtest"
)

type corpusKind int

const (
	kindSPM corpusKind = iota // SentencePiece with byte fallback
	kindBPE                   // byte-level BPE
	kindWPM                   // WordPiece
)

// corpusVocabs lists every vocabulary in ../shared/corpus with the size
// of the corpus README's table and the end-of-generation ids llama.cpp
// derives from the metadata (for the HF folders: from the configs).
//
// noByte lists the bytes with no single-byte normal token (ranges, hex).
// Several byte-level BPE vocabularies drop the bytes that never occur in
// UTF-8 text (C0, C1, F5–FF), and some drop rare others (Falcon: ten
// control characters and F2; StarCoder and Refact: F1). Such a byte can
// never be produced on its own (only inside a longer token, if any).
var corpusVocabs = []struct {
	path    string // under the shared folder
	size    int
	kind    corpusKind
	eog     []int32
	vectors bool   // has .inp/.out test vectors
	noByte  string // bytes without a token of their own
}{
	{"corpus/vocab/ggml-vocab-llama-spm.gguf", 32000, kindSPM, []int32{2}, true, ""},           // eos </s>
	{"corpus/vocab/ggml-vocab-phi-3.gguf", 32064, kindSPM, []int32{2, 32000, 32007}, true, ""}, // eos <|endoftext|>; </s> and <|end|> by name
	{"corpus/vocab/ggml-vocab-baichuan.gguf", 64000, kindSPM, []int32{2}, false, ""},
	{"corpus/vocab/ggml-vocab-gpt-2.gguf", 50257, kindBPE, []int32{50256}, true, ""},
	{"corpus/vocab/ggml-vocab-gpt-neox.gguf", 50432, kindBPE, []int32{0}, false, "c0-c1 f5-ff"},
	{"corpus/vocab/ggml-vocab-mpt.gguf", 50432, kindBPE, []int32{0}, true, "c0-c1 f5-ff"},
	{"corpus/vocab/ggml-vocab-falcon.gguf", 65024, kindBPE, []int32{11}, true, "03-05 0b 11 13-17 19 1c-1e c0-c1 f2 f5-ff"},
	{"corpus/vocab/ggml-vocab-starcoder.gguf", 49152, kindBPE, []int32{0, 4}, true, "c0-c1 f1 f5-ff"},    // eos; <fim_pad> as FIM pad
	{"corpus/vocab/ggml-vocab-refact.gguf", 49216, kindBPE, []int32{0, 4, 18}, true, "c0-c1 f1 f5-ff"},   // eos; <fim_pad>; <reponame> as FIM repo
	{"corpus/vocab/ggml-vocab-deepseek-coder.gguf", 32256, kindBPE, []int32{32014}, true, "c0-c1 f5-ff"}, // <｜end▁of▁sentence｜>
	{"corpus/vocab/ggml-vocab-deepseek-llm.gguf", 102400, kindBPE, []int32{100001}, true, "c0-c1 f5-ff"},
	{"corpus/vocab/ggml-vocab-bert-bge.gguf", 30522, kindWPM, []int32{0}, true, ""}, // no eos; [PAD] found as FIM pad (Kimi-K2's name)
	{"corpus/vocab/hf/llama3.2", 128000, kindBPE, nil, false, ""},                   // regular tokens only
	{"corpus/vocab/hf/qwen2", 151646, kindBPE, []int32{151643, 151645}, false, ""},  // eos_token <|endoftext|>; <|im_end|> by name
	{"corpus/models/stories260K.gguf", 512, kindSPM, []int32{2}, false, ""},         // a whole model file (with tensors)
}

// byteSet parses noByte: space-separated hex bytes and ranges "a0-bf".
func byteSet(t *testing.T, s string) (set [256]bool) {
	t.Helper()
	for _, f := range strings.Fields(s) {
		lo, hi, ok := strings.Cut(f, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 16, 8)
		b, err2 := strconv.ParseUint(hi, 16, 8)
		if err1 != nil || err2 != nil || a > b {
			t.Fatalf("bad byte set %q", s)
		}
		for c := a; c <= b; c++ {
			set[c] = true
		}
	}
	return set
}

var (
	corpusMu    sync.Mutex
	corpusCache = map[string]*Vocab{}
)

// corpusVocab loads (once per test binary) a vocabulary of the shared
// corpus, or skips the test if the shared folder is absent.
func corpusVocab(tb testing.TB, rel string) *Vocab {
	tb.Helper()
	p := sharedtest.Path(tb, strings.Split(rel, "/")...)
	corpusMu.Lock()
	defer corpusMu.Unlock()
	if v := corpusCache[p]; v != nil {
		return v
	}
	v, err := loadAnyEOG(p)
	if err != nil {
		tb.Fatal(err)
	}
	corpusCache[p] = v
	return v
}

// loadAnyEOG is LoadVocab that also takes a vocabulary without end tokens
// (the llama3.2 folder lists only the regular tokens; see
// TestLlama32FolderEOG).
func loadAnyEOG(p string) (*Vocab, error) {
	v, err := LoadVocab(p)
	var ne *NoEOGError
	if errors.As(err, &ne) {
		return ne.Vocab, nil
	}
	return v, err
}

func TestCorpusVocabs(t *testing.T) {
	for _, cv := range corpusVocabs {
		t.Run(filepath.Base(cv.path), func(t *testing.T) {
			v := corpusVocab(t, cv.path)
			if v.Size() != cv.size {
				t.Errorf("Size = %d, want %d", v.Size(), cv.size)
			}
			if got := v.EOG(); !slices.Equal(got, cv.eog) && (len(got) > 0 || len(cv.eog) > 0) {
				t.Errorf("EOG = %v, want %v", got, cv.eog)
			}
			checkVocabInvariants(t, v)
			for _, id := range v.EOG() {
				if got, ok := v.Lookup(string(v.Token(id))); !ok || got != id {
					t.Errorf("Lookup(%q) = %d, %v; want EOG token %d", v.Token(id), got, ok, id)
				}
			}
		})
	}
}

// readVectors parses llama.cpp's tokenizer test vectors: inputs separated
// by "\n__ggml_vocab_test__\n" lines, and one line of expected ids per
// input.
func readVectors(t *testing.T, gguf string) (inputs []string, ids [][]int32) {
	t.Helper()
	inp, err := os.ReadFile(gguf + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(gguf + ".out")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	inputs = strings.Split(string(inp), sep)
	if last := len(inputs) - 1; inputs[last] == "" {
		inputs = inputs[:last] // the file ends with a separator
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("%d inputs, %d output lines", len(inputs), len(lines))
	}
	for i, l := range lines {
		var row []int32
		for _, f := range strings.Fields(l) {
			id, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", gguf, i+1, err)
			}
			row = append(row, int32(id))
		}
		ids = append(ids, row)
	}
	return inputs, ids
}

// TestCorpusTestVectors decodes the expected ids of llama.cpp's tokenizer
// test vectors and compares the bytes with the input:
//
//   - byte-level BPE: the decoded bytes are the input, exactly;
//   - SentencePiece: they are " " + input (llama.cpp's SPM tokenizer
//     prefixes a space, add_space_prefix, which its detokenizer strips
//     again; our token bytes keep it), or "" for an empty input;
//   - WordPiece: the tokenizer lower-cases, strips accents, drops
//     control characters and splits off punctuation, so the input cannot
//     be recovered. We check the strongest property left: the decoded
//     tokens, grouped into words (a token starting with a space starts a
//     word, [UNK] stands for a whole word), are exactly the words of the
//     input normalized as llama.cpp's WordPiece preprocessor does.
//
// Every expected id must also be a normal token: the vectors are
// tokenized without special-token parsing.
func TestCorpusTestVectors(t *testing.T) {
	for _, cv := range corpusVocabs {
		if !cv.vectors {
			continue
		}
		t.Run(filepath.Base(cv.path), func(t *testing.T) {
			v := corpusVocab(t, cv.path)
			inputs, ids := readVectors(t, sharedtest.Path(t, strings.Split(cv.path, "/")...))
			for i, in := range inputs {
				var got []byte
				for _, id := range ids[i] {
					if cv.kind != kindWPM && v.Kind(id) != TokenNormal {
						t.Errorf("case %d: id %d (%q) is %v, want normal", i, id, v.Token(id), v.Kind(id))
					}
					got = append(got, v.Token(id)...)
				}
				switch cv.kind {
				case kindBPE, kindSPM:
					want := in
					if cv.kind == kindSPM && in != "" {
						want = " " + in
					}
					if string(got) != want {
						t.Errorf("case %d: decoded %q, want %q (ids %v)", i, got, want, ids[i])
					}
				case kindWPM:
					const unk = 100 // [UNK]
					if v.Kind(unk) != TokenSpecial || string(v.Token(unk)) != "[UNK]" {
						t.Fatalf("token 100 is %q (%v), want [UNK]", v.Token(unk), v.Kind(unk))
					}
					var words []string
					for _, id := range ids[i] {
						tok := string(v.Token(id))
						switch {
						case id == unk:
							words = append(words, "[UNK]")
						case strings.HasPrefix(tok, " "):
							words = append(words, tok[1:])
						case len(words) == 0 || words[len(words)-1] == "[UNK]":
							t.Fatalf("case %d: continuation %q does not follow a word", i, tok)
						default:
							words[len(words)-1] += tok
						}
					}
					want := wordPieceWords(in)
					if len(words) != len(want) {
						t.Errorf("case %d: %q: words %q, want %q", i, in, words, want)
						continue
					}
					for j := range words {
						if words[j] != want[j] && words[j] != "[UNK]" {
							t.Errorf("case %d: %q: word %d is %q, want %q", i, in, j, words[j], want[j])
						}
					}
				}
			}
		})
	}
}

// wordPieceWords splits text into words as llama.cpp's WordPiece
// preprocessor does (llm_tokenizer_wpm_session::preprocess): NFD, drop
// accents, control characters, NUL and U+FFFD, lower-case, split on
// whitespace, and make every punctuation character, ASCII symbol and CJK
// ideograph a word of its own.
func wordPieceWords(text string) []string {
	words := []string{""}
	for _, r := range norm.NFD.String(text) {
		switch {
		case unicode.IsSpace(r):
			if words[len(words)-1] != "" {
				words = append(words, "")
			}
			continue
		case r == 0 || r == 0xFFFD || unicode.IsControl(r) || unicode.Is(unicode.Mn, r):
			continue
		}
		s := string(unicode.ToLower(r))
		if unicode.IsPunct(r) || (r < 0x7F && unicode.IsSymbol(r)) || isCJK(r) {
			if words[len(words)-1] != "" {
				words = append(words, "")
			}
			words[len(words)-1] = s
			words = append(words, "")
		} else {
			words[len(words)-1] += s
		}
	}
	if words[len(words)-1] == "" {
		words = words[:len(words)-1]
	}
	return words
}

func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

// TestCorpusGreedyTokenize checks byte coverage: in SentencePiece (byte
// fallback) vocabularies and in GPT-2, Llama-3 and Qwen2 every byte has a
// token, in the other byte-level BPE vocabularies exactly the bytes of
// noByte have none (GreedyTokenize fails on them alone). Random byte
// strings over the covered bytes, and the test-vector inputs, must
// round-trip through GreedyTokenize. WordPiece only covers normalized
// text.
func TestCorpusGreedyTokenize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, cv := range corpusVocabs {
		t.Run(filepath.Base(cv.path), func(t *testing.T) {
			v := corpusVocab(t, cv.path)
			roundTrip := func(in []byte) {
				t.Helper()
				ids, err := v.GreedyTokenize(in)
				if err != nil {
					t.Fatalf("GreedyTokenize(%q): %v", in, err)
				}
				var out []byte
				for _, id := range ids {
					if v.Kind(id) != TokenNormal {
						t.Fatalf("GreedyTokenize(%q) used %v token %d", in, v.Kind(id), id)
					}
					out = append(out, v.Token(id)...)
				}
				if !bytes.Equal(out, in) {
					t.Fatalf("GreedyTokenize(%q) gives back %q", in, out)
				}
			}
			if cv.kind == kindWPM {
				roundTrip([]byte(" hello world, this is a test"))
				if _, err := v.GreedyTokenize([]byte("\x00")); err == nil {
					t.Errorf("GreedyTokenize(NUL) succeeded; WordPiece has no token for it")
				}
				return
			}
			missing := byteSet(t, cv.noByte)
			var covered []byte
			for b := range 256 {
				if missing[b] {
					if ids, err := v.GreedyTokenize([]byte{byte(b)}); err == nil {
						t.Errorf("byte %#02x: tokenized as %v, want no tokenization", b, ids)
					}
					continue
				}
				covered = append(covered, byte(b))
				roundTrip([]byte{byte(b)})
			}
			for range 20 {
				in := make([]byte, 1+r.IntN(300))
				for i := range in {
					in[i] = covered[r.IntN(len(covered))]
				}
				roundTrip(in)
			}
			if cv.vectors {
				inputs, _ := readVectors(t, sharedtest.Path(t, strings.Split(cv.path, "/")...))
				for _, in := range inputs {
					roundTrip([]byte(in))
				}
			}
		})
	}
}

// TestCorpusTruncated loads truncated copies of a real GGUF file: each
// must fail with an error naming the copy.
func TestCorpusTruncated(t *testing.T) {
	data, err := os.ReadFile(sharedtest.Path(t, "corpus", "vocab", "ggml-vocab-llama-spm.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 3, 4, 20, 24, 100, 1000, len(data) / 2, len(data) - 1} {
		_, p, err := loadBytes(t, "cut.gguf", data[:n])
		if err == nil || !strings.HasPrefix(err.Error(), p+": ") {
			t.Errorf("first %d bytes: err = %v, want an error naming %s", n, err, p)
		}
	}
}
