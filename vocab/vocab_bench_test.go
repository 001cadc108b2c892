package vocab

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"
)

// BenchmarkLoadVocab measures LoadVocab per file kind: the one-off
// vocabulary preparation, reported apart from grammar compilation.
func BenchmarkLoadVocab(b *testing.B) {
	cases := []struct{ name, path string }{
		{"gguf-spm-llama2", "corpus/vocab/ggml-vocab-llama-spm.gguf"},
		{"gguf-bpe-gpt2", "corpus/vocab/ggml-vocab-gpt-2.gguf"},
		{"gguf-bpe-deepseek-llm", "corpus/vocab/ggml-vocab-deepseek-llm.gguf"},
		{"gguf-wpm-bert", "corpus/vocab/ggml-vocab-bert-bge.gguf"},
		{"encoder.json-llama3.2", "corpus/vocab/hf/llama3.2"},
		{"vocab.json-qwen2", "corpus/vocab/hf/qwen2"},
		{"tokenizer.json-qwen2", ""},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var p string
			if c.path != "" {
				p = sharedtest.Path(b, strings.Split(c.path, "/")...)
			} else {
				p = qwen2TokenizerJSON(b)
			}
			b.ReportAllocs()
			var v *Vocab
			for b.Loop() {
				var err error
				if v, err = loadAnyEOG(p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(v.Size()), "tokens")
		})
	}
}

// qwen2TokenizerJSON writes a tokenizer.json holding Qwen2's vocabulary
// and merges (as its Hugging Face repository has; 4.7 MB) and returns its
// path.
func qwen2TokenizerJSON(b *testing.B) string {
	dir := sharedtest.Path(b, "corpus", "vocab", "hf", "qwen2")
	vocab, err := os.ReadFile(filepath.Join(dir, "vocab.json"))
	if err != nil {
		b.Fatal(err)
	}
	merges, err := os.ReadFile(filepath.Join(dir, "merges.txt"))
	if err != nil {
		b.Fatal(err)
	}
	var ml []string
	for _, l := range strings.Split(string(merges), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			ml = append(ml, l)
		}
	}
	mj, err := json.Marshal(ml)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"version": "1.0", "added_tokens": [
{"id": 151643, "content": "<|endoftext|>", "special": true},
{"id": 151644, "content": "<|im_start|>", "special": true},
{"id": 151645, "content": "<|im_end|>", "special": true}],
"pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
"model": {"type": "BPE", "vocab": `)
	buf.Write(vocab)
	buf.WriteString(`, "merges": `)
	buf.Write(mj)
	buf.WriteString("}}")
	p := filepath.Join(b.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkVocabAccessors(b *testing.B) {
	v := corpusVocab(b, "corpus/vocab/hf/qwen2")
	n := int32(v.Size())
	b.Run("Token+Kind", func(b *testing.B) {
		b.ReportAllocs()
		sum := 0
		id := int32(0)
		for b.Loop() {
			sum += len(v.Token(id)) + int(v.Kind(id))
			if id++; id == n {
				id = 0
			}
		}
		_ = sum
	})
	b.Run("Lookup", func(b *testing.B) {
		b.ReportAllocs()
		names := []string{"<|im_end|>", " the", "hello", "not a token at all"}
		for i := 0; b.Loop(); i++ {
			v.Lookup(names[i%len(names)])
		}
	})
}

// BenchmarkGreedyTokenize tokenizes a 2 KB JSON bench document with the
// Llama-3.2 regular tokens (the sorted index is built before timing).
func BenchmarkGreedyTokenize(b *testing.B) {
	v := corpusVocab(b, "corpus/vocab/hf/llama3.2")
	doc, err := os.ReadFile(sharedtest.Path(b, "bench", "cases", "01-json-builtin", "doc.json"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := v.GreedyTokenize(doc); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.GreedyTokenize(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildSlice measures making a loop's slice on Llama-3 (what a
// grammar whose loop class is new pays on a first use, and PrepareVocab
// for the JSON string classes), and reports the work units it counts.
func BenchmarkBuildSlice(b *testing.B) {
	// (The directory has no end-of-generation token: the vocabulary
	// comes in the error.)
	_, err := LoadVocab(sharedtest.Path(b, "corpus", "vocab", "hf", "llama3.2"))
	var ne *NoEOGError
	if !errors.As(err, &ne) {
		b.Fatal(err)
	}
	v := ne.Vocab
	json := JSONString()
	noABDE := json
	for _, c := range "abde" {
		noABDE.ASCII[c>>6] &^= 1 << (c & 63)
	}
	var ident Class
	for _, c := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_" {
		ident.AddASCII(byte(c))
	}
	v.Trie()
	for _, c := range []struct {
		name string
		cl   Class
	}{{"json-string", json}, {"json-string-less-abde", noABDE}, {"identifier", ident}} {
		b.Run(c.name, func(b *testing.B) {
			var work int64
			for b.Loop() {
				work = 0
				buildSlice(v, sliceKey{c.cl, 0, 0x80, 0xBF, 0}, &work)
			}
			b.ReportMetric(float64(work), "units/op")
		})
	}
}
