//go:build llamacpp

package server_test

// The server on 127.0.0.1 (a free port) over llama.cpp, called through the
// official clients (github.com/openai/openai-go/v3 and
// github.com/ollama/ollama/api): the trained stories260K model and a
// random-weight model with the real Llama-3 vocabulary (128,256 tokens),
// written by the tests.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/engine/llamacpp"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/internal/testmodel"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/server"
)

// syncBuffer is a log sink shared by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testServer is a server on a real listener with its model.
type testServer struct {
	url  string
	srv  *server.Server
	eng  *engine.Engine
	logs *syncBuffer
	stop func() error // drains and waits for Serve
}

type serverOpts struct {
	seqs, ctx int
	cfg       server.Config
	engine    []engine.Option
	drain     time.Duration
}

// waitIdle waits until no sequence of the engine is active: a finished
// request's sequence leaves at the scheduler's next step, which may come
// after its answer was sent.
func (ts *testServer) waitIdle(tb testing.TB) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); ts.eng.SchedulerStats().Active != 0; {
		if time.Now().After(deadline) {
			tb.Fatal("a sequence is still active 30 s after its answer")
		}
		time.Sleep(time.Millisecond)
	}
}

func startServer(tb testing.TB, modelPath string, so serverOpts) *testServer {
	tb.Helper()
	if so.seqs == 0 {
		so.seqs = 4
	}
	if so.ctx == 0 {
		so.ctx = 2048
	}
	// One thread: on a loaded machine, llama.cpp's threads wait for each
	// other (the test machine has two cores shared by many jobs).
	m, err := llamacpp.Load(modelPath, llamacpp.Options{ContextSize: so.ctx, Sequences: so.seqs, Threads: 1})
	if err != nil {
		tb.Fatal(err)
	}
	ts := &testServer{logs: &syncBuffer{}}
	if so.cfg.Logger == nil {
		so.cfg.Logger = slog.New(slog.NewJSONHandler(ts.logs, nil))
	}
	if so.cfg.ModelName == "" {
		so.cfg.ModelName = strings.TrimSuffix(filepath.Base(modelPath), ".gguf")
	}
	if ts.srv, err = server.New(so.cfg); err != nil {
		tb.Fatal(err)
	}
	if ts.eng, err = engine.New(m, so.engine...); err != nil {
		tb.Fatal(err)
	}
	ts.srv.SetEngine(ts.eng)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ts.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.srv.Serve(ctx, ln, so.drain) }()
	var once sync.Once
	var serveErr error
	ts.stop = func() error {
		once.Do(func() {
			cancel()
			serveErr = <-done
			m.Close()
		})
		return serveErr
	}
	tb.Cleanup(func() { ts.stop() })
	return ts
}

func (ts *testServer) openai() openai.Client {
	return openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

func (ts *testServer) ollama(tb testing.TB) *ollama.Client {
	u, err := url.Parse(ts.url)
	if err != nil {
		tb.Fatal(err)
	}
	return ollama.NewClient(u, http.DefaultClient)
}

func storiesPath(tb testing.TB) string {
	return sharedtest.Path(tb, "corpus", "models", "stories260K.gguf")
}

var llama3 struct {
	once sync.Once
	dir  string
	err  error
}

// llama3Model writes, once per test binary, random-weight Llama models with
// the real Llama-3 vocabulary: one with Meta's chat template, one with a
// ChatML template that has a thinking block (as Qwen 3's does).
func llama3Model(tb testing.TB, thinking bool) string {
	tb.Helper()
	vdir := sharedtest.Path(tb, "corpus", "vocab", "hf", "llama3.2")
	llama3.once.Do(func() {
		if llama3.dir, llama3.err = os.MkdirTemp("", "server-llama3"); llama3.err != nil {
			return
		}
		for _, tmpl := range []string{testmodel.Llama3ChatTemplate, thinkTemplate} {
			v, err := testmodel.Llama3Vocab(vdir)
			if err != nil {
				llama3.err = err
				return
			}
			v.ChatTemplate = tmpl
			name := "llama3-random.gguf"
			if tmpl == thinkTemplate {
				name = "llama3-think.gguf"
			}
			if llama3.err = testmodel.WriteLlama(filepath.Join(llama3.dir, name), testmodel.SmallLlama(v)); llama3.err != nil {
				return
			}
		}
	})
	if llama3.err != nil {
		tb.Fatal(llama3.err)
	}
	if thinking {
		return filepath.Join(llama3.dir, "llama3-think.gguf")
	}
	return filepath.Join(llama3.dir, "llama3-random.gguf")
}

// thinkTemplate has the markers of Qwen 3's template: ChatML turns, tool
// calls in <tool_call>, and a <think> block.
const thinkTemplate = "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}" +
	"{%- if tools %}<tool_call>{% endif %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"

func TestMain(m *testing.M) {
	code := m.Run()
	if llama3.dir != "" {
		os.RemoveAll(llama3.dir)
	}
	os.Exit(code)
}

// validator compiles a schema for the checks.
type validator struct {
	v interface{ Validate(any) error }
}

func mustValidator(tb testing.TB, schema string) validator {
	tb.Helper()
	v, err := jsonschema2gbnf.CompileSchema([]byte(schema))
	if err != nil {
		tb.Fatal(err)
	}
	return validator{v}
}

func (v validator) check(tb testing.TB, doc string) {
	tb.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		tb.Fatalf("not JSON: %q: %v", doc, err)
	}
	if err := v.v.Validate(x); err != nil {
		tb.Fatalf("invalid: %q: %v", doc, err)
	}
}

func schemaParam(name, schema string) openai.ChatCompletionNewParamsResponseFormatUnion {
	var m map[string]any
	if err := json.Unmarshal([]byte(schema), &m); err != nil {
		panic(err)
	}
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Schema: m, Strict: openai.Bool(true)}}}
}

const petSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":12},"kind":{"enum":["cat","dog","bird"]},"age":{"type":"integer","minimum":0,"maximum":30}},"required":["name","kind","age"],"additionalProperties":false}`

var storyMsgs = []openai.ChatCompletionMessageParamUnion{
	openai.SystemMessage("You write tiny stories as JSON."),
	openai.UserMessage("Once upon a time there was a pet."),
}

// chat runs a non-streamed chat completion.
func chat(tb testing.TB, c openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) *openai.ChatCompletion {
	tb.Helper()
	start := time.Now()
	res, err := c.Chat.Completions.New(context.Background(), p, opts...)
	if err != nil {
		var ae *openai.Error
		if errors.As(err, &ae) {
			tb.Fatalf("chat: %d %s", ae.StatusCode, ae.RawJSON())
		}
		tb.Fatalf("chat: %v", err)
	}
	tb.Logf("chat: %v, %d completion tokens", time.Since(start), res.Usage.CompletionTokens)
	return res
}

// chatStream runs a streamed chat completion and reassembles it.
func chatStream(tb testing.TB, c openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) (openai.ChatCompletion, []string) {
	tb.Helper()
	stream := c.Chat.Completions.NewStreaming(context.Background(), p, opts...)
	var acc openai.ChatCompletionAccumulator
	var reasoning []string
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		for _, c := range ch.Choices {
			for len(reasoning) <= int(c.Index) {
				reasoning = append(reasoning, "")
			}
			if f, ok := c.Delta.JSON.ExtraFields["reasoning_content"]; ok {
				var s string
				_ = json.Unmarshal([]byte(f.Raw()), &s)
				reasoning[c.Index] += s
			}
		}
	}
	if err := stream.Err(); err != nil {
		tb.Fatalf("stream: %v", err)
	}
	return acc.ChatCompletion, reasoning
}

func TestOpenAIStories(t *testing.T) {
	ts := startServer(t, storiesPath(t), serverOpts{})
	c := ts.openai()
	pet := mustValidator(t, petSchema)
	base := openai.ChatCompletionNewParams{Model: "stories260K", Messages: storyMsgs, Seed: openai.Int(7)}

	t.Run("json_schema", func(t *testing.T) {
		p := base
		p.ResponseFormat = schemaParam("pet", petSchema)
		res := chat(t, c, p)
		if len(res.Choices) != 1 || res.Choices[0].FinishReason != "stop" || res.Object != "chat.completion" || res.Model != "stories260K" {
			t.Fatalf("response %+v", res)
		}
		pet.check(t, res.Choices[0].Message.Content)
		u := res.Usage
		if u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("usage %+v", u)
		}
		// The same seed gives the same answer; streamed, the chunks
		// reassemble to it, with the same usage.
		if again := chat(t, c, p); again.Choices[0].Message.Content != res.Choices[0].Message.Content {
			t.Errorf("seed 7: %q then %q", res.Choices[0].Message.Content, again.Choices[0].Message.Content)
		}
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st, _ := chatStream(t, c, p)
		if st.Choices[0].Message.Content != res.Choices[0].Message.Content || st.Choices[0].FinishReason != "stop" {
			t.Errorf("streamed %q (%s), not streamed %q", st.Choices[0].Message.Content, st.Choices[0].FinishReason, res.Choices[0].Message.Content)
		}
		if st.Usage.CompletionTokens != u.CompletionTokens || st.Usage.PromptTokens != u.PromptTokens {
			t.Errorf("streamed usage %+v, not streamed %+v", st.Usage, u)
		}
	})

	t.Run("json_object", func(t *testing.T) {
		p := base
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
		p.MaxTokens = openai.Int(60)
		res := chat(t, c, p)
		var obj map[string]any
		if err := json.Unmarshal([]byte(res.Choices[0].Message.Content), &obj); err != nil || res.Choices[0].FinishReason != "stop" {
			t.Errorf("json_object: %q (%s): %v", res.Choices[0].Message.Content, res.Choices[0].FinishReason, err)
		}
	})

	t.Run("grammar", func(t *testing.T) {
		const g = `root ::= "Once upon a time, " ("Lily" | "Tom" | "Ben") " " ("saw" | "had") " a " [a-z]{2,10} "."`
		res := chat(t, c, base, option.WithJSONSet("grammar", g))
		if s := res.Choices[0].Message.Content; !strings.HasPrefix(s, "Once upon a time, ") || !strings.HasSuffix(s, ".") {
			t.Errorf("grammar: %q", s)
		}
	})

	t.Run("budget", func(t *testing.T) {
		// A schema at a tight budget is closed out validly: "stop".
		p := base
		p.ResponseFormat = schemaParam("pet", petSchema)
		p.MaxCompletionTokens = openai.Int(40)
		res := chat(t, c, p)
		pet.check(t, res.Choices[0].Message.Content)
		if res.Choices[0].FinishReason != "stop" || res.Usage.CompletionTokens > 40 {
			t.Errorf("closed out: %s, %d tokens", res.Choices[0].FinishReason, res.Usage.CompletionTokens)
		}
		// Text cut by the budget: "length".
		p = base
		p.MaxTokens = openai.Int(5)
		p.Temperature = openai.Float(1)
		res = chat(t, c, p, option.WithJSONSet("grammar", `root ::= [a-z ]{1,40}`))
		if res.Choices[0].FinishReason != "stop" {
			t.Errorf("grammar closed out: %s", res.Choices[0].FinishReason)
		}
		res = chat(t, c, p)
		if res.Choices[0].FinishReason != "length" || res.Usage.CompletionTokens != 5 {
			t.Errorf("text: %s, %d tokens", res.Choices[0].FinishReason, res.Usage.CompletionTokens)
		}
	})

	t.Run("stop", func(t *testing.T) {
		p := base
		p.MaxTokens = openai.Int(60)
		full := chat(t, c, p).Choices[0].Message.Content
		words := strings.Fields(full)
		if len(words) < 3 {
			t.Skipf("the model wrote %q", full)
		}
		stop := " " + words[2]
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(stop)}
		res := chat(t, c, p)
		want, _, _ := strings.Cut(full, stop)
		if got := res.Choices[0].Message.Content; got != want || res.Choices[0].FinishReason != "stop" {
			t.Errorf("stop %q: %q (%s), want %q", stop, got, res.Choices[0].FinishReason, want)
		}
		st, _ := chatStream(t, c, p)
		if st.Choices[0].Message.Content != want {
			t.Errorf("stop %q streamed: %q, want %q", stop, st.Choices[0].Message.Content, want)
		}
	})

	t.Run("n", func(t *testing.T) {
		p := base
		p.ResponseFormat = schemaParam("pet", petSchema)
		p.N = openai.Int(3)
		res := chat(t, c, p)
		if len(res.Choices) != 3 {
			t.Fatalf("%d choices", len(res.Choices))
		}
		seen := map[string]bool{}
		for i, ch := range res.Choices {
			if int(ch.Index) != i {
				t.Errorf("choice %d has index %d", i, ch.Index)
			}
			pet.check(t, ch.Message.Content)
			seen[ch.Message.Content] = true
		}
		if len(seen) < 2 {
			t.Errorf("3 choices (seeds 7, 8, 9), %d distinct", len(seen))
		}
		st, _ := chatStream(t, c, p)
		for i := range res.Choices {
			if st.Choices[i].Message.Content != res.Choices[i].Message.Content {
				t.Errorf("choice %d streamed %q, not streamed %q", i, st.Choices[i].Message.Content, res.Choices[i].Message.Content)
			}
		}
	})

	t.Run("tools", func(t *testing.T) {
		weather := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Description: openai.String("Weather of a city"),
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 16}, "unit": map[string]any{"enum": []string{"C", "F"}}}, "required": []string{"city"}}})
		clock := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"hour24": map[string]any{"type": "boolean"}}, "required": []string{"hour24"}}})
		wv := mustValidator(t, `{"type":"object","properties":{"city":{"type":"string","maxLength":16},"unit":{"enum":["C","F"]}},"required":["city"]}`)
		cv := mustValidator(t, `{"type":"object","properties":{"hour24":{"type":"boolean"}},"required":["hour24"]}`)
		p := base
		p.Tools = []openai.ChatCompletionToolUnionParam{weather, clock}
		p.MaxTokens = openai.Int(80)
		checkCalls := func(name string, m openai.ChatCompletionMessage, fr string, want string) {
			t.Helper()
			if len(m.ToolCalls) == 0 || fr != "tool_calls" {
				t.Fatalf("%s: no tool call (%s): %+v", name, fr, m)
			}
			for _, tc := range m.ToolCalls {
				fn := tc.Function
				if want != "" && fn.Name != want || !strings.HasPrefix(tc.ID, "call_") || tc.Type != "function" {
					t.Errorf("%s: call %+v", name, tc)
				}
				switch fn.Name {
				case "get_weather":
					wv.check(t, fn.Arguments)
				case "get_time":
					cv.check(t, fn.Arguments)
				default:
					t.Errorf("%s: unknown function %q", name, fn.Name)
				}
			}
		}
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
		res := chat(t, c, p)
		checkCalls("required", res.Choices[0].Message, res.Choices[0].FinishReason, "")
		st, _ := chatStream(t, c, p)
		checkCalls("required streamed", st.Choices[0].Message, st.Choices[0].FinishReason, "")
		if sf, rf := st.Choices[0].Message.ToolCalls[0].Function, res.Choices[0].Message.ToolCalls[0].Function; sf.Name != rf.Name || sf.Arguments != rf.Arguments {
			t.Errorf("streamed call %+v, not streamed %+v", st.Choices[0].Message.ToolCalls[0].Function, res.Choices[0].Message.ToolCalls[0].Function)
		}
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"}}}
		res = chat(t, c, p)
		checkCalls("named", res.Choices[0].Message, res.Choices[0].FinishReason, "get_time")
		// Auto: free text or calls; whatever the model does, a call is valid
		// and the finish reason says which.
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}
		calls := 0
		for seed := range int64(2) {
			p.Seed = openai.Int(seed)
			res = chat(t, c, p)
			m := res.Choices[0].Message
			if len(m.ToolCalls) > 0 {
				calls++
				checkCalls("auto", m, res.Choices[0].FinishReason, "")
			} else if res.Choices[0].FinishReason == "tool_calls" {
				t.Errorf("auto: finish tool_calls without calls")
			}
		}
		t.Logf("auto: %d of 2 answers called a tool", calls)
	})

	t.Run("completions", func(t *testing.T) {
		p := openai.CompletionNewParams{Model: "stories260K", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
			MaxTokens: openai.Int(20), Seed: openai.Int(3)}
		res, err := c.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Choices) != 1 || res.Choices[0].Text == "" || res.Usage.CompletionTokens == 0 || res.Usage.CompletionTokens > 20 {
			t.Fatalf("completion %+v", res)
		}
		stream := c.Completions.NewStreaming(context.Background(), p)
		var text string
		for stream.Next() {
			for _, ch := range stream.Current().Choices {
				text += ch.Text
			}
		}
		if err := stream.Err(); err != nil || text != res.Choices[0].Text {
			t.Errorf("streamed %q (%v), not streamed %q", text, err, res.Choices[0].Text)
		}
	})

	t.Run("models", func(t *testing.T) {
		page, err := c.Models.List(context.Background())
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != "stories260K" {
			t.Fatalf("models %+v: %v", page, err)
		}
		if m, err := c.Models.Get(context.Background(), "stories260K"); err != nil || m.ID != "stories260K" {
			t.Errorf("model: %+v %v", m, err)
		}
		_, err = c.Models.Get(context.Background(), "gpt-4o")
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != 404 {
			t.Errorf("unknown model: %v", err)
		}
	})
}

// The order schema on the 128k-vocabulary model, streamed and not, and a
// tool call.
func TestOpenAILlama3(t *testing.T) {
	ts := startServer(t, llama3Model(t, false), serverOpts{ctx: 4096})
	c := ts.openai()
	schema, err := os.ReadFile(sharedtest.Path(t, "bench", "cases", "02-order-schema", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	order := mustValidator(t, string(schema))
	p := openai.ChatCompletionNewParams{Model: "m", Seed: openai.Int(1), MaxTokens: openai.Int(250),
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("An order for three apples, please.")},
		ResponseFormat: schemaParam("order", string(schema))}
	res := chat(t, c, p)
	order.check(t, res.Choices[0].Message.Content)
	st, _ := chatStream(t, c, p)
	if st.Choices[0].Message.Content != res.Choices[0].Message.Content {
		t.Errorf("streamed %q, not streamed %q", st.Choices[0].Message.Content, res.Choices[0].Message.Content)
	}
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{}
	p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "place_order",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"sku": map[string]any{"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "quantity": map[string]any{"type": "integer", "minimum": 1, "maximum": 99}}, "required": []string{"sku", "quantity"}}})}
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	res = chat(t, c, p)
	m := res.Choices[0].Message
	if len(m.ToolCalls) == 0 || m.ToolCalls[0].Function.Name != "place_order" {
		t.Fatalf("no call: %+v", m)
	}
	mustValidator(t, `{"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"},"quantity":{"type":"integer","minimum":1,"maximum":99}},"required":["sku","quantity"]}`).check(t, m.ToolCalls[0].Function.Arguments)
}

// A reasoning model (a template with a <think> block): the thinking comes
// back as reasoning_content, the answer follows the schema from the
// end-of-thinking marker; the budget ends the thinking.
func TestReasoning(t *testing.T) {
	ts := startServer(t, llama3Model(t, true), serverOpts{ctx: 4096})
	c := ts.openai()
	pet := mustValidator(t, petSchema)
	p := openai.ChatCompletionNewParams{Model: "m", Seed: openai.Int(2), MaxTokens: openai.Int(200),
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("A pet, please.")},
		ResponseFormat: schemaParam("pet", petSchema)}
	res := chat(t, c, p, option.WithJSONSet("reasoning_budget", 12))
	m := res.Choices[0].Message
	pet.check(t, m.Content)
	var reasoning string
	if f, ok := m.JSON.ExtraFields["reasoning_content"]; ok {
		_ = json.Unmarshal([]byte(f.Raw()), &reasoning)
	}
	if reasoning == "" || strings.Contains(reasoning, "</think>") || strings.Contains(m.Content, "think>") {
		t.Errorf("reasoning %q content %q", reasoning, m.Content)
	}
	st, sr := chatStream(t, c, p, option.WithJSONSet("reasoning_budget", 12))
	if st.Choices[0].Message.Content != m.Content || sr[0] != reasoning {
		t.Errorf("streamed %q / %q, not streamed %q / %q", sr[0], st.Choices[0].Message.Content, reasoning, m.Content)
	}
	// Thinking off: no reasoning.
	p.ReasoningEffort = shared.ReasoningEffortMinimal
	res = chat(t, c, p)
	pet.check(t, res.Choices[0].Message.Content)
	if _, ok := res.Choices[0].Message.JSON.ExtraFields["reasoning_content"]; ok {
		t.Errorf("thinking off: reasoning %s", res.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw())
	}
	// Through Ollama's client: message.thinking.
	oc := ts.ollama(t)
	stream := false
	var got ollama.ChatResponse
	err := oc.Chat(context.Background(), &ollama.ChatRequest{Model: "m", Stream: &stream, Format: json.RawMessage(petSchema),
		Messages: []ollama.Message{{Role: "user", Content: "A pet."}}, Options: map[string]any{"seed": 3, "num_predict": 200}},
		func(r ollama.ChatResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	pet.check(t, got.Message.Content)
	if got.Message.Thinking == "" {
		t.Errorf("ollama: no thinking: %+v", got)
	}
}

func TestOllamaStories(t *testing.T) {
	ts := startServer(t, storiesPath(t), serverOpts{})
	c := ts.ollama(t)
	ctx := context.Background()
	pet := mustValidator(t, petSchema)
	req := &ollama.ChatRequest{Model: "stories260K", Format: json.RawMessage(petSchema),
		Messages: []ollama.Message{{Role: "system", Content: "JSON pets."}, {Role: "user", Content: "Once upon a time, a pet."}},
		Options:  map[string]any{"seed": 5, "temperature": 0.9, "top_k": 30, "num_predict": 100}}
	var streamed strings.Builder
	var last ollama.ChatResponse
	chunks := 0
	if err := c.Chat(ctx, req, func(r ollama.ChatResponse) error {
		streamed.WriteString(r.Message.Content)
		last = r
		chunks++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pet.check(t, streamed.String())
	if !last.Done || last.DoneReason != "stop" || last.EvalCount == 0 || last.PromptEvalCount == 0 || chunks < 3 {
		t.Errorf("last chunk %+v after %d chunks", last, chunks)
	}
	no := false
	req.Stream = &no
	if err := c.Chat(ctx, req, func(r ollama.ChatResponse) error { last = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if last.Message.Content != streamed.String() {
		t.Errorf("not streamed %q, streamed %q", last.Message.Content, streamed.String())
	}

	var text strings.Builder
	err := c.Generate(ctx, &ollama.GenerateRequest{Model: "stories260K", Prompt: "Once upon a time", Format: json.RawMessage(`"json"`),
		Options: map[string]any{"num_predict": 40, "seed": 1}}, func(r ollama.GenerateResponse) error {
		text.WriteString(r.Response)
		return nil
	})
	var obj map[string]any
	if err != nil || json.Unmarshal([]byte(text.String()), &obj) != nil {
		t.Errorf("generate json: %q: %v", text.String(), err)
	}
	text.Reset()
	if err := c.Generate(ctx, &ollama.GenerateRequest{Model: "stories260K", Prompt: "Once upon a time", Raw: true,
		Options: map[string]any{"num_predict": 10, "stop": []string{"zzz"}}}, func(r ollama.GenerateResponse) error {
		text.WriteString(r.Response)
		return nil
	}); err != nil || text.Len() == 0 {
		t.Errorf("generate raw: %q: %v", text.String(), err)
	}

	tools := ollama.Tools{{Type: "function", Function: ollama.ToolFunction{Name: "feed", Description: "Feed a pet",
		Parameters: ollama.ToolFunctionParameters{Type: "object", Required: []string{"grams"}, Properties: func() *ollama.ToolPropertiesMap {
			m := ollama.NewToolPropertiesMap()
			m.Set("grams", ollama.ToolProperty{Type: ollama.PropertyType{"integer"}})
			return m
		}()}}}}
	calls := 0
	for seed := range 3 {
		req := &ollama.ChatRequest{Model: "stories260K", Stream: &no, Tools: tools, Messages: []ollama.Message{{Role: "user", Content: "Feed the cat."}},
			Options: map[string]any{"seed": seed, "num_predict": 60}}
		if err := c.Chat(ctx, req, func(r ollama.ChatResponse) error { last = r; return nil }); err != nil {
			t.Fatal(err)
		}
		for _, tc := range last.Message.ToolCalls {
			calls++
			if g, ok := tc.Function.Arguments.Get("grams"); tc.Function.Name != "feed" || !ok {
				t.Errorf("call %+v", tc)
			} else if _, isNum := g.(float64); !isNum {
				t.Errorf("grams %v", g)
			}
		}
	}
	t.Logf("ollama tools: %d calls in 3 answers", calls)

	list, err := c.List(ctx)
	if err != nil || len(list.Models) != 1 || list.Models[0].Name != "stories260K" {
		t.Errorf("tags %+v: %v", list, err)
	}
	if v, err := c.Version(ctx); err != nil || v == "" {
		t.Errorf("version %q: %v", v, err)
	}
	// A bad schema: Ollama's error shape through its client.
	err = c.Chat(ctx, &ollama.ChatRequest{Model: "x", Stream: &no, Format: json.RawMessage(`{"type":"string","format":"idn-email"}`),
		Messages: []ollama.Message{{Role: "user", Content: "x"}}}, func(ollama.ChatResponse) error { return nil })
	var se ollama.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || !strings.Contains(se.ErrorMessage, "idn-email") {
		t.Errorf("bad schema: %v", err)
	}
}

// 32 concurrent requests over 8 schemas (both APIs): every response valid
// against its own schema, none lost or duplicated.
func TestConcurrentSchemas(t *testing.T) {
	ts := startServer(t, storiesPath(t), serverOpts{})
	schemas := []string{
		petSchema,
		`{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":-5,"maximum":5}},"required":["ok","n"]}`,
		`{"type":"array","items":{"type":"string","maxLength":6},"minItems":1,"maxItems":3}`,
		`{"type":"object","properties":{"id":{"type":"string","pattern":"^[A-Z]{2}[0-9]{3}$"}},"required":["id"],"additionalProperties":false}`,
		`{"anyOf":[{"type":"integer","minimum":100,"maximum":999},{"type":"null"}]}`,
		`{"type":"object","properties":{"when":{"type":"string","format":"date"},"tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":2}},"required":["when"]}`,
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"number","minimum":0,"maximum":1}},"required":["b"]}},"required":["a"]}`,
		`{"enum":["red","green","blue",42,true]}`,
	}
	vals := make([]validator, len(schemas))
	for i, s := range schemas {
		vals[i] = mustValidator(t, s)
	}
	c, oc := ts.openai(), ts.ollama(t)
	type outcome struct {
		id, doc string
		err     error
	}
	out := make([]outcome, 32)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			schema := schemas[i%len(schemas)]
			prompt := fmt.Sprintf("Request %d: once upon a time.", i)
			if i%4 == 3 {
				no := false
				out[i].id = fmt.Sprint("ollama-", i)
				out[i].err = oc.Chat(context.Background(), &ollama.ChatRequest{Model: "x", Stream: &no, Format: json.RawMessage(schema),
					Messages: []ollama.Message{{Role: "user", Content: prompt}}, Options: map[string]any{"seed": i, "num_predict": 80}},
					func(r ollama.ChatResponse) error { out[i].doc = r.Message.Content; return nil })
				return
			}
			res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "x", Seed: openai.Int(int64(i)), MaxTokens: openai.Int(80),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}, ResponseFormat: schemaParam(fmt.Sprint("s", i%8), schema)})
			if err != nil {
				out[i].err = err
				return
			}
			out[i].id, out[i].doc = res.ID, res.Choices[0].Message.Content
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for i, o := range out {
		if o.err != nil {
			t.Fatalf("request %d: %v", i, o.err)
		}
		vals[i%len(schemas)].check(t, o.doc)
		if ids[o.id] {
			t.Errorf("response id %s twice", o.id)
		}
		ids[o.id] = true
	}
	if st := ts.eng.SchedulerStats(); st.Admitted < 32 || st.Active != 0 {
		t.Errorf("scheduler %+v", st)
	}
	if st := ts.eng.CacheStats(); st.Misses != int64(len(schemas)) {
		t.Errorf("grammar cache %+v: want %d compiles", st, len(schemas))
	}
}

// rawPost sends a request with a raw body.
func rawPost(tb testing.TB, url string, body io.Reader, header ...string) (int, http.Header, []byte) {
	tb.Helper()
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

type openAIErr struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// Every bad request gets its status and error shape, and the server goes on
// serving: a 20 MB body, a schema nested 10,000 levels deep and a grammar
// that does not compile included.
func TestBadRequests(t *testing.T) {
	ts := startServer(t, storiesPath(t), serverOpts{ctx: 1024, cfg: server.Config{APIKey: "sekret"}})
	auth := []string{"Authorization", "Bearer sekret"}
	chatURL := ts.url + "/v1/chat/completions"
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	deep := strings.Repeat(`{"type":"array","items":`, 10000) + `{"type":"integer"}` + strings.Repeat("}", 10000)
	deep5k := strings.Repeat(`{"type":"array","items":`, 5000) + `{"type":"integer"}` + strings.Repeat("}", 5000)
	long := strings.Repeat("Once upon a time there was a big dog. ", 200)
	blowUp := `root ::= [ab]* "a"` + strings.Repeat(" [ab]", 20)
	for _, tc := range []struct {
		name   string
		body   string
		header []string
		status int
		code   string
		param  string
		in     []string // in the message
	}{
		{"malformed JSON", `{"messages": [}`, auth, 400, "invalid_json", "", []string{"offset 15"}},
		{"wrong type", `{"messages": "hi"}`, auth, 400, "invalid_type", "messages", []string{"offset 17", "messages must be an array, not string"}},
		{"trailing data", `{` + msgs + `} {}`, auth, 400, "invalid_json", "", []string{"after the request"}},
		{"no messages", `{"messages": []}`, auth, 400, "invalid_value", "messages", nil},
		{"unsupported keyword", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"e":{"type":"string","format":"idn-email"}}}}}}`,
			auth, 400, "unsupported_schema", "response_format.json_schema.schema", []string{"#/properties/e", "idn-email"}},
		{"invalid schema", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"strin"}}}}`,
			auth, 400, "invalid_schema", "response_format.json_schema.schema", nil},
		{"grammar syntax", `{` + msgs + `,"grammar":"root ::= \"a\"\nx ::= (\"b\""}`, auth, 400, "invalid_grammar", "grammar", []string{"2:"}},
		{"grammar too large", `{` + msgs + `,"grammar":"root ::= \"` + strings.Repeat("a", 1<<20) + `\""}`, auth, 400, "grammar_too_large", "grammar", nil},
		{"grammar over the state limit", `{` + msgs + `,"grammar":` + mustJSON(blowUp) + `}`, auth, 400, "grammar_too_large", "grammar", []string{"MaxStates"}},
		{"schema nested 10,000 levels", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + deep + `}}}`, auth, 400, "", "", nil},
		{"schema nested 5,000 levels", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + deep5k + `}}}`, auth, 400, "schema_too_large", "response_format.json_schema.schema", []string{"MaxNestingDepth"}},
		{"prompt beyond the context", `{"messages":[{"role":"user","content":` + mustJSON(long) + `}]}`, auth, 400, "context_length_exceeded", "", nil},
		{"max_tokens", `{` + msgs + `,"max_tokens":0}`, auth, 400, "invalid_value", "max_tokens", nil},
		{"temperature", `{` + msgs + `,"temperature":7}`, auth, 400, "invalid_value", "temperature", nil},
		{"n", `{` + msgs + `,"n":99}`, auth, 400, "invalid_value", "n", nil},
		{"image", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, auth, 400, "unsupported", "messages[0].content[0].type", nil},
		{"tool without name", `{` + msgs + `,"tools":[{"type":"function","function":{}}]}`, auth, 400, "invalid_value", "tools[0].function.name", nil},
		{"bad tool schema", `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"not":{"type":"object"},"type":"string","format":"idn-email"}}}}}],"tool_choice":"required"}`,
			auth, 400, "unsupported_schema", "tools[0].function.parameters", []string{"#/properties/x"}},
		{"no key", `{` + msgs + `}`, nil, 401, "invalid_api_key", "", []string{"missing"}},
		{"wrong key", `{` + msgs + `}`, []string{"Authorization", "Bearer nope"}, 401, "invalid_api_key", "", []string{"wrong"}},
	} {
		status, _, b := rawPost(t, chatURL, strings.NewReader(tc.body), tc.header...)
		var e openAIErr
		if err := json.Unmarshal(b, &e); err != nil || status != tc.status || e.Error.Message == "" || e.Error.Type == "" {
			t.Errorf("%s: status %d, body %.300s; want %d", tc.name, status, b, tc.status)
			continue
		}
		if tc.code != "" && (e.Error.Code == nil || *e.Error.Code != tc.code) {
			t.Errorf("%s: code %v, want %s (%s)", tc.name, e.Error.Code, tc.code, e.Error.Message)
		}
		if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
			t.Errorf("%s: param %v, want %s", tc.name, e.Error.Param, tc.param)
		}
		for _, s := range tc.in {
			if !strings.Contains(e.Error.Message, s) {
				t.Errorf("%s: message %q does not say %q", tc.name, e.Error.Message, s)
			}
		}
		t.Logf("%s: %d %s", tc.name, status, e.Error.Message[:min(len(e.Error.Message), 160)])
	}
	// A 20 MB body: 413 while it is read.
	status, _, b := rawPost(t, chatURL, io.MultiReader(strings.NewReader(`{"messages":[{"role":"user","content":"`), strings.NewReader(strings.Repeat("x", 20<<20)), strings.NewReader(`"}]}`)), auth...)
	if status != 413 || !strings.Contains(string(b), "request_too_large") {
		t.Errorf("20 MB body: %d %.200s", status, b)
	}
	// Ollama's shape on its endpoints.
	status, _, b = rawPost(t, ts.url+"/api/chat", strings.NewReader(`{"model":"x","messages":[{"role":"user","content":"x"}],"format":"yaml"}`), auth...)
	var oe struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &oe) != nil || status != 400 || !strings.Contains(oe.Error, "format") {
		t.Errorf("ollama bad format: %d %s", status, b)
	}
	// /health and /metrics need no key; the server still serves.
	for _, path := range []string{"/health", "/metrics"} {
		resp, err := http.Get(ts.url + path)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	status, _, b = rawPost(t, chatURL, strings.NewReader(`{`+msgs+`,"max_tokens":5}`), auth...)
	if status != 200 {
		t.Errorf("after the bad requests: %d %s", status, b)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// More requests than sequences + queue: the excess gets 429 with
// Retry-After, the rest correct answers. Then a client that goes away
// mid-stream frees its sequence, and the next request runs.
func TestOverloadAndCancel(t *testing.T) {
	ts := startServer(t, storiesPath(t), serverOpts{seqs: 2, ctx: 2048, engine: []engine.Option{engine.WithMaxQueue(2)}})
	const g = `root ::= [a-z]{3,8} (" " [a-z]{3,8}){60}`
	body := `{"messages":[{"role":"user","content":"go"}],"max_tokens":300,"grammar":` + mustJSON(g) + `}`
	// Compile first, so that the requests below reach the queue together.
	if status, _, b := rawPost(t, ts.url+"/v1/chat/completions", strings.NewReader(body)); status != 200 {
		t.Fatalf("warm-up: %d %s", status, b)
	}
	ts.waitIdle(t) // both sequences free
	const n = 12
	type outcome struct {
		status int
		header http.Header
		body   []byte
	}
	out := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].status, out[i].header, out[i].body = rawPost(t, ts.url+"/v1/chat/completions", strings.NewReader(body))
		}()
	}
	wg.Wait()
	ok, limited := 0, 0
	for i, o := range out {
		switch o.status {
		case 200:
			ok++
			var res struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(o.body, &res); err != nil || len(strings.Fields(res.Choices[0].Message.Content)) != 61 {
				t.Errorf("request %d: %.200s", i, o.body)
			}
		case 429:
			limited++
			var e openAIErr
			if o.header.Get("Retry-After") == "" || json.Unmarshal(o.body, &e) != nil || e.Error.Type != "rate_limit_error" {
				t.Errorf("request %d: 429 without Retry-After or error object: %v %s", i, o.header, o.body)
			}
		default:
			t.Errorf("request %d: %d %s", i, o.status, o.body)
		}
	}
	if ok < 4 || limited == 0 {
		t.Errorf("%d answered, %d refused with 429 (capacity 2 sequences + 2 queued)", ok, limited)
	}
	t.Logf("%d answered, %d refused", ok, limited)

	// Cancellation mid-stream.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/chat/completions", strings.NewReader(strings.Replace(body, `"max_tokens":300`, `"max_tokens":300,"stream":true`, 1)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	if st := ts.eng.SchedulerStats(); st.Active != 1 {
		t.Errorf("streaming: %d active sequences", st.Active)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for ts.eng.SchedulerStats().Active != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := ts.eng.SchedulerStats(); st.Active != 0 {
		t.Errorf("after the client went away: %+v", st)
	}
	if status, _, b := rawPost(t, ts.url+"/v1/chat/completions", strings.NewReader(body)); status != 200 {
		t.Errorf("after a cancellation: %d %s", status, b)
	}
	if !strings.Contains(ts.logs.String(), `"status":499`) {
		t.Errorf("no 499 in the log")
	}
}

// Operations: /health while loading and draining, metrics, one log line
// per request with its id, and a graceful drain that lets a running
// request finish.
func TestOperations(t *testing.T) {
	logs := &syncBuffer{}
	srv, err := server.New(server.Config{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(method, path string, body string) (int, string) {
		req, _ := http.NewRequest(method, path, strings.NewReader(body))
		w := &recorder{header: http.Header{}}
		srv.ServeHTTP(w, req)
		return w.status, w.body.String()
	}
	if status, body := rec("GET", "/health", ""); status != 503 || !strings.Contains(body, "loading") {
		t.Errorf("loading: %d %s", status, body)
	}
	if status, _ := rec("POST", "/v1/chat/completions", `{}`); status != 503 {
		t.Errorf("API while loading: %d", status)
	}

	ts := startServer(t, storiesPath(t), serverOpts{drain: 20 * time.Second})
	status, hdr, _ := rawPost(t, ts.url+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"response_format":{"type":"json_object"}}`), "X-Request-Id", "req-42")
	if status != 200 || hdr.Get("X-Request-Id") != "req-42" {
		t.Errorf("request id: %d %v", status, hdr)
	}
	ts.waitIdle(t)
	resp, err := http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{`structgen_requests_total{endpoint="POST /v1/chat/completions",status="200"} 1`, "structgen_queue_depth 0", "structgen_active_sequences 0",
		"structgen_time_to_first_token_seconds_count 1", "structgen_inter_token_latency_seconds_count", "structgen_prompt_tokens_total", "structgen_completion_tokens_total",
		"structgen_mask_seconds_total", "structgen_grammar_cache_misses_total 1", "structgen_grammar_cache_bytes", "structgen_heap_reserve_bytes 0"} {
		if !strings.Contains(string(metrics), name) {
			t.Errorf("metrics lack %q", name)
		}
	}
	var line struct {
		Msg       string  `json:"msg"`
		RequestID string  `json:"request_id"`
		Status    int     `json:"status"`
		Duration  float64 `json:"duration_ms"`
		Prompt    int     `json:"prompt_tokens"`
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(ts.logs.String()), "\n") {
		if err := json.Unmarshal([]byte(l), &line); err == nil && line.Msg == "request" && line.RequestID == "req-42" {
			n++
			if line.Status != 200 || line.Prompt == 0 || line.Duration <= 0 {
				t.Errorf("log line %s", l)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d log lines for request req-42:\n%s", n, ts.logs.String())
	}

	// Drain: a running stream finishes; meanwhile /health is 503 and new
	// requests are refused; then Serve returns.
	const g = `root ::= [a-z]{3,8} (" " [a-z]{3,8}){40}`
	req, _ := http.NewRequest("POST", ts.url+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"go"}],"stream":true,"max_tokens":200,"grammar":`+mustJSON(g)+`}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop() }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if status, body := rec2(ts.srv, "GET", "/health"); status == 503 && strings.Contains(body, "draining") {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if status, body := rec2(ts.srv, "GET", "/health"); status != 503 {
		t.Errorf("draining: /health %d %s", status, body)
	}
	if status, _ := rec2(ts.srv, "POST", "/v1/chat/completions"); status != 503 {
		t.Errorf("draining: new request %d", status)
	}
	all, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.HasSuffix(string(all), "data: [DONE]\n\n") {
		t.Errorf("the running stream did not finish: %v %.200s", err, all)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = 200
	}
	return r.body.Write(b)
}

func rec2(srv *server.Server, method, path string) (int, string) {
	req, _ := http.NewRequest(method, path, strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
	w := &recorder{header: http.Header{}}
	srv.ServeHTTP(w, req)
	return w.status, w.body.String()
}
