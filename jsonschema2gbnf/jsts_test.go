package jsonschema2gbnf

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/earley"
)

var jstsUpdate = flag.Bool("jsts.update", false, "rewrite testdata/jsts.baseline from the JSON-Schema-Test-Suite run")

const jstsBaseline = "testdata/jsts.baseline"

// TestJSONSchemaTestSuite runs the draft 2020-12 JSON-Schema-Test-Suite
// (testdata/JSON-Schema-Test-Suite) through strict Convert and the
// reference recognizer, against the validator's verdict on each instance:
//
//   - an instance the validator rejects and the grammar accepts (as
//     written or as Format writes it) fails the test, always;
//   - the groups strict mode rejects and the valid instances the grammar
//     rejects (completeness) are a ratchet: testdata/jsts.baseline lists
//     them, one more is a failure, one fewer is logged (rewrite the
//     baseline with -jsts.update).
func TestJSONSchemaTestSuite(t *testing.T) {
	var got []string // baseline lines of this run
	pairs, invalid := 0, 0
	for _, file := range suiteFiles(t) {
		groups := readSuiteFile(t, file)
		base := filepath.Base(file)
		for _, g := range groups {
			id := base + " | " + g.Description
			src, err := Convert(g.Schema)
			if err != nil {
				got = append(got, "unconverted "+id)
				continue
			}
			judge, err := CompileSchema(g.Schema)
			if err != nil {
				t.Errorf("%s: Convert succeeds, CompileSchema fails: %v", id, err)
				continue
			}
			rec := earley.New(mustParse(t, src))
			for _, tc := range g.Tests {
				pairs++
				verr := Validate(judge, tc.Data)
				f, ferr := Format(g.Schema, tc.Data)
				accFmt := ferr == nil && rec.Accepts(f)
				switch {
				case verr == nil && !accFmt:
					got = append(got, "rejected "+id+" | "+tc.Description)
				case verr != nil && (accFmt || rec.Accepts(tc.Data)):
					invalid++
					t.Errorf("%s | %s: the grammar accepts %s, which the validator rejects: %v", id, tc.Description, tc.Data, verr)
				}
			}
		}
	}
	sort.Strings(got)
	t.Logf("%d instances, %d groups strict mode rejects or valid instances the grammar rejects", pairs, len(got))
	if *jstsUpdate {
		if err := os.WriteFile(jstsBaseline, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(jstsBaseline)
	if err != nil {
		t.Fatalf("%v (run with -jsts.update to create it)", err)
	}
	want := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		want[l] = true
	}
	have := map[string]bool{}
	for _, l := range got {
		have[l] = true
		if !want[l] {
			t.Errorf("regression against %s: %s", jstsBaseline, l)
		}
	}
	for l := range want {
		if !have[l] {
			t.Logf("improvement (rewrite the baseline with -jsts.update): %s", l)
		}
	}
}

// suiteFiles lists the draft 2020-12 JSON-Schema-Test-Suite files.
func suiteFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "JSON-Schema-Test-Suite", "draft2020-12", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no suite files: %v", err)
	}
	return files
}

// suiteGroup is a group of a JSON-Schema-Test-Suite file: a schema and
// instances with the verdict the suite expects.
type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

func readSuiteFile(t *testing.T, file string) []suiteGroup {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var groups []suiteGroup
	if err := json.Unmarshal(raw, &groups); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return groups
}
