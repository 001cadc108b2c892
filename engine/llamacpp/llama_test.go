//go:build llamacpp

package llamacpp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/internal/testmodel"
)

// tmpDir holds files shared by the tests of this binary (the 128k model);
// TestMain removes it.
var tmpDir string

func TestMain(m *testing.M) {
	var err error
	if tmpDir, err = os.MkdirTemp("", "llamacpp-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmpDir)
	os.Exit(code)
}

var llama3 struct {
	once  sync.Once
	vocab *testmodel.Vocab
	path  string
	err   error
}

// llama3Model returns the path of a random-weight Llama model with the
// real Llama-3 vocabulary (written once per test binary) and the vocabulary.
func llama3Model(tb testing.TB) (string, *testmodel.Vocab) {
	tb.Helper()
	dir := sharedtest.Path(tb, "corpus", "vocab", "hf", "llama3.2")
	llama3.once.Do(func() {
		llama3.vocab, llama3.err = testmodel.Llama3Vocab(dir)
		if llama3.err != nil {
			return
		}
		llama3.path = filepath.Join(tmpDir, "llama3-random.gguf")
		llama3.err = testmodel.WriteLlama(llama3.path, testmodel.SmallLlama(llama3.vocab))
	})
	if llama3.err != nil {
		tb.Fatal(llama3.err)
	}
	return llama3.path, llama3.vocab
}

func storiesPath(tb testing.TB) string {
	tb.Helper()
	return sharedtest.Path(tb, "corpus", "models", "stories260K.gguf")
}

func load(tb testing.TB, path string, opts Options) *Model {
	tb.Helper()
	m, err := Load(path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

// checkLogits fails unless logits is a vocabulary-long slice of finite
// values that are not all equal.
func checkLogits(t *testing.T, m *Model) {
	t.Helper()
	l := m.Logits()
	if len(l) != m.VocabSize() {
		t.Fatalf("len(Logits()) = %d, want %d", len(l), m.VocabSize())
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for i, x := range l {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatalf("logit %d = %v", i, x)
		}
		lo, hi = min(lo, x), max(hi, x)
	}
	if hi-lo < 1e-3 {
		t.Fatalf("logits are flat: %v..%v", lo, hi)
	}
}

func argmax(l []float32) int32 {
	best := 0
	for i, x := range l {
		if x > l[best] {
			best = i
		}
	}
	return int32(best)
}

// greedy decodes n tokens greedily after prompt, starting from an empty
// cache, and returns them.
func greedy(t *testing.T, m *Model, prompt []int32, n int) []int32 {
	t.Helper()
	if err := m.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := m.Decode(prompt, 0); err != nil {
		t.Fatal(err)
	}
	var out []int32
	pos := len(prompt)
	for range n {
		tok := argmax(m.Logits())
		out = append(out, tok)
		if err := m.Decode([]int32{tok}, pos); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	return out
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

func TestStoriesVocab(t *testing.T) {
	m := load(t, storiesPath(t), Options{})
	if m.VocabSize() != 512 || m.ContextSize() != 2048 {
		t.Fatalf("VocabSize %d, ContextSize %d; want 512, 2048", m.VocabSize(), m.ContextSize())
	}
	if !slices.Equal(m.EOG(), []int32{2}) || !m.IsEOG(2) || m.IsEOG(1) || m.IsEOG(-1) || m.IsEOG(512) {
		t.Errorf("EOG = %v", m.EOG())
	}
	if bos, ok := m.BOS(); bos != 1 || !ok {
		t.Errorf("BOS = %d, %v; want 1, true", bos, ok)
	}
	for _, tc := range []struct {
		tok     int32
		text    string
		special bool
		isByte  bool
	}{
		{0, "<unk>", true, false},
		{1, "<s>", true, false},
		{2, "</s>", true, false},
		{3, "\x00", false, true},        // <0x00>
		{3 + '\n', "\n", false, true},   // <0x0A>
		{3 + 0xE4, "\xE4", false, true}, // <0xE4>: a UTF-8 lead byte alone
	} {
		if got := m.TokenBytes(tc.tok); string(got) != tc.text || m.TokenIsSpecial(tc.tok) != tc.special || m.TokenIsByte(tc.tok) != tc.isByte {
			t.Errorf("token %d: %q special %v byte %v; want %q %v %v", tc.tok, got, m.TokenIsSpecial(tc.tok), m.TokenIsByte(tc.tok), tc.text, tc.special, tc.isByte)
		}
	}
	if m.TokenBytes(-1) != nil || m.TokenBytes(512) != nil || m.TokenIsSpecial(512) {
		t.Error("out-of-range ids must give nil / false")
	}
	// SentencePiece's ▁ is a space in the token bytes.
	toks, err := m.Tokenize([]byte("Once upon a time"), false, false)
	if err != nil {
		t.Fatal(err)
	}
	var joined []byte
	for _, tok := range toks {
		joined = append(joined, m.TokenBytes(tok)...)
	}
	if string(joined) != " Once upon a time" {
		t.Errorf("token bytes of %v join to %q, want %q", toks, joined, " Once upon a time")
	}
	if m.ChatTemplate() != "" {
		t.Errorf("ChatTemplate = %q, want none", m.ChatTemplate())
	}
}

func TestStoriesTokenizeRoundTrip(t *testing.T) {
	m := load(t, storiesPath(t), Options{VocabOnly: true})
	for _, text := range []string{
		"Once upon a time, there was a little girl named Lily.",
		"héllo wörld 世界 🙂", // byte fallback for characters not in 512 tokens
		"tabs\tand\nnewlines\n\n",
		"",
		"x",
	} {
		toks, err := m.Tokenize([]byte(text), true, false)
		if err != nil {
			t.Fatalf("Tokenize(%q): %v", text, err)
		}
		if len(toks) == 0 || toks[0] != 1 {
			t.Errorf("Tokenize(%q, addSpecial) = %v, want BOS first", text, toks)
		}
		plain, err := m.Tokenize([]byte(text), false, false)
		if err != nil || !slices.Equal(toks[1:], plain) {
			t.Errorf("Tokenize(%q) without BOS = %v, %v; with BOS %v", text, plain, err, toks)
		}
		// llama.cpp drops SentencePiece's leading space only when the
		// sequence does not start with BOS.
		back, err := m.Detokenize(plain, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if string(back) != text {
			t.Errorf("Detokenize(Tokenize(%q)) = %q", text, back)
		}
	}
	if _, err := m.Detokenize([]int32{5, 512}, false, false); err == nil || !strings.Contains(err.Error(), "token 512 at index 1") {
		t.Errorf("Detokenize out of range: %v", err)
	}
}

func TestStoriesDecode(t *testing.T) {
	m := load(t, storiesPath(t), Options{Threads: 1})
	prompt, err := m.Tokenize([]byte("Once upon a time, there was a"), true, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Logits() != nil {
		t.Error("Logits before the first Decode must be nil")
	}
	if err := m.Decode(prompt, 0); err != nil {
		t.Fatal(err)
	}
	checkLogits(t, m)
	prefill := slices.Clone(m.Logits())

	// Token by token gives the same logits as one batch.
	if err := m.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if m.Logits() != nil {
		t.Error("Logits after Truncate must be nil")
	}
	for i, tok := range prompt {
		if err := m.Decode([]int32{tok}, i); err != nil {
			t.Fatal(err)
		}
	}
	if d := maxDiff(prefill, m.Logits()); d > 1e-3 {
		t.Errorf("step-by-step logits differ from the batch by %g", d)
	}

	// Greedy decoding is reproducible, and the story goes on.
	a := greedy(t, m, prompt, 24)
	b := greedy(t, m, prompt, 24)
	if !slices.Equal(a, b) {
		t.Fatalf("greedy runs differ:\n%v\n%v", a, b)
	}
	text, err := m.Detokenize(append(slices.Clone(prompt), a...), true, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("greedy: %q", text)
	if len(text) < len("Once upon a time, there was a")+20 {
		t.Errorf("24 greedy tokens gave only %q", text)
	}

	// Rollback: truncate into the generated tokens, decode one again, and
	// the logits are those of the first run at that position.
	base := len(prompt)
	if err := m.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := m.Decode(append(slices.Clone(prompt), a[:5]...), 0); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(m.Logits())
	if argmax(want) != a[5] {
		t.Fatalf("logits after 5 generated tokens pick %d, the greedy run picked %d", argmax(want), a[5])
	}
	if err := m.Decode(a[5:10], base+5); err != nil {
		t.Fatal(err)
	}
	if err := m.Truncate(base + 4); err != nil {
		t.Fatal(err)
	}
	if err := m.Decode(a[4:5], base+4); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(want, m.Logits()); d > 1e-3 {
		t.Errorf("logits after Truncate+Decode differ by %g", d)
	}
}

func TestStoriesSmallBatches(t *testing.T) {
	// A prompt longer than the batch is decoded in several llama_decode
	// calls with the same result.
	one := load(t, storiesPath(t), Options{Threads: 1})
	small := load(t, storiesPath(t), Options{Threads: 1, BatchSize: 3})
	prompt, err := one.Tokenize([]byte("The little dog ran to the park and saw a big red ball."), true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompt) <= 3*2 {
		t.Fatalf("prompt of %d tokens is too short to need several batches", len(prompt))
	}
	for _, m := range []*Model{one, small} {
		if err := m.Decode(prompt, 0); err != nil {
			t.Fatal(err)
		}
	}
	if d := maxDiff(one.Logits(), small.Logits()); d > 1e-3 {
		t.Errorf("batch size 3 changes the logits by %g", d)
	}
}

func TestDecodeErrors(t *testing.T) {
	m := load(t, storiesPath(t), Options{ContextSize: 16, Threads: 1})
	if m.ContextSize() != 16 {
		t.Fatalf("ContextSize = %d, want 16", m.ContextSize())
	}
	toks := []int32{1, 100, 200, 300}
	for _, tc := range []struct {
		name   string
		tokens []int32
		pos    int
		is     error
		msg    string
	}{
		{"empty", nil, 0, nil, "no tokens"},
		{"gap", toks, 1, nil, "Decode at position 1, but the cache holds positions 0..-1"},
		{"out of range", []int32{1, 512}, 0, nil, "token 512 at index 1 is out of range [0, 512)"},
		{"negative", []int32{-3}, 0, nil, "token -3 at index 0"},
		{"too long", make([]int32, 17), 0, engine.ErrContextFull, "need 17 positions, the context holds 16"},
	} {
		err := m.Decode(tc.tokens, tc.pos)
		if err == nil || !strings.Contains(err.Error(), tc.msg) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: Decode = %v, want %q", tc.name, err, tc.msg)
		}
	}
	// Fill the context exactly, then one more is ErrKVCacheFull; the cache
	// is unchanged by the failure.
	if err := m.Decode(make([]int32, 16), 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Decode([]int32{5}, 16); !errors.Is(err, ErrKVCacheFull) || !errors.Is(err, engine.ErrContextFull) {
		t.Errorf("Decode past the context = %v, want ErrKVCacheFull", err)
	}
	if err := m.Truncate(17); err == nil {
		t.Error("Truncate past the cache: no error")
	}
	if err := m.Truncate(-1); err == nil {
		t.Error("Truncate(-1): no error")
	}
	if err := m.Truncate(15); err != nil {
		t.Fatal(err)
	}
	if err := m.Decode([]int32{5}, 15); err != nil {
		t.Fatal(err)
	}
	checkLogits(t, m)

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := m.Decode([]int32{1}, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Decode after Close = %v", err)
	}
	if _, err := m.Tokenize([]byte("x"), false, false); !errors.Is(err, ErrClosed) {
		t.Errorf("Tokenize after Close = %v", err)
	}
	if m.Logits() != nil {
		t.Error("Logits after Close must be nil")
	}

	v := load(t, storiesPath(t), Options{VocabOnly: true})
	if err := v.Decode([]int32{1}, 0); !errors.Is(err, ErrVocabOnly) {
		t.Errorf("Decode on a vocabulary-only model = %v", err)
	}
	if err := v.Truncate(0); !errors.Is(err, ErrVocabOnly) {
		t.Errorf("Truncate on a vocabulary-only model = %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range badFiles(t) {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load(tc.path, Options{})
			if err == nil {
				m.Close()
				t.Fatal("Load: no error")
			}
			var le *LoadError
			if !errors.As(err, &le) || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("Load = %v, want a *LoadError naming the file, wrapping %v", err, tc.want)
			}
		})
	}
	stories := storiesPath(t)
	if _, err := Load(stories, Options{ContextSize: 2049}); !errors.Is(err, ErrContextTooLarge) ||
		!strings.Contains(err.Error(), "ContextSize 2049 > 2048") || !strings.Contains(err.Error(), stories) {
		t.Errorf("context too large: %v", err)
	}
	vocab := sharedtest.Path(t, "corpus", "vocab", "ggml-vocab-llama-spm.gguf")
	if _, err := Load(vocab, Options{}); err == nil || !strings.Contains(err.Error(), "VocabOnly") {
		t.Errorf("weights-less file without VocabOnly: %v", err)
	}

	// A header Go accepts but llama.cpp rejects: a llama with tensors
	// missing. The error carries llama.cpp's own reason.
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "partial.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	var toks []string
	var types []int32
	for i := range 256 {
		toks = append(toks, string(rune(0x100+i)))
		types = append(types, testmodel.TypeNormal)
	}
	kv := ggml.KV{"general.architecture": "llama", "llama.context_length": uint32(64), "llama.embedding_length": uint32(8),
		"llama.block_count": uint32(1), "llama.feed_forward_length": uint32(8), "llama.attention.head_count": uint32(2),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5), "tokenizer.ggml.model": "gpt2",
		"tokenizer.ggml.tokens": toks, "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": []string{"Ā ā"}}
	ts := []*ggml.Tensor{{Name: "token_embd.weight", Kind: 0, Shape: []uint64{8, 256}, WriterTo: bytes.NewReader(make([]byte, 8*256*4))}}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(f.Name(), Options{})
	if !errors.Is(err, ErrLlama) || !strings.Contains(err.Error(), "missing tensor") || !strings.Contains(err.Error(), f.Name()) {
		t.Errorf("partial model: %v, want llama.cpp's missing-tensor error", err)
	}
}

func TestProgress(t *testing.T) {
	var seen []float32
	m := load(t, storiesPath(t), Options{Progress: func(p float32) { seen = append(seen, p) }})
	_ = m
	if len(seen) == 0 || seen[len(seen)-1] != 1 {
		t.Fatalf("progress calls %v, want some ending at 1", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("progress went back: %v", seen)
		}
	}
	// A panicking callback stops the load with an error.
	_, err := Load(storiesPath(t), Options{Progress: func(float32) { panic("boom") }})
	if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "panicked: boom") {
		t.Errorf("Load with a panicking Progress = %v", err)
	}
}

func TestVocabOnlyCorpus(t *testing.T) {
	dir := sharedtest.Path(t, "corpus", "vocab")
	for _, tc := range []struct {
		file    string
		size    int
		text    string
		special string // a special token's text
	}{
		{"ggml-vocab-llama-spm.gguf", 32000, "Hello world", "</s>"},
		{"ggml-vocab-phi-3.gguf", 32064, "Hello world", "<|end|>"},
		{"ggml-vocab-gpt-2.gguf", 50257, "Hello world", "<|endoftext|>"},
		{"ggml-vocab-deepseek-llm.gguf", 102400, "Hello world", "<｜end▁of▁sentence｜>"},
		{"ggml-vocab-bert-bge.gguf", 30522, "hello world", "[SEP]"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			m := load(t, filepath.Join(dir, tc.file), Options{VocabOnly: true})
			if m.VocabSize() != tc.size {
				t.Errorf("VocabSize = %d, want %d", m.VocabSize(), tc.size)
			}
			toks, err := m.Tokenize([]byte(tc.text), false, false)
			if err != nil {
				t.Fatal(err)
			}
			var joined []byte
			for _, tok := range toks {
				if m.TokenIsSpecial(tok) {
					t.Errorf("text token %d (%q) is special", tok, m.TokenBytes(tok))
				}
				joined = append(joined, m.TokenBytes(tok)...)
			}
			// Normalisers may add a leading space (SPM) or use
			// continuation marks (WordPiece); the words survive.
			if !bytes.Contains(bytes.ToLower(joined), []byte("hello")) || !bytes.Contains(joined, []byte("world")) {
				t.Errorf("tokens %v join to %q", toks, joined)
			}
			special, err := m.Tokenize([]byte(tc.special), false, true)
			if err != nil || len(special) != 1 || !m.TokenIsSpecial(special[0]) || string(m.TokenBytes(special[0])) != tc.special {
				t.Errorf("Tokenize(%q, parseSpecial) = %v, %v: want one special token with that text", tc.special, special, err)
			}
		})
	}
}

func TestLlama3Random(t *testing.T) {
	path, vocab := llama3Model(t)
	start := time.Now()
	m := load(t, path, Options{ContextSize: 1024})
	t.Logf("load: %v", time.Since(start))
	if m.VocabSize() != testmodel.Llama3Size {
		t.Fatalf("VocabSize = %d", m.VocabSize())
	}
	for _, id := range []int32{testmodel.Llama3EOS, testmodel.Llama3EOT} {
		if !m.IsEOG(id) || !slices.Contains(m.EOG(), id) {
			t.Errorf("%d is not end-of-generation (EOG %v)", id, m.EOG())
		}
	}
	if m.IsEOG(testmodel.Llama3BOS) || m.IsEOG(9906) {
		t.Errorf("EOG %v holds BOS or a text token", m.EOG())
	}
	if bos, ok := m.BOS(); bos != testmodel.Llama3BOS || !ok {
		t.Errorf("BOS = %d, %v", bos, ok)
	}
	if m.ChatTemplate() != testmodel.Llama3ChatTemplate {
		t.Errorf("ChatTemplate = %q", m.ChatTemplate())
	}
	raw, err := vocab.RawTokens()
	if err != nil {
		t.Fatal(err)
	}
	for id := range int32(testmodel.Llama3Size) {
		want := raw[id]
		if id >= testmodel.Llama3Regular {
			want = []byte(vocab.Tokens[id])
		}
		if !bytes.Equal(m.TokenBytes(id), want) || m.TokenIsSpecial(id) != (id >= testmodel.Llama3Regular) {
			t.Fatalf("token %d: %q special %v, want %q", id, m.TokenBytes(id), m.TokenIsSpecial(id), want)
		}
	}

	toks, err := m.Tokenize([]byte("Hello world"), true, false)
	if err != nil || !slices.Equal(toks, []int32{128000, 9906, 1917}) {
		t.Errorf("Tokenize(Hello world) = %v, %v; want [128000 9906 1917]", toks, err)
	}
	if toks, _ := m.Tokenize([]byte("<|eot_id|>"), false, true); !slices.Equal(toks, []int32{testmodel.Llama3EOT}) {
		t.Errorf("Tokenize(<|eot_id|>, parseSpecial) = %v", toks)
	}
	if toks, _ := m.Tokenize([]byte("<|eot_id|>"), false, false); len(toks) < 2 || slices.Contains(toks, testmodel.Llama3EOT) {
		t.Errorf("Tokenize(<|eot_id|>) as text = %v, want plain-text tokens", toks)
	}

	// llama.cpp's tokenizer on this GGUF reproduces the bench's own
	// Llama-3 tokenization of a document.
	caseDir := sharedtest.Path(t, "bench", "cases", "03-arith-ebnf")
	doc, err := os.ReadFile(filepath.Join(caseDir, "doc.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	if err := readJSON(filepath.Join(caseDir, "doc.llama3.tokens.json"), &want); err != nil {
		t.Fatal(err)
	}
	got, err := m.Tokenize(doc, false, false)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Tokenize(doc 03): %d tokens (err %v), the bench has %d; first difference at %d", len(got), err, len(want), firstDiff(got, want))
	}

	prompt, _ := m.Tokenize([]byte("The answer is"), true, false)
	if err := m.Decode(prompt, 0); err != nil {
		t.Fatal(err)
	}
	checkLogits(t, m)
	a := greedy(t, m, prompt, 8)
	b := greedy(t, m, prompt, 8)
	if !slices.Equal(a, b) {
		t.Errorf("greedy runs differ: %v vs %v", a, b)
	}
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func firstDiff(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// benchDecode measures one-token decode steps after a short prompt,
// reporting ms/token; the cache is truncated back when the context fills.
func benchDecode(b *testing.B, path string, opts Options) {
	m := load(b, path, opts)
	prompt, err := m.Tokenize([]byte("Once upon a time"), true, false)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Decode(prompt, 0); err != nil {
		b.Fatal(err)
	}
	pos := len(prompt)
	tok := argmax(m.Logits())
	b.ReportAllocs()
	for b.Loop() {
		if pos == m.ContextSize() {
			if err := m.Truncate(len(prompt)); err != nil {
				b.Fatal(err)
			}
			pos = len(prompt)
		}
		if err := m.Decode([]int32{tok}, pos); err != nil {
			b.Fatal(err)
		}
		pos++
		tok = argmax(m.Logits())
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/token")
}

func BenchmarkDecodeStories(b *testing.B) {
	benchDecode(b, storiesPath(b), Options{ContextSize: 512, Threads: 1})
}

func BenchmarkDecodeLlama3Random(b *testing.B) {
	path, _ := llama3Model(b)
	benchDecode(b, path, Options{ContextSize: 512, Threads: 1})
}

// BenchmarkPrefillLlama3Random decodes a 256-token prompt in one call.
func BenchmarkPrefillLlama3Random(b *testing.B) {
	path, _ := llama3Model(b)
	m := load(b, path, Options{ContextSize: 512, Threads: 1})
	prompt := make([]int32, 256)
	for i := range prompt {
		prompt[i] = int32(1000 + i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Truncate(0); err != nil {
			b.Fatal(err)
		}
		if err := m.Decode(prompt, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(prompt))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
