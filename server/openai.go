package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/structgen/structgen/engine"
)

// OpenAI's API: POST /v1/chat/completions, POST /v1/completions, GET
// /v1/models. Request fields the server does not use (user, metadata,
// store, service_tier, …) are ignored; fields whose meaning it cannot
// honour (logprobs, images, audio) are a 400.

type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	ResponseFormat      *responseFormat `json:"response_format"`
	Tools               []chatTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stop                json.RawMessage `json:"stop"`
	N                   *int            `json:"n"`
	Logprobs            bool            `json:"logprobs"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	openAISampling

	// structgen extensions.
	Grammar         string `json:"grammar"`
	Lenient         bool   `json:"lenient"`
	Whitespace      string `json:"whitespace"`
	ReasoningBudget *int   `json:"reasoning_budget"`
}

// openAISampling is OpenAI's sampling fields and the llama.cpp server's
// extensions (top_k, min_p, typical_p, repeat_penalty, repeat_last_n).
type openAISampling struct {
	Temperature      *float32 `json:"temperature"`
	TopP             *float32 `json:"top_p"`
	Seed             *int64   `json:"seed"`
	PresencePenalty  *float32 `json:"presence_penalty"`
	FrequencyPenalty *float32 `json:"frequency_penalty"`
	TopK             *int     `json:"top_k"`
	MinP             *float32 `json:"min_p"`
	TypicalP         *float32 `json:"typical_p"`
	RepeatPenalty    *float32 `json:"repeat_penalty"`
	RepeatLastN      *int     `json:"repeat_last_n"`
}

func (o *openAISampling) sampling() sampling {
	return sampling{Temperature: o.Temperature, TopP: o.TopP, Seed: o.Seed, PresencePenalty: o.PresencePenalty,
		FrequencyPenalty: o.FrequencyPenalty, TopK: o.TopK, MinP: o.MinP, TypicalP: o.TypicalP,
		RepeatPenalty: o.RepeatPenalty, RepeatLastN: o.RepeatLastN}
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// openAIJob starts a job with what chat and completions share: n, the
// sampler, the token budget and stop strings.
func (s *Server) openAIJob(n *int, sp openAISampling, budget *int, budgetName string, stop json.RawMessage) (*job, error) {
	j := &job{n: 1}
	if n != nil {
		j.n = *n
	}
	if maxN := min(engine.MaxChoices, s.engine().Model().Sequences()); j.n < 1 || j.n > maxN {
		return nil, badRequest("n", "invalid_value", "n = %d: want 1..%d (the server's parallel sequences)", j.n, maxN)
	}
	opts, err := s.params(sp.sampling(), "")
	if err != nil {
		return nil, err
	}
	j.opts = append(j.opts, opts...)
	if opts, err = s.maxTokens(budget, budgetName); err != nil {
		return nil, err
	}
	j.opts = append(j.opts, opts...)
	if opts, err = stops(stop, "stop"); err != nil {
		return nil, err
	}
	j.opts = append(j.opts, opts...)
	return j, nil
}

// anyObject is the schema of response_format json_object and Ollama's
// format "json": any JSON object.
var anyObject = json.RawMessage(`{"type":"object"}`)

// chatJob decodes and checks a chat request.
func (s *Server) chatJob(req *chatRequest) (*job, error) {
	if req.Logprobs {
		return nil, badRequest("logprobs", "unsupported", "logprobs are not supported")
	}
	budget := req.MaxCompletionTokens
	name := "max_completion_tokens"
	if budget == nil {
		budget, name = req.MaxTokens, "max_tokens"
	}
	j, err := s.openAIJob(req.N, req.openAISampling, budget, name, req.Stop)
	if err != nil {
		return nil, err
	}
	msgs, err := chatMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	j.opts = append(j.opts, engine.WithMessages(msgs...))
	var opts []engine.Option
	rb := req.ReasoningBudget
	if rb == nil {
		switch req.ReasoningEffort {
		case "", "medium", "high":
		case "none", "minimal":
			rb = new(int)
		case "low":
			rb = new(int)
			*rb = 512
		default:
			return nil, badRequest("reasoning_effort", "invalid_value", "reasoning_effort %q: want none, minimal, low, medium or high", req.ReasoningEffort)
		}
	}
	if opts, err = s.reasoning(rb, "reasoning_budget"); err != nil {
		return nil, err
	}
	j.opts = append(j.opts, opts...)
	if err := s.constraint(j, req.ResponseFormat, req.Grammar, req.Lenient, req.Whitespace); err != nil {
		return nil, err
	}
	if len(req.Tools) > 0 {
		tools, choice, err := s.chatTools(req)
		if err != nil {
			return nil, err
		}
		j.opts = append(j.opts, engine.WithTools(tools, choice))
		if choice.Mode != engine.ToolNone {
			if j.constrained {
				return nil, badRequest("tool_choice", "unsupported", "response_format or grammar with tools goes with tool_choice \"none\" only (the answer is either a tool call or text)")
			}
			j.constrained, j.tools, j.param = true, true, "tools"
		}
	} else if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" && string(req.ToolChoice) != `"none"` && string(req.ToolChoice) != `"auto"` {
		return nil, badRequest("tool_choice", "invalid_value", "tool_choice without tools")
	}
	return j, nil
}

// constraint adds the response format or grammar of a request.
func (s *Server) constraint(j *job, rf *responseFormat, grammar string, lenient bool, ws string) error {
	if grammar != "" && rf != nil && rf.Type != "" && rf.Type != "text" {
		return badRequest("grammar", "invalid_value", "give grammar or response_format, not both")
	}
	switch ws {
	case "", "compact":
	case "flexible":
		j.opts = append(j.opts, engine.WithWhitespace(engine.Flexible))
	default:
		return badRequest("whitespace", "invalid_value", "whitespace %q: want compact or flexible", ws)
	}
	j.opts = append(j.opts, engine.WithLenient(lenient))
	if grammar != "" {
		opt, err := s.grammarOption(grammar, "grammar")
		if err != nil {
			return err
		}
		j.opts, j.param, j.constrained = append(j.opts, opt), "grammar", true
		return nil
	}
	if rf == nil {
		return nil
	}
	switch rf.Type {
	case "", "text":
		return nil
	case "json_object":
		j.opts, j.param, j.constrained = append(j.opts, engine.WithSchema(anyObject)), "response_format", true
	case "json_schema":
		if rf.JSONSchema == nil {
			return badRequest("response_format.json_schema", "invalid_value", "response_format json_schema needs a json_schema object")
		}
		opt, err := s.schemaOption(rf.JSONSchema.Schema, "response_format.json_schema.schema")
		if err != nil {
			return err
		}
		j.opts, j.param, j.constrained = append(j.opts, opt), "response_format.json_schema.schema", true
	default:
		return badRequest("response_format.type", "invalid_value", "response_format type %q: want text, json_object or json_schema", rf.Type)
	}
	return nil
}

// chatMessages converts OpenAI messages.
func chatMessages(in []chatMessage) ([]engine.Message, error) {
	if len(in) == 0 {
		return nil, badRequest("messages", "invalid_value", "messages is empty")
	}
	if len(in) > engine.MaxMessages {
		return nil, badRequest("messages", "invalid_value", "%d messages, more than %d", len(in), engine.MaxMessages)
	}
	out := make([]engine.Message, len(in))
	for i, m := range in {
		param := fmt.Sprintf("messages[%d]", i)
		text, err := contentText(m.Content, param+".content")
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return nil, badRequest(param+".role", "invalid_value", "%s.role %q: want system, developer, user, assistant or tool", param, m.Role)
		}
		em := engine.Message{Role: m.Role, Content: text, ToolCallID: m.ToolCallID, Name: m.Name}
		for k, c := range m.ToolCalls {
			if c.Function.Name == "" {
				return nil, badRequest(fmt.Sprintf("%s.tool_calls[%d].function.name", param, k), "invalid_value", "a tool call without a function name")
			}
			args := strings.TrimSpace(c.Function.Arguments)
			if args != "" && !json.Valid([]byte(args)) {
				return nil, badRequest(fmt.Sprintf("%s.tool_calls[%d].function.arguments", param, k), "invalid_value", "arguments are not JSON")
			}
			em.ToolCalls = append(em.ToolCalls, engine.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
		out[i] = em
	}
	return out, nil
}

// contentText reads a message's content: a string, null, or a list of
// text parts.
func contentText(raw json.RawMessage, param string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var text string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", badRequest(param, "invalid_type", "%s: %v", param, err)
		}
		return text, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param, "invalid_type", "%s must be a string or a list of content parts", param)
	}
	var b strings.Builder
	for k, p := range parts {
		if p.Type != "text" {
			return "", badRequest(fmt.Sprintf("%s[%d].type", param, k), "unsupported", "content part of type %q: only text is supported", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// chatTools converts tools and tool_choice.
func (s *Server) chatTools(req *chatRequest) ([]engine.Tool, engine.ToolChoice, error) {
	var choice engine.ToolChoice
	if len(req.Tools) > engine.MaxTools {
		return nil, choice, badRequest("tools", "invalid_value", "%d tools, more than %d", len(req.Tools), engine.MaxTools)
	}
	tools := make([]engine.Tool, len(req.Tools))
	for i, t := range req.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return nil, choice, badRequest(param+".type", "invalid_value", "tool type %q: want function", t.Type)
		}
		if t.Function.Name == "" {
			return nil, choice, badRequest(param+".function.name", "invalid_value", "a tool without a name")
		}
		tools[i] = engine.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
	}
	if err := s.toolsSize(tools, "tools"); err != nil {
		return nil, choice, err
	}
	tc := bytes.TrimSpace(req.ToolChoice)
	var mode string
	switch {
	case len(tc) == 0 || string(tc) == "null":
		mode = "auto"
	case tc[0] == '"':
		_ = json.Unmarshal(tc, &mode)
	default:
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(tc, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
			return nil, choice, badRequest("tool_choice", "invalid_value", `tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}`)
		}
		choice.Mode, choice.Name = engine.ToolRequired, named.Function.Name
	}
	switch mode {
	case "":
	case "auto":
		choice.Mode = engine.ToolAuto
	case "required":
		choice.Mode = engine.ToolRequired
	case "none":
		choice.Mode = engine.ToolNone
	default:
		return nil, choice, badRequest("tool_choice", "invalid_value", "tool_choice %q: want none, auto or required", mode)
	}
	if choice.Name != "" {
		found := false
		for _, t := range tools {
			found = found || t.Name == choice.Name
		}
		if !found {
			return nil, choice, badRequest("tool_choice", "invalid_value", "tool_choice names %q, which is not among the tools", choice.Name)
		}
	}
	choice.Single = req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	return tools, choice, nil
}

// Responses.

type chatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             *usage       `json:"usage,omitempty"`
	Warnings          []string     `json:"structgen_warnings,omitempty"`
}

type chatChoice struct {
	Index        int          `json:"index"`
	Message      *respMessage `json:"message,omitempty"`
	Delta        *respMessage `json:"delta,omitempty"`
	FinishReason *string      `json:"finish_reason"`
	Logprobs     *struct{}    `json:"logprobs"`
}

type respMessage struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	Refusal          *string        `json:"refusal,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func toolCalls(calls []engine.ToolCall) []chatToolCall {
	out := make([]chatToolCall, len(calls))
	for i, c := range calls {
		idx := i
		out[i] = chatToolCall{Index: &idx, ID: c.ID, Type: "function"}
		out[i].Function.Name, out[i].Function.Arguments = c.Name, c.Arguments
	}
	return out
}

// warnings lists what lenient conversion relaxed and a validation
// failure, if any (extension field structgen_warnings).
func warnings(res []*engine.Result) []string {
	var out []string
	for _, r := range res {
		for _, w := range r.Warnings {
			out = append(out, w.String())
		}
		break
	}
	return out
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, info *reqInfo) error {
	var req chatRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	j, err := s.chatJob(&req)
	if err != nil {
		return err
	}
	id, created := newID("chatcmpl-"), time.Now().Unix()
	base := chatResponse{ID: id, Created: created, Model: s.cfg.ModelName, SystemFingerprint: "structgen"}
	if !req.Stream {
		res, err := s.run(r.Context(), j, info, nil)
		if err != nil {
			return err
		}
		resp := base
		resp.Object = "chat.completion"
		resp.Usage = usageOf(res)
		resp.Warnings = warnings(res)
		for i, rr := range res {
			content := rr.Content
			m := &respMessage{Role: "assistant", Content: &content, ReasoningContent: rr.Reasoning}
			if len(rr.ToolCalls) > 0 {
				m.ToolCalls = toolCalls(rr.ToolCalls)
				if content == "" {
					m.Content = nil
				}
			}
			fr := finish(j, rr)
			resp.Choices = append(resp.Choices, chatChoice{Index: i, Message: m, FinishReason: &fr})
		}
		return writeJSON(w, http.StatusOK, resp)
	}

	// Streaming: server-sent events, opened at the first piece (so that
	// errors before it, a bad schema or a full queue, get their status).
	info.streamed = true
	sse := &sseWriter{w: w}
	base.Object = "chat.completion.chunk"
	started := make([]bool, j.n)
	chunk := func(choice int, d *respMessage, fr *string) error {
		c := base
		if !started[choice] {
			started[choice] = true
			empty := ""
			if err := sse.event(withChoice(c, chatChoice{Index: choice, Delta: &respMessage{Role: "assistant", Content: &empty}})); err != nil {
				return err
			}
		}
		if d == nil && fr == nil {
			return nil
		}
		if d == nil {
			d = &respMessage{}
		}
		return sse.event(withChoice(c, chatChoice{Index: choice, Delta: d, FinishReason: fr}))
	}
	held := utf8Buf{}
	res, err := s.run(r.Context(), j, info, func(choice int, part engine.Part, piece []byte) error {
		var d respMessage
		switch part {
		case engine.PartContent:
			text := held.take(choice, part, piece)
			if text == "" {
				return nil
			}
			d.Content = &text
		case engine.PartReasoning:
			if d.ReasoningContent = held.take(choice, part, piece); d.ReasoningContent == "" {
				return nil
			}
		default:
			return nil // tool calls come whole at the end; markers are not content
		}
		return chunk(choice, &d, nil)
	})
	if err != nil {
		return err
	}
	for i, rr := range res {
		// What the UTF-8 buffers held: a last incomplete character.
		if rest := held.rest(i, engine.PartReasoning); rest != "" {
			if err := chunk(i, &respMessage{ReasoningContent: rest}, nil); err != nil {
				return err
			}
		}
		if rest := held.rest(i, engine.PartContent); rest != "" {
			if err := chunk(i, &respMessage{Content: &rest}, nil); err != nil {
				return err
			}
		}
		if len(rr.ToolCalls) > 0 {
			if err := chunk(i, &respMessage{ToolCalls: toolCalls(rr.ToolCalls)}, nil); err != nil {
				return err
			}
		}
		fr := finish(j, rr)
		if err := chunk(i, nil, &fr); err != nil {
			return err
		}
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		c := base
		c.Choices = []chatChoice{}
		c.Usage = usageOf(res)
		if err := sse.event(c); err != nil {
			return err
		}
	}
	return sse.done()
}

func withChoice(c chatResponse, ch chatChoice) chatResponse {
	c.Choices = []chatChoice{ch}
	return c
}

func usageOf(res []*engine.Result) *usage {
	u := &usage{}
	for _, r := range res {
		u.PromptTokens = r.Stats.PromptTokens
		u.CompletionTokens += r.Stats.Tokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// sseWriter writes server-sent events, sending the headers with the first.
type sseWriter struct {
	w       http.ResponseWriter
	started bool
}

func (e *sseWriter) event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.write("data: " + string(b) + "\n\n")
}

func (e *sseWriter) done() error { return e.write("data: [DONE]\n\n") }

func (e *sseWriter) write(s string) error {
	if !e.started {
		e.started = true
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
	}
	if _, err := e.w.Write([]byte(s)); err != nil {
		return err
	}
	return http.NewResponseController(e.w).Flush()
}

// Completions (prompt in, text out).

type completionRequest struct {
	Model          string          `json:"model"`
	Prompt         json.RawMessage `json:"prompt"`
	MaxTokens      *int            `json:"max_tokens"`
	Stop           json.RawMessage `json:"stop"`
	N              *int            `json:"n"`
	Stream         bool            `json:"stream"`
	StreamOptions  *streamOptions  `json:"stream_options"`
	Echo           bool            `json:"echo"`
	Suffix         string          `json:"suffix"`
	Logprobs       *int            `json:"logprobs"`
	BestOf         *int            `json:"best_of"`
	ResponseFormat *responseFormat `json:"response_format"`
	openAISampling

	Grammar    string `json:"grammar"`
	Lenient    bool   `json:"lenient"`
	Whitespace string `json:"whitespace"`
}

// defaultCompletionTokens is OpenAI's default max_tokens of
// /v1/completions.
const defaultCompletionTokens = 16

type completionChoice struct {
	Text         string    `json:"text"`
	Index        int       `json:"index"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type completionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             *usage             `json:"usage,omitempty"`
	Warnings          []string           `json:"structgen_warnings,omitempty"`
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request, info *reqInfo) error {
	var req completionRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	var prompt string
	var list []string
	switch p := bytes.TrimSpace(req.Prompt); {
	case len(p) == 0 || string(p) == "null":
		return badRequest("prompt", "invalid_value", "prompt is missing")
	case json.Unmarshal(p, &prompt) == nil:
	case json.Unmarshal(p, &list) == nil && len(list) == 1:
		prompt = list[0]
	default:
		return badRequest("prompt", "unsupported", "prompt must be one string (token arrays and several prompts per request are not supported)")
	}
	switch {
	case req.Echo || req.Suffix != "":
		return badRequest("echo", "unsupported", "echo and suffix are not supported")
	case req.Logprobs != nil:
		return badRequest("logprobs", "unsupported", "logprobs are not supported")
	case req.BestOf != nil && *req.BestOf != 1:
		return badRequest("best_of", "unsupported", "best_of is not supported")
	}
	budget := req.MaxTokens
	if budget == nil {
		budget = new(int)
		*budget = defaultCompletionTokens
	}
	j, err := s.openAIJob(req.N, req.openAISampling, budget, "max_tokens", req.Stop)
	if err != nil {
		return err
	}
	j.prompt = prompt
	if err := s.constraint(j, req.ResponseFormat, req.Grammar, req.Lenient, req.Whitespace); err != nil {
		return err
	}
	id, created := newID("cmpl-"), time.Now().Unix()
	base := completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.cfg.ModelName, SystemFingerprint: "structgen"}
	if !req.Stream {
		res, err := s.run(r.Context(), j, info, nil)
		if err != nil {
			return err
		}
		resp := base
		resp.Usage, resp.Warnings = usageOf(res), warnings(res)
		for i, rr := range res {
			fr := finish(j, rr)
			resp.Choices = append(resp.Choices, completionChoice{Text: rr.Text, Index: i, FinishReason: &fr})
		}
		return writeJSON(w, http.StatusOK, resp)
	}
	info.streamed = true
	sse := &sseWriter{w: w}
	held := utf8Buf{}
	res, err := s.run(r.Context(), j, info, func(choice int, part engine.Part, piece []byte) error {
		text := held.take(choice, engine.PartContent, piece)
		if text == "" {
			return nil
		}
		c := base
		c.Choices = []completionChoice{{Text: text, Index: choice}}
		return sse.event(c)
	})
	if err != nil {
		return err
	}
	for i, rr := range res {
		fr := finish(j, rr)
		c := base
		c.Choices = []completionChoice{{Text: held.rest(i, engine.PartContent), Index: i, FinishReason: &fr}}
		if err := sse.event(c); err != nil {
			return err
		}
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		c := base
		c.Choices = []completionChoice{}
		c.Usage = usageOf(res)
		if err := sse.event(c); err != nil {
			return err
		}
	}
	return sse.done()
}

// Models.

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) modelObject() modelObject {
	return modelObject{ID: s.cfg.ModelName, Object: "model", Created: s.cfg.Created.Unix(), OwnedBy: "structgen"}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	return writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []modelObject{s.modelObject()}})
}

func (s *Server) model(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	if id := r.PathValue("id"); id != s.cfg.ModelName {
		return &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("the model %q does not exist (this server serves %q)", id, s.cfg.ModelName), typ: "invalid_request_error", param: "model", code: "model_not_found"}
	}
	return writeJSON(w, http.StatusOK, s.modelObject())
}
