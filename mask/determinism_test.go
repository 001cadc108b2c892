package mask_test

import (
	"encoding/json"
	"errors"
	mathbits "math/bits"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// TestCompileDeterministic compiles each bench grammar several times: the
// automaton (state numbers, transitions, calls) must come out the same
// every time, since the eager precomputation follows state order.
func TestCompileDeterministic(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases {
		g, err := gbnf.Parse(grammarOf(t, bc))
		if err != nil {
			t.Fatal(err)
		}
		var first string
		for i := range 4 {
			c, err := mask.CompileWith(g, v, mask.Options{EagerWork: 1})
			if err != nil {
				t.Fatal(err)
			}
			d := c.Dump()
			if i == 0 {
				first = d
			} else if d != first {
				t.Fatalf("%s: compilation %d gives another automaton than the first", bc.ID, i)
			}
		}
	}
}

// TestEagerWorkDeterministic: the eager part is bounded by counted work,
// not time, so a grammar gets the same precomputed states every time,
// also while other goroutines keep every core busy; only the wall-clock
// safety net (EagerTimeout) can cut it short.
func TestEagerWorkDeterministic(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases {
		g, err := gbnf.Parse(grammarOf(t, bc))
		if err != nil {
			t.Fatal(err)
		}
		full, err := mask.CompileWith(g, v, mask.Options{EagerWork: -1, EagerTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		fs := full.Stats()
		if fs.EagerStates != fs.TopStates || fs.EagerWork <= 0 {
			t.Fatalf("%s: unbounded compilation precomputed %d of %d states with %d units", bc.ID, fs.EagerStates, fs.TopStates, fs.EagerWork)
		}
		budget := fs.EagerWork / 3
		var want []int32
		var wantWork int64
		for i := range 4 {
			stop := make(chan struct{})
			if i >= 2 {
				// Busy cores (the timing of every walk changes).
				for range runtime.GOMAXPROCS(0) {
					go func() {
						for x := 0; ; x++ {
							select {
							case <-stop:
								return
							default:
							}
						}
					}()
				}
			}
			c, err := mask.CompileWith(g, v, mask.Options{EagerWork: budget, EagerTimeout: -1})
			close(stop)
			if err != nil {
				t.Fatal(err)
			}
			got, st := c.EagerSet(), c.Stats()
			if st.EagerStates >= st.TopStates && budget < fs.EagerWork {
				t.Errorf("%s: a budget of %d units (of %d) precomputed every state", bc.ID, budget, fs.EagerWork)
			}
			if i == 0 {
				want, wantWork = got, st.EagerWork
				continue
			}
			if !slices.Equal(got, want) || st.EagerWork != wantWork {
				t.Fatalf("%s: compilation %d precomputed %d states with %d units, the first %d with %d", bc.ID, i, len(got), st.EagerWork, len(want), wantWork)
			}
		}
	}
}

// TestEagerTimeout: the safety net stops the eager part whatever the work
// budget.
func TestEagerTimeout(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases {
		if bc.Schema == nil {
			continue
		}
		g, err := gbnf.Parse(grammarOf(t, bc))
		if err != nil {
			t.Fatal(err)
		}
		c, err := mask.CompileWith(g, v, mask.Options{EagerWork: -1, EagerTimeout: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		if st := c.Stats(); st.EagerStates >= st.TopStates {
			t.Errorf("%s: a 1ns timeout precomputed all %d states", bc.ID, st.TopStates)
		}
	}
}

// Vocabulary work done once per process (a new slice of the vocabulary
// and its tokens by length) is not charged to the eager budget: a grammar
// compiled first on a fresh vocabulary does the same eager work as when
// compiled again.
func TestEagerWorkIndependentOfOrder(t *testing.T) {
	_, v0 := loadBench(t)
	toks := make([][]byte, v0.Size())
	kinds := make([]mask.TokenKind, v0.Size())
	for id := range toks {
		toks[id] = v0.Token(int32(id))
		kinds[id] = v0.Kind(int32(id))
	}
	v, err := mask.NewVocabKinds(toks, kinds, v0.EOG())
	if err != nil {
		t.Fatal(err)
	}
	// A bounded repetition over a wide class that is not a JSON string
	// body (no space): its slice and its per-length sets are made by the
	// first compile.
	g, err := gbnf.Parse(`root ::= "\"" [^"\\\x00-\x1F ]{0,40} "\""`)
	if err != nil {
		t.Fatal(err)
	}
	var works []int64
	for range 2 {
		c, err := mask.Compile(g, v)
		if err != nil {
			t.Fatal(err)
		}
		works = append(works, c.Stats().EagerWork)
	}
	if works[0] != works[1] {
		t.Errorf("eager work %d on a fresh vocabulary, %d the second time", works[0], works[1])
	}
}

// TestDeferredPrecompute: a compile with Options.Deferred precomputes
// nothing until Precompute, which then computes exactly what a plain
// compile does (same states, same work; the whole fingerprint), with
// the default budget and with one that leaves states to first use.
func TestDeferredPrecompute(t *testing.T) {
	cases, v := loadBench(t)
	for _, bc := range cases {
		g, err := gbnf.Parse(grammarOf(t, bc))
		if err != nil {
			t.Fatal(err)
		}
		for _, work := range []int64{0, 100_000} {
			opt := mask.Options{EagerWork: work, EagerTimeout: -1}
			// Twice: the first may make slices of the vocabulary.
			var plain *mask.Compiled
			for range 2 {
				if plain, err = mask.CompileWith(g, v, opt); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-plain.Precomputed():
			default:
				t.Fatalf("%s: Precomputed of a plain compile is not closed", bc.ID)
			}
			opt.Deferred = true
			c, err := mask.CompileWith(g, v, opt)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(c.EagerSet()); n != 0 || c.Stats().EagerWork != 0 {
				t.Fatalf("%s: a deferred compile precomputed %d states", bc.ID, n)
			}
			select {
			case <-c.Precomputed():
				t.Fatalf("%s: Precomputed closed before Precompute", bc.ID)
			default:
			}
			if err := c.Precompute(nil); err != nil {
				t.Fatal(err)
			}
			<-c.Precomputed()
			if got, want := c.Fingerprint(), plain.Fingerprint(); got != want {
				t.Errorf("%s (work %d): deferred + Precompute %s %+v, plain compile %s %+v", bc.ID, work, got, c.Stats(), want, plain.Stats())
			}
			w := c.Stats().EagerWork
			if err := c.Precompute(nil); err != nil || c.Stats().EagerWork != w {
				t.Errorf("%s: a second Precompute: %v, work %d → %d", bc.ID, err, w, c.Stats().EagerWork)
			}
		}
	}
}

// TestPrecomputeCanceled: a Precompute whose done channel is closed stops
// with ErrCanceled, and the grammar stays usable (the rest on first use).
func TestPrecomputeCanceled(t *testing.T) {
	cases, v := loadBench(t)
	bc := cases[1]
	ref, c := plainAndDeferred(t, bc, v)
	done := make(chan struct{})
	close(done)
	if err := c.Precompute(done); !errors.Is(err, mask.ErrCanceled) {
		t.Fatalf("Precompute with a closed done channel: %v, want ErrCanceled", err)
	}
	if st := c.Stats(); st.EagerStates >= st.TopStates {
		t.Errorf("a canceled Precompute computed all %d states", st.TopStates)
	}
	want := replayCounts(t, ref, bc.Tokens)
	got := replayCounts(t, c, bc.Tokens)
	if !slices.Equal(got, want) {
		t.Errorf("masks after a canceled Precompute differ from a plain compile's")
	}
}

// TestLazyTime: the computations on first use are timed (LazyTime) as
// they are counted (LazyWork): nothing before the first mask, some time
// once a mask needed a state the eager part left out (the first mask
// itself never does: the root's start is always precomputed).
func TestLazyTime(t *testing.T) {
	cases, v := loadBench(t)
	g, err := gbnf.Parse(grammarOf(t, cases[0]))
	if err != nil {
		t.Fatal(err)
	}
	c, err := mask.CompileWith(g, v, mask.Options{EagerWork: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n, units := c.LazyWork(); n != 0 || units != 0 || c.LazyTime() != 0 {
		t.Fatalf("before any mask: LazyWork %d, %d units, LazyTime %v", n, units, c.LazyTime())
	}
	m := c.NewMatcher()
	bits := make([]uint32, c.Words())
	for step := 0; step < 20; step++ {
		m.FillMask(bits)
		if n, _ := c.LazyWork(); n > 0 {
			break
		}
		tok := int32(-1)
		for i, w := range bits {
			if w != 0 {
				tok = int32(i*32 + mathbits.TrailingZeros32(w))
				break
			}
		}
		if tok < 0 || m.Accept(tok) != nil {
			break
		}
	}
	if n, units := c.LazyWork(); n == 0 || units == 0 || c.LazyTime() <= 0 {
		t.Fatalf("after 20 steps: LazyWork %d, %d units, LazyTime %v", n, units, c.LazyTime())
	}
}

// TestDeeperLevelsPrecomputed: with the budget to spare, the eager part
// also computes the levels below the stack tops — one pop deep, two pops
// deep, and below the tops of repetition frames in each counter class —
// so a matcher whose value ends inside a token (an item followed by ","
// or "]" in the same token) computes nothing on first use; with the
// budget spent on level 1 it does. The masks are the same either way
// (crossCheck elsewhere).
func TestDeeperLevelsPrecomputed(t *testing.T) {
	_, v := loadBench(t)
	// items: levels below tops one and two frames down, and repetition
	// frames; values: a string called in tail position (value ::= string),
	// so that the node below a string's top is the return state of the
	// call to value (stepper.pushed keeps none for the tail call).
	items := `root ::= "[" item ("," item)* "]"
item ::= [a-z]+ | "{" item "}" | "\"" [a-z]{0,40} "\"" | "<" [a-z]{30,} ">"`
	values := `root ::= "[" value ("," value)* "]"
value ::= string | "{" (string ":" value ("," string ":" value)*)? "}" | [0-9]+
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" hex{4} )
hex ::= [0-9a-fA-F]`
	for _, tc := range []struct{ name, grammar, prefix string }{
		{"one pop", items, "[{ab"},
		{"two pops", items, "[{{ab"},
		{"repetition, first class", items, `["`},
		{"repetition, short string", items, `["ab`},
		{"repetition, near its bound", items, `["` + strings.Repeat("a", 36)},
		{"repetition, iterations needed", items, "[<abcde"},
		{"repetition, nested", items, `[{"abc`},
		{"tail call", values, `["ab`},
		{"tail call, nested", values, `[{"a":"b`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := gbnf.Parse(tc.grammar)
			if err != nil {
				t.Fatal(err)
			}
			lazyAfter := func(opt mask.Options) int64 {
				c, err := mask.CompileWith(g, v, opt)
				if err != nil {
					t.Fatal(err)
				}
				m := c.NewMatcher()
				if err := m.AcceptBytes([]byte(tc.prefix)); err != nil {
					t.Fatal(err)
				}
				m.FillMask(make([]uint32, c.Words()))
				_, units := c.LazyWork()
				return units
			}
			if units := lazyAfter(mask.Options{EagerWork: -1, EagerTimeout: -1}); units != 0 {
				t.Errorf("unbounded budget: %d units of first-use work, want 0", units)
			}
			if units := lazyAfter(mask.Options{EagerWork: 1}); units == 0 {
				t.Errorf("budget of 1 unit: no first-use work (the test no longer tests anything)")
			}
		})
	}
}

// The root's start state is precomputed whatever the budget: every
// generation's first mask needs it. Github_trivial/o35155 computed it on
// first use (8,118 units) because the states that use slices, done
// before the others, had taken the whole budget; here a repetition
// frame, done first, takes the budget of one unit.
func TestRootStartPrecomputed(t *testing.T) {
	_, v := loadBench(t)
	g, err := gbnf.Parse(`root ::= "{" [a-z]{0,300} "}" | "[" item ("," item)* "]"` + "\n" + `item ::= [0-9]+ | "{" item "}"`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mask.CompileWith(g, v, mask.Options{EagerWork: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := c.NewMatcher()
	m.FillMask(make([]uint32, c.Words()))
	if n, units := c.LazyWork(); n != 0 {
		t.Errorf("first mask: %d computations (%d units) on first use, want none", n, units)
	}
	if err := m.AcceptBytes([]byte("[{1")); err != nil {
		t.Fatal(err)
	}
	m.FillMask(make([]uint32, c.Words()))
	if n, _ := c.LazyWork(); n == 0 {
		t.Errorf("budget of 1 unit: no first-use work after the start (the test no longer tests anything)")
	}
}

// The states that lead into the same loop of a slice (in
// Github_hard/o1051, the states of the "any other key" language after
// the prefixes of its listed names) share the walk of the loop's exits,
// which is most of their cost: 220,000 units each, for 7 states, took
// the whole eager budget. The masks are those of walking them apart.
func TestSliceExitsShared(t *testing.T) {
	_, v := loadBench(t)
	raw, err := os.ReadFile(sharedtest.Path(t, "corpus", "jsonschemabench", "Github_hard", "o1051.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var warns []jsonschema2gbnf.Warning
	src, err := jsonschema2gbnf.Convert(doc.Schema, jsonschema2gbnf.Lenient(&warns))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	regions := compileFull(t, g, v, nil)
	// (Without regions, which take some of these states' exits from
	// their exit trees: TestRegions.)
	defer mask.SetNoRegions(true)()
	shared := compileFull(t, g, v, nil)
	apart := compileFull(t, g, v, func() func() { return mask.SetNoExitMemo(true) })
	ws, wa := shared.Stats().EagerWork, apart.Stats().EagerWork
	t.Logf("eager work: %d shared, %d apart, %d with regions", ws, wa, regions.Stats().EagerWork)
	if 3*ws > 2*wa {
		t.Errorf("eager work %d with the exits' walks shared, %d without: not shared", ws, wa)
	}
	sameMasks(t, apart, shared, nil, 3, 60, 5)
}
