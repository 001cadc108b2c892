package vocab

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/ggufcheck"
)

// ggufFile builds a GGUF file for tests: version 3, little-endian.
type ggufFile struct {
	version uint32
	kvs     []ggufKV
	tensors []ggufTensor
	noData  bool // omit the tensor data
}

// GGUF value types.
const (
	ggufU8 = iota
	ggufI8
	ggufU16
	ggufI16
	ggufU32
	ggufI32
	ggufF32
	ggufBool
	ggufString
	ggufArray
	ggufU64
	ggufI64
	ggufF64
)

type ggufKV struct {
	key string
	val any // string, uint32, int32, uint64, bool, float32, []string, []int32, []float32, ggufRaw
}

// ggufRaw is a value written as-is after its type: for malformed files.
type ggufRaw struct {
	typ  uint32
	data []byte
}

type ggufTensor struct {
	name  string
	shape []uint64
	kind  uint32 // 0 = F32
}

func (g ggufFile) bytes() []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { binary.Write(&b, le, v) }
	str := func(s string) { w(uint64(len(s))); b.WriteString(s) }
	version := g.version
	if version == 0 {
		version = 3
	}
	b.WriteString("GGUF")
	w(version)
	w(uint64(len(g.tensors)))
	w(uint64(len(g.kvs)))
	for _, kv := range g.kvs {
		str(kv.key)
		switch v := kv.val.(type) {
		case string:
			w(uint32(ggufString))
			str(v)
		case uint32:
			w(uint32(ggufU32))
			w(v)
		case int32:
			w(uint32(ggufI32))
			w(v)
		case uint64:
			w(uint32(ggufU64))
			w(v)
		case bool:
			w(uint32(ggufBool))
			w(v)
		case float32:
			w(uint32(ggufF32))
			w(v)
		case []string:
			w(uint32(ggufArray))
			w(uint32(ggufString))
			w(uint64(len(v)))
			for _, s := range v {
				str(s)
			}
		case []int32:
			w(uint32(ggufArray))
			w(uint32(ggufI32))
			w(uint64(len(v)))
			w(v)
		case []float32:
			w(uint32(ggufArray))
			w(uint32(ggufF32))
			w(uint64(len(v)))
			w(v)
		case ggufRaw:
			w(v.typ)
			b.Write(v.data)
		default:
			panic("ggufFile: unsupported value type")
		}
	}
	var offset uint64
	for _, t := range g.tensors {
		str(t.name)
		w(uint32(len(t.shape)))
		w(t.shape)
		w(t.kind)
		w(offset)
		n := uint64(4)
		for _, d := range t.shape {
			n *= d
		}
		offset += (n + 31) / 32 * 32
	}
	if len(g.tensors) > 0 && !g.noData {
		for b.Len()%32 != 0 {
			b.WriteByte(0)
		}
		b.Write(make([]byte, offset))
	}
	return b.Bytes()
}

// spmFile is a small SentencePiece vocabulary with byte fallback.
func spmFile() ggufFile {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := range 256 {
		tokens = append(tokens, "<0x"+strings.ToUpper(hex2(byte(b)))+">")
		types = append(types, 6)
	}
	tokens = append(tokens, "▁Hello", "world▁", "▁", "<|im_start|>", "<unused0>", "[PAD264]", "spare", "", "<|user|>", "ing")
	types = append(types, 1, 1, 1, 3, 3, 4, 5, 1, 4, 1)
	return ggufFile{kvs: []ggufKV{
		{"general.architecture", "llama"},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.scores", make([]float32, len(tokens))},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.padding_token_id", uint32(math.MaxUint32)},
	}}
}

func hex2(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// bpeFile is a small byte-level BPE vocabulary.
func bpeFile() ggufFile {
	tokens := []string{"!", "Ġworld", "ĊĊ", "<|endoftext|>", "õ", "[PAD5]", "ÃŃ", "hello", "<|im_end|>", "<|channel|>", "<fim_pad>", "<|fim_prefix|>"}
	types := []int32{1, 1, 1, 3, 4, 4, 1, 1, 3, 3, 3, 4}
	return ggufFile{kvs: []ggufKV{
		{"general.architecture", "gpt2"},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "gpt-2"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", []string{"Ġ w", "o r"}},
		{"tokenizer.ggml.eos_token_id", uint32(3)},
	}}
}

// set returns a copy of g with key set to val (added if absent, removed
// if val is nil).
func (g ggufFile) set(key string, val any) ggufFile {
	kvs := slices.Clone(g.kvs)
	for i, kv := range kvs {
		if kv.key == key {
			if val == nil {
				return ggufFile{g.version, slices.Delete(kvs, i, i+1), g.tensors, g.noData}
			}
			kvs[i].val = val
			return ggufFile{g.version, kvs, g.tensors, g.noData}
		}
	}
	if val != nil {
		kvs = append(kvs, ggufKV{key, val})
	}
	return ggufFile{g.version, kvs, g.tensors, g.noData}
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func loadBytes(t *testing.T, name string, data []byte) (*Vocab, string, error) {
	t.Helper()
	p := writeTemp(t, name, data)
	v, err := LoadVocab(p)
	return v, p, err
}

type tokWant struct {
	id   int32
	text string
	kind TokenKind
}

func checkTokens(t *testing.T, v *Vocab, want []tokWant) {
	t.Helper()
	for _, w := range want {
		if got := string(v.Token(w.id)); got != w.text || v.Kind(w.id) != w.kind {
			t.Errorf("token %d = %q (%v), want %q (%v)", w.id, got, v.Kind(w.id), w.text, w.kind)
		}
	}
}

func TestGGUFSentencePiece(t *testing.T) {
	v, _, err := loadBytes(t, "spm.gguf", spmFile().bytes())
	if err != nil {
		t.Fatal(err)
	}
	if v.Size() != 269 {
		t.Fatalf("Size = %d, want 269", v.Size())
	}
	checkTokens(t, v, []tokWant{
		{0, "<unk>", TokenSpecial},
		{1, "<s>", TokenSpecial},
		{2, "</s>", TokenSpecial},
		{3, "\x00", TokenNormal},
		{3 + '\n', "\n", TokenNormal},
		{3 + 0xE2, "\xe2", TokenNormal},
		{259, " Hello", TokenNormal},
		{260, "world ", TokenNormal},
		{261, " ", TokenNormal},
		{262, "<|im_start|>", TokenSpecial},
		{263, "<unused0>", TokenUnused}, // control + "unused": llama.cpp's rule
		{264, "[PAD264]", TokenUnused},  // converter padding
		{265, "spare", TokenUnused},     // type 5
		{266, "", TokenUnused},          // empty
		{267, "<|user|>", TokenNormal},  // user-defined: verbatim text
		{268, "ing", TokenNormal},
	})
	if got := v.EOG(); !slices.Equal(got, []int32{2}) {
		t.Errorf("EOG = %v, want [2]", got)
	}
	if id, ok := v.Lookup("<|im_start|>"); !ok || id != 262 {
		t.Errorf("Lookup(<|im_start|>) = %d, %v", id, ok)
	}
}

func TestGGUFByteLevel(t *testing.T) {
	v, _, err := loadBytes(t, "bpe.gguf", bpeFile().bytes())
	if err != nil {
		t.Fatal(err)
	}
	checkTokens(t, v, []tokWant{
		{0, "!", TokenNormal},
		{1, " world", TokenNormal},
		{2, "\n\n", TokenNormal},
		{3, "<|endoftext|>", TokenSpecial},
		{4, "õ", TokenNormal},        // user-defined: verbatim UTF-8, not byte-level
		{5, "[PAD5]", TokenUnused},   // filler
		{6, "\xc3\xad", TokenNormal}, // "ÃŃ" = bytes C3 AD
		{8, "<|im_end|>", TokenSpecial},
		{9, "<|channel|>", TokenNormal}, // gpt-oss: llama.cpp renders it as text
		{10, "<fim_pad>", TokenSpecial},
		{11, "<|fim_prefix|>", TokenSpecial}, // user-defined, but found as FIM prefix: forced control
	})
	// eos 3, <|im_end|> by name, <fim_pad> as the FIM pad token.
	if got := v.EOG(); !slices.Equal(got, []int32{3, 8, 10}) {
		t.Errorf("EOG = %v, want [3 8 10]", got)
	}
}

func TestGGUFWordPiece(t *testing.T) {
	f := ggufFile{kvs: []ggufKV{
		{"general.architecture", "bert"},
		{"tokenizer.ggml.model", "bert"},
		{"tokenizer.ggml.tokens", []string{"[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "▁hello", "ing", "▁!", "[unused12x]"}},
		{"tokenizer.ggml.token_type", []int32{3, 1, 3, 3, 3, 1, 1, 1, 1}},
		{"tokenizer.ggml.seperator_token_id", uint32(4)},
	}}
	v, _, err := loadBytes(t, "bert.gguf", f.bytes())
	if err != nil {
		t.Fatal(err)
	}
	checkTokens(t, v, []tokWant{
		{0, "[PAD]", TokenSpecial},
		{1, "[unused0]", TokenUnused},
		{3, "[CLS]", TokenSpecial},
		{5, " hello", TokenNormal},
		{6, "ing", TokenNormal},
		{7, " !", TokenNormal},
		{8, "[unused12x]", TokenNormal}, // not a reserved-slot name
	})
	// BERT has no eos; llama.cpp finds "[PAD]" as the FIM pad token
	// (Kimi-K2's spelling) and so treats it as end of generation.
	if got := v.EOG(); !slices.Equal(got, []int32{0}) {
		t.Errorf("EOG = %v, want [0]", got)
	}
}

func TestGGUFEndOfGeneration(t *testing.T) {
	names := []string{"a", "<|return|>", "<|call|>", "<|end|>", "<|eot_id|>", "</s>", "<|eom_id|>", "<|file_sep|>", "b", "c", "d", "<x>"}
	types := []int32{1, 3, 3, 3, 1, 4, 3, 3, 1, 1, 1, 3}
	// Token 11 is a control token, so llama.cpp's BPE default eos (11)
	// applies when the metadata has none.
	base := ggufFile{kvs: []ggufKV{
		{"general.architecture", "gpt2"},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.tokens", names},
		{"tokenizer.ggml.token_type", types},
	}}
	normal11 := slices.Clone(types)
	normal11[11] = 1
	tests := []struct {
		name  string
		f     ggufFile
		want  []int32
		kinds []tokWant
	}{
		{
			// By name: <|return|>, <|call|>, <|eot_id|>, </s>,
			// <|eom_id|>; <|file_sep|> as the FIM separator; <|end|> is
			// dropped again because <|return|> and <|call|> are EOG
			// (gpt-oss) and becomes text. <|eot_id|> and </s> become
			// special although typed normal and user-defined. Token 11
			// is normal here: no default eos.
			"names", base.set("tokenizer.ggml.token_type", normal11), []int32{1, 2, 4, 5, 6, 7},
			[]tokWant{{3, "<|end|>", TokenNormal}, {4, "<|eot_id|>", TokenSpecial}, {5, "</s>", TokenSpecial}, {11, "<x>", TokenNormal}},
		},
		{"default eos if control", base, []int32{1, 2, 4, 5, 6, 7, 11}, nil},
		{"eos from metadata", base.set("tokenizer.ggml.eos_token_id", uint32(9)), []int32{1, 2, 4, 5, 6, 7, 9},
			[]tokWant{{9, "c", TokenSpecial}}},
		{"eos none", base.set("tokenizer.ggml.eos_token_id", uint32(math.MaxUint32)), []int32{1, 2, 4, 5, 6, 7, 11}, nil},
		{"eot and fim_pad from metadata", base.set("tokenizer.ggml.eot_token_id", int32(8)).set("tokenizer.ggml.fim_pad_token_id", uint32(10)),
			[]int32{1, 2, 4, 5, 6, 7, 8, 10, 11}, []tokWant{{8, "b", TokenSpecial}, {10, "d", TokenSpecial}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _, err := loadBytes(t, "eog.gguf", tt.f.bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got := v.EOG(); !slices.Equal(got, tt.want) {
				t.Errorf("EOG = %v, want %v", got, tt.want)
			}
			checkTokens(t, v, tt.kinds)
		})
	}
}

func TestGGUFErrors(t *testing.T) {
	tok3 := []string{"a", "b", "c"}
	model := func(kvs ...ggufKV) ggufFile {
		return ggufFile{kvs: append([]ggufKV{{"general.architecture", "llama"}, {"tokenizer.ggml.model", "llama"}}, kvs...)}
	}
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, 1<<40)
	arrHeader := func(et uint32, n uint64) []byte {
		b := binary.LittleEndian.AppendUint32(nil, et)
		return binary.LittleEndian.AppendUint64(b, n)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"wrong magic", []byte("GGML\x03\x00\x00\x00 and more bytes"), `not a GGUF file: it starts with "GGML"`},
		{"text file", []byte(`{"model": {}}`), `not a GGUF file: it starts with "{\"mo" (a text file)`},
		{"empty file", nil, "not a GGUF file: the file is only 0 bytes long"},
		{"version 1", ggufFile{version: 1, kvs: spmFile().kvs}.bytes(), "GGUF version 1 (readable: 2 to 3)"},
		{"huge key", append([]byte("GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"), huge...), "metadata pair 0: truncated GGUF file: metadata key at offset 32 is 1099511627776 bytes long"},
		{"huge string value", model(ggufKV{"x", ggufRaw{ggufString, huge}}).bytes(), `metadata "x"`},
		{"array too long", model(ggufKV{"x", ggufRaw{ggufArray, arrHeader(ggufU8, ggufcheck.MaxArrayLen+1)}}).bytes(), "an array of 16777217 elements (limit 16777216)"},
		{"array past end", model(ggufKV{"x", ggufRaw{ggufArray, arrHeader(ggufU32, 1000)}}).bytes(), "array data at offset"},
		{"nested array", model(ggufKV{"x", ggufRaw{ggufArray, arrHeader(ggufArray, 1)}}).bytes(), "arrays of arrays are not supported"},
		{"unknown type", model(ggufKV{"x", ggufRaw{13, nil}}).bytes(), "unknown value type 13"},
		{"alignment 0", model(ggufKV{"general.alignment", uint32(0)}).bytes(), "alignment must be a power of two"},
		{"5-d tensor", ggufFile{kvs: spmFile().kvs, tensors: []ggufTensor{{"t", []uint64{1, 1, 1, 1, 1}, 0}}}.bytes(), `tensor "t" has 5 dimensions (1 to 4)`},
		{"tensor past end", ggufFile{kvs: spmFile().kvs, tensors: []ggufTensor{{"t", []uint64{1 << 20}, 0}}, noData: true}.bytes(), `GGUF: tensor "t" offset+size (4200640) exceeds file size (6335)`},
		{"no model", ggufFile{kvs: []ggufKV{{"tokenizer.ggml.tokens", tok3}}}.bytes(), "missing metadata key tokenizer.ggml.model"},
		{"model not a string", ggufFile{kvs: []ggufKV{{"tokenizer.ggml.model", uint32(1)}}}.bytes(), "metadata tokenizer.ggml.model is not a string"},
		{"unsupported model", model().set("tokenizer.ggml.model", "rwkv").bytes(), `tokenizer.ggml.model = "rwkv" is not supported`},
		{"no tokens", model().bytes(), "missing metadata key tokenizer.ggml.tokens"},
		{"tokens not strings", model(ggufKV{"tokenizer.ggml.tokens", []int32{1, 2}}).bytes(), "tokenizer.ggml.tokens is not an array of strings"},
		{"no tokens in list", model(ggufKV{"tokenizer.ggml.tokens", []string{}}).bytes(), "empty vocabulary"},
		{"token types short", model(ggufKV{"tokenizer.ggml.tokens", tok3}, ggufKV{"tokenizer.ggml.token_type", []int32{1, 1}}).bytes(), "tokenizer.ggml.token_type has 2 entries for 3 tokens"},
		{"token types long", model(ggufKV{"tokenizer.ggml.tokens", tok3}, ggufKV{"tokenizer.ggml.token_type", []int32{1, 1, 1, 1}}).bytes(), "tokenizer.ggml.token_type has 4 entries for 3 tokens"},
		{"scores short", model(ggufKV{"tokenizer.ggml.tokens", tok3}, ggufKV{"tokenizer.ggml.scores", []float32{0, 0}}).bytes(), "tokenizer.ggml.scores has 2 entries for 3 tokens"},
		{"bytes after the metadata", append(model(ggufKV{"tokenizer.ggml.tokens", tok3}).bytes(), make([]byte, 40)...), "40 bytes follow the metadata"},
		{"token types not int32", model(ggufKV{"tokenizer.ggml.tokens", tok3}, ggufKV{"tokenizer.ggml.token_type", []float32{1, 1, 1}}).bytes(), "tokenizer.ggml.token_type is not an array of int32"},
		{"vocab_size mismatch", model(ggufKV{"tokenizer.ggml.tokens", tok3}, ggufKV{"llama.vocab_size", uint32(5)}).bytes(), "llama.vocab_size = 5 but tokenizer.ggml.tokens has 3 tokens"},
		{"eos out of range", model(ggufKV{"tokenizer.ggml.tokens", tok3}, ggufKV{"tokenizer.ggml.eos_token_id", uint32(9)}).bytes(), "tokenizer.ggml.eos_token_id = 9 is out of range (3 tokens)"},
		{"eos not an integer", model(ggufKV{"tokenizer.ggml.tokens", tok3}, ggufKV{"tokenizer.ggml.eos_token_id", "2"}).bytes(), "tokenizer.ggml.eos_token_id is a string, want an integer"},
		{"bad byte token", model(ggufKV{"tokenizer.ggml.tokens", []string{"a", "<0xZZ>"}}, ggufKV{"tokenizer.ggml.token_type", []int32{1, 6}}).bytes(), `tokenizer.ggml.tokens[1] = "<0xZZ>" has token type 6 (byte) but is not of the form <0xXX>`},
		{"undecodable byte-level", bpeFile().set("tokenizer.ggml.tokens", []string{"a", "b c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"}).bytes(), `tokenizer.ggml.tokens[1] = "b c": undecodable byte-level BPE text`},
		{"token too long", model(ggufKV{"tokenizer.ggml.tokens", []string{"a", strings.Repeat("b", MaxTokenLen+1)}}).bytes(), "limit MaxTokenLen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, p, err := loadBytes(t, "bad.gguf", tt.data)
			if err == nil {
				t.Fatalf("loaded %d tokens, want an error containing %q", v.Size(), tt.want)
			}
			var fe *VocabFileError
			if !errors.As(err, &fe) || fe.Path != p || !strings.HasPrefix(err.Error(), p+": ") {
				t.Errorf("err = %v, want a *VocabFileError naming %s", err, p)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestGGUFPatchedCount patches a file the way that used to load silently
// as another vocabulary: the scores array's count grows to swallow the
// token types that follow it (and the pair count drops by the pairs
// swallowed), so the file still parses, but without token types every
// special token would be read as normal text.
func TestGGUFPatchedCount(t *testing.T) {
	f := spmFile()
	n := len(f.kvs[2].val.([]string))
	scores := ggufKV{"tokenizer.ggml.scores", make([]float32, n)}
	types := f.kvs[3]
	// A string pair after the types pads the swallowed bytes to a
	// multiple of 4 (one float32 each).
	swallowed := func(pad string) []byte {
		return ggufFile{kvs: []ggufKV{types, {"x.pad", pad}}}.bytes()[24:]
	}
	pad := ""
	for len(swallowed(pad))%4 != 0 {
		pad += "."
	}
	extra := len(swallowed(pad)) / 4
	g := ggufFile{kvs: []ggufKV{f.kvs[0], f.kvs[1], f.kvs[2], scores, types, {"x.pad", pad}, f.kvs[6]}}
	data := g.bytes()
	// Patch: two pairs fewer, n+extra scores.
	binary.LittleEndian.PutUint64(data[16:], uint64(len(g.kvs)-2))
	at := bytes.Index(data, []byte("tokenizer.ggml.scores")) + len("tokenizer.ggml.scores") + 8
	binary.LittleEndian.PutUint64(data[at:], uint64(n+extra))
	if h, err := ggufcheck.Check(bytes.NewReader(data), int64(len(data))); err != nil || h.Arrays["tokenizer.ggml.scores"] != uint64(n+extra) {
		t.Fatalf("the patched file does not parse as intended: %v", err)
	}
	_, _, err := loadBytes(t, "patched.gguf", data)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("tokenizer.ggml.scores has %d entries for %d tokens", n+extra, n)) {
		t.Fatalf("patched scores count: %v", err)
	}
}

// TestGGUFEveryTruncation loads every prefix of a small GGUF file: each
// must fail with an error naming the file, never panic.
func TestGGUFEveryTruncation(t *testing.T) {
	for _, f := range []ggufFile{spmFile(), bpeFile()} {
		data := f.bytes()
		if _, err := loadGGUF("whole.gguf", bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatalf("whole file: %v", err)
		}
		for n := range len(data) {
			_, err := loadGGUF("cut.gguf", bytes.NewReader(data[:n]), int64(n))
			if err == nil {
				t.Fatalf("prefix of %d/%d bytes loaded without error", n, len(data))
			}
			if !strings.HasPrefix(err.Error(), "cut.gguf: ") {
				t.Fatalf("prefix of %d bytes: error %q does not name the file", n, err)
			}
		}
	}
}

func TestGGUFBigEndianAndTensors(t *testing.T) {
	// A file with tensors (a model, not a vocabulary-only file) loads;
	// only its metadata is read.
	f := spmFile()
	f.tensors = []ggufTensor{{"token_embd.weight", []uint64{8, 269}, 0}, {"output_norm.weight", []uint64{8}, 0}}
	v, _, err := loadBytes(t, "model.gguf", f.bytes())
	if err != nil {
		t.Fatal(err)
	}
	if v.Size() != 269 {
		t.Errorf("Size = %d, want 269", v.Size())
	}
}

// FuzzLoadGGUF: no input may panic or hang the GGUF loader, and whatever
// loads must be a consistent vocabulary.
func FuzzLoadGGUF(f *testing.F) {
	f.Add(spmFile().bytes())
	f.Add(bpeFile().bytes())
	f.Add(ggufFile{kvs: spmFile().kvs, tensors: []ggufTensor{{"t", []uint64{2, 2}, 0}}}.bytes())
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := loadGGUF("fuzz.gguf", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.gguf: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		checkVocabInvariants(t, v)
	})
}

// checkVocabInvariants checks what every Vocab guarantees.
func checkVocabInvariants(t *testing.T, v *Vocab) {
	t.Helper()
	if v.Size() <= 0 || v.Size() > MaxVocabSize {
		t.Fatalf("Size = %d", v.Size())
	}
	maxLen := 0
	for id := range int32(v.Size()) {
		tok, k := v.Token(id), v.Kind(id)
		if len(tok) > MaxTokenLen || k >= numTokenKinds || (k == TokenNormal && len(tok) == 0) {
			t.Fatalf("token %d: %q kind %v", id, tok, k)
		}
		if k == TokenNormal {
			maxLen = max(maxLen, len(tok))
		}
		if v.IsEOG(id) != slices.Contains(v.EOG(), id) || (v.IsEOG(id) && k != TokenSpecial) {
			t.Fatalf("token %d: IsEOG %v, EOG %v, kind %v", id, v.IsEOG(id), v.EOG(), k)
		}
	}
	if maxLen != v.MaxTokenLen() {
		t.Fatalf("MaxTokenLen = %d, want %d", v.MaxTokenLen(), maxLen)
	}
	if !slices.IsSorted(v.EOG()) {
		t.Fatalf("EOG %v not sorted", v.EOG())
	}
}
