#!/usr/bin/env python3
"""serve_tool_choice.py - forcing tool_choice for tests/cli/serve_tool_choice.sh.

Usage: serve_tool_choice.py PORT (a server with the qwen3 template)"""
import http.client
import json
import sys

port = int(sys.argv[1])
failed = 0


def check(name, cond, why=""):
    global failed
    failed += 0 if cond else 1
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(why)[:600]), flush=True)


def post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data


tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}]
msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
_, auto = post("/apply-template", {"messages": msgs, "tools": tools, "tool_choice": "auto"})
st, req = post("/apply-template", {"messages": msgs, "tools": tools, "tool_choice": "required"})
check("required: 200", st == 200, req)
check("required: the prompt is the auto prompt plus the call opening",
      st == 200 and req["prompt"] == auto["prompt"] + "<tool_call>\n", (req, auto))
st, named = post("/apply-template", {"messages": msgs, "tools": tools,
                                     "tool_choice": {"type": "function", "function": {"name": "get_time"}}})
check("a named function: the prompt ends inside that call",
      st == 200 and named["prompt"] == auto["prompt"] + '<tool_call>\n{"name": "get_time", "arguments": ',
      named)
st, none = post("/apply-template", {"messages": msgs, "tools": tools, "tool_choice": "none"})
check("none: the tools are not in the prompt", st == 200 and "get_weather" not in none["prompt"]
      and "get_weather" in auto["prompt"], none)
st, body = post("/v1/chat/completions", {"messages": msgs, "tools": tools,
                                         "tool_choice": {"type": "function", "function": {"name": "nope"}}})
check("an unknown function name is a 400 naming it", st == 400 and "nope" in json.dumps(body), (st, body))
st, body = post("/v1/chat/completions", {"messages": msgs, "tools": tools, "tool_choice": {"type": "function"}})
check("a tool_choice object without a name is a 400", st == 400, (st, body))
for stream in (False, True):
    st, body = post("/v1/chat/completions", {"messages": msgs, "tools": tools, "tool_choice": "required",
                                             "max_tokens": 6, "temperature": 0, "stream": stream})
    check("a forced chat request is answered (stream %s)" % stream, st == 200, (st, body))

amsgs = [{"role": "user", "content": "What is the weather in Paris?"}]
atools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
          {"name": "get_time", "input_schema": {"type": "object"}}]


def count(choice):
    b = {"model": "m", "messages": amsgs, "tools": atools}
    if choice:
        b["tool_choice"] = choice
    return post("/v1/messages/count_tokens", b)


_, a_auto = count({"type": "auto"})
st, a_any = count({"type": "any"})
_, a_tool = count({"type": "tool", "name": "get_weather"})
check("Anthropic any: the prompt grows by the call opening",
      st == 200 and a_any["input_tokens"] > a_auto["input_tokens"], (a_any, a_auto))
check("Anthropic tool: the prompt grows by the opening and the name",
      a_tool.get("input_tokens", 0) > a_any["input_tokens"], (a_tool, a_any))
st, body = count({"type": "tool"})
check("Anthropic tool without a name is a 400", st == 400, (st, body))
st, body = count({"type": "tool", "name": "nope"})
check("Anthropic tool naming an unknown tool is a 400", st == 400, (st, body))
st, body = post("/v1/messages", {"model": "m", "max_tokens": 6, "messages": amsgs, "tools": atools,
                                 "tool_choice": {"type": "tool", "name": "get_weather"}, "temperature": 0})
check("a forced Anthropic request is answered", st == 200 and body.get("type") == "message", (st, body))
sys.exit(1 if failed else 0)
