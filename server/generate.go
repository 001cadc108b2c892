package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/sampling/cpu"
)

// This file maps what both APIs ask for (sampling, limits, constraints) to
// engine options and runs generations; openai.go and ollama.go decode their
// requests into a job and write the results in their shapes.

// job is one request's generation.
type job struct {
	prompt string // raw prompt ("" with messages)
	n      int
	opts   []engine.Option
	// The request field holding the constraint (for error params) and
	// whether one applies (a schema, grammar or tool call: a budget then
	// closes the output out validly instead of cutting it).
	param       string
	constrained bool
	tools       bool // tool calls (auto or required) may come back
}

// sampling is what a request may set of the sampler; nil fields keep the
// server's defaults.
type sampling struct {
	Temperature      *float32
	TopP             *float32
	TopK             *int
	MinP             *float32
	TypicalP         *float32
	RepeatPenalty    *float32
	RepeatLastN      *int
	PresencePenalty  *float32
	FrequencyPenalty *float32
	Seed             *int64
}

// params applies the request's settings to the server's defaults and
// checks them; field names are the API's (prefix + name) for errors.
func (s *Server) params(sp sampling, prefix string) ([]engine.Option, error) {
	p := s.sampling
	check := func(name string, v *float32, lo, hi float32) error {
		if v != nil && (math.IsNaN(float64(*v)) || *v < lo || *v > hi) {
			return badRequest(prefix+name, "invalid_value", "%s%s = %v: want a number in [%v, %v]", prefix, name, *v, lo, hi)
		}
		return nil
	}
	for _, c := range []struct {
		name   string
		v      *float32
		lo, hi float32
		dst    *float32
	}{
		{"temperature", sp.Temperature, 0, 2, &p.Temperature},
		{"top_p", sp.TopP, 0, 1, &p.TopP},
		{"min_p", sp.MinP, 0, 1, &p.MinP},
		{"typical_p", sp.TypicalP, 0, 1, &p.TypicalP},
		{"repeat_penalty", sp.RepeatPenalty, 0, 10, &p.RepeatPenalty},
		{"presence_penalty", sp.PresencePenalty, -2, 2, &p.PresencePenalty},
		{"frequency_penalty", sp.FrequencyPenalty, -2, 2, &p.FrequencyPenalty},
	} {
		if err := check(c.name, c.v, c.lo, c.hi); err != nil {
			return nil, err
		}
		if c.v != nil {
			*c.dst = *c.v
		}
	}
	if sp.TopK != nil {
		if *sp.TopK < 0 || *sp.TopK > 1<<20 {
			return nil, badRequest(prefix+"top_k", "invalid_value", "%stop_k = %d: want 0 (off) or more", prefix, *sp.TopK)
		}
		p.TopK = *sp.TopK
	}
	if sp.RepeatLastN != nil {
		if *sp.RepeatLastN < -1 || *sp.RepeatLastN > 1<<16 {
			return nil, badRequest(prefix+"repeat_last_n", "invalid_value", "%srepeat_last_n = %d: want -1 or more", prefix, *sp.RepeatLastN)
		}
		p.RepeatLastN = *sp.RepeatLastN
	}
	if p.RepeatPenalty == 1 {
		p.RepeatPenalty = 0 // neutral
	}
	if _, err := cpu.NewChain(p); err != nil {
		return nil, badRequest("", "invalid_value", "sampling: %v", err)
	}
	opts := []engine.Option{engine.WithSampling(p)}
	if sp.Seed != nil {
		// The engine's seeds are 32 bits: a 64-bit seed is reduced, so
		// equal seeds still give equal outputs.
		opts = append(opts, engine.WithSeed(uint32(*sp.Seed)))
	}
	return opts, nil
}

// maxTokens checks a token budget (nil: the engine's default).
func (s *Server) maxTokens(v *int, name string) ([]engine.Option, error) {
	if v == nil {
		return nil, nil
	}
	limit := engine.MaxTokensLimit
	if s.cfg.MaxTokens > 0 {
		limit = s.cfg.MaxTokens
	}
	if *v < 1 || *v > limit {
		return nil, badRequest(name, "invalid_value", "%s = %d: want 1..%d", name, *v, limit)
	}
	return []engine.Option{engine.WithMaxTokens(*v)}, nil
}

// schemaOption checks a schema's size and returns its option.
func (s *Server) schemaOption(schema json.RawMessage, param string) (engine.Option, error) {
	schema = json.RawMessage(strings.TrimSpace(string(schema)))
	switch {
	case len(schema) == 0 || string(schema) == "null":
		return nil, badRequest(param, "invalid_schema", "%s is missing", param)
	case len(schema) > s.cfg.MaxGrammarBytes:
		return nil, badRequest(param, "schema_too_large", "%s is %d bytes, more than the server's limit of %d (--max-grammar-bytes)", param, len(schema), s.cfg.MaxGrammarBytes)
	}
	return engine.WithSchema(schema), nil
}

// grammarOption checks a GBNF grammar's size and returns its option.
func (s *Server) grammarOption(g, param string) (engine.Option, error) {
	if len(g) > s.cfg.MaxGrammarBytes {
		return nil, badRequest(param, "grammar_too_large", "%s is %d bytes, more than the server's limit of %d (--max-grammar-bytes)", param, len(g), s.cfg.MaxGrammarBytes)
	}
	return engine.WithGrammar(g), nil
}

// toolsSize checks the tools' schemas against the grammar limit.
func (s *Server) toolsSize(tools []engine.Tool, param string) error {
	n := 0
	for _, t := range tools {
		n += len(t.Parameters)
	}
	if n > s.cfg.MaxGrammarBytes {
		return badRequest(param, "schema_too_large", "the tools' parameters schemas are %d bytes, more than the server's limit of %d (--max-grammar-bytes)", n, s.cfg.MaxGrammarBytes)
	}
	return nil
}

// reasoning returns the option of a thinking budget: -1 unlimited, 0
// off, n tokens (nil: the server's default).
func (s *Server) reasoning(budget *int, param string) ([]engine.Option, error) {
	b := s.cfg.ReasoningBudget
	switch {
	case budget != nil:
		b = *budget
	case s.cfg.NoReasoning:
		b = 0
	case b == 0:
		b = -1
	}
	switch {
	case b < -1 || b > engine.MaxTokensLimit:
		return nil, badRequest(param, "invalid_value", "%s = %d: want -1 (unlimited), 0 (off) or a number of tokens", param, b)
	case b == 0:
		return []engine.Option{engine.WithReasoning(false, 0)}, nil
	case b > 0:
		return []engine.Option{engine.WithReasoning(true, b)}, nil
	}
	return nil, nil
}

// stops decodes OpenAI's and Ollama's stop: a string or a list of them.
func stops(raw json.RawMessage, param string) ([]engine.Option, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest(param, "invalid_type", "%s must be a string or a list of strings", param)
	}
	if len(list) > engine.MaxStops {
		return nil, badRequest(param, "invalid_value", "%d stop strings, more than %d", len(list), engine.MaxStops)
	}
	var keep []string
	for i, s := range list {
		switch {
		case s == "":
			continue // OpenAI ignores empty stop strings
		case len(s) > engine.MaxStopLen:
			return nil, badRequest(fmt.Sprintf("%s[%d]", param, i), "invalid_value", "stop string of %d bytes, more than %d", len(s), engine.MaxStopLen)
		}
		keep = append(keep, s)
	}
	if len(keep) == 0 {
		return nil, nil
	}
	return []engine.Option{engine.WithStop(keep...)}, nil
}

// run runs a job, streaming pieces to fn when fn is not nil, and records
// the results in the request's log line and the metrics.
func (s *Server) run(ctx context.Context, j *job, info *reqInfo, fn func(choice int, part engine.Part, piece []byte) error) ([]*engine.Result, error) {
	eng := s.engine()
	opts := append(j.opts[:len(j.opts):len(j.opts)], engine.WithStepTimes(true))
	if fn != nil {
		opts = append(opts, engine.WithPartStream(fn))
	}
	res, err := eng.GenerateN(ctx, j.prompt, j.n, opts...)
	var ve *engine.ValidationError
	if err != nil && !(errors.As(err, &ve) && len(res) == j.n) {
		return nil, inParam(err, j.param)
	}
	for _, r := range res {
		if r == nil {
			continue
		}
		info.completionTokens += r.Stats.Tokens
		info.promptTokens = r.Stats.PromptTokens
		if info.ttft == 0 {
			info.ttft = r.Stats.TimeToFirstToken
		}
		info.stop = string(r.Stop)
		s.met.generation(r)
	}
	s.met.prompt.Add(float64(info.promptTokens))
	return res, nil
}

// finish is the finish reason of a result (OpenAI's; Ollama's
// done_reason uses stop and length too): "length" only when the budget cut
// text no grammar applied to; a grammar's output closed out at the budget
// is complete.
func finish(j *job, r *engine.Result) string {
	switch {
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	case r.Stop == engine.StopBudget && !(j.constrained && r.Triggered):
		return "length"
	}
	return "stop"
}

// utf8Buf holds back the end of a streamed piece that is an incomplete
// UTF-8 character (the engine's pieces are bytes), per choice and part,
// so that every streamed string is valid UTF-8.
type utf8Buf map[[2]int][]byte

// take returns the complete characters of what was held plus piece.
func (u utf8Buf) take(choice int, part engine.Part, piece []byte) string {
	k := [2]int{choice, int(part)}
	b := append(u[k], piece...)
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	out := string(b[:cut])
	u[k] = append(u[k][:0], b[cut:]...)
	return out
}

// rest returns and forgets what is held (at the end of a generation: an
// incomplete character, which JSON encodes as U+FFFD, as it does the same
// bytes of a whole response).
func (u utf8Buf) rest(choice int, part engine.Part) string {
	k := [2]int{choice, int(part)}
	s := string(u[k])
	delete(u, k)
	return s
}
