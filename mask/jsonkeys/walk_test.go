package jsonkeys_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
	"github.com/structgen/structgen/mask/jsonkeys"
)

// Schemas that let keys repeat: free keys of any kind, narrow key
// languages that run out (dead ends), nesting, declared plus free keys.
var freeKeySchemas = []struct {
	name, schema string
}{
	{"json_object", `{"type":"object"}`},
	{"additional", `{"type":"object","additionalProperties":{"type":"integer"}}`},
	{"pattern", `{"type":"object","patternProperties":{"^[ab]{1,2}$":{"type":"integer"}},"additionalProperties":false}`},
	{"enum-names", `{"type":"object","propertyNames":{"enum":["x","y","z"]},"additionalProperties":{"type":"boolean"}}`},
	{"nested", `{"type":"array","items":{"type":"object","propertyNames":{"maxLength":1},"additionalProperties":{"type":"object","additionalProperties":{"type":"null"}}}}`},
	{"declared", `{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":{"type":"string","maxLength":2}}`},
	{"additional-true", `{"type":"object","properties":{"a":{"type":"boolean"}},"additionalProperties":true}`},
	{"names-pattern", `{"type":"object","propertyNames":{"pattern":"^[a-c]+$"},"maxProperties":8,"additionalProperties":{"type":"integer"}}`},
	{"pattern-and-additional", `{"type":"object","patternProperties":{"^x":{"type":"integer"},"^y":{"type":"string","maxLength":1}},"additionalProperties":{"type":"boolean"}}`},
}

type walkVocab struct {
	name  string
	v     *mask.Vocab
	t     *jsonkeys.Table
	short []int32 // normal tokens of one or two bytes
	bytes [256]int32
}

var (
	vocabOnce sync.Once
	vocabs    []*walkVocab
	vocabErr  error
)

// realVocabs loads Llama-3 (byte-level BPE, 128k) and Llama-2
// (SentencePiece with byte fallback, 32k).
func realVocabs(tb testing.TB) []*walkVocab {
	dir := sharedtest.Dir(tb)
	vocabOnce.Do(func() {
		l3, err := llama3vocab.Load(dir)
		if err != nil {
			vocabErr = err
			return
		}
		spm, err := mask.LoadVocab(filepath.Join(dir, "corpus", "vocab", "ggml-vocab-llama-spm.gguf"))
		if err != nil {
			vocabErr = err
			return
		}
		for _, wv := range []*walkVocab{{name: "llama3", v: l3}, {name: "llama-spm", v: spm}} {
			wv.t = jsonkeys.NewTable(wv.v)
			for id := int32(0); int(id) < wv.v.Size(); id++ {
				if b := wv.v.Token(id); wv.v.Kind(id) == mask.TokenNormal && len(b) <= 2 {
					wv.short = append(wv.short, id)
					if len(b) == 1 && wv.bytes[b[0]] == 0 {
						wv.bytes[b[0]] = id
					}
				}
			}
			vocabs = append(vocabs, wv)
		}
	})
	if vocabErr != nil {
		tb.Fatal(vocabErr)
	}
	return vocabs
}

func compileSchema(tb testing.TB, schema string, v *mask.Vocab) *mask.Compiled {
	tb.Helper()
	src, err := jsonschema2gbnf.Convert([]byte(schema))
	if err != nil {
		tb.Fatal(err)
	}
	return jsonkeys.CompileGBNF(tb, src, v)
}

type walkStats struct {
	docs, cleared, rejected, searched, steps, checked int
}

// checkFilter compares one Filter call (mask pre before, bits after) with
// the reference: a token is cleared iff appending it to out closes a
// duplicate key (Duplicates on out+token, which reports the duplicates
// before the end of its input).
func checkFilter(tb testing.TB, wv *walkVocab, out []byte, pre, bits []uint32) {
	tb.Helper()
	buf := bytes.Clone(out)
	for w := range pre {
		for word := pre[w]; word != 0; word &= word - 1 {
			id := int32(w*32 + trailing(word))
			cleared := bits[w]&(1<<(id&31)) == 0
			if !cleared && !bytes.Contains(wv.v.Token(id), []byte{'"'}) {
				continue // cannot close a key: checked by cleared only
			}
			ds, _ := jsonkeys.Duplicates(append(buf[:len(out)], wv.v.Token(id)...))
			if cleared != (len(ds) > 0) {
				tb.Fatalf("after %q, token %q: cleared %v, the reference finds %v", out, wv.v.Token(id), cleared, ds)
			}
		}
	}
}

// walk decodes one random document: uniform draws among the allowed
// short tokens (so that keys collide) or among all allowed tokens, then a
// close-out. With guard false it runs the same walk without the guard.
func walk(tb testing.TB, r *rand.Rand, wv *walkVocab, c *mask.Compiled, guard bool, st *walkStats) ([]byte, error) {
	m := c.NewMatcher()
	g := wv.t.NewGuard()
	bits := make([]uint32, c.Words())
	var allowed []int32
	var out []byte // the output (an unguarded walk's guard stops at a duplicate)
	var lastErr error
	var pre []uint32
	var early []int32 // tokens drawn but put back because they end the output too early
	steps := 10 + r.IntN(100)
	for i := 0; i < steps && !m.CanEnd() || i < 3; i++ {
		m.FillMask(bits)
		if guard {
			pre := append(pre[:0], bits...)
			if err := g.Filter(bits); err != nil {
				return nil, err
			}
			st.cleared += count(pre) - count(bits)
			if r.IntN(30) == 0 {
				checkFilter(tb, wv, g.Output(), pre, bits)
				st.checked++
			}
		}
		early, late := early[:0], false
		for {
			allowed = allowed[:0]
			odds := 6
			if g.InString() {
				odds = 2
			}
			if lo, hi, ok := m.ShortestStep(); ok && r.IntN(odds) == 0 {
				// A step along a shortest completion: strings close soon,
				// so keys are short and collide.
				b := lo + byte(r.IntN(int(hi-lo)+1))
				if id := wv.bytes[b]; id > 0 && bits[id>>5]&(1<<(id&31)) != 0 {
					allowed = append(allowed, id)
				}
			}
			if len(allowed) == 0 && r.IntN(4) != 0 {
				for _, id := range wv.short {
					if bits[id>>5]&(1<<(id&31)) != 0 {
						allowed = append(allowed, id)
					}
				}
			}
			if len(allowed) == 0 {
				for w, word := range bits {
					for ; word != 0; word &= word - 1 {
						id := int32(w*32 + trailing(word))
						if !wv.v.IsEOG(id) {
							allowed = append(allowed, id)
						}
					}
				}
			}
			if len(allowed) == 0 && len(early) > 0 {
				for _, id := range early {
					bits[id>>5] |= 1 << (id & 31)
				}
				early, late = early[:0], true
				continue
			}
			if len(allowed) == 0 {
				if m.CanEnd() {
					break
				}
				return nil, lastErr // every token led to a dead end: report the last
			}
			tok := allowed[r.IntN(len(allowed))]
			if err := m.Accept(tok); err != nil {
				tb.Fatalf("matcher rejects an allowed token: %v", err)
			}
			if err := g.Accept(tok); err != nil {
				if guard {
					tb.Fatalf("guard rejects a filtered token %q after %q: %v", wv.v.Token(tok), g.Output(), err)
				}
				// Without the guard: keep going, only the matcher counts.
			}
			if m.CanEnd() && i < steps && !late && r.IntN(10) != 0 {
				// Too early to end: draw again (unless nothing else is left).
				_ = m.Rollback(1)
				if g.Steps() > m.Tokens() {
					_ = g.Rollback(1)
				}
				bits[tok>>5] &^= 1 << (tok & 31)
				early = append(early, tok)
				continue
			}
			if !guard {
				out = append(out, wv.v.Token(tok)...)
				break
			}
			err := g.Check(m)
			var de *jsonkeys.DeadEndError
			if err == nil {
				break
			}
			if !errors.As(err, &de) {
				tb.Fatal(err)
			}
			lastErr = err
			st.rejected++
			_ = m.Rollback(1)
			_ = g.Rollback(1)
			bits[tok>>5] &^= 1 << (tok & 31)
		}
		st.steps++
		if m.CanEnd() && r.IntN(10) == 0 {
			break
		}
	}
	if !guard {
		sc, _ := m.ShortestCompletion()
		return append(out, sc...), nil
	}
	sc, err := jsonkeys.ShortestCompletion(m, g)
	if err != nil {
		return nil, err
	}
	if plain, _ := m.ShortestCompletion(); !bytes.Equal(plain, sc) {
		st.searched++
	}
	if err := m.AcceptBytes(sc); err != nil {
		tb.Fatalf("completion %q rejected by the matcher: %v", sc, err)
	}
	if err := g.AcceptBytes(sc); err != nil {
		tb.Fatalf("completion %q rejected by the guard: %v", sc, err)
	}
	if !m.CanEnd() {
		tb.Fatalf("%q + completion %q cannot end", g.Output(), sc)
	}
	st.docs++
	return bytes.Clone(g.Output()), nil
}

func count(bits []uint32) int {
	n := 0
	for _, w := range bits {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}

func trailing(w uint32) int {
	n := 0
	for w&1 == 0 {
		w >>= 1
		n++
	}
	return n
}

// TestWalksRealVocabs decodes random walks through the mask and the guard
// with real vocabularies, for schemas that allow free keys: every
// document is valid JSON, valid for the schema, and has unique keys.
func TestWalksRealVocabs(t *testing.T) {
	for _, wv := range realVocabs(t) {
		for si, sc := range freeKeySchemas {
			t.Run(wv.name+"/"+sc.name, func(t *testing.T) {
				c := compileSchema(t, sc.schema, wv.v)
				schema, err := jsonschema2gbnf.CompileSchema([]byte(sc.schema))
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(uint64(si), 7))
				var st walkStats
				var last []byte
				for range 25 {
					doc, err := walk(t, r, wv, c, true, &st)
					if err != nil {
						t.Fatalf("walk: %v", err)
					}
					last = doc
					if ds, err := jsonkeys.Duplicates(doc); err != nil || len(ds) > 0 {
						t.Fatalf("%q: duplicates %v, error %v", doc, ds, err)
					}
					dec := json.NewDecoder(bytes.NewReader(doc))
					dec.UseNumber()
					var val any
					if err := dec.Decode(&val); err != nil {
						t.Fatalf("%q: %v", doc, err)
					}
					if err := schema.Validate(val); err != nil {
						t.Fatalf("%q: invalid: %v", doc, err)
					}
				}
				t.Logf("e.g. %s", last)
				t.Logf("%d docs, %d steps, %d tokens cleared by Filter, %d steps redrawn after Check, %d close-outs searched, %d masks checked against the reference", st.docs, st.steps, st.cleared, st.rejected, st.searched, st.checked)
				if st.cleared+st.rejected == 0 {
					t.Errorf("the guard never cleared a token: the walks do not exercise it")
				}
			})
		}
	}
}

// TestWalksNeedGuard: without the guard the same walks write duplicate
// keys, so TestWalksRealVocabs tests something.
func TestWalksNeedGuard(t *testing.T) {
	wv := realVocabs(t)[0]
	c := compileSchema(t, freeKeySchemas[2].schema, wv.v)
	r := rand.New(rand.NewPCG(1, 1))
	dups := 0
	for range 20 {
		doc, _ := walk(t, r, wv, c, false, &walkStats{})
		if ds, _ := jsonkeys.Duplicates(doc); len(ds) > 0 {
			dups++
		}
	}
	if dups == 0 {
		t.Error("no duplicate keys in 20 unguarded walks")
	}
}

// TestDeadEndReported: a schema that cannot be met with distinct keys ends
// in a *DeadEndError naming the object, never in a duplicate.
func TestDeadEndReported(t *testing.T) {
	wv := realVocabs(t)[0]
	// Three keys of two names: jsonschema2gbnf rejects such a schema
	// (minProperties 3, propertyNames enum [a, b]) for this very reason,
	// so the grammar is written by hand.
	c := jsonkeys.CompileGBNF(t, `root ::= "{\"o\": {" kv ", " kv ", " kv "}}"
kv ::= "\"" [ab] "\": " [0-9]`, wv.v)
	r := rand.New(rand.NewPCG(2, 2))
	for range 10 {
		doc, err := walk(t, r, wv, c, true, &walkStats{})
		var de *jsonkeys.DeadEndError
		var ce *jsonkeys.CompletionError
		switch {
		case errors.As(err, &de):
			if de.Pointer != "/o" {
				t.Errorf("dead end at %q: %v", de.Pointer, err)
			}
		case errors.As(err, &ce):
			if ce.Dup == nil || ce.Dup.Pointer != "/o" {
				t.Errorf("close-out: %v", err)
			}
		default:
			t.Fatalf("%q: error %v, want a dead end", doc, err)
		}
		t.Log(err)
	}
}
