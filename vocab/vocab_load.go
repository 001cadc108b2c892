package vocab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// LoadVocab reads a vocabulary from path, which is one of:
//
//   - a GGUF file (a vocabulary-only file or a whole model: only the
//     metadata is read, with github.com/ollama/ollama/fs/ggml, after
//     internal/ggufcheck has validated the header), decoded per
//     tokenizer.ggml.model: "llama" and "t5" (SentencePiece), "gpt2" and
//     "gemma4" (BPE: byte-level, or SentencePiece-style for the
//     pre-tokenizers llama.cpp escapes whitespace for) and "bert"
//     (WordPiece);
//   - a Hugging Face tokenizer.json (BPE, Unigram, WordPiece or WordLevel
//     model with a ByteLevel, Metaspace, WordPiece, or
//     Replace/ByteFallback/Fuse/Strip decoder), with
//     tokenizer_config.json and generation_config.json from the same
//     folder when present;
//   - a folder holding tokenizer.json, or vocab.json + merges.txt, or
//     encoder.json + vocab.bpe (GPT-2 style byte-level BPE), tried in that
//     order, with the optional configs as above and, for the last two,
//     special_tokens_map.json and added_tokens.json (the special tokens'
//     names and ids). The merges are checked for form but not used.
//
// Token bytes are what llama.cpp's detokenizer outputs for the token
// (llama_token_to_piece with special = true), before its whole-text
// clean-ups, so that concatenating the bytes of a token sequence gives the
// detokenized text:
//
//   - SentencePiece: "▁" (U+2581) becomes a space and byte tokens
//     <0xXX> become the byte XX. The leading space a SentencePiece
//     tokenizer adds and its detokenizer strips again is kept: the
//     token "▁Hello" is " Hello" wherever it appears.
//   - Byte-level BPE: each character of the token text is mapped back to
//     its byte with GPT-2's byte↔unicode table ("Ġ" → ' ', "Ċ" → '\n').
//   - WordPiece: a continuation piece "##ing" is "ing", a word-initial
//     piece "hello" is " hello" (GGUF files already spell it "▁hello").
//     Concatenated, "hello", "##ing" gives " helloing": the words of the
//     normalized (lower-cased, accent-stripped) text, each preceded by a
//     space, as llama.cpp detokenizes WordPiece before clean_spaces.
//   - Added tokens that are not special (GGUF token type 4
//     "user-defined", tokenizer.json added_tokens with "special": false)
//     are their text, verbatim.
//   - Special and unused tokens are their name, verbatim.
//
// Kinds: control tokens (GGUF type 3), unknown tokens (type 2, <unk>) and
// special added tokens are TokenSpecial; GGUF type 5 "unused" and
// undefined types, control tokens whose name contains "unused"
// (llama.cpp's rule), the converters' padding fillers "[PAD<id>]",
// WordPiece's "[unused<n>]" slots and empty tokens are TokenUnused;
// everything else is TokenNormal.
//
// End-of-generation ids follow llama.cpp (llama_vocab::impl::load) for
// GGUF files, so that they match what llama.cpp stops on: the eos, eot and
// eom ids from the metadata (tokenizer.ggml.eos_token_id, …; the model
// type's default eos only if that token is a control token), eot and eom
// found by name when the metadata has none, the FIM pad/repo/file-separator
// tokens (by metadata or name), and every token named like an end token
// (<|eot_id|>, <|im_end|>, <|endoftext|>, </s>, …; see eogNames), minus
// llama.cpp's gpt-oss and Gemma 4 exceptions. For Hugging Face files they
// are tokenizer_config.json's eos_token, generation_config.json's
// eos_token_id, and the tokens named like an end token that are special or
// spelled "<|…|>" (GPT-2's encoder.json lists <|endoftext|> among the
// regular tokens; Qwen2's has "</s>" as ordinary text). EOG tokens are
// always TokenSpecial, whatever their type in the file. A file that names
// no end-of-generation token is an error, a *NoEOGError that holds the
// vocabulary (the Llama 3.2 encoder.json + vocab.bpe folder alone lists
// only the 128,000 regular tokens).
//
// LoadVocab takes 7–40 ms for 30k–150k tokens on the corpus files (see
// BenchmarkLoadVocab). Errors name the file (and the line:col in a JSON
// file) and say what is wrong; they are *VocabFileError values.
func LoadVocab(path string) (*Vocab, error) {
	v, err := loadVocab(path)
	if err == nil && len(v.EOG()) == 0 {
		return nil, &VocabFileError{Path: path, Err: &NoEOGError{Vocab: v}}
	}
	return v, err
}

// NoEOGError reports a vocabulary file (or folder) that names no
// end-of-generation token, such as an encoder.json + vocab.bpe folder
// without the configs that list the special tokens: a generation with it
// could never end by token, and code that takes EOG()[0] would panic.
// Vocab is the vocabulary read anyway, for callers that end generations
// themselves: its masks never allow an end token, and Matcher.CanEnd
// says when the grammar may end.
type NoEOGError struct {
	Vocab *Vocab
}

func (e *NoEOGError) Error() string {
	return fmt.Sprintf("no end-of-generation token among its %d tokens: add the model's tokenizer_config.json, special_tokens_map.json + added_tokens.json or generation_config.json, or load the model's GGUF (the vocabulary read anyway is in the *mask.NoEOGError)", e.Vocab.Size())
}

func loadVocab(path string) (*Vocab, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, osError(path, err)
	}
	if st.IsDir() {
		return loadVocabDir(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, osError(path, err)
	}
	defer f.Close()
	var magic [4]byte
	n, _ := f.ReadAt(magic[:], 0)
	switch {
	case strings.HasSuffix(path, ".gguf") || (n == 4 && (string(magic[:]) == "GGUF" || string(magic[:]) == "FUGG")):
		return loadGGUF(path, f, st.Size())
	case strings.HasSuffix(path, ".json"):
		return loadTokenizerJSONFile(path)
	}
	return nil, &VocabFileError{Path: path, Err: errors.New("unknown vocabulary format: want a .gguf file, a tokenizer.json or a folder")}
}

// A VocabFileError reports a vocabulary file (or folder) that could not be
// read or is not what it claims to be.
type VocabFileError struct {
	Path      string // the file or folder at fault
	Line, Col int    // 1-based position in a JSON file, or 0
	Err       error  // what is wrong
}

// Error returns "path: message" or "path:line:col: message".
func (e *VocabFileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %v", e.Path, e.Line, e.Col, e.Err)
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *VocabFileError) Unwrap() error { return e.Err }

// osError wraps an error from the os package: the path is said once.
func osError(path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &VocabFileError{Path: path, Err: err}
}

func fileErrorf(path, format string, args ...any) error {
	return &VocabFileError{Path: path, Err: fmt.Errorf(format, args...)}
}

// loadVocabDir loads the vocabulary files found in dir.
func loadVocabDir(dir string) (*Vocab, error) {
	exists := func(name string) bool {
		st, err := os.Stat(filepath.Join(dir, name))
		return err == nil && st.Mode().IsRegular()
	}
	switch {
	case exists("tokenizer.json"):
		return loadTokenizerJSONFile(filepath.Join(dir, "tokenizer.json"))
	case exists("vocab.json"):
		return loadVocabJSONDir(dir, "vocab.json", "merges.txt")
	case exists("encoder.json"):
		return loadVocabJSONDir(dir, "encoder.json", "vocab.bpe")
	}
	return nil, fileErrorf(dir, "no vocabulary files: want tokenizer.json, vocab.json + merges.txt, or encoder.json + vocab.bpe")
}

// Limits on vocabulary files.
const (
	// maxVocabFileSize bounds a tokenizer.json, vocab.json or merges file
	// read into memory. The largest real ones are about 35 MB (Gemma 3's
	// tokenizer.json, 262k tokens with merges); 256 MiB rejects a weights
	// file passed by mistake without reading it all.
	maxVocabFileSize = 256 << 20
)

// gpt2ByteOf maps a character of GPT-2's byte-level alphabet back to its
// byte; gpt2Rune is the inverse. Bytes that are printable and not space
// stand for themselves ('!'..'~', '¡'..'¬', '®'..'ÿ'); the other 68 bytes
// are mapped, in order, to U+0100 onwards.
var (
	gpt2Rune   [256]rune
	gpt2ByteOf [256 + 68]int16 // -1: not in the alphabet
)

func init() {
	for i := range gpt2ByteOf {
		gpt2ByteOf[i] = -1
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			gpt2Rune[b] = rune(b)
		} else {
			gpt2Rune[b] = 256 + n
			n++
		}
		gpt2ByteOf[gpt2Rune[b]] = int16(b)
	}
}

// decodeByteLevel appends to dst the bytes that byte-level BPE text s
// stands for. It fails on invalid UTF-8 and on characters outside GPT-2's
// byte alphabet.
func decodeByteLevel(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return dst, fmt.Errorf("invalid UTF-8 at byte %d", i)
		}
		if r < 0 || int(r) >= len(gpt2ByteOf) || gpt2ByteOf[r] < 0 {
			return dst, fmt.Errorf("character %U at byte %d is not in the byte-level alphabet", r, i)
		}
		dst = append(dst, byte(gpt2ByteOf[r]))
		i += size
	}
	return dst, nil
}

// encodeByteLevel returns the byte-level BPE spelling of raw bytes (the
// inverse of decodeByteLevel).
func encodeByteLevel(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(gpt2Rune[c])
	}
	return sb.String()
}

// spaceMarker is SentencePiece's visible space, U+2581 "▁".
const spaceMarker = "\u2581"

// byteToken parses a byte-fallback token "<0xXX>".
func byteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[3:5], 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}

// isPadFiller reports whether name is "[PAD<id>]", the filler that
// llama.cpp's and Hugging Face's converters add to pad a vocabulary to the
// model's embedding size. Such slots were never trained.
func isPadFiller(name string, id int) bool {
	return len(name) >= 6 && name[:4] == "[PAD" && name[len(name)-1] == ']' && name[4:len(name)-1] == strconv.Itoa(id)
}

// isWordPieceUnused reports whether name is a BERT reserved slot
// "[unused<n>]".
func isWordPieceUnused(name string) bool {
	if len(name) < 9 || name[:7] != "[unused" || name[len(name)-1] != ']' {
		return false
	}
	for _, c := range name[7 : len(name)-1] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// eogNames are the token names llama.cpp treats as end of generation
// whatever the metadata says (llama_vocab::impl::load, "maintain a list of
// tokens that cause end-of-generation").
var eogNames = map[string]bool{
	"<|eot_id|>": true, "<|im_end|>": true, "<|end|>": true,
	"<|return|>": true, "<|call|>": true, "<|flush|>": true, "<|calls|>": true,
	"<end_of_turn>": true, "<|endoftext|>": true, "</s>": true,
	"<|eom_id|>": true, "<EOT>": true, "_<EOT>": true, "[EOT]": true,
	"[EOS]": true, "<|end_of_text|>": true, "<end_of_utterance>": true,
	"<eos>": true, "<turn|>": true, "<|tool_response>": true,
	"<｜end▁of▁sentence｜>": true, "[e~[": true,
}

// Names by which llama.cpp finds the eot, eom and FIM tokens when the
// metadata does not give their ids. The first match in byte order wins, as
// llama.cpp iterates a std::map.
var (
	eotNames = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
		"<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
		"<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomNames    = []string{"<|eom_id|>"}
	fimPadNames = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepNames = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepNames = []string{"<|file_sep|>"}
)

// eogSet collects end-of-generation ids without duplicates, in insertion
// order.
type eogSet struct {
	ids  []int32
	seen map[int32]bool
}

func (s *eogSet) add(id int32) {
	if id < 0 || s.seen[id] {
		return
	}
	if s.seen == nil {
		s.seen = map[int32]bool{}
	}
	s.seen[id] = true
	s.ids = append(s.ids, id)
}

func (s *eogSet) remove(id int32) {
	if !s.seen[id] {
		return
	}
	delete(s.seen, id)
	for i, x := range s.ids {
		if x == id {
			s.ids = append(s.ids[:i], s.ids[i+1:]...)
			break
		}
	}
}

// applyEOGWorkarounds removes the end tokens llama.cpp removes again: the
// gpt-oss / solar-open "<|end|>" (when <|return|> and <|call|>, or
// <|calls|> and <|flush|>, are EOG) and Gemma 4's "</s>" (when
// <|tool_response> is EOG). name(id) is a token's name; setKind gives a
// removed token the kind llama.cpp gives it (rendered as text: normal).
func applyEOGWorkarounds(s *eogSet, name func(int32) string, setKind func(int32, TokenKind)) {
	has := map[string]int32{}
	for _, id := range s.ids {
		has[name(id)] = id
	}
	_, ret := has["<|return|>"]
	_, call := has["<|call|>"]
	_, calls := has["<|calls|>"]
	_, flush := has["<|flush|>"]
	if end, ok := has["<|end|>"]; ok && ((ret && call) || ((call || calls) && flush)) {
		s.remove(end)
		setKind(end, TokenNormal) // llama.cpp: user-defined, rendered as text
	}
	if es, ok := has["</s>"]; ok {
		if _, tr := has["<|tool_response>"]; tr {
			s.remove(es)
			setKind(es, TokenNormal)
		}
	}
}
