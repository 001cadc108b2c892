package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/structgen/structgen/engine"
)

// Ollama's API: POST /api/chat, POST /api/generate, GET /api/tags, POST
// /api/show, GET /api/version, in the wire format of
// github.com/ollama/ollama/api (v0.24.0). Responses stream as NDJSON by
// default (stream: false for one object); errors are {"error": "..."}.

// ollamaVersionString is what /api/version reports: the Ollama API
// version whose wire format the server speaks.
const ollamaVersionString = "0.24.0"

type ollamaMessage struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	Thinking   string            `json:"thinking,omitempty"`
	Images     []json.RawMessage `json:"images,omitempty"`
	ToolCalls  []ollamaToolCall  `json:"tool_calls,omitempty"`
	ToolName   string            `json:"tool_name,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaRequest struct {
	Model    string            `json:"model"`
	Messages []ollamaMessage   `json:"messages"` // /api/chat
	Prompt   string            `json:"prompt"`   // /api/generate
	System   string            `json:"system"`
	Template string            `json:"template"`
	Raw      bool              `json:"raw"`
	Suffix   string            `json:"suffix"`
	Images   []json.RawMessage `json:"images"`
	Context  []int             `json:"context"`
	Stream   *bool             `json:"stream"`
	Format   json.RawMessage   `json:"format"`
	Tools    []chatTool        `json:"tools"`
	Options  map[string]any    `json:"options"`
	Think    json.RawMessage   `json:"think"`
	// KeepAlive, Truncate, Shift, Logprobs… are accepted and ignored
	// (the model stays loaded; prompts beyond the context are an error).

	// structgen extensions, as on the OpenAI endpoints.
	Grammar    string `json:"grammar"`
	Lenient    bool   `json:"lenient"`
	Whitespace string `json:"whitespace"`
}

type ollamaResponse struct {
	Model      string         `json:"model"`
	CreatedAt  time.Time      `json:"created_at"`
	Message    *ollamaMessage `json:"message,omitempty"`  // /api/chat
	Response   *string        `json:"response,omitempty"` // /api/generate
	Thinking   string         `json:"thinking,omitempty"` // /api/generate
	Done       bool           `json:"done"`
	DoneReason string         `json:"done_reason,omitempty"`

	TotalDuration      time.Duration `json:"total_duration,omitempty"`
	LoadDuration       time.Duration `json:"load_duration,omitempty"`
	PromptEvalCount    int           `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration time.Duration `json:"prompt_eval_duration,omitempty"`
	EvalCount          int           `json:"eval_count,omitempty"`
	EvalDuration       time.Duration `json:"eval_duration,omitempty"`
}

// ollamaOptions reads the options the server honours; num_ctx and the
// runner's settings (num_gpu, num_thread, …) are the server's, and are
// ignored, as are options Ollama itself does not know.
func (s *Server) ollamaOptions(opts map[string]any) (sampling, *int, []engine.Option, error) {
	var sp sampling
	var numPredict *int
	var stopOpts []engine.Option
	num := func(k string) (float64, bool, error) {
		v, ok := opts[k]
		if !ok || v == nil {
			return 0, false, nil
		}
		f, isNum := v.(float64)
		if !isNum {
			return 0, false, badRequest("options."+k, "invalid_type", "options.%s must be a number, not %v", k, v)
		}
		return f, true, nil
	}
	f32 := func(k string, dst **float32) error {
		f, ok, err := num(k)
		if ok {
			v := float32(f)
			*dst = &v
		}
		return err
	}
	integer := func(k string, dst **int) error {
		f, ok, err := num(k)
		if ok {
			if f != float64(int(f)) {
				return badRequest("options."+k, "invalid_type", "options.%s must be an integer, not %v", k, f)
			}
			v := int(f)
			*dst = &v
		}
		return err
	}
	var seed *int
	for _, err := range []error{
		f32("temperature", &sp.Temperature), f32("top_p", &sp.TopP), f32("min_p", &sp.MinP), f32("typical_p", &sp.TypicalP),
		f32("repeat_penalty", &sp.RepeatPenalty), f32("presence_penalty", &sp.PresencePenalty), f32("frequency_penalty", &sp.FrequencyPenalty),
		integer("top_k", &sp.TopK), integer("repeat_last_n", &sp.RepeatLastN), integer("seed", &seed), integer("num_predict", &numPredict),
	} {
		if err != nil {
			return sp, nil, nil, err
		}
	}
	if seed != nil {
		v := int64(*seed)
		sp.Seed = &v
	}
	if numPredict != nil && *numPredict < 0 {
		numPredict = nil // -1 (no limit) and -2 (fill the context): the context bounds it
	}
	if v, ok := opts["stop"]; ok && v != nil {
		raw, _ := json.Marshal(v)
		var err error
		if stopOpts, err = stops(raw, "options.stop"); err != nil {
			return sp, nil, nil, err
		}
	}
	return sp, numPredict, stopOpts, nil
}

// ollamaJob decodes what /api/chat and /api/generate share.
func (s *Server) ollamaJob(req *ollamaRequest) (*job, error) {
	j := &job{n: 1}
	if len(req.Images) > 0 {
		return nil, badRequest("images", "unsupported", "images are not supported")
	}
	sp, numPredict, stopOpts, err := s.ollamaOptions(req.Options)
	if err != nil {
		return nil, err
	}
	opts, err := s.params(sp, "options.")
	if err != nil {
		return nil, err
	}
	j.opts = append(j.opts, opts...)
	if opts, err = s.maxTokens(numPredict, "options.num_predict"); err != nil {
		return nil, err
	}
	j.opts = append(append(j.opts, opts...), stopOpts...)
	var budget *int
	switch think := strings.TrimSpace(string(req.Think)); think {
	case "", "null", "true", `"high"`, `"medium"`, `"max"`:
	case "false":
		budget = new(int)
	case `"low"`:
		budget = new(int)
		*budget = 512
	default:
		return nil, badRequest("think", "invalid_value", "think must be true, false, \"low\", \"medium\", \"high\" or \"max\"")
	}
	if opts, err = s.reasoning(budget, "think"); err != nil {
		return nil, err
	}
	j.opts = append(j.opts, opts...)
	var rf *responseFormat
	switch f := bytes.TrimSpace(req.Format); {
	case len(f) == 0 || string(f) == "null" || string(f) == `""`:
	case string(f) == `"json"`:
		rf = &responseFormat{Type: "json_object"}
	case f[0] == '{':
		if len(f) > s.cfg.MaxGrammarBytes {
			return nil, badRequest("format", "schema_too_large", "format is %d bytes, more than the server's limit of %d (--max-grammar-bytes)", len(f), s.cfg.MaxGrammarBytes)
		}
		j.opts, j.param, j.constrained = append(j.opts, engine.WithSchema(f)), "format", true
	default:
		return nil, badRequest("format", "invalid_value", `format must be "json" or a JSON Schema object`)
	}
	if err := s.constraint(j, rf, req.Grammar, req.Lenient, req.Whitespace); err != nil {
		return nil, err
	}
	if rf != nil {
		j.param = "format"
	}
	return j, nil
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request, info *reqInfo) error {
	var req ollamaRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	j, err := s.ollamaJob(&req)
	if err != nil {
		return err
	}
	msgs := make([]engine.Message, len(req.Messages))
	if len(msgs) == 0 {
		// Ollama loads the model on an empty chat.
		return s.ollamaDone(w, req.Stream, &ollamaResponse{Message: &ollamaMessage{Role: "assistant"}, DoneReason: "load"})
	}
	if len(msgs) > engine.MaxMessages {
		return badRequest("messages", "invalid_value", "%d messages, more than %d", len(msgs), engine.MaxMessages)
	}
	for i, m := range req.Messages {
		if len(m.Images) > 0 {
			return badRequest(fmt.Sprintf("messages[%d].images", i), "unsupported", "images are not supported")
		}
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return badRequest(fmt.Sprintf("messages[%d].role", i), "invalid_value", "role %q: want system, user, assistant or tool", m.Role)
		}
		msgs[i] = engine.Message{Role: m.Role, Content: m.Content, Name: m.ToolName, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			args := string(bytes.TrimSpace(c.Function.Arguments))
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, engine.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
	}
	j.opts = append(j.opts, engine.WithMessages(msgs...))
	if len(req.Tools) > 0 {
		tools, _, err := s.chatTools(&chatRequest{Tools: req.Tools})
		if err != nil {
			return err
		}
		if j.constrained {
			return badRequest("tools", "unsupported", "format or grammar with tools is not supported (the answer is either a tool call or text)")
		}
		j.opts = append(j.opts, engine.WithTools(tools, engine.ToolChoice{Mode: engine.ToolAuto}))
		j.constrained, j.tools, j.param = true, true, "tools"
	}
	return s.ollamaRun(w, r, info, j, req.Stream, true)
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request, info *reqInfo) error {
	var req ollamaRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	switch {
	case req.Template != "":
		return badRequest("template", "unsupported", "template is not supported: the model's chat format is used (or raw: true)")
	case req.Suffix != "":
		return badRequest("suffix", "unsupported", "suffix (fill in the middle) is not supported")
	case len(req.Context) > 0:
		return badRequest("context", "unsupported", "context is not supported: send the conversation to /api/chat")
	}
	j, err := s.ollamaJob(&req)
	if err != nil {
		return err
	}
	if req.Prompt == "" {
		empty := ""
		return s.ollamaDone(w, req.Stream, &ollamaResponse{Response: &empty, DoneReason: "load"})
	}
	if req.Raw {
		j.prompt = req.Prompt
	} else {
		var msgs []engine.Message
		if req.System != "" {
			msgs = append(msgs, engine.Message{Role: "system", Content: req.System})
		}
		j.opts = append(j.opts, engine.WithMessages(append(msgs, engine.Message{Role: "user", Content: req.Prompt})...))
	}
	return s.ollamaRun(w, r, info, j, req.Stream, false)
}

// ollamaDone answers a request that generates nothing (loading the model).
func (s *Server) ollamaDone(w http.ResponseWriter, stream *bool, resp *ollamaResponse) error {
	resp.Model, resp.CreatedAt, resp.Done = s.cfg.ModelName, time.Now().UTC(), true
	return writeJSON(w, http.StatusOK, resp)
}

// ollamaRun runs a job and writes its NDJSON stream (or one object).
func (s *Server) ollamaRun(w http.ResponseWriter, r *http.Request, info *reqInfo, j *job, stream *bool, chat bool) error {
	start := time.Now()
	respond := func(content, thinking string) *ollamaResponse {
		resp := &ollamaResponse{Model: s.cfg.ModelName, CreatedAt: time.Now().UTC()}
		if chat {
			resp.Message = &ollamaMessage{Role: "assistant", Content: content, Thinking: thinking}
		} else {
			resp.Response, resp.Thinking = &content, thinking
		}
		return resp
	}
	final := func(res *engine.Result, content, thinking string) *ollamaResponse {
		resp := respond(content, thinking)
		resp.Done, resp.DoneReason = true, finish(j, res)
		if resp.DoneReason == "tool_calls" {
			resp.DoneReason = "stop"
		}
		st := &res.Stats
		resp.TotalDuration = time.Since(start)
		resp.PromptEvalCount, resp.PromptEvalDuration = st.PromptTokens, st.Prefill
		resp.EvalCount, resp.EvalDuration = st.Tokens, st.Total-st.Prefill-st.Queue
		if chat {
			for i, c := range res.ToolCalls {
				var tc ollamaToolCall
				tc.ID = c.ID
				tc.Function.Index, tc.Function.Name, tc.Function.Arguments = i, c.Name, json.RawMessage(c.Arguments)
				resp.Message.ToolCalls = append(resp.Message.ToolCalls, tc)
			}
		}
		return resp
	}
	if stream != nil && !*stream {
		res, err := s.run(r.Context(), j, info, nil)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, final(res[0], res[0].Content, res[0].Reasoning))
	}
	info.streamed = true
	started := false
	line := func(v any) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		return http.NewResponseController(w).Flush()
	}
	held := utf8Buf{}
	res, err := s.run(r.Context(), j, info, func(choice int, part engine.Part, piece []byte) error {
		switch part {
		case engine.PartContent:
			if text := held.take(0, part, piece); text != "" {
				return line(respond(text, ""))
			}
		case engine.PartReasoning:
			if text := held.take(0, part, piece); text != "" {
				return line(respond("", text))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return line(final(res[0], held.rest(0, engine.PartContent), held.rest(0, engine.PartReasoning)))
}

func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	type details struct {
		Format string `json:"format"`
		Family string `json:"family"`
	}
	type model struct {
		Name       string    `json:"name"`
		Model      string    `json:"model"`
		ModifiedAt time.Time `json:"modified_at"`
		Size       int64     `json:"size"`
		Digest     string    `json:"digest"`
		Details    details   `json:"details"`
	}
	return writeJSON(w, http.StatusOK, map[string][]model{"models": {{
		Name: s.cfg.ModelName, Model: s.cfg.ModelName, ModifiedAt: s.cfg.Created.UTC(), Details: details{Format: "gguf"},
	}}})
}

func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	m := s.engine().Model()
	return writeJSON(w, http.StatusOK, map[string]any{
		"template":     m.ChatTemplate(),
		"details":      map[string]string{"format": "gguf"},
		"model_info":   map[string]any{"general.context_length": m.ContextSize(), "structgen.sequences": m.Sequences(), "tokenizer.vocab_size": m.VocabSize()},
		"capabilities": []string{"completion", "tools"},
		"modified_at":  s.cfg.Created.UTC(),
	})
}

func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	return writeJSON(w, http.StatusOK, map[string]string{"version": ollamaVersionString})
}
