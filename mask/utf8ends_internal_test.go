package mask

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/vocab"
)

// utf8EndsRef is utf8Ends as it was before runs of bytes were checked
// once (each byte apart, a map memo): the reference.
func utf8EndsRef(a *automaton, s int32, end func(int32) bool) bool {
	type fkey struct {
		s      int32
		n      int
		lo, hi byte
	}
	memo := map[fkey]bool{}
	var finishes func(s int32, n int, lo, hi byte) bool
	finishes = func(s int32, n int, lo, hi byte) bool {
		k := fkey{s, n, lo, hi}
		if r, ok := memo[k]; ok {
			return r
		}
		st := &a.states[s]
		ok := len(st.calls) == 0 && len(st.toks) == 0 && st.flags&stFinal == 0
		for b := int(lo); ok && b <= int(hi); b++ {
			t := a.step(s, int(a.classOf[b]))
			if n == 1 {
				ok = t >= 0 && end(t)
			} else {
				ok = t >= 0 && finishes(t, n-1, 0x80, 0xBF)
			}
		}
		for b := 0; ok && b < 256; b++ {
			if b < int(lo) || b > int(hi) {
				ok = a.step(s, int(a.classOf[b])) < 0
			}
		}
		memo[k] = ok
		return ok
	}
	for b := 0x80; b < 0x100; b++ {
		t := a.step(s, int(a.classOf[b]))
		n, lo, hi := vocab.UTF8Lead(byte(b))
		if n == 0 && t >= 0 || n > 0 && (t < 0 || !finishes(t, n, lo, hi)) {
			return false
		}
	}
	return true
}

// TestUTF8Ends compares utf8Ends with the reference over every state of
// grammars whose characters end in one state (a JSON string, every
// scalar value), in one state per lead byte (51 of them: past the list
// memo's bound, its map), or not at all (a class that splits a lead
// byte's characters; the surrogates' lead byte ED's characters apart).
func TestUTF8Ends(t *testing.T) {
	var perLead strings.Builder
	perLead.WriteString("root ::= (")
	k := 0
	for b := 0xC2; b <= 0xF4; b++ {
		n, lo, hi := vocab.UTF8Lead(byte(b))
		first := []byte{byte(b), lo}
		last := []byte{byte(b), hi}
		for range n - 1 {
			first = append(first, 0x80)
			last = append(last, 0xBF)
		}
		if k > 0 {
			perLead.WriteString(" | ")
		}
		fmt.Fprintf(&perLead, "[%s-%s] \"k%d\"", string(first), string(last), k)
		k++
	}
	perLead.WriteString(")*\n")
	grammars := map[string]string{
		"json-string":        `root ::= "\"" ([^"\\\x00-\x1F] | "\\" ["\\/bfnrt])* "\""`,
		"per-lead":           perLead.String(),
		"split":              `root ::= ([a-z] | [\u00C0-\u00D0] | "\u00E9x")*`,
		"no-surrogates-lead": `root ::= ([a-z] | [\u0800-\uD7FF] | [\uE000-\uFFFF])*`,
		"surrogates-range":   `root ::= ([a-z] | [\u0080-\uFFFF] | [\U00010000-\U0010FFFF])*`,
	}
	v, err := NewVocab([][]byte{[]byte("a")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range grammars {
		t.Run(name, func(t *testing.T) {
			a := automatonOf(t, src, v)
			oks := 0
			for s := range a.states {
				var got, want []int32
				g := a.utf8Ends(int32(s), func(x int32) bool {
					if !slices.Contains(got, x) {
						got = append(got, x)
					}
					return true
				})
				w := utf8EndsRef(a, int32(s), func(x int32) bool {
					if !slices.Contains(want, x) {
						want = append(want, x)
					}
					return true
				})
				slices.Sort(got)
				slices.Sort(want)
				if g != w || g && !slices.Equal(got, want) {
					t.Errorf("state %d: utf8Ends %v %v, reference %v %v", s, g, got, w, want)
				}
				if g {
					oks++
					// A fixed end: true only for the one end every character reaches.
					for _, d := range want {
						if a.utf8Into(int32(s), d) != (len(want) == 1) {
							t.Errorf("state %d: utf8Into(%d) with ends %v", s, d, want)
						}
					}
				}
			}
			t.Logf("%d of %d states: every character ends in the states utf8Ends names", oks, len(a.states))
		})
	}
}

// automatonOf parses, lowers and builds the automaton of GBNF src over v.
func automatonOf(t *testing.T, src string, v *Vocab) *automaton {
	t.Helper()
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	defs, _, err := lowerGrammar(g, v, false, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := buildAutomaton(defs, maxStates, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
