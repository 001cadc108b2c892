package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// On well-formed JSON, SkipValue from the first non-space byte ends where
// the value does: what is left is whitespace.
func checkValue(t *testing.T, data []byte) {
	if !json.Valid(data) {
		return
	}
	end := SkipValue(data, SkipSpace(data, 0))
	if want := len(bytes.TrimRight(data, " \t\n\r")); end != want {
		t.Errorf("%q: SkipValue ends at %d, want %d", data, end, want)
	}
}

func TestSkipValue(t *testing.T) {
	for _, s := range []string{
		`"a"`, ` "a\"b" `, `{"a":[1,{"b":"}"}],"c":"\\"}`, `[]`, `{}`, `true`, `-1.5e3 `,
		"\t[\"]\", \"[\"]\n", `{"$schema":"x","a":{"b":[{}]}}`,
	} {
		checkValue(t, []byte(s))
	}
	if got := SkipString([]byte(`"abc`), 0); got != -1 {
		t.Errorf("unterminated string: %d, want -1", got)
	}
	if got := SkipValue([]byte(`{"a":[1}`), 0); got != -1 {
		t.Errorf("unclosed object: %d, want -1", got)
	}
}

func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,"]"]}`, `"x\\"`, ` [ {} ] `, `12`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkValue)
}
