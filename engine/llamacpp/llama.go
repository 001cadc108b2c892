//go:build llamacpp

package llamacpp

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"

	// The import builds and links llama.cpp and ggml (its cgo packages).
	_ "github.com/ollama/ollama/llama"

	"github.com/structgen/structgen/engine"
)

// In this package m is always a *Model, tok a token id and pos a position.

var _ engine.Model = (*Model)(nil)

var (
	// backendOnce initialises llama.cpp once per process. The CPU backend
	// is linked in statically; llama.BackendInit would also search
	// ollama's library folders for GPU backends (none exist here) and log
	// the CPU features through slog on every start.
	backendOnce sync.Once
	// loadMu serializes calls that read llama.cpp's process-wide log.
	loadMu sync.Mutex
)

// Model is a GGUF model loaded into llama.cpp with a context of
// Options.Sequences sequences in one unified KV cache. It implements
// engine.Model.
type Model struct {
	mu     sync.RWMutex // guards the C handles against Close: Close writes, the rest read
	info   FileInfo
	opts   resolved
	vocab  bool // loaded vocabulary-only
	closed bool

	model *C.struct_llama_model
	voc   *C.struct_llama_vocab
	ctx   *C.struct_llama_context
	pool  *C.struct_ggml_threadpool // CPU threads without polling (nil: llama.cpp's own)
	mem   C.llama_memory_t
	batch C.struct_llama_batch

	nVocab int
	pieces []byte  // all token bytes, back to back
	ends   []int64 // token i is pieces[ends[i-1]:ends[i]]
	attrs  []int32 // llama_token_attr bits per token
	eog    []int32 // sorted
	isEOG  []bool
	bos    int32
	addBOS bool
	tmpl   string
	nCtx   int    // cells of the cache, shared by all sequences
	nSeq   int    // sequences
	rec    bool   // recurrent memory: no partial removal, no sharing
	npos   []int  // positions each sequence holds
	rows   []bool // entries of the last successful Decode that have logits

	// Cell accounting, so that ContextSize is exact (llama.cpp pads its
	// cache, and would take more): the cell of each position of each
	// sequence, how many sequences hold each cell, and the free cells.
	cells [][]int32
	refs  []int32
	spare []int32
}

// llama_token_attr bits (llama.h) that make a token special: grammar text
// never produces it.
const specialAttrs = C.LLAMA_TOKEN_ATTR_CONTROL | C.LLAMA_TOKEN_ATTR_UNKNOWN | C.LLAMA_TOKEN_ATTR_UNUSED

// Load reads a GGUF model. It checks the file in Go first (Inspect) and
// opts against it, so that a missing file, a file that is not GGUF, a
// truncated one, an unknown architecture or a context larger than the
// trained one is a *LoadError naming the file, never a crash in C.
func Load(path string, opts Options) (*Model, error) {
	info, err := inspect(path)
	if err != nil {
		return nil, &LoadError{Path: path, Err: err}
	}
	r, err := opts.resolve(info)
	if err != nil {
		return nil, &LoadError{Path: path, Err: err}
	}
	backendOnce.Do(func() { C.llama_backend_init() })

	loadMu.Lock()
	defer loadMu.Unlock()
	takeLog() // forget what earlier calls logged

	m := &Model{info: *info, opts: r, vocab: opts.VocabOnly}
	if err := m.load(path, opts); err != nil {
		m.free()
		return nil, &LoadError{Path: path, Err: err}
	}
	return m, nil
}

func (m *Model) load(path string, opts Options) error {
	mp := C.llama_model_default_params()
	mp.vocab_only = C.bool(opts.VocabOnly)
	mp.use_mmap = true
	// A panic must not unwind through llama.cpp's frames: the callback
	// recovers it, stops the load, and Load reports it.
	var cbPanic any
	if opts.Progress != nil {
		h := cgo.NewHandle(func(p float32) (goOn bool) {
			defer func() {
				if r := recover(); r != nil {
					cbPanic, goOn = r, false
				}
			}()
			opts.Progress(p)
			return true
		})
		defer h.Delete()
		ph := &progressHandle{h: h}
		var pin runtime.Pinner
		pin.Pin(ph)
		defer pin.Unpin()
		C.structgen_set_progress(&mp, unsafe.Pointer(ph))
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	m.model = C.llama_model_load_from_file(cpath, mp)
	if cbPanic != nil {
		takeLog()
		return fmt.Errorf("%w: the Progress callback panicked: %v", ErrBadOptions, cbPanic)
	}
	if m.model == nil {
		return llamaErr("llama_model_load_from_file")
	}
	m.voc = C.llama_model_get_vocab(m.model)
	if err := m.loadVocab(); err != nil {
		return err
	}
	if t := C.llama_model_chat_template(m.model, nil); t != nil {
		m.tmpl = C.GoString(t)
	}
	if opts.VocabOnly {
		return nil
	}
	if bool(C.llama_model_has_encoder(m.model)) || !bool(C.llama_model_has_decoder(m.model)) {
		return fmt.Errorf("%w %q: the model is not a decoder-only text generator", ErrUnsupportedArch, m.info.Arch)
	}

	cp := C.llama_context_default_params()
	cp.n_ctx = C.uint32_t(m.opts.ctx)
	cp.n_batch = C.uint32_t(m.opts.batch)
	cp.n_ubatch = C.uint32_t(m.opts.batch)
	cp.n_seq_max = C.uint32_t(m.opts.seqs)
	cp.kv_unified = true // one pool of cells for all sequences; shared prefixes cost nothing
	cp.n_threads = C.int32_t(m.opts.threads)
	cp.n_threads_batch = C.int32_t(m.opts.threads)
	cp.embeddings = false
	cp.no_perf = true
	m.ctx = C.llama_init_from_model(m.model, cp)
	if m.ctx == nil {
		return llamaErr("llama_init_from_model")
	}
	if m.opts.threads > 1 {
		m.pool = C.structgen_attach_threadpool(m.ctx, C.int(m.opts.threads))
	}
	m.nCtx = min(m.opts.ctx, int(C.llama_n_ctx(m.ctx)))
	m.nSeq = int(C.llama_n_seq_max(m.ctx))
	if m.nSeq != m.opts.seqs {
		return fmt.Errorf("%w: asked for %d sequences, llama.cpp made %d", ErrLlama, m.opts.seqs, m.nSeq)
	}
	m.npos = make([]int, m.nSeq)
	m.cells = make([][]int32, m.nSeq)
	m.refs = make([]int32, m.nCtx)
	m.spare = make([]int32, m.nCtx)
	for i := range m.spare {
		m.spare[i] = int32(m.nCtx - 1 - i)
	}
	m.rec = bool(C.llama_model_is_recurrent(m.model)) || bool(C.llama_model_is_hybrid(m.model))
	m.mem = C.llama_get_memory(m.ctx)
	m.batch = C.llama_batch_init(C.int32_t(m.opts.batch), 0, 1)
	if m.batch.token == nil || m.batch.pos == nil || m.batch.n_seq_id == nil || m.batch.seq_id == nil || m.batch.logits == nil {
		return fmt.Errorf("%w: cannot allocate a batch of %d tokens", ErrLlama, m.opts.batch)
	}
	seqIDs := unsafe.Slice(m.batch.seq_id, m.opts.batch)
	nSeq := unsafe.Slice(m.batch.n_seq_id, m.opts.batch)
	for i := range seqIDs {
		if seqIDs[i] == nil {
			return fmt.Errorf("%w: cannot allocate a batch of %d tokens", ErrLlama, m.opts.batch)
		}
		nSeq[i] = 1 // one sequence per entry; its id is set by Decode
	}
	return nil
}

// llamaErr is the error for a NULL from llama.cpp: what it logged.
func llamaErr(call string) error {
	if msg := takeLog(); msg != "" {
		return fmt.Errorf("%w: %s", ErrLlama, msg)
	}
	return fmt.Errorf("%w: %s returned NULL", ErrLlama, call)
}

// loadVocab renders every token once, so that the vocabulary methods are
// table look-ups.
func (m *Model) loadVocab() error {
	n := int(C.llama_vocab_n_tokens(m.voc))
	if n <= 0 {
		return fmt.Errorf("%w: the vocabulary has %d tokens", ErrLlama, n)
	}
	m.nVocab = n
	m.ends = make([]int64, n)
	m.attrs = make([]int32, n)
	eog := make([]uint8, n)
	// Real vocabularies average 4 to 7 bytes per token.
	buf := make([]byte, 8*n)
	for range 2 {
		need := int64(C.structgen_vocab_table(m.voc, (*C.char)(unsafe.Pointer(&buf[0])), C.int64_t(len(buf)),
			(*C.int64_t)(unsafe.Pointer(&m.ends[0])), (*C.int32_t)(unsafe.Pointer(&m.attrs[0])), (*C.uint8_t)(unsafe.Pointer(&eog[0]))))
		if need < 0 {
			return fmt.Errorf("%w: cannot render the vocabulary's tokens", ErrLlama)
		}
		if need <= int64(len(buf)) {
			m.pieces = buf[:need:need]
			break
		}
		buf = make([]byte, need)
	}
	m.isEOG = make([]bool, n)
	for i, e := range eog {
		if e != 0 {
			m.isEOG[i] = true
			m.eog = append(m.eog, int32(i))
		}
	}
	bos := int32(C.llama_vocab_bos(m.voc))
	m.bos = bos
	m.addBOS = bos >= 0 && int(bos) < n && bool(C.llama_vocab_get_add_bos(m.voc))
	return nil
}

// free releases the C handles; Close and a failed Load call it.
func (m *Model) free() {
	if m.batch.token != nil {
		C.llama_batch_free(m.batch)
		m.batch = C.struct_llama_batch{}
	}
	if m.ctx != nil {
		C.llama_free(m.ctx)
		m.ctx = nil
		m.mem = nil
	}
	if m.pool != nil {
		C.structgen_free_threadpool(m.pool)
		m.pool = nil
	}
	if m.model != nil {
		C.llama_model_free(m.model)
		m.model = nil
		m.voc = nil
	}
	m.rows = nil
}

// Close frees the model and its context. It is idempotent.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.closed = true
		m.free()
	}
	return nil
}

// Info returns what Load read from the file's header.
func (m *Model) Info() FileInfo { return m.info }

// VocabSize implements engine.Model.
func (m *Model) VocabSize() int { return m.nVocab }

// TokenBytes implements engine.Model.
func (m *Model) TokenBytes(tok int32) []byte {
	if tok < 0 || int(tok) >= m.nVocab {
		return nil
	}
	var start int64
	if tok > 0 {
		start = m.ends[tok-1]
	}
	end := m.ends[tok]
	return m.pieces[start:end:end]
}

// TokenIsSpecial implements engine.Model: control, unknown and unused
// tokens.
func (m *Model) TokenIsSpecial(tok int32) bool {
	return tok >= 0 && int(tok) < m.nVocab && m.attrs[tok]&specialAttrs != 0
}

// TokenIsByte reports whether tok is a byte-fallback token (<0xXX>).
func (m *Model) TokenIsByte(tok int32) bool {
	return tok >= 0 && int(tok) < m.nVocab && m.attrs[tok]&C.LLAMA_TOKEN_ATTR_BYTE != 0
}

// EOG implements engine.Model.
func (m *Model) EOG() []int32 { return m.eog }

// IsEOG implements engine.Model.
func (m *Model) IsEOG(tok int32) bool {
	return tok >= 0 && int(tok) < m.nVocab && m.isEOG[tok]
}

// BOS implements engine.Model.
func (m *Model) BOS() (int32, bool) { return m.bos, m.addBOS }

// ChatTemplate implements engine.Model.
func (m *Model) ChatTemplate() string { return m.tmpl }

// ContextSize implements engine.Model: the cells of the unified cache; 0
// for a vocabulary-only model.
func (m *Model) ContextSize() int { return m.nCtx }

// Sequences implements engine.Model; 0 for a vocabulary-only model.
func (m *Model) Sequences() int { return m.nSeq }

// BatchSize implements engine.Model.
func (m *Model) BatchSize() int { return m.opts.batch }

// maxTokenizeBytes bounds Tokenize's input: llama.cpp counts bytes and
// tokens in int32.
const maxTokenizeBytes = math.MaxInt32 / 2

// emptyText is what Tokenize hands llama.cpp for empty input (it builds a
// std::string from the pointer, which must not be NULL).
var emptyText [1]byte

// Tokenize implements engine.Model.
func (m *Model) Tokenize(text []byte, addSpecial, parseSpecial bool) ([]int32, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	if len(text) > maxTokenizeBytes {
		return nil, fmt.Errorf("llamacpp: tokenize: %d bytes of text, more than the %d llama.cpp can count", len(text), maxTokenizeBytes)
	}
	p := &emptyText[0]
	if len(text) > 0 {
		p = &text[0]
	}
	// A token covers at least one byte; BOS/EOS add a few.
	out := make([]int32, len(text)+4)
	for range 2 {
		n := C.llama_tokenize(m.voc, (*C.char)(unsafe.Pointer(p)), C.int32_t(len(text)),
			(*C.llama_token)(unsafe.Pointer(&out[0])), C.int32_t(len(out)), C.bool(addSpecial), C.bool(parseSpecial))
		if n >= 0 {
			return out[:n:n], nil
		}
		if n == math.MinInt32 {
			return nil, fmt.Errorf("llamacpp: tokenize: the result overflows int32")
		}
		out = make([]int32, -n)
	}
	return nil, fmt.Errorf("llamacpp: tokenize: llama.cpp asked for a larger buffer twice")
}

// Detokenize turns tokens back into bytes as llama.cpp does for a whole
// sequence (it may drop the leading space SentencePiece adds). With
// removeSpecial, BOS/EOS the model adds are dropped; with unparseSpecial,
// special tokens are rendered as text instead of dropped.
func (m *Model) Detokenize(tokens []int32, removeSpecial, unparseSpecial bool) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	if err := m.checkTokens(tokens); err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return []byte{}, nil
	}
	size := 0
	for _, t := range tokens {
		size += len(m.TokenBytes(t))
	}
	out := make([]byte, size+16)
	for range 2 {
		n := C.llama_detokenize(m.voc, (*C.llama_token)(unsafe.Pointer(&tokens[0])), C.int32_t(len(tokens)),
			(*C.char)(unsafe.Pointer(&out[0])), C.int32_t(len(out)), C.bool(removeSpecial), C.bool(unparseSpecial))
		if n >= 0 {
			return out[:n:n], nil
		}
		out = make([]byte, -n)
	}
	return nil, fmt.Errorf("llamacpp: detokenize: llama.cpp asked for a larger buffer twice")
}

func (m *Model) checkTokens(tokens []int32) error {
	for i, t := range tokens {
		if t < 0 || int(t) >= m.nVocab {
			return fmt.Errorf("llamacpp: token %d at index %d is out of range [0, %d)", t, i, m.nVocab)
		}
	}
	return nil
}

// Decode implements engine.Model: one llama_decode of the batch. It does
// not allocate when it succeeds. The batch is checked in Go first (sizes,
// sequence ids, tokens, positions that continue each sequence's cache), so
// that a malformed batch is an error naming the entry rather than an abort
// in C.
func (m *Model) Decode(b *engine.Batch) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := b.Len()
	switch {
	case m.closed:
		return ErrClosed
	case m.vocab:
		return ErrVocabOnly
	case n == 0:
		return errors.New("llamacpp: Decode of an empty batch")
	case n > m.opts.batch:
		return fmt.Errorf("llamacpp: a batch of %d entries, more than the batch size %d", n, m.opts.batch)
	case len(b.Seq) != n || len(b.Pos) != n || len(b.Logits) != n:
		return errors.New("llamacpp: a batch whose slices differ in length (use Batch.Add)")
	case n > len(m.spare):
		return fmt.Errorf("llamacpp: a batch of %d entries, %d of the %d cells are free: %w", n, len(m.spare), m.nCtx, ErrKVCacheFull)
	}
	m.rows = m.rows[:0]
	tok := unsafe.Slice(m.batch.token, n)
	bpos := unsafe.Slice(m.batch.pos, n)
	seqIDs := unsafe.Slice(m.batch.seq_id, n)
	out := unsafe.Slice(m.batch.logits, n)
	var next [MaxSequences]int32 // expected next position per sequence, +1 (0: not seen yet)
	for i := range n {
		t, seq, pos := b.Token[i], b.Seq[i], b.Pos[i]
		if t < 0 || int(t) >= m.nVocab {
			return fmt.Errorf("llamacpp: entry %d: token %d is out of range [0, %d)", i, t, m.nVocab)
		}
		if seq < 0 || int(seq) >= m.nSeq {
			return fmt.Errorf("llamacpp: entry %d: sequence %d is out of range [0, %d)", i, seq, m.nSeq)
		}
		want := int32(m.npos[seq])
		if next[seq] > 0 {
			want = next[seq] - 1
		}
		if pos != want {
			return fmt.Errorf("llamacpp: entry %d: sequence %d at position %d, but it continues at %d", i, seq, pos, want)
		}
		if int(pos) >= m.nCtx {
			return fmt.Errorf("llamacpp: entry %d: position %d of sequence %d is past the context of %d: %w", i, pos, seq, m.nCtx, ErrKVCacheFull)
		}
		next[seq] = pos + 2
		tok[i] = C.llama_token(t)
		bpos[i] = C.llama_pos(pos)
		*seqIDs[i] = C.llama_seq_id(seq)
		out[i] = 0
		if b.Logits[i] {
			out[i] = 1
		}
	}
	m.batch.n_tokens = C.int32_t(n)
	if rc := C.llama_decode(m.ctx, m.batch); rc != 0 {
		// Status 1 and -1 leave the memory as it was; after others
		// (aborted, fatal) drop what the batch added.
		for seq, p := range next {
			if p > 0 {
				C.llama_memory_seq_rm(m.mem, C.llama_seq_id(seq), C.llama_pos(m.npos[seq]), -1)
			}
		}
		return decodeErr(int(rc), n)
	}
	for seq, p := range next {
		if p > 0 {
			m.npos[seq] = int(p - 1)
		}
	}
	for _, seq := range b.Seq {
		c := m.spare[len(m.spare)-1]
		m.spare = m.spare[:len(m.spare)-1]
		m.refs[c] = 1
		m.cells[seq] = append(m.cells[seq], c)
	}
	m.rows = append(m.rows, b.Logits...)
	return nil
}

// drop releases the cells of positions pos.. of seq.
func (m *Model) drop(seq, pos int) {
	for _, c := range m.cells[seq][pos:] {
		if m.refs[c]--; m.refs[c] == 0 {
			m.spare = append(m.spare, c)
		}
	}
	m.cells[seq] = m.cells[seq][:pos]
	m.npos[seq] = pos
}

// decodeErr turns llama_decode's status into an error.
func decodeErr(rc, n int) error {
	what := fmt.Sprintf("llamacpp: decoding a batch of %d entries", n)
	switch {
	case rc == 1:
		return fmt.Errorf("%s: %w", what, ErrKVCacheFull)
	case rc == 2:
		return fmt.Errorf("%s: %w: aborted", what, ErrLlama)
	case rc == -1:
		return fmt.Errorf("%s: %w: invalid batch %s", what, ErrLlama, takeLog())
	default:
		return fmt.Errorf("%s: %w: status %d %s", what, ErrLlama, rc, takeLog())
	}
}

// Logits implements engine.Model: a view of llama.cpp's output buffer
// for entry i of the last Decode; nil if that entry asked for no logits
// or the buffer was invalidated (Remove, Copy, Close).
func (m *Model) Logits(i int) []float32 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed || i < 0 || i >= len(m.rows) || !m.rows[i] {
		return nil
	}
	p := C.llama_get_logits_ith(m.ctx, C.int32_t(i))
	if p == nil {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), m.nVocab)
}

// Remove implements engine.Model. A recurrent model can only drop a
// whole sequence (pos 0).
func (m *Model) Remove(seq, pos int) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	switch {
	case m.closed:
		return ErrClosed
	case m.vocab:
		return ErrVocabOnly
	case seq < 0 || seq >= m.nSeq:
		return fmt.Errorf("llamacpp: Remove: sequence %d is out of range [0, %d)", seq, m.nSeq)
	case pos < 0 || pos > m.npos[seq]:
		return fmt.Errorf("llamacpp: Remove(%d, %d): the sequence holds positions 0..%d", seq, pos, m.npos[seq]-1)
	case pos == m.npos[seq]:
		return nil
	}
	m.rows = m.rows[:0]
	if !bool(C.llama_memory_seq_rm(m.mem, C.llama_seq_id(seq), C.llama_pos(pos), -1)) {
		return fmt.Errorf("%w: this model's memory cannot drop positions %d.. of a sequence (recurrent state): %w", ErrLlama, pos, engine.ErrUnsupported)
	}
	m.drop(seq, pos)
	return nil
}

// Copy implements engine.Model with llama_memory_seq_cp: in the unified
// cache the cells get dst's id too, so nothing is duplicated. Recurrent
// models return an error wrapping engine.ErrUnsupported.
func (m *Model) Copy(src, dst, n int) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	switch {
	case m.closed:
		return ErrClosed
	case m.vocab:
		return ErrVocabOnly
	case m.rec:
		return fmt.Errorf("llamacpp: Copy: a recurrent model's sequences cannot share positions: %w", engine.ErrUnsupported)
	case src < 0 || src >= m.nSeq || dst < 0 || dst >= m.nSeq || src == dst:
		return fmt.Errorf("llamacpp: Copy(%d, %d): sequences out of range [0, %d) or equal", src, dst, m.nSeq)
	case n < 0 || n > m.npos[src]:
		return fmt.Errorf("llamacpp: Copy of %d positions: sequence %d holds %d", n, src, m.npos[src])
	case m.npos[dst] != 0:
		return fmt.Errorf("llamacpp: Copy into sequence %d, which holds %d positions (Remove it first)", dst, m.npos[dst])
	}
	m.rows = m.rows[:0]
	C.llama_memory_seq_cp(m.mem, C.llama_seq_id(src), C.llama_seq_id(dst), 0, C.llama_pos(n))
	m.npos[dst] = n
	m.cells[dst] = append(m.cells[dst][:0], m.cells[src][:n]...)
	for _, c := range m.cells[dst] {
		m.refs[c]++
	}
	return nil
}
