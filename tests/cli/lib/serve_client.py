#!/usr/bin/env python3
"""serve_client.py - drives a running `sluice serve` for tests/cli/serve.sh.

Usage: serve_client.py PORT KEY EXPECTED_RUN_TEXT_FILE PROMPT N
Prints "ok NAME" / "FAIL NAME: why" lines; the shell test counts them.
Only the standard library: the wire format is checked by hand here (the
official openai client is a separate test)."""
import http.client
import json
import random
import socket
import sys
import time

import serve_http
from serve_http import check

port, key, expected_file, prompt, n_pred = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
expected = open(expected_file, encoding="utf-8").read()
AUTH = {"Authorization": "Bearer " + key}


def request(method, path, body=None, headers=None, raw=None, timeout=120):
    """serve_http.request with the key (headers may override it): (status, json or None, bytes)."""
    st, js, out, _ = serve_http.request(port, method, path, body, {**AUTH, **(headers or {})}, raw, timeout)
    return st, js, out


def sse(path, body):
    """POSTs and parses the reply event by event: returns (status, [json objects], done_seen, raw_lines_ok)."""
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
    h = dict(AUTH)
    h["Content-Type"] = "application/json"
    c.request("POST", path, body=json.dumps(body).encode(), headers=h)
    r = c.getresponse()
    if r.status != 200:
        return r.status, [], False, False
    ctype = r.getheader("Content-Type", "")
    events, done, well_formed = [], False, ctype.startswith("text/event-stream")
    buf = b""
    while True:
        chunk = r.read1(65536) if hasattr(r, "read1") else r.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            line = ev.decode("utf-8")
            if not line.startswith("data: ") or done:
                well_formed = False
                continue
            payload = line[6:]
            if payload == "[DONE]":
                done = True
                continue
            events.append(json.loads(payload))
    c.close()
    return 200, events, done, well_formed and buf == b""


# --- health, key, models ---------------------------------------------------
st, js, _ = request("GET", "/health")
check("GET /health answers {status: ok}", st == 200 and js == {"status": "ok"}, (st, js))
st, js, _ = request("GET", "/v1/models", headers={"Authorization": ""})
check("no API key: 401 with a JSON error", st == 401 and js and "message" in js["error"], (st, js))
st, js, _ = request("GET", "/v1/models", headers={"Authorization": "Bearer wrong" + key})
check("wrong API key: 401", st == 401, st)
st, js, _ = request("GET", "/v1/models")
ok = st == 200 and js["object"] == "list" and len(js["data"]) == 1
check("GET /v1/models lists the model with its context",
      ok and js["data"][0]["id"] == "m.gguf" and js["data"][0]["meta"]["n_ctx"] == 2048, js)

# --- completions equal `sluice run` ------------------------------------------
greedy = {"prompt": prompt, "max_tokens": n_pred, "temperature": 0}
st, js, _ = request("POST", "/v1/completions", greedy)
text = js["choices"][0]["text"] if st == 200 else None
check("greedy /v1/completions text equals sluice run's", text == expected, (st, text, expected))
check("completion: finish_reason length, usage counts",
      st == 200 and js["choices"][0]["finish_reason"] == "length" and
      js["usage"]["completion_tokens"] == n_pred and
      js["usage"]["total_tokens"] == js["usage"]["prompt_tokens"] + n_pred, js)
st2, tok, _ = request("POST", "/tokenize", {"content": prompt, "add_special": True})
check("usage.prompt_tokens equals /tokenize's count",
      st2 == 200 and st == 200 and len(tok["tokens"]) == js["usage"]["prompt_tokens"], (tok, js))

st, evs, done, wf = sse("/v1/completions", dict(greedy, stream=True, stream_options={"include_usage": True}))
check("streamed completion: every event is 'data: {json}', then 'data: [DONE]'", st == 200 and done and wf, (st, done, wf))
pieces = [e["choices"][0]["text"] for e in evs if e.get("choices")]
check("streamed completion: the pieces join to sluice run's text", "".join(pieces) == expected, pieces)
check("streamed completion: several chunks, object text_completion",
      len(pieces) >= n_pred // 2 and all(e["object"] == "text_completion" for e in evs), len(pieces))
check("streamed completion: finish_reason only on the last text chunk",
      [e["choices"][0]["finish_reason"] for e in evs if e.get("choices")][-1] == "length" and
      all(e["choices"][0]["finish_reason"] is None for e in evs[:-2] if e.get("choices")), evs[-3:])
check("include_usage: the last chunk has empty choices and the usage",
      bool(evs) and evs[-1]["choices"] == [] and evs[-1]["usage"]["completion_tokens"] == n_pred, evs[-1:])

# stop text: cut where it first appears
idx = max(1, len(expected) // 2)
stop = expected[idx:idx + 3]
if len(stop) >= 1 and stop.strip():
    cut = expected[:expected.find(stop)]
    st, js, _ = request("POST", "/v1/completions", dict(greedy, stop=[stop]))
    check("stop: the text ends before the stop text, finish_reason stop",
          st == 200 and js["choices"][0]["text"] == cut and js["choices"][0]["finish_reason"] == "stop",
          (stop, cut, js))

# --- chat ------------------------------------------------------------------
chat = {"messages": [{"role": "system", "content": "You are brief."},
                     {"role": "user", "content": "Say something."}],
        "max_tokens": 12, "temperature": 0}
st, js, _ = request("POST", "/v1/chat/completions", chat)
ok = st == 200 and js["object"] == "chat.completion" and js["choices"][0]["message"]["role"] == "assistant"
check("chat: an assistant message", ok and isinstance(js["choices"][0]["message"]["content"], str), js)
answer = js["choices"][0]["message"]["content"] if ok else None
st, js2, _ = request("POST", "/v1/chat/completions", chat)
check("chat again: the same answer, the prompt reused (cached_tokens)",
      st == 200 and js2["choices"][0]["message"]["content"] == answer and
      js2["usage"]["prompt_tokens_details"]["cached_tokens"] > 0, js2)
st, js3, _ = request("POST", "/v1/chat/completions",
                     dict(chat, messages=[{"role": "system", "content": [{"type": "text", "text": "You are brief."}]},
                                          chat["messages"][1]]))
check("chat: content as an array of text parts gives the same answer",
      st == 200 and js3["choices"][0]["message"]["content"] == answer, js3)
st, evs, done, wf = sse("/v1/chat/completions", dict(chat, stream=True, stream_options={"include_usage": True}))
check("streamed chat: well-formed events and [DONE]", st == 200 and done and wf, (st, done, wf))
check("streamed chat: the first delta has role assistant",
      evs and evs[0]["choices"][0]["delta"].get("role") == "assistant", evs[:1])
content = "".join(e["choices"][0]["delta"].get("content", "") for e in evs if e.get("choices"))
check("streamed chat: the deltas join to the non-streamed answer", content == answer, (content, answer))
check("streamed chat: usage in the last chunk", evs and evs[-1]["choices"] == [] and
      evs[-1]["usage"]["completion_tokens"] == js["usage"]["completion_tokens"], evs[-1])
st, js, _ = request("POST", "/v1/chat/completions", dict(chat, temperature=0.9, seed=7, top_k=20, top_p=0.9, min_p=0.01,
                                                        presence_penalty=0.5, frequency_penalty=0.5))
st2, js2, _ = request("POST", "/v1/chat/completions", dict(chat, temperature=0.9, seed=7, top_k=20, top_p=0.9, min_p=0.01,
                                                          presence_penalty=0.5, frequency_penalty=0.5))
check("sampled chat with a seed repeats itself", st == 200 and st2 == 200 and
      js["choices"][0]["message"]["content"] == js2["choices"][0]["message"]["content"], (js, js2))

# --- Anthropic Messages ------------------------------------------------------------


def sse_named(path, body, headers=None):
    """POSTs and parses 'event: NAME' / 'data: JSON' pairs: (status, [(name, obj)], well_formed)."""
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
    h = {"x-api-key": key, "anthropic-version": "2023-06-01", "Content-Type": "application/json"}
    c.request("POST", path, body=json.dumps(body).encode(), headers=h)
    r = c.getresponse()
    if r.status != 200:
        return r.status, [], False
    raw = r.read().decode("utf-8")
    c.close()
    evs, wf = [], raw.endswith("\n\n")
    for block in raw.split("\n\n")[:-1]:
        lines = block.split("\n")
        if len(lines) != 2 or not lines[0].startswith("event: ") or not lines[1].startswith("data: "):
            wf = False
            continue
        obj = json.loads(lines[1][6:])
        wf = wf and obj.get("type") == lines[0][7:]
        evs.append((lines[0][7:], obj))
    return 200, evs, wf


ant = {"system": "You are brief.", "messages": [{"role": "user", "content": "Say something."}],
       "max_tokens": 12, "temperature": 0}
ah = {"Authorization": "", "x-api-key": key, "anthropic-version": "2023-06-01"}
st, js, _ = request("POST", "/v1/messages", ant, headers=ah)
ok = st == 200 and js["type"] == "message" and js["role"] == "assistant" and js["content"][0]["type"] == "text"
check("messages: an assistant message with a text block (x-api-key accepted)", ok, (st, js))
mtext = js["content"][0]["text"] if ok else None
check("messages: the same text as the chat completion of the same conversation", mtext == answer, (mtext, answer))
check("messages: stop_reason and usage", ok and js["stop_reason"] in ("max_tokens", "end_turn") and
      js["usage"]["output_tokens"] <= 12 and js["stop_sequence"] is None, js)
st2, cnt, _ = request("POST", "/v1/messages/count_tokens", {"system": ant["system"], "messages": ant["messages"]}, headers=ah)
check("count_tokens equals the message's input plus cached tokens",
      st2 == 200 and ok and cnt["input_tokens"] == js["usage"]["input_tokens"] + js["usage"]["cache_read_input_tokens"],
      (cnt, js.get("usage") if js else None))
st, evs, wf = sse_named("/v1/messages", dict(ant, stream=True))
names = [n for n, _ in evs]
check("streamed messages: event/data pairs whose type names the event", st == 200 and wf, (st, names[:4]))
seq_ok = (names[:2] == ["message_start", "content_block_start"] and names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
          and all(n == "content_block_delta" for n in names[2:-3]))
check("streamed messages: message_start, content_block_start, deltas, content_block_stop, message_delta, message_stop",
      seq_ok, names)
stext = "".join(o["delta"]["text"] for n, o in evs if n == "content_block_delta")
check("streamed messages: the text deltas join to the non-streamed text", stext == mtext, (stext, mtext))
md = [o for n, o in evs if n == "message_delta"]
check("streamed messages: message_delta has the stop_reason and output_tokens",
      md and md[0]["delta"]["stop_reason"] == js["stop_reason"] and md[0]["usage"]["output_tokens"] == js["usage"]["output_tokens"], md)
if mtext and len(mtext) > 3 and mtext[2:4].strip():
    sq = mtext[2:4]
    st, js2, _ = request("POST", "/v1/messages", dict(ant, stop_sequences=[sq]), headers=ah)
    check("messages: stop_sequences end the text and are named",
          st == 200 and js2["content"][0]["text"] == mtext[:mtext.find(sq)] and js2["stop_reason"] == "stop_sequence"
          and js2["stop_sequence"] == sq, (sq, js2))


def aerr(name, status, body=None, raw=None, path="/v1/messages"):
    st, js, out = request("POST", path, body, headers=ah, raw=raw)
    check(name, st == status and js and js.get("type") == "error" and isinstance(js["error"].get("message"), str)
          and isinstance(js["error"].get("type"), str), (st, out[:300]))


aerr("messages without max_tokens: 400 in Anthropic's error shape", 400, {"messages": ant["messages"]})
aerr("messages: malformed JSON: 400 in Anthropic's error shape", 400, raw=b'{"max_tokens": 3,')
aerr("messages: a tool_result block without tool_use_id: 400", 400,
     dict(ant, messages=[{"role": "user", "content": [{"type": "tool_result", "content": "y"}]}]))
aerr("messages: a tool without a name: 400", 400, dict(ant, tools=[{"input_schema": {"type": "object"}}]))
st, js, _ = request("POST", "/v1/messages", ant, headers={"Authorization": ""})
check("messages without a key: 401 in Anthropic's error shape", st == 401 and js["type"] == "error", (st, js))

# --- prompt reuse: a long shared system prompt -----------------------------------------
long_sys = " ".join("rule %d: keep the canal locks closed at night." % i for i in range(40))
def timed_chat(user):
    t0 = time.time()
    st, js, _ = request("POST", "/v1/chat/completions", {"messages": [{"role": "system", "content": long_sys},
                                                                   {"role": "user", "content": user}],
                                                      "max_tokens": 4, "temperature": 0})
    return time.time() - t0, st, js


request("POST", "/v1/completions", {"prompt": "something else entirely", "max_tokens": 1})  # the slot forgets
cold_t, st1, cold = timed_chat("First question?")
warm_t, st2, warm = timed_chat("Second question?")
again_t, st3, again = timed_chat("First question?")
n_sys = cold["usage"]["prompt_tokens"] if st1 == 200 else 0
check("a long system prompt (%d tokens) is evaluated once: the next request reuses it (cached_tokens %s)" %
      (n_sys, warm["usage"]["prompt_tokens_details"]["cached_tokens"] if st2 == 200 else "?"),
      st1 == st2 == 200 and n_sys > 1000 and cold["usage"]["prompt_tokens_details"]["cached_tokens"] < 10 and
      warm["usage"]["prompt_tokens_details"]["cached_tokens"] > n_sys - 20, (cold, warm))
check("the reused prompt answers as the cold one did (same text)",
      st3 == 200 and again["choices"][0]["message"]["content"] == cold["choices"][0]["message"]["content"], (cold, again))
check("reusing the prompt is faster (cold %.3f s, warm %.3f s)" % (cold_t, warm_t), warm_t < cold_t / 5, (cold_t, warm_t))

# --- tokenize / detokenize ------------------------------------------------------
st, tok, _ = request("POST", "/tokenize", {"content": "hello world, again", "with_pieces": True})
pieces_ok = st == 200 and "".join(p["piece"] for p in tok["tokens"]) == "hello world, again"
check("/tokenize with_pieces: the pieces spell the text", pieces_ok, tok)
st, tok, _ = request("POST", "/tokenize", {"content": "hello world, again"})
st2, det, _ = request("POST", "/detokenize", {"tokens": tok["tokens"]})
check("/detokenize(/tokenize(text)) is the text", st2 == 200 and det["content"] == "hello world, again", det)


# --- /apply-template, truncate ------------------------------------------------------------
st, js, _ = request("POST", "/apply-template", {"messages": chat["messages"]})
check("/apply-template renders the messages with the model's ChatML template",
      st == 200 and js["prompt"] == "<|im_start|>system\nYou are brief.<|im_end|>\n<|im_start|>user\nSay something."
      "<|im_end|>\n<|im_start|>assistant\n", js)
long_prompt = "word " * 5000
st, js, _ = request("POST", "/v1/completions", {"prompt": long_prompt, "max_tokens": 4, "temperature": 0, "truncate": True})
check("truncate: a prompt longer than the context keeps its last tokens and is answered",
      st == 200 and js["usage"]["prompt_tokens"] == 2048 - 4 and js["usage"]["completion_tokens"] <= 4, (st, js))

# --- errors ----------------------------------------------------------------------
def err(name, status, method, path, body=None, raw=None, headers=None):
    st, js, out = request(method, path, body, headers=headers, raw=raw)
    check(name, st == status and js and isinstance(js.get("error", {}).get("message"), str), (st, out[:300]))


err("malformed JSON: 400", 400, "POST", "/v1/completions", raw=b'{"prompt": "x",')
err("duplicate keys: 400", 400, "POST", "/v1/completions", raw=b'{"prompt": "x", "prompt": "y"}')
err("nesting 100 deep: 400", 400, "POST", "/v1/completions", raw=b'{"a":' * 100 + b'1' + b'}' * 100)
err("a body that is not an object: 400", 400, "POST", "/v1/completions", raw=b'[1, 2]')
err("wrong type (temperature a string): 400", 400, "POST", "/v1/completions", {"prompt": "x", "temperature": "hot"})
err("top_p 0: 400", 400, "POST", "/v1/completions", {"prompt": "x", "top_p": 0})
err("negative max_tokens: 400", 400, "POST", "/v1/completions", {"prompt": "x", "max_tokens": -3})
err("no prompt: 400", 400, "POST", "/v1/completions", {"max_tokens": 3})
err("no messages: 400", 400, "POST", "/v1/chat/completions", {"max_tokens": 3})
err("a message without a role: 400", 400, "POST", "/v1/chat/completions", {"messages": [{"content": "x"}]})
err("an unknown role: 400", 400, "POST", "/v1/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]})
err("seventeen stop texts: 400 (up to 16)", 400, "POST", "/v1/completions", {"prompt": "x", "stop": ["s%d" % i for i in range(17)]})
err("n = 2: 400", 400, "POST", "/v1/completions", {"prompt": "x", "n": 2})
err("a prompt longer than the context: 400", 400, "POST", "/v1/completions", {"prompt": "word " * 5000})
err("detokenize an id out of range: 400", 400, "POST", "/detokenize", {"tokens": [1, 10 ** 9]})
err("a body over --max-body: 413", 413, "POST", "/v1/completions", raw=b'{"prompt": "' + b"x" * 300000 + b'"}')
err("an unknown endpoint: 404", 404, "GET", "/v1/nothing")
err("GET on a POST endpoint: 405", 405, "GET", "/v1/completions")
err("a Host that is not loopback: 403", 403, "GET", "/v1/models", headers={"Host": "attacker.example:8080"})
st, js, _ = request("GET", "/v1/models", headers={"Host": "localhost:" + port})
check("Host localhost:PORT is accepted", st == 200, st)

# --- logprobs -------------------------------------------------------------------------
import math  # noqa: E402

st, js, _ = request("POST", "/v1/chat/completions", dict(chat, logprobs=True, top_logprobs=3))
lp = js["choices"][0]["logprobs"]["content"] if st == 200 and js["choices"][0]["logprobs"] else None
check("chat logprobs: one entry per generated token", lp is not None and len(lp) == js["usage"]["completion_tokens"], js)
if lp:
    greedy_ok = all(e["logprob"] <= 0 and len(e["top_logprobs"]) == 3 and
                    e["top_logprobs"][0]["token"] == e["token"] and e["top_logprobs"][0]["logprob"] == e["logprob"] and
                    all(a["logprob"] >= b["logprob"] for a, b in zip(e["top_logprobs"], e["top_logprobs"][1:])) and
                    sum(math.exp(t["logprob"]) for t in e["top_logprobs"]) <= 1 + 1e-6 for e in lp)
    check("chat logprobs (greedy): the token is the most likely, alternatives sorted, probabilities <= 1", greedy_ok, lp[:2])
    raw = b"".join(bytes(e["bytes"]) for e in lp)
    try:
        joined = raw.decode("utf-8")
    except UnicodeDecodeError:
        joined = None
    check("chat logprobs: the tokens' bytes spell the answer", joined is None or joined == js["choices"][0]["message"]["content"],
          (joined, js["choices"][0]["message"]["content"]))
    st2, js2, _ = request("POST", "/v1/chat/completions", dict(chat, logprobs=True, top_logprobs=3, temperature=1.5,
                                                              seed=3, top_k=5, presence_penalty=1,
                                                              ignore_eos=True))
    check("logprobs are the model's distribution: the first token's alternatives do not depend on sampling",
          st2 == 200 and js2["choices"][0]["logprobs"]["content"][0]["top_logprobs"] == lp[0]["top_logprobs"], js2)
    st3, evs, done, wf = sse("/v1/chat/completions", dict(chat, logprobs=True, top_logprobs=3, stream=True))
    slp = [e2 for e in evs if e.get("choices") and e["choices"][0].get("logprobs") for e2 in e["choices"][0]["logprobs"]["content"]]
    check("streamed chat logprobs: the chunks' entries are the non-streamed ones", st3 == 200 and slp == lp, (len(slp), len(lp)))
st, js, _ = request("POST", "/v1/completions", dict(greedy, logprobs=2))
clp = js["choices"][0]["logprobs"] if st == 200 else None
check("completion logprobs: tokens, token_logprobs, top_logprobs and rising text_offset per token",
      clp and len(clp["tokens"]) == n_pred == len(clp["token_logprobs"]) == len(clp["top_logprobs"]) == len(clp["text_offset"]) and
      clp["text_offset"][0] == 0 and all(a <= b for a, b in zip(clp["text_offset"], clp["text_offset"][1:])) and
      all(x <= 0 for x in clp["token_logprobs"]) and all(len(t) <= 2 for t in clp["top_logprobs"]), clp)
err("top_logprobs without logprobs: 400", 400, "POST", "/v1/chat/completions", dict(chat, top_logprobs=2))
err("top_logprobs 21: 400", 400, "POST", "/v1/chat/completions", dict(chat, logprobs=True, top_logprobs=21))

# chunked body over the limit (no Content-Length)
s = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
           "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" % key).encode())
try:
    for _ in range(40):
        s.sendall(b"2000\r\n" + b"x" * 0x2000 + b"\r\n")
    s.sendall(b"0\r\n\r\n")
except OSError:
    pass
resp = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        resp += d
except OSError:
    pass
s.close()
check("a chunked body over the limit: 413", resp.startswith(b"HTTP/1.1 413"), resp[:200])

# --- a busy slot: 503, and a client that goes away frees it ---------------------
long_req = {"prompt": prompt, "max_tokens": 1800, "temperature": 0, "ignore_eos": True, "stream": True}
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
c.request("POST", "/v1/completions", body=json.dumps(long_req).encode(),
          headers=dict(AUTH, **{"Content-Type": "application/json"}))
r = c.getresponse()
t0 = time.time()
got = b""
while got.count(b"\n\n") < 20:
    more = r.read1(65536)
    if not more:
        break
    got += more
rate = 20 / max(time.time() - t0, 1e-3)
st, js, _ = request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
check("while the only slot is busy and the queue (0) is full: 503 with a JSON error",
      st == 503 and "message" in js["error"], (st, js))
c.sock.shutdown(socket.SHUT_RDWR)
c.close()
t1 = time.time()
freed = False
while time.time() - t1 < 10:
    st, js, _ = request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
    if st == 200:
        freed = True
        break
    time.sleep(0.1)
left = (1800 - 20) / rate
check("a client that disconnects frees its slot (%.2f s after; the stream had ~%.1f s to go)" %
      (time.time() - t1, left), freed and time.time() - t1 < max(left / 2, 0.5), (freed, time.time() - t1, left))

# --- /health without a key, /metrics, /slots, no CORS by default ---------------------
st, js, _ = request("GET", "/health", headers={"Authorization": ""})
check("/health needs no key", st == 200 and js == {"status": "ok"}, (st, js))
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
c.request("GET", "/metrics", headers=AUTH)
r = c.getresponse()
mtext = r.read().decode()
c.close()
metrics = {}
for line in mtext.splitlines():
    if line and not line.startswith("#"):
        name, val = line.split(" ")
        metrics[name] = float(val)
check("/metrics: Prometheus text with request, token and expert-cache figures",
      r.status == 200 and r.getheader("Content-Type", "").startswith("text/plain") and
      metrics.get("sluice_requests_total", 0) > 10 and metrics.get("sluice_generated_tokens_total", 0) > 100 and
      metrics.get("sluice_prompt_tokens_cached_total", 0) > 0 and "sluice_expert_cache_hit_rate" in metrics and
      metrics.get("sluice_requests_4xx_total", 0) >= 20 and metrics.get("sluice_slots") == 1, mtext[:800])
st, js, _ = request("GET", "/metrics", headers={"Authorization": ""})
check("/metrics needs the key", st == 401, st)
st, js, _ = request("GET", "/slots")
check("/slots: one idle slot of 2048 tokens holding the last request's tokens",
      st == 200 and len(js) == 1 and js[0]["n_ctx"] == 2048 and js[0]["is_processing"] is False and
      js[0]["n_tokens"] > 0, js)
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
c.request("GET", "/v1/models", headers=dict(AUTH, Origin="http://evil.example"))
r = c.getresponse()
r.read()
check("no --cors: no Access-Control-Allow-Origin header", r.getheader("Access-Control-Allow-Origin") is None,
      r.getheaders())
c.request("OPTIONS", "/v1/chat/completions", headers={"Origin": "http://evil.example",
                                                      "Access-Control-Request-Method": "POST"})
r = c.getresponse()
r.read()
c.close()
check("no --cors: a preflight is refused", r.status in (401, 405) and r.getheader("Access-Control-Allow-Origin") is None,
      r.status)

# --- bounded fuzz: mutated bodies get 200 or 4xx, never a dead server ------------------
rng = random.Random(13)
bases = [json.dumps(greedy | {"max_tokens": 2}).encode(), json.dumps(chat | {"max_tokens": 2}).encode(),
         b'{"content": "hello"}', b'{"tokens": [1, 2, 3]}']
paths = ["/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"]
bad_status = []
for i in range(150):
    k = rng.randrange(len(bases))
    b = bytearray(bases[k])
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(3)
        p = rng.randrange(len(b) + 1)
        if op == 0 and b:
            del b[min(p, len(b) - 1)]
        elif op == 1:
            b.insert(p, rng.choice(b'{}[]",:0123456789-.eE\\nultrfase \x00\xff\xc3'))
        elif b:
            b[min(p, len(b) - 1)] = rng.randrange(256)
    try:
        st, js, out = request("POST", paths[k], raw=bytes(b), timeout=60)
    except Exception as e:  # noqa: BLE001 - a dropped connection is a failure
        bad_status.append(("exception", repr(e), bytes(b)[:80]))
        continue
    if not (st == 200 or (400 <= st < 500 and js and "error" in js)):
        bad_status.append((st, bytes(b)[:80], out[:120]))
check("150 mutated bodies: each answered 200 or 4xx with a JSON error", not bad_status, bad_status[:3])
st, js, _ = request("GET", "/health")
check("the server is alive after the bad bodies", st == 200, st)
print("client-finished", flush=True)
