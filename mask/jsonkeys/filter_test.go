package jsonkeys

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/structgen/structgen/mask"
)

// refCloses is the reference for Filter: scan prefix+tok from scratch and
// say whether a duplicate key closes (before any syntax error).
func refCloses(tb testing.TB, prefix, tok []byte) bool {
	var w walker
	w.init()
	if err := w.feed(prefix); err != nil || len(w.dups) > 0 {
		tb.Fatalf("bad prefix %q: %v %v", prefix, err, w.dups)
	}
	w.feed(tok)
	return len(w.dups) > 0
}

// fragments make up the tokens of the random vocabularies: pieces of
// JSON syntax, key characters and every kind of escape, split UTF-8.
var fragments = []string{
	`"`, `"`, `"`, `a`, `b`, `ab`, `\`, `u`, `0061`, `00`, `61`, `\u0061`, `\"`, `\\`,
	`:`, `,`, `{`, `}`, `[`, `]`, ` `, "\n", `1`, `é`, "\xc3", "\xa9", `\ud83d`,
	`\ude00`, `\ud800`, `d83d`, `ude00`, `\ufffd`, "\ufffd", `null`, `n`, `ull`, `😀`,
	"\xf0\x9f", "\x98\x80", `\n`, `\u000a`, `\u00e9`, `e9`, `\u`,
	`","`, `":"`, `","a"`, `"},"`, `":1,"`, `"a":`, `"b"`, `""`, `"}],"`, `,"`, `":{"`,
}

func randomVocab(tb testing.TB, r *rand.Rand, n int) *mask.Vocab {
	seen := map[string]bool{}
	var extra []string
	for len(extra) < n {
		var b strings.Builder
		for k := 1 + r.IntN(4); k > 0; k-- {
			b.WriteString(fragments[r.IntN(len(fragments))])
		}
		switch r.IntN(4) {
		case 0:
			b.WriteString(`"`)
		case 1:
			b.WriteString(`":`)
		}
		if s := b.String(); !seen[s] && len(s) > 1 {
			seen[s] = true
			extra = append(extra, s)
		}
	}
	return byteVocab(tb, extra...)
}

// TestFilterDifferential compares Filter with the reference on random
// vocabularies and random prefixes of documents full of equal keys
// spelled differently: a token is cleared iff appending it closes a
// duplicate key. The guard reaches each prefix in random steps with
// rollbacks, and its mask may have random holes.
func TestFilterDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cleared, inKey := 0, 0
	for vi := 0; vi < 8; vi++ {
		v := randomVocab(t, r, 300)
		tb := NewTable(v)
		g := tb.NewGuard()
		bits := make([]uint32, (v.Size()+31)/32)
		for di := 0; di < 150; di++ {
			doc := randomDoc(r, true)
			if _, err := Duplicates(doc); err != nil {
				t.Fatalf("generator: %q: %v", doc, err)
			}
			cuts := []int{r.IntN(len(doc) + 1), len(doc)}
			if ks := keyPositions(doc); len(ks) > 0 {
				cuts = append(cuts, ks[r.IntN(len(ks))], ks[r.IntN(len(ks))])
			}
			for _, cut := range cuts {
				prefix := doc[:cut]
				reach(t, r, g, prefix)
				for i := range bits {
					bits[i] = ^uint32(0)
					if r.IntN(8) == 0 {
						bits[i] = r.Uint32()
					}
				}
				before := append([]uint32(nil), bits...)
				err := g.Filter(bits)
				if g.s.st.mode == mString && g.s.st.key {
					inKey++
				}
				for id := int32(0); int(id) < v.Size(); id++ {
					was := before[id>>5]&(1<<(id&31)) != 0
					is := bits[id>>5]&(1<<(id&31)) != 0
					want := was && !(v.Kind(id) == mask.TokenNormal && refCloses(t, prefix, v.Token(id)))
					if is != want {
						t.Fatalf("prefix %q, token %d %q: allowed after Filter %v, want %v", prefix, id, v.Token(id), is, want)
					}
					if was && !is {
						cleared++
					}
				}
				var de *DeadEndError
				if err != nil && (!errors.As(err, &de) || !allZero(bits)) {
					t.Fatalf("prefix %q: %v with a non-empty mask", prefix, err)
				}
				if string(g.Output()) != string(prefix) {
					t.Fatalf("Filter changed the output: %q", g.Output())
				}
			}
		}
	}
	t.Logf("%d tokens cleared, %d prefixes inside a key", cleared, inKey)
	if cleared < 500 || inKey < 300 {
		t.Errorf("too few cases: %d cleared, %d inside a key", cleared, inKey)
	}
}

// keyPositions returns the prefix lengths of doc that end inside a key of
// an object that has keys.
func keyPositions(doc []byte) []int {
	var s scanner
	s.reset()
	var out []int
	for i, c := range doc {
		s.step(c)
		if s.st.mode == mString && s.st.key && len(s.nodes[s.st.top].keys) > 0 {
			out = append(out, i+1)
		}
	}
	return out
}

// reach brings the guard to exactly prefix in random steps, rolling back
// part of the way from where it is.
func reach(t *testing.T, r *rand.Rand, g *Guard, prefix []byte) {
	t.Helper()
	if r.IntN(3) == 0 {
		g.Reset()
	}
	// Roll back to a common prefix, sometimes further.
	out := g.Output()
	common := 0
	for common < len(out) && common < len(prefix) && out[common] == prefix[common] {
		common++
	}
	for len(g.Output()) > common || (r.IntN(3) == 0 && g.Steps() > 0) {
		if err := g.Rollback(1); err != nil {
			t.Fatal(err)
		}
	}
	for pos := len(g.Output()); pos < len(prefix); {
		n := min(1+r.IntN(5), len(prefix)-pos)
		if err := g.AcceptBytes(prefix[pos : pos+n]); err != nil {
			t.Fatalf("%q: %v", prefix, err)
		}
		pos += n
	}
}

// TestFilterManyKeys covers objects with more keys sharing the open key's
// prefix than Filter looks up one by one (maxHeadLookups).
func TestFilterManyKeys(t *testing.T) {
	var extra []string
	for i := range 200 {
		extra = append(extra, fmt.Sprintf(`%d"`, i), fmt.Sprintf(`%d":`, i), fmt.Sprintf(`k%d"`, i))
	}
	v := byteVocab(t, append(extra, `\u006b1"`, `":1,"k1"`)...)
	g := NewTable(v).NewGuard()
	var doc strings.Builder
	doc.WriteString(`{`)
	for i := range 150 {
		fmt.Fprintf(&doc, `"k%d":1,`, i)
	}
	for _, prefix := range []string{doc.String() + `"`, doc.String() + `"k`, doc.String() + `"k1`, doc.String() + `"k12`, doc.String() + `"k\u0031`} {
		g.Reset()
		if err := g.AcceptBytes([]byte(prefix)); err != nil {
			t.Fatal(err)
		}
		bits := make([]uint32, (v.Size()+31)/32)
		for i := range bits {
			bits[i] = ^uint32(0)
		}
		if err := g.Filter(bits); err != nil {
			t.Fatal(err)
		}
		n := 0
		for id := int32(0); int(id) < v.Size(); id++ {
			is := bits[id>>5]&(1<<(id&31)) != 0
			want := !refCloses(t, []byte(prefix), v.Token(id))
			if is != want {
				t.Fatalf("prefix ...%q, token %q: allowed %v, want %v", prefix[len(prefix)-8:], v.Token(id), is, want)
			}
			if !is {
				n++
			}
		}
		if n == 0 {
			t.Errorf("prefix ...%q: nothing cleared", prefix[len(prefix)-8:])
		}
	}
}

// TestFilterCases lists what Filter clears in typical and tricky places.
func TestFilterCases(t *testing.T) {
	for _, tc := range []struct {
		prefix      string
		clear, keep []string
	}{
		{`{"a":1,"`, []string{`a"`, `a":`, `a":2`, `\u0061"`, `\u0061":{`}, []string{`b"`, `ab"`, `\u0061`, `a`, `"`, `":`}},
		{`{"a":1,`, []string{`"a"`, `"a":`, ` "a"`, "\n\"\\u0061\":"}, []string{`"b"`, `"a`, `""`}},
		{`{"a":"x`, []string{`","a"`, `","a":"`}, []string{`","b"`, `"}`, `","`, `a"`}},
		{`{"a":1,"b":{"c":2`, []string{`},"a"`, `}, "b":`, `,"c"`}, []string{`},"c"`, `,"a"`}},
		{`[`, []string{`{"a":1,"a"`}, []string{`{"a":1,"b"`, `"a","a"`}},
		{`["x`, []string{`",{"a":1,"a"`}, []string{`",{"a":1,"b"`}},
		{`{"`, []string{`a":1,"a"`}, []string{`a":1,"b"`, `a"`}},
		{`{"😀":1,"\ud83d`, []string{`\ude00"`, `\uDE00":`}, []string{`\ude01"`, `"`}},
		{`{"\ufffd":1,"\ud800`, []string{`"`, `":`}, []string{`\u0041"`, `\udc00"`}},
		{`{"\ud800\udc00":1,"\ud800`, []string{`\udc00"`}, []string{`"`, `\ud800"`}},
		{"{\"é\":1,\"\xc3", []string{"\xa9\""}, []string{"\xa8\""}},
		{`{"a":1,"\`, []string{`u0061"`}, []string{`"`, `u0062"`}},
		{`{"a\"":1,"a`, []string{`\""`, `\u0022"`}, []string{`\"\""`, `"`}},
		{`{"":1,`, []string{`""`, `"":`}, []string{`"a"`}},
		{`{"ab":1,"abc":2,"a`, []string{`b"`, `bc"`}, []string{`"`, `bcd"`, `c"`, `b`}},
		{`{"a":[{"b":1}],"c":{"d":[1,2,{"a":1,"b":2`, []string{`,"a"`, `}]},"a"`, `}]},"c"`, `,"b":`}, []string{`}]},"d"`, `}]},"b"`, `,"c"`}},
	} {
		var all []string
		all = append(all, tc.clear...)
		all = append(all, tc.keep...)
		v := byteVocab(t, all...)
		g := NewTable(v).NewGuard()
		if err := g.AcceptBytes([]byte(tc.prefix)); err != nil {
			t.Fatalf("%q: %v", tc.prefix, err)
		}
		bits := make([]uint32, (v.Size()+31)/32)
		for i := range bits {
			bits[i] = ^uint32(0)
		}
		if err := g.Filter(bits); err != nil {
			t.Fatalf("%q: %v", tc.prefix, err)
		}
		for i, s := range all {
			id := int32(256 + i)
			if allowed, want := bits[id>>5]&(1<<(id&31)) != 0, i >= len(tc.clear); allowed != want {
				t.Errorf("%q + %q: allowed %v, want %v", tc.prefix, s, allowed, want)
			}
			if refCloses(t, []byte(tc.prefix), []byte(s)) == (i >= len(tc.clear)) {
				t.Errorf("%q + %q: the reference disagrees with the table", tc.prefix, s)
			}
		}
	}
}
