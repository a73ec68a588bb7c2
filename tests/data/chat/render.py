#!/usr/bin/env python3
"""render.py - renders the official chat templates with Jinja2 the way
Hugging Face transformers does (trim_blocks, lstrip_blocks, its tojson:
json.dumps with ensure_ascii=False and no key sorting), to produce the
expected strings of tests/unit/test_chat_families.c independently of
sluice's C renderers.

    python3 tests/data/chat/render.py TEMPLATE.jinja CASE

CASE names a conversation below; the output is the rendered text as a C
string literal. Templates: llama.cpp's models/templates/*.jinja (copies of
the models' official tokenizer_config.json chat templates)."""
import json
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}}}]

CASES = {
    # system, two user turns, the first answered with reasoning in the content
    "history": dict(messages=[
        {"role": "system", "content": " Be brief. "},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>\nsay hi\n</think>\n\nHello!"},
        {"role": "user", "content": "Sky? "},
    ], add_generation_prompt=True),
    "history_nothink": dict(messages=[
        {"role": "system", "content": " Be brief. "},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>\nsay hi\n</think>\n\nHello!"},
        {"role": "user", "content": "Sky? "},
    ], add_generation_prompt=True, enable_thinking=False),
    # after the last user query: reasoning given apart, then the final answer
    "after_query": dict(messages=[
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!", "reasoning_content": " greet "},
    ], add_generation_prompt=False),
    # a tool round trip
    "tools": dict(messages=[
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments":
             {"city": "Paris", "days": 2, "hourly": True, "units": ["C", "hPa"]}}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments":
             {"city": "Nice"}}}]},
        {"role": "tool", "content": "{\"temp\": 21}", "tool_call_id": "c1", "name": "get_weather"},
        {"role": "tool", "content": "{\"temp\": 23}", "tool_call_id": "c2", "name": "get_weather"},
    ], tools=TOOLS, add_generation_prompt=True),
}


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    tmpl = env.from_string(open(sys.argv[1], encoding="utf-8").read())
    case = dict(CASES[sys.argv[2]])
    for k, v in [a.split("=", 1) for a in sys.argv[3:]]:
        case[k] = {"true": True, "false": False}.get(v, v)
    out = tmpl.render(bos_token=case.pop("bos_token", ""), eos_token="", **case)
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
