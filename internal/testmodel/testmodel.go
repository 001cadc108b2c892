// Package testmodel writes small random-weight GGUF models with real
// tokenizer vocabularies, so tests can run llama.cpp at a realistic
// vocabulary size (Llama-3: 128,256 tokens) without shipping weights. The
// weights are deterministic for a seed; the output is noise, but the
// vocabulary, tokenizer, special tokens and chat template are the real
// ones, and the cost of the output layer is that of a 128k vocabulary.
//
// It is pure Go (github.com/ollama/ollama/fs/ggml WriteGGUF) and only for
// tests and benchmarks.
package testmodel

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/x448/float16"
)

// GGUF token types (tokenizer.ggml.token_type), as llama.cpp reads them.
const (
	TypeNormal      int32 = 1
	TypeUnknown     int32 = 2
	TypeControl     int32 = 3
	TypeUserDefined int32 = 4
	TypeUnused      int32 = 5
	TypeByte        int32 = 6
)

// Vocab is a tokenizer as a GGUF file stores it.
type Vocab struct {
	Model  string   // tokenizer.ggml.model, e.g. "gpt2" (byte-level BPE)
	Pre    string   // tokenizer.ggml.pre, e.g. "llama-bpe"
	Tokens []string // token text as stored (byte-level BPE: GPT-2's byte↔unicode map)
	Types  []int32  // one of the Type constants per token
	Merges []string // BPE merges, "a b"
	BOS    int32    // -1: none
	EOS    int32    // -1: none
	EOT    int32    // -1: none
	AddBOS bool
	// ChatTemplate is the Jinja chat template; "" for none.
	ChatTemplate string
}

// Llama-3 vocabulary layout: 128,000 byte-level BPE tokens, then 256
// special tokens.
const (
	Llama3Regular       = 128000
	Llama3Size          = 128256
	Llama3BOS     int32 = 128000 // <|begin_of_text|>
	Llama3EOS     int32 = 128001 // <|end_of_text|>
	Llama3EOM     int32 = 128008 // <|eom_id|>
	Llama3EOT     int32 = 128009 // <|eot_id|>
)

// Llama3ChatTemplate is Meta's Llama-3 Instruct chat template.
const Llama3ChatTemplate = "{% set loop_messages = messages %}{% for message in loop_messages %}" +
	"{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}" +
	"{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"

// Llama3Special returns the names of the 256 special tokens 128000..128255
// of Llama 3.1/3.2.
func Llama3Special() []string {
	names := []string{
		"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
		"<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
		"<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
		"<|eom_id|>", "<|eot_id|>", "<|python_tag|>",
	}
	for i := 3; len(names) < Llama3Size-Llama3Regular; i++ {
		names = append(names, fmt.Sprintf("<|reserved_special_token_%d|>", i))
	}
	return names
}

// Llama3Vocab reads the Llama-3 vocabulary from dir, which holds
// encoder.json (128,000 tokens → id) and vocab.bpe (the merges), as in
// ../shared/corpus/vocab/hf/llama3.2 or ollama's tokenizer/testdata/llama3.2,
// and adds the 256 special tokens.
func Llama3Vocab(dir string) (*Vocab, error) {
	enc, err := os.ReadFile(filepath.Join(dir, "encoder.json"))
	if err != nil {
		return nil, err
	}
	var ids map[string]int32
	if err := json.Unmarshal(enc, &ids); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "encoder.json"), err)
	}
	if len(ids) != Llama3Regular {
		return nil, fmt.Errorf("%s: %d tokens, want %d", filepath.Join(dir, "encoder.json"), len(ids), Llama3Regular)
	}
	v := &Vocab{
		Model:        "gpt2",
		Pre:          "llama-bpe",
		Tokens:       make([]string, Llama3Size),
		Types:        make([]int32, Llama3Size),
		BOS:          Llama3BOS,
		EOS:          Llama3EOT, // the Instruct models' end of turn
		EOT:          Llama3EOT,
		AddBOS:       true,
		ChatTemplate: Llama3ChatTemplate,
	}
	for tok, id := range ids {
		if id < 0 || id >= Llama3Regular || v.Tokens[id] != "" {
			return nil, fmt.Errorf("%s: token %q has id %d (out of range or duplicate)", filepath.Join(dir, "encoder.json"), tok, id)
		}
		v.Tokens[id] = tok
		v.Types[id] = TypeNormal
	}
	for i, name := range Llama3Special() {
		v.Tokens[Llama3Regular+i] = name
		v.Types[Llama3Regular+i] = TypeControl
	}
	bpe, err := os.ReadFile(filepath.Join(dir, "vocab.bpe"))
	if err != nil {
		return nil, err
	}
	for i, line := range strings.Split(string(bpe), "\n") {
		if line == "" || (i == 0 && strings.HasPrefix(line, "#version")) {
			continue
		}
		if strings.Count(line, " ") != 1 {
			return nil, fmt.Errorf("%s:%d: a merge is two tokens separated by one space, got %q", filepath.Join(dir, "vocab.bpe"), i+1, line)
		}
		v.Merges = append(v.Merges, line)
	}
	return v, nil
}

// byteDecoder inverts GPT-2's bytes_to_unicode map: printable bytes stand
// for themselves, the other 68 are shifted to U+0100 and up.
var byteDecoder = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}()

// DecodeByteLevel turns a byte-level BPE token's text into its raw bytes.
func DecodeByteLevel(tok string) ([]byte, error) {
	out := make([]byte, 0, len(tok))
	for i, r := range tok {
		b, ok := byteDecoder[r] // U+FFFD (invalid UTF-8) is not in the map
		if !ok {
			return nil, fmt.Errorf("token %q: %U at byte %d is not in GPT-2's byte map", tok, r, i)
		}
		out = append(out, b)
	}
	return out, nil
}

// RawTokens returns the raw bytes of every token of a byte-level BPE
// vocabulary, with nil for control and unused tokens (grammar text never
// produces them).
func (v *Vocab) RawTokens() ([][]byte, error) {
	out := make([][]byte, len(v.Tokens))
	for i, t := range v.Tokens {
		if v.Types[i] == TypeControl || v.Types[i] == TypeUnused {
			continue
		}
		b, err := DecodeByteLevel(t)
		if err != nil {
			return nil, fmt.Errorf("token %d: %w", i, err)
		}
		out[i] = b
	}
	return out, nil
}

// LlamaConfig describes a random-weight Llama model.
type LlamaConfig struct {
	Vocab   *Vocab
	Layers  int    // transformer blocks
	Dim     int    // embedding size
	Heads   int    // attention heads (Dim must be a multiple)
	KVHeads int    // key/value heads (Heads must be a multiple)
	FFN     int    // feed-forward size
	Context int    // trained context length (llama.context_length)
	Seed    uint64 // weights are a function of the seed
}

// SmallLlama is a 2-block, 64-wide Llama: tiny in compute except for the
// vocabulary-sized embedding and output (shared) matrix.
func SmallLlama(v *Vocab) LlamaConfig {
	return LlamaConfig{Vocab: v, Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, FFN: 192, Context: 4096, Seed: 1}
}

func (c LlamaConfig) check() error {
	switch {
	case c.Vocab == nil || len(c.Vocab.Tokens) == 0:
		return errors.New("testmodel: no vocabulary")
	case len(c.Vocab.Types) != len(c.Vocab.Tokens):
		return fmt.Errorf("testmodel: %d token types for %d tokens", len(c.Vocab.Types), len(c.Vocab.Tokens))
	case c.Layers <= 0 || c.Dim <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.FFN <= 0 || c.Context <= 0:
		return fmt.Errorf("testmodel: every size must be positive: %+v", c)
	case c.Dim%c.Heads != 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("testmodel: Dim %d, Heads %d, KVHeads %d do not divide", c.Dim, c.Heads, c.KVHeads)
	}
	return nil
}

// WriteLlama writes the model to path as GGUF (token embeddings F16, tied
// with the output layer as in Llama 3.2 1B/3B; the rest F32).
func WriteLlama(path string, c LlamaConfig) error {
	if err := c.check(); err != nil {
		return err
	}
	v := c.Vocab
	headDim := c.Dim / c.Heads
	kv := ggml.KV{
		"general.architecture":                   "llama",
		"general.name":                           "structgen random llama",
		"llama.context_length":                   uint32(c.Context),
		"llama.embedding_length":                 uint32(c.Dim),
		"llama.block_count":                      uint32(c.Layers),
		"llama.feed_forward_length":              uint32(c.FFN),
		"llama.attention.head_count":             uint32(c.Heads),
		"llama.attention.head_count_kv":          uint32(c.KVHeads),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.rope.freq_base":                   float32(500000),
		"llama.rope.dimension_count":             uint32(headDim),
		"llama.vocab_size":                       uint32(len(v.Tokens)),
		"tokenizer.ggml.model":                   v.Model,
		"tokenizer.ggml.tokens":                  v.Tokens,
		"tokenizer.ggml.token_type":              v.Types,
		"tokenizer.ggml.add_bos_token":           v.AddBOS,
	}
	if v.Pre != "" {
		kv["tokenizer.ggml.pre"] = v.Pre
	}
	if len(v.Merges) > 0 {
		kv["tokenizer.ggml.merges"] = v.Merges
	}
	for key, id := range map[string]int32{"bos": v.BOS, "eos": v.EOS, "eot": v.EOT} {
		if id >= 0 {
			kv["tokenizer.ggml."+key+"_token_id"] = uint32(id)
		}
	}
	if v.ChatTemplate != "" {
		kv["tokenizer.chat_template"] = v.ChatTemplate
	}

	seed := c.Seed
	next := func() uint64 { seed++; return seed }
	// Weights ~ N(0, std²) with std 1/sqrt(fan-in), so activations keep
	// their scale through the blocks; norms are 1.
	dense := func(name string, in, out int) *ggml.Tensor {
		return tensor(name, ggml.TensorTypeF32, []uint64{uint64(in), uint64(out)}, next(), float32(1/math.Sqrt(float64(in))))
	}
	ones := func(name string) *ggml.Tensor {
		return tensor(name, ggml.TensorTypeF32, []uint64{uint64(c.Dim)}, 0, 0)
	}
	ts := []*ggml.Tensor{
		// Embeddings with std 1 give logits (tied output) of a few units.
		tensor("token_embd.weight", ggml.TensorTypeF16, []uint64{uint64(c.Dim), uint64(len(v.Tokens))}, next(), 1),
		ones("output_norm.weight"),
	}
	kvDim := headDim * c.KVHeads
	for l := range c.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			ones(p+"attn_norm.weight"),
			dense(p+"attn_q.weight", c.Dim, c.Dim),
			dense(p+"attn_k.weight", c.Dim, kvDim),
			dense(p+"attn_v.weight", c.Dim, kvDim),
			dense(p+"attn_output.weight", c.Dim, c.Dim),
			ones(p+"ffn_norm.weight"),
			dense(p+"ffn_gate.weight", c.Dim, c.FFN),
			dense(p+"ffn_up.weight", c.Dim, c.FFN),
			dense(p+"ffn_down.weight", c.FFN, c.Dim),
		)
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		f.Close()
		return fmt.Errorf("testmodel: write %s: %w", path, err)
	}
	return f.Close()
}

// tensor is a tensor whose data is N(0, std²) noise from seed, or all
// ones when std is 0.
func tensor(name string, kind ggml.TensorType, shape []uint64, seed uint64, std float32) *ggml.Tensor {
	n := uint64(1)
	for _, d := range shape {
		n *= d
	}
	return &ggml.Tensor{
		Name:     name,
		Kind:     uint32(kind),
		Shape:    shape,
		WriterTo: noise{n: n, f16: kind == ggml.TensorTypeF16, seed: seed, std: std},
	}
}

type noise struct {
	n    uint64
	f16  bool
	seed uint64
	std  float32
}

// chunkValues is how many values noise.WriteTo encodes per write.
const chunkValues = 1 << 14

func (z noise) WriteTo(w io.Writer) (int64, error) {
	rng := rand.New(rand.NewPCG(z.seed, 0x5eed))
	size := 4
	if z.f16 {
		size = 2
	}
	buf := make([]byte, 0, chunkValues*size)
	var total int64
	for left := z.n; left > 0; {
		k := min(left, chunkValues)
		buf = buf[:0]
		for range k {
			x := float32(1)
			if z.std != 0 {
				x = float32(rng.NormFloat64()) * z.std
			}
			if z.f16 {
				buf = binary.LittleEndian.AppendUint16(buf, float16.Fromfloat32(x).Bits())
			} else {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
		}
		n, err := w.Write(buf)
		total += int64(n)
		if err != nil {
			return total, err
		}
		left -= k
	}
	return total, nil
}

// WriteSmallLlama3 writes SmallLlama with the Llama-3 vocabulary of
// vocabDir (see Llama3Vocab) to path: the benchmarks' 128k-vocabulary
// model.
func WriteSmallLlama3(path, vocabDir string) error {
	v, err := Llama3Vocab(vocabDir)
	if err != nil {
		return err
	}
	return WriteLlama(path, SmallLlama(v))
}
