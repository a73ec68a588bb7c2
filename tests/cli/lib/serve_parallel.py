#!/usr/bin/env python3
"""serve_parallel.py - `sluice serve -np 2` for tests/cli/serve.sh: three
concurrent streamed greedy completions (two slots, the third queued) each
give the text the same request gives alone, and the queue serves the third.

Usage: serve_parallel.py PORT"""
import http.client
import json
import sys
import threading

port = int(sys.argv[1])


def check(name, cond, why=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(why)[:600]), flush=True)


def stream_text(prompt, out, idx):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        body = {"prompt": prompt, "max_tokens": 40, "temperature": 0, "ignore_eos": True, "stream": True}
        c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            out[idx] = ("status", r.status)
            return
        text, n = "", 0
        for ev in r.read().decode().split("\n\n"):
            if ev.startswith("data: ") and ev != "data: [DONE]":
                e = json.loads(ev[6:])
                if e["choices"]:
                    text += e["choices"][0]["text"]
                    n += 1
        out[idx] = text
    except Exception as e:  # noqa: BLE001
        out[idx] = ("exception", repr(e))


prompts = ["Once upon a time", "The keeper walked along the canal", "In the beginning"]
together = [None] * 3
threads = [threading.Thread(target=stream_text, args=(p, together, i)) for i, p in enumerate(prompts)]
for t in threads:
    t.start()
for t in threads:
    t.join()
alone = [None] * 3
for i, p in enumerate(prompts):
    stream_text(p, alone, i)
check("-np 2: three concurrent streams (one queued) all complete",
      all(isinstance(t, str) and t for t in together), together)
check("-np 2: each concurrent stream's text equals the same request alone", together == alone, (together, alone))
check("-np 2: the three prompts give different texts", len(set(alone)) == 3, alone)
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
c.request("GET", "/v1/models")
js = json.loads(c.getresponse().read())
check("-np 2: /v1/models reports 2 slots", js["data"][0]["meta"]["n_slots"] == 2, js)
c.request("OPTIONS", "/v1/chat/completions", headers={"Origin": "http://ui.example",
                                                      "Access-Control-Request-Method": "POST"})
r = c.getresponse()
r.read()
check("--cors: a preflight gets 204 with the origin, methods and headers",
      r.status == 204 and r.getheader("Access-Control-Allow-Origin") == "http://ui.example" and
      "POST" in r.getheader("Access-Control-Allow-Methods", "") and
      "authorization" in r.getheader("Access-Control-Allow-Headers", "").lower(), (r.status, r.getheaders()))
c.request("GET", "/v1/models", headers={"Origin": "http://ui.example"})
r = c.getresponse()
r.read()
check("--cors: responses carry Access-Control-Allow-Origin", r.getheader("Access-Control-Allow-Origin") == "http://ui.example",
      r.getheaders())


# --- a thinking template: the reply starts inside <think> -----------------------------
def post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, json.loads(r.read())


rendered = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
st, raw = post("/v1/completions", {"prompt": rendered, "max_tokens": 24, "temperature": 0})
raw_text = raw["choices"][0]["text"] if st == 200 else None
body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 24, "temperature": 0}
st, js = post("/v1/chat/completions", body)
msg = js["choices"][0]["message"] if st == 200 else {}
t = (raw_text or "").lstrip("\n")
want = (t[:t.index("</think>")], t[t.index("</think>") + 8:].lstrip()) if "</think>" in t else (t, "")
check("thinking template: the reply's text inside <think> is reasoning_content, the rest content",
      raw_text is not None and (msg.get("reasoning_content", ""), msg.get("content")) == want, (raw_text, msg))
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
c.request("POST", "/v1/chat/completions", body=json.dumps(dict(body, stream=True)),
          headers={"Content-Type": "application/json"})
evs = [json.loads(e[6:]) for e in c.getresponse().read().decode().split("\n\n")
       if e.startswith("data: ") and e != "data: [DONE]"]
rs = "".join(e["choices"][0]["delta"].get("reasoning_content", "") for e in evs if e["choices"])
cs = "".join(e["choices"][0]["delta"].get("content", "") for e in evs if e["choices"])
check("thinking template, streamed: reasoning_content and content deltas join to the same split",
      (rs, cs) == (msg.get("reasoning_content", ""), msg.get("content")), (rs, cs, msg))
st, js = post("/v1/chat/completions", dict(body, reasoning_format="none"))
check("reasoning_format none: everything is content", st == 200 and js["choices"][0]["message"]["content"] == raw_text and
      "reasoning_content" not in js["choices"][0]["message"], js)
print("client-finished", flush=True)
