package mask

import (
	"math"
	"slices"
	"testing"

	"github.com/structgen/structgen/gbnf"
)

// heavyFirst puts heavy states first, keeps every borrower after its
// donor, and keeps the order within each group.
func TestHeavyFirst(t *testing.T) {
	const h, l = heavyWalk + 1, heavyWalk
	// donors 10..13, borrowers 20..22 (main successors: their donors)
	todo := []int32{10, 11, 12, 13, 20, 21, 22}
	est := []int{l, h, l, l, l, h, h}
	mainSucc := map[int32]int32{20: 10, 21: 12, 22: 11}
	got, gotEst := heavyFirst(todo, est, 4, mainSucc, nil)
	want := []int32{11, 12, 21, 22, 10, 13, 20}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i, q := range got {
		if gotEst[i] != est[slices.Index(todo, q)] {
			t.Errorf("estimate of %d: %d, want %d", q, gotEst[i], est[slices.Index(todo, q)])
		}
		if d, ok := mainSucc[q]; ok && slices.Index(got, d) > i {
			t.Errorf("borrower %d before its donor %d", q, d)
		}
	}
}

// Within the heavy and the light groups, states nearer the start go
// first (a generation meets them first), ties in their order.
func TestHeavyFirstByDepth(t *testing.T) {
	const h, l = heavyWalk + 1, heavyWalk
	todo := []int32{0, 1, 2, 3, 4}
	est := []int{h, h, l, h, l}
	depth := []int32{5, 2, 0, 2, 9}
	got, _ := heavyFirst(todo, est, len(todo), nil, depth)
	if want := []int32{1, 3, 0, 2, 4}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// depths: bytes from the root's start, callees entered at no cost.
func TestDepths(t *testing.T) {
	v, err := NewVocab([][]byte{[]byte("a"), []byte("b")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := automatonOf(t, `root ::= "ab" x "c"
x ::= "d" | "(" x ")"`, v)
	d := a.depths()
	frames := 0
	for q, st := range a.states {
		f := &a.frames[st.frame]
		if q == int(f.start) && f.root && d[q] != 0 {
			t.Errorf("root start at depth %d", d[q])
		}
		if q == int(f.start) && !f.root {
			frames++
		}
		if q == int(f.start) && !f.root && d[q] != 2 {
			t.Errorf("x's start at depth %d, want 2 (after \"ab\")", d[q])
		}
		if d[q] == math.MaxInt32 {
			t.Errorf("state %d unreachable", q)
		}
	}
	if frames != 1 {
		t.Fatalf("%d frames besides the root, want x's", frames)
	}
}

// walkEstimates counts, for a state that calls a frame, the walks of the
// starts of that frame and of the frames its start calls in turn, as deep
// as the calls go, but not those whose entries are computed already.
func TestWalkEstimatesFollowCalls(t *testing.T) {
	g, err := gbnf.Parse(`root ::= "<" a ">"
a ::= b | "[" a "]"
b ::= c | "{" b "}"
c ::= "x" | "(" c ")"`)
	if err != nil {
		t.Fatal(err)
	}
	var toks [][]byte
	for _, s := range []string{"<", ">", "[", "]", "{", "}", "(", ")", "x", "<[", "[[", "{(", "x)", "))"} {
		toks = append(toks, []byte(s))
	}
	v, err := NewVocab(toks, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CompileWith(g, v, Options{Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	a, tr := c.a, c.prep.trie
	// own: the subtrees of the root's children whose byte q steps on.
	own := func(q int32) int {
		n := 0
		es, ee := tr.Children(0)
		for e := es; e < ee; e++ {
			if a.step(q, int(a.classOf[tr.EdgeByte[e]])) >= 0 {
				u := tr.EdgeNode[e]
				n += int(tr.Nodes[u].SubtreeEnd - u)
			}
		}
		return n
	}
	frame := map[string]int32{}
	for i := range a.frames {
		frame[a.frames[i].name] = int32(i)
	}
	for _, name := range []string{"a", "b", "c"} {
		if _, ok := frame[name]; !ok {
			t.Fatalf("no frame %s (frames %v)", name, frame)
		}
	}
	start := func(name string) int32 { return a.frames[frame[name]].start }
	q := a.step(a.frames[0].start, int(a.classOf['<']))
	if q < 0 || len(a.states[q].calls) != 1 || a.states[q].calls[0].callee != frame["a"] {
		t.Fatalf("the state after < does not call a")
	}
	want := own(q) + own(start("a")) + own(start("b")) + own(start("c"))
	if got := c.walkEstimates([]int32{q}, nil)[0]; got != want {
		t.Errorf("estimate %d, want %d (own %d, then a, b, c's starts)", got, want, own(q))
	}
	// b's entry computed: neither b's start nor c's is walked again.
	c.enter[frame["b"]] = &ctxEntry{}
	want = own(q) + own(start("a"))
	if got := c.walkEstimates([]int32{q}, nil)[0]; got != want {
		t.Errorf("with b's entry computed: estimate %d, want %d", got, want)
	}
}

// partlyPrecomputed compiles, with a budget that leaves states to first
// use, a grammar in which x is called only at the end of two long
// literals: in depth order the states that call it come last, past the
// budget.
func partlyPrecomputed(t *testing.T) (*Compiled, *gbnf.Grammar, *Vocab) {
	t.Helper()
	g, err := gbnf.Parse(`root ::= "<abcdefghijklmnopqrstuvwxyz" x | ">zyxwvutsrqponmlkjihgfedcba" x
x ::= "(" x ")" | y
y ::= "[" y "]" | "."`)
	if err != nil {
		t.Fatal(err)
	}
	v := lettersVocab(t, "<", ">", "(", ")", "[", "]", ".", "ab", "abc", "a(", ")]", "x>", "<a", "zz")
	c, err := CompileWith(g, v, Options{EagerWork: 3_000, EagerTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.EagerStates >= st.TopStates {
		t.Fatalf("%d of %d states precomputed: the budget reaches every state (the test tests nothing)", st.EagerStates, st.TopStates)
	}
	return c, g, v
}

// Where the budget may not reach every state, the entries of the frames
// whose starts are light to walk are computed first, callees first
// (lightEntries): a frame's start is no stack top, so the eager order
// never takes it for itself.
func TestLightEntriesFirst(t *testing.T) {
	c, _, _ := partlyPrecomputed(t)
	for _, name := range []string{"x", "y"} {
		found := false
		for i := range c.a.frames {
			if c.a.frames[i].name == name {
				found = true
				if c.enter[i] == nil {
					t.Errorf("frame %s: entry not computed in the eager phase", name)
				}
			}
		}
		if !found {
			t.Fatalf("no frame %s", name)
		}
	}
}

// Where the budget runs out before every state has its level 1, the
// levels below the states it reached are precomputed from a reserve
// (deeperReserve): here the level below v's tops in the root's return
// states, for a token that ends v's string and goes on in the root.
func TestDeeperReserve(t *testing.T) {
	g, err := gbnf.Parse(`root ::= "{" v "," v "," w "}"
v ::= "\"" [a-z]* "\"" | "[" v "]"
w ::= "<abcdefghijklmnopqrstuvwxyz" | ">zyxwvutsrqponmlkjihgfedcba" | "(" w ")"`)
	if err != nil {
		t.Fatal(err)
	}
	v := lettersVocab(t, "{", "}", ",", "\"", "[", "]", "<", ">", "(", ")", "a\"", "\",", "a\",", "b\",\"", "\"]", "]]", "ab", "abc")
	for _, budget := range []int64{1_000, 2_000, 4_000} {
		c, err := CompileWith(g, v, Options{EagerWork: budget, EagerTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		st := c.Stats()
		if st.EagerStates >= st.TopStates {
			continue // the budget reaches every state: not the case tested
		}
		c.mu.Lock()
		levels := len(c.byCross)
		c.mu.Unlock()
		if levels == 0 {
			t.Errorf("budget %d (%d of %d states): no level below a top precomputed", budget, st.EagerStates, st.TopStates)
		}
		if st.EagerWork > budget+budget/deeperReserve+int64(st.TopStates)*StateWorkUnits {
			t.Errorf("budget %d: %d units of eager work", budget, st.EagerWork)
		}
		return
	}
	t.Fatal("every budget reaches every state: the test tests nothing")
}

// lettersVocab is a vocabulary of the given tokens and of every lowercase
// letter, alone and doubled.
func lettersVocab(t *testing.T, tokens ...string) *Vocab {
	t.Helper()
	var toks [][]byte
	for _, s := range tokens {
		toks = append(toks, []byte(s))
	}
	for b := 'a'; b <= 'z'; b++ {
		toks = append(toks, []byte{byte(b)}, []byte{byte(b), byte(b)})
	}
	v, err := NewVocab(toks, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Where the budget runs out before a light return state below a frame
// with cross points (the "!" after the second s, at the end of a long
// literal), the reserve computes that state's level 1 first
// (retLevel1), and then the level below s's tops in it: a token that
// ends the second s's string and goes on in the root ("a\"!") needs
// nothing computed on first use there.
func TestDeeperReserveReturnStates(t *testing.T) {
	g, err := gbnf.Parse(`root ::= s "," "<abcdefghijklmnopqrstuvwxyz" s "!" | "(" w ")"
s ::= "\"" [a-z]* "\"" | "[" s "]"
w ::= "<abcdefghijklmnopqrstuvwxyz" | ">zyxwvutsrqponmlkjihgfedcba" | "(" w ")"`)
	if err != nil {
		t.Fatal(err)
	}
	v := lettersVocab(t, "\"", ",", "!", "<", ">", "(", ")", "a\"!", "a\",", "\"!", "<abcdefghijklmnopqrstuvwxyz")
	id := func(s string) int32 {
		for i := int32(0); int(i) < v.Size(); i++ {
			if string(v.Token(i)) == s {
				return i
			}
		}
		t.Fatalf("no token %q", s)
		return -1
	}
	for _, budget := range []int64{1_000, 1_500, 2_000, 3_000} {
		c, err := CompileWith(g, v, Options{EagerWork: budget, EagerTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		if st := c.Stats(); st.EagerStates >= st.TopStates {
			continue // the budget reaches every state: not the case tested
		}
		m := c.NewMatcher()
		for _, tok := range []string{"\"", "a", "\"", ",", "<abcdefghijklmnopqrstuvwxyz", "\"", "a"} {
			if err := m.Accept(id(tok)); err != nil {
				t.Fatalf("budget %d: %q: %v", budget, tok, err)
			}
		}
		n0, _ := c.LazyWork()
		bits := make([]uint32, (v.Size()+31)/32)
		m.FillMask(bits)
		if k := id("a\"!"); bits[k>>5]&(1<<(k&31)) == 0 {
			t.Fatalf("budget %d: %q not allowed inside the second string", budget, "a\"!")
		}
		if n1, _ := c.LazyWork(); n1 != n0 {
			t.Errorf("budget %d: %d computations on first use inside the second string, want 0", budget, n1-n0)
		}
		return
	}
	t.Fatal("every budget reaches every state: the test tests nothing")
}

// A grammar whose eager phase leaves states to first use keeps that
// phase's walker for them, holding no scratch of the vocabulary's pool,
// and MemoryBytes counts its buffers, also as first uses grow them; a
// grammar precomputed whole keeps none.
func TestLazyWalkerKept(t *testing.T) {
	c, g, v := partlyPrecomputed(t)
	w := c.lazyWalker
	if w == nil {
		t.Fatal("no walker kept for first use")
	}
	if w.scr != nil || w.acc != nil || w.ps.accs != nil || w.ps.accMask != nil {
		t.Error("the kept walker holds a scratch (or its buffers) of the vocabulary's pool")
	}
	held := int64(w.heldBytes())
	if held <= 0 || c.walkerBytes.Load() != held {
		t.Fatalf("walker holds %d bytes, counted %d", held, c.walkerBytes.Load())
	}
	without := c.MemoryBytes() - int(held)
	// First uses: every sentence of the grammar up to a few nestings.
	for _, s := range []string{"<abcdefghijklmnopqrstuvwxyz(([[.]]))", ">zyxwvutsrqponmlkjihgfedcba([.])"} {
		m := c.NewMatcher()
		if err := m.AcceptBytes([]byte(s)); err != nil || !m.CanEnd() {
			t.Fatalf("%q: %v", s, err)
		}
		m.FillMask(make([]uint32, (v.Size()+31)/32))
	}
	if n, _ := c.LazyWork(); n == 0 {
		t.Fatal("no state computed on first use (the test tests nothing)")
	}
	if got, want := c.walkerBytes.Load(), int64(w.heldBytes()); got != want || c.lazyWalker != w {
		t.Errorf("after first uses: counted %d bytes, the walker holds %d (kept walker replaced: %v)", got, want, c.lazyWalker != w)
	}
	if c.MemoryBytes() < without+int(c.walkerBytes.Load()) {
		t.Errorf("MemoryBytes %d does not count the walker's %d bytes", c.MemoryBytes(), c.walkerBytes.Load())
	}

	full, err := CompileWith(g, v, Options{EagerTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if st := full.Stats(); st.EagerStates != st.TopStates || full.lazyWalker != nil || full.walkerBytes.Load() != 0 {
		t.Errorf("precomputed whole (%d of %d states): walker kept %v, %d bytes counted", st.EagerStates, st.TopStates, full.lazyWalker != nil, full.walkerBytes.Load())
	}
}
