//go:build llamacpp

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

// The README's steps for using the model path from another module, done
// in a scratch module that requires structgen through a replace: go tool
// structgen setup, go build -tags llamacpp of the README's program, run on
// stories260K. Offline (GOPROXY=off): every module must come from the
// module cache that building this repository filled. So the scratch
// go.mod is written as `go get -tool` writes it, with this repository's
// requirements listed (go get and go mod tidy would load go.mod files of
// modules no build here needs, which a fresh machine does not have). The
// build must reuse the llama.cpp build of this test run: the setup's
// flags have to select the cached build, or CI would compile llama.cpp a
// second time.
func TestScratchModule(t *testing.T) {
	if testing.Short() {
		t.Skip("short: builds a scratch module")
	}
	model := sharedtest.Path(t, "corpus", "models", "stories260K.gguf")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	program := readmeProgram(t, readme)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gomod := "module example.com/scratch\n\ngo 1.26.8\n\nrequire github.com/structgen/structgen v0.0.0\n\nrequire (\n"
	for _, r := range repoRequires(t, root) {
		gomod += "\t" + r + " // indirect\n"
	}
	gomod += ")\n\nreplace github.com/structgen/structgen => " + root + "\n\ntool github.com/structgen/structgen/cmd/structgen\n"
	write("go.mod", gomod)
	write("go.sum", string(sum)) // the scratch module needs a subset of it
	write("main.go", program)
	env := append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off", "GOSUMDB=off", "GOTOOLCHAIN=local")
	run := func(env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}
	flags := run(env, "go", "tool", "structgen", "setup")
	if outer := os.Getenv("CGO_CPPFLAGS"); outer != "" && outer != flags {
		t.Fatalf("go tool structgen setup printed %q, but this test run was built with CGO_CPPFLAGS=%q (run it through make test)", flags, outer)
	}
	env = append(env, "CGO_CPPFLAGS="+flags)
	for _, pkg := range []string{"github.com/ollama/ollama/llama", "github.com/ollama/ollama/ml/backend/ggml/ggml/src"} {
		if st := run(env, "go", "list", "-tags", "llamacpp", "-f", "{{.Stale}} {{.StaleReason}}", pkg); st != "false" {
			t.Fatalf("%s would be rebuilt in the scratch module (%s): the setup's flags must select the llama.cpp build this test run cached", pkg, st)
		}
	}
	run(env, "go", "build", "-tags", "llamacpp", "-o", "scratch", ".")
	out := run(env, filepath.Join(dir, "scratch"), model)

	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":20},"kind":{"enum":["cat","dog"]},"age":{"type":"integer","minimum":0,"maximum":255}},"required":["name","kind","age"],"additionalProperties":false}`
	v, err := jsonschema2gbnf.CompileSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	mustValidate(t, v, out)
	var pet map[string]any
	if err := json.Unmarshal([]byte(out), &pet); err != nil || len(pet) != 3 {
		t.Fatalf("output %q: %v", out, err)
	}
}

// repoRequires returns this repository's requirements ("path version").
func repoRequires(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	var reqs []string
	for _, r := range m.Require {
		reqs = append(reqs, r.Path+" "+r.Version)
	}
	return reqs
}

// readmeProgram returns the Go block after the README's scratch-module
// marker.
func readmeProgram(t *testing.T, readme []byte) string {
	t.Helper()
	const marker = "<!-- scratch-module program -->\n```go\n"
	_, rest, ok := strings.Cut(string(readme), marker)
	if !ok {
		t.Fatalf("README.md has no %q", marker)
	}
	prog, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("README.md: the scratch-module program's block does not end")
	}
	return prog
}
