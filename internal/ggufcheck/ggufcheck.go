// Package ggufcheck validates the structure of a GGUF header against the
// size of its file, before the header is decoded with
// github.com/ollama/ollama/fs/ggml or the file is handed to llama.cpp.
//
// ggml.Decode trusts the lengths it reads: it allocates (and clears) a
// string's bytes before reading them, loops over an array's claimed length
// even past the end of the file, divides by the alignment, and panics on
// some malformed input. llama.cpp aborts the process on some malformed
// files. Check walks the header without keeping any value and rejects
// every length that does not fit in the file, so both are only ever given
// a structurally sound header. It reads the header once, sequentially,
// and allocates nothing proportional to the file.
package ggufcheck

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Errors Check wraps; test with errors.Is.
var (
	// ErrNotGGUF: the file does not start with the GGUF magic.
	ErrNotGGUF = errors.New("not a GGUF file")
	// ErrTruncated: a length in the header runs past the end of the file.
	ErrTruncated = errors.New("truncated GGUF file")
	// ErrMalformed: an unknown version or value type, an absurd count, a
	// bad alignment.
	ErrMalformed = errors.New("malformed GGUF header")
)

// Limits. Real files stay far below them; the limits exist so that a
// hostile header cannot make a reader allocate or loop without bound.
const (
	// MaxKeyLen: the GGUF spec caps keys (and tensor names) at 65,535
	// bytes.
	MaxKeyLen = 1<<16 - 1
	// MaxArrayLen bounds array lengths. The largest arrays in real files
	// are vocabularies and merge lists (Llama-3: 280,147 merges; the
	// largest vocabularies ~260k tokens).
	MaxArrayLen = 1 << 24
	// MaxDims is GGML_MAX_DIMS.
	MaxDims = 4
)

// Versions llama.cpp reads (version 1 was dropped in 2023).
const (
	MinVersion = 2
	MaxVersion = 3
)

// GGUF value types.
const (
	typeU8 = iota
	typeI8
	typeU16
	typeI16
	typeU32
	typeI32
	typeF32
	typeBool
	typeString
	typeArray
	typeU64
	typeI64
	typeF64
)

var typeSize = [...]int64{typeU8: 1, typeI8: 1, typeU16: 2, typeI16: 2, typeU32: 4, typeI32: 4,
	typeF32: 4, typeBool: 1, typeU64: 8, typeI64: 8, typeF64: 8}

// Header is what Check learns on the way.
type Header struct {
	Version  uint32
	KVs      uint64 // metadata pairs
	Tensors  uint64
	DataFrom int64 // offset where the header ends (tensor data follows, aligned)
	// Arrays holds the length of every array-valued key, e.g.
	// Arrays["tokenizer.ggml.tokens"] is the vocabulary size.
	Arrays map[string]uint64
}

type scanner struct {
	r     *bufio.Reader
	order binary.ByteOrder
	off   int64 // bytes consumed
	size  int64 // file size
	buf   [8]byte
}

// Check validates the GGUF header at the start of r (a file of size
// bytes): magic, version, every key, string and array within the file
// and the limits above, known value types, at most MaxDims tensor
// dimensions and a power-of-two general.alignment. Errors say what is
// wrong at which offset and wrap ErrNotGGUF, ErrTruncated or ErrMalformed
// (or are read errors). Big-endian GGUF is rejected: neither ollama's
// reader nor llama.cpp on a little-endian machine reads it.
func Check(r io.Reader, size int64) (*Header, error) {
	s := &scanner{r: bufio.NewReaderSize(r, 64<<10), size: size}
	if size < 4 {
		return nil, fmt.Errorf("%w: the file is only %d bytes long", ErrNotGGUF, size)
	}
	magic, err := s.read(4, "magic")
	if err != nil {
		return nil, err
	}
	switch string(magic) {
	case "GGUF":
		s.order = binary.LittleEndian
	case "FUGG":
		return nil, fmt.Errorf("%w: big-endian GGUF is not supported", ErrNotGGUF)
	default:
		return nil, fmt.Errorf("%w: it starts with %q%s", ErrNotGGUF, magic, hint(magic))
	}
	h := &Header{Arrays: map[string]uint64{}}
	if h.Version, err = s.u32("version"); err != nil {
		return nil, err
	}
	if h.Version < MinVersion || h.Version > MaxVersion {
		return nil, fmt.Errorf("%w: GGUF version %d (readable: %d to %d)", ErrMalformed, h.Version, MinVersion, MaxVersion)
	}
	if h.Tensors, err = s.u64("tensor count"); err != nil {
		return nil, err
	}
	if h.KVs, err = s.u64("metadata count"); err != nil {
		return nil, err
	}
	// A metadata pair takes at least 12 bytes (key length, type), a
	// tensor info at least 24 (name length, dims, type, offset).
	if h.KVs > uint64(size)/12 || h.Tensors > uint64(size)/24 {
		return nil, fmt.Errorf("%w: the header claims %d metadata pairs and %d tensors, more than a %d-byte file holds", ErrTruncated, h.KVs, h.Tensors, size)
	}
	for i := uint64(0); i < h.KVs; i++ {
		at := s.off
		key, err := s.str("metadata key", MaxKeyLen)
		if err != nil {
			return nil, fmt.Errorf("metadata pair %d: %w", i, err)
		}
		typ, err := s.u32("value type")
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", key, err)
		}
		if key == "general.alignment" {
			if typ != typeU32 {
				return nil, fmt.Errorf("%w: metadata %q at offset %d has type %d, want uint32", ErrMalformed, key, at, typ)
			}
			a, err := s.u32("value")
			if err != nil {
				return nil, fmt.Errorf("metadata %q: %w", key, err)
			}
			if a == 0 || a&(a-1) != 0 {
				return nil, fmt.Errorf("%w: metadata %q = %d at offset %d: alignment must be a power of two", ErrMalformed, key, a, at)
			}
			continue
		}
		n, err := s.value(typ)
		if err != nil {
			return nil, fmt.Errorf("metadata %q (offset %d): %w", key, at, err)
		}
		if typ == typeArray {
			h.Arrays[key] = n
		}
	}
	for i := uint64(0); i < h.Tensors; i++ {
		name, err := s.str("tensor name", MaxKeyLen)
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		dims, err := s.u32("dimension count")
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		if dims == 0 || dims > MaxDims {
			return nil, fmt.Errorf("%w: tensor %q has %d dimensions (1 to %d)", ErrMalformed, name, dims, MaxDims)
		}
		if _, err := s.read(int64(dims)*8+4+8, "tensor shape, type and offset"); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
	}
	h.DataFrom = s.off
	return h, nil
}

// hint names formats often mistaken for GGUF.
func hint(magic []byte) string {
	switch string(magic) {
	case "lmgg", "fmgg", "tjgg", "algg":
		return " (a pre-GGUF GGML file: convert it with llama.cpp's convert scripts)"
	case "PK\x03\x04":
		return " (a zip archive, e.g. a PyTorch checkpoint: convert it to GGUF)"
	}
	switch magic[0] {
	case '{', '[', '<', '#':
		return " (a text file)"
	}
	return ""
}

// value skips a value of type typ; for an array it returns its length.
func (s *scanner) value(typ uint32) (uint64, error) {
	switch {
	case typ == typeString:
		_, err := s.str("string", -1)
		return 0, err
	case typ == typeArray:
		et, err := s.u32("array element type")
		if err != nil {
			return 0, err
		}
		n, err := s.u64("array length")
		if err != nil {
			return 0, err
		}
		if n > MaxArrayLen {
			return 0, fmt.Errorf("%w: an array of %d elements (limit %d)", ErrMalformed, n, MaxArrayLen)
		}
		switch {
		case et == typeString:
			// Each string takes at least its 8-byte length.
			if n > uint64(s.size-s.off)/8 {
				return 0, fmt.Errorf("%w: an array of %d strings at offset %d, more than the %d bytes left hold", ErrTruncated, n, s.off, s.size-s.off)
			}
			for j := uint64(0); j < n; j++ {
				if _, err := s.str("array string", -1); err != nil {
					return 0, fmt.Errorf("element %d: %w", j, err)
				}
			}
			return n, nil
		case et == typeArray:
			return 0, fmt.Errorf("%w: arrays of arrays are not supported", ErrMalformed)
		case int(et) < len(typeSize) && typeSize[et] > 0:
			_, err := s.read(int64(n)*typeSize[et], "array data")
			return n, err
		}
		return 0, fmt.Errorf("%w: unknown array element type %d", ErrMalformed, et)
	case int(typ) < len(typeSize) && typeSize[typ] > 0:
		_, err := s.read(typeSize[typ], "value")
		return 0, err
	}
	return 0, fmt.Errorf("%w: unknown value type %d", ErrMalformed, typ)
}

// read consumes n bytes; it returns them only if n ≤ 8.
func (s *scanner) read(n int64, what string) ([]byte, error) {
	if n < 0 || n > s.size-s.off {
		return nil, fmt.Errorf("%w: %s at offset %d needs %d bytes, the file has %d left", ErrTruncated, what, s.off, n, s.size-s.off)
	}
	s.off += n
	if n <= 8 {
		b := s.buf[:n]
		if _, err := io.ReadFull(s.r, b); err != nil {
			return nil, fmt.Errorf("%s at offset %d: %w", what, s.off-n, readErr(err))
		}
		return b, nil
	}
	if _, err := s.r.Discard(int(n)); err != nil {
		return nil, fmt.Errorf("%s at offset %d: %w", what, s.off-n, readErr(err))
	}
	return nil, nil
}

// readErr marks an early end of file (the file shrank, or size was
// wrong) as truncation.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %v", ErrTruncated, err)
	}
	return err
}

func (s *scanner) u32(what string) (uint32, error) {
	b, err := s.read(4, what)
	if err != nil {
		return 0, err
	}
	return s.order.Uint32(b), nil
}

func (s *scanner) u64(what string) (uint64, error) {
	b, err := s.read(8, what)
	if err != nil {
		return 0, err
	}
	return s.order.Uint64(b), nil
}

// str consumes a string; it returns its text only if max ≥ 0, and then
// fails if it is longer than max.
func (s *scanner) str(what string, max int) (string, error) {
	n, err := s.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(s.size-s.off) {
		return "", fmt.Errorf("%w: %s at offset %d is %d bytes long, the file has %d left", ErrTruncated, what, s.off, n, s.size-s.off)
	}
	if max < 0 {
		_, err := s.read(int64(n), what)
		return "", err
	}
	if n > uint64(max) {
		return "", fmt.Errorf("%w: %s at offset %d is %d bytes long (limit %d)", ErrMalformed, what, s.off, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(s.r, b); err != nil {
		return "", fmt.Errorf("%s at offset %d: %w", what, s.off, readErr(err))
	}
	s.off += int64(n)
	return string(b), nil
}
