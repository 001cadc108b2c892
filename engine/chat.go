package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrNoChatTemplate reports WithChat on a model without a chat template.
var ErrNoChatTemplate = errors.New("engine: the model has no chat template")

// ErrUnknownChatTemplate reports a chat template of a family FormatChat
// does not know.
var ErrUnknownChatTemplate = errors.New("engine: unsupported chat template")

// Limits of conversations (WithMessages, WithTools).
const (
	// MaxMessages bounds the messages of a conversation: each is rendered
	// and tokenized, and real conversations that fit a context window have
	// hundreds at most.
	MaxMessages = 4096
	// MaxTools bounds the tools of a request: their schemas become one
	// grammar (128 realistic tools compile in well under 100 ms; see
	// BenchmarkTools), and OpenAI's own limit is 128.
	MaxTools = 512
	// MaxToolNameLen bounds a tool's name (OpenAI allows 64 characters of
	// [a-zA-Z0-9_-]; names with dots are common in MCP tools).
	MaxToolNameLen = 128
)

// Message is one message of a conversation (WithMessages).
type Message struct {
	// Role is "system", "user", "assistant" or "tool" ("developer" is
	// read as "system").
	Role    string
	Content string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID and Name identify the call a tool message answers.
	ToolCallID string
	Name       string
}

// Tool is a function the model may call (WithTools).
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object; empty means
	// any object.
	Parameters json.RawMessage
}

// ToolCall is a call of a tool: in a conversation (an assistant message's
// calls) or parsed from the output (Result.ToolCalls).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // a JSON object
}

// A chatFamily writes conversations in one family's chat format, as
// llama.cpp's llama_chat_apply_template does: the family is recognized by
// markers of the model's Jinja template, which is not run.
type chatFamily struct {
	name   string
	marker func(tmpl string) bool
	// turn writes one message (roles already normalized).
	turn func(b *strings.Builder, m *Message)
	// prompt writes the start of the assistant's answer.
	prompt string
	// system says how a system message is written: in its own turn
	// (own), or before the first user message's text (merged).
	merged bool
	tools  toolFormat
}

var chatFamilies = []*chatFamily{
	{
		name:   "llama3",
		marker: func(t string) bool { return strings.Contains(t, "<|start_header_id|>") },
		turn: func(b *strings.Builder, m *Message) {
			role := m.Role
			if role == "tool" {
				role = "ipython"
			}
			fmt.Fprintf(b, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", role, strings.TrimSpace(m.Content))
		},
		prompt: "<|start_header_id|>assistant<|end_header_id|>\n\n",
		tools:  toolLlama3,
	},
	{
		name:   "chatml",
		marker: func(t string) bool { return strings.Contains(t, "<|im_start|>") },
		turn: func(b *strings.Builder, m *Message) {
			fmt.Fprintf(b, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
		},
		prompt: "<|im_start|>assistant\n",
		tools:  toolHermes,
	},
	{
		name:   "gemma",
		marker: func(t string) bool { return strings.Contains(t, "<start_of_turn>") },
		turn: func(b *strings.Builder, m *Message) {
			role := m.Role
			if role == "assistant" {
				role = "model"
			}
			fmt.Fprintf(b, "<start_of_turn>%s\n%s<end_of_turn>\n", role, strings.TrimSpace(m.Content))
		},
		prompt: "<start_of_turn>model\n",
		merged: true,
		tools:  toolHermes,
	},
	{
		name:   "phi3",
		marker: func(t string) bool { return strings.Contains(t, "<|user|>") && strings.Contains(t, "<|end|>") },
		turn: func(b *strings.Builder, m *Message) {
			fmt.Fprintf(b, "<|%s|>\n%s<|end|>\n", m.Role, m.Content)
		},
		prompt: "<|assistant|>\n",
		tools:  toolHermes,
	},
	{
		name:   "mistral",
		marker: func(t string) bool { return strings.Contains(t, "[INST]") },
		turn: func(b *strings.Builder, m *Message) {
			switch m.Role {
			case "assistant":
				fmt.Fprintf(b, " %s</s>", strings.TrimSpace(m.Content))
			default:
				fmt.Fprintf(b, "[INST] %s [/INST]", strings.TrimSpace(m.Content))
			}
		},
		merged: true,
		tools:  toolMistral,
	},
}

// chatML is the format of models without a chat template (llama.cpp's
// server does the same).
var chatML = chatFamilies[1]

// familyOf recognizes the family of a chat template; "" is ChatML.
func familyOf(template string) (*chatFamily, error) {
	if template == "" {
		return chatML, nil
	}
	for _, f := range chatFamilies {
		if f.marker(template) {
			return f, nil
		}
	}
	head := template
	if len(head) > 40 {
		head = head[:40] + "…"
	}
	return nil, fmt.Errorf("%w (starts %q): format the prompt yourself", ErrUnknownChatTemplate, head)
}

// thinkMarkers returns the markers of a template's thinking block
// (reasoning models write <think>…</think> before their answer), or "".
func thinkMarkers(template string) (start, end string) {
	if strings.Contains(template, "<think>") && strings.Contains(template, "</think>") {
		return "<think>", "</think>"
	}
	return "", ""
}

// FormatChat renders a system message (optional) and one user message in
// the chat format of template (the model's Jinja chat template), ending
// where the assistant's answer starts. Like llama.cpp's
// llama_chat_apply_template it does not run Jinja: it recognizes the
// template's family by its markers and writes that family's format:
//
//	Llama 3      <|start_header_id|>   (Llama 3.x Instruct)
//	ChatML       <|im_start|>          (Qwen, Hermes, many fine-tunes)
//	Gemma        <start_of_turn>       (system text goes into the user turn)
//	Phi-3        <|user|> ... <|end|>
//	Mistral      [INST]                (Llama 2, Mistral: system text before the user's)
//
// The result holds special-token text (parse it with parseSpecial) and no
// BOS: tokenizing with addSpecial adds it. RenderChat renders whole
// conversations with tools, running the template's Jinja.
func FormatChat(template, system, user string) (string, error) {
	if template == "" {
		return "", ErrNoChatTemplate
	}
	var msgs []Message
	if system != "" {
		msgs = append(msgs, Message{Role: "system", Content: system})
	}
	f, err := familyOf(template)
	if err != nil {
		return "", err
	}
	return f.render(append(msgs, Message{Role: "user", Content: user}), nil, toolFormatOf(template, f))
}

// RenderChat renders a conversation, and the tools the model may call,
// with the model's chat template, ending where the assistant's answer
// starts (the generation prompt). It runs the template's Jinja (gonja, set
// up as Hugging Face transformers' apply_chat_template: trim_blocks,
// lstrip_blocks, raise_exception, strftime_now, and a tojson that writes
// what Python's json.dumps writes, keys in the client's order), so that
// tools and earlier calls are described in the template's own words. When
// gonja cannot run the template, or its output lacks the user's messages,
// the template's family format is written instead (see FormatChat; "" is
// ChatML, as llama.cpp's server uses for models without a template): tools
// as the family's templates describe them (Qwen/Hermes <tools> in the
// system message, Llama 3.x JSON in the first user message, Mistral
// [AVAILABLE_TOOLS]), or with Hermes-style instructions in the system
// message for families without tool calls of their own; earlier calls and
// their results in the family's tool-call format (see WithTools).
//
// The result holds special-token text (parse it with parseSpecial) and no
// BOS token: tokenizing with addSpecial adds it.
func RenderChat(template string, msgs []Message, tools []Tool) (string, error) {
	text, _, err := renderConversation(template, msgs, tools, chatTokens{}, true)
	return text, err
}

// renderConversation renders with the template's Jinja, or its family's
// format when that fails (jinja false), stripping a leading BOS.
func renderConversation(template string, msgs []Message, tools []Tool, tok chatTokens, thinking bool) (text string, jinja bool, err error) {
	if err := checkMessages(msgs); err != nil {
		return "", false, err
	}
	f, ferr := familyOf(template)
	if template != "" {
		out, err := jinjaChat(template, msgs, tools, tok, thinking)
		if err == nil && rendersUsers(out, msgs) {
			if tok.bos != "" {
				out = strings.TrimPrefix(out, tok.bos)
			}
			if f != nil && f.prompt != "" && !strings.HasSuffix(out, f.prompt) && !strings.HasSuffix(strings.TrimRight(out, " \n"), strings.TrimRight(f.prompt, " \n")) {
				out += f.prompt // a template without a generation prompt
			}
			return out, true, nil
		}
	}
	if ferr != nil {
		return "", false, ferr
	}
	text, err = f.render(msgs, tools, toolFormatOf(template, f))
	return text, false, err
}

// rendersUsers reports whether out holds the text of every user message
// (a template that does not is not a chat template gonja can run).
func rendersUsers(out string, msgs []Message) bool {
	for _, m := range msgs {
		if c := strings.TrimSpace(m.Content); m.Role == "user" && c != "" && !strings.Contains(out, c) {
			return false
		}
	}
	return true
}

// checkMessages checks roles and the message count.
func checkMessages(msgs []Message) error {
	if len(msgs) == 0 {
		return &OptionError{"WithMessages", "no messages"}
	}
	if len(msgs) > MaxMessages {
		return &OptionError{"WithMessages", fmt.Sprintf("%d messages, more than %d", len(msgs), MaxMessages)}
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return &OptionError{"WithMessages", fmt.Sprintf("message %d: unknown role %q (want system, user, assistant or tool)", i, m.Role)}
		}
	}
	return nil
}

// render writes the conversation in f's format with tool format tf.
func (f *chatFamily) render(msgs []Message, tools []Tool, tf toolFormat) (string, error) {
	var system []string
	var rest []Message
	for _, m := range msgs {
		if m.Role == "system" || m.Role == "developer" {
			if len(rest) == 0 {
				system = append(system, m.Content)
				continue
			}
			m.Role = "system"
		}
		rest = append(rest, m)
	}
	sys := strings.Join(system, "\n\n")
	var b strings.Builder
	// Tools are described where the family's templates put them.
	userPrefix := ""
	if len(tools) > 0 {
		switch tf {
		case toolLlama3:
			userPrefix = llama3ToolPrompt(tools)
		case toolMistral:
			// [AVAILABLE_TOOLS] goes right before the last user message.
		default:
			sys = hermesToolPrompt(sys, tools)
		}
	}
	lastUser := -1
	for i, m := range rest {
		if m.Role == "user" {
			lastUser = i
		}
	}
	first := true
	write := func(m Message) {
		f.turn(&b, &m)
		first = false
	}
	if sys != "" && !f.merged {
		write(Message{Role: "system", Content: sys})
	}
	pendingTool := []Message(nil) // consecutive tool results (Hermes: one user turn)
	flushTools := func() {
		if len(pendingTool) == 0 {
			return
		}
		var c strings.Builder
		for i, m := range pendingTool {
			if i > 0 {
				c.WriteByte('\n')
			}
			fmt.Fprintf(&c, "<tool_response>\n%s\n</tool_response>", m.Content)
		}
		write(Message{Role: "user", Content: c.String()})
		pendingTool = nil
	}
	for i, m := range rest {
		if m.Role != "tool" {
			flushTools()
		}
		switch m.Role {
		case "user":
			if first && f.merged && sys != "" {
				m.Content = sys + "\n\n" + m.Content
				sys = ""
			}
			if userPrefix != "" {
				m.Content = userPrefix + m.Content
				userPrefix = ""
			}
			if tf == toolMistral && len(tools) > 0 && i == lastUser {
				b.WriteString("[AVAILABLE_TOOLS]" + mistralTools(tools) + "[/AVAILABLE_TOOLS]")
			}
			write(m)
		case "assistant":
			if len(m.ToolCalls) > 0 {
				m.Content = tf.writeCalls(m.Content, m.ToolCalls)
				if tf == toolMistral {
					b.WriteString(m.Content + "</s>")
					first = false
					continue
				}
			}
			write(m)
		case "tool":
			switch tf {
			case toolLlama3:
				write(m)
			case toolMistral:
				content, _ := json.Marshal(m.Content)
				id, _ := json.Marshal(m.ToolCallID)
				fmt.Fprintf(&b, `[TOOL_RESULTS]{"content": %s, "call_id": %s}[/TOOL_RESULTS]`, content, id)
				first = false
			default:
				pendingTool = append(pendingTool, m)
			}
		default: // a system message after the first turn
			if f.merged {
				m.Role = "user"
			}
			write(m)
		}
	}
	flushTools()
	if sys != "" && f.merged {
		// Only system messages: write them as a user turn.
		write(Message{Role: "user", Content: sys})
	}
	b.WriteString(f.prompt)
	return b.String(), nil
}

// pyJSON re-encodes the JSON value raw the way Python's json.dumps does
// with its defaults (", " and ": " separators, keys in their order, no
// escaping of non-ASCII or HTML characters): how chat templates print
// tools and arguments (tojson), and so what models saw in training.
func pyJSON(raw []byte) (string, error) {
	v, err := decodeOrdered(raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	writePy(&b, v, nil, 0, 0)
	return b.String(), nil
}

// writeJSONString writes s as a JSON string without HTML escaping.
func writeJSONString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
