#!/usr/bin/env python3
"""serve_prefix.py - prompt reuse from any slot, for tests/cli/serve_prefix.sh.

Usage: serve_prefix.py MODE PORT OUT_DIR [ARGS]

Every request is a greedy chat completion with the same long system prompt
and a user message chosen by its name (u1 to u4); answers are written to
OUT_DIR/NAME.txt for the shell to compare with a fresh server's.

  ask PORT OUT NAME...     sends each request in turn, writes its text and
                           its cached_tokens (OUT/NAME.cached)
  slots PORT OUT NAME      with a request (u1) already answered on this
                           server: keeps the slot that holds it busy with a
                           long streamed request that continues it, sends
                           NAME meanwhile (so another slot takes it), then
                           cancels the long one; checks that two slots
                           now hold tokens
  dialects PORT OUT        the same prefix through the Anthropic Messages
                           API (streamed and not) and llama-server's
                           /completion: each reports the cached tokens;
                           /metrics counts the memory cache's hits"""
import http.client
import json
import sys

mode, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
failed = 0

SYSTEM = " ".join(
    "You are the lock keeper's assistant on the old canal: you log every boat that passes, "
    "its name, its cargo and the hour, and you answer questions about the water level."
    for _ in range(6))
USERS = {
    "u1": "Which boats passed this morning?",
    "u2": "How high is the water at the lower gate today?",
    "u3": "Write the log entry for the barge Margaret.",
    "u4": "Tell me the whole history of the canal, every lock and every keeper.",
}


def check(name, cond, why=""):
    global failed
    failed += 0 if cond else 1
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(why)[:600]), flush=True)


def body(name, max_tokens=24, stream=False):
    return {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USERS[name]}],
            "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "stream": stream}


def post(path, req):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", path, body=json.dumps(req), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    return r.status, data


def ask(name):
    status, data = post("/v1/chat/completions", body(name))
    if status != 200:
        check(f"{name}: answered", False, f"{status} {data[:300]}")
        return None
    d = json.loads(data)
    text = d["choices"][0]["message"]["content"] or ""
    cached = d["usage"]["prompt_tokens_details"]["cached_tokens"]
    with open(f"{out}/{name}.txt", "w") as f:
        f.write(text)
    with open(f"{out}/{name}.cached", "w") as f:
        f.write(f"{cached}\n")
    return d


def slots():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/slots")
    return json.loads(c.getresponse().read().decode())


if mode == "ask":
    for name in sys.argv[4:]:
        ask(name)
elif mode == "slots":
    name = sys.argv[4]
    before = [s for s in slots() if s.get("n_tokens", 0) > 0]
    # the long request continues u1's prompt: it goes to the slot holding it
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/chat/completions", body=json.dumps(body("u1", max_tokens=1500, stream=True)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    first = r.readline()  # its first event: the slot is working on it
    check("the long request streams", r.status == 200 and first.startswith(b"data: "), first)
    busy = [s["id"] for s in slots() if s.get("is_processing")]
    d = ask(name)
    during = slots()
    still = [s["id"] for s in during if s.get("is_processing")]
    c.close()  # cancels the long request
    check(f"{name} was answered while the long request ran on slot {busy}", d is not None and still == busy,
          f"busy before {busy}, after {still}")
    held = [s["id"] for s in during if s.get("n_tokens", 0) > 0]
    check(f"{name} went to another slot than the busy one (slots holding tokens: {held})",
          len(held) == len(before) + 1 and len(before) == 1, during)
elif mode == "dialects":
    # Anthropic Messages, not streamed: usage.cache_read_input_tokens
    req = {"model": "m", "system": SYSTEM, "max_tokens": 8, "temperature": 0,
           "messages": [{"role": "user", "content": USERS["u3"]}]}
    status, data = post("/v1/messages", req)
    u = json.loads(data).get("usage", {}) if status == 200 else {}
    check("anthropic: cache_read_input_tokens > 0", u.get("cache_read_input_tokens", 0) > 0, data[:300])
    check("anthropic: input_tokens counts only the rest",
          u.get("input_tokens", -1) >= 0 and u.get("input_tokens", 0) + u.get("cache_read_input_tokens", 0) > 0
          and u.get("input_tokens", 10**9) < u.get("cache_read_input_tokens", 0), u)
    # streamed: message_start already has the split
    status, data = post("/v1/messages", dict(req, stream=True))
    start = None
    for ev in data.split("\n\n"):
        for line in ev.split("\n"):
            if line.startswith("data: "):
                e = json.loads(line[6:])
                if e.get("type") == "message_start":
                    start = e["message"]["usage"]
    check("anthropic stream: message_start's cache_read_input_tokens > 0",
          start is not None and start.get("cache_read_input_tokens", 0) > 0, data[:300])
    # llama-server's /completion on the chat prompt text: tokens_cached
    status, data = post("/apply-template", {"messages": body("u2")["messages"]})
    prompt = json.loads(data).get("prompt", "") if status == 200 else ""
    status, data = post("/completion", {"prompt": prompt, "n_predict": 4, "temperature": 0})
    d = json.loads(data) if status == 200 else {}
    check("/completion: tokens_cached > 0", d.get("tokens_cached", 0) > 0, data[:300])
    # /metrics: the cache in memory served a request and holds states within its budget
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/metrics")
    m = {}
    for line in c.getresponse().read().decode().split("\n"):
        if line.startswith("sluice_"):
            k, v = line.split(" ")
            m[k] = float(v)
    check("/metrics: prompt-cache hits in memory", m.get("sluice_prompt_cache_ram_hits_total", 0) >= 1, m)
    check("/metrics: states kept within the budget",
          m.get("sluice_prompt_cache_ram_entries", 0) >= 1 and
          0 < m.get("sluice_prompt_cache_ram_bytes", 0) <= m.get("sluice_prompt_cache_ram_budget_bytes", 0), m)
print("client-finished")
sys.exit(1 if failed else 0)
