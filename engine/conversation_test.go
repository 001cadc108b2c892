package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/structgen/structgen/engine"
)

var weatherTools = []engine.Tool{
	{Name: "get_weather", Description: "Weather of a city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":20},"unit":{"enum":["C","F"]}},"required":["city"],"additionalProperties":false}`)},
	{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string","pattern":"^[A-Z][a-z]+/[A-Z][a-z]+$"}},"required":["zone"]}`)},
}

func TestRenderChat(t *testing.T) {
	conv := []engine.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{Role: "tool", ToolCallID: "call_1", Name: "get_weather", Content: `{"temp":21}`},
		{Role: "assistant", Content: "21 °C."},
		{Role: "user", Content: "Thanks"},
	}
	tools := weatherTools[:1]
	toolJSON := `{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "unit": {"enum": ["C", "F"]}}, "required": ["city"], "additionalProperties": false}}}`
	for _, tc := range []struct{ name, tmpl, want string }{
		{"chatml", "<|im_start|><tool_call>",
			"<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + toolJSON +
				"\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" +
				"<|im_start|>user\nWeather in Paris?<|im_end|>\n" +
				"<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n" +
				"<|im_start|>user\n<tool_response>\n{\"temp\":21}\n</tool_response><|im_end|>\n" +
				"<|im_start|>assistant\n21 °C.<|im_end|>\n<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n"},
		{"llama3", "<|start_header_id|> {% if tools %}",
			"<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n" +
				"{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n        \"description\": \"Weather of a city\",\n        \"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n                \"city\": {\n                    \"type\": \"string\",\n                    \"maxLength\": 20\n                },\n                \"unit\": {\n                    \"enum\": [\n                        \"C\",\n                        \"F\"\n                    ]\n                }\n            },\n            \"required\": [\n                \"city\"\n            ],\n            \"additionalProperties\": false\n        }\n    }\n}\n\nWeather in Paris?<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>" +
				"<|start_header_id|>ipython<|end_header_id|>\n\n{\"temp\":21}<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\n21 °C.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nThanks<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"mistral", "[INST] [TOOL_CALLS]",
			"[INST] Be brief.\n\nWeather in Paris? [/INST][TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"call_1\"}]</s>" +
				"[TOOL_RESULTS]{\"content\": \"{\\\"temp\\\":21}\", \"call_id\": \"call_1\"}[/TOOL_RESULTS] 21 °C.</s>[AVAILABLE_TOOLS][" + toolJSON + "][/AVAILABLE_TOOLS][INST] Thanks [/INST]"},
		{"gemma", "<start_of_turn>",
			"<start_of_turn>user\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + toolJSON +
				"\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>\n\nWeather in Paris?<end_of_turn>\n" +
				"<start_of_turn>model\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><end_of_turn>\n" +
				"<start_of_turn>user\n<tool_response>\n{\"temp\":21}\n</tool_response><end_of_turn>\n" +
				"<start_of_turn>model\n21 °C.<end_of_turn>\n<start_of_turn>user\nThanks<end_of_turn>\n<start_of_turn>model\n"},
	} {
		got, err := engine.RenderChat(tc.tmpl, conv, tools)
		if err != nil || got != tc.want {
			t.Errorf("%s:\ngot  %q (%v)\nwant %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := engine.RenderChat("<|im_start|>", []engine.Message{{Role: "robot"}}, nil); err == nil {
		t.Error("unknown role: no error")
	}
	if _, err := engine.RenderChat("<|im_start|>", nil, nil); err == nil {
		t.Error("no messages: no error")
	}
}

// streamParts collects what WithPartStream delivers, by part.
type streamParts struct {
	by   map[engine.Part]string
	all  string
	seen []engine.Part
}

func (s *streamParts) option() engine.Option {
	s.by = map[engine.Part]string{}
	return engine.WithPartStream(func(_ int, p engine.Part, piece []byte) error {
		s.by[p] += string(piece)
		s.all += string(piece)
		if len(s.seen) == 0 || s.seen[len(s.seen)-1] != p {
			s.seen = append(s.seen, p)
		}
		return nil
	})
}

func TestStopStrings(t *testing.T) {
	f := newFakeModel()
	f.script = []byte("Hello world! the cat sat")
	e := newEngine(t, f, engine.WithSampling(greedy))
	for _, tc := range []struct {
		stops []string
		want  string
		stop  engine.StopReason
	}{
		{[]string{" the"}, "Hello world!", engine.StopString},
		{[]string{"xyz", " ca", "!"}, "Hello world", engine.StopString}, // the earliest wins
		{[]string{"sat!"}, "Hello world! the cat sat", engine.StopEOG},  // a prefix at the end is not a stop
	} {
		var sp streamParts
		res := generate(t, e, "Say hello", engine.WithStop(tc.stops...), sp.option())
		if res.Text != tc.want || res.Stop != tc.stop || res.Content != tc.want {
			t.Errorf("stops %q: text %q content %q stop %s, want %q stop %s", tc.stops, res.Text, res.Content, res.Stop, tc.want, tc.stop)
		}
		if sp.all != res.Text || sp.by[engine.PartContent] != res.Text {
			t.Errorf("stops %q: streamed %q, text %q", tc.stops, sp.all, res.Text)
		}
	}
	if _, err := e.Generate(context.Background(), "x", engine.WithStop("")); err == nil {
		t.Error("empty stop string: no error")
	}
}

// thinkTemplate is shaped as Qwen 3's: ChatML turns, and an empty thinking
// block when enable_thinking is false (the model opens <think> itself).
const thinkTemplate = "{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}" +
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"

var nameSchema = []byte(`{"type":"object","properties":{"name":{"type":"string","maxLength":12}},"required":["name"],"additionalProperties":false}`)

func TestThinking(t *testing.T) {
	f := newFakeModel()
	f.tmpl = thinkTemplate
	f.script = []byte(`Cats are nice.</think>{"name":"cat"}`)
	e := newEngine(t, f, engine.WithSampling(greedy))
	msgs := engine.WithMessages(engine.Message{Role: "user", Content: "A pet?"})

	var sp streamParts
	res := generate(t, e, "", msgs, engine.WithSchema(nameSchema), sp.option())
	prompt, _ := f.last()
	if got := spell(f, prompt); !strings.HasSuffix(got, "<|im_start|>assistant\n<think>\n") {
		t.Errorf("prompt %q does not open the thinking block", got)
	}
	if res.Reasoning != "Cats are nice." || res.Content != `{"name":"cat"}` || res.Output != res.Content {
		t.Errorf("reasoning %q content %q output %q", res.Reasoning, res.Content, res.Output)
	}
	if sp.by[engine.PartReasoning] != res.Reasoning || sp.by[engine.PartContent] != res.Content || sp.by[engine.PartMarker] != "</think>" || sp.all != res.Text {
		t.Errorf("streamed %q, text %q", sp.by, res.Text)
	}

	// A thinking budget: the model would think on; the engine ends the
	// block after 6 tokens and the grammar applies.
	f.script = []byte("I think and think and think and think and think")
	res = generate(t, e, "", msgs, engine.WithSchema(nameSchema), engine.WithReasoning(true, 6))
	if len(res.Tokens) < 6 || !strings.HasPrefix(res.Text, res.Reasoning) || len(res.Reasoning) == 0 || strings.Contains(res.Reasoning, "</think>") {
		t.Errorf("budget: reasoning %q text %q", res.Reasoning, res.Text)
	}
	if _, err := decodeJSON(res.Output); err != nil || res.Content != res.Output || !res.Triggered {
		t.Errorf("budget: output %q content %q: %v", res.Output, res.Content, err)
	}
	// A small token budget keeps room for the answer.
	res = generate(t, e, "", msgs, engine.WithSchema(nameSchema), engine.WithMaxTokens(20))
	if _, err := decodeJSON(res.Output); err != nil || len(res.Tokens) > 20 {
		t.Errorf("max tokens 20: output %q (%d tokens): %v", res.Output, len(res.Tokens), err)
	}

	// Thinking off: an empty block in the prompt, the answer at once.
	f.script = []byte(`{"name":"dog"}`)
	res = generate(t, e, "", msgs, engine.WithSchema(nameSchema), engine.WithReasoning(false, 0))
	prompt, _ = f.last()
	if got := spell(f, prompt); !strings.HasSuffix(got, "<|im_start|>assistant\n<think>\n\n</think>\n\n") || res.Output != `{"name":"dog"}` || res.Reasoning != "" {
		t.Errorf("off: prompt %q output %q reasoning %q", got, res.Output, res.Reasoning)
	}

	// Free text after thinking, with a stop string.
	f.script = []byte("Hmm.</think>\n\nA cat. The end")
	sp = streamParts{}
	res = generate(t, e, "", msgs, engine.WithStop(" The"), sp.option())
	if res.Reasoning != "Hmm." || res.Content != "A cat." || res.Stop != engine.StopString {
		t.Errorf("free: reasoning %q content %q stop %s", res.Reasoning, res.Content, res.Stop)
	}
	if sp.by[engine.PartContent] != res.Content || sp.by[engine.PartMarker] != "</think>\n\n" {
		t.Errorf("free: streamed %q", sp.by)
	}
}

func TestToolCalls(t *testing.T) {
	f := newFakeModel()
	e := newEngine(t, f, engine.WithSampling(greedy))
	msgs := engine.WithMessages(engine.Message{Role: "user", Content: "Weather in Paris?"})
	checkCalls := func(name string, res *engine.Result, want string) {
		t.Helper()
		if len(res.ToolCalls) == 0 {
			t.Fatalf("%s: no tool call in %q", name, res.Text)
		}
		for _, c := range res.ToolCalls {
			if !strings.HasPrefix(c.ID, "call_") || (want != "" && c.Name != want) {
				t.Errorf("%s: call %+v, want %s", name, c, want)
			}
			if !json.Valid([]byte(c.Arguments)) {
				t.Errorf("%s: arguments %q", name, c.Arguments)
			}
		}
	}

	// Hermes (ChatML) auto: text, then a call from <tool_call> on.
	f.tmpl = "<|im_start|> {% if tools %}<tool_call>{% endif %}"
	f.script = []byte("Sure<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
	var sp streamParts
	res := generate(t, e, "", msgs, engine.WithTools(weatherTools, engine.ToolChoice{}), sp.option(), engine.WithSeed(7))
	checkCalls("hermes auto", res, "get_weather")
	if res.ToolCalls[0].Arguments != `{"city":"Paris"}` || res.Content != "Sure" {
		t.Errorf("hermes auto: calls %+v content %q", res.ToolCalls, res.Content)
	}
	if sp.by[engine.PartContent] != "Sure" || !strings.HasPrefix(sp.by[engine.PartToolCall], "<tool_call>") || sp.all != res.Text {
		t.Errorf("hermes auto: streamed %q", sp.by)
	}
	again := generate(t, e, "", msgs, engine.WithTools(weatherTools, engine.ToolChoice{}), engine.WithSeed(7))
	if again.ToolCalls[0] != res.ToolCalls[0] {
		t.Errorf("same seed, other call: %+v then %+v", res.ToolCalls[0], again.ToolCalls[0])
	}
	// Auto without a call: free text.
	f.script = []byte("It is sunny.")
	res = generate(t, e, "", msgs, engine.WithTools(weatherTools, engine.ToolChoice{}))
	if len(res.ToolCalls) != 0 || res.Content != "It is sunny." {
		t.Errorf("no call: calls %+v content %q", res.ToolCalls, res.Content)
	}
	// Required and named: constrained from the first token, whatever the
	// model wanted to write.
	res = generate(t, e, "", msgs, engine.WithTools(weatherTools, engine.ToolChoice{Mode: engine.ToolRequired}))
	checkCalls("required", res, "")
	res = generate(t, e, "", msgs, engine.WithTools(weatherTools, engine.ToolChoice{Mode: engine.ToolRequired, Name: "get_time"}))
	checkCalls("named", res, "get_time")
	if res.Content != "" {
		t.Errorf("named: content %q", res.Content)
	}

	// Llama 3: a JSON call at the start of the answer.
	f.tmpl = "<|start_header_id|> {% if tools %}"
	f.script = []byte(`{"name": "get_weather", "parameters": {"city": "Oslo", "unit": "C"}}`)
	res = generate(t, e, "", msgs, engine.WithTools(weatherTools, engine.ToolChoice{}))
	checkCalls("llama3", res, "get_weather")
	if res.ToolCalls[0].Arguments != `{"city":"Oslo","unit":"C"}` {
		t.Errorf("llama3: %+v", res.ToolCalls)
	}
	// A JSON-only call format gets the duplicate-key guard: the model
	// would repeat "x" (the schema allows other keys), the guard does not
	// let it.
	f.script = []byte(`{"name": "get_time", "parameters": {"zone": "Europe/Paris", "x": 1, "x": 2}}`)
	res = generate(t, e, "", msgs, engine.WithTools(weatherTools, engine.ToolChoice{}), engine.WithMaxTokens(200))
	checkCalls("llama3 guard", res, "get_time")
	if n := strings.Count(res.ToolCalls[0].Arguments, `"x":`); n > 1 {
		t.Errorf("llama3 guard: %d keys x in %s", n, res.ToolCalls[0].Arguments)
	}
	// ... and only there: JSON inside a sentence is text.
	f.script = []byte(`I would send {"name": "x"} to it.`)
	res = generate(t, e, "", msgs, engine.WithTools(weatherTools, engine.ToolChoice{}))
	if len(res.ToolCalls) != 0 || res.Content != string(f.script) {
		t.Errorf("llama3 text: calls %+v content %q", res.ToolCalls, res.Content)
	}

	// Mistral: [TOOL_CALLS] and a list of calls.
	f.tmpl = "[INST] [TOOL_CALLS]"
	f.script = []byte(`[TOOL_CALLS][{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}, {"name": "get_weather", "arguments": {"city": "Paris"}}]`)
	res = generate(t, e, "", msgs, engine.WithTools(weatherTools, engine.ToolChoice{}))
	checkCalls("mistral", res, "")
	if len(res.ToolCalls) != 2 || res.ToolCalls[0].Name != "get_time" || res.ToolCalls[1].Arguments != `{"city":"Paris"}` {
		t.Errorf("mistral: %+v", res.ToolCalls)
	}

	// Bad combinations and tools.
	for _, opts := range [][]engine.Option{
		{msgs, engine.WithTools(weatherTools, engine.ToolChoice{}), engine.WithSchema(nameSchema)},
		{engine.WithTools(weatherTools, engine.ToolChoice{})},
		{msgs, engine.WithTools([]engine.Tool{{Name: "a"}, {Name: "a"}}, engine.ToolChoice{})},
		{msgs, engine.WithTools(weatherTools, engine.ToolChoice{Mode: engine.ToolRequired, Name: "nope"})},
		{msgs, engine.WithTools([]engine.Tool{{Name: "a", Parameters: json.RawMessage(`[1]`)}}, engine.ToolChoice{})},
	} {
		if _, err := e.Generate(context.Background(), "", opts...); err == nil {
			t.Errorf("options %d: no error", len(opts))
		}
	}
	_, err := e.Generate(context.Background(), "", msgs, engine.WithTools([]engine.Tool{{Name: "bad", Parameters: json.RawMessage(`{"type":"object","properties":{"e":{"type":"string","format":"idn-email"}}}`)}}, engine.ToolChoice{Mode: engine.ToolRequired}))
	var tse *engine.ToolSchemaError
	if !errors.As(err, &tse) || tse.Tool != "bad" || !strings.Contains(err.Error(), "#/properties/e") {
		t.Errorf("unsupported keyword in a tool: %v", err)
	}
	if _, err := e.Generate(context.Background(), "hi", msgs); err == nil {
		t.Error("messages and a prompt: no error")
	}
}
