//go:build llamacpp

package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

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

// serve: /health is 503 until the model is loaded, then the APIs answer;
// SIGTERM drains and exits 0.
func TestServe(t *testing.T) {
	model := sharedtest.Path(t, "corpus", "models", "stories260K.gguf")
	cmd := exec.Command(binary, "serve", "--model", model, "--addr", "127.0.0.1:0", "--threads", "1", "--parallel", "2", "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var addr string
	var log []string
	for addr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("serve exited: %s", strings.Join(log, "\n"))
			}
			log = append(log, l)
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "listening" {
				addr = rec.Addr
			}
		case <-time.After(time.Minute):
			t.Fatalf("no listening line: %s", strings.Join(log, "\n"))
		}
	}
	// /health is 503 until the model is loaded and the heap touched
	// (--pretouch's default, with MADV_FREE unless the test's GODEBUG
	// decides): the "heap pretouched" line comes before "ready".
	wantPretouch := runtime.GOOS == "linux" && !strings.Contains(os.Getenv("GODEBUG"), "madvdontneed")
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
			if resp.StatusCode != 503 {
				t.Fatalf("/health: %d", resp.StatusCode)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for pretouched, ready := false, false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("serve exited: %s", strings.Join(log, "\n"))
			}
			log = append(log, l)
			pretouched = pretouched || strings.Contains(l, `"msg":"heap pretouched"`)
			if ready = strings.Contains(l, `"msg":"ready"`); ready && (wantPretouch != pretouched || !strings.Contains(l, `"heap_wait_ms":`)) {
				t.Errorf("ready before the heap was pretouched (want it first: %v):\n%s", wantPretouch, strings.Join(log, "\n"))
			}
		case <-time.After(time.Minute):
			t.Fatalf("no ready line: %s", strings.Join(log, "\n"))
		}
	}
	resp, err := http.Post(addr+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"stories260K","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":60,"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":`+personSchema+`}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(res.Choices) != 1 || res.Model != "stories260K" {
		t.Fatalf("chat: %d %+v %v", resp.StatusCode, res, err)
	}
	v, err := jsonschema2gbnf.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	mustValidate(t, v, res.Choices[0].Message.Content)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		log = append(log, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v\n%s", err, strings.Join(log, "\n"))
	}
	// (and the collector's floor set first, --gc-floor's default)
	if all := strings.Join(log, "\n"); !strings.Contains(all, `"msg":"draining"`) || !strings.Contains(all, `"msg":"request"`) || !strings.Contains(all, `"gc_floor":268435456`) {
		t.Errorf("log:\n%s", all)
	}
}
