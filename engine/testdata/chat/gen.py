#!/usr/bin/env python3
"""Regenerates goldens.json: the chat templates of templates.json rendered
by Python's Jinja2 set up as Hugging Face transformers' apply_chat_template
does (the reference for engine/jinja.go). Run from this folder:

    python3 gen.py OLLAMA_MODULE_DIR

where OLLAMA_MODULE_DIR is `go list -m -f '{{.Dir}}' github.com/ollama/ollama`
(its template/index.json and model/renderers/testdata/*.jinja2 are real
models' templates, MIT-licensed), plus templates_extra.json.
"""
import json, sys, glob, os
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols

def raise_exception(msg):
    raise Exception(msg)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

def strftime_now(fmt):
    import datetime
    return datetime.datetime(2026, 11, 24, 9, 5, 7).strftime(fmt)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now

tools = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "description": "City, e.g. Paris"}, "unit": {"enum": ["C", "F"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "zoom", "parameters": {"type": "object", "properties": {"level": {"type": "number", "minimum": 0.5}}}}},
]
convs = {
    "chat": ([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi there"},
              {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "An order, please."}], None),
    "tools": ([{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"unit": "C", "city": "Paris"}}}]},
               {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21}"},
               {"role": "user", "content": "And tomorrow?"}], tools),
}

templates = []
d = sys.argv[1]
templates += [{"name": "ollama-" + t["name"] + "-" + str(i), "template": t["template"]} for i, t in enumerate(json.load(open(os.path.join(d, "template", "index.json"))))]
for f in sorted(glob.glob(os.path.join(d, "model", "renderers", "testdata", "*.jinja2"))):
    templates.append({"name": os.path.basename(f), "template": open(f).read()})
templates += json.load(open("templates_extra.json"))

out = []
for t in templates:
    for cname, (msgs, tl) in convs.items():
        for thinking in (True, False):
            if thinking is False and "enable_thinking" not in t["template"]:
                continue
            ctx = dict(messages=msgs, add_generation_prompt=True, bos_token="<s>", eos_token="</s>", enable_thinking=thinking)
            if tl:
                ctx["tools"] = tl
            rec = {"template": t["name"], "conv": cname, "thinking": thinking}
            try:
                rec["want"] = env.from_string(t["template"]).render(**ctx)
            except Exception as e:
                rec["error"] = str(e)
            out.append(rec)
json.dump({"templates": templates, "cases": out}, open("goldens.json", "w"), indent=1, ensure_ascii=False)
print(len(templates), "templates,", len(out), "cases,", sum("error" in r for r in out), "errors")
