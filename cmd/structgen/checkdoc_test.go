package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

func TestScanDocument(t *testing.T) {
	src := `{"a/b":[1,{"~k":"x","~k":true}],"a/b":null, "c" : "é\u00e9"}`
	d, err := scanDocument([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for ptr, want := range map[string]string{
		"":            `{"a/b"`,
		"/a~1b":       `null`, // the last duplicate wins, as in the value
		"/a~1b/1/~0k": `true}`,
		"/c":          `"é\u00e9"}`,
	} {
		off, ok := d.offsets[ptr]
		if !ok || !strings.HasPrefix(src[off:], want) {
			t.Errorf("offset of %q: %d, want the start of %s", ptr, off, want)
		}
	}
	var dups []string
	for _, k := range d.dups {
		dups = append(dups, k.ptr+"@"+src[k.off:k.off+6]+"@"+src[k.first:k.first+6])
	}
	if want := []string{`/a~1b/1/~0k@"~k":t@"~k":"`, `/a~1b@"a/b":@"a/b":`}; !reflect.DeepEqual(dups, want) {
		t.Errorf("duplicates %q, want %q", dups, want)
	}
	if m := d.value.(map[string]any); m["a/b"] != nil || m["c"] != "éé" {
		t.Errorf("value %v", d.value)
	}
	// Nesting is bounded by encoding/json's limit (10,000 levels).
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	if _, err := scanDocument([]byte(deep)); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("10,001 levels: %v", err)
	}
	ok := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	if _, err := scanDocument([]byte(ok)); err != nil {
		t.Errorf("10,000 levels: %v", err)
	}
}

func TestMissingNames(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want []string
	}{
		{`missing properties: 'age'`, []string{"age"}},
		{`missing properties: 'a', 'b'`, []string{"a", "b"}},
		{`missing properties: 'it\'s', 'say "hi"', 'tab\t', 'a, \'b'`, []string{"it's", `say "hi"`, "tab\t", "a, 'b"}},
		{`missing properties: 'x\\'`, []string{`x\`}},
	} {
		got, ok := missingNames(&jsonschema.ValidationError{KeywordLocation: "/properties/o/required", Message: tc.msg})
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q %v, want %q", tc.msg, got, ok, tc.want)
		}
	}
	if _, ok := missingNames(&jsonschema.ValidationError{KeywordLocation: "/minimum", Message: "missing properties: 'a'"}); ok {
		t.Error("not a required keyword")
	}
}
