package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/structgen/structgen/engine"
)

// fakeModel is an engine.Model in pure Go: a small vocabulary (every byte,
// some JSON-ish and word tokens, BOS, EOS and a chat marker), a greedy
// longest-match tokenizer, and logits that either spell a target text
// (script) or are deterministic noise of (position, last token). It checks
// the cache discipline the loop must keep: Decode only at the end of the
// cache, Truncate only backwards.
type fakeModel struct {
	toks    [][]byte
	special []bool
	bos     int32
	eos     int32
	eog     []int32
	ctx     int
	tmpl    string

	script  []byte // if set: the model wants to write exactly this, then EOS
	noEOS   bool   // never want EOS (noise mode: EOS logit -Inf)
	prompts int    // tokens of the prompt (set by the first Decode at 0)

	cache   []int32
	logits  []float32
	decodes []int // batch sizes after the prompt
	failAt  int   // Decode fails when the cache would reach this many positions (0: never)
	closed  bool
}

var fakeWords = []string{
	`{"`, `":`, `":"`, `","`, `"}`, `"},`, `":{"`, `":[`, `"]`, `},{"`, `}]`, `true`, `false`, `null`,
	`name`, `age`, `items`, `id`, `order`, `_id`, `status`, `ship`, `ped`, `paid`, `pending`,
	` the`, ` a`, ` cat`, ` sat`, `Hello`, ` world`, `Sure`, `!`, `json`, "```", "```json", "```json\n",
	`<tool`, `_call`, `>`, `<tool_call>`, `12`, `345`, `0.`, `00`,
}

func newFakeModel() *fakeModel {
	f := &fakeModel{ctx: 4096}
	for b := 0; b < 256; b++ {
		f.toks = append(f.toks, []byte{byte(b)})
		f.special = append(f.special, false)
	}
	for _, w := range fakeWords {
		f.toks = append(f.toks, []byte(w))
		f.special = append(f.special, false)
	}
	add := func(name string) int32 {
		f.toks = append(f.toks, []byte(name))
		f.special = append(f.special, true)
		return int32(len(f.toks) - 1)
	}
	f.bos = add("<s>")
	f.eos = add("</s>")
	add("<|im_start|>")
	add("<|im_end|>")
	f.eog = []int32{f.eos}
	return f
}

var _ engine.Model = (*fakeModel)(nil)

func (f *fakeModel) VocabSize() int { return len(f.toks) }
func (f *fakeModel) TokenBytes(tok int32) []byte {
	if tok < 0 || int(tok) >= len(f.toks) {
		return nil
	}
	return f.toks[tok]
}
func (f *fakeModel) TokenIsSpecial(tok int32) bool { return f.special[tok] }
func (f *fakeModel) EOG() []int32                  { return f.eog }
func (f *fakeModel) IsEOG(tok int32) bool          { return tok == f.eos }
func (f *fakeModel) BOS() (int32, bool)            { return f.bos, true }
func (f *fakeModel) ContextSize() int              { return f.ctx }
func (f *fakeModel) ChatTemplate() string          { return f.tmpl }
func (f *fakeModel) Close() error                  { f.closed = true; return nil }

// Tokenize is greedy longest match over the normal tokens (special tokens
// too with parseSpecial).
func (f *fakeModel) Tokenize(text []byte, addSpecial, parseSpecial bool) ([]int32, error) {
	var out []int32
	if addSpecial {
		out = append(out, f.bos)
	}
	for len(text) > 0 {
		best, bestLen := int32(-1), 0
		for i, t := range f.toks {
			if f.special[i] && !parseSpecial {
				continue
			}
			if len(t) > bestLen && bytes.HasPrefix(text, t) {
				best, bestLen = int32(i), len(t)
			}
		}
		out = append(out, best)
		text = text[bestLen:]
	}
	return out, nil
}

func (f *fakeModel) Decode(tokens []int32, pos int) error {
	if f.closed {
		return errors.New("fake: closed")
	}
	if len(tokens) == 0 {
		return errors.New("fake: empty batch")
	}
	if pos != len(f.cache) {
		return fmt.Errorf("fake: Decode at %d but the cache holds %d positions", pos, len(f.cache))
	}
	if pos+len(tokens) > f.ctx {
		return fmt.Errorf("fake: %w", engine.ErrContextFull)
	}
	if f.failAt > 0 && pos+len(tokens) >= f.failAt {
		return errors.New("fake: decode failure")
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= len(f.toks) {
			return fmt.Errorf("fake: token %d out of range", t)
		}
	}
	if pos == 0 {
		f.prompts = len(tokens)
		f.decodes = nil
	} else {
		f.decodes = append(f.decodes, len(tokens))
	}
	f.cache = append(f.cache, tokens...)
	f.compute()
	return nil
}

// generated returns the text of the cache after the prompt.
func (f *fakeModel) generated() []byte {
	var b []byte
	for _, t := range f.cache[f.prompts:] {
		b = append(b, f.toks[t]...)
	}
	return b
}

func (f *fakeModel) compute() {
	if f.logits == nil {
		f.logits = make([]float32, len(f.toks))
	}
	l := f.logits
	if f.script != nil {
		done := f.generated()
		rest, ok := bytes.CutPrefix(f.script, done)
		for i, t := range f.toks {
			switch {
			case !ok:
				l[i] = 0
			case f.special[i]:
				l[i] = -10
			case bytes.HasPrefix(rest, t):
				l[i] = 5 + float32(len(t)) // longest match wins at temperature 0
			default:
				l[i] = -5
			}
		}
		if ok && len(rest) == 0 {
			l[f.eos] = 30
		}
		return
	}
	// Noise: a deterministic function of position and last token.
	pos, last := uint64(len(f.cache)), uint64(f.cache[len(f.cache)-1])
	for i := range l {
		l[i] = float32(splitmix(pos<<40^last<<20^uint64(i))%6000)/1000 - 3
	}
	if f.noEOS {
		l[f.eos] = float32(math.Inf(-1))
	}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func (f *fakeModel) Logits() []float32 {
	if len(f.cache) == 0 {
		return nil
	}
	return f.logits
}

func (f *fakeModel) Truncate(pos int) error {
	if pos < 0 || pos > len(f.cache) {
		return fmt.Errorf("fake: Truncate(%d) of %d positions", pos, len(f.cache))
	}
	f.cache = f.cache[:pos]
	return nil
}

// tokenOf returns the id of a normal token with exactly these bytes.
func (f *fakeModel) tokenOf(s string) int32 {
	for i, t := range f.toks {
		if !f.special[i] && string(t) == s && len(t) == len(s) {
			if len(s) == 1 {
				return int32(s[0])
			}
			return int32(i)
		}
	}
	panic("no token " + s)
}

func sortedCopy(x []int) []int {
	y := append([]int(nil), x...)
	sort.Ints(y)
	return y
}
