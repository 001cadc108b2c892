package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

// The no-model flags: realistic by default, reproducible with --seed and
// --today, --uniform and --no-realistic the same thing, --invalid writes
// labelled near misses the validator rejects, bad values are usage errors.
func TestNoModelFlags(t *testing.T) {
	schema := sharedtest.Path(t, "bench", "cases", "02-order-schema", "schema.json")
	base := []string{"--schema", schema, "-n", "3", "--seed", "1", "--today", "2026-11-24"}
	a, b := runCLI(t, "", base...), runCLI(t, "", base...)
	if a.code != 0 || a.stdout != b.stdout {
		t.Fatalf("exit %d (%s); two runs differ: %v", a.code, a.stderr, a.stdout != b.stdout)
	}
	if !strings.Contains(a.stdout, `"created_at":"2026-`) && !strings.Contains(a.stdout, `"created_at":"2025-`) {
		t.Errorf("dates not around --today: %s", a.stdout)
	}
	u1 := runCLI(t, "", append(base, "--uniform")...)
	u2 := runCLI(t, "", append(base, "--no-realistic")...)
	if u1.code != 0 || u1.stdout != u2.stdout || u1.stdout == a.stdout {
		t.Errorf("--uniform and --no-realistic: exit %d, equal %v, differ from realistic %v", u1.code, u1.stdout == u2.stdout, u1.stdout != a.stdout)
	}
	r := runCLI(t, "", append(base, "--optional-rate", "0", "--array-len", "1,1")...)
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.Contains(line, `"notes"`) || strings.Contains(line, `"shipping"`) || strings.Count(line, `"sku"`) != 1 {
			t.Errorf("--optional-rate 0 --array-len 1,1: %s", line)
		}
	}

	raw, err := os.ReadFile(schema)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema2gbnf.CompileSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	inv := runCLI(t, "", "--schema", schema, "-n", "20", "--seed", "4", "--invalid")
	if inv.code != 0 {
		t.Fatalf("--invalid: exit %d: %s", inv.code, inv.stderr)
	}
	lines := strings.Split(strings.TrimSpace(inv.stdout), "\n")
	if len(lines) != 20 {
		t.Fatalf("--invalid: %d lines", len(lines))
	}
	for _, line := range lines {
		var nm struct {
			Pointer, Keyword, Message string
			Instance                  json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &nm); err != nil || nm.Keyword == "" || len(nm.Instance) == 0 {
			t.Fatalf("--invalid line %s: %v", line, err)
		}
		doc, err := decodeNumbers(string(nm.Instance))
		if err != nil {
			t.Fatal(err)
		}
		if v.Validate(doc) == nil {
			t.Errorf("--invalid instance validates: %s", line)
		}
	}

	for _, bad := range [][]string{
		{"--array-len", "5"}, {"--array-len", "3,1"}, {"--optional-rate", "2"}, {"--example-rate", "-1"},
		{"--today", "2026-13-01"}, {"--date-window", "-3"},
	} {
		if r := runCLI(t, "", append([]string{"--schema", schema}, bad...)...); r.code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", bad, r.code, r.stderr)
		}
	}
	g := writeFile(t, "g.gbnf", `root ::= "a"`)
	if r := runCLI(t, "", "--grammar", g, "--invalid"); r.code != 2 {
		t.Errorf("--invalid with a grammar: exit %d, want 2", r.code)
	}
}

// decodeNumbers decodes a JSON document with numbers kept as json.Number.
func decodeNumbers(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
