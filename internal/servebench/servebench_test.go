package servebench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

func newClient(t *testing.T, f *fakeServer) *api.Client {
	t.Helper()
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(u, srv.Client())
}

func validator(t *testing.T) *Validator {
	t.Helper()
	v, err := NewValidator([]byte(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRun: c requests in flight at once, each seed sent once, each
// outcome classified, tokens from eval_count or counted.
func TestRun(t *testing.T) {
	const c, n = 3, 12
	f := &fakeServer{model: "m", gateN: c}
	cfg := Config{Model: "m", Prompt: "p", Schema: json.RawMessage(testSchema), Seed: 0,
		Options: map[string]any{"temperature": 0.5, "num_predict": 9}}
	res, err := Run(context.Background(), newClient(t, f), cfg, validator(t), c, n)
	if err != nil {
		t.Fatal(err)
	}
	if f.most != c {
		t.Errorf("%d requests in flight at most, want %d", f.most, c)
	}
	var seeds []int
	for _, r := range f.requests {
		seeds = append(seeds, int(r.Options["seed"].(float64)))
		if r.Model != "m" || len(r.Messages) != 1 || r.Messages[0].Content != "p" || r.Stream == nil || !*r.Stream ||
			!bytes.Equal(r.Format, []byte(testSchema)) || r.Options["temperature"] != 0.5 || r.Options["num_predict"] != 9.0 {
			t.Errorf("request %+v", r)
		}
	}
	slices.Sort(seeds)
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; !slices.Equal(seeds, want) {
		t.Errorf("seeds %v, want %v", seeds, want)
	}
	if cfg.Options["seed"] != nil {
		t.Error("Run changed the caller's options")
	}
	want := []struct {
		outcome Outcome
		tokens  int
		counted bool
		output  string
	}{
		{Valid, 3, false, `{"n":3}`},
		{Invalid, 2, false, `{"n":30}`},
		{Truncated, 2, false, `{"n":1`},
		{NotJSON, 2, false, `{"n":3} x`},
		{Unfinished, 1, true, `{"n":1`},
		{Failed, 0, true, ""},
	}
	if len(res.Samples) != n {
		t.Fatalf("%d samples", len(res.Samples))
	}
	total := 0
	for i, s := range res.Samples {
		w := want[i%len(want)]
		if s.Seed != i || s.Outcome != w.outcome || s.Tokens != w.tokens || s.Counted != w.counted || s.Output != w.output {
			t.Errorf("sample %d: %+v, want %+v", i, s, w)
		}
		if (s.Outcome == Valid) != (s.Detail == "") {
			t.Errorf("sample %d: outcome %v with detail %q", i, s.Outcome, s.Detail)
		}
		total += w.tokens
	}
	if res.Tokens() != total || res.Concurrency != c || res.Wall <= 0 {
		t.Errorf("result: %d tokens (want %d), concurrency %d, wall %v", res.Tokens(), total, res.Concurrency, res.Wall)
	}
	if d := res.Samples[5].Detail; !strings.Contains(d, "model failed") {
		t.Errorf("HTTP 500 detail %q", d)
	}
	if d := res.Samples[1].Detail; !strings.Contains(d, "maximum") {
		t.Errorf("schema violation detail %q", d)
	}
}

// TestTimes: time to first token and the gaps between chunks with
// content, on a clock that advances 10 ms each time it is read.
func TestTimes(t *testing.T) {
	var mu sync.Mutex
	clock := time.Unix(0, 0)
	now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(10 * time.Millisecond)
		return clock
	}
	t.Cleanup(func() { now = time.Now })
	f := &fakeServer{model: "m"}
	cfg := Config{Model: "m", Schema: json.RawMessage(testSchema)}
	res, err := Run(context.Background(), newClient(t, f), cfg, validator(t), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Samples[0]
	// Reads: run start, request start, 3 chunks with content, the done
	// chunk, run end.
	if s.TTFT != 10*time.Millisecond || !slices.Equal(s.Gaps, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}) || res.Wall != 60*time.Millisecond {
		t.Errorf("TTFT %v, gaps %v, wall %v", s.TTFT, s.Gaps, res.Wall)
	}
	if got := res.TokensPerSecond(); got != 50 {
		t.Errorf("%v tok/s, want 3 tokens / 60 ms = 50", got)
	}
}

func TestCheck(t *testing.T) {
	v := validator(t)
	for _, tc := range []struct {
		out  string
		want Outcome
	}{
		{`{"n":3}`, Valid},
		{" {\"n\": 3}\n\t", Valid},
		{`{"n":3.0}`, Valid}, // JSON Schema: 3.0 is an integer
		{`{"n":3.5}`, Invalid},
		{`{"n":3,"m":1}`, Invalid},
		{`{}`, Invalid},
		{`{"n":3}{"n":3}`, NotJSON},
		{`{"n":3`, NotJSON},
		{``, NotJSON},
		{`{"n":100000000000000000000000000001}`, Invalid},
	} {
		if got, why := v.Check(tc.out); got != tc.want {
			t.Errorf("Check(%q) = %v (%s), want %v", tc.out, got, why, tc.want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	run := func(tokS float64, outcomes ...Outcome) Result {
		r := Result{Concurrency: 4, Wall: time.Second, CPU: time.Duration(tokS) * time.Millisecond}
		for i, o := range outcomes {
			r.Samples = append(r.Samples, Sample{Outcome: o, Tokens: int(tokS) / len(outcomes), TTFT: time.Duration(i+1) * time.Millisecond, Gaps: []time.Duration{2 * time.Millisecond}})
		}
		return r
	}
	sums := []Summary{
		{Server: "a", Model: "m", Concurrency: 4, Runs: []Result{run(300, Valid, Valid), run(100, Valid, Valid), run(200, Valid, Valid)}},
		{Server: "peer", Model: "m", Concurrency: 4, Runs: []Result{run(50, Valid, Truncated), run(60, Unfinished, Unfinished)}},
	}
	sums[1].Runs[0].CPU *= 4 // 4 ms per token, and 1 ms in the other run: median 4
	sums[0].Runs[2].CPU = 0  // not measured: left out
	var b strings.Builder
	WriteTable(&b, sums, "peer")
	out := b.String()
	for _, want := range []string{
		"| a | m | 4 | 100.0 / 200.0 / 300.0 | 3.33× | 1.00 / 1.00 / 1.00 | 4.00× | 1.00 / 2.00 | 2.00 / 2.00 | 100 | 6/6 |  |",
		"| peer | m | 4 | 50.0 / 60.0 / 60.0 | – | 1.00 / 4.00 / 4.00 | – |",
		"| 1/4 | 1 cut by length, 2 unfinished stream |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WriteSamples(&b, sums[1:]); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines != 4 || !strings.Contains(b.String(), `"outcome":"unfinished stream"`) {
		t.Errorf("samples:\n%s", b.String())
	}
}

// TestFirstModel: the name the server lists, or an error.
func TestFirstModel(t *testing.T) {
	if m, err := FirstModel(context.Background(), newClient(t, &fakeServer{model: "x.gguf"})); err != nil || m != "x.gguf" {
		t.Errorf("got %q, %v", m, err)
	}
	if _, err := FirstModel(context.Background(), newClient(t, &fakeServer{})); err == nil {
		t.Error("no error for a server without models")
	}
}

func TestFreshSchema(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"type":"object"}`, `{"$comment":"servebench schema 7","type":"object"}`},
		{" {\n  \"type\": \"string\"\n}\n", `{"$comment":"servebench schema 7","type":"string"}`},
		{`{}`, `{"$comment":"servebench schema 7"}`},
		{`{"$comment":"mine","type":"null"}`, `{"$comment":"servebench schema 7","type":"null"}`},
		{`true`, `true`},
		{`null`, `null`},
		{``, ``},
	} {
		got := string(freshSchema(json.RawMessage(tc.in), 7))
		if got != tc.want {
			t.Errorf("freshSchema(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if tc.in != "" && !json.Valid([]byte(got)) {
			t.Errorf("freshSchema(%q) = %q: not JSON", tc.in, got)
		}
	}
}

// TestRunFresh: with Fresh every request's format is the schema with a
// comment of its own, and the outputs are still checked against it.
func TestRunFresh(t *testing.T) {
	f := &fakeServer{model: "m"}
	cfg := Config{Model: "m", Prompt: "p", Schema: json.RawMessage(testSchema), Fresh: true}
	res, err := Run(context.Background(), newClient(t, f), cfg, validator(t), 2, 6)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range f.requests {
		var doc map[string]any
		if err := json.Unmarshal(r.Format, &doc); err != nil || !strings.HasPrefix(fmt.Sprint(doc["$comment"]), "servebench schema ") {
			t.Errorf("format %s: %v", r.Format, err)
		}
		seen[string(r.Format)] = true
	}
	if len(seen) != 6 || len(res.Samples) != 6 {
		t.Errorf("%d distinct formats over %d requests, %d samples", len(seen), len(f.requests), len(res.Samples))
	}
}
