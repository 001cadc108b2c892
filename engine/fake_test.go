package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/structgen/structgen/engine"
)

// fakeModel is an engine.Model in pure Go: a small vocabulary (every byte,
// some JSON-ish and word tokens, BOS, EOS and a chat marker), a greedy
// longest-match tokenizer, and logits that either spell a target text
// (script) or are deterministic noise of (position, last token). Its cache
// works like llama.cpp's unified KV cache: ctx cells shared by nseq
// sequences, cells shared between sequences by Copy and freed when no
// sequence holds them. The logits of a row depend only on its sequence's
// own tokens, so a generation's output does not depend on what else is in
// the batch. It checks the discipline the scheduler must keep: entries of
// a sequence continue its cache in order, Logits only of rows that asked.
type fakeModel struct {
	toks    [][]byte
	special []bool
	bos     int32
	eos     int32
	eog     []int32
	ctx     int // cells
	nseq    int
	batch   int
	tmpl    string

	script []byte // if set: the model wants to write exactly this, then EOS
	noEOS  bool   // never want EOS (noise mode: EOS logit -Inf)
	failAt int    // Decode fails when a sequence would reach this many positions (0: never)

	mu      sync.Mutex // Tokenize may be called concurrently
	prompts [][]int32  // token sequences tokenized with addSpecial (prompts)

	seqs     [][]int32 // tokens of each sequence
	cells    [][]int   // cell id of each position of each sequence
	refs     map[int]int
	nextCell int
	rows     [][]float32 // logits of the last Decode by batch entry (nil: none asked)
	bufs     [][]float32 // reused logits buffers
	decodes  []int       // per Decode: entries after the prompt (summed over sequences)
	batches  []int       // per Decode: entries
	mixed    int         // Decodes holding prompt entries of one sequence and output entries of another
	inPrompt int         // entries decoded at prompt positions
	// promptRead is inPrompt, readable while the model runs.
	promptRead atomic.Int64
	maxSeqs    int           // most sequences in one Decode
	done       [][]int32     // contents of sequences when they were removed whole
	gate       chan struct{} // if set, each Decode takes a value from it first
	closed     bool
}

var fakeWords = []string{
	`{"`, `":`, `":"`, `","`, `"}`, `"},`, `":{"`, `":[`, `"]`, `},{"`, `}]`, `true`, `false`, `null`,
	`name`, `age`, `items`, `id`, `order`, `_id`, `status`, `ship`, `ped`, `paid`, `pending`,
	` the`, ` a`, ` cat`, ` sat`, `Hello`, ` world`, `Sure`, `!`, `json`, "```", "```json", "```json\n",
	`<tool`, `_call`, `>`, `<tool_call>`, `12`, `345`, `0.`, `00`,
}

func newFakeModel() *fakeModel {
	f := &fakeModel{ctx: 4096, nseq: 4, batch: 512}
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
func (f *fakeModel) Sequences() int                { return f.nseq }
func (f *fakeModel) BatchSize() int                { return f.batch }
func (f *fakeModel) ChatTemplate() string          { return f.tmpl }
func (f *fakeModel) Close() error                  { f.closed = true; return nil }

// Tokenize is greedy longest match over the normal tokens (special tokens
// too with parseSpecial). Prompts (addSpecial) are recorded, so that the
// script can tell a sequence's prompt from its output.
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
	if addSpecial {
		f.mu.Lock()
		f.prompts = append(f.prompts, slices.Clone(out))
		f.mu.Unlock()
	}
	return out, nil
}

// promptLen is the length of the longest recorded prompt that starts seq.
func (f *fakeModel) promptLen(seq []int32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.prompts {
		if len(p) > n && len(p) <= len(seq) && slices.Equal(p, seq[:len(p)]) {
			n = len(p)
		}
	}
	return n
}

// inPromptAt reports whether position pos of seq is part of a recorded
// prompt (seq[:pos+1] starts one).
func (f *fakeModel) inPromptAt(seq []int32, pos int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.prompts {
		if pos < len(p) && slices.Equal(p[:pos+1], seq[:pos+1]) {
			return true
		}
	}
	return false
}

func (f *fakeModel) init() {
	if f.seqs == nil {
		f.seqs = make([][]int32, f.nseq)
		f.cells = make([][]int, f.nseq)
		f.refs = map[int]int{}
	}
}

// usedCells is the number of cells some sequence holds.
func (f *fakeModel) usedCells() int { return len(f.refs) }

func (f *fakeModel) Decode(b *engine.Batch) error {
	if f.gate != nil {
		<-f.gate
	}
	f.init()
	switch {
	case f.closed:
		return errors.New("fake: closed")
	case b.Len() == 0:
		return errors.New("fake: empty batch")
	case b.Len() > f.batch:
		return fmt.Errorf("fake: batch of %d entries, more than %d", b.Len(), f.batch)
	case len(f.refs)+b.Len() > f.ctx:
		return fmt.Errorf("fake: %d cells used, %d more: %w", len(f.refs), b.Len(), engine.ErrContextFull)
	}
	next := map[int32]int{}
	for i := range b.Len() {
		seq, pos, tok := b.Seq[i], int(b.Pos[i]), b.Token[i]
		if seq < 0 || int(seq) >= f.nseq {
			return fmt.Errorf("fake: entry %d: sequence %d out of range", i, seq)
		}
		want, ok := next[seq]
		if !ok {
			want = len(f.seqs[seq])
		}
		if pos != want {
			return fmt.Errorf("fake: entry %d: sequence %d at position %d, want %d", i, seq, pos, want)
		}
		next[seq] = pos + 1
		if tok < 0 || int(tok) >= len(f.toks) {
			return fmt.Errorf("fake: token %d out of range", tok)
		}
		if f.failAt > 0 && pos+1 >= f.failAt {
			return errors.New("fake: decode failure")
		}
	}
	f.rows = f.rows[:0]
	after, nbuf := 0, 0
	for i := range b.Len() {
		seq := b.Seq[i]
		f.seqs[seq] = append(f.seqs[seq], b.Token[i])
		f.cells[seq] = append(f.cells[seq], f.nextCell)
		f.refs[f.nextCell] = 1
		f.nextCell++
		var row []float32
		if b.Logits[i] {
			if nbuf == len(f.bufs) {
				f.bufs = append(f.bufs, make([]float32, len(f.toks)))
			}
			row = f.bufs[nbuf]
			nbuf++
			f.compute(row, f.seqs[seq])
		}
		f.rows = append(f.rows, row)
	}
	promptSeqs, outSeqs := map[int32]bool{}, map[int32]bool{}
	for i := range b.Len() {
		if !f.inPromptAt(f.seqs[b.Seq[i]], int(b.Pos[i])) {
			after++
			outSeqs[b.Seq[i]] = true
		} else {
			promptSeqs[b.Seq[i]] = true
			f.inPrompt++
			f.promptRead.Add(1)
		}
	}
	for s := range promptSeqs {
		if len(outSeqs) > 1 || (len(outSeqs) == 1 && !outSeqs[s]) {
			f.mixed++
			break
		}
	}
	if after > 0 {
		f.decodes = append(f.decodes, after)
	}
	f.batches = append(f.batches, b.Len())
	f.maxSeqs = max(f.maxSeqs, len(next))
	return nil
}

func (f *fakeModel) Logits(i int) []float32 {
	if i < 0 || i >= len(f.rows) || f.rows[i] == nil {
		panic(fmt.Sprintf("fake: Logits(%d) of an entry that did not ask for logits", i))
	}
	return f.rows[i]
}

func (f *fakeModel) Remove(seq, pos int) error {
	f.init()
	if seq < 0 || seq >= f.nseq || pos < 0 || pos > len(f.seqs[seq]) {
		return fmt.Errorf("fake: Remove(%d, %d)", seq, pos)
	}
	if pos == 0 && len(f.seqs[seq]) > 0 {
		f.done = append(f.done, slices.Clone(f.seqs[seq]))
	}
	for _, c := range f.cells[seq][pos:] {
		if f.refs[c]--; f.refs[c] == 0 {
			delete(f.refs, c)
		}
	}
	f.seqs[seq], f.cells[seq] = f.seqs[seq][:pos], f.cells[seq][:pos]
	f.rows = nil
	return nil
}

func (f *fakeModel) Copy(src, dst, n int) error {
	f.init()
	if src < 0 || src >= f.nseq || dst < 0 || dst >= f.nseq || n > len(f.seqs[src]) || len(f.seqs[dst]) != 0 {
		return fmt.Errorf("fake: Copy(%d, %d, %d)", src, dst, n)
	}
	f.seqs[dst] = slices.Clone(f.seqs[src][:n])
	f.cells[dst] = slices.Clone(f.cells[src][:n])
	for _, c := range f.cells[dst] {
		f.refs[c]++
	}
	f.rows = nil
	return nil
}

// lastPrompt returns the tokens of the last sequence removed, cut at its
// prompt, and its output tokens.
func (f *fakeModel) last() (prompt, output []int32) {
	s := f.done[len(f.done)-1]
	n := f.promptLen(s)
	return s[:n], s[n:]
}

// compute writes the logits after the tokens of a sequence into l.
func (f *fakeModel) compute(l []float32, seq []int32) {
	if f.script != nil {
		var done []byte
		for _, t := range seq[f.promptLen(seq):] {
			done = append(done, f.toks[t]...)
		}
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
	pos, last := uint64(len(seq)), uint64(seq[len(seq)-1])
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
