// Package benchcases loads the five benchmark cases of ../shared/bench:
// a grammar (GBNF) or a JSON Schema, the document it accepts, the
// document's Llama-3 token ids, and the per-step allowed-token counts of
// the peer engines where the bench records them.
package benchcases

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Case is one benchmark case.
type Case struct {
	ID      string // e.g. "03-arith-ebnf"
	Kind    string // "builtin_json", "json_schema" or "ebnf"
	Grammar string // GBNF source (kind builtin_json and ebnf)
	Schema  []byte // JSON Schema (kind json_schema)
	Doc     []byte // the document, exact bytes
	Tokens  []int32

	// XGrammarCounts[i] is the number of tokens (of all 128,256 ids, the
	// two stop ids included) XGrammar allowed before token i, and at
	// i == len(Tokens) after the last one. Nil if not recorded.
	XGrammarCounts []int
	// LlamaCppCounts is llama.cpp's count of allowed regular tokens (ids <
	// 128000) per step, for the cases where the bench records it.
	LlamaCppCounts []int
}

type manifest struct {
	Cases []struct {
		ID      string `json:"id"`
		Kind    string `json:"kind"`
		Grammar string `json:"grammar"`
		Schema  string `json:"schema"`
		Doc     string `json:"doc"`
	} `json:"cases"`
}

// Load reads every case from the bench folder (../shared/bench).
func Load(benchDir string) ([]*Case, error) {
	casesDir := filepath.Join(benchDir, "cases")
	raw, err := os.ReadFile(filepath.Join(casesDir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(casesDir, "manifest.json"), err)
	}
	xg, err := loadXGrammarCounts(filepath.Join(benchDir, "xgrammar-results.json"))
	if err != nil {
		return nil, err
	}
	lc, err := loadLlamaCounts(filepath.Join(benchDir, "llamacpp-allowed-counts.json"))
	if err != nil {
		return nil, err
	}
	var out []*Case
	for _, mc := range m.Cases {
		c := &Case{ID: mc.ID, Kind: mc.Kind}
		if mc.Grammar != "" {
			b, err := os.ReadFile(filepath.Join(casesDir, mc.Grammar))
			if err != nil {
				return nil, err
			}
			c.Grammar = string(b)
		} else if mc.Kind == "builtin_json" {
			b, err := os.ReadFile(filepath.Join(casesDir, mc.ID, "grammar.gbnf"))
			if err != nil {
				return nil, err
			}
			c.Grammar = string(b)
		}
		if mc.Schema != "" {
			if c.Schema, err = os.ReadFile(filepath.Join(casesDir, mc.Schema)); err != nil {
				return nil, err
			}
		}
		if c.Doc, err = os.ReadFile(filepath.Join(casesDir, mc.Doc)); err != nil {
			return nil, err
		}
		tokPath := filepath.Join(casesDir, mc.ID, "doc.llama3.tokens.json")
		tb, err := os.ReadFile(tokPath)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(tb, &c.Tokens); err != nil {
			return nil, fmt.Errorf("%s: %v", tokPath, err)
		}
		c.XGrammarCounts = xg[c.ID]
		c.LlamaCppCounts = lc[c.ID]
		out = append(out, c)
	}
	return out, nil
}

func loadXGrammarCounts(path string) (map[string][]int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r struct {
		Cases []struct {
			ID      string `json:"id"`
			Allowed struct {
				Counts []int `json:"counts"`
			} `json:"allowed_tokens_per_step"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	out := map[string][]int{}
	for _, c := range r.Cases {
		out[c.ID] = c.Allowed.Counts
	}
	return out, nil
}

func loadLlamaCounts(path string) (map[string][]int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	out := map[string][]int{}
	for k, v := range r {
		var counts []int
		if json.Unmarshal(v, &counts) == nil {
			out[k] = counts
			continue
		}
		var obj struct {
			Counts []int `json:"counts"`
		}
		if json.Unmarshal(v, &obj) == nil && obj.Counts != nil {
			out[k] = obj.Counts
		}
	}
	return out, nil
}
