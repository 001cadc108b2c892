package vocab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/structgen/structgen/internal/sharedtest"
)

// Synthetic Hugging Face files in the shapes real models use.
const (
	// Llama-3 / GPT-2 style: byte-level BPE.
	tjByteLevel = `{
  "version": "1.0",
  "added_tokens": [
    {"id": 4, "content": "<|begin_of_text|>", "special": true},
    {"id": 5, "content": "<|end_of_text|>", "special": true},
    {"id": 6, "content": "<|eot_id|>", "special": true},
    {"id": 7, "content": "<tool>", "special": false}
  ],
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true},
  "model": {"type": "BPE", "vocab": {"!": 0, "Ġworld": 1, "ĊĊ": 2, "hello\u0120": 3}, "merges": ["Ġ w", "o r"]}
}`
	// Llama-2 style: SentencePiece BPE with byte fallback.
	tjSentencePiece = `{
  "added_tokens": [
    {"id": 0, "content": "<unk>", "special": true},
    {"id": 1, "content": "<s>", "special": true},
    {"id": 2, "content": "</s>", "special": true}
  ],
  "decoder": {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "byte_fallback": true, "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "▁Hello": 4, "world": 5, "<0xE2>": 6}}
}`
	// T5 style: Unigram with a Metaspace decoder.
	tjUnigram = `{
  "added_tokens": [
    {"id": 0, "content": "<pad>", "special": true},
    {"id": 1, "content": "</s>", "special": true},
    {"id": 2, "content": "<unk>", "special": true}
  ],
  "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
  "model": {"type": "Unigram", "unk_id": 2, "vocab": [["<pad>", 0], ["</s>", 0], ["<unk>", 0], ["▁the", -1.5], ["s", -3.25]]}
}`
	// BERT style: WordPiece.
	tjWordPiece = `{
  "added_tokens": [
    {"id": 0, "content": "[PAD]", "special": true},
    {"id": 2, "content": "[UNK]", "special": true},
    {"id": 3, "content": "[CLS]", "special": true},
    {"id": 4, "content": "[SEP]", "special": true}
  ],
  "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "vocab": {"[PAD]": 0, "[unused0]": 1, "[UNK]": 2, "[CLS]": 3, "[SEP]": 4, "hello": 5, "##ing": 6, "!": 7, "##": 8}}
}`
)

func TestTokenizerJSON(t *testing.T) {
	tests := []struct {
		name   string
		json   string
		size   int
		eog    []int32
		tokens []tokWant
	}{
		{"byte-level", tjByteLevel, 8, []int32{5, 6}, []tokWant{
			{0, "!", TokenNormal}, {1, " world", TokenNormal}, {2, "\n\n", TokenNormal}, {3, "hello ", TokenNormal},
			{4, "<|begin_of_text|>", TokenSpecial}, {6, "<|eot_id|>", TokenSpecial},
			{7, "<tool>", TokenNormal}, // added, not special: verbatim text
		}},
		{"sentencepiece", tjSentencePiece, 7, []int32{2}, []tokWant{
			{0, "<unk>", TokenSpecial}, {1, "<s>", TokenSpecial}, {3, "\n", TokenNormal},
			{4, " Hello", TokenNormal}, {5, "world", TokenNormal}, {6, "\xe2", TokenNormal},
		}},
		{"unigram", tjUnigram, 5, []int32{1}, []tokWant{
			{0, "<pad>", TokenSpecial}, {3, " the", TokenNormal}, {4, "s", TokenNormal},
		}},
		{"wordpiece", tjWordPiece, 9, nil, []tokWant{
			{0, "[PAD]", TokenSpecial}, {1, " [unused0]", TokenUnused}, {5, " hello", TokenNormal},
			{6, "ing", TokenNormal}, {7, " !", TokenNormal},
			{8, " ##", TokenNormal}, // the bare prefix is a word of its own
		}},
		{"ids with holes", `{"decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0, "c": 2}}}`, 3, nil, []tokWant{
			{0, "a", TokenNormal}, {1, "", TokenUnused}, {2, "c", TokenNormal},
		}},
		{"no decoder, byte-level pre-tokenizer", `{"decoder": null, "pre_tokenizer": {"type": "ByteLevel"}, "model": {"vocab": {"Ġa": 0}}}`, 1, nil, []tokWant{
			{0, " a", TokenNormal},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _, err := loadBytes(t, "tokenizer.json", []byte(tt.json))
			var ne *NoEOGError
			if tt.eog == nil && errors.As(err, &ne) {
				v, err = ne.Vocab, nil // no end token: an error that holds the vocabulary
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Size() != tt.size {
				t.Errorf("Size = %d, want %d", v.Size(), tt.size)
			}
			if !slices.Equal(v.EOG(), tt.eog) && (len(v.EOG()) > 0 || len(tt.eog) > 0) {
				t.Errorf("EOG = %v, want %v", v.EOG(), tt.eog)
			}
			checkTokens(t, v, tt.tokens)
			checkVocabInvariants(t, v)
		})
	}
}

func TestTokenizerJSONConfigs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tokenizer.json", tjByteLevel)
	write("tokenizer_config.json", `{"eos_token": {"content": "!", "special": true}}`)
	write("generation_config.json", `{"eos_token_id": [3, 5]}`)
	for _, p := range []string{dir, filepath.Join(dir, "tokenizer.json")} {
		v, err := LoadVocab(p)
		if err != nil {
			t.Fatal(err)
		}
		// "!" from tokenizer_config.json, 3 and 5 from
		// generation_config.json, 6 by name; all of them special.
		if got := v.EOG(); !slices.Equal(got, []int32{0, 3, 5, 6}) {
			t.Errorf("%s: EOG = %v, want [0 3 5 6]", p, got)
		}
		checkTokens(t, v, []tokWant{{0, "!", TokenSpecial}, {3, "hello\u0120", TokenSpecial}})
	}
	write("generation_config.json", `{"eos_token_id": 6}`)
	write("tokenizer_config.json", `{"eos_token": "<|end_of_text|>"}`)
	v, err := LoadVocab(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.EOG(); !slices.Equal(got, []int32{5, 6}) {
		t.Errorf("EOG = %v, want [5 6]", got)
	}
}

func TestVocabDirs(t *testing.T) {
	gpt2 := map[string]string{
		"encoder.json": `{"!": 0, "Ġthe": 1, "<|endoftext|>": 2, "\u00c4\u010a": 3}`,
		"vocab.bpe":    "#version: 0.2\nĠ t\nĠt he\n",
	}
	qwen := map[string]string{
		"vocab.json":            `{"a": 0, "</s>": 1, "Ġb": 2}`,
		"merges.txt":            "#version: 0.2\r\nĠ b\r\n",
		"tokenizer_config.json": `{"added_tokens_decoder": {"3": {"content": "<|endoftext|>", "special": true}, "4": {"content": "<|im_start|>", "special": true}, "5": {"content": "<|im_end|>", "special": true}}, "eos_token": "<|endoftext|>"}`,
	}
	tests := []struct {
		name    string
		files   map[string]string
		size    int
		eog     []int32
		tokens  []tokWant
		wantErr string
	}{
		{"gpt2", gpt2, 4, []int32{2}, []tokWant{{1, " the", TokenNormal}, {2, "<|endoftext|>", TokenSpecial}, {3, "\xc4\n", TokenNormal}}, ""},
		// "</s>" is ordinary text in Qwen2's vocab.json: not EOG.
		{"qwen2", qwen, 6, []int32{3, 5}, []tokWant{{1, "</s>", TokenNormal}, {4, "<|im_start|>", TokenSpecial}}, ""},
		{"no merges", map[string]string{"vocab.json": `{"a": 0}`}, 0, nil, nil, "has vocab.json but no merges.txt"},
		{"bad merges", map[string]string{"encoder.json": `{"a": 0}`, "vocab.bpe": "#version: 0.2\na b\nab\n"}, 0, nil, nil, `vocab.bpe: line 3: "ab" is not a merge`},
		{"empty", map[string]string{"README.md": "hi"}, 0, nil, nil, "no vocabulary files"},
		{"encoder not an object", map[string]string{"encoder.json": "\n  [1, 2]", "vocab.bpe": ""}, 0, nil, nil, "encoder.json:2:3: want an object mapping token text to id"},
		{"encoder syntax", map[string]string{"encoder.json": "{\"a\": 0,\n \"b\" 1}", "vocab.bpe": ""}, 0, nil, nil, "encoder.json:2:6: want ':' after object key"},
		{"eos not in vocab", map[string]string{"vocab.json": `{"a": 0}`, "merges.txt": "", "tokenizer_config.json": `{"eos_token": "<eos>"}`}, 0, nil, nil, `tokenizer_config.json: eos_token "<eos>" is not in the vocabulary`},
		{"bad config", map[string]string{"vocab.json": `{"a": 0}`, "merges.txt": "", "tokenizer_config.json": `{"eos_token": 5}`}, 0, nil, nil, "tokenizer_config.json: eos_token is 5, want a string or an object"},
		{"bad generation config", map[string]string{"vocab.json": `{"a": 0}`, "merges.txt": "", "generation_config.json": `{"eos_token_id": [7]}`}, 0, nil, nil, "generation_config.json: eos_token_id 7 is not in the vocabulary (1 ids)"},
		// Without an end token (the Llama 3.2 folder): an error, not a
		// vocabulary whose EOG() is empty.
		{"no end token", map[string]string{"encoder.json": `{"!": 0, "Ġthe": 1}`, "vocab.bpe": ""}, 0, nil, nil, "no end-of-generation token among its 2 tokens"},
		// The slow tokenizers' files name and number the special tokens.
		{"special tokens files", map[string]string{
			"encoder.json":            `{"!": 0, "Ġthe": 1}`,
			"vocab.bpe":               "",
			"added_tokens.json":       `{"<|begin_of_text|>": 2, "<|end_of_text|>": 3, "<|eot_id|>": 4, "<tool>": 5, "plain": 6}`,
			"special_tokens_map.json": `{"bos_token": "<|begin_of_text|>", "eos_token": {"content": "<|end_of_text|>"}, "additional_special_tokens": ["<tool>"]}`,
		}, 7, []int32{3, 4}, []tokWant{{2, "<|begin_of_text|>", TokenSpecial}, {5, "<tool>", TokenSpecial}, {6, "plain", TokenNormal}}, ""},
		{"special map eos", map[string]string{
			"encoder.json":            `{"!": 0, "<eos>": 1}`,
			"vocab.bpe":               "",
			"special_tokens_map.json": `{"eos_token": "<eos>"}`,
		}, 2, []int32{1}, []tokWant{{1, "<eos>", TokenSpecial}}, ""},
		{"bad special map", map[string]string{"encoder.json": `{"!": 0}`, "vocab.bpe": "", "special_tokens_map.json": `{"eos_token": 3}`}, 0, nil, nil, "special_tokens_map.json: eos_token is 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			v, err := LoadVocab(dir)
			if tt.wantErr != "" {
				var fe *VocabFileError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &fe) || !strings.HasPrefix(fe.Path, dir) {
					t.Fatalf("err = %v, want a *VocabFileError in %s containing %q", err, dir, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Size() != tt.size || !slices.Equal(v.EOG(), tt.eog) {
				t.Errorf("Size = %d, EOG = %v; want %d, %v", v.Size(), v.EOG(), tt.size, tt.eog)
			}
			checkTokens(t, v, tt.tokens)
		})
	}
}

func TestTokenizerJSONErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"not a tokenizer", `{"foo": 1}`, `not a tokenizer.json: no "model" with a "vocab"`},
		{"not an object", `[1, 2, 3]`, "tokenizer.json:1:1: want a JSON object (found '[')"},
		{"syntax error", "{\n  \"model\": {\"vocab\": {\"a\": 0,}}\n}", "tokenizer.json:2:"},
		{"vocab syntax error", "{\"decoder\": {\"type\": \"ByteLevel\"},\n\"model\": {\"type\": \"BPE\",\n \"vocab\": {\"a\": 0, \"b\": 01}}}", "tokenizer.json:3:25: model.vocab: invalid number: leading zero"},
		{"vocab id not an integer", "{\"decoder\": {\"type\": \"ByteLevel\"},\n\"model\": {\"type\": \"BPE\",\n \"vocab\": {\"a\": 0, \"b\": 1.5}}}", "tokenizer.json:3:26: model.vocab: want an integer token id (found '.')"},
		{"unknown decoder", `{"decoder": {"type": "CTC"}, "model": {"type": "BPE", "vocab": {"a": 0}}}`, `decoder: decoder type "CTC" is not supported`},
		{"regex replace", `{"decoder": {"type": "Replace", "pattern": {"Regex": "x+"}, "content": " "}, "model": {"vocab": {"a": 0}}}`, `decoder "Replace" is supported only as a plain string`},
		{"mixed decoders", `{"decoder": {"type": "Sequence", "decoders": [{"type": "ByteLevel"}, {"type": "Metaspace"}]}, "model": {"vocab": {"a": 0}}}`, "mixes ByteLevel"},
		{"no decoder", `{"model": {"type": "BPE", "vocab": {"a": 0}}}`, "no decoder: cannot tell how token text maps to bytes"},
		{"unknown model", `{"decoder": {"type": "ByteLevel"}, "model": {"type": "Magic", "vocab": {"a": 0}}}`, `model.type "Magic" is not supported`},
		{"duplicate id", `{"decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}}`, `id 0 is used by both "a" and "b"`},
		{"negative id", `{"decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": -1}}}`, `token "a" has id -1, out of range`},
		{"huge id", `{"decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 99999999}}}`, `token "a" has id 99999999, out of range`},
		{"added without id", `{"added_tokens": [{"content": "<s>"}], "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0}}}`, `added_tokens[0] ("<s>") has no id`},
		{"undecodable", `{"decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a b": 0}}}`, `token 0 ("a b"): undecodable: character U+0020`},
		{"unigram entry", `{"decoder": {"type": "Metaspace"}, "model": {"type": "Unigram", "vocab": [["a", 0, 1]]}}`, "model.vocab[0]: want [piece, score], got 3 elements"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, p, err := loadBytes(t, "tokenizer.json", []byte(tt.json))
			if err == nil {
				t.Fatalf("loaded %d tokens, want an error containing %q", v.Size(), tt.want)
			}
			var fe *VocabFileError
			if !errors.As(err, &fe) || fe.Path != p || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want a *VocabFileError for %s containing %q", err, p, tt.want)
			}
		})
	}
}

func TestLoadVocabPaths(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		path, data, want string
	}{
		{filepath.Join(dir, "missing.gguf"), "", "no such file"},
		{filepath.Join(dir, "json.gguf"), `{"model": {}}`, `not a GGUF file: it starts with "{\"mo"`},
		{filepath.Join(dir, "vocab.txt"), "a\nb\n", "unknown vocabulary format"},
	}
	for _, tt := range tests {
		if tt.data != "" {
			if err := os.WriteFile(tt.path, []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := LoadVocab(tt.path)
		if err == nil || !strings.HasPrefix(err.Error(), tt.path+": ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadVocab(%s) = %v, want an error naming the file and containing %q", tt.path, err, tt.want)
		}
	}
}

func TestParseTokenIDObject(t *testing.T) {
	tests := []struct {
		in      string
		want    []hfEntry
		wantErr string
	}{
		{`{}`, nil, ""},
		{` { "a" : 1 , "b":-2 } `, []hfEntry{{"a", 1}, {"b", -2}}, ""},
		{`{"\"\\\/\b\f\n\r\t": 0}`, []hfEntry{{"\"\\/\b\f\n\r\t", 0}}, ""},
		{`{"\u0120\u00e9\ud83d\ude00": 7}`, []hfEntry{{"Ġé😀", 7}}, ""},
		{`{"\ud83d": 1, "\ude00x": 2}`, []hfEntry{{"\uFFFD", 1}, {"\uFFFDx", 2}}, ""}, // lone surrogates, as encoding/json
		{`{"a": 1, "a": 2}`, []hfEntry{{"a", 1}, {"a", 2}}, ""},                       // duplicates kept in order
		{`{"a": 1.5}`, nil, "want an integer token id"},
		{`{"a": 1e3}`, nil, "want an integer token id"},
		{`{"a": 012}`, nil, "leading zero"},
		{`{"a": 99999999999999999999}`, nil, "token id out of range"},
		{`{"a": "1"}`, nil, "want an integer token id"},
		{`{"a" 1}`, nil, "want ':'"},
		{`{"a": 1,}`, nil, "want a string"},
		{`{"a": 1`, nil, "want ',' or '}'"},
		{"{\"a\x01\": 1}", nil, "control character in string"},
		{"{\"a\xff\": 1}", nil, "invalid UTF-8"},
		{`{"\x": 1}`, nil, "invalid escape"},
		{`{"\u12": 1}`, nil, "invalid \\u escape"},
		{`{"abc`, nil, "unterminated string"},
		{`{} x`, nil, "unexpected data after the JSON value"},
		{``, nil, "want an object"},
	}
	for _, tt := range tests {
		got, err := parseTokenIDObject([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parse(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) && (len(got) > 0 || len(tt.want) > 0) {
			t.Errorf("parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseTokenIDObject cross-checks the specialised parser with
// encoding/json: on valid UTF-8 input both accept or both reject, and
// accepted objects have the same contents (last duplicate wins).
func FuzzParseTokenIDObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a": 1, "b": 2}`, `{"\u0120": -3}`, `{"\ud83d\ude00": 0}`, `{"a": 1.0}`, `{"a":01}`, ` {"x":1} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseTokenIDObject(data)
		var want map[string]int64
		jerr := json.Unmarshal(data, &want)
		if !utf8.Valid(data) {
			if err == nil && jerr != nil {
				t.Fatalf("accepted %q, encoding/json: %v", data, jerr)
			}
			return // encoding/json replaces invalid UTF-8; we reject it
		}
		if (err == nil) != (jerr == nil) {
			// encoding/json accepts a JSON null as an empty map.
			if jerr == nil && want == nil {
				return
			}
			t.Fatalf("%q: parser error %v, encoding/json error %v", data, err, jerr)
		}
		if err != nil {
			return
		}
		m := map[string]int64{}
		for _, e := range got {
			m[e.text] = e.id
		}
		if len(m) != len(want) {
			t.Fatalf("%q: %v, encoding/json %v", data, m, want)
		}
		for k, v := range want {
			if m[k] != v {
				t.Fatalf("%q: %v, encoding/json %v", data, m, want)
			}
		}
	})
}

// FuzzTokenizerJSON: no tokenizer.json may panic the loader, and whatever
// loads is a consistent vocabulary.
func FuzzTokenizerJSON(f *testing.F) {
	for _, s := range []string{tjByteLevel, tjSentencePiece, tjUnigram, tjWordPiece, `{"model": {"vocab": {"a": 0}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseTokenizerJSON(data, hfConfig{})
		if err == nil {
			checkVocabInvariants(t, v)
		}
	})
}

// FuzzJSONSkip cross-checks the syntax check of skipped values (the bulk
// of a tokenizer.json: merges) with json.Valid.
func FuzzJSONSkip(f *testing.F) {
	for _, s := range []string{`{"a": [1, -2.5e+3, true, false, null, "x\u00e9\n"]}`, `[]`, `{}`, `"\ud83d"`, `01`, `1.`, `-`, `[1,]`, `{"a" 1}`, `tru`, `1e`, ` [ [ ] ] `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := jsonScanner{data: data}
		err := p.skip(0)
		if err == nil {
			err = p.end()
		}
		if (err == nil) != json.Valid(data) {
			t.Fatalf("%q: skip error %v, json.Valid %v", data, err, json.Valid(data))
		}
	})
}

func TestJSONSkipDepth(t *testing.T) {
	deep := strings.Repeat("[", maxJSONDepth+2) + strings.Repeat("]", maxJSONDepth+2)
	p := jsonScanner{data: []byte(deep)}
	if err := p.skip(0); err == nil || !strings.Contains(err.Error(), "nested deeper than 10000") {
		t.Errorf("skip(%d-deep array) = %v, want the depth limit", maxJSONDepth+2, err)
	}
	ok := strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth)
	p = jsonScanner{data: []byte(ok)}
	if err := p.skip(0); err != nil {
		t.Errorf("skip(%d-deep array) = %v", maxJSONDepth, err)
	}
}

// The Llama 3.2 folder (encoder.json + vocab.bpe) lists only the regular
// tokens: LoadVocab says so instead of returning a vocabulary without end
// tokens, hands that vocabulary over in the error (its matchers still say
// when the grammar may end: mask's TestNoEOGVocab), and finds the end
// tokens once the folder has the special-token files.
func TestLlama32FolderEOG(t *testing.T) {
	src := sharedtest.Path(t, "corpus", "vocab", "hf", "llama3.2")
	_, err := LoadVocab(src)
	var ne *NoEOGError
	if !errors.As(err, &ne) || ne.Vocab.Size() != 128000 || len(ne.Vocab.EOG()) != 0 {
		t.Fatalf("LoadVocab(%s) = %v, want a *NoEOGError with the 128,000 regular tokens", src, err)
	}

	dir := t.TempDir()
	for _, f := range []string{"encoder.json", "vocab.bpe"} {
		if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	names := map[int]string{128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128006: "<|start_header_id|>",
		128007: "<|end_header_id|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>", 128010: "<|python_tag|>"}
	added := map[string]int{}
	for id := 128000; id < 128256; id++ {
		name, ok := names[id]
		if !ok {
			name = fmt.Sprintf("<|reserved_special_token_%d|>", id)
		}
		added[name] = id
	}
	b, _ := json.Marshal(added)
	if err := os.WriteFile(filepath.Join(dir, "added_tokens.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "special_tokens_map.json"), []byte(`{"bos_token":"<|begin_of_text|>","eos_token":"<|eot_id|>"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := LoadVocab(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v.Size() != 128256 || !slices.Equal(v.EOG(), []int32{128001, 128008, 128009}) || v.Kind(128006) != TokenSpecial {
		t.Errorf("Size %d, EOG %v, <|start_header_id|> %s; want 128256, [128001 128008 128009], special", v.Size(), v.EOG(), v.Kind(128006))
	}
}
