#!/usr/bin/env python3
"""prefix_ttft.py PORT WORDS NAME... - for bench/prefix_ttft.sh: sends one
streamed greedy chat request per NAME (the same system prompt of WORDS
words, a user message chosen by NAME), one after the other, and prints
"NAME ttft_ms T prompt_tokens P cached_tokens C" for each; the time runs
from sending the request to the first event that carries generated text
(content or reasoning). A NAME "A+B" sends A and B at the same time (so
that they take two slots) and prints both, then the slots holding tokens.
A NAME "turnR" is a conversation: u1 with a greedy reply of R tokens
("turnR.1"), then the second turn (system, u1, that reply, u2: "turnR.2",
whose reply's rows the cache cannot keep, as they were decoded) and the
same second turn again ("turnR.3", everything but its last rows held)."""
import http.client
import json
import sys
import threading
import time

port, words, names = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
vocab = ("lock keeper canal boat barge cargo water level gate hour river mill wheel grain "
         "harbour rope lantern ledger toll bridge towpath horse tide sluice").split()
system = " ".join(vocab[(i * 7 + i // 5) % len(vocab)] for i in range(words))
users = {"u1": "Which boats passed this morning?",
         "u2": "How high is the water at the lower gate today?",
         "u3": "Write the log entry for the barge Margaret.",
         "u4": "Tell me the history of the canal.",
         "u5": "Which barges carry grain?",
         "u6": "When does the evening tide turn?"}


def one(name, messages=None, max_tokens=8):
    """Sends one request and prints its line; returns the reply's text."""
    if messages is None:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": users[name]}]
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True}}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    ttft, usage, text = None, {}, ""
    while True:
        line = r.readline()
        if not line:
            break
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        e = json.loads(line[6:])
        if e.get("usage"):
            usage = e["usage"]
        for ch in e.get("choices") or []:
            d = ch.get("delta") or {}
            if ttft is None and (d.get("content") or d.get("reasoning_content")):
                ttft = time.perf_counter() - t0
            text += d.get("content") or ""
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    print(f"{name} ttft_ms {1000 * (ttft or 0):.0f} prompt_tokens {usage.get('prompt_tokens', 0)} "
          f"cached_tokens {cached}", flush=True)
    return text


def turns(name):
    reply = one(name + ".1", max_tokens=int(name[4:]),
                messages=[{"role": "system", "content": system}, {"role": "user", "content": users["u1"]}])
    second = [{"role": "system", "content": system}, {"role": "user", "content": users["u1"]},
              {"role": "assistant", "content": reply}, {"role": "user", "content": users["u2"]}]
    one(name + ".2", second)
    one(name + ".3", second)


for name in names:
    if name.startswith("turn"):
        turns(name)
        continue
    if "+" not in name:
        one(name)
        continue
    ts = [threading.Thread(target=one, args=(n,)) for n in name.split("+")]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/slots")
    held = [s["id"] for s in json.loads(c.getresponse().read().decode()) if s["n_tokens"] > 0]
    print(f"# slots holding tokens: {held}", flush=True)
