package sharedtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// CorpusSchema is one schema of the JSONSchemaBench sample
// (corpus/jsonschemabench/<dataset>/<name>.json in the shared folder).
type CorpusSchema struct {
	ID     string          // "<dataset>/<name>"
	Path   string          // the file
	Index  int             // its position among all the sample's files, in path order
	Schema json.RawMessage // the file's "schema"
}

// CorpusSchemas reads every every-th file (every ≥ 1) of the
// JSONSchemaBench sample under the shared folder shared, in path order.
func CorpusSchemas(shared string, every int) ([]CorpusSchema, error) {
	dir := filepath.Join(shared, "corpus", "jsonschemabench")
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("sharedtest: no schema in %s", dir)
	}
	sort.Strings(files)
	var out []CorpusSchema
	for i := 0; i < len(files); i += max(every, 1) {
		s, err := ReadSchema(files[i])
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, files[i])
		out = append(out, CorpusSchema{ID: strings.TrimSuffix(filepath.ToSlash(rel), ".json"), Path: files[i], Index: i, Schema: s})
	}
	return out, nil
}

// ReadSchema returns the "schema" of a JSONSchemaBench sample file.
func ReadSchema(path string) (json.RawMessage, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc.Schema, nil
}
