package llamacpp

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/internal/sharedtest"
)

// writeFile writes data to a new file in dir and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeGGUF writes a GGUF with the given metadata and no tensors.
func writeGGUF(t *testing.T, dir, name string, kv ggml.KV) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ggml.WriteGGUF(f, kv, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// badFiles are files Inspect and Load must reject, with the sentinel error
// and a part of the message each must produce. stories260K.gguf is cut in
// its header and in its tensor data.
func badFiles(t *testing.T) []struct {
	name, path string
	want       error
	msg        string
} {
	t.Helper()
	dir := t.TempDir()
	model, err := os.ReadFile(sharedtest.Path(t, "corpus", "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := append([]byte("GGUF\x01\x00\x00\x00"), make([]byte, 16)...)
	noArch := append([]byte("GGUF\x03\x00\x00\x00"), make([]byte, 16)...)
	return []struct {
		name, path string
		want       error
		msg        string
	}{
		{"missing", filepath.Join(dir, "nope.gguf"), fs.ErrNotExist, "no such file"},
		{"directory", dir, ErrNotGGUF, "is a directory"},
		{"empty", writeFile(t, dir, "empty.gguf", nil), ErrNotGGUF, "0 bytes"},
		{"text", writeFile(t, dir, "model.json", []byte(`{"not": "a model"}`)), ErrNotGGUF, `starts with "{\"no"`},
		{"zip", writeFile(t, dir, "model.bin", []byte("PK\x03\x04\x14\x00\x00\x00")), ErrNotGGUF, "zip archive"},
		{"header cut", writeFile(t, dir, "cut-header.gguf", model[:700]), ErrTruncated, "more than a 700-byte file holds"},
		{"token list cut", writeFile(t, dir, "cut-tokens.gguf", model[:3000]), ErrTruncated, `metadata "tokenizer.ggml.tokens"`},
		{"data cut", writeFile(t, dir, "cut-data.gguf", model[:len(model)/2]), ErrTruncated, "exceeds file size"},
		{"last byte cut", writeFile(t, dir, "cut-1.gguf", model[:len(model)-1]), ErrTruncated, "exceeds file size"},
		{"version 1", writeFile(t, dir, "v1.gguf", v1), ErrCorrupt, "GGUF version 1"},
		{"no architecture", writeFile(t, dir, "noarch.gguf", noArch), ErrUnsupportedArch, "no general.architecture"},
		{"unknown architecture", writeGGUF(t, dir, "foo.gguf", ggml.KV{"general.architecture": "foo-net"}), ErrUnsupportedArch, `"foo-net"`},
		{"no vocabulary", writeGGUF(t, dir, "novocab.gguf", ggml.KV{"general.architecture": "llama"}), ErrCorrupt, "has 0 tokens; llama.cpp needs at least 104"},
		{"tiny vocabulary", writeGGUF(t, dir, "tiny.gguf", ggml.KV{"general.architecture": "gpt2", "tokenizer.ggml.model": "gpt2",
			"tokenizer.ggml.tokens": []string{"a", "b", "c"}, "tokenizer.ggml.token_type": []int32{1, 1, 1}}), ErrCorrupt, "has 3 tokens"},
	}
}

func TestInspectErrors(t *testing.T) {
	for _, tc := range badFiles(t) {
		t.Run(tc.name, func(t *testing.T) {
			info, err := Inspect(tc.path)
			if err == nil {
				t.Fatalf("Inspect = %+v, want an error", info)
			}
			var le *LoadError
			if !errors.As(err, &le) || le.Path != tc.path {
				t.Fatalf("Inspect error %v (%T) is not a *LoadError for %s", err, err, tc.path)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("Inspect = %v, want errors.Is %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("Inspect = %q, want it to name the file and say %q", err, tc.msg)
			}
		})
	}
}

func TestInspectCorpus(t *testing.T) {
	dir := sharedtest.Path(t, "corpus")
	for _, tc := range []struct {
		file, arch string
		ctx        int
		tensors    int
	}{
		{"models/stories260K.gguf", "llama", 2048, 48},
		{"vocab/ggml-vocab-llama-spm.gguf", "llama", 4096, 0},
		{"vocab/ggml-vocab-phi-3.gguf", "phi3", 4096, 0},
		{"vocab/ggml-vocab-gpt-2.gguf", "gpt2", 1024, 0},
		{"vocab/ggml-vocab-bert-bge.gguf", "bert", 512, 0},
		{"vocab/ggml-vocab-starcoder.gguf", "starcoder2", 16384, 0},
	} {
		info, err := Inspect(filepath.Join(dir, tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if info.Arch != tc.arch || info.TrainContext != tc.ctx || info.Tensors != tc.tensors || info.Version != 3 {
			t.Errorf("%s: %+v, want arch %s, context %d, %d tensors, version 3", tc.file, info, tc.arch, tc.ctx, tc.tensors)
		}
	}
}

func TestResolve(t *testing.T) {
	stories := &FileInfo{Arch: "llama", TrainContext: 2048, Tensors: 48}
	vocabOnly := &FileInfo{Arch: "llama", TrainContext: 4096}
	bert := &FileInfo{Arch: "bert", TrainContext: 512, Tensors: 10}
	noCtx := &FileInfo{Arch: "llama", Tensors: 3}
	for _, tc := range []struct {
		name string
		info *FileInfo
		opts Options
		want resolved // when err is nil
		err  error
		msg  string
	}{
		{"defaults", stories, Options{Threads: 3}, resolved{ctx: 2048, batch: DefaultBatchSize, threads: 3, seqs: DefaultSequences}, nil, ""},
		{"default ctx capped", &FileInfo{Arch: "llama", TrainContext: 131072, Tensors: 3}, Options{Threads: 1}, resolved{ctx: DefaultContextSize, batch: DefaultBatchSize, threads: 1, seqs: DefaultSequences}, nil, ""},
		{"no trained ctx", noCtx, Options{ContextSize: 100000, Threads: 1}, resolved{ctx: 100000, batch: DefaultBatchSize, threads: 1, seqs: DefaultSequences}, nil, ""},
		{"batch capped by ctx", stories, Options{ContextSize: 64, BatchSize: 512, Threads: 1}, resolved{ctx: 64, batch: 64, threads: 1, seqs: DefaultSequences}, nil, ""},
		{"exact trained ctx", stories, Options{ContextSize: 2048, BatchSize: 7, Threads: 2}, resolved{ctx: 2048, batch: 7, threads: 2, seqs: DefaultSequences}, nil, ""},
		{"ctx too large", stories, Options{ContextSize: 4096}, resolved{}, ErrContextTooLarge, "ContextSize 4096 > 2048 (llama.context_length)"},
		{"negative ctx", stories, Options{ContextSize: -1}, resolved{}, ErrBadOptions, "ContextSize -1"},
		{"batch too large", stories, Options{BatchSize: MaxBatchSize + 1}, resolved{}, ErrBadOptions, "BatchSize 8193"},
		{"negative threads", stories, Options{Threads: -2}, resolved{}, ErrBadOptions, "Threads -2"},
		{"sequences", stories, Options{Sequences: 16, Threads: 1}, resolved{ctx: 2048, batch: DefaultBatchSize, threads: 1, seqs: 16}, nil, ""},
		{"too many sequences", stories, Options{Sequences: MaxSequences + 1}, resolved{}, ErrBadOptions, "Sequences 257"},
		{"sequences beyond the context", stories, Options{ContextSize: 8, Sequences: 9}, resolved{}, ErrBadOptions, "9 sequences in a context of 8"},
		{"vocab-only file", vocabOnly, Options{}, resolved{}, ErrLlama, "Options.VocabOnly"},
		{"vocab-only load", vocabOnly, Options{VocabOnly: true, Threads: 1}, resolved{ctx: 4096, batch: DefaultBatchSize, threads: 1, seqs: DefaultSequences}, nil, ""},
		{"encoder", bert, Options{}, resolved{}, ErrUnsupportedArch, "encoder"},
		{"encoder vocab", bert, Options{VocabOnly: true, Threads: 1}, resolved{ctx: 512, batch: 512, threads: 1, seqs: DefaultSequences}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.opts.resolve(tc.info)
			switch {
			case tc.err == nil && err != nil:
				t.Fatalf("resolve: %v", err)
			case tc.err == nil && got != tc.want:
				t.Fatalf("resolve = %+v, want %+v", got, tc.want)
			case tc.err != nil && (!errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg)):
				t.Fatalf("resolve = %v, want %v saying %q", err, tc.err, tc.msg)
			}
		})
	}
}

func TestErrKVCacheFullIsContextFull(t *testing.T) {
	if !errors.Is(ErrKVCacheFull, engine.ErrContextFull) {
		t.Fatal("ErrKVCacheFull does not wrap engine.ErrContextFull")
	}
}

// TestArchListMatchesLlamaCpp keeps supportedArch in step with
// LLM_ARCH_NAMES of the pinned llama.cpp source.
func TestArchListMatchesLlamaCpp(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ollama/ollama").Output()
	if err != nil {
		t.Skipf("skipping: cannot locate the ollama module: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "llama", "llama.cpp", "src", "llama-arch.cpp"))
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	block := string(src)
	start := strings.Index(block, "LLM_ARCH_NAMES = {")
	if start < 0 {
		t.Fatal("LLM_ARCH_NAMES not found in llama-arch.cpp")
	}
	block = block[start : start+strings.Index(block[start:], "};")]
	var want []string
	for _, m := range regexp.MustCompile(`\{\s*LLM_ARCH_\w+,\s*"([^"]+)"\s*\}`).FindAllStringSubmatch(block, -1) {
		if name := m[1]; name != "clip" && name != "(unknown)" {
			want = append(want, name)
		}
	}
	var got []string
	for name := range supportedArch {
		got = append(got, name)
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("supportedArch differs from llama-arch.cpp:\n got %v\nwant %v", got, want)
	}
	for name := range encoderArch {
		if !supportedArch[name] {
			t.Errorf("encoderArch %q is not a supported architecture", name)
		}
	}
}
