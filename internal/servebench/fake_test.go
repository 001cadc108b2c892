package servebench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ollama/ollama/api"
)

// testSchema is what the fake server's outputs are judged against.
const testSchema = `{"type":"object","properties":{"n":{"type":"integer","maximum":10}},"required":["n"],"additionalProperties":false}`

// fakeServer speaks the part of Ollama's API the bench uses. The seed of
// a chat request picks how it ends (seed mod 6): a valid answer, a schema
// violation, a cut by length, trailing text, a stream without its done
// chunk (Ollama's repeat guard), an HTTP 500.
type fakeServer struct {
	model string
	// gate, if set, holds every chat request until gateN are in flight.
	gateN int

	mu       sync.Mutex
	gate     chan struct{}
	inflight int
	most     int
	requests []api.ChatRequest
	created  map[string]string // model → Modelfile text (POST /api/create)
}

// fakeAnswers are the content chunks, the done reason and whether the
// final chunk comes, by seed mod 6; eval_count is the number of chunks.
var fakeAnswers = []struct {
	chunks []string
	reason string
	done   bool
	status int
}{
	{[]string{`{"n"`, `:`, `3}`}, "stop", true, 200},
	{[]string{`{"n":`, `30}`}, "stop", true, 200},
	{[]string{`{"n":`, `1`}, "length", true, 200},
	{[]string{`{"n":3}`, ` x`}, "stop", true, 200},
	{[]string{`{"n":1`}, "", false, 200},
	{nil, "", false, 500},
}

func (f *fakeServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "Ollama is running") })
	mux.HandleFunc("HEAD /{$}", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		var l api.ListResponse
		if f.model != "" {
			l.Models = append(l.Models, api.ListModelResponse{Name: f.model, Model: f.model})
		}
		for m := range f.created {
			l.Models = append(l.Models, api.ListModelResponse{Name: m, Model: m})
		}
		f.mu.Unlock()
		json.NewEncoder(w).Encode(l)
	})
	mux.HandleFunc("POST /api/chat", f.chat)
	return mux
}

func (f *fakeServer) chat(w http.ResponseWriter, r *http.Request) {
	var req api.ChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad request"}`, 400)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.inflight++
	f.most = max(f.most, f.inflight)
	if f.gateN > 0 && f.gate == nil {
		f.gate = make(chan struct{})
	}
	if f.gate != nil && f.inflight == f.gateN {
		close(f.gate)
		f.gateN = 0
	}
	gate := f.gate
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-time.After(10 * time.Second):
			http.Error(w, `{"error":"gate: too few requests in flight"}`, 500)
			return
		}
	}
	seed, _ := req.Options["seed"].(float64)
	a := fakeAnswers[int(seed)%len(fakeAnswers)]
	if a.status != 200 {
		w.WriteHeader(a.status)
		fmt.Fprint(w, `{"error":"model failed"}`)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, c := range a.chunks {
		enc.Encode(api.ChatResponse{Model: req.Model, Message: api.Message{Role: "assistant", Content: c}})
		w.(http.Flusher).Flush()
	}
	if a.done {
		enc.Encode(api.ChatResponse{Model: req.Model, Done: true, DoneReason: a.reason,
			Metrics: api.Metrics{PromptEvalCount: 7, EvalCount: len(a.chunks), EvalDuration: time.Millisecond}})
	}
}
