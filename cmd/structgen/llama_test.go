//go:build llamacpp

package main

import (
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

const llamaBuild = true

// With a model, the output follows the schema and a seed reproduces it.
func TestGenerateModel(t *testing.T) {
	model := sharedtest.Path(t, "corpus", "models", "stories260K.gguf")
	schema := writeFile(t, "person.json", personSchema)
	v, err := jsonschema2gbnf.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--model", model, "--schema", schema, "--prompt", "Once upon a time", "--seed", "3", "-n", "3", "--max-tokens", "120", "--threads", "1"}
	r := runCLI(t, "", args...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %q", len(lines), r.stdout)
	}
	for _, l := range lines {
		mustValidate(t, v, l)
	}
	if again := runCLI(t, "", args...); again.stdout != r.stdout {
		t.Errorf("not reproducible: %q then %q", r.stdout, again.stdout)
	}
	s := runCLI(t, "", "--model", model, "--prompt", "Once upon a time", "--max-tokens", "10", "--stream", "--stats", "--threads", "1")
	if s.code != 0 || !strings.Contains(s.stderr, "gumbel") || s.stdout == "" {
		t.Errorf("unconstrained --stream --stats: exit %d, %q, %q", s.code, s.stdout, s.stderr)
	}
}

// A lazy trigger that never appears is a failure (exit 1, one line on
// stderr), not free text with exit 0; one that appears is not.
func TestTriggerNeverAppears(t *testing.T) {
	model := sharedtest.Path(t, "corpus", "models", "stories260K.gguf")
	schema := writeFile(t, "person.json", personSchema)
	args := []string{"--model", model, "--schema", schema, "--prompt", "Once upon a time", "--seed", "1", "--max-tokens", "20", "--threads", "1"}
	r := runCLI(t, "", append(args, "--trigger", "<tool_call>")...)
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if r.code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "no trigger (<tool_call>) appeared in 20 tokens") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r.stdout == "" {
		t.Error("the free text was not printed")
	}
	// The story model's first word is a trigger that does appear.
	r = runCLI(t, "", append(args, "--trigger", " ")...)
	if r.code != 0 {
		t.Errorf("trigger that appears: exit %d, %q", r.code, r.stderr)
	}
}
