package testmodel

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/structgen/structgen/internal/sharedtest"
)

func TestDecodeByteLevel(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		want []byte
	}{
		{"hello", []byte("hello")},
		{"Ġworld", []byte(" world")},
		{"Ċ", []byte("\n")},
		{"Ā", []byte{0}},
		{"ÃŃ", []byte("í")},        // two bytes of a UTF-8 character
		{"ðŁ", []byte{0xF0, 0x9F}}, // half of an emoji
	} {
		got, err := DecodeByteLevel(tc.tok)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("DecodeByteLevel(%q) = %q, %v; want %q", tc.tok, got, err, tc.want)
		}
	}
	for _, bad := range []string{"a\u4e2d", "\xff", "x\u0200"} {
		if got, err := DecodeByteLevel(bad); err == nil {
			t.Errorf("DecodeByteLevel(%q) = %q, want an error", bad, got)
		}
	}
}

func TestLlama3Vocab(t *testing.T) {
	v, err := Llama3Vocab(sharedtest.Path(t, "corpus", "vocab", "hf", "llama3.2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != Llama3Size || len(v.Merges) != 280147 {
		t.Fatalf("%d tokens, %d merges; want %d, 280147", len(v.Tokens), len(v.Merges), Llama3Size)
	}
	raw, err := v.RawTokens()
	if err != nil {
		t.Fatal(err)
	}
	// Every one of the 256 bytes is a token of its own; specials have no bytes.
	single := map[byte]bool{}
	for i, b := range raw {
		if len(b) == 1 {
			single[b[0]] = true
		}
		if (i >= Llama3Regular) != (b == nil) {
			t.Fatalf("token %d: raw bytes %q, type %d", i, b, v.Types[i])
		}
	}
	if len(single) != 256 {
		t.Errorf("%d single-byte tokens, want 256", len(single))
	}
	for id, want := range map[int]string{9906: "Hello", 1917: " world", 128009: "<|eot_id|>", 128255: "<|reserved_special_token_247|>"} {
		got := v.Tokens[id]
		if id < Llama3Regular {
			got = string(raw[id])
		}
		if got != want {
			t.Errorf("token %d = %q, want %q", id, got, want)
		}
	}
}

func TestWriteLlama(t *testing.T) {
	v, err := Llama3Vocab(sharedtest.Path(t, "corpus", "vocab", "hf", "llama3.2"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "llama3-random.gguf")
	cfg := SmallLlama(v)
	if err := WriteLlama(path, cfg); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := ggml.Decode(f, -1)
	if err != nil {
		t.Fatal(err)
	}
	kv := g.KV()
	if kv.Architecture() != "llama" || kv.ContextLength() != uint64(cfg.Context) || len(kv.Strings("tokenizer.ggml.tokens")) != Llama3Size ||
		kv.Uint("tokenizer.ggml.eos_token_id") != uint32(Llama3EOT) || kv.ChatTemplate() != Llama3ChatTemplate {
		t.Errorf("header: arch %q ctx %d tokens %d eos %d", kv.Architecture(), kv.ContextLength(), len(kv.Strings("tokenizer.ggml.tokens")), kv.Uint("tokenizer.ggml.eos_token_id"))
	}
	if n := len(g.Tensors().Items()); n != 2+9*cfg.Layers {
		t.Errorf("%d tensors, want %d", n, 2+9*cfg.Layers)
	}
	st, _ := f.Stat()
	// F16 embeddings dominate: 128256 × 64 × 2 bytes.
	if min := int64(Llama3Size * cfg.Dim * 2); st.Size() < min {
		t.Errorf("file is %d bytes, less than the embeddings alone (%d)", st.Size(), min)
	}
	if err := WriteLlama(path, LlamaConfig{Vocab: v, Layers: 1, Dim: 10, Heads: 3, KVHeads: 1, FFN: 8, Context: 8}); err == nil {
		t.Error("Dim 10 with 3 heads: no error")
	}
}
