package llamacpp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/internal/ggufcheck"
)

// Errors a *LoadError or a Model method wraps; test with errors.Is.
var (
	// ErrNotGGUF: the file does not start with the GGUF magic.
	ErrNotGGUF = ggufcheck.ErrNotGGUF
	// ErrCorrupt: the GGUF header cannot be read (bad version, bad
	// key/value or tensor table).
	ErrCorrupt = ggufcheck.ErrMalformed
	// ErrTruncated: the file ends before its header or its tensor data.
	ErrTruncated = ggufcheck.ErrTruncated
	// ErrUnsupportedArch: general.architecture is missing or not one
	// llama.cpp (as pinned) can run as a text generator.
	ErrUnsupportedArch = errors.New("unsupported model architecture")
	// ErrContextTooLarge: Options.ContextSize exceeds the context the
	// model was trained with.
	ErrContextTooLarge = errors.New("context size larger than the model's trained context")
	// ErrBadOptions: a negative or out-of-range field in Options.
	ErrBadOptions = errors.New("invalid options")
	// ErrLlama: llama.cpp refused the model or the context; the message
	// carries the last lines llama.cpp logged.
	ErrLlama = errors.New("llama.cpp failed")

	// ErrKVCacheFull: llama_decode found no KV cache slot for a batch, or
	// the batch would go past Options.ContextSize. It wraps
	// engine.ErrContextFull.
	ErrKVCacheFull = fmt.Errorf("KV cache full: %w", engine.ErrContextFull)
	// ErrVocabOnly: Decode, Logits and Truncate on a model loaded with
	// Options.VocabOnly.
	ErrVocabOnly = errors.New("model loaded vocabulary-only: no weights to decode with")
	// ErrClosed: a method called after Close.
	ErrClosed = errors.New("model is closed")
)

// LoadError is the error of Load and Inspect: the file and what is wrong
// with it. Err wraps one of the sentinel errors above or an *fs.PathError.
type LoadError struct {
	Path string
	Err  error
}

func (e *LoadError) Error() string { return "llamacpp: load " + e.Path + ": " + e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// Options configure Load. The zero value is a usable default.
type Options struct {
	// ContextSize is the number of positions the KV cache holds; 0 means
	// min(the model's trained context, DefaultContextSize). Larger than
	// the trained context is an error (ErrContextTooLarge).
	ContextSize int
	// BatchSize is the most entries of one llama_decode call (n_batch and
	// n_ubatch); 0 means DefaultBatchSize.
	BatchSize int
	// Sequences is the number of sequences the context holds at once
	// (n_seq_max): concurrent generations of an engine, in one unified
	// KV cache of ContextSize cells; 0 means DefaultSequences.
	Sequences int
	// Threads is the number of CPU threads for decoding; 0 means
	// runtime.GOMAXPROCS(0), which (Go 1.25+) follows a container's CPU
	// limit where runtime.NumCPU() would count every core of the node.
	// More than one thread run in a pool of the adapter's own that does
	// not poll for work between decodes (ggml's default spins): the
	// engine's grammar workers run right after each decode, and spinning
	// threads took their cores (on 2 cores, batchbench's inter-token p99
	// fell from 40 to 8 ms and its concurrency-4 throughput rose 1.3–1.9×).
	Threads int
	// VocabOnly loads only the vocabulary (GGUFs without weights work):
	// the vocabulary and tokenizer methods work, Decode does not.
	VocabOnly bool
	// Progress, if set, is called with the fraction (0..1) of the weights
	// loaded so far, on the goroutine that called Load.
	Progress func(fraction float32)
}

// Limits and defaults.
const (
	// DefaultContextSize caps the default context: the KV cache grows
	// linearly with it (an 8B Llama-3 at F16 needs 128 KiB per position,
	// 512 MiB for 4096), and structured outputs rarely need more.
	DefaultContextSize = 4096
	// DefaultBatchSize is llama.cpp's own default n_batch. Larger prefill
	// batches gain little on a CPU and cost compute-buffer memory.
	DefaultBatchSize = 512
	// MaxBatchSize bounds BatchSize: llama.cpp sizes its compute buffers
	// for a full batch, which for a 128k vocabulary costs 512 KiB of
	// logits per token of batch.
	MaxBatchSize = 8192
	// MaxThreads bounds Threads; more threads than this only contend.
	MaxThreads = 512
	// DefaultSequences is how many generations share a context by
	// default: on a CPU, batches of 4 cost little more than 1 for small
	// models, and each sequence's default budget is ContextSize/Sequences.
	DefaultSequences = 4
	// MaxSequences is llama.cpp's own bound (LLAMA_MAX_SEQ).
	MaxSequences = 256
)

// FileInfo is what Inspect reads from a GGUF header.
type FileInfo struct {
	Path         string
	Size         int64  // bytes
	Version      uint32 // GGUF version (2 or 3)
	Arch         string // general.architecture
	TrainContext int    // <arch>.context_length; 0 when absent
	Tensors      int    // number of tensors (0 for a vocabulary-only file)
}

// decodeHeader runs fs/ggml's reader (array values skipped) on a header
// ggufcheck.Check accepted, turning a panic on input Check did not foresee
// into an error.
func decodeHeader(f *os.File) (g *ggml.GGML, err error) {
	defer func() {
		if r := recover(); r != nil {
			g, err = nil, fmt.Errorf("%w: the GGUF reader failed: %v", ErrCorrupt, r)
		}
	}()
	g, err = ggml.Decode(f, 0)
	switch {
	case err == nil:
		return g, nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%w: %v", ErrTruncated, err)
	case strings.Contains(err.Error(), "exceeds file size"):
		// fs/ggml checks every tensor's data against the file size.
		return nil, fmt.Errorf("%w: %v", ErrTruncated, err)
	default:
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
}

// Inspect checks that path is a GGUF file llama.cpp can load, reading its
// header in Go: the magic, the version, the key/value and tensor tables,
// that every tensor lies inside the file, and the architecture. It never
// calls into C, so it is safe on any input. Errors are *LoadError.
func Inspect(path string) (*FileInfo, error) {
	info, err := inspect(path)
	if err != nil {
		return nil, &LoadError{Path: path, Err: err}
	}
	return info, nil
}

func inspect(path string) (*FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%w: is a directory", ErrNotGGUF)
	}
	h, err := ggufcheck.Check(f, st.Size())
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	g, err := decodeHeader(f)
	if err != nil {
		return nil, err
	}
	kv := g.KV()
	info := &FileInfo{
		Path:    path,
		Size:    st.Size(),
		Version: h.Version,
		Arch:    kv.String("general.architecture", ""),
		Tensors: len(g.Tensors().Items()),
	}
	if info.Arch == "" {
		return nil, fmt.Errorf("%w: the file has no general.architecture", ErrUnsupportedArch)
	}
	if !supportedArch[info.Arch] {
		return nil, fmt.Errorf("%w %q (llama.cpp as pinned in go.mod does not know it)", ErrUnsupportedArch, info.Arch)
	}
	// llama.cpp indexes its vocabulary with default special ids before it
	// checks them against the vocabulary size.
	if n := h.Arrays["tokenizer.ggml.tokens"]; n < minVocabTokens {
		return nil, fmt.Errorf("%w: the vocabulary (tokenizer.ggml.tokens) has %d tokens; llama.cpp needs at least %d", ErrCorrupt, n, minVocabTokens)
	}
	// The context length is a uint32 in GGUF; ContextLength reads only
	// that type, so a malformed key reads as absent.
	info.TrainContext = int(kv.ContextLength())
	return info, nil
}

// minVocabTokens is the smallest vocabulary handed to llama.cpp: its
// default special-token ids reach 103 (WordPiece [MASK]) and it reads
// them before checking them against the vocabulary size (a 3-token GPT-2
// vocabulary crashes it while it lists the end-of-generation tokens).
const minVocabTokens = 104

// resolved is Options with defaults filled in and checked against a file.
type resolved struct {
	ctx, batch, threads, seqs int
}

func (o Options) resolve(info *FileInfo) (resolved, error) {
	r := resolved{ctx: o.ContextSize, batch: o.BatchSize, threads: o.Threads, seqs: o.Sequences}
	switch {
	case o.ContextSize < 0:
		return r, fmt.Errorf("%w: ContextSize %d is negative", ErrBadOptions, o.ContextSize)
	case o.BatchSize < 0 || o.BatchSize > MaxBatchSize:
		return r, fmt.Errorf("%w: BatchSize %d is outside 0..%d", ErrBadOptions, o.BatchSize, MaxBatchSize)
	case o.Threads < 0 || o.Threads > MaxThreads:
		return r, fmt.Errorf("%w: Threads %d is outside 0..%d", ErrBadOptions, o.Threads, MaxThreads)
	case o.Sequences < 0 || o.Sequences > MaxSequences:
		return r, fmt.Errorf("%w: Sequences %d is outside 0..%d (llama.cpp's LLAMA_MAX_SEQ)", ErrBadOptions, o.Sequences, MaxSequences)
	}
	if !o.VocabOnly {
		if encoderArch[info.Arch] {
			return r, fmt.Errorf("%w %q: an encoder (embedding) model cannot generate text", ErrUnsupportedArch, info.Arch)
		}
		if info.Tensors == 0 {
			return r, fmt.Errorf("%w: the file has no tensors (a vocabulary-only GGUF: load it with Options.VocabOnly)", ErrLlama)
		}
	}
	if r.ctx == 0 {
		r.ctx = DefaultContextSize
		if info.TrainContext > 0 {
			r.ctx = min(r.ctx, info.TrainContext)
		}
	} else if info.TrainContext > 0 && r.ctx > info.TrainContext {
		return r, fmt.Errorf("%w: ContextSize %d > %d (%s.context_length)", ErrContextTooLarge, r.ctx, info.TrainContext, info.Arch)
	}
	if r.batch == 0 {
		r.batch = DefaultBatchSize
	}
	r.batch = min(r.batch, r.ctx)
	if r.threads == 0 {
		r.threads = runtime.GOMAXPROCS(0)
	}
	if r.seqs == 0 {
		r.seqs = DefaultSequences
	}
	if r.seqs > r.ctx {
		return r, fmt.Errorf("%w: %d sequences in a context of %d positions", ErrBadOptions, r.seqs, r.ctx)
	}
	return r, nil
}

// supportedArch lists the architectures of LLM_ARCH_NAMES in
// llama.cpp/src/llama-arch.cpp of ollama v0.24.0, without "clip" (a dummy
// used only by llama-quantize). TestArchListMatchesLlamaCpp keeps it in
// step with the pinned source.
var supportedArch = setOf(
	"llama", "llama4", "deci", "falcon", "grok", "gpt2", "gptj", "gptneox",
	"mpt", "baichuan", "starcoder", "refact", "bert", "nomic-bert",
	"nomic-bert-moe", "neo-bert", "jina-bert-v2", "jina-bert-v3", "bloom",
	"stablelm", "qwen", "qwen2", "qwen2moe", "qwen2vl", "qwen3", "qwen3moe",
	"qwen3next", "qwen3vl", "qwen3vlmoe", "phi2", "phi3", "phimoe", "plamo",
	"plamo2", "codeshell", "orion", "internlm2", "minicpm", "minicpm3",
	"gemma", "gemma2", "gemma3", "gemma3n", "gemma-embedding", "starcoder2",
	"mamba", "mamba2", "jamba", "falcon-h1", "xverse", "command-r",
	"cohere2", "dbrx", "olmo", "olmo2", "olmoe", "openelm", "arctic",
	"deepseek", "deepseek2", "chatglm", "glm4", "glm4moe", "bitnet", "t5",
	"t5encoder", "jais", "nemotron", "nemotron_h", "nemotron_h_moe", "exaone",
	"exaone4", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7", "granite",
	"granitemoe", "granitehybrid", "chameleon", "solar", "wavtokenizer-dec",
	"plm", "bailingmoe", "bailingmoe2", "dots1", "arcee", "afmoe", "ernie4_5",
	"ernie4_5-moe", "hunyuan-moe", "hunyuan-dense", "smollm3", "gpt-oss",
	"lfm2", "lfm2moe", "dream", "smallthinker", "llada", "llada-moe",
	"seed_oss", "grovemoe", "apertus", "minimax-m2", "cogvlm", "rnd1",
	"pangu-embedded", "mistral3",
)

// encoderArch are architectures llama.cpp runs as encoders (embeddings,
// an encoder-decoder, an audio decoder): their vocabularies load, but
// they do not produce next-token logits through llama_decode.
var encoderArch = setOf(
	"bert", "nomic-bert", "nomic-bert-moe", "neo-bert", "jina-bert-v2",
	"jina-bert-v3", "gemma-embedding", "t5", "t5encoder", "wavtokenizer-dec",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
