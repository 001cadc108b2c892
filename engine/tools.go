package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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
	// headTok is the call marker of ToolRequired when the marker is a
	// special token of the model (hasHead; else the marker is text).
	headTok int32
	hasHead bool
}

// key is the cache key text of the spec.
func (ts *toolSpec) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%s|%v|%v%d\n", ts.format, ts.mode, ts.name, ts.single, ts.hasHead, ts.headTok)
	for _, t := range ts.tools {
		fmt.Fprintf(&b, "%d:%s%d:%s%d:%s", len(t.Name), t.Name, len(t.Description), t.Description, len(t.Parameters), t.Parameters)
	}
	return b.String()
}

// toolPart is one tool's parameters converted: the grammar of its
// arguments (rules renamed into the merged grammar later) and their
// validator.
type toolPart struct {
	index     int // in the tool list
	name      string
	g         *gbnf.Grammar
	validator *jsonschema.Schema
}

// convert converts the parameters schema of each tool of the spec (only
// the named one for a named tool_choice): each schema is a document of
// its own (its "#/…" pointers and errors are relative to it), loaded once
// for its grammar and its validator. The tools convert in parallel, on
// up to GOMAXPROCS goroutines; the error reported is the first tool's
// (by index) that fails. Closing done stops it between tools
// (mask.ErrCanceled).
func (ts *toolSpec) convert(done <-chan struct{}) ([]toolPart, error) {
	var parts []toolPart
	for i, t := range ts.tools {
		if ts.name == "" || t.Name == ts.name {
			parts = append(parts, toolPart{index: i, name: t.Name})
		}
	}
	if len(parts) == 0 {
		return nil, &OptionError{"WithTools", fmt.Sprintf("tool_choice names %q, which is not among the tools", ts.name)}
	}
	errs := make([]error, len(parts))
	one := func(k int) {
		p := &parts[k]
		defer func() {
			if r := recover(); r != nil {
				errs[k] = fmt.Errorf("engine: tool %q: panic while converting its parameters: %v", p.name, r)
			}
		}()
		select {
		case <-done:
			errs[k] = mask.ErrCanceled
			return
		default:
		}
		params := bytes.TrimSpace(ts.tools[p.index].Parameters)
		if len(params) == 0 || string(params) == "{}" {
			params = []byte(`{"type":"object"}`)
		}
		src, v, err := jsonschema2gbnf.ConvertAndCompile(params, jsonschema2gbnf.FlexibleWhitespace(0))
		if err != nil {
			errs[k] = &ToolSchemaError{Tool: p.name, Index: p.index, Err: err}
			return
		}
		g, err := gbnf.Parse(src)
		if err != nil {
			errs[k] = fmt.Errorf("engine: tool %q: its grammar: %w", p.name, err)
			return
		}
		p.g, p.validator = g, v
	}
	workers := min(runtime.GOMAXPROCS(0), len(parts))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < len(parts); k = int(next.Add(1) - 1) {
				one(k)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// grammar merges the tools' grammars into the grammar of the spec's
// calls: each call is the object {"name": <tool>, <argsKey>: <its
// arguments>} in that order, with the converter's flexible whitespace
// (what converting the anyOf of the call objects would give), inside the
// format's markers and repetitions. The parts' grammars are taken over
// (their rules renumbered and renamed t<index>-<name>): a part is used
// once.
func (ts *toolSpec) grammar(parts []toolPart) (*gbnf.Grammar, error) {
	g := &gbnf.Grammar{}
	add := func(name string, body *gbnf.Node) gbnf.RuleID {
		id := gbnf.RuleID(len(g.Rules))
		g.Rules = append(g.Rules, &gbnf.Rule{ID: id, Name: name, Body: body})
		return id
	}
	ref := func(id gbnf.RuleID) *gbnf.Node { return &gbnf.Node{Op: gbnf.OpRule, Rule: id} }
	lit := func(s string) *gbnf.Node { return &gbnf.Node{Op: gbnf.OpLiteral, Runes: []rune(s)} }
	seq := func(subs ...*gbnf.Node) *gbnf.Node { return &gbnf.Node{Op: gbnf.OpSeq, Subs: subs} }
	alt := func(subs []*gbnf.Node) *gbnf.Node {
		if len(subs) == 1 {
			return subs[0]
		}
		return &gbnf.Node{Op: gbnf.OpAlt, Subs: subs}
	}
	rep := func(n *gbnf.Node, lo, hi int) *gbnf.Node {
		return &gbnf.Node{Op: gbnf.OpRepeat, Subs: []*gbnf.Node{n}, Min: lo, Max: hi}
	}
	// The converter's shared rules (value, string, ws, …) come first,
	// once: a tool's rule of the same name and body becomes a reference
	// to them, so that the automaton has one copy of each.
	shared, err := sharedToolRules()
	if err != nil {
		return nil, err
	}
	byName := map[string]gbnf.RuleID{}
	for _, r := range shared.Rules {
		byName[r.Name] = add(r.Name, r.Body) // the same ids: shared is first
	}
	ws := ref(byName["ws"])
	key := ts.format.argsKey()
	var calls []*gbnf.Node
	for _, p := range parts {
		same := sameRules(p.g, shared, byName)
		id := make([]gbnf.RuleID, len(p.g.Rules))
		for i, r := range p.g.Rules {
			if same[i] {
				id[i] = byName[r.Name]
				continue
			}
			id[i] = gbnf.RuleID(len(g.Rules))
			r.ID, r.Name = id[i], fmt.Sprintf("t%d-%s", p.index, r.Name)
			g.Rules = append(g.Rules, r)
		}
		for i, r := range p.g.Rules {
			if !same[i] {
				renumber(r.Body, id)
			}
		}
		if len(g.Rules) > gbnf.MaxRules {
			return nil, &OptionError{"WithTools", fmt.Sprintf("the tools' grammars need more than %d rules (gbnf.MaxRules)", gbnf.MaxRules)}
		}
		var name bytes.Buffer
		enc := json.NewEncoder(&name)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(p.name); err != nil {
			return nil, err
		}
		call := seq(lit("{"), ws, lit(`"name":`), ws, lit(strings.TrimSpace(name.String())), lit(","), ws,
			lit(`"`+key+`":`), ws, ref(id[p.g.Root]), ws, lit("}"))
		calls = append(calls, ref(add(fmt.Sprintf("structgen-tool-%d", p.index), call)))
	}
	root := add("root", alt(calls))
	more := MaxToolCalls - 1
	if ts.single {
		more = 0
	}
	switch ts.format {
	case toolLlama3:
		g.Root = root // the answer is one call object
	case toolMistral:
		// [TOOL_CALLS] [call, call, ...]; in ToolAuto the trigger (a
		// special token) comes before the grammar.
		var head []*gbnf.Node
		switch {
		case ts.mode == ToolAuto:
		case ts.hasHead:
			head = append(head, &gbnf.Node{Op: gbnf.OpToken, Token: ts.headTok})
		default:
			head = append(head, lit("[TOOL_CALLS]"))
		}
		body := append(head, lit("["), ref(root))
		if more > 0 {
			body = append(body, rep(seq(lit(","), rep(lit(" "), 0, 1), ref(root)), 0, more))
		}
		g.Root = add("structgen-calls", seq(append(body, lit("]"))...))
	default:
		// <tool_call>\n{call}\n</tool_call>, one per line.
		one := ref(add("structgen-call", seq(lit("<tool_call>\n"), ref(root), lit("\n</tool_call>"))))
		if more == 0 {
			g.Root = add("structgen-calls", one)
		} else {
			g.Root = add("structgen-calls", seq(one, rep(seq(lit("\n"), one), 0, more)))
		}
	}
	return g, nil
}

// renumber maps the rule references under n through id.
func renumber(n *gbnf.Node, id []gbnf.RuleID) {
	if n.Op == gbnf.OpRule {
		n.Rule = id[n.Rule]
	}
	for _, s := range n.Subs {
		renumber(s, id)
	}
}

// sharedToolRules is the converter's shared rules with the tools'
// options, parsed once.
var sharedToolRules = sync.OnceValues(func() (*gbnf.Grammar, error) {
	src, err := jsonschema2gbnf.SharedRules(jsonschema2gbnf.FlexibleWhitespace(0))
	if err != nil {
		return nil, err
	}
	return gbnf.ParseWithRoot(src, "value")
})

// sameRules reports which rules of g are rules of shared (byName: their
// ids): those of the same name whose bodies are equal with references
// compared by name, and whose references all lead to such rules too (the
// greatest such set: rules that refer to each other in a cycle are the
// same if their bodies are).
func sameRules(g, shared *gbnf.Grammar, byName map[string]gbnf.RuleID) []bool {
	same := make([]bool, len(g.Rules))
	for i, r := range g.Rules {
		if sid, ok := byName[r.Name]; ok {
			same[i] = gbnf.NodeEqualFunc(r.Body, shared.Rules[sid].Body, func(x, y gbnf.RuleID) bool {
				return g.Rules[x].Name == shared.Rules[y].Name
			})
		}
	}
	for changed := true; changed; {
		changed = false
		for i, r := range g.Rules {
			if same[i] && !refsAll(r.Body, same) {
				same[i], changed = false, true
			}
		}
	}
	return same
}

// refsAll reports whether every rule n refers to is in set.
func refsAll(n *gbnf.Node, set []bool) bool {
	if n.Op == gbnf.OpRule && !set[n.Rule] {
		return false
	}
	for _, s := range n.Subs {
		if !refsAll(s, set) {
			return false
		}
	}
	return true
}

// toolSet is a compiled tool constraint's parser and validator.
type toolSet struct {
	format     toolFormat
	validators map[string]*jsonschema.Schema // each tool's arguments, by name (names are unique: checkTools)
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
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("tool call %d: %w", i, err)
		}
		if _, ok := obj[key]; !ok || len(obj) != 2 {
			return nil, fmt.Errorf("tool call %d: not an object of \"name\" and %q: %s", i, key, raw)
		}
		var name string
		if err := json.Unmarshal(obj["name"], &name); err != nil {
			return nil, fmt.Errorf("tool call %d: name: %w", i, err)
		}
		v, ok := ts.validators[name]
		if !ok {
			return nil, fmt.Errorf("tool call %d: no tool is named %q", i, name)
		}
		if err := validate(v, string(obj[key])); err != nil {
			return nil, fmt.Errorf("tool call %d: %s: %w", i, key, err)
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
				ts.headTok, ts.hasHead = toks[0], true
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
	parts, err := ts.convert(done)
	if err != nil {
		return nil, err
	}
	set := &toolSet{format: ts.format, validators: map[string]*jsonschema.Schema{}}
	schemaLen := 0
	for _, p := range parts {
		set.validators[p.name] = p.validator
		schemaLen += len(ts.tools[p.index].Parameters)
	}
	g, err := ts.grammar(parts)
	if err != nil {
		return nil, err
	}
	c, err := mask.CompileWith(g, e.vocab, mask.Options{Start: start, Done: done, Deferred: true})
	if err != nil {
		return nil, err
	}
	return &constraint{compiled: c, schemaLen: schemaLen, tools: set}, nil
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
