package mask_test

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/benchcases"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/mask"
)

// TestConcurrentMatchers shares one Compiled between goroutines that all
// replay the JSON bench document (filling the lazy caches concurrently)
// and compares every mask with a single-threaded run. Run with -race.
func TestConcurrentMatchers(t *testing.T) {
	cases, v := loadBench(t)
	bc := cases[0]
	g, err := gbnf.Parse(bc.Grammar)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := mask.Compile(g, v)
	if err != nil {
		t.Fatal(err)
	}
	want := replayCounts(t, ref, bc.Tokens)
	// Almost everything is computed on first use, concurrently.
	c, err := mask.CompileWith(g, v, mask.Options{EagerWork: 1})
	if err != nil {
		t.Fatal(err)
	}
	replayConcurrently(t, c, bc.Tokens, want)
}

// replayConcurrently replays toks on c in 8 goroutines at once, each
// checking its masks against want (a single-threaded replay's).
func replayConcurrently(t *testing.T, c *mask.Compiled, toks []int32, want []int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := replayAgainst(t, c, toks, want); err != nil {
				errs <- fmt.Errorf("%w (a single-threaded replay)", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestConcurrentMatchersBelow: goroutines that share one Compiled of a
// word-limited string on Llama-3 (almost everything on first use) replay
// one generation, making the levels below the space's node from its slice
// below the node concurrently (belowFor's memo, the vocabulary's slice,
// the walkers' slice work), and must see a single-threaded replay's
// masks. Run with -race.
func TestConcurrentMatchersBelow(t *testing.T) {
	_, v := loadBench(t)
	g, err := gbnf.Parse(`root ::= "\"" ([^\x00- "\\]+ " "+){0,40} [^\x00- "\\]+ "\""`)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := mask.Compile(g, v)
	if err != nil {
		t.Fatal(err)
	}
	// One generation: tokens drawn from the masks, spaces preferred so that
	// it goes through many words.
	rng := rand.New(rand.NewPCG(5, 6))
	m := ref.NewMatcher()
	words := make([]uint32, ref.Words())
	var toks []int32
	for range 120 {
		m.FillMask(words)
		var allowed, spaced []int32
		for i, w := range words {
			for ; w != 0; w &= w - 1 {
				id := int32(i*32 + bits.TrailingZeros32(w))
				allowed = append(allowed, id)
				if tok := v.Token(id); len(tok) > 1 && tok[0] == ' ' {
					spaced = append(spaced, id)
				}
			}
		}
		pick := allowed
		if len(spaced) > 0 && rng.IntN(2) == 0 {
			pick = spaced
		}
		if len(pick) == 0 {
			break
		}
		id := pick[rng.IntN(len(pick))]
		if err := m.Accept(id); err != nil || m.Ended() {
			break
		}
		toks = append(toks, id)
	}
	want := replayCounts(t, ref, toks)
	c, err := mask.CompileWith(g, v, mask.Options{EagerWork: 1})
	if err != nil {
		t.Fatal(err)
	}
	replayConcurrently(t, c, toks, want)
	if c.BelowWalks() == 0 {
		t.Errorf("%d tokens: no walk from a slice below a node", len(toks))
	}
}

// TestConcurrentMatchersPrecompute: matchers replay the JSON bench
// document on a grammar compiled with Options.Deferred while Precompute
// runs on another goroutine (each state computed by whichever gets there
// first) and must see the masks of a plain compile. Run with -race.
func TestConcurrentMatchersPrecompute(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases[:2] {
		ref, c := plainAndDeferred(t, bc, v)
		want := replayCounts(t, ref, bc.Tokens)
		var wg sync.WaitGroup
		errs := make(chan error, 5)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Precompute(nil); err != nil {
				errs <- err
			}
		}()
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := replayAgainst(t, c, bc.Tokens, want); err != nil {
					errs <- fmt.Errorf("%s: %w (a plain compile)", bc.ID, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		select {
		case <-c.Precomputed():
		default:
			t.Errorf("%s: Precomputed not closed after Precompute returned", bc.ID)
		}
	}
}

// TestPrecomputeYields: a matcher that needs a state while Precompute
// runs waits for one batch of it, not for all of it: Precompute is held
// at its first batch until the matcher waits for the lock, and must then
// let it go first.
func TestPrecomputeYields(t *testing.T) {
	cases, v := loadBench(t)
	bc := cases[1]
	ref, c := plainAndDeferred(t, bc, v)
	want := replayCounts(t, ref, bc.Tokens[:1])
	first := make(chan struct{})
	var once sync.Once
	defer mask.SetEagerBatchHook(func(hc *mask.Compiled) {
		if hc != c {
			return
		}
		once.Do(func() {
			close(first)
			for hc.LazyWaiting() == 0 {
				time.Sleep(time.Millisecond)
			}
		})
	})()
	pre := make(chan error)
	go func() { pre <- c.Precompute(nil) }()
	<-first
	got := replayCounts(t, c, bc.Tokens[:1])
	if err := <-pre; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("masks %v, plain compile %v", got, want)
	}
	if c.Yields() == 0 {
		t.Error("Precompute never let the matcher go first")
	}
}

// plainAndDeferred compiles bench case bc plainly and with
// Options.Deferred (not precomputed yet).
func plainAndDeferred(t *testing.T, bc *benchcases.Case, v *mask.Vocab) (ref, c *mask.Compiled) {
	t.Helper()
	g, err := gbnf.Parse(grammarOf(t, bc))
	if err != nil {
		t.Fatal(err)
	}
	if ref, err = mask.Compile(g, v); err != nil {
		t.Fatal(err)
	}
	if c, err = mask.CompileWith(g, v, mask.Options{Deferred: true}); err != nil {
		t.Fatal(err)
	}
	return ref, c
}

// replayAgainst replays toks on c and compares the allowed counts with
// want (replayCounts of a reference).
func replayAgainst(t testing.TB, c *mask.Compiled, toks []int32, want []int) error {
	got := replayCounts(t, c, toks)
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("step %d: %d allowed, want %d", i, got[i], want[i])
		}
	}
	return nil
}

func replayCounts(t testing.TB, c *mask.Compiled, toks []int32) []int {
	m := c.NewMatcher()
	words := make([]uint32, c.Words())
	var out []int
	for i := 0; i <= len(toks); i++ {
		m.FillMask(words)
		n := 0
		for _, w := range words {
			n += bits.OnesCount32(w)
		}
		out = append(out, n)
		if i < len(toks) {
			if err := m.Accept(toks[i]); err != nil {
				t.Error(err)
				return out
			}
		}
	}
	return out
}

// TestCorpusVocabsJSON compiles the JSON grammar against every corpus
// vocabulary and feeds a JSON document tokenized with it (greedy
// tokenization: any tokenization must be accepted).
func TestCorpusVocabsJSON(t *testing.T) {
	dir := sharedtest.Path(t, "corpus", "vocab")
	src, err := os.ReadFile(sharedtest.Path(t, "corpus", "llama-grammars", "json.gbnf"))
	if err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"name": "Dana Müller-Okafor", "tags": ["a\"b", "日本語", "\u00e9"], "n": -12.5e3, "ok": true, "nested": {"x": [1, 2, {"y": null}]}}`)
	g, err := gbnf.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	paths = append(paths, filepath.Join(dir, "hf", "llama3.2"), filepath.Join(dir, "hf", "qwen2"))
	if len(paths) != 14 {
		t.Fatalf("%d vocabularies, want 14", len(paths))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			v, err := mask.LoadVocab(p)
			var ne *mask.NoEOGError
			if errors.As(err, &ne) {
				v, err = ne.Vocab, nil // llama3.2: the regular tokens only
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := mask.Compile(g, v)
			if err != nil {
				t.Fatal(err)
			}
			d := doc
			if strings.Contains(p, "bert") {
				// WordPiece lowercases and cannot spell every byte.
				d = []byte(`{"name": "dana", "tags": ["a", "b"], "n": 12, "ok": true}`)
			}
			toks, err := v.GreedyTokenize(d)
			if err != nil {
				t.Skipf("%s cannot spell the document: %v", filepath.Base(p), err)
			}
			m := c.NewMatcher()
			words := make([]uint32, c.Words())
			for i, tok := range toks {
				m.FillMask(words)
				if words[tok>>5]&(1<<(uint32(tok)&31)) == 0 {
					t.Fatalf("token %d (#%d, %q) not allowed", tok, i, v.Token(tok))
				}
				if err := m.Accept(tok); err != nil {
					t.Fatal(err)
				}
			}
			m.FillMask(words)
			if !m.CanEnd() {
				t.Fatal("cannot end")
			}
			for _, e := range v.EOG() {
				if words[e>>5]&(1<<(uint32(e)&31)) == 0 {
					t.Errorf("end-of-generation token %d not allowed at the end", e)
				}
			}
			t.Logf("%d tokens, %d states, compile %v", len(toks), c.Stats().States, c.Stats().Duration)
		})
	}
}

// TestLimitsAndBadInput checks the errors for bad input: each names what
// is wrong (and the limit, for limits), and leaves matchers unchanged.
func TestLimitsAndBadInput(t *testing.T) {
	bv := testVocab(t, commonExtra...)
	compileErr := func(src string) error {
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatalf("parse %q: %v", src, err)
		}
		_, err = mask.Compile(g, bv)
		return err
	}
	for _, tc := range []struct{ src, want string }{
		{"root ::= a\na ::= b \"x\"\nb ::= a \"y\" | \"z\"", "left recursion"},
		{"root ::= \"x\" root", "no finite sentence"},
		{"root ::= <[999]>", "out of range"},
		{"root ::= <[" + fmt.Sprint(bv.Size()-1) + "]>", "end-of-generation"},
		{"root ::= <|nope|>", "not in the vocabulary"},
	} {
		err := compileErr(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one mentioning %q", tc.src, err, tc.want)
		}
	}
	// Direct left recursion is supported.
	if err := compileErr("root ::= root \"+\" [0-9] | [0-9]"); err != nil {
		t.Errorf("direct left recursion: %v", err)
	}
	// Subset construction blows up on unrolled repetitions: Compile falls
	// back to counting frames (and stays exact).
	restore := mask.SetMaxStates(5000)
	for _, src := range []string{`root ::= [ab]* "a" [ab]{14}`, "root ::= x \"-\" x\nx ::= [-z]{1,30} [a-z0-9] | \"\""} {
		g, err := gbnf.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		crossCheck(t, g, bv, 6, 40, 7)
	}
	// Written out, it hits MaxStates.
	err := compileErr(`root ::= [ab]* "a"` + strings.Repeat(" [ab]", 14))
	restore()
	if err == nil || !strings.Contains(err.Error(), "MaxStates") {
		t.Errorf("blow-up: error %v, want MaxStates", err)
	}

	g, _ := gbnf.Parse(`root ::= "ab"`)
	c, err := mask.Compile(g, bv)
	if err != nil {
		t.Fatal(err)
	}
	m := c.NewMatcher()
	for _, tok := range []int32{-1, int32(bv.Size())} {
		if err := m.Accept(tok); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("Accept(%d): %v", tok, err)
		}
	}
	var rej *mask.RejectError
	if err := m.Accept('b'); !errors.As(err, &rej) || rej.Index != 0 {
		t.Errorf("Accept(b): %v", err)
	}
	if err := m.AcceptBytes([]byte("ax")); !errors.As(err, &rej) || rej.Offset != 1 {
		t.Errorf("AcceptBytes(ax): %v", err)
	}
	if m.Tokens() != 0 || m.CanEnd() {
		t.Errorf("rejections changed the state")
	}
	if err := m.Rollback(1); err == nil {
		t.Error("Rollback past the start accepted")
	}
}

// TestSteadyStateAllocs checks that FillMask and Accept do not allocate
// once a matcher has seen the contexts (replaying a document after Reset)
// often enough for the plans it keeps dense to have been made (their
// DenseAfter-th use).
func TestSteadyStateAllocs(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases {
		c := compileCase(t, bc, v)
		m := c.NewMatcher()
		words := make([]uint32, c.Words())
		replay := func() {
			m.Reset()
			for _, tok := range bc.Tokens {
				m.FillMask(words)
				if err := m.Accept(tok); err != nil {
					t.Fatal(err)
				}
			}
			m.FillMask(words)
		}
		for range mask.DenseAfter {
			replay()
		}
		if a := testing.AllocsPerRun(3, replay); a != 0 {
			t.Errorf("%s: %.1f allocations per replay of %d tokens after warm-up", bc.ID, a, len(bc.Tokens))
		}
	}
}

// FuzzMatcher fuzzes grammars and walks: whatever compiles must give
// masks that agree with Accept and with the reference recognizer, and
// end-of-generation exactly where the grammar can end — also after
// random rollbacks, with the matcher's stack compacted after every step.
func FuzzMatcher(f *testing.F) {
	f.Add(`root ::= "a" [b-d]* ("x" | "yz"){1,3}`, uint64(1))
	f.Add(`root ::= "(" root ")" | [0-9]+`, uint64(2))
	f.Add(`root ::= ([^a] | "ab"){0,7} "."`, uint64(3))
	f.Add(`root ::= x "-" x
x ::= [a-z]{1,30} [a-z0-9] | ""`, uint64(4))
	f.Add(`root ::= ("a"{2,3} | "b"){1,40}`, uint64(5))
	f.Add(`root ::= (("a"|"b"){0,5}){0,5}{0,5}`, uint64(6))
	f.Add(`root ::= s
s ::= "a" s s | ""`, uint64(7))
	// A string body over a wide class: its states inside a character
	// take their tokens from mid-character slices (the vocabulary has
	// tokens that start and end inside one).
	f.Add(`root ::= "\"" ([^"\\] | "\\" ["nt])* "\"" [a-z]*`, uint64(8))
	// A string that must contain one of two names: the states of the
	// match share the walks below the bytes that leave their loop and
	// borrow the loop's tokens by first byte (rootExit, addFirstBytes).
	f.Add(`root ::= "\"" [^"\\]* ("ab" | "c" [a-b]) [^"\\]* "\""`, uint64(9))
	// Chains of frames whose starts call the next (an object's optional
	// properties in order; the stepper pushes them only on the bytes
	// that enter them, entersOn), one ending in the root's frame.
	f.Add(`root ::= "{" ("a" r1 | "b" r2)? "}"
r1 ::= ("," "b" x)? r2
r2 ::= ("," "c" x)? r3
r3 ::= ("," "d" x)?
x ::= "=" [0-9]+ | "=" [0-9]+ "." [0-9]+`, uint64(10))
	f.Add(`root ::= "(" r1 ")" root | ""
r1 ::= "b"? r2
r2 ::= "c"? root`, uint64(11))
	defer mask.CollectAlways()()
	// Subset constructions that blow up are cut short: the fuzzer stops
	// a worker whose input runs for 10 s (wall clock).
	defer mask.SetMaxStates(1 << 14)()
	bv := testVocab(f, "ab", "ba", "xy", "yz", "((", "))", "a.", "12", "-a", "é", "\xc3", "\xa9x", "\xe2\x82", "\xac\"", "\x82", "€\"a", "\"\xf0\x9f", "\x98\x80")
	f.Fuzz(func(t *testing.T, src string, seed uint64) {
		if len(src) > 400 {
			return
		}
		g, err := gbnf.Parse(src)
		if err != nil {
			return
		}
		c, err := mask.Compile(g, bv)
		if err != nil {
			return
		}
		r := earley.New(g)
		states := []*earley.State{r.Start()} // the reference state after each accepted token
		m := c.NewMatcher()
		rng := rand.New(rand.NewPCG(seed, 3))
		words := make([]uint32, c.Words())
		for step := 0; step < 16; step++ {
			st := states[len(states)-1]
			m.FillMask(words)
			if m.Err() != nil {
				return // a matcher limit (FuzzStepWork checks those)
			}
			var allowed []int32
			for id := int32(0); int(id) < bv.Size(); id++ {
				in := words[id>>5]&(1<<(uint32(id)&31)) != 0
				if bv.IsEOG(id) {
					if in != st.CanEnd() {
						t.Fatalf("step %d: EOG %v, reference CanEnd %v", step, in, st.CanEnd())
					}
					continue
				}
				s := st
				for _, b := range bv.Token(id) {
					if s = s.Next(b); s == nil {
						break
					}
				}
				if in != (s != nil) {
					t.Fatalf("step %d: token %q allowed=%v, reference %v", step, bv.Token(id), in, s != nil)
				}
				if in {
					allowed = append(allowed, id)
				}
			}
			if len(allowed) == 0 {
				return
			}
			if k := rng.IntN(4); k > 0 && k < len(states) && rng.IntN(3) == 0 {
				// Roll back k tokens: the next masks are those of the
				// reference k states back.
				if err := m.Rollback(k); err != nil {
					t.Fatalf("step %d: Rollback(%d): %v", step, k, err)
				}
				states = states[:len(states)-k]
				continue
			}
			tok := allowed[rng.IntN(len(allowed))]
			if err := m.Accept(tok); err != nil {
				if errors.Is(err, mask.ErrTooAmbiguous) {
					return
				}
				t.Fatalf("step %d: %v", step, err)
			}
			for _, b := range bv.Token(tok) {
				st = st.Next(b)
			}
			states = append(states, st)
		}
	})
}

// FuzzStepWork fuzzes (grammar, input) pairs for the matcher's resource
// bounds: every step that succeeds did at most MaxStepWork units of work
// (and grew the stack by no more than that work allows, an independent
// check that the work counted is the work done), a step that fails with
// a limit leaves the matcher unchanged, and the kept history and stack
// stay within MaxRollback and MaxStackSize.
func FuzzStepWork(f *testing.F) {
	f.Add("root ::= s\ns ::= \"a\" s s | \"\"", []byte(strings.Repeat("a", 400)))
	f.Add(`root ::= ((("a"|"b"){0,50} "c"?){0,50} "d"?){0,50}`, []byte(strings.Repeat("ab", 300)))
	f.Add(`root ::= ("a"{1000} | "aa"{499}){1000}`, []byte(strings.Repeat("a", 3000)))
	f.Add(`root ::= x x x
x ::= "a" | "ab" | "a" x "b" | x x`, []byte("aababbaabbabababab"))
	f.Add(`root ::= ("[" root "]" | "a")*`, []byte(strings.Repeat("[", 500)+"a"))
	defer mask.SetMaxStates(1 << 14)()
	v := testVocab(f)
	f.Fuzz(func(t *testing.T, src string, input []byte) {
		if len(src) > 300 || len(input) > 1500 {
			return
		}
		// The fuzzer stops a worker whose input runs for 10 s (wall
		// clock, on a loaded machine too): stop after 32 steps' worth of
		// the budget (tens of milliseconds). TestMatcherLimits runs into
		// the limit itself.
		total := 0
		g, err := gbnf.Parse(src)
		if err != nil {
			return
		}
		c, err := mask.Compile(g, v)
		if err != nil {
			return
		}
		m := c.NewMatcher()
		words := make([]uint32, c.Words())
		perUnit := 2 * (1 + c.MaxCalls())
		for i, b := range input {
			before := m.StackSize()
			err := m.Accept(int32(b))
			var le *mask.LimitError
			switch {
			case errors.As(err, &le):
				if m.Tokens() != i {
					t.Fatalf("byte %d: %v changed the matcher (%d tokens)", i, err, m.Tokens())
				}
				return
			case err != nil:
				return // rejected: the input is not a prefix
			}
			if w := m.StepWork(); w > mask.MaxStepWork {
				t.Fatalf("byte %d: a step of %d units succeeded (MaxStepWork %d)", i, w, mask.MaxStepWork)
			}
			if total += m.StepWork(); total > 32*mask.MaxStepWork {
				return
			}
			if grown := m.StackSize() - before; grown > perUnit*(m.StepWork()+1)+64 {
				t.Fatalf("byte %d: the stack grew by %d in a step of %d units", i, grown, m.StepWork())
			}
			if h := m.HistoryLen(); h > 2*mask.MaxRollback+1 {
				t.Fatalf("byte %d: %d configurations kept", i, h)
			}
			if s := m.StackSize(); s > 2*mask.MaxStackSize+perUnit*mask.MaxStepWork {
				t.Fatalf("byte %d: stack of %d", i, s)
			}
			if i%7 == 0 {
				m.FillMask(words)
				if err := m.Err(); err != nil {
					if !errors.As(err, &le) || m.Accept(int32(b)) == nil {
						t.Fatalf("byte %d: FillMask: %v, and Accept does not report it", i, err)
					}
					return
				}
				if w := m.StepWork(); w > mask.MaxStepWork {
					t.Fatalf("byte %d: a mask of %d units succeeded", i, w)
				}
			}
		}
	})
}

// TestLazyEqualsEager compiles each bench grammar fully eagerly and almost
// fully lazily (a 1ns budget) and checks that every mask along the
// document is bit for bit the same.
func TestLazyEqualsEager(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases {
		g, err := gbnf.Parse(grammarOf(t, bc))
		if err != nil {
			t.Fatal(err)
		}
		eager, err := mask.CompileWith(g, v, mask.Options{EagerWork: -1, EagerTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		lazy, err := mask.CompileWith(g, v, mask.Options{EagerWork: 1})
		if err != nil {
			t.Fatal(err)
		}
		if es, ls := eager.Stats(), lazy.Stats(); es.EagerStates != es.TopStates || ls.EagerStates >= ls.TopStates {
			t.Fatalf("%s: eager %d/%d, lazy %d/%d states precomputed", bc.ID, es.EagerStates, es.TopStates, ls.EagerStates, ls.TopStates)
		}
		me, ml := eager.NewMatcher(), lazy.NewMatcher()
		we, wl := make([]uint32, eager.Words()), make([]uint32, lazy.Words())
		for i := 0; i <= len(bc.Tokens); i++ {
			me.FillMask(we)
			ml.FillMask(wl)
			for k := range we {
				if we[k] != wl[k] {
					t.Fatalf("%s step %d: lazy and eager masks differ at word %d", bc.ID, i, k)
				}
			}
			if i < len(bc.Tokens) {
				if err := me.Accept(bc.Tokens[i]); err != nil {
					t.Fatal(err)
				}
				if err := ml.Accept(bc.Tokens[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// Options.Done stops a compilation: at once when closed before, and during
// the automaton construction of a grammar that would blow up (it takes
// about a second to reach MaxStates; the channel closes after 20 ms).
func TestCompileCanceled(t *testing.T) {
	bv := testVocab(t)
	g, err := gbnf.Parse(`root ::= "a" [0-9]*`)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	close(done)
	if _, err := mask.CompileWith(g, bv, mask.Options{Done: done}); !errors.Is(err, mask.ErrCanceled) {
		t.Errorf("closed before: error %v, want ErrCanceled", err)
	}
	g, err = gbnf.Parse(`root ::= [ab]* "a"` + strings.Repeat(" [ab]", 20))
	if err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	time.AfterFunc(20*time.Millisecond, func() { close(done) })
	if _, err := mask.CompileWith(g, bv, mask.Options{Done: done}); !errors.Is(err, mask.ErrCanceled) {
		t.Errorf("blow-up: error %v, want ErrCanceled", err)
	}
}
