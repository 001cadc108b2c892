package ggufcheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/structgen/structgen/internal/sharedtest"
)

// gguf builds a GGUF v3 header from its parts, little-endian.
type gguf struct{ bytes.Buffer }

func (g *gguf) u32(v uint32) *gguf { binary.Write(&g.Buffer, binary.LittleEndian, v); return g }
func (g *gguf) u64(v uint64) *gguf { binary.Write(&g.Buffer, binary.LittleEndian, v); return g }
func (g *gguf) str(s string) *gguf { g.u64(uint64(len(s))); g.WriteString(s); return g }

func head(nTensors, nKV uint64) *gguf {
	g := &gguf{}
	g.WriteString("GGUF")
	return g.u32(3).u64(nTensors).u64(nKV)
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want error  // nil: accepted
		msg  string // part of the message
	}{
		{"empty", nil, ErrNotGGUF, "0 bytes"},
		{"text", []byte(`{"a": 1}`), ErrNotGGUF, "text file"},
		{"zip", []byte("PK\x03\x04rest"), ErrNotGGUF, "zip"},
		{"ggml", []byte("lmggxxxx"), ErrNotGGUF, "pre-GGUF"},
		{"big-endian", []byte("FUGG\x00\x00\x00\x03"), ErrNotGGUF, "big-endian"},
		{"magic only", []byte("GGUF"), ErrTruncated, "version at offset 4"},
		{"v1", append([]byte("GGUF"), 1, 0, 0, 0), ErrMalformed, "version 1"},
		{"minimal", head(0, 0).Bytes(), nil, ""},
		{"one string", head(0, 1).str("general.architecture").u32(typeString).str("llama").Bytes(), nil, ""},
		{"huge KV count", head(0, 1<<40).Bytes(), ErrTruncated, "metadata pairs"},
		{"huge string", head(0, 1).str("k").u32(typeString).u64(1 << 50).Bytes(), ErrTruncated, "1125899906842624 bytes long"},
		{"negative string", head(0, 1).str("k").u32(typeString).u64(1 << 63).Bytes(), ErrTruncated, ""},
		{"huge key", head(0, 1).u64(1 << 62).Bytes(), ErrTruncated, "metadata key"},
		{"long key", head(0, 1).str(strings.Repeat("k", MaxKeyLen+1)).u32(typeU8).u32(0).Bytes(), ErrMalformed, "limit 65535"},
		{"unknown type", head(0, 1).str("k").u32(13).u64(0).Bytes(), ErrMalformed, "unknown value type 13"},
		{"huge array", head(0, 1).str("k").u32(typeArray).u32(typeU8).u64(1 << 30).Bytes(), ErrMalformed, "limit"},
		{"array past end", head(0, 1).str("k").u32(typeArray).u32(typeU32).u64(100).u32(1).Bytes(), ErrTruncated, "array data"},
		{"strings past end", head(0, 1).str("k").u32(typeArray).u32(typeString).u64(1000).Bytes(), ErrTruncated, "array of 1000 strings"},
		{"nested array", head(0, 1).str("k").u32(typeArray).u32(typeArray).u64(0).Bytes(), ErrMalformed, "arrays of arrays"},
		{"alignment 0", head(0, 1).str("general.alignment").u32(typeU32).u32(0).Bytes(), ErrMalformed, "power of two"},
		{"alignment 24", head(0, 1).str("general.alignment").u32(typeU32).u32(24).Bytes(), ErrMalformed, "power of two"},
		{"alignment type", head(0, 1).str("general.alignment").u32(typeU64).u64(32).Bytes(), ErrMalformed, "want uint32"},
		{"tensor 5 dims", head(1, 0).str("t").u32(5).Bytes(), ErrMalformed, "5 dimensions"},
		{"tensor cut", head(1, 0).str("t").u32(2).u64(4).Bytes(), ErrTruncated, "tensor \"t\""},
		{"tensor ok", head(1, 0).str("t").u32(1).u64(4).u32(0).u64(0).Bytes(), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Check(bytes.NewReader(tc.data), int64(len(tc.data)))
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.want == nil:
				if h.DataFrom != int64(len(tc.data)) {
					t.Errorf("DataFrom = %d, want %d", h.DataFrom, len(tc.data))
				}
			case !errors.Is(err, tc.want):
				t.Fatalf("Check = %v, want %v", err, tc.want)
			case !strings.Contains(err.Error(), tc.msg):
				t.Errorf("Check = %q, want it to mention %q", err, tc.msg)
			}
		})
	}
}

// TestCheckShort: a reader shorter than the size claimed is truncation.
func TestCheckShort(t *testing.T) {
	data := head(0, 1).str("k").u32(typeString).str("value").Bytes()
	_, err := Check(bytes.NewReader(data[:len(data)-2]), int64(len(data)))
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("Check = %v, want ErrTruncated", err)
	}
}

// TestCheckRealFiles: every GGUF of the corpus passes, and every cut of
// the model inside its header is reported as truncation.
func TestCheckRealFiles(t *testing.T) {
	dir := sharedtest.Path(t, "corpus")
	files := []string{dir + "/models/stories260K.gguf", dir + "/vocab/ggml-vocab-llama-spm.gguf", dir + "/vocab/ggml-vocab-gpt-2.gguf", dir + "/vocab/ggml-vocab-bert-bge.gguf"}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Check(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if p == files[0] {
			if h.Tensors != 48 || h.Arrays["tokenizer.ggml.tokens"] != 512 || h.Arrays["tokenizer.ggml.scores"] != 512 {
				t.Errorf("%s: %d tensors, arrays %v; want 48 tensors, 512 tokens and scores", p, h.Tensors, h.Arrays)
			}
			for _, cut := range []int64{5, 12, 23, 100, h.DataFrom / 2, h.DataFrom - 1} {
				if _, err := Check(bytes.NewReader(data[:cut]), cut); !errors.Is(err, ErrTruncated) {
					t.Errorf("cut at %d: %v, want ErrTruncated", cut, err)
				}
			}
		}
	}
}

// FuzzCheck: no input panics, hangs or allocates without bound, every
// rejection wraps one of the sentinel errors, and ggml.Decode does not
// panic on what Check accepts.
func FuzzCheck(f *testing.F) {
	f.Add(head(0, 0).Bytes())
	f.Add(head(1, 2).str("general.architecture").u32(typeString).str("llama").str("a").u32(typeArray).u32(typeString).u64(2).str("x").str("yz").str("t").u32(2).u64(2).u64(3).u32(0).u64(0).Bytes())
	f.Add(head(0, 1).str("general.alignment").u32(typeU32).u32(32).Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Check(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !errors.Is(err, ErrNotGGUF) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Check = %v: not a sentinel error", err)
			}
			return
		}
		ggml.Decode(bytes.NewReader(data), -1) // must not panic; errors are fine
	})
}
