package vocab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Hugging Face vocabulary files: tokenizer.json, and the older
// vocab.json + merges.txt / encoder.json + vocab.bpe pairs.

// hfTokenizer is the part of a tokenizer.json that LoadVocab reads.
type hfTokenizer struct {
	AddedTokens  []hfAddedToken
	Model        *hfModel
	Decoder      *hfDecoder
	PreTokenizer []byte
}

type hfModel struct {
	Type                    string
	Vocab                   []hfEntry // BPE, WordPiece, WordLevel: in file order; Unigram: by index
	HasVocab                bool
	ByteFallback            bool
	ContinuingSubwordPrefix *string
}

type hfAddedToken struct {
	ID      *int64 `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

type hfDecoder struct {
	Type        string      `json:"type"`
	Decoders    []hfDecoder `json:"decoders"`    // Sequence
	Prefix      *string     `json:"prefix"`      // WordPiece
	Replacement *string     `json:"replacement"` // Metaspace
	Pattern     *struct {   // Replace
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	Content *string `json:"content"` // Replace
}

// hfDecoding says how the text of a vocabulary entry becomes bytes.
type hfDecoding struct {
	byteLevel    bool   // GPT-2 byte↔unicode
	space        string // this text stands for a space (Metaspace "▁"), or ""
	byteFallback bool   // <0xXX> entries are bytes
	wordPiece    bool   // prefix marks continuations, other pieces start a word
	prefix       string // WordPiece continuation prefix
}

// add merges the effect of decoder d into dc.
func (dc *hfDecoding) add(d *hfDecoder) error {
	switch d.Type {
	case "ByteLevel":
		dc.byteLevel = true
	case "Metaspace":
		dc.space = spaceMarker
		if d.Replacement != nil {
			dc.space = *d.Replacement
		}
	case "WordPiece":
		dc.wordPiece = true
		dc.prefix = "##"
		if d.Prefix != nil {
			dc.prefix = *d.Prefix
		}
	case "Replace":
		if d.Pattern == nil || d.Pattern.String == nil || d.Content == nil || *d.Content != " " || *d.Pattern.String == "" {
			return errors.New(`decoder "Replace" is supported only as a plain string replaced by " " (SentencePiece's "▁")`)
		}
		dc.space = *d.Pattern.String
	case "ByteFallback":
		dc.byteFallback = true
	case "Fuse", "Strip":
		// Whole-text steps: Fuse joins pieces, Strip removes the
		// leading space a SentencePiece tokenizer adds. Token bytes
		// keep that space (see LoadVocab).
	case "Sequence":
		for i := range d.Decoders {
			if err := dc.add(&d.Decoders[i]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("decoder type %q is not supported (supported: ByteLevel, Metaspace, WordPiece, Replace, ByteFallback, Fuse, Strip, Sequence)", d.Type)
	}
	if dc.byteLevel && (dc.space != "" || dc.wordPiece) {
		return errors.New("decoder mixes ByteLevel with Metaspace/Replace/WordPiece")
	}
	return nil
}

// decode appends the bytes of vocabulary entry text to dst.
func (dc *hfDecoding) decode(dst []byte, text string) ([]byte, error) {
	switch {
	case dc.byteLevel:
		return decodeByteLevel(dst, text)
	case dc.wordPiece:
		if rest, ok := strings.CutPrefix(text, dc.prefix); ok && rest != "" {
			return append(dst, rest...), nil
		}
		return append(append(dst, ' '), text...), nil
	}
	if dc.byteFallback {
		if b, ok := byteToken(text); ok {
			return append(dst, b), nil
		}
	}
	if dc.space == "" {
		return append(dst, text...), nil
	}
	return append(dst, strings.ReplaceAll(text, dc.space, " ")...), nil
}

// hfEntry is one vocabulary entry.
type hfEntry struct {
	text string
	id   int64
}

// loadTokenizerJSONFile loads a tokenizer.json, with the
// tokenizer_config.json and generation_config.json beside it.
func loadTokenizerJSONFile(path string) (*Vocab, error) {
	data, err := readVocabFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := readHFConfigs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	v, err := parseTokenizerJSON(data, cfg)
	if err != nil {
		return nil, wrapJSONError(path, data, err)
	}
	return v, nil
}

// parseTokenizerJSON builds a vocabulary from the text of a
// tokenizer.json. It walks the document with jsonScanner, decoding only
// the parts it needs: the merges (most of a tokenizer.json) are only
// checked for syntax, which is 3–4× faster than encoding/json.
func parseTokenizerJSON(data []byte, cfg hfConfig) (*Vocab, error) {
	var tj hfTokenizer
	p := jsonScanner{data: data}
	err := p.object(func(key string) error {
		switch key {
		case "added_tokens":
			return p.decode(&tj.AddedTokens)
		case "decoder":
			return p.decode(&tj.Decoder)
		case "pre_tokenizer":
			raw, err := p.raw()
			tj.PreTokenizer = raw
			return err
		case "model":
			tj.Model = &hfModel{}
			return p.object(func(key string) error { return parseHFModelKey(&p, key, tj.Model) })
		}
		return p.skip(0)
	})
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return nil, err
	}
	if tj.Model == nil || !tj.Model.HasVocab {
		return nil, errors.New(`not a tokenizer.json: no "model" with a "vocab"`)
	}
	typ := tj.Model.Type
	if typ == "" { // old files (a list vocab made it "Unigram" already)
		typ = "BPE"
	}
	entries := tj.Model.Vocab
	switch typ {
	case "BPE", "WordPiece", "WordLevel", "Unigram":
	default:
		return nil, fmt.Errorf("model.type %q is not supported (supported: BPE, Unigram, WordPiece, WordLevel)", typ)
	}

	var dc hfDecoding
	switch {
	case tj.Decoder != nil:
		if err := dc.add(tj.Decoder); err != nil {
			return nil, fmt.Errorf("decoder: %w", err)
		}
	case typ == "WordPiece":
		dc.wordPiece, dc.prefix = true, "##"
	case bytes.Contains(tj.PreTokenizer, []byte(`"ByteLevel"`)):
		dc.byteLevel = true
	default:
		return nil, errors.New("no decoder: cannot tell how token text maps to bytes")
	}
	if dc.wordPiece && tj.Model.ContinuingSubwordPrefix != nil {
		dc.prefix = *tj.Model.ContinuingSubwordPrefix
	}
	dc.byteFallback = dc.byteFallback || tj.Model.ByteFallback

	added := make([]hfAddedToken, 0, len(tj.AddedTokens)+len(cfg.added))
	added = append(added, cfg.added...)
	for i, a := range tj.AddedTokens {
		if a.ID == nil {
			return nil, fmt.Errorf("added_tokens[%d] (%q) has no id", i, a.Content)
		}
		added = append(added, a)
	}
	return buildHFVocab(entries, added, &dc, cfg)
}

// parseHFModelKey parses one key of a tokenizer.json "model" object.
func parseHFModelKey(p *jsonScanner, key string, m *hfModel) error {
	switch key {
	case "type":
		return p.decode(&m.Type)
	case "byte_fallback":
		return p.decode(&m.ByteFallback)
	case "continuing_subword_prefix":
		return p.decode(&m.ContinuingSubwordPrefix)
	case "vocab":
		m.HasVocab = true
		p.ws()
		if p.i < len(p.data) && p.data[p.i] == '[' {
			// Unigram: [[piece, score], …]; the id is the index.
			var l [][]json.RawMessage
			at := p.i
			if err := p.decode(&l); err != nil {
				return err
			}
			m.Vocab = make([]hfEntry, len(l))
			for i, e := range l {
				if len(e) != 2 {
					return &jsonPosError{Offset: int64(at), Msg: fmt.Sprintf("model.vocab[%d]: want [piece, score], got %d elements", i, len(e))}
				}
				if err := json.Unmarshal(e[0], &m.Vocab[i].text); err != nil {
					return &jsonPosError{Offset: int64(at), Msg: fmt.Sprintf("model.vocab[%d][0]: %v", i, err)}
				}
				m.Vocab[i].id = int64(i)
			}
			if m.Type == "" {
				m.Type = "Unigram"
			}
			return nil
		}
		entries, err := p.tokenIDObject()
		if err != nil {
			return fmt.Errorf("model.vocab: %w", err)
		}
		m.Vocab = entries
		return nil
	}
	return p.skip(0)
}

// buildHFVocab assembles a vocabulary from model entries, added tokens
// (which override entries with the same id) and the configs' EOG hints.
func buildHFVocab(entries []hfEntry, added []hfAddedToken, dc *hfDecoding, cfg hfConfig) (*Vocab, error) {
	n := int64(0)
	for _, e := range entries {
		if e.id < 0 || e.id >= MaxVocabSize {
			return nil, fmt.Errorf("token %q has id %d, out of range [0, %d)", e.text, e.id, MaxVocabSize)
		}
		n = max(n, e.id+1)
	}
	for _, a := range added {
		if *a.ID < 0 || *a.ID >= MaxVocabSize {
			return nil, fmt.Errorf("added token %q has id %d, out of range [0, %d)", a.Content, *a.ID, MaxVocabSize)
		}
		n = max(n, *a.ID+1)
	}
	if n == 0 {
		return nil, errors.New("empty vocabulary")
	}

	names := make([]string, n) // the token's text in the file
	filled := make([]bool, n)
	tokens := make([][]byte, n)
	kinds := make([]TokenKind, n)
	for i := range kinds {
		kinds[i] = TokenUnused // ids no entry uses
	}
	buf := make([]byte, 0, 8*len(entries))
	for _, e := range entries {
		if filled[e.id] {
			return nil, fmt.Errorf("id %d is used by both %q and %q", e.id, names[e.id], e.text)
		}
		start := len(buf)
		var err error
		if buf, err = dc.decode(buf, e.text); err != nil {
			return nil, fmt.Errorf("token %d (%q): undecodable: %v", e.id, e.text, err)
		}
		names[e.id], filled[e.id] = e.text, true
		tokens[e.id] = buf[start:len(buf):len(buf)]
		switch {
		case len(tokens[e.id]) == 0, isPadFiller(e.text, int(e.id)), dc.wordPiece && isWordPieceUnused(e.text):
			kinds[e.id] = TokenUnused
		default:
			kinds[e.id] = TokenNormal
		}
	}
	for _, a := range added {
		id := *a.ID
		names[id], filled[id] = a.Content, true
		tokens[id] = []byte(a.Content)
		switch {
		case a.Content == "":
			kinds[id] = TokenUnused
		case a.Special:
			kinds[id] = TokenSpecial
		default:
			kinds[id] = TokenNormal
		}
	}

	// End of generation. byName holds only the names that matter: the
	// configured eos_token and the well-known end-token names (a special
	// token wins over an entry with the same text).
	byName := map[string]int32{}
	for id, name := range names {
		if !filled[id] || (!eogNames[name] && name != cfg.eosToken) {
			continue
		}
		if old, dup := byName[name]; !dup || (kinds[id] == TokenSpecial && kinds[old] != TokenSpecial) {
			byName[name] = int32(id)
		}
	}
	var set eogSet
	if cfg.eosToken != "" {
		id, ok := byName[cfg.eosToken]
		if !ok {
			return nil, fmt.Errorf("%s: eos_token %q is not in the vocabulary", cfg.eosFrom, cfg.eosToken)
		}
		set.add(id)
	}
	for _, id := range cfg.eosIDs {
		if id < 0 || id >= n || !filled[id] {
			return nil, fmt.Errorf("%s: eos_token_id %d is not in the vocabulary (%d ids)", cfg.eosIDsFrom, id, n)
		}
		set.add(int32(id))
	}
	// Named end tokens, as in llama.cpp, but only special ones or
	// regular entries spelled "<|…|>" (GPT-2's <|endoftext|> is a regular
	// encoder.json entry): Qwen2's vocab.json has "</s>" as ordinary text.
	wk := make([]string, 0, 8)
	for name, id := range byName {
		if eogNames[name] && (kinds[id] == TokenSpecial || (strings.HasPrefix(name, "<|") && strings.HasSuffix(name, "|>"))) {
			wk = append(wk, name)
		}
	}
	slices.Sort(wk)
	for _, name := range wk {
		set.add(byName[name])
	}
	applyEOGWorkarounds(&set, func(id int32) string { return names[id] }, func(id int32, k TokenKind) {
		kinds[id] = k
		tokens[id] = []byte(names[id])
	})
	for _, id := range set.ids {
		kinds[id] = TokenSpecial
		tokens[id] = []byte(names[id])
	}
	return NewVocabKinds(tokens, kinds, set.ids)
}

// hfConfig is what tokenizer_config.json and generation_config.json add.
type hfConfig struct {
	added      []hfAddedToken // tokenizer_config.json added_tokens_decoder
	eosToken   string         // tokenizer_config.json eos_token
	eosFrom    string
	eosIDs     []int64 // generation_config.json eos_token_id
	eosIDsFrom string
}

// readHFConfigs reads the optional tokenizer_config.json and
// generation_config.json in dir.
func readHFConfigs(dir string) (hfConfig, error) {
	var cfg hfConfig
	if p := filepath.Join(dir, "tokenizer_config.json"); fileExists(p) {
		data, err := readVocabFile(p)
		if err != nil {
			return cfg, err
		}
		if err := parseTokenizerConfig(data, &cfg); err != nil {
			return cfg, wrapJSONError(p, data, err)
		}
		cfg.eosFrom = "tokenizer_config.json"
	}
	// The slow tokenizers' files: special_tokens_map.json names the
	// special tokens (eos_token among them), added_tokens.json gives the
	// ids of the tokens added after vocab.json / encoder.json.
	special := map[string]bool{}
	if p := filepath.Join(dir, "special_tokens_map.json"); fileExists(p) {
		data, err := readVocabFile(p)
		if err != nil {
			return cfg, err
		}
		if err := parseSpecialTokensMap(data, &cfg, special); err != nil {
			return cfg, wrapJSONError(p, data, err)
		}
	}
	if p := filepath.Join(dir, "added_tokens.json"); fileExists(p) {
		data, err := readVocabFile(p)
		if err != nil {
			return cfg, err
		}
		entries, err := parseTokenIDObject(data)
		if err != nil {
			return cfg, wrapJSONError(p, data, err)
		}
		for _, e := range entries {
			id := e.id
			// Special if the map names it, or spelled as control tokens are.
			sp := special[e.text] || (strings.HasPrefix(e.text, "<|") && strings.HasSuffix(e.text, "|>"))
			cfg.added = append(cfg.added, hfAddedToken{ID: &id, Content: e.text, Special: sp})
		}
	}
	if p := filepath.Join(dir, "generation_config.json"); fileExists(p) {
		data, err := readVocabFile(p)
		if err != nil {
			return cfg, err
		}
		if err := parseGenerationConfig(data, &cfg); err != nil {
			return cfg, wrapJSONError(p, data, err)
		}
		cfg.eosIDsFrom = "generation_config.json"
	}
	return cfg, nil
}

// parseTokenizerConfig reads eos_token and added_tokens_decoder.
func parseTokenizerConfig(data []byte, cfg *hfConfig) error {
	var tc struct {
		AddedTokensDecoder map[string]hfAddedToken `json:"added_tokens_decoder"`
		EOSToken           json.RawMessage         `json:"eos_token"`
	}
	if err := json.Unmarshal(data, &tc); err != nil {
		return err
	}
	keys := make([]string, 0, len(tc.AddedTokensDecoder))
	for k := range tc.AddedTokensDecoder {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := tc.AddedTokensDecoder[k]
		var id int64
		if _, err := fmt.Sscan(k, &id); err != nil || fmt.Sprint(id) != k {
			return fmt.Errorf("added_tokens_decoder: key %q is not a token id", k)
		}
		a.ID = &id
		cfg.added = append(cfg.added, a)
	}
	var err error
	cfg.eosToken, err = tokenName("eos_token", tc.EOSToken)
	return err
}

// tokenName reads a special token as the configs write it: a string, an
// object with "content", or null ("").
func tokenName(key string, raw json.RawMessage) (string, error) {
	var name string
	switch e := bytes.TrimSpace(raw); {
	case len(e) == 0 || string(e) == "null":
	case e[0] == '"':
		if err := json.Unmarshal(e, &name); err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
	case e[0] == '{':
		var o struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(e, &o); err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		name = o.Content
	default:
		return "", fmt.Errorf("%s is %s, want a string or an object with \"content\"", key, e)
	}
	return name, nil
}

// parseSpecialTokensMap reads special_tokens_map.json: every token it
// names goes into special, and its eos_token becomes the configured one
// unless tokenizer_config.json named one.
func parseSpecialTokensMap(data []byte, cfg *hfConfig, special map[string]bool) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		raws := []json.RawMessage{m[k]}
		if v := bytes.TrimSpace(m[k]); len(v) > 0 && v[0] == '[' {
			if err := json.Unmarshal(v, &raws); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		for _, raw := range raws {
			name, err := tokenName(k, raw)
			if err != nil {
				return err
			}
			if name != "" {
				special[name] = true
			}
			if k == "eos_token" && cfg.eosToken == "" && name != "" {
				cfg.eosToken, cfg.eosFrom = name, "special_tokens_map.json"
			}
		}
	}
	return nil
}

// parseGenerationConfig reads eos_token_id (a number or a list).
func parseGenerationConfig(data []byte, cfg *hfConfig) error {
	var gc struct {
		EOSTokenID json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &gc); err != nil {
		return err
	}
	switch e := bytes.TrimSpace(gc.EOSTokenID); {
	case len(e) == 0 || string(e) == "null":
	case e[0] == '[':
		if err := json.Unmarshal(e, &cfg.eosIDs); err != nil {
			return fmt.Errorf("eos_token_id: %w", err)
		}
	default:
		var id int64
		if err := json.Unmarshal(e, &id); err != nil {
			return fmt.Errorf("eos_token_id: %w", err)
		}
		cfg.eosIDs = []int64{id}
	}
	return nil
}

// loadVocabJSONDir loads a GPT-2-style folder: a byte-level vocabulary
// file (vocab.json or encoder.json: token → id), its merges file
// (merges.txt or vocab.bpe, checked but not used), and optional
// tokenizer_config.json / generation_config.json.
func loadVocabJSONDir(dir, vocabName, mergesName string) (*Vocab, error) {
	mp := filepath.Join(dir, mergesName)
	if !fileExists(mp) {
		return nil, fileErrorf(dir, "has %s but no %s", vocabName, mergesName)
	}
	if err := checkMerges(mp); err != nil {
		return nil, err
	}
	vp := filepath.Join(dir, vocabName)
	data, err := readVocabFile(vp)
	if err != nil {
		return nil, err
	}
	cfg, err := readHFConfigs(dir)
	if err != nil {
		return nil, err
	}
	v, err := parseVocabJSON(data, cfg)
	if err != nil {
		return nil, wrapJSONError(vp, data, err)
	}
	return v, nil
}

// parseVocabJSON builds a byte-level vocabulary from the text of a
// vocab.json / encoder.json.
func parseVocabJSON(data []byte, cfg hfConfig) (*Vocab, error) {
	entries, err := parseTokenIDObject(data)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, errors.New("empty vocabulary (want an object mapping token text to id)")
	}
	dc := hfDecoding{byteLevel: true}
	// A GPT-2 encoder.json holds its special token (<|endoftext|>)
	// among the regular entries, spelled in plain ASCII (which byte-level
	// decoding leaves unchanged); buildHFVocab marks it special by name.
	return buildHFVocab(entries, cfg.added, &dc, cfg)
}

// checkMerges checks that a merges file (merges.txt, vocab.bpe) is a
// list of "left right" lines after an optional "#version" header.
func checkMerges(path string) error {
	data, err := readVocabFile(path)
	if err != nil {
		return err
	}
	for line := 1; len(data) > 0; line++ {
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		l = bytes.TrimSuffix(l, []byte("\r"))
		if len(l) == 0 || (line == 1 && l[0] == '#') {
			continue
		}
		left, right, ok := bytes.Cut(l, []byte(" "))
		if !ok || len(left) == 0 || len(right) == 0 || bytes.IndexByte(right, ' ') >= 0 {
			return fileErrorf(path, "line %d: %q is not a merge (want two pieces separated by one space)", line, truncate(string(l), 40))
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// readVocabFile reads a vocabulary file (JSON, merges) of at most
// maxVocabFileSize bytes.
func readVocabFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, osError(path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxVocabFileSize+1))
	if err != nil {
		return nil, osError(path, err)
	}
	if len(data) > maxVocabFileSize {
		return nil, fileErrorf(path, "larger than %d bytes: not a vocabulary file", maxVocabFileSize)
	}
	return data, nil
}

// wrapJSONError names the file and, for JSON syntax and type errors, the
// line:col of the error.
func wrapJSONError(path string, data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var pe *jsonPosError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.As(err, &pe):
		off = pe.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return &VocabFileError{Path: path, Err: err}
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return &VocabFileError{Path: path, Line: line, Col: col, Err: err}
}
