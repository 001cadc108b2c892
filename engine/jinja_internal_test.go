package engine

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// gonja, set up as transformers' apply_chat_template, renders real chat
// templates exactly as Python's Jinja2 does (testdata/chat/goldens.json,
// written by testdata/chat/gen.py: the 37 templates Ollama recognizes, two
// recent ones, and Qwen 2.5's and Llama 3.1's tool templates), with tools,
// earlier tool calls and their results, and thinking switched off. A
// template gonja cannot run falls back to the family format.
func TestJinjaGoldens(t *testing.T) {
	b, err := os.ReadFile("testdata/chat/goldens.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Templates []struct{ Name, Template string }
		Cases     []struct {
			Template, Conv, Want, Error string
			Thinking                    bool
		}
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	jinjaNow = func() time.Time { return time.Date(2026, 11, 24, 9, 5, 7, 0, time.UTC) }
	defer func() { jinjaNow = time.Now }()
	tmpl := map[string]string{}
	for _, x := range g.Templates {
		tmpl[x.Name] = x.Template
	}
	tools := []Tool{
		{Name: "get_weather", Description: "Weather of a city", Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string", "description": "City, e.g. Paris"}, "unit": {"enum": ["C", "F"]}}, "required": ["city"]}`)},
		{Name: "zoom", Parameters: json.RawMessage(`{"type": "object", "properties": {"level": {"type": "number", "minimum": 0.5}}}`)},
	}
	convs := map[string][]Message{
		"chat": {{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Hi there"}, {Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "An order, please."}},
		"tools": {{Role: "system", Content: "Use tools."}, {Role: "user", Content: "Weather in Paris?"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"unit": "C", "city": "Paris"}`}}},
			{Role: "tool", ToolCallID: "call_1", Name: "get_weather", Content: `{"temp": 21}`},
			{Role: "user", Content: "And tomorrow?"}},
	}
	same, refused, differ := 0, 0, 0
	for _, c := range g.Cases {
		var tl []Tool
		if c.Conv == "tools" {
			tl = tools
		}
		got, err := jinjaChat(tmpl[c.Template], convs[c.Conv], tl, chatTokens{bos: "<s>", eos: "</s>"}, c.Thinking)
		switch {
		case c.Error != "" && err != nil:
			same++ // both refuse (raise_exception, unsupported roles)
		case c.Error != "":
			t.Errorf("%s/%s: Jinja2 fails (%s), gonja renders %q", c.Template, c.Conv, c.Error, got)
			differ++
		case err != nil:
			// gonja cannot run it: RenderChat falls back to the family.
			refused++
			t.Logf("%s/%s: gonja: %v", c.Template, c.Conv, firstLine(err.Error()))
			if _, _, ferr := renderConversation(tmpl[c.Template], convs[c.Conv], tl, chatTokens{}, c.Thinking); ferr != nil {
				if _, fe := familyOf(tmpl[c.Template]); fe == nil {
					t.Errorf("%s/%s: no fallback: %v", c.Template, c.Conv, ferr)
				}
			}
		case got != c.Want:
			t.Errorf("%s/%s (thinking %v):\ngonja  %q\nJinja2 %q", c.Template, c.Conv, c.Thinking, got, c.Want)
			differ++
		default:
			same++
		}
	}
	t.Logf("%d cases: %d as Jinja2 renders them, %d refused by gonja (family format instead), %d different", len(g.Cases), same, refused, differ)
	if refused > len(g.Cases)/8 {
		t.Errorf("gonja refused %d of %d cases", refused, len(g.Cases))
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// How renderConversation uses gonja: the BOS the template prints is
// dropped (the tokenizer adds it), a template without a generation prompt
// gets its family's, and text that is not a chat template (it does not
// render the messages) falls back to the family format.
func TestRenderConversation(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "hi"}}
	tok := chatTokens{bos: "<s>", eos: "</s>"}
	for _, tc := range []struct {
		tmpl, want string
		jinja      bool
	}{
		{"{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
			"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", true},
		{"{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
			"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", true},
		{"<|start_header_id|> {{ tools }}", "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", false},
		{"<|im_start|>{% if %}", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", false},
	} {
		got, jinja, err := renderConversation(tc.tmpl, msgs, nil, tok, true)
		if err != nil || got != tc.want || jinja != tc.jinja {
			t.Errorf("%q: %q (jinja %v, %v), want %q (jinja %v)", tc.tmpl, got, jinja, err, tc.want, tc.jinja)
		}
	}
}
