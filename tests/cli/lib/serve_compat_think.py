#!/usr/bin/env python3
"""serve_compat_think.py - Anthropic's "thinking" on a thinking template, for
tests/cli/serve_compat.sh.

Usage: serve_compat_think.py PORT (a server whose template opens <think> in
the prompt). The chat endpoint's split (reasoning_content, content) is the
reference: /v1/messages without "thinking" answers the content alone; with
"thinking": {"type": "enabled"} a thinking block with the reasoning comes
first; streamed, thinking_delta and text_delta events in consecutive blocks
join to the same texts. Prints "ok NAME" / "FAIL NAME: why" lines."""
import http.client
import json
import sys

port = int(sys.argv[1])


def check(name, cond, why=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(why)[:700]), flush=True)


def post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    raw = r.read().decode()
    c.close()
    if body.get("stream"):
        evs = []
        for ev in raw.split("\n\n"):
            lines = dict(l.split(": ", 1) for l in ev.split("\n") if ": " in l)
            if "data" in lines:
                evs.append((lines.get("event"), json.loads(lines["data"])))
        return r.status, evs
    return r.status, json.loads(raw)


msgs = [{"role": "user", "content": "hi"}]
st, js = post("/v1/chat/completions", {"messages": msgs, "max_tokens": 24, "temperature": 0})
m = js["choices"][0]["message"] if st == 200 else {}
reason, content = m.get("reasoning_content", ""), m.get("content") or ""
check("thinking template: the chat answer has reasoning_content", st == 200 and reason != "", (st, js))
body = {"model": "m", "messages": msgs, "max_tokens": 24, "temperature": 0}
st, js = post("/v1/messages", body)
check("messages without thinking: the content alone, no thinking block", st == 200 and
      [b["type"] for b in js["content"]] == ["text"] and js["content"][0]["text"] == content, (st, js, content))
st, js = post("/v1/messages", dict(body, thinking={"type": "enabled", "budget_tokens": 1024}))
check("messages with thinking enabled: a thinking block with the reasoning, then the text", st == 200 and
      js["content"][0] == {"type": "thinking", "thinking": reason, "signature": ""} and
      js["content"][1] == {"type": "text", "text": content}, (st, js, reason, content))
st, js = post("/v1/messages", dict(body, thinking={"type": "disabled"}))
check("messages with thinking disabled: the text alone", st == 200 and [b["type"] for b in js["content"]] == ["text"],
      (st, js))
st, evs = post("/v1/messages", dict(body, thinking={"type": "enabled", "budget_tokens": 1024}, stream=True))
think = "".join(d["delta"].get("thinking", "") for n, d in evs if n == "content_block_delta")
text = "".join(d["delta"].get("text", "") for n, d in evs if n == "content_block_delta")
starts = [d for n, d in evs if n == "content_block_start"]
stops = [d["index"] for n, d in evs if n == "content_block_stop"]
check("streamed with thinking: thinking_delta and text_delta join to the same texts", st == 200 and
      (think, text) == (reason, content), (think, text, reason, content))
check("streamed with thinking: blocks thinking then text, indexes 0, 1, each stopped", st == 200 and
      [(d["index"], d["content_block"]["type"]) for d in starts][:1] == [(0, "thinking")] and
      [d["index"] for d in starts] == list(range(len(starts))) and stops == list(range(len(starts))), evs)
check("streamed with thinking: message_stop last", st == 200 and evs[-1][0] == "message_stop", evs[-1:])
st, evs = post("/v1/messages", dict(body, stream=True))
text = "".join(d["delta"].get("text", "") for n, d in evs if n == "content_block_delta")
check("streamed without thinking: only text deltas, the content", st == 200 and text == content and
      all(d["delta"]["type"] == "text_delta" for n, d in evs if n == "content_block_delta"), (text, content))
st, js = post("/v1/messages", dict(body, thinking="yes"))
check("a 'thinking' that is not an object with a type: 400", st == 400 and js["type"] == "error", (st, js))
print("client-finished")
