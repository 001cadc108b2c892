//go:build unix

package servebench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ollama/ollama/api"
)

// fakeEnv makes the test binary play a server executable: "ollama"
// (serve, create) or "structgen" (serve), or "exit" (fails at once).
const fakeEnv = "SERVEBENCH_FAKE"

func TestMain(m *testing.M) {
	if role := os.Getenv(fakeEnv); role != "" {
		os.Exit(fakeMain(role, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeMain(role string, args []string) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "fake:", err); return 1 }
	switch {
	case role == "ollama" && len(args) == 1 && args[0] == "serve":
		f := &fakeServer{created: map[string]string{}}
		mux := http.NewServeMux()
		mux.Handle("/", f.handler())
		// ollama create sends the Modelfile's parameters; the fake takes
		// the file itself (and its environment) to show what it was given.
		mux.HandleFunc("POST /fake/create", func(w http.ResponseWriter, r *http.Request) {
			var req struct{ Model, Modelfile string }
			json.NewDecoder(r.Body).Decode(&req)
			f.mu.Lock()
			f.created[req.Model] = req.Modelfile + "OLLAMA_NUM_PARALLEL=" + os.Getenv("OLLAMA_NUM_PARALLEL") + "\nHOME=" + os.Getenv("HOME") + "\n"
			f.mu.Unlock()
		})
		mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
			var req api.ShowRequest
			json.NewDecoder(r.Body).Decode(&req)
			f.mu.Lock()
			mf := f.created[req.Model]
			f.mu.Unlock()
			json.NewEncoder(w).Encode(api.ShowResponse{Modelfile: mf})
		})
		return serve(os.Getenv("OLLAMA_HOST"), mux)
	case role == "ollama" && len(args) == 4 && args[0] == "create" && args[2] == "-f":
		mf, err := os.ReadFile(args[3])
		if err != nil {
			return fail(err)
		}
		body, _ := json.Marshal(map[string]string{"Model": args[1], "Modelfile": string(mf)})
		resp, err := http.Post("http://"+os.Getenv("OLLAMA_HOST")+"/fake/create", "application/json", strings.NewReader(string(body)))
		if err != nil {
			return fail(err)
		}
		resp.Body.Close()
		return 0
	case role == "structgen" && len(args) > 0 && args[0] == "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		addr := fs.String("addr", "", "")
		model := fs.String("model", "", "")
		fs.Int("parallel", 0, "")
		fs.Int("ctx", 0, "")
		fs.Int("max-queue", 0, "")
		fs.Int("threads", 0, "")
		if err := fs.Parse(args[1:]); err != nil {
			return fail(err)
		}
		f := &fakeServer{model: filepath.Base(*model)}
		mux := http.NewServeMux()
		mux.Handle("/", f.handler())
		var polls atomic.Int32
		mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
			if polls.Add(1) < 3 { // loading
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})
		return serve(*addr, mux)
	}
	return fail(fmt.Errorf("role %s: unexpected arguments %q", role, args))
}

// serve serves until SIGTERM.
func serve(addr string, h http.Handler) int {
	srv := &http.Server{Addr: addr, Handler: h}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		srv.Close()
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 1
	}
	return 0
}

func setFake(t *testing.T, role string) string {
	t.Setenv(fakeEnv, role)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestStartOllama: ollama serve in a scratch folder on a free port with
// the parallelism asked, the GGUF imported with a Modelfile; requests
// reach it; Stop ends it and removes the folder.
func TestStartOllama(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "127.0.0.1:1") // a user's setting must not leak in
	exe := setFake(t, "ollama")
	ctx := context.Background()
	p, err := StartOllama(ctx, OllamaOptions{Binary: exe, GGUF: "/models/m.gguf", Model: "bench", Parallel: 4, NumCtx: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	show, err := p.Client.Show(ctx, &api.ShowRequest{Model: "bench"})
	if err != nil {
		p.Stop()
		t.Fatal(err)
	}
	want := "FROM /models/m.gguf\nPARAMETER num_ctx 64\nPARAMETER num_thread 1\nOLLAMA_NUM_PARALLEL=4\nHOME=" + p.Dir + "\n"
	if show.Modelfile != want {
		t.Errorf("the server was given\n%s\nwant\n%s", show.Modelfile, want)
	}
	if m, err := FirstModel(ctx, p.Client); err != nil || m != "bench" {
		t.Errorf("model %q, %v", m, err)
	}
	if s := One(ctx, p.Client, Config{Model: "bench", Schema: json.RawMessage(testSchema)}, validator(t), 0); s.Outcome != Valid {
		t.Errorf("request: %+v", s)
	}
	stop(t, p)
}

// TestStartStructgen: structgen serve with its flags, ready once /health
// answers 200.
func TestStartStructgen(t *testing.T) {
	exe := setFake(t, "structgen")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, exe) // relative to here, not to the server's folder
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := StartStructgen(ctx, StructgenOptions{Binary: rel, GGUF: "/models/m.gguf", Parallel: 2, Ctx: 128, MaxQueue: 4, Args: []string{"--threads", "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := FirstModel(ctx, p.Client); err != nil || m != "m.gguf" {
		t.Errorf("model %q, %v", m, err)
	}
	if _, err := p.CPUTime(); err != nil {
		t.Error(err)
	}
	stop(t, p)
}

// TestStartFails: a server that exits while starting is an error with
// its output, and leaves no folder behind.
func TestStartFails(t *testing.T) {
	exe := setFake(t, "exit")
	_, err := StartStructgen(context.Background(), StructgenOptions{Binary: exe, GGUF: "m.gguf", Parallel: 1, Ctx: 64, MaxQueue: 1})
	if err == nil || !strings.Contains(err.Error(), "exited while starting") || !strings.Contains(err.Error(), "fake: role exit: unexpected arguments") {
		t.Fatalf("got %v", err)
	}
}

func TestParseStat(t *testing.T) {
	const line = "4242 (ollama (runner)) S 1 4200 4200 0 -1 4194560 1516 0 0 0 250 31 7 2 20 0 9 0 123 1 2 3"
	g, cpu, err := parseStat(line)
	if err != nil || g != 4200 || cpu != (250+31+7+2)*clockTick {
		t.Errorf("got %d, %v, %v", g, cpu, err)
	}
	if _, _, err := parseStat("4242 (x) S 1 4200"); err == nil {
		t.Error("no error for a short line")
	}
}

func stop(t *testing.T, p *Proc) {
	t.Helper()
	if err := p.Stop(); err != nil {
		t.Error(err)
	}
	select {
	case <-p.exited:
	default:
		t.Error("the server still runs after Stop")
	}
	if _, err := os.Stat(p.Dir); !os.IsNotExist(err) {
		t.Errorf("%s left behind (%v)", p.Dir, err)
	}
}
