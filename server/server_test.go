package server

// Pure-Go tests of the server (no llama.cpp): a tiny byte-level model in
// Go, a recovered panic, a model failure, lenient schemas. The tests
// through the official clients on real models are in llama_test.go (build
// tag llamacpp).

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/structgen/structgen/engine"
)

// byteModel is an engine.Model over the 256 byte values plus an
// end-of-generation token, with flat logits (every token as likely) and a
// cache of ctx cells; Decode fails once fail is set.
type byteModel struct {
	ctx, nseq int
	npos      []int
	rows      [][]float32
	fail      atomic.Bool
}

const byteEOS = 256

func newByteModel() *byteModel { return &byteModel{ctx: 1024, nseq: 2, npos: make([]int, 2)} }

func (m *byteModel) VocabSize() int { return 257 }
func (m *byteModel) TokenBytes(tok int32) []byte {
	switch {
	case tok >= 0 && tok < 256:
		return []byte{byte(tok)}
	case tok == byteEOS:
		return []byte("</s>")
	}
	return nil
}
func (m *byteModel) TokenIsSpecial(tok int32) bool { return tok == byteEOS }
func (m *byteModel) EOG() []int32                  { return []int32{byteEOS} }
func (m *byteModel) IsEOG(tok int32) bool          { return tok == byteEOS }
func (m *byteModel) BOS() (int32, bool)            { return 0, false }
func (m *byteModel) Tokenize(text []byte, _, _ bool) ([]int32, error) {
	out := make([]int32, len(text))
	for i, b := range text {
		out[i] = int32(b)
	}
	return out, nil
}
func (m *byteModel) ChatTemplate() string { return "" }
func (m *byteModel) ContextSize() int     { return m.ctx }
func (m *byteModel) Sequences() int       { return m.nseq }
func (m *byteModel) BatchSize() int       { return 512 }
func (m *byteModel) Decode(b *engine.Batch) error {
	if m.fail.Load() {
		return errors.New("byte model: the device is gone")
	}
	m.rows = m.rows[:0]
	for i := range b.Len() {
		m.npos[b.Seq[i]]++
		var row []float32
		if b.Logits[i] {
			row = make([]float32, 257)
		}
		m.rows = append(m.rows, row)
	}
	return nil
}
func (m *byteModel) Logits(i int) []float32 { return m.rows[i] }
func (m *byteModel) Remove(seq, pos int) error {
	m.npos[seq] = pos
	return nil
}
func (m *byteModel) Copy(src, dst, n int) error { return engine.ErrUnsupported }
func (m *byteModel) Close() error               { return nil }

func newTestServer(t *testing.T, m engine.Model) (*Server, *httptest.Server, *strings.Builder) {
	t.Helper()
	var logs strings.Builder
	s, err := New(Config{ModelName: "bytes", Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if m != nil {
		e, err := engine.New(m)
		if err != nil {
			t.Fatal(err)
		}
		s.SetEngine(e)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs, &logs
}

func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// A panic in a request is recovered, logged and answered with 500; the
// server goes on serving.
func TestPanicRecovered(t *testing.T) {
	s, hs, logs := newTestServer(t, newByteModel())
	s.mux.Handle("GET /panic", s.wrap("GET /panic", func(http.ResponseWriter, *http.Request, *reqInfo) error {
		var m map[string]int
		m["boom"]++ // a nil map: a real runtime panic
		return nil
	}, shapeOpenAI, false))
	resp, err := http.Get(hs.URL + "/panic")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Error struct{ Message, Type, Code string } `json:"error"`
	}
	if resp.StatusCode != 500 || json.Unmarshal(b, &e) != nil || e.Error.Code != "internal_error" {
		t.Errorf("panic: %d %s", resp.StatusCode, b)
	}
	if !strings.Contains(logs.String(), "assignment to entry in nil map") {
		t.Errorf("the panic is not in the log: %s", logs.String())
	}
	if status, b := post(t, hs.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":3}`); status != 200 {
		t.Errorf("after the panic: %d %s", status, b)
	}
}

// A model that fails is a 500 with the error object, on both APIs.
func TestModelFailure(t *testing.T) {
	m := newByteModel()
	_, hs, _ := newTestServer(t, m)
	m.fail.Store(true)
	status, b := post(t, hs.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":3}`)
	if status != 500 || !strings.Contains(string(b), `"model_error"`) || !strings.Contains(string(b), "the device is gone") {
		t.Errorf("openai: %d %s", status, b)
	}
	status, b = post(t, hs.URL+"/api/generate", `{"prompt":"x","raw":true,"stream":false}`)
	if status != 500 || !strings.Contains(string(b), `{"error":"model failure`) {
		t.Errorf("ollama: %d %s", status, b)
	}
	m.fail.Store(false)
	if status, b := post(t, hs.URL+"/v1/completions", `{"prompt":"x","max_tokens":3}`); status != 200 {
		t.Errorf("after the failure: %d %s", status, b)
	}
}

// lenient relaxes what a grammar cannot enforce, with warnings in the
// response; without it the same schema is a 400 naming keyword and pointer.
func TestLenient(t *testing.T) {
	_, hs, _ := newTestServer(t, newByteModel())
	schema := `{"type":"object","properties":{"e":{"type":"string","format":"idn-email","maxLength":8}},"required":["e"],"additionalProperties":false}`
	body := `{"messages":[{"role":"user","content":"x"}],"max_tokens":40,"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":` + schema + `}}`
	status, b := post(t, hs.URL+"/v1/chat/completions", body+`}`)
	if status != 400 || !strings.Contains(string(b), "#/properties/e") || !strings.Contains(string(b), "idn-email") {
		t.Errorf("strict: %d %s", status, b)
	}
	status, b = post(t, hs.URL+"/v1/chat/completions", body+`,"lenient":true,"seed":1}`)
	var res struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Warnings []string `json:"structgen_warnings"`
	}
	if status != 200 || json.Unmarshal(b, &res) != nil || len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "idn-email") {
		t.Fatalf("lenient: %d %s", status, b)
	}
	var doc map[string]string
	if err := json.Unmarshal([]byte(res.Choices[0].Message.Content), &doc); err != nil || len([]rune(doc["e"])) > 8 {
		t.Errorf("lenient output %q: %v", res.Choices[0].Message.Content, err)
	}
}

// While the model loads, /health and the APIs answer 503; then 200.
func TestHealth(t *testing.T) {
	s, hs, _ := newTestServer(t, nil)
	for _, path := range []string{"/health", "/v1/models"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Errorf("loading: %s %d", path, resp.StatusCode)
		}
	}
	e, err := engine.New(newByteModel())
	if err != nil {
		t.Fatal(err)
	}
	s.SetEngine(e)
	resp, err := http.Get(hs.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("loaded: %d", resp.StatusCode)
	}
	s.Drain()
	resp, err = http.Get(hs.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("draining: %d", resp.StatusCode)
	}
}
