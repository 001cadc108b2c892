package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

// With the prompt read while the grammar compiles (WithCompileOverlap,
// the default; here for every compile, however short), every kind of
// generation samples the same tokens as with the grammar compiled first,
// the compile a cache miss each time (a new engine); a grammar every
// sentence of which is forced too.
func TestCompileOverlap(t *testing.T) {
	engine.NoCompileGrace(t)
	reqs := append(mixedRequests(),
		request{"forced", []engine.Option{engine.WithGrammar(`root ::= "{\"ok\":true}"`)}},
		request{"thinking", []engine.Option{engine.WithMessages(engine.Message{Role: "user", Content: "A pet?"}), engine.WithSchema([]byte(nameSchema)), engine.WithReasoning(true, 6), engine.WithMaxTokens(60)}},
		request{"choices", []engine.Option{engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(60)}},
		request{"tools-auto", []engine.Option{engine.WithMessages(engine.Message{Role: "user", Content: "Weather?"}), engine.WithTools(weatherTools, engine.ToolChoice{})}},
		request{"tools-required", []engine.Option{engine.WithMessages(engine.Message{Role: "user", Content: "Weather?"}), engine.WithTools(weatherTools, engine.ToolChoice{Mode: engine.ToolRequired})}},
	)
	type outcome struct {
		text string
		stop engine.StopReason
		toks []int32
	}
	gen := func(t *testing.T, req request, seed uint32, overlap bool) outcome {
		f := newFakeModel()
		prompt := "x"
		switch {
		case req.name == "thinking":
			f.tmpl, prompt = thinkTemplate, ""
		case strings.HasPrefix(req.name, "tools"):
			f.tmpl, prompt = "<|im_start|> {% if tools %}<tool_call>{% endif %}", ""
			f.script = []byte("Sure<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
		}
		e := newEngine(t, f)
		opts := append(slices.Clone(req.opts), engine.WithSeed(seed), engine.WithCompileOverlap(overlap))
		var o outcome
		var res *engine.Result
		o.text, o.stop, o.toks, res = runRequest(t, e, req, prompt, opts)
		if req.name == "thinking" && res.Reasoning == "" {
			t.Errorf("no reasoning in %q", res.Text)
		}
		if strings.HasPrefix(req.name, "tools") {
			if len(res.ToolCalls) == 0 {
				t.Errorf("no tool call in %q", res.Text)
			}
			for _, c := range res.ToolCalls {
				o.text += "|" + c.Name + c.Arguments
			}
		}
		waitIdle(t, e)
		if st := e.CacheStats(); st.Misses != 1 && req.name != "free" {
			t.Errorf("%d compiles, want 1", st.Misses)
		}
		return o
	}
	for _, req := range reqs {
		t.Run(req.name, func(t *testing.T) {
			for seed := range uint32(4) {
				on, off := gen(t, req, seed, true), gen(t, req, seed, false)
				if on.text != off.text || on.stop != off.stop || !slices.Equal(on.toks, off.toks) {
					t.Fatalf("seed %d: overlapped %q (%s), not %q (%s)", seed, on.text, on.stop, off.text, off.stop)
				}
			}
		})
	}
}

// The model reads the prompt, all but its last token, while the grammar
// compiles; the generation is sampled once the grammar is ready and gives
// what it gives without the overlap.
func TestCompileOverlapReadsPrompt(t *testing.T) {
	prompt := strings.Repeat("the cat sat ", 6)
	opts := []engine.Option{engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(60), engine.WithSeed(5)}
	want := generate(t, newEngine(t, newFakeModel(), engine.WithBatchTokens(8)), prompt, append(opts, engine.WithCompileOverlap(false))...)
	release := engine.HoldCompile(t)
	defer release()
	readsPromptWhileHeld(t, "compile", release, want, prompt, opts...)
}

// A schema that does not compile fails the generation with the
// converter's error, overlapped or not, also when the model has read its
// prompt meanwhile; the sequence is freed, and the engine goes on.
func TestCompileOverlapError(t *testing.T) {
	bad := []byte(`{"type": "object", "properties": {"a": {"type": "strin"}}}`)
	check := func(t *testing.T, err error) {
		t.Helper()
		var ie *jsonschema2gbnf.InvalidSchemaError
		if !errors.As(err, &ie) {
			t.Fatalf("error %v (%T), want an InvalidSchemaError", err, err)
		}
	}
	f := newFakeModel()
	e := newEngine(t, f)
	prompt := strings.Repeat("the cat sat ", 4)
	for _, overlap := range []bool{false, true} {
		_, err := e.Generate(context.Background(), prompt, engine.WithSchema(bad), engine.WithCompileOverlap(overlap))
		check(t, err)
	}
	// Held until the prompt is read: the run has its sequence when the
	// compile fails.
	release := engine.HoldCompile(t)
	errc := make(chan error, 1)
	go func() {
		_, err := e.Generate(context.Background(), prompt+"!", engine.WithSchema(bad))
		errc <- err
	}()
	waitAdmitted(t, e, 1)
	release()
	check(t, <-errc)
	waitIdle(t, e)
	if st := e.SchedulerStats(); st.Cells != 0 {
		t.Errorf("%d cells still held", st.Cells)
	}
	generate(t, e, prompt, engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(60))
}

// A generation cancelled while its grammar compiles ends with the
// context's error and frees its sequence; the compile, wanted by nobody
// else, stops.
func TestCompileOverlapCancel(t *testing.T) {
	release := engine.HoldCompile(t)
	defer release()
	f := newFakeModel()
	e := newEngine(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := e.Generate(ctx, "a prompt to read", engine.WithSchema([]byte(personSchema)))
		errc <- err
	}()
	waitAdmitted(t, e, 1)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled generation did not end while its compile was held")
	}
	waitIdle(t, e)
	if st := e.SchedulerStats(); st.Cells != 0 {
		t.Errorf("%d cells still held", st.Cells)
	}
}

// While one generation waits for its grammar to compile, others are
// admitted and generate: the scheduler does not wait for the compile
// alone. The grammar, once compiled, starts while another sequence
// decodes (on a worker, during that decode).
func TestCompileOverlapDoesNotHoldOthers(t *testing.T) {
	release := engine.HoldCompile(t)
	defer release()
	f := newFakeModel()
	f.noEOS = true
	// One decode per millisecond at most: the long generation below
	// (ended by its context) outlasts the rest of the test.
	f.gate = make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				select {
				case f.gate <- struct{}{}:
				case <-stop:
					return
				}
			}
		}
	}()
	e := newEngine(t, f)
	errc := make(chan error, 1)
	go func() {
		_, err := e.Generate(context.Background(), "the held one", engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(40))
		errc <- err
	}()
	waitAdmitted(t, e, 1)
	longCtx, cancelLong := context.WithCancel(context.Background())
	defer cancelLong()
	long := make(chan error, 1)
	go func() {
		_, err := e.Generate(longCtx, "a long one")
		long <- err
	}()
	waitAdmitted(t, e, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		generate(t, e, "another one", engine.WithMaxTokens(8))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a generation without a grammar waited for another's compile")
	}
	select {
	case err := <-errc:
		t.Fatalf("the held generation ended (%v) before its compile", err)
	default:
	}
	select {
	case <-long:
		t.Fatal("the long generation ended before the compile was released")
	default:
	}
	release()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-long:
		t.Fatalf("the long generation ended (%v) before it was cancelled", err)
	default:
	}
	cancelLong()
	if err := <-long; !errors.Is(err, context.Canceled) {
		t.Errorf("the long generation ended with %v, want context.Canceled", err)
	}
}

// waitAdmitted waits until n sequences run (a generation held by its
// compile is admitted meanwhile).
func waitAdmitted(t *testing.T, e *engine.Engine, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); e.SchedulerStats().Active < n; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("the generation was not admitted while its schema compiled")
		}
	}
}
