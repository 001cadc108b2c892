package jsonschema2gbnf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/earley"
	"golang.org/x/tools/txtar"
)

// TestConformance runs testdata/conformance/*.txtar: cases written from
// the sections of JSON Schema 2020-12 (core §8.2.3.2 $dynamicRef, §10.2
// in-place applicators, §10.2.2.4 dependentSchemas, §11 unevaluated*,
// and the rest) and the differential fuzzer's findings. Each file:
//
//	free text: the section and what the case shows
//	-- schema.json --
//	the schema
//	-- valid --
//	one JSON document per line the validator accepts: the grammar must
//	accept it as Format writes it
//	-- invalid --
//	one per line the validator rejects: the grammar must reject it as
//	written and as Format writes it
//	-- rejected --
//	one per line the grammar rejects by a documented policy although the
//	validator may accept it (e.g. a number outside the grammar's domain)
//	-- error --
//	(instead of valid/invalid) strict Convert must fail with an error
//	containing this text
//
// A document in the wrong section (the validator disagrees) is an error
// of the case. Blank lines and lines starting with # are ignored. Every
// converted grammar is also sampled and its sentences validated.
func TestConformance(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "conformance", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance cases: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ar := txtar.Parse(data)
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			sections := map[string]txtar.File{}
			lineOf := map[string]int{} // first line of each section in the file
			line := 1 + bytes.Count(ar.Comment, []byte("\n"))
			for _, f := range ar.Files {
				line++ // the -- name -- line
				sections[f.Name] = f
				lineOf[f.Name] = line
				line += bytes.Count(f.Data, []byte("\n"))
			}
			schema := sections["schema.json"].Data
			if len(schema) == 0 {
				t.Fatalf("%s: no schema.json section", file)
			}
			src, err := Convert(schema)
			if want, ok := sections["error"]; ok {
				w := strings.TrimSpace(string(want.Data))
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s:%d: Convert = %v, want an error containing %q", file, lineOf["error"], err, w)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: Convert: %v", file, err)
			}
			g := mustParse(t, src)
			rec := earley.New(g)
			judge, err := CompileSchema(schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, kind := range []string{"valid", "invalid", "rejected"} {
				f, ok := sections[kind]
				if !ok {
					continue
				}
				for i, doc := range strings.Split(string(f.Data), "\n") {
					doc = strings.TrimSpace(doc)
					if doc == "" || doc[0] == '#' {
						continue
					}
					at := lineOf[kind] + i
					verr := Validate(judge, []byte(doc))
					formatted, ferr := Format(schema, []byte(doc))
					accFmt := ferr == nil && rec.Accepts(formatted)
					switch {
					case kind == "valid" && verr != nil:
						t.Errorf("%s:%d: the validator rejects %s: %v", file, at, doc, verr)
					case kind == "valid" && !accFmt:
						t.Errorf("%s:%d: the grammar rejects the valid %s (formatted %s)\n%s", file, at, doc, formatted, src)
					case kind == "invalid" && verr == nil:
						t.Errorf("%s:%d: the validator accepts %s", file, at, doc)
					case kind != "valid" && (rec.Accepts([]byte(doc)) || accFmt):
						t.Errorf("%s:%d: the grammar accepts the %s %s\n%s", file, at, kind, doc, src)
					}
				}
			}
			checkSound(t, string(schema), g, 30, 5, 300)
		})
	}
}

// A dynamic reference whose target depends on the scope: lenient mode
// accepts any of its candidate targets (a superset) and says so.
func TestDynamicRefLenient(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "conformance", "dynamic-ref-ambiguous.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var schema []byte
	for _, f := range txtar.Parse(data).Files {
		if f.Name == "schema.json" {
			schema = f.Data
		}
	}
	var warns []Warning
	src, err := Convert(schema, Lenient(&warns))
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || warns[0].Keyword != "$dynamicRef" || warns[0].Pointer != "#/$defs/b/properties/x" {
		t.Errorf("warnings %v, want one for #/$defs/b/properties/x/$dynamicRef", warns)
	}
	rec := earley.New(mustParse(t, src))
	// x may be any of the three targets: a string, an object, or the root
	for _, doc := range []string{`{"x":"s"}`, `{"x":{"x":"s"}}`, `{}`} {
		if !rec.Accepts([]byte(doc)) {
			t.Errorf("lenient grammar rejects %s\n%s", doc, src)
		}
	}
	if rec.Accepts([]byte(`{"x":1}`)) {
		t.Errorf("lenient grammar accepts {\"x\":1}, which no candidate allows\n%s", src)
	}
}
