package gbnf_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/structgen/structgen/internal/grammartest"
	"github.com/structgen/structgen/internal/sharedtest"
)

// testSources returns the grammar sources several tests share: the table
// tests (printTests, errorTests, leftRecursionTests), the regression
// suite, and, where ../shared is, the llama.cpp grammars and the grammars
// of llama.cpp's parser and grammar test cases. Valid and invalid ones.
func testSources(tb testing.TB) []string {
	var srcs []string
	for _, tt := range printTests {
		srcs = append(srcs, tt.src)
	}
	for _, tt := range errorTests {
		srcs = append(srcs, tt.src)
	}
	for _, tt := range leftRecursionTests {
		srcs = append(srcs, tt.src)
	}
	if dir, err := grammartest.Dir(); err == nil {
		cases, err := grammartest.Load(dir)
		if err != nil {
			tb.Fatal(err)
		}
		for _, c := range cases {
			srcs = append(srcs, c.Grammar)
		}
	}
	shared, _ := sharedtest.Find()
	if shared == "" {
		return srcs
	}
	paths, _ := filepath.Glob(filepath.Join(shared, "corpus", "llama-grammars", "*.gbnf"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		srcs = append(srcs, string(b))
	}
	for _, name := range []string{"llama-grammar-parser-cases.json", "llama-grammar-cases.json"} {
		b, err := os.ReadFile(filepath.Join(shared, "corpus", name))
		if err != nil {
			tb.Fatal(err)
		}
		var cases []struct {
			Grammar string `json:"grammar"`
		}
		if err := json.Unmarshal(b, &cases); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		for _, c := range cases {
			if c.Grammar != "" {
				srcs = append(srcs, c.Grammar)
			}
		}
	}
	return srcs
}
