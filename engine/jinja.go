package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// This file runs a model's Jinja chat template with gonja, the way Hugging
// Face transformers' apply_chat_template does (trim_blocks, lstrip_blocks,
// raise_exception, strftime_now, a tojson that writes what Python's
// json.dumps writes, keys in the client's order), so that a conversation
// is rendered exactly as the model was trained on. Only what the template
// itself holds is rendered: it can load nothing (no include from disk).

func init() { gonja.SetLoggerOutput(io.Discard) }

// jinjaEnv is gonja's default environment with transformers' tojson,
// which writes the objects of ord in their keys' order.
func jinjaEnv(ord ordered) *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	_ = filters.Replace("tojson", func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		return jinjaToJSON(in, params, ord)
	})
	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	return &exec.Environment{Context: ctx, Filters: filters, Tests: builtins.Tests,
		ControlStructures: builtins.ControlStructures, Methods: builtins.Methods}
}

// chatTokens are the special tokens a template may print.
type chatTokens struct {
	bos, eos string
}

// jinjaChat renders a conversation with template (generation prompt on);
// thinking false asks a reasoning model's template for its empty thinking
// block (enable_thinking).
func jinjaChat(template string, msgs []Message, tools []Tool, tok chatTokens, thinking bool) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("engine: chat template: panic in gonja: %v", p)
		}
	}()
	cfg := config.New()
	cfg.TrimBlocks, cfg.LeftStripBlocks = true, true
	ord := ordered{}
	tpl, err := exec.NewTemplate("/chat", cfg, loaders.MustNewMemoryLoader(map[string]string{"/chat": template}), jinjaEnv(ord))
	if err != nil {
		return "", fmt.Errorf("engine: chat template: %w", err)
	}
	data := map[string]any{
		"messages":              ord.messages(msgs),
		"add_generation_prompt": true,
		"bos_token":             tok.bos,
		"eos_token":             tok.eos,
		"enable_thinking":       thinking,
		"raise_exception":       func(msg string) (string, error) { return "", errors.New(msg) },
		"strftime_now":          strftimeNow,
	}
	if len(tools) > 0 {
		data["tools"] = ord.tools(tools)
	}
	out, err = tpl.ExecuteToString(exec.NewContext(data))
	if err != nil {
		return "", fmt.Errorf("engine: chat template: %w", err)
	}
	return out, nil
}

// ordered remembers the key order of the JSON objects handed to a
// template (Go maps have none): the maps' identities map to the objects.
type ordered map[uintptr]*jsonObject

// jsonObject is a JSON object with its keys in order.
type jsonObject struct {
	keys []string
	vals []any
}

// value turns decoded JSON (objects as *jsonObject) into the maps and
// slices a template reads, remembering each map's key order.
func (ord ordered) value(v any) any {
	switch v := v.(type) {
	case *jsonObject:
		m := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			m[k] = ord.value(v.vals[i])
		}
		ord[reflect.ValueOf(m).Pointer()] = v
		return m
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = ord.value(x)
		}
		return out
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	}
	return v
}

// object decodes a JSON object for a template (nil if raw is not one).
func (ord ordered) object(raw []byte) any {
	v, err := decodeOrdered(raw)
	if err != nil {
		return nil
	}
	return ord.value(v)
}

func (ord ordered) messages(msgs []Message) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		x := map[string]any{"role": role, "content": m.Content}
		if len(m.ToolCalls) > 0 {
			calls := make([]any, len(m.ToolCalls))
			for k, c := range m.ToolCalls {
				args := ord.object([]byte(c.Arguments))
				if args == nil {
					args = map[string]any{}
				}
				fn := map[string]any{"name": c.Name, "arguments": args}
				calls[k] = map[string]any{"id": c.ID, "type": "function", "function": fn}
			}
			x["tool_calls"] = calls
		}
		if m.ToolCallID != "" {
			x["tool_call_id"] = m.ToolCallID
		}
		if m.Name != "" {
			x["name"] = m.Name
		}
		out[i] = x
	}
	return out
}

func (ord ordered) tools(tools []Tool) []any {
	out := make([]any, len(tools))
	for i, t := range tools {
		raw := toolJSON(t, false)
		out[i] = ord.object([]byte(raw))
	}
	return out
}

// decodeOrdered decodes JSON with objects as *jsonObject.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func() (any, error)
	walk = func() (any, error) {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		d, ok := t.(json.Delim)
		if !ok {
			return t, nil
		}
		if d == '[' {
			list := []any{}
			for dec.More() {
				v, err := walk()
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		obj := &jsonObject{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := walk()
			if err != nil {
				return nil, err
			}
			obj.keys, obj.vals = append(obj.keys, k.(string)), append(obj.vals, v)
		}
		_, err = dec.Token()
		return obj, err
	}
	return walk()
}

// jinjaToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=indent), objects in their keys' order.
func jinjaToJSON(in *exec.Value, params *exec.VarArgs, ord ordered) *exec.Value {
	if in.IsError() {
		return in
	}
	indent := 0
	if v, ok := params.KwArgs["indent"]; ok && v.IsInteger() {
		indent = v.Integer()
	} else if len(params.Args) > 0 && params.Args[0].IsInteger() {
		indent = params.Args[0].Integer()
	}
	var b strings.Builder
	writePy(&b, in.Interface(), ord, indent, 0)
	return exec.AsSafeValue(b.String())
}

// writePy writes v as Python's json.dumps does.
func writePy(b *strings.Builder, v any, ord ordered, indent, level int) {
	nl := func(level int) {
		if indent > 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", indent*level))
		}
	}
	sep := ", "
	if indent > 0 {
		sep = ","
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
		return
	case bool:
		b.WriteString(strconv.FormatBool(x))
		return
	case string:
		writeJSONString(b, x)
		return
	case *exec.Value:
		writePy(b, x.Interface(), ord, indent, level)
		return
	case json.Number:
		b.WriteString(x.String())
		return
	case *jsonObject:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(sep)
			}
			nl(level + 1)
			writeJSONString(b, k)
			b.WriteString(": ")
			writePy(b, x.vals[i], ord, indent, level+1)
		}
		nl(level)
		b.WriteByte('}')
		return
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(rv.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(rv.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0" // Python writes floats with a point
		}
		b.WriteString(s)
	case reflect.Slice, reflect.Array:
		if rv.Len() == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i := range rv.Len() {
			if i > 0 {
				b.WriteString(sep)
			}
			nl(level + 1)
			writePy(b, rv.Index(i).Interface(), ord, indent, level+1)
		}
		nl(level)
		b.WriteByte(']')
	case reflect.Map:
		var keys []string
		if obj := ord[rv.Pointer()]; obj != nil {
			keys = obj.keys
		} else {
			for _, k := range rv.MapKeys() {
				keys = append(keys, fmt.Sprint(k.Interface()))
			}
			sort.Strings(keys)
		}
		if len(keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(sep)
			}
			nl(level + 1)
			writeJSONString(b, k)
			b.WriteString(": ")
			writePy(b, rv.MapIndex(reflect.ValueOf(k)).Interface(), ord, indent, level+1)
		}
		nl(level)
		b.WriteByte('}')
	default:
		writeJSONString(b, fmt.Sprint(v))
	}
}

// jinjaNow is the clock of strftime_now (tests fix it).
var jinjaNow = time.Now

// strftimeNow is transformers' strftime_now: the current date in a
// Python strftime format (the directives chat templates use).
func strftimeNow(format string) string {
	now := jinjaNow()
	r := strings.NewReplacer("%d", now.Format("02"), "%-d", now.Format("2"), "%b", now.Format("Jan"), "%B", now.Format("January"),
		"%m", now.Format("01"), "%Y", now.Format("2006"), "%y", now.Format("06"), "%H", now.Format("15"), "%M", now.Format("04"),
		"%S", now.Format("05"), "%a", now.Format("Mon"), "%A", now.Format("Monday"), "%%", "%")
	return r.Replace(format)
}
