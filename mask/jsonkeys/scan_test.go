package jsonkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// dupStrings prints dups as "pointer key@offset" for comparison.
func dupStrings(ds []Dup) []string {
	var out []string
	for _, d := range ds {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s@%d", d.Pointer, strconv.QuoteToASCII(d.Key), d.Offset)))
	}
	return out
}

func TestDuplicates(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []string // "pointer key@offset"
		err  string   // substring of the error
	}{
		{doc: `{"a":1,"a":2}`, want: []string{`"a"@7`}},
		{doc: `{"a":1,"b":2}`},
		{doc: `{}`},
		{doc: `[]`},
		{doc: `"x"`},
		{doc: ` 12 `},
		// Values are not keys.
		{doc: `{"a":"a","b":"a","c":["a","a"]}`},
		// Escapes resolve before comparing.
		{doc: `{"a":1,"\u0061":2}`, want: []string{`"a"@7`}},
		{doc: `{"a\"b":1,"a\u0022b":2}`, want: []string{`"a\"b"@10`}},
		{doc: `{"\n":1,"\u000a":2,"\u000A":3}`, want: []string{`"\n"@8`, `"\n"@19`}},
		{doc: `{"/":1,"\/":2}`, want: []string{`"/"@7`}},
		{doc: `{"\b\f\r\t":1,"\u0008\u000c\u000d\u0009":2}`, want: []string{`"\b\f\r\t"@14`}},
		// Surrogate pairs are one character, lone surrogates U+FFFD.
		{doc: `{"\ud83d\ude00":1,"😀":2}`, want: []string{`"\U0001f600"@18`}},
		{doc: `{"\uD83D\uDE00":1,"\ud83d\ude00":2}`, want: []string{`"\U0001f600"@18`}},
		{doc: `{"\ud800":1,"\udc00":2}`, want: []string{`"\ufffd"@12`}},
		{doc: `{"\ud800":1,"\ufffd":2}`, want: []string{`"\ufffd"@12`}},
		{doc: `{"\ud800x":1,"�x":2}`, want: []string{`"\ufffdx"@13`}},
		{doc: `{"\ud800\u0041":1,"\ufffdA":2}`, want: []string{`"\ufffdA"@18`}},
		{doc: `{"\ud83d\ud83d\ude00":1,"\ufffd😀":2}`, want: []string{`"\ufffd\U0001f600"@24`}},
		{doc: `{"\ud83d\n":1,"\ufffd\n":2}`, want: []string{`"\ufffd\n"@14`}},
		{doc: `{"\ude00\ud83d":1,"\ufffd\ufffd":2}`, want: []string{`"\ufffd\ufffd"@18`}},
		// No case folding, no normalization.
		{doc: `{"A":1,"a":2}`},
		{doc: `{"é":1,"e\u0301":2}`},
		// Nesting: each object has its own keys.
		{doc: `{"a":{"a":1},"b":{"a":1,"a":2}}`, want: []string{`/b "a"@24`}},
		{doc: `[{"a":1},{"a":2}]`},
		{doc: `[{"a":1,"a":2},{"x":[{"y":1,"y":2}]}]`, want: []string{`/0 "a"@8`, `/1/x/0 "y"@28`}},
		{doc: `{"a":1,"b":2,"a":3,"a":4}`, want: []string{`"a"@13`, `"a"@19`}},
		{doc: `{"a/b":{"~":{"k":1,"k":2}}}`, want: []string{`/a~1b/~0 "k"@19`}},
		{doc: `{"a":[{},{"b":1}],"a":{}}`, want: []string{`"a"@18`}},
		{doc: `{"":1,"":2}`, want: []string{`""@6`}},
		// Numbers and literals.
		{doc: `{"a":-0.5e+10,"b":true,"c":null,"d":false,"a":[1,2.0,3e4,0,-0,1E-2]}`, want: []string{`"a"@42`}},
		{doc: "\n { \"a\" : 1 ,\n\t\"a\" : 2 }\r\n", want: []string{`"a"@15`}},
		// Syntax errors.
		{doc: `{"a":1,}`, err: "1:8: expected a key after ','"},
		{doc: `{"a" 1}`, err: "1:6: expected ':' after a key"},
		{doc: `{1:2}`, err: "expected a key or '}'"},
		{doc: `[1,]`, err: "1:4: expected a value"},
		{doc: `[1 2]`, err: "expected ',' or ']'"},
		{doc: `{"a":1]`, err: "expected ',' or '}'"},
		{doc: `01`, err: "text after the end"},
		{doc: `1.`, err: "unexpected end"},
		{doc: `1.e5`, err: "invalid number"},
		{doc: `-`, err: "unexpected end"},
		{doc: `-a`, err: "invalid number"},
		{doc: `+1`, err: "expected a value"},
		{doc: `1e`, err: "unexpected end"},
		{doc: `1e+`, err: "unexpected end"},
		{doc: `.5`, err: "expected a value"},
		{doc: "\"\x01\"", err: "control character"},
		{doc: `"\q"`, err: "invalid escape"},
		{doc: `"\u12g4"`, err: "hex digit"},
		{doc: `{"a":1}}`, err: "text after the end"},
		{doc: `tru`, err: "unexpected end"},
		{doc: `trUe`, err: "invalid literal"},
		{doc: `nul l`, err: "invalid literal"},
		{doc: "\"\xff\"", err: "invalid UTF-8"},
		{doc: "\"\xed\xa0\x80\"", err: "invalid UTF-8"},  // a surrogate, raw
		{doc: "\"\xc0\xaf\"", err: "invalid UTF-8"},      // overlong
		{doc: "\"\xe2\x82\"", err: "invalid UTF-8"},      // truncated
		{doc: "\xef\xbb\xbf{}", err: "expected a value"}, // a BOM is not JSON text
		{doc: `{"a":1`, err: "unexpected end"},
		{doc: ``, err: "unexpected end"},
		{doc: `{"a":1,"a":2,}`, want: []string{`"a"@7`}, err: "expected a key"},
		{doc: strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)},
		{doc: strings.Repeat("[", MaxDepth+1), err: "deeper than MaxDepth"},
	} {
		t.Run("", func(t *testing.T) {
			got, err := Duplicates([]byte(tc.doc))
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("%.80q: error %v, want %q", tc.doc, err, tc.err)
			}
			if gs := dupStrings(got); !slices.Equal(gs, tc.want) {
				t.Errorf("%q: duplicates %q, want %q", tc.doc, gs, tc.want)
			}
			if err == nil {
				// The reference agrees.
				ref, ok := refDuplicates([]byte(tc.doc))
				if !ok || !slices.Equal(ref, stripOffsets(dupStrings(got))) {
					t.Errorf("%q: reference %q (ok %v)", tc.doc, ref, ok)
				}
			}
		})
	}
}

func TestDuplicatesPosition(t *testing.T) {
	doc := "{\n  \"a\": 1,\n  \"a\": 2\n}"
	ds, err := Duplicates([]byte(doc))
	if err != nil || len(ds) != 1 {
		t.Fatal(ds, err)
	}
	if d := ds[0]; d.Line != 3 || d.Column != 3 || d.Offset != 14 || d.First != 4 || d.Pointer != "" || d.Key != "a" {
		t.Errorf("%+v", d)
	}
	if s := ds[0].String(); s != `3:3: duplicate key "a" in the root object (first at offset 4)` {
		t.Errorf("String: %s", s)
	}
	_, err = Duplicates([]byte("[\n1,\n]"))
	var se *SyntaxError
	if !asSyntax(err, &se) || se.Line != 3 || se.Column != 1 || se.Offset != 5 {
		t.Errorf("%#v", err)
	}
}

func asSyntax(err error, se **SyntaxError) bool {
	e, ok := err.(*SyntaxError)
	*se = e
	return ok
}

func stripOffsets(ss []string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s[:strings.LastIndexByte(s, '@')])
	}
	return out
}

// refDuplicates finds duplicate keys with encoding/json's tokenizer (an
// independent decoder) and returns them as "pointer key"; ok is false if
// doc is not a JSON text in UTF-8.
func refDuplicates(doc []byte) (dups []string, ok bool) {
	if !json.Valid(doc) || !utf8.Valid(doc) {
		return nil, false
	}
	type frame struct {
		obj     bool
		keys    map[string]bool
		wantKey bool
		key     string
		n       int
	}
	var stack []*frame
	ptr := func() string {
		var b strings.Builder
		for _, f := range stack[:len(stack)-1] {
			b.WriteByte('/')
			if f.obj {
				b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(f.key))
			} else {
				b.WriteString(strconv.Itoa(f.n))
			}
		}
		return b.String()
	}
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.obj {
			top.wantKey = true
		} else {
			top.n++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false
		}
		if len(stack) > 0 {
			if top := stack[len(stack)-1]; top.obj && top.wantKey {
				if k, isKey := tok.(string); isKey {
					if top.keys[k] {
						top.key = k
						dups = append(dups, strings.TrimSpace(ptr()+" "+strconv.QuoteToASCII(k)))
					}
					top.keys[k] = true
					top.key, top.wantKey = k, false
					continue
				}
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
	return dups, true
}

// genDoc writes a random JSON value: objects whose keys come from a small
// set, spelled raw or with escapes (so that equal keys are likely), and
// optionally made unique per object.
type genDoc struct {
	r      *rand.Rand
	unique bool
	b      []byte
}

var genKeys = []string{"a", "b", "ab", "", "é", "😀", "a\"", "\n", "\ufffd"}

// spell writes s as a JSON string in a random spelling.
func (g *genDoc) spell(s string) {
	g.b = append(g.b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			g.b = append(g.b, '\\', byte(r))
		case r < 0x20 && g.r.IntN(2) == 0:
			g.b = append(g.b, `\n`...)
		case r < 0x20 || g.r.IntN(3) == 0:
			if r > 0xFFFF {
				hi, lo := (r-0x10000)>>10+0xD800, (r-0x10000)&0x3FF+0xDC00
				g.b = fmt.Appendf(g.b, `\u%04x\u%04X`, hi, lo)
			} else if r == utf8.RuneError && g.r.IntN(2) == 0 {
				g.b = fmt.Appendf(g.b, `\u%04x`, 0xD800+g.r.IntN(0x800)) // a lone surrogate
			} else {
				g.b = fmt.Appendf(g.b, `\u%04x`, r)
			}
		default:
			g.b = utf8.AppendRune(g.b, r)
		}
	}
	g.b = append(g.b, '"')
}

func (g *genDoc) ws() {
	for g.r.IntN(4) == 0 {
		g.b = append(g.b, " \n\t\r"[g.r.IntN(4)])
	}
}

func (g *genDoc) value(depth int) {
	g.ws()
	switch k := g.r.IntN(10); {
	case k < 3 && depth < 4:
		g.b = append(g.b, '{')
		seen := map[string]bool{}
		n := g.r.IntN(6)
		for i := 0; i < n; i++ {
			key := genKeys[g.r.IntN(len(genKeys))]
			if g.unique && seen[key] {
				continue
			}
			if len(seen) > 0 || i > 0 && g.b[len(g.b)-1] != '{' {
				g.b = append(g.b, ',')
			}
			seen[key] = true
			g.ws()
			g.spell(key)
			g.ws()
			g.b = append(g.b, ':')
			g.value(depth + 1)
		}
		g.ws()
		g.b = append(g.b, '}')
	case k < 5 && depth < 4:
		g.b = append(g.b, '[')
		n := g.r.IntN(4)
		for i := 0; i < n; i++ {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.value(depth + 1)
		}
		g.b = append(g.b, ']')
	case k < 7:
		g.spell(genKeys[g.r.IntN(len(genKeys))])
	case k < 8:
		g.b = append(g.b, []string{"true", "false", "null"}[g.r.IntN(3)]...)
	default:
		g.b = append(g.b, []string{"0", "-1", "12.5", "3e7", "-0.0E-2"}[g.r.IntN(5)]...)
	}
	g.ws()
}

func randomDoc(r *rand.Rand, unique bool) []byte {
	g := &genDoc{r: r, unique: unique}
	g.value(0)
	return g.b
}

// TestDuplicatesDifferential compares Duplicates with encoding/json on
// random documents full of equal keys in different spellings, and with
// random corruptions of them.
func TestDuplicatesDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	withDups := 0
	for i := 0; i < 3000; i++ {
		doc := randomDoc(r, false)
		if i%3 == 0 && len(doc) > 0 {
			// Corrupt one byte.
			const junk = "{}[],:\"\\0a \xff"
			doc[r.IntN(len(doc))] = junk[r.IntN(len(junk))]
		}
		checkDifferential(t, doc)
		if ds, err := Duplicates(doc); err == nil && len(ds) > 0 {
			withDups++
		}
	}
	if withDups < 300 {
		t.Errorf("only %d documents with duplicates: the generator is too tame", withDups)
	}
}

func checkDifferential(t *testing.T, doc []byte) {
	t.Helper()
	ds, err := Duplicates(doc)
	ref, ok := refDuplicates(doc)
	if (err == nil) != ok {
		t.Fatalf("%q: Duplicates error %v, encoding/json valid %v", doc, err, ok)
	}
	if ok && !slices.Equal(stripOffsets(dupStrings(ds)), ref) {
		t.Fatalf("%q: duplicates %q, encoding/json %q", doc, dupStrings(ds), ref)
	}
}

// TestGuardStreaming feeds documents to a guard in random pieces, with
// random rollbacks: it rejects exactly the piece that closes the first
// duplicate (or breaks the syntax), and its state after any sequence of
// steps and rollbacks equals a fresh scan of its output.
func TestGuardStreaming(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tb := NewTable(byteVocab(t))
	g := tb.NewGuard()
	for i := 0; i < 1500; i++ {
		doc := randomDoc(r, i%2 == 0)
		// Where the first problem is: the byte that closes a duplicate
		// key or breaks the syntax.
		stop, wantErr := len(doc), ""
		var f scanner
		f.reset()
		for i, c := range doc {
			if ev := f.step(c); ev == evDup || ev == evError {
				stop, wantErr = i, "duplicate key"
				if ev == evError {
					wantErr = f.why
				}
				break
			}
		}
		g.Reset()
		pos, rollbacks := 0, 0
		for pos < len(doc) {
			n := min(1+r.IntN(6), len(doc)-pos)
			err := g.AcceptBytes(doc[pos : pos+n])
			if pos+n <= stop {
				if err != nil {
					t.Fatalf("%q: piece %d:%d rejected: %v", doc, pos, pos+n, err)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), wantErr) {
					t.Fatalf("%q: piece %d:%d over the problem at %d: error %v, want %q", doc, pos, pos+n, stop, err, wantErr)
				}
				break
			}
			pos += n
			if rollbacks < 3 && r.IntN(4) == 0 && g.Steps() > 0 {
				rollbacks++
				k := 1 + r.IntN(min(g.Steps(), 4))
				before := len(g.Output())
				if err := g.Rollback(k); err != nil {
					t.Fatal(err)
				}
				pos = len(g.Output())
				if pos > before {
					t.Fatal("rollback grew the output")
				}
			}
			checkFresh(t, g)
		}
	}
}

// checkFresh compares the guard with a fresh scan of its output.
func checkFresh(t *testing.T, g *Guard) {
	t.Helper()
	var f scanner
	f.reset()
	for _, c := range g.Output() {
		if ev := f.step(c); ev == evError || ev == evDup {
			t.Fatalf("%q: the guard accepted it, a fresh scan fails (%d)", g.Output(), ev)
		}
	}
	if got, want := describe(&g.s), describe(&f); got != want {
		t.Fatalf("%q: guard state\n%s\nfresh scan\n%s", g.Output(), got, want)
	}
}

// describe prints the logical state of a scanner: the scalar state and
// the keys of every open container.
func describe(s *scanner) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%+v", s.st)
	if s.st.mode == mString && s.st.key {
		fmt.Fprintf(&b, " open key %q", s.openKey())
	}
	for n := s.st.top; n >= 0; n = s.nodes[n].parent {
		fmt.Fprintf(&b, "\n  obj=%v keys:", s.nodes[n].obj)
		for _, id := range s.nodes[n].keys {
			fmt.Fprintf(&b, " %q@%d", s.key(id), s.keys[id].at)
		}
	}
	return b.String()
}
