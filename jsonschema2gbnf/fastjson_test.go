package jsonschema2gbnf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"
)

// fastJSONSeeds are documents at the edges of JSON's grammar and of
// encoding/json's unquoting.
var fastJSONSeeds = []string{
	`{}`, `[]`, ` {"a" : [1, -0, 0.5e+3, 1E-2, true, false, null, "x"] } `, `{"a":1,"b":2,"a":3}`,
	`"\u00e9\ud83d\ude00\n\"\\\/"`, `"\ud800"`, "\"\xff\xfe\"", "\"caf\xc3\xa9\"", "\"\x01\"",
	`01`, `-`, `1.`, `.5`, `1e`, `+1`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[1 2]`, `tru`, `nul`,
	`truex`, `[true false]`, `{"a":1}{}`, `{"a":1} x`, "\ufeff{}", `"\x"`, `"\u12"`, `"abc`, ``, ` `,
	strings.Repeat("[", MaxNestingDepth) + strings.Repeat("]", MaxNestingDepth),
	strings.Repeat("[", MaxNestingDepth-1) + strings.Repeat("]", MaxNestingDepth-1),
	strings.Repeat(`{"a":`, MaxNestingDepth) + "1" + strings.Repeat("}", MaxNestingDepth),
}

// checkFastParse: where fastParse succeeds it builds what the decoder
// builds, and it succeeds on every document the decoder accepts.
func checkFastParse(t *testing.T, data []byte) {
	t.Helper()
	fast, ok := fastParse(data)
	slow, err := decodeOrdered(data)
	if ok != (err == nil) {
		t.Fatalf("%q: fastParse ok=%v, decoder error %v", data, ok, err)
	}
	if ok && !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: fastParse built %#v, the decoder %#v", data, fast, slow)
	}
}

func TestFastParse(t *testing.T) {
	for _, s := range fastJSONSeeds {
		checkFastParse(t, []byte(s))
	}
	dir, why := sharedtest.Find()
	if dir == "" {
		t.Skip(why)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "corpus", "jsonschemabench", "*", "*.json"))
	if len(files) == 0 {
		t.Skip("no JSONSchemaBench files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkFastParse(t, b)
	}
}

func FuzzFastParse(f *testing.F) {
	for _, s := range fastJSONSeeds {
		f.Add([]byte(s))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkFastParse)
}
