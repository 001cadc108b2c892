package jsonkeys

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/structgen/structgen/mask"
)

// setup compiles src against the byte vocabulary and brings a matcher and
// a guard to prefix.
func setup(t *testing.T, src, prefix string) (*mask.Matcher, *Guard) {
	t.Helper()
	v := byteVocab(t)
	m := CompileGBNF(t, src, v).NewMatcher()
	g := NewTable(v).NewGuard()
	if err := m.AcceptBytes([]byte(prefix)); err != nil {
		t.Fatal(err)
	}
	if err := g.AcceptBytes([]byte(prefix)); err != nil {
		t.Fatal(err)
	}
	return m, g
}

const (
	threeKeys   = `root ::= "{" kv ("," kv)* "}"` + "\n" + `kv ::= "\"" ("a" | "b" | "ab") "\":1"`
	escapedKeys = `root ::= "{" kv ("," kv)* "}"` + "\n" + `kv ::= "\"" ("a" | "\\u0061" | "b") "\":1"`
	freeKeys    = `root ::= "{" kv ("," kv)* "}"` + "\n" + `kv ::= "\"" [a-z]+ "\":1"`
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		src, prefix string
		dead        bool
		deadPrefix  string
	}{
		{threeKeys, `{"a":1,"b":1,`, false, ""},
		{threeKeys, `{"a":1,"b":1,"ab":1,`, true, ""},
		{threeKeys, `{"a":1,"b":1,"ab":1,"`, true, ""},
		{threeKeys, `{"a":1,"b":1,"a`, false, ""},
		{threeKeys, `{"a":1,"ab":1,"b":1,"a`, true, "a"},
		{threeKeys, `{"a":1,"ab":1,"`, false, ""},
		{threeKeys, `{"a":1`, false, ""},    // not at a key position
		{threeKeys, `{"a":1,"b`, false, ""}, // "b" is fresh
		{escapedKeys, `{"a":1,"b":1,`, true, ""},
		{escapedKeys, `{"\u0061":1,`, false, ""},
		{escapedKeys, `{"b":1,"\u0061":1,"\u00`, true, ""},
		{freeKeys, `{"a":1,"b":1,"c":1,`, false, ""},
		{freeKeys, `{"a":1,"ab":1,"a`, false, ""},
	} {
		m, g := setup(t, tc.src, tc.prefix)
		steps, tokens := g.Steps(), m.Tokens()
		err := g.Check(m)
		var de *DeadEndError
		if got := errors.As(err, &de); got != tc.dead || err != nil && !got {
			t.Errorf("%s | %s: Check = %v, want dead end %v", tc.src, tc.prefix, err, tc.dead)
			continue
		}
		if de != nil && (de.Pointer != "" || de.Prefix != tc.deadPrefix && g.s.st.esc == 0) {
			t.Errorf("%s: %+v", tc.prefix, de)
		}
		if g.Steps() != steps || m.Tokens() != tokens || string(g.Output()) != tc.prefix {
			t.Errorf("%s: Check changed the state", tc.prefix)
		}
	}
}

func TestShortestCompletion(t *testing.T) {
	for _, tc := range []struct {
		src, prefix, want string
	}{
		{freeKeys, `{"a":1,"b`, `":1}`},       // no duplicate: the grammar's own
		{freeKeys, `{"a":1,"a`, `a":1}`},      // one byte longer
		{freeKeys, `{"a":1,"b":1,`, `"c":1}`}, // as short, another key
		{freeKeys, `{"a":1,"b":1,"c":1,"d":1,"e":1,`, `"f":1}`},
		{threeKeys, `{"a":1,"b":1,`, `"ab":1}`},
		{threeKeys, `{"ab":1,"a`, `":1}`},
		{threeKeys, `{"a":1,"a`, `b":1}`},
		{escapedKeys, `{"a":1,`, `"b":1}`},
		{`root ::= "{" kv ("," kv)* "}" | "[]"` + "\n" + `kv ::= "\"" [a-z]{1,3} "\":" ("1" | "{" kv "}")`, `{"a":{"a":1},"b":{"c`, `":1}}`},
	} {
		m, g := setup(t, tc.src, tc.prefix)
		got, err := ShortestCompletion(m, g)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: completion %q, %v; want %q", tc.prefix, got, err, tc.want)
			continue
		}
		if g.Steps() != 1 || m.Tokens() != 1 || string(g.Output()) != tc.prefix {
			t.Errorf("%s: ShortestCompletion changed the state", tc.prefix)
		}
		if err := g.AcceptBytes(got); err != nil {
			t.Error(err)
		}
		if err := m.AcceptBytes(got); err != nil || !m.CanEnd() {
			t.Errorf("%s + %s: %v, can end %v", tc.prefix, got, err, m.CanEnd())
		}
	}
	// No completion: every key is used and the grammar wants another.
	m, g := setup(t, `root ::= "{" kv "," kv "," kv "}"`+"\n"+`kv ::= "\"" [ab] "\":1"`, `{"a":1,"b":1,`)
	_, err := ShortestCompletion(m, g)
	var ce *CompletionError
	if !errors.As(err, &ce) || ce.Dup == nil || ce.Dup.Key != "a" {
		t.Errorf("%v", err)
	}
}

func TestFilterDeadEnd(t *testing.T) {
	v := byteVocab(t, `a"`, `b"`)
	g := NewTable(v).NewGuard()
	if err := g.AcceptBytes([]byte(`{"x":{"a":1,"b":2,`)); err != nil {
		t.Fatal(err)
	}
	if err := g.AcceptBytes([]byte(`"`)); err != nil {
		t.Fatal(err)
	}
	bits := make([]uint32, (v.Size()+31)/32)
	for _, id := range []int32{256, 257, 'a', 'b'} {
		bits[id>>5] |= 1 << (id & 31)
	}
	if err := g.Filter(bits); err != nil {
		t.Fatalf("single letters stay: %v", err)
	}
	clear(bits)
	bits[256>>5] |= 3 // a" and b" only
	err := g.Filter(bits)
	var de *DeadEndError
	if !errors.As(err, &de) || de.Pointer != "/x" || de.Keys != 2 || !allZero(bits) {
		t.Fatalf("%v", err)
	}
	if want := `jsonkeys: no unused key is possible for the object at /x (it has 2 keys): the grammar allows only keys it already has`; err.Error() != want {
		t.Errorf("%s", err)
	}
}

func TestAcceptErrors(t *testing.T) {
	v := byteVocab(t, `"a"`)
	g := NewTable(v).NewGuard()
	if err := g.AcceptBytes([]byte(`[{"a":1},{"b":{"a":1,`)); err != nil {
		t.Fatal(err)
	}
	err := g.Accept(256)
	var de *DuplicateKeyError
	if !errors.As(err, &de) || de.Pointer != "/1/b" || de.Key != "a" || de.Offset != 21 || de.First != 15 {
		t.Fatalf("%#v", err)
	}
	if want := `jsonkeys: offset 21: duplicate key "a" in the object at /1/b (first at offset 15)`; err.Error() != want {
		t.Errorf("%s", err)
	}
	if g.Steps() != 1 || string(g.Output()) != `[{"a":1},{"b":{"a":1,` {
		t.Errorf("state changed: %d %q", g.Steps(), g.Output())
	}
	err = g.AcceptBytes([]byte(`"b":]`))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != 25 || err.Error() != "jsonkeys: offset 25: expected a value" {
		t.Fatalf("%v", err)
	}
	// Special tokens are steps without bytes.
	if err := g.Accept(int32(v.Size() - 1)); err != nil || g.Steps() != 2 {
		t.Fatal(err, g.Steps())
	}
	if err := g.Rollback(1); err != nil || g.Steps() != 1 {
		t.Fatal(err)
	}
	if err := g.Accept(int32(v.Size())); err == nil {
		t.Error("token out of range accepted")
	}
	if err := g.Rollback(2); err == nil {
		t.Error("rolled back more steps than accepted")
	}
}

func TestClone(t *testing.T) {
	g := NewTable(byteVocab(t)).NewGuard()
	if err := g.AcceptBytes([]byte(`{"a":{"b":1},"c":[{"d":1`)); err != nil {
		t.Fatal(err)
	}
	c := g.Clone()
	if err := c.AcceptBytes([]byte(`,"e":1}],"b":2`)); err != nil {
		t.Fatal(err)
	}
	if err := g.AcceptBytes([]byte(`,"d"`)); err == nil {
		t.Error("the original lost its keys")
	}
	if err := g.AcceptBytes([]byte(`}],"c"`)); err == nil {
		t.Error("the original lost its keys")
	}
	if err := c.Rollback(1); err != nil || string(c.Output()) != string(g.Output()) {
		t.Fatal(err)
	}
	checkFresh(t, c)
	checkFresh(t, g)
}

// TestShortestCompletionBound: where the search space is large and every
// completion within MaxCompletionExtra repeats a key, the search stops at
// MaxCompletionSteps with an error that says so.
func TestShortestCompletionBound(t *testing.T) {
	var used strings.Builder // every two-letter key
	used.WriteString("{")
	for x := 'a'; x <= 'z'; x++ {
		for y := 'a'; y <= 'z'; y++ {
			fmt.Fprintf(&used, `"%c%c":1,`, x, y)
		}
	}
	m, g := setup(t, `root ::= "{" kv ("," kv)* "}"`+"\n"+`kv ::= "\"" ([a-z]{2} | [a-z]{80}) "\":1"`, used.String())
	_, err := ShortestCompletion(m, g)
	var ce *CompletionError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "MaxCompletionSteps") || ce.Dup == nil || ce.Dup.Key != "aa" {
		t.Fatalf("%v", err)
	}
	t.Log(err)
}
