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

// driver runs one sequence of a Model by itself: decode appends tokens
// at pos (where the sequence ends) in batches of the model's batch size,
// asking for the logits of the last; logits returns them.
type driver struct {
	m   *Model
	seq int
	b   engine.Batch
	row int
}

func drive(m *Model, seq int) *driver { return &driver{m: m, seq: seq, row: -1} }

func (d *driver) decode(toks []int32, pos int) error {
	if len(toks) == 0 {
		return errors.New("no tokens")
	}
	nb := d.m.BatchSize()
	for start := 0; start < len(toks); start += nb {
		chunk := toks[start:min(start+nb, len(toks))]
		d.b.Reset()
		last := start+len(chunk) == len(toks)
		for i, t := range chunk {
			d.b.Add(d.seq, pos+start+i, t, last && i == len(chunk)-1)
		}
		if err := d.m.Decode(&d.b); err != nil {
			d.row = -1
			return err
		}
	}
	d.row = d.b.Len() - 1
	return nil
}

func (d *driver) logits() []float32 {
	if d.row < 0 {
		return nil
	}
	return d.m.Logits(d.row)
}

func (d *driver) truncate(pos int) error {
	d.row = -1
	return d.m.Remove(d.seq, pos)
}

// checkLogits fails unless the driver's logits are a vocabulary-long slice
// of finite values that are not all equal.
func checkLogits(t *testing.T, d *driver) {
	t.Helper()
	l := d.logits()
	if len(l) != d.m.VocabSize() {
		t.Fatalf("len(Logits()) = %d, want %d", len(l), d.m.VocabSize())
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
// sequence, and returns them.
func greedy(t *testing.T, d *driver, prompt []int32, n int) []int32 {
	t.Helper()
	if err := d.truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := d.decode(prompt, 0); err != nil {
		t.Fatal(err)
	}
	var out []int32
	pos := len(prompt)
	for range n {
		tok := argmax(d.logits())
		out = append(out, tok)
		if err := d.decode([]int32{tok}, pos); err != nil {
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
	d := drive(m, 0)
	prompt, err := m.Tokenize([]byte("Once upon a time, there was a"), true, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.logits() != nil {
		t.Error("Logits before the first Decode must be nil")
	}
	if err := d.decode(prompt, 0); err != nil {
		t.Fatal(err)
	}
	checkLogits(t, d)
	prefill := slices.Clone(d.logits())

	// Token by token gives the same logits as one batch.
	if err := d.truncate(0); err != nil {
		t.Fatal(err)
	}
	if d.logits() != nil {
		t.Error("Logits after Truncate must be nil")
	}
	for i, tok := range prompt {
		if err := d.decode([]int32{tok}, i); err != nil {
			t.Fatal(err)
		}
	}
	if d := maxDiff(prefill, d.logits()); d > 1e-3 {
		t.Errorf("step-by-step logits differ from the batch by %g", d)
	}

	// Greedy decoding is reproducible, and the story goes on.
	a := greedy(t, d, prompt, 24)
	b := greedy(t, d, prompt, 24)
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
	if err := d.truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := d.decode(append(slices.Clone(prompt), a[:5]...), 0); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(d.logits())
	if argmax(want) != a[5] {
		t.Fatalf("logits after 5 generated tokens pick %d, the greedy run picked %d", argmax(want), a[5])
	}
	if err := d.decode(a[5:10], base+5); err != nil {
		t.Fatal(err)
	}
	if err := d.truncate(base + 4); err != nil {
		t.Fatal(err)
	}
	if err := d.decode(a[4:5], base+4); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(want, d.logits()); d > 1e-3 {
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
	d1, d3 := drive(one, 0), drive(small, 0)
	for _, d := range []*driver{d1, d3} {
		if err := d.decode(prompt, 0); err != nil {
			t.Fatal(err)
		}
	}
	if d := maxDiff(d1.logits(), d3.logits()); d > 1e-3 {
		t.Errorf("batch size 3 changes the logits by %g", d)
	}
}

func TestDecodeErrors(t *testing.T) {
	m := load(t, storiesPath(t), Options{ContextSize: 16, Threads: 1, Sequences: 2})
	if m.ContextSize() != 16 || m.Sequences() != 2 {
		t.Fatalf("ContextSize = %d, Sequences = %d, want 16, 2", m.ContextSize(), m.Sequences())
	}
	batch := func(entries ...[3]int32) *engine.Batch {
		var b engine.Batch
		for i, e := range entries {
			b.Add(int(e[0]), int(e[1]), e[2], i == len(entries)-1)
		}
		return &b
	}
	for _, tc := range []struct {
		name string
		b    *engine.Batch
		is   error
		msg  string
	}{
		{"empty", batch(), nil, "empty batch"},
		{"gap", batch([3]int32{0, 1, 1}), nil, "entry 0: sequence 0 at position 1, but it continues at 0"},
		{"out of order", batch([3]int32{0, 0, 1}, [3]int32{0, 2, 1}), nil, "entry 1: sequence 0 at position 2, but it continues at 1"},
		{"token out of range", batch([3]int32{0, 0, 1}, [3]int32{0, 1, 512}), nil, "entry 1: token 512 is out of range [0, 512)"},
		{"negative token", batch([3]int32{0, 0, -3}), nil, "entry 0: token -3"},
		{"sequence out of range", batch([3]int32{2, 0, 1}), nil, "entry 0: sequence 2 is out of range [0, 2)"},
		{"too long", batch(func() (e [][3]int32) {
			for i := range 17 {
				e = append(e, [3]int32{0, int32(i), 1})
			}
			return
		}()...), nil, "a batch of 17 entries, more than the batch size 16"},
	} {
		err := m.Decode(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.msg) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: Decode = %v, want %q", tc.name, err, tc.msg)
		}
	}
	if m.Logits(0) != nil {
		t.Error("Logits after failed decodes must be nil")
	}
	// Fill the cache with two sequences, then one more cell is
	// ErrKVCacheFull; the cache is unchanged by the failure.
	d0, d1 := drive(m, 0), drive(m, 1)
	if err := d0.decode(make([]int32, 10), 0); err != nil {
		t.Fatal(err)
	}
	if err := d1.decode(make([]int32, 6), 0); err != nil {
		t.Fatal(err)
	}
	if err := d1.decode([]int32{5}, 6); !errors.Is(err, ErrKVCacheFull) || !errors.Is(err, engine.ErrContextFull) {
		t.Errorf("Decode past the cache = %v, want ErrKVCacheFull", err)
	}
	if err := m.Remove(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := d0.decode(make([]int32, 6), 10); err != nil {
		t.Fatal(err)
	}
	if err := d0.decode([]int32{5}, 16); !errors.Is(err, ErrKVCacheFull) {
		t.Errorf("Decode past the context = %v, want ErrKVCacheFull", err)
	}
	if err := m.Remove(0, 10); err != nil {
		t.Fatal(err)
	}
	if err := d1.decode(make([]int32, 6), 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(0, 11); err == nil {
		t.Error("Remove past the sequence: no error")
	}
	if err := m.Remove(0, -1); err == nil {
		t.Error("Remove(-1): no error")
	}
	if err := m.Remove(3, 0); err == nil {
		t.Error("Remove of sequence 3 of 2: no error")
	}
	if err := m.Copy(0, 1, 2); err == nil {
		t.Error("Copy into a sequence that holds positions: no error")
	}
	if err := m.Remove(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := d1.decode([]int32{5, 6, 7}, 0); err != nil {
		t.Fatal(err)
	}
	checkLogits(t, d1)

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := m.Decode(batch([3]int32{0, 0, 1})); !errors.Is(err, ErrClosed) {
		t.Errorf("Decode after Close = %v", err)
	}
	if _, err := m.Tokenize([]byte("x"), false, false); !errors.Is(err, ErrClosed) {
		t.Errorf("Tokenize after Close = %v", err)
	}
	if m.Logits(0) != nil {
		t.Error("Logits after Close must be nil")
	}

	v := load(t, storiesPath(t), Options{VocabOnly: true})
	if err := v.Decode(batch([3]int32{0, 0, 1})); !errors.Is(err, ErrVocabOnly) {
		t.Errorf("Decode on a vocabulary-only model = %v", err)
	}
	if err := v.Remove(0, 0); !errors.Is(err, ErrVocabOnly) {
		t.Errorf("Remove on a vocabulary-only model = %v", err)
	}
	if _, err := Load(storiesPath(t), Options{Sequences: MaxSequences + 1}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("Sequences %d: %v", MaxSequences+1, err)
	}
}

// Sequences in one batch give each the logits it gets alone, a copied
// prefix gives the logits of decoding it, and removing a sequence frees
// its cells for another.
func TestSequences(t *testing.T) {
	m := load(t, storiesPath(t), Options{Threads: 1, ContextSize: 64, Sequences: 3})
	prompts := [][]int32{}
	for _, p := range []string{"Once upon a time", "The dog", "Lily and Tom went to the big park"} {
		toks, err := m.Tokenize([]byte(p), true, false)
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, toks)
	}
	// Alone, one after another.
	var alone [][]float32
	for i, p := range prompts {
		d := drive(m, i)
		if err := d.decode(p, 0); err != nil {
			t.Fatal(err)
		}
		alone = append(alone, slices.Clone(d.logits()))
		if err := m.Remove(i, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Together, in one batch (entries of the sequences interleaved).
	var b engine.Batch
	rows := make([]int, len(prompts))
	for k := 0; ; k++ {
		added := false
		for i, p := range prompts {
			if k < len(p) {
				r := b.Add(i, k, p[k], k == len(p)-1)
				if k == len(p)-1 {
					rows[i] = r
				}
				added = true
			}
		}
		if !added {
			break
		}
	}
	if err := m.Decode(&b); err != nil {
		t.Fatal(err)
	}
	for i := range prompts {
		if d := maxDiff(alone[i], m.Logits(rows[i])); d > 1e-3 {
			t.Errorf("sequence %d: batched logits differ from alone by %g", i, d)
		}
	}
	if m.Logits(0) != nil {
		t.Error("Logits of an entry that asked for none must be nil")
	}
	// A prefix copied from sequence 2 into 0, then its last token: the
	// logits of decoding the prefix and then the token in one sequence.
	p := prompts[2]
	for _, s := range []int{0, 1, 2} {
		if err := m.Remove(s, 0); err != nil {
			t.Fatal(err)
		}
	}
	d2 := drive(m, 2)
	if err := d2.decode(p[:len(p)-1], 0); err != nil {
		t.Fatal(err)
	}
	if err := d2.decode(p[len(p)-1:], len(p)-1); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(d2.logits())
	if err := m.Copy(2, 0, len(p)-1); err != nil {
		t.Fatal(err)
	}
	d := drive(m, 0)
	if err := d.decode(p[len(p)-1:], len(p)-1); err != nil {
		t.Fatal(err)
	}
	if diff := maxDiff(want, d.logits()); diff > 1e-3 {
		t.Errorf("after Copy: logits differ by %g", diff)
	}
	// Fill what is left of the cache: 64 cells, of which the shared
	// prefix holds len(p)-1 (counted once), sequences 2 and 0 one more
	// each (the last prompt token).
	free := 64 - len(p) - 1
	d1 := drive(m, 1)
	if err := d1.decode(make([]int32, free), 0); err != nil {
		t.Fatalf("%d free cells: %v", free, err)
	}
	if err := d1.decode([]int32{1}, free); !errors.Is(err, ErrKVCacheFull) {
		t.Fatalf("cell 65 of 64: %v", err)
	}
	// Removing sequence 2 frees only its own last cell: sequence 0 shares
	// the prefix. Removing 0 too frees the prefix.
	if err := m.Remove(2, 0); err != nil {
		t.Fatal(err)
	}
	if err := d1.decode([]int32{1}, free); err != nil {
		t.Fatalf("after removing one sharer: %v", err)
	}
	if err := d1.decode([]int32{1}, free+1); !errors.Is(err, ErrKVCacheFull) {
		t.Fatalf("after removing one sharer, a second cell: %v", err)
	}
	if err := m.Remove(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := d1.decode(make([]int32, len(p)), free+1); err != nil {
		t.Fatalf("after removing both sharers: %v", err)
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
	d := drive(m, 0)
	if err := d.decode(prompt, 0); err != nil {
		t.Fatal(err)
	}
	checkLogits(t, d)
	a := greedy(t, d, prompt, 8)
	b := greedy(t, d, prompt, 8)
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
	d := drive(m, 0)
	prompt, err := m.Tokenize([]byte("Once upon a time"), true, false)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.decode(prompt, 0); err != nil {
		b.Fatal(err)
	}
	pos := len(prompt)
	tok := argmax(d.logits())
	b.ReportAllocs()
	for b.Loop() {
		if pos == m.ContextSize() {
			if err := d.truncate(len(prompt)); err != nil {
				b.Fatal(err)
			}
			pos = len(prompt)
		}
		if err := d.decode([]int32{tok}, pos); err != nil {
			b.Fatal(err)
		}
		pos++
		tok = argmax(d.logits())
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
	d := drive(m, 0)
	prompt := make([]int32, 256)
	for i := range prompt {
		prompt[i] = int32(1000 + i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.truncate(0); err != nil {
			b.Fatal(err)
		}
		if err := d.decode(prompt, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(prompt))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
