package vocab

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/structgen/structgen/internal/ggufcheck"
)

// GGUF token types (tokenizer.ggml.token_type), as llama.cpp's
// llama_token_type.
const (
	ggufTokenNormal      = 1
	ggufTokenUnknown     = 2
	ggufTokenControl     = 3
	ggufTokenUserDefined = 4
	ggufTokenUnused      = 5
	ggufTokenByte        = 6
)

// loadGGUF reads the vocabulary in the metadata of a GGUF file. path is
// only used in errors.
func loadGGUF(path string, r io.ReadSeeker, size int64) (*Vocab, error) {
	kv, h, err := decodeGGUF(r, size)
	if err == nil {
		err = checkGGUFLayout(kv, h, size)
	}
	if err != nil {
		return nil, &VocabFileError{Path: path, Err: err}
	}
	v, err := vocabFromGGUF(kv)
	if err != nil {
		return nil, &VocabFileError{Path: path, Err: err}
	}
	return v, nil
}

// decodeGGUF checks the structure of the GGUF header with
// ggufcheck.Check (ggml.Decode trusts the lengths it reads: it allocates
// before reading, divides by the alignment, panics on some malformed
// input) and then decodes it with ggml.Decode.
func decodeGGUF(r io.ReadSeeker, size int64) (kv ggml.KV, h *ggufcheck.Header, err error) {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, nil, err
	}
	if h, err = ggufcheck.Check(r, size); err != nil {
		return nil, nil, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, nil, err
	}
	defer func() {
		// Check rules out every input known to make ggml.Decode
		// panic; this is the safety net for unknown ones.
		if p := recover(); p != nil {
			kv, err = nil, fmt.Errorf("GGUF decoder failed: %v", p)
		}
	}()
	g, err := ggml.Decode(r, -1)
	if err != nil {
		return nil, nil, fmt.Errorf("GGUF: %w", err)
	}
	return g.KV(), h, nil
}

// Per-token metadata arrays: each has one entry per token.
var perTokenKeys = []string{keyTokenType, "tokenizer.ggml.scores"}

// checkGGUFLayout checks that the metadata describes the file exactly:
// every per-token array has the vocabulary's length, and a file without
// tensors ends with its metadata (but for alignment padding). A patched
// array count shifts everything after it; where the shifted bytes still
// parse, only these checks tell the file is not the vocabulary it
// claims to be.
func checkGGUFLayout(kv ggml.KV, h *ggufcheck.Header, size int64) error {
	n, ok := h.Arrays[keyTokens]
	if !ok {
		return nil // vocabFromGGUF names the missing key
	}
	for _, k := range perTokenKeys {
		if m, ok := h.Arrays[k]; ok && m != n {
			return fmt.Errorf("%s has %d entries for %d tokens", k, m, n)
		}
	}
	align := int64(32)
	if a, ok := kv.Value("general.alignment").(uint32); ok {
		align = int64(a)
	}
	if rest := size - h.DataFrom; h.Tensors == 0 && rest >= align {
		return fmt.Errorf("%d bytes follow the metadata (offset %d) of a file without tensors: the header's counts do not describe the file", rest, h.DataFrom)
	}
	return nil
}

// Metadata keys.
const (
	keyModel     = "tokenizer.ggml.model"
	keyPre       = "tokenizer.ggml.pre"
	keyTokens    = "tokenizer.ggml.tokens"
	keyTokenType = "tokenizer.ggml.token_type"
)

// vocabFromGGUF builds the vocabulary from decoded GGUF metadata.
func vocabFromGGUF(kv ggml.KV) (*Vocab, error) {
	model, ok := kv.Value(keyModel).(string)
	if !ok {
		return nil, missingOrWrong(kv, keyModel, "a string")
	}
	pre, _ := kv.Value(keyPre).(string)

	type decoding int
	const (
		spm       decoding = iota // ▁ → space, <0xXX> byte tokens
		byteLevel                 // GPT-2 byte↔unicode
		wordPiece                 // GGUF spells word starts "▁word" already
	)
	var dec decoding
	defaultEOS := int64(-1)
	switch model {
	case "llama":
		dec, defaultEOS = spm, 2
	case "t5":
		dec, defaultEOS = spm, 1
	case "gpt2":
		dec, defaultEOS = byteLevel, 11
		switch pre {
		case "gemma4", "granite-embed-multi-311m", "sarvam-moe":
			dec = spm // llama.cpp: BPE with escape_whitespaces
		}
	case "gemma4":
		dec = spm
	case "bert":
		dec = wordPiece
	default:
		return nil, fmt.Errorf("%s = %q is not supported (supported: llama, t5, gpt2, gemma4, bert)", keyModel, model)
	}

	texts := kv.Strings(keyTokens)
	if texts == nil {
		return nil, missingOrWrong(kv, keyTokens, "an array of strings")
	}
	n := len(texts)
	if err := checkSize(n); err != nil {
		return nil, fmt.Errorf("%s: %w", keyTokens, err)
	}
	arch, _ := kv.Value("general.architecture").(string)
	if vs, ok, err := ggufID(kv, arch+".vocab_size"); err != nil {
		return nil, err
	} else if ok && vs != int64(n) {
		return nil, fmt.Errorf("%s.vocab_size = %d but %s has %d tokens", arch, vs, keyTokens, n)
	}
	var types []int32
	if kv.Value(keyTokenType) != nil {
		types = kv.Ints(keyTokenType)
		if types == nil {
			return nil, missingOrWrong(kv, keyTokenType, "an array of int32")
		}
		if len(types) != n {
			return nil, fmt.Errorf("%s has %d entries for %d tokens", keyTokenType, len(types), n)
		}
	}
	typeOf := func(id int) int32 {
		if types == nil {
			return ggufTokenNormal
		}
		return types[id]
	}

	// Kinds, before the end-of-generation rules adjust them.
	kinds := make([]TokenKind, n)
	for id, text := range texts {
		switch t := typeOf(id); {
		case text == "":
			kinds[id] = TokenUnused // llama.cpp renames it "[EMPTY_<id>]"
		case t == ggufTokenNormal || t == ggufTokenByte:
			kinds[id] = TokenNormal
			if dec == wordPiece && isWordPieceUnused(text) {
				kinds[id] = TokenUnused
			}
		case t == ggufTokenUserDefined:
			kinds[id] = TokenNormal
			if isPadFiller(text, id) {
				kinds[id] = TokenUnused
			}
		case t == ggufTokenControl:
			kinds[id] = TokenSpecial
		case t == ggufTokenUnknown:
			kinds[id] = TokenSpecial
			if isPadFiller(text, id) {
				kinds[id] = TokenUnused
			}
		default: // unused, undefined: llama.cpp renders them as nothing
			kinds[id] = TokenUnused
		}
	}

	eog, err := ggufEOG(kv, texts, kinds, typeOf, defaultEOS)
	if err != nil {
		return nil, err
	}

	// Bytes.
	tokens := make([][]byte, n)
	buf := make([]byte, 0, n*8)
	for id, text := range texts {
		start := len(buf)
		switch {
		case kinds[id] != TokenNormal || typeOf(id) == ggufTokenUserDefined:
			buf = append(buf, text...) // names and added text, verbatim
		case typeOf(id) == ggufTokenByte:
			b, ok := byteToken(text)
			if !ok {
				return nil, fmt.Errorf("%s[%d] = %q has token type 6 (byte) but is not of the form <0xXX>", keyTokens, id, text)
			}
			buf = append(buf, b)
		case dec == byteLevel:
			var err error
			if buf, err = decodeByteLevel(buf, text); err != nil {
				return nil, fmt.Errorf("%s[%d] = %q: undecodable byte-level BPE text: %v", keyTokens, id, text, err)
			}
		default: // spm, wordPiece
			buf = appendUnescaped(buf, text)
		}
		tokens[id] = buf[start:len(buf):len(buf)]
	}
	v, err := NewVocabKinds(tokens, kinds, eog)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyTokens, err)
	}
	return v, nil
}

// appendUnescaped appends s with every "▁" replaced by a space.
func appendUnescaped(dst []byte, s string) []byte {
	for {
		i := strings.Index(s, spaceMarker)
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, ' ')
		s = s[i+len(spaceMarker):]
	}
}

// ggufEOG computes the end-of-generation ids as llama.cpp does, and marks
// the tokens llama.cpp forces to "control" as TokenSpecial in kinds.
func ggufEOG(kv ggml.KV, texts []string, kinds []TokenKind, typeOf func(int) int32, defaultEOS int64) ([]int32, error) {
	n := int64(len(texts))
	// Ids named in the metadata.
	ids := map[string]int64{}
	for _, k := range []string{"eos", "eot", "eom", "fim_pad", "fim_rep", "fim_sep"} {
		key := "tokenizer.ggml." + k + "_token_id"
		id, ok, err := ggufID(kv, key)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if id >= n {
			return nil, fmt.Errorf("%s = %d is out of range (%d tokens)", key, id, n)
		}
		ids[k] = id
	}
	if _, ok := ids["eos"]; !ok && defaultEOS >= 0 && defaultEOS < n && typeOf(int(defaultEOS)) == ggufTokenControl {
		ids["eos"] = defaultEOS
	}

	// Tokens found by name. Only the first token with a given name
	// counts (names are unique in a well-formed vocabulary).
	byName := map[string]int32{}
	for id, text := range texts {
		if isWellKnownName(text) {
			if _, dup := byName[text]; !dup {
				byName[text] = int32(id)
			}
		}
	}
	// detect finds token k by name when the metadata has no id for it,
	// and makes it special (llama.cpp forces such tokens to "control").
	detect := func(k string, names []string) {
		if _, ok := ids[k]; ok {
			return
		}
		best := ""
		for _, name := range names {
			if _, ok := byName[name]; ok && (best == "" || name < best) {
				best = name
			}
		}
		if best != "" {
			ids[k] = int64(byName[best])
			kinds[byName[best]] = TokenSpecial
		}
	}
	detect("eot", eotNames)
	detect("eom", eomNames)
	detect("fim_pre", fimPreNames)
	detect("fim_suf", fimSufNames)
	detect("fim_mid", fimMidNames)
	detect("fim_pad", fimPadNames)
	detect("fim_rep", fimRepNames)
	detect("fim_sep", fimSepNames)

	// llama.cpp: control tokens whose name contains "unused" are unused.
	for id, text := range texts {
		if kinds[id] == TokenSpecial && strings.Contains(text, "unused") {
			kinds[id] = TokenUnused
		}
	}

	var set eogSet
	for _, k := range []string{"fim_pad", "fim_rep", "fim_sep"} {
		if id, ok := ids[k]; ok {
			set.add(int32(id))
		}
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	slices.Sort(names) // llama.cpp walks its std::map in this order
	for _, name := range names {
		if eogNames[name] {
			set.add(byName[name])
		}
	}
	for _, k := range []string{"eos", "eot", "eom"} {
		if id, ok := ids[k]; ok {
			set.add(int32(id))
		}
	}
	// gpt-oss: llama.cpp renders these as text (user-defined).
	for _, name := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := byName[name]; ok {
			kinds[id] = TokenNormal
		}
	}
	applyEOGWorkarounds(&set, func(id int32) string { return texts[id] }, func(id int32, k TokenKind) { kinds[id] = k })
	for _, id := range set.ids {
		kinds[id] = TokenSpecial
	}
	return set.ids, nil
}

var (
	fimPreNames = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufNames = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidNames = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}

	// wellKnownNames are all the names above; wellKnownMaxLen is the
	// longest, to skip the map for longer tokens.
	wellKnownNames, wellKnownMaxLen = func() (map[string]bool, int) {
		m := map[string]bool{"<|channel|>": true, "<|message|>": true, "<|start|>": true, "<|constrain|>": true}
		for name := range eogNames {
			m[name] = true
		}
		for _, l := range [][]string{eotNames, eomNames, fimPreNames, fimSufNames, fimMidNames, fimPadNames, fimRepNames, fimSepNames} {
			for _, name := range l {
				m[name] = true
			}
		}
		n := 0
		for name := range m {
			n = max(n, len(name))
		}
		return m, n
	}()
)

func isWellKnownName(s string) bool {
	return len(s) <= wellKnownMaxLen && wellKnownNames[s]
}

// ggufID reads an optional integer metadata value (a token id or a
// count). The "none" value 0xFFFFFFFF (-1 as int32) counts as absent.
func ggufID(kv ggml.KV, key string) (int64, bool, error) {
	var v int64
	switch x := kv.Value(key).(type) {
	case nil:
		return 0, false, nil
	case uint8:
		v = int64(x)
	case int8:
		v = int64(x)
	case uint16:
		v = int64(x)
	case int16:
		v = int64(x)
	case uint32:
		if x == math.MaxUint32 {
			return 0, false, nil
		}
		v = int64(x)
	case int32:
		v = int64(x)
	case uint64:
		if x > math.MaxInt32 {
			return 0, false, fmt.Errorf("%s = %d is out of range", key, x)
		}
		v = int64(x)
	case int64:
		v = x
	default:
		return 0, false, fmt.Errorf("%s is a %T, want an integer", key, x)
	}
	if v == -1 {
		return 0, false, nil
	}
	if v < 0 || v > math.MaxInt32 {
		return 0, false, fmt.Errorf("%s = %d is out of range", key, v)
	}
	return v, true, nil
}

func missingOrWrong(kv ggml.KV, key, want string) error {
	if kv.Value(key) == nil {
		return fmt.Errorf("missing metadata key %s", key)
	}
	return fmt.Errorf("metadata %s is not %s", key, want)
}
