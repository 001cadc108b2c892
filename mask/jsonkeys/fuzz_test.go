package jsonkeys

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

var fuzzTable = sync.OnceValue(func() *Table {
	var extra []string
	r := rand.New(rand.NewPCG(9, 9))
	seen := map[string]bool{}
	for len(extra) < 200 {
		var b strings.Builder
		for k := 1 + r.IntN(3); k > 0; k-- {
			b.WriteString(fragments[r.IntN(len(fragments))])
		}
		if s := b.String(); !seen[s] && len(s) > 1 {
			seen[s] = true
			extra = append(extra, s)
		}
	}
	return NewTable(byteVocab(nil, extra...))
})

// FuzzScan checks the scanner three ways on any input: Duplicates agrees
// with encoding/json (validity and duplicate keys); a guard fed the input
// in pieces accepts exactly up to the first problem (a duplicate key or a
// syntax error) and its state equals a fresh scan; and Filter at that
// point clears exactly the tokens of a small vocabulary that close a
// duplicate (against a rescan). It never panics, and nesting is bounded by
// MaxDepth.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"\ud83d\ude00":1,"😀":2}`, `{"\ud800":1,"\udc00":2}`,
		`[{"a":1,"a":2},{"x":[{"y":1,"y":2}]}]`, `{"a":-0.5e+10,"b":true,"c":null,"d":false}`,
		"{\"é\":1,\"e\\u0301\":2}", `{"a\"b":1,"a\u0022b":2}`, `{"a":[1,2,3],"b":{"c":{}}}`,
		`{"a":1,`, `{"a":1,"`, `{"ab":1,"a`, `["x`, `{"a":"x`, `{"\u00`, `{"\ud800`,
		"\"\xed\xa0\x80\"", `1.e5`, `01`, `{"a" 1}`,
	} {
		f.Add([]byte(s), uint8(3))
	}
	t := fuzzTable()
	f.Fuzz(func(tt *testing.T, doc []byte, piece uint8) {
		if len(doc) > 1024 {
			return
		}
		checkDifferential(tt, doc)
		// The first problem.
		var s scanner
		s.reset()
		stop := len(doc)
		for i, c := range doc {
			if ev := s.step(c); ev == evError || ev == evDup {
				stop = i
				break
			}
		}
		g := t.NewGuard()
		n := 1 + int(piece%8)
		for pos := 0; pos < len(doc); pos += n {
			end := min(pos+n, len(doc))
			err := g.AcceptBytes(doc[pos:end])
			if (err == nil) != (end <= stop) {
				tt.Fatalf("%q: piece %d:%d: %v (first problem at %d)", doc, pos, end, err, stop)
			}
			if err != nil {
				break
			}
		}
		checkFresh(tt, g)
		// Filter where the guard stands, against the rescan.
		v := t.v
		bits := make([]uint32, t.words)
		for i := range bits {
			bits[i] = ^uint32(0)
		}
		_ = g.Filter(bits)
		for id := int32(0); int(id) < v.Size()-1; id++ {
			allowed := bits[id>>5]&(1<<(id&31)) != 0
			if allowed == refCloses(tt, g.Output(), v.Token(id)) {
				tt.Fatalf("%q + %q: allowed after Filter %v", g.Output(), v.Token(id), allowed)
			}
		}
	})
}
