//go:build llamacpp

package llamacpp

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/internal/testmodel"
)

// smallVocab is a byte-level toy vocabulary: every byte, a few words, a
// token spanning two terminals, the two halves of "é", an empty (control)
// token and an end-of-generation token.
func smallVocab() ([][]byte, []int32) {
	var v [][]byte
	for b := range 256 {
		v = append(v, []byte{byte(b)})
	}
	v = append(v,
		[]byte("ab"),   // 256
		[]byte("abc"),  // 257
		[]byte("b+"),   // 258
		[]byte("é"),    // 259
		[]byte("\xc3"), // 260: first byte of é
		nil,            // 261: a control token
		[]byte("</s>"), // 262: end of generation
	)
	return v, []int32{262}
}

// allowedSet lists the allowed ids of a step (without computing again).
func allowedSet(t *testing.T, p *GrammarPeer) map[int32]bool {
	t.Helper()
	bits := make([]uint32, (p.VocabSize()+31)/32)
	n, err := p.Fill(bits)
	if err != nil {
		t.Fatal(err)
	}
	set := map[int32]bool{}
	for i := range p.VocabSize() {
		if bits[i/32]>>(i%32)&1 != 0 {
			set[int32(i)] = true
		}
	}
	if len(set) != n {
		t.Fatalf("Fill returned %d, the bitset holds %d", n, len(set))
	}
	return set
}

func TestGrammarPeerSmall(t *testing.T) {
	v, eog := smallVocab()
	p, err := NewGrammarPeer(`root ::= "ab" [a-c]* "+" "é"?`, v, eog)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i, want := range []struct {
		accept  int32
		allowed []int32
	}{
		// Start: only "a", "ab", "abc" begin the output.
		{256, []int32{'a', 256, 257}},
		// After "ab": a-c, "ab", "abc", "+", and "b+" (straddles the
		// class and the literal).
		{258, []int32{'a', 'b', 'c', '+', 256, 257, 258}},
		// After "abb+": "é", its first byte (as a byte token and as
		// token 260), or the end.
		{260, []int32{0xc3, 259, 260, 262}},
		// After the first byte of é: only its second byte.
		{0xa9, []int32{0xa9}},
		// Complete: only the end.
		{262, []int32{262}},
	} {
		got := allowedSet(t, p)
		if len(got) != len(want.allowed) {
			t.Errorf("step %d: allowed %v, want %v", i, keys(got), want.allowed)
		}
		for _, tok := range want.allowed {
			if !got[tok] {
				t.Errorf("step %d: allowed %v, want %v", i, keys(got), want.allowed)
				break
			}
		}
		// Rejected tokens are errors, not crashes, and change nothing.
		for _, bad := range []int32{'z', 261, -1, int32(len(v))} {
			if !got[bad] {
				if err := p.Accept(bad); err == nil {
					t.Fatalf("step %d: Accept(%d) of a rejected token: no error", i, bad)
				}
			}
		}
		if err := p.Accept(want.accept); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

func TestGrammarPeerReplayRejects(t *testing.T) {
	v, eog := smallVocab()
	p, err := NewGrammarPeer(`root ::= "ab" [a-c]* "+"`, v, eog)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := p.Replay([]int32{256, 'c', 'z', '+'}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rejected != 2 || len(r.Allowed) != 3 || r.Allowed[0] != 3 || r.CanEnd[2] {
		t.Errorf("Replay = %+v, want the rejection at token 2 after 3 masks", r)
	}
}

func keys(m map[int32]bool) []int32 {
	var out []int32
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestGrammarPeerErrors(t *testing.T) {
	v, eog := smallVocab()
	for _, tc := range []struct {
		name, gbnf string
		vocab      [][]byte
		eog        []int32
		msg        string
	}{
		{"syntax", `root ::= (`, v, eog, "rejected the grammar"},
		{"no root", `expr ::= "a"`, v, eog, "rejected the grammar"},
		{"left recursion", `root ::= root "a" | "a"`, v, eog, "left recursion"},
		{"empty vocabulary", `root ::= "a"`, nil, nil, "vocabulary of 0 tokens"},
		{"eog out of range", `root ::= "a"`, v, []int32{263}, "end-of-generation id 263 (index 0) is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewGrammarPeer(tc.gbnf, tc.vocab, tc.eog)
			if err == nil {
				p.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q, want %q", err, tc.msg)
			}
		})
	}
	p, err := NewGrammarPeer(`root ::= "a"`, v, eog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Fill(make([]uint32, 3)); err == nil {
		t.Error("Fill with a short bitset: no error")
	}
	p.Close()
	p.Close()
	if _, err := p.Fill(nil); err == nil {
		t.Error("Fill after Close: no error")
	}
}

var llama3Raw struct {
	once sync.Once
	v    [][]byte
	err  error
}

// llama3RawVocab is the Llama-3 vocabulary as raw bytes, control tokens
// nil, end of generation 128001 and 128009 (the bench's stop ids).
func llama3RawVocab(tb testing.TB) ([][]byte, []int32) {
	tb.Helper()
	dir := sharedtest.Path(tb, "corpus", "vocab", "hf", "llama3.2")
	llama3Raw.once.Do(func() {
		var v *testmodel.Vocab
		if v, llama3Raw.err = testmodel.Llama3Vocab(dir); llama3Raw.err == nil {
			llama3Raw.v, llama3Raw.err = v.RawTokens()
		}
	})
	if llama3Raw.err != nil {
		tb.Fatal(llama3Raw.err)
	}
	return llama3Raw.v, []int32{testmodel.Llama3EOS, testmodel.Llama3EOT}
}

// benchCase reads a bench case's grammar and document tokens.
func benchCase(tb testing.TB, name string) (string, []int32) {
	tb.Helper()
	dir := sharedtest.Path(tb, "bench", "cases", name)
	g, err := os.ReadFile(filepath.Join(dir, "grammar.gbnf"))
	if err != nil {
		tb.Fatal(err)
	}
	var doc []int32
	if err := readJSON(filepath.Join(dir, "doc.llama3.tokens.json"), &doc); err != nil {
		tb.Fatal(err)
	}
	return string(g), doc
}

// peerSteps is how many steps of case 03 the test replays: each costs tens
// of milliseconds on the 128k vocabulary.
const peerSteps = 10

// TestGrammarPeerLlama3Counts replays the start of bench case 03 with the
// Llama-3 vocabulary and checks llama.cpp's allowed counts against the
// counts recorded by the bench (llamacpp-allowed-counts.json: regular
// tokens, ids < 128000).
func TestGrammarPeerLlama3Counts(t *testing.T) {
	v, eog := llama3RawVocab(t)
	gbnf, doc := benchCase(t, "03-arith-ebnf")
	var want map[string][]int
	if err := readJSON(sharedtest.Path(t, "bench", "llamacpp-allowed-counts.json"), &want); err != nil {
		t.Fatal(err)
	}
	counts := want["03-arith-ebnf"]
	if len(counts) != len(doc)+1 {
		t.Fatalf("the bench has %d counts for %d tokens", len(counts), len(doc))
	}
	p, err := NewGrammarPeer(gbnf, v, eog)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := p.Replay(doc, peerSteps)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rejected >= 0 || len(r.Allowed) != peerSteps {
		t.Fatalf("replay: rejected at %d, %d steps", r.Rejected, len(r.Allowed))
	}
	for i, n := range r.Allowed {
		if n != counts[i] {
			t.Errorf("step %d: llama.cpp allows %d regular tokens, the bench recorded %d", i, n, counts[i])
		}
		t.Logf("step %d: %d allowed, can end %v, %v", i, n, r.CanEnd[i], r.MaskTimes[i])
	}
}

// TestGrammarPeerReplayEnd replays a whole short document: every token is
// allowed, and the end of generation is allowed after the last one only.
func TestGrammarPeerReplayEnd(t *testing.T) {
	v, eog := llama3RawVocab(t)
	// "x*2", one token per character.
	ids := map[string]int32{}
	for i, b := range v {
		if len(b) == 1 {
			ids[string(b)] = int32(i)
		}
	}
	var doc []int32
	for _, c := range "x*2" {
		doc = append(doc, ids[string(c)])
	}
	gbnf, _ := benchCase(t, "03-arith-ebnf")
	p, err := NewGrammarPeer(gbnf, v, eog)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := p.Replay(doc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rejected != -1 || len(r.CanEnd) != len(doc)+1 {
		t.Fatalf("rejected at %d, %d steps", r.Rejected, len(r.CanEnd))
	}
	// An expression can end after "x" and "x*2", not after "" or "x*".
	wantEnd := []bool{false, true, false, true}
	for i, ok := range r.CanEnd {
		if ok != wantEnd[i] {
			t.Errorf("step %d: can end %v, want %v", i, ok, wantEnd[i])
		}
	}
	if err := p.Accept(testmodel.Llama3EOT); err != nil {
		t.Errorf("end of generation after a complete expression: %v", err)
	}
}

// BenchmarkGrammarPeerFill times llama.cpp's mask at the first step of
// bench case 03 with the Llama-3 vocabulary.
func BenchmarkGrammarPeerFill(b *testing.B) {
	v, eog := llama3RawVocab(b)
	gbnf, _ := benchCase(b, "03-arith-ebnf")
	p, err := NewGrammarPeer(gbnf, v, eog)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	bits := make([]uint32, (len(v)+31)/32)
	for b.Loop() {
		if _, err := p.Fill(bits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/mask")
}
