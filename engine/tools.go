package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// In this file tf is always a toolFormat.

// ToolMode says whether and how a generation with tools calls them.
type ToolMode int

const (
	// ToolAuto: the model answers in free text or calls tools; a call is
	// constrained from its marker on (a lazy grammar over the tools'
	// schemas).
	ToolAuto ToolMode = iota
	// ToolRequired: the model calls one or more tools (ToolChoice.Name:
	// exactly that one), constrained from the first token.
	ToolRequired
	// ToolNone: the tools are described in the prompt but not called;
	// the answer is free text (or follows WithGrammar/WithSchema).
	ToolNone
)

// ToolChoice says which tools a generation may call (OpenAI's
// tool_choice and parallel_tool_calls).
type ToolChoice struct {
	Mode ToolMode
	// Name, with ToolRequired, is the one function to call.
	Name string
	// Single allows one call only (parallel_tool_calls false); by default
	// a format that has several calls in one answer (Hermes, Mistral)
	// allows up to MaxToolCalls.
	Single bool
}

// MaxToolCalls bounds the calls of one answer: each is a grammar
// repetition and an entry of Result.ToolCalls.
const MaxToolCalls = 16

// toolFormat is how a family writes tool calls.
type toolFormat int

const (
	// toolHermes (Qwen 2.5/3, Hermes, and the generic format of families
	// without tool calls of their own): each call is
	// <tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>.
	toolHermes toolFormat = iota
	// toolLlama3 (Llama 3.1+): the answer is {"name": …, "parameters": {…}}.
	toolLlama3
	// toolMistral (Mistral v3+): [TOOL_CALLS][{"name": …, "arguments": {…}}, …].
	toolMistral
)

func (tf toolFormat) String() string {
	return [...]string{"hermes", "llama3", "mistral"}[tf]
}

// toolFormatOf returns the tool-call format of a template of family f.
func toolFormatOf(template string, f *chatFamily) toolFormat {
	switch {
	case strings.Contains(template, "<tool_call>"):
		return toolHermes
	case strings.Contains(template, "[TOOL_CALLS]"):
		return toolMistral
	case f.tools == toolLlama3 && (strings.Contains(template, "<|python_tag|>") || strings.Contains(template, "tools")):
		return toolLlama3
	}
	return toolHermes
}

// argsKey is the key of a call's arguments.
func (tf toolFormat) argsKey() string {
	if tf == toolLlama3 {
		return "parameters"
	}
	return "arguments"
}

// trigger is the text that starts a call in free text (ToolAuto), whether
// the grammar covers it (inclusive) and whether it counts only at the
// start of the answer (anchored).
func (tf toolFormat) trigger() (text string, inclusive, anchored bool) {
	switch tf {
	case toolLlama3:
		return `{"name"`, true, true
	case toolMistral:
		return "[TOOL_CALLS]", false, false
	}
	return "<tool_call>", true, false
}

// toolJSON is a tool as OpenAI's API and the chat templates write it.
func toolJSON(t Tool, indent bool) string {
	params := t.Parameters
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type": "object", "properties": {}}`)
	}
	fn := struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}{t.Name, t.Description, params}
	raw, _ := json.Marshal(struct {
		Type     string `json:"type"`
		Function any    `json:"function"`
	}{"function", fn})
	if indent {
		var b bytes.Buffer
		_ = json.Indent(&b, raw, "", "    ")
		return b.String()
	}
	s, err := pyJSON(raw)
	if err != nil {
		return string(raw)
	}
	return s
}

// hermesToolPrompt appends the tool instructions of Qwen 2.5's template
// to a system message.
func hermesToolPrompt(sys string, tools []Tool) string {
	var b strings.Builder
	if sys != "" {
		b.WriteString(sys + "\n\n")
	}
	b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>")
	for _, t := range tools {
		b.WriteString("\n" + toolJSON(t, false))
	}
	b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")
	return b.String()
}

// llama3ToolPrompt is what Llama 3.1/3.2's template puts before the first
// user message when tools are given.
func llama3ToolPrompt(tools []Tool) string {
	var b strings.Builder
	b.WriteString("Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n")
	for _, t := range tools {
		b.WriteString(toolJSON(t, true) + "\n\n")
	}
	return b.String()
}

// mistralTools is the JSON list of [AVAILABLE_TOOLS].
func mistralTools(tools []Tool) string {
	parts := make([]string, len(tools))
	for i, t := range tools {
		parts[i] = toolJSON(t, false)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// writeCalls renders an assistant message's earlier calls in the format.
func (tf toolFormat) writeCalls(content string, calls []ToolCall) string {
	var b strings.Builder
	b.WriteString(content)
	args := func(c ToolCall) string {
		a := strings.TrimSpace(c.Arguments)
		if a == "" {
			a = "{}"
		}
		if s, err := pyJSON([]byte(a)); err == nil {
			return s
		}
		return a
	}
	switch tf {
	case toolLlama3:
		for i, c := range calls {
			if i > 0 || content != "" {
				b.WriteString("\n")
			}
			name, _ := json.Marshal(c.Name)
			fmt.Fprintf(&b, `{"name": %s, "parameters": %s}`, name, args(c))
		}
	case toolMistral:
		b.WriteString("[TOOL_CALLS][")
		for i, c := range calls {
			if i > 0 {
				b.WriteString(", ")
			}
			name, _ := json.Marshal(c.Name)
			fmt.Fprintf(&b, `{"name": %s, "arguments": %s`, name, args(c))
			if c.ID != "" {
				id, _ := json.Marshal(c.ID)
				fmt.Fprintf(&b, `, "id": %s`, id)
			}
			b.WriteString("}")
		}
		b.WriteString("]")
	default:
		for i, c := range calls {
			if i > 0 || content != "" {
				b.WriteString("\n")
			}
			name, _ := json.Marshal(c.Name)
			fmt.Fprintf(&b, "<tool_call>\n{\"name\": %s, \"arguments\": %s}\n</tool_call>", name, args(c))
		}
	}
	return b.String()
}

// checkTools checks a tool list: names present, unique, bounded, and each
// parameters value a JSON object (or empty).
func checkTools(tools []Tool) error {
	if len(tools) > MaxTools {
		return &OptionError{"WithTools", fmt.Sprintf("%d tools, more than %d", len(tools), MaxTools)}
	}
	seen := map[string]bool{}
	for i, t := range tools {
		switch {
		case t.Name == "":
			return &OptionError{"WithTools", fmt.Sprintf("tool %d has no name", i)}
		case len(t.Name) > MaxToolNameLen:
			return &OptionError{"WithTools", fmt.Sprintf("tool %d: name of %d bytes, more than %d", i, len(t.Name), MaxToolNameLen)}
		case seen[t.Name]:
			return &OptionError{"WithTools", fmt.Sprintf("tool %d: name %q given twice", i, t.Name)}
		}
		seen[t.Name] = true
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && (p[0] != '{' || !json.Valid(p)) {
			return &OptionError{"WithTools", fmt.Sprintf("tool %q: parameters must be a JSON Schema object", t.Name)}
		}
	}
	return nil
}

// toolSpec is what a tool constraint is built from: the cache key's text.
type toolSpec struct {
	tools  []Tool
	format toolFormat
	mode   ToolMode // ToolAuto or ToolRequired
	name   string
	single bool
	// head is the grammar's text for the call marker of ToolRequired when
	// the marker is a special token of the model ("" for a literal).
	head string
}

// key is the cache key text of the spec.
func (ts *toolSpec) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%s|%v|%s\n", ts.format, ts.mode, ts.name, ts.single, ts.head)
	for _, t := range ts.tools {
		fmt.Fprintf(&b, "%d:%s%d:%s%d:%s", len(t.Name), t.Name, len(t.Description), t.Description, len(t.Parameters), t.Parameters)
	}
	return b.String()
}

// callSchema is the JSON Schema of one call object of the spec's tools:
// {"name": const, <argsKey>: parameters}, anyOf over the tools. Each
// parameters schema keeps its own $ref scope through an $id of its own.
func (ts *toolSpec) callSchema() ([]byte, error) {
	key := ts.format.argsKey()
	var branches []string
	for i, t := range ts.tools {
		if ts.name != "" && t.Name != ts.name {
			continue
		}
		params := bytes.TrimSpace(t.Parameters)
		if len(params) == 0 || string(params) == "{}" {
			params = []byte(`{"type":"object"}`)
		}
		// A schema with references gets an $id of its own, so that its
		// "#/…" pointers stay relative to it (an embedded resource costs
		// the validator's compiler some work: only where needed).
		id := fmt.Sprintf(`"$id":"urn:structgen:tool:%d"`, i)
		if !bytes.Contains(params, []byte(`"$ref"`)) || bytes.Contains(params, []byte(`"$id"`)) {
			id = ""
		}
		if id != "" {
			inner := bytes.TrimSpace(params[1:])
			if len(inner) > 0 && inner[0] != '}' {
				id += ","
			}
			params = append([]byte("{"+id), inner...)
		}
		name, _ := json.Marshal(t.Name)
		branches = append(branches, fmt.Sprintf(`{"type":"object","properties":{"name":{"const":%s},%q:%s},"required":["name",%q],"additionalProperties":false}`,
			name, key, params, key))
	}
	if len(branches) == 0 {
		return nil, &OptionError{"WithTools", fmt.Sprintf("tool_choice names %q, which is not among the tools", ts.name)}
	}
	if len(branches) == 1 {
		return []byte(branches[0]), nil
	}
	return []byte(`{"anyOf":[` + strings.Join(branches, ",") + `]}`), nil
}

// grammar returns the GBNF of the spec's calls and the name of its start
// rule: the converted call schema (whose own start rule, root, is one call
// object) with the format's markers and repetitions around it, in rules
// named so that they cannot meet the converter's (which are checked).
func (ts *toolSpec) grammar(schema []byte) (src, root string, validator *jsonschema.Schema, err error) {
	call, validator, err := jsonschema2gbnf.ConvertAndCompile(schema, jsonschema2gbnf.FlexibleWhitespace(0))
	if err != nil {
		return "", "", nil, err
	}
	if ts.format == toolLlama3 {
		return call, "root", validator, nil // the answer is one call object
	}
	const calls, one = "structgen-calls", "structgen-call"
	if strings.HasPrefix(call, calls+" ") || strings.Contains(call, "\n"+calls+" ") ||
		strings.HasPrefix(call, one+" ") || strings.Contains(call, "\n"+one+" ") {
		return "", "", nil, fmt.Errorf("engine: tool grammar: the converter named a rule %s or %s", calls, one)
	}
	more := fmt.Sprintf("{0,%d}", MaxToolCalls-1)
	if ts.single {
		more = "{0,0}"
	}
	var wrap string
	switch ts.format {
	case toolMistral:
		head := `"[TOOL_CALLS]" `
		if ts.head != "" {
			head = ts.head + " "
		}
		if ts.mode == ToolAuto {
			head = "" // the trigger, a special token, comes before the grammar
		}
		wrap = fmt.Sprintf(`%s ::= %s"[" root ("," " "? root)%s "]"`, calls, head, more)
	default:
		wrap = fmt.Sprintf(`%s ::= %s ("\n" %s)%s
%s ::= "<tool_call>\n" root "\n</tool_call>"`, calls, one, one, more, one)
	}
	return wrap + "\n" + call, calls, validator, nil
}

// toolSet is a compiled tool constraint's parser and validator.
type toolSet struct {
	format    toolFormat
	validator *jsonschema.Schema
}

// parse extracts the calls from the constrained output and validates
// each against its tool's schema. seed makes the call ids reproducible.
func (ts *toolSet) parse(output string, seed uint32) ([]ToolCall, error) {
	var objs []json.RawMessage
	switch ts.format {
	case toolLlama3:
		objs = []json.RawMessage{json.RawMessage(output)}
	case toolMistral:
		s := strings.TrimPrefix(output, "[TOOL_CALLS]")
		if err := json.Unmarshal([]byte(s), &objs); err != nil {
			return nil, fmt.Errorf("tool calls %q: %w", s, err)
		}
	default:
		rest := output
		for {
			i := strings.Index(rest, "<tool_call>")
			if i < 0 {
				break
			}
			rest = rest[i+len("<tool_call>"):]
			j := strings.Index(rest, "</tool_call>")
			if j < 0 {
				return nil, fmt.Errorf("tool call without </tool_call>: %q", output)
			}
			objs = append(objs, json.RawMessage(strings.TrimSpace(rest[:j])))
			rest = rest[j+len("</tool_call>"):]
		}
	}
	key := ts.format.argsKey()
	calls := make([]ToolCall, 0, len(objs))
	for i, raw := range objs {
		if err := validate(ts.validator, string(raw)); err != nil {
			return nil, fmt.Errorf("tool call %d: %w", i, err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("tool call %d: %w", i, err)
		}
		var name string
		if err := json.Unmarshal(obj["name"], &name); err != nil {
			return nil, fmt.Errorf("tool call %d: name: %w", i, err)
		}
		var args bytes.Buffer
		if err := json.Compact(&args, obj[key]); err != nil {
			return nil, fmt.Errorf("tool call %d: arguments: %w", i, err)
		}
		calls = append(calls, ToolCall{ID: callID(seed, i), Name: name, Arguments: args.String()})
	}
	if len(calls) == 0 {
		return nil, errors.New("no tool call in the output")
	}
	return calls, nil
}

// callID is an OpenAI-style call id, a function of the seed and index so
// that a seeded request gives the same ids every time.
func callID(seed uint32, i int) string {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:], seed)
	binary.LittleEndian.PutUint32(b[4:], uint32(i))
	h.Write(b[:])
	return fmt.Sprintf("call_%016x", h.Sum64())
}

// conversation checks the conversation options of a generation and
// derives what they imply: the tool constraint and its trigger, and the
// thinking block of a reasoning model's template.
func (e *Engine) conversation(o *options, prompt string) error {
	chat := o.chat || o.messages != nil
	active := len(o.tools) > 0 && o.toolChoice.Mode != ToolNone
	switch {
	case o.messages != nil && prompt != "":
		return &OptionError{"WithMessages", "the prompt is the conversation: give Generate an empty prompt"}
	case o.messages != nil && o.chat:
		return &OptionError{"WithMessages", "WithChat and WithMessages both give the conversation: use one"}
	case chat && e.model == nil:
		return &OptionError{"WithMessages", "no-model mode has no prompt"}
	case len(o.tools) > 0 && !chat:
		return &OptionError{"WithTools", "tools need a conversation (WithMessages or WithChat)"}
	case active && (o.schema != nil || o.grammar != ""):
		return &OptionError{"WithTools", "a grammar or schema goes with ToolNone only: the answer is a tool call or text"}
	case active && len(o.triggers) > 0:
		return &OptionError{"WithTools", "tool calls set their own trigger: no WithLazyTrigger"}
	case len(o.stops) > 0 && e.model == nil:
		return &OptionError{"WithStop", "no-model mode has no free text to stop"}
	}
	if !chat {
		return nil
	}
	template := e.model.ChatTemplate()
	fam, err := familyOf(template)
	if err != nil {
		return err
	}
	if active {
		ts := &toolSpec{tools: o.tools, format: toolFormatOf(template, fam), mode: o.toolChoice.Mode,
			name: o.toolChoice.Name, single: o.toolChoice.Single}
		if ts.mode == ToolAuto {
			tr, incl, anchored := ts.format.trigger()
			o.triggers, o.triggerIncl, o.triggerAnchored = []string{tr}, incl, anchored
		} else if ts.format == toolMistral {
			toks, err := e.model.Tokenize([]byte("[TOOL_CALLS]"), false, true)
			if err == nil && len(toks) == 1 && e.vocab.Kind(toks[0]) == mask.TokenSpecial {
				ts.head = fmt.Sprintf("<[%d]>", toks[0])
			}
		}
		o.toolSpec = ts
		// Where the calls are JSON alone, no object of them repeats a key
		// (the guard reads JSON only: not Hermes' <tool_call> markers).
		if o.uniqueKeys == 0 && (ts.format == toolLlama3 || ts.format == toolMistral && ts.mode == ToolAuto) {
			o.uniqueKeys = 1
		}
	}
	if _, end := thinkMarkers(template); end != "" && !o.thinkOff {
		o.thinkEnd = end
	}
	return nil
}

// renderChat renders the conversation of o (or the prompt as one user
// message, WithChat), opening or closing a reasoning model's thinking
// block at its end.
func (e *Engine) renderChat(o *options, prompt string) (string, error) {
	template := e.model.ChatTemplate()
	msgs := o.messages
	if o.chat {
		if template == "" {
			return "", ErrNoChatTemplate
		}
		msgs = nil
		if o.system != "" {
			msgs = append(msgs, Message{Role: "system", Content: o.system})
		}
		msgs = append(msgs, Message{Role: "user", Content: prompt})
	}
	text, _, err := renderConversation(template, msgs, o.tools, e.chatTokens(), !o.thinkOff)
	if err != nil {
		return "", err
	}
	if start, end := thinkMarkers(template); start != "" {
		tail := strings.TrimRight(text, " \n")
		switch {
		case o.thinkOff && !strings.HasSuffix(tail, end):
			text += start + "\n\n" + end + "\n\n"
		case !o.thinkOff && !strings.HasSuffix(tail, start):
			text += start + "\n"
		}
	}
	return text, nil
}

// chatTokens returns the text of the model's BOS and end-of-generation
// tokens, as templates print them (bos_token, eos_token).
func (e *Engine) chatTokens() chatTokens {
	var tok chatTokens
	if id, ok := e.model.BOS(); ok {
		tok.bos = string(e.model.TokenBytes(id))
	}
	if eog := e.model.EOG(); len(eog) > 0 {
		tok.eos = string(e.model.TokenBytes(eog[0]))
	}
	return tok
}

// buildTools converts and compiles a tool constraint.
func (e *Engine) buildTools(ts *toolSpec, done <-chan struct{}) (*constraint, error) {
	start := time.Now()
	schema, err := ts.callSchema()
	if err != nil {
		return nil, err
	}
	src, root, validator, err := ts.grammar(schema)
	if err != nil {
		return nil, toolSchemaError(ts, err)
	}
	g, err := gbnf.ParseWithRoot(src, root)
	if err != nil {
		return nil, fmt.Errorf("engine: tool grammar: %w", err)
	}
	c, err := mask.CompileWith(g, e.vocab, mask.Options{Start: start, Done: done})
	if err != nil {
		return nil, err
	}
	// The validator of the calls came with the conversion (one load).
	set := &toolSet{format: ts.format, validator: validator}
	return &constraint{src: src, compiled: c, schemaLen: len(schema), tools: set}, nil
}

// ToolSchemaError reports a tool whose parameters schema cannot be
// converted (an unsupported keyword, an invalid schema).
type ToolSchemaError struct {
	Tool  string // the tool's name
	Index int    // its index in the tool list
	Err   error  // pointers in it are relative to the tool's parameters
}

func (e *ToolSchemaError) Error() string {
	return fmt.Sprintf("engine: tool %q (tools[%d]) parameters: %v", e.Tool, e.Index, e.Err)
}

func (e *ToolSchemaError) Unwrap() error { return e.Err }

// toolSchemaError names the tool a conversion error is about: its
// pointers start with the tool's place in the call schema.
func toolSchemaError(ts *toolSpec, err error) error {
	msg := err.Error()
	key := ts.format.argsKey()
	for i, t := range ts.tools {
		branch := fmt.Sprintf("#/anyOf/%d/properties/%s", i, key)
		if ts.name != "" || len(ts.tools) == 1 {
			if ts.name != "" && t.Name != ts.name {
				continue
			}
			branch = "#/properties/" + key
		}
		if strings.Contains(msg, branch) {
			return &ToolSchemaError{Tool: t.Name, Index: i, Err: relabel{err, strings.ReplaceAll(msg, branch, "#")}}
		}
	}
	return err
}

// relabel is an error with another message that still unwraps to the
// original.
type relabel struct {
	err error
	msg string
}

func (r relabel) Error() string { return r.msg }
func (r relabel) Unwrap() error { return r.err }
