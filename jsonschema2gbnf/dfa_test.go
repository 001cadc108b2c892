package jsonschema2gbnf

import (
	"math/rand"
	"reflect"
	"sort"
	"testing"
	"unicode"
)

// randomDFA draws an automaton over a few ranges (some next to the
// surrogate gap, where edges merge across it) with n states.
func randomDFA(rng *rand.Rand, n int) *dfa {
	cuts := []rune{0, 'a', 'b', 'c', 'd', 0x7F, surrogateLo - 1, surrogateHi + 1, 0xE005, unicode.MaxRune}
	d := &dfa{states: make([]dfaState, n)}
	for i := range d.states {
		d.states[i].accept = rng.Intn(3) == 0
		for k := 0; k+1 < len(cuts); k++ {
			if rng.Intn(3) == 0 {
				continue // no edge: the dead state
			}
			lo, hi := cuts[k], cuts[k+1]-1
			if k+2 == len(cuts) {
				hi = unicode.MaxRune
			}
			if lo >= surrogateLo && lo <= surrogateHi {
				continue
			}
			if lo == surrogateLo-1 {
				hi = lo
			}
			d.states[i].edges = appendEdge(d.states[i].edges, lo, hi, rng.Intn(n))
		}
	}
	return d
}

// mooreMinimize is the reference: Moore's rounds over every state with
// string signatures, the quotient in order of first state, trimmed.
func mooreMinimize(d *dfa) *dfa {
	d = d.trim()
	n := len(d.states)
	cls := make([]int, n)
	for i, st := range d.states {
		if st.accept {
			cls[i] = 1
		}
	}
	nClasses := -1
	for {
		sigs := map[string]int{}
		next := make([]int, n)
		for i, st := range d.states {
			var es []dfaEdge
			for _, e := range st.edges {
				es = appendEdge(es, e.lo, e.hi, cls[e.to])
			}
			k := string(rune(cls[i])) + "|"
			for _, e := range es {
				k += string([]rune{e.lo, e.hi, rune(e.to)}) + ","
			}
			id, ok := sigs[k]
			if !ok {
				id = len(sigs)
				sigs[k] = id
			}
			next[i] = id
		}
		same := len(sigs) == nClasses
		cls, nClasses = next, len(sigs)
		if same {
			break
		}
	}
	newID := map[int]int{cls[0]: 0}
	order := []int{0}
	for i := 0; i < n; i++ {
		if _, ok := newID[cls[i]]; !ok {
			newID[cls[i]] = len(order)
			order = append(order, i)
		}
	}
	out := &dfa{states: make([]dfaState, len(order))}
	for k, rep := range order {
		var es []dfaEdge
		for _, e := range d.states[rep].edges {
			es = appendEdge(es, e.lo, e.hi, newID[cls[e.to]])
		}
		out.states[k] = dfaState{accept: d.states[rep].accept, edges: es}
	}
	return out.trim()
}

// refComplete is the reference for complete: the gaps as the complement
// of the covered runes.
func refComplete(d *dfa) []dfaState {
	dead := len(d.states)
	var out []dfaState
	for _, st := range d.states {
		es := append([]dfaEdge(nil), st.edges...)
		var covered []rune
		for _, e := range st.edges {
			covered = append(covered, e.lo, e.hi)
		}
		es = append(es, edgesFor(normRunes(covered).complement(), dead)...)
		sort.Slice(es, func(a, b int) bool { return es[a].lo < es[b].lo })
		out = append(out, dfaState{accept: st.accept, edges: es})
	}
	return append(out, dfaState{edges: edgesFor(anyRune, dead)})
}

func sameStates(a, b []dfaState) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].accept != b[i].accept || len(a[i].edges) != len(b[i].edges) ||
			(len(a[i].edges) > 0 && !reflect.DeepEqual(a[i].edges, b[i].edges)) {
			return false
		}
	}
	return true
}

// The work-list minimization, the gap-walking completion and the dense
// product give exactly the automata of the straightforward versions
// (the converter's output is written from them, state by state).
func TestDFAAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for iter := 0; iter < 1500; iter++ {
		d := randomDFA(rng, 1+rng.Intn(60))
		if got, want := d.minimize(), mooreMinimize(d); !sameStates(got.states, want.states) {
			t.Fatalf("iteration %d: minimize differs from Moore's:\n got %v\nwant %v", iter, got.states, want.states)
		}
		if got, want := d.complete().states, refComplete(d); !sameStates(got, want) {
			t.Fatalf("iteration %d: complete differs:\n got %v\nwant %v", iter, got, want)
		}
		// copies of states (edges to any copy of the target) are
		// equivalent: minimization must merge them back
		k := 1 + rng.Intn(3)
		inflated := &dfa{states: make([]dfaState, k*len(d.states))}
		for i, st := range inflated.states {
			orig := d.states[i%len(d.states)]
			st.accept = orig.accept
			for _, e := range orig.edges {
				st.edges = append(st.edges, dfaEdge{e.lo, e.hi, e.to + len(d.states)*rng.Intn(k)})
			}
			inflated.states[i] = st
		}
		if got, want := inflated.minimize(), d.minimize(); !sameStates(got.states, want.states) {
			t.Fatalf("iteration %d: copies of states not merged:\n got %v\nwant %v", iter, got.states, want.states)
		}
		e := randomDFA(rng, 1+rng.Intn(10))
		p, err := intersectDFA(d, e)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 20; k++ {
			s := string([]rune{[]rune("abcd\x7f\ue005")[rng.Intn(6)], []rune("abcd\ud7ff")[rng.Intn(5)]}[:rng.Intn(3)])
			if p.matches(s) != (d.matches(s) && e.matches(s)) {
				t.Fatalf("iteration %d: %q: the product disagrees", iter, s)
			}
		}
		// disjointDFA is the emptiness of the product, without building it
		if got, want := disjointDFA(d, e), p.isEmpty(); got != want {
			t.Fatalf("iteration %d: disjointDFA %v, the product's emptiness %v", iter, got, want)
		}
	}
}

// cycleDFA accepts the strings whose length is r modulo n.
func cycleDFA(n, r int) *dfa {
	d := &dfa{states: make([]dfaState, n)}
	for i := range d.states {
		d.states[i] = dfaState{accept: i == r, edges: edgesFor(anyRune, (i+1)%n)}
	}
	return d
}

// disjointDFA explores at most MaxDFAStates pairs: past them it answers
// "not shown disjoint", and the product the converter then builds fails
// with the size error, as it did before the check existed.
func TestDisjointDFABounded(t *testing.T) {
	for _, c := range []struct {
		a, b     *dfa
		disjoint bool // what disjointDFA answers
		tooBig   bool // whether the product fails
	}{
		{cycleDFA(4, 0), cycleDFA(6, 1), true, false},     // even and odd lengths, 12 pairs
		{cycleDFA(4, 0), cycleDFA(6, 2), false, false},    // both accept length 8
		{cycleDFA(134, 0), cycleDFA(142, 1), false, true}, // disjoint, but 9,514 pairs
	} {
		if got := disjointDFA(c.a, c.b); got != c.disjoint {
			t.Errorf("%d×%d states: disjointDFA = %v, want %v", len(c.a.states), len(c.b.states), got, c.disjoint)
		}
		p, err := intersectDFA(c.a, c.b)
		if (err != nil) != c.tooBig {
			t.Errorf("%d×%d states: product error %v, want too big: %v", len(c.a.states), len(c.b.states), err, c.tooBig)
		}
		if err == nil && p.isEmpty() != c.disjoint {
			t.Errorf("%d×%d states: product empty %v, disjointDFA %v", len(c.a.states), len(c.b.states), p.isEmpty(), c.disjoint)
		}
	}
}
