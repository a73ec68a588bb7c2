#!/usr/bin/env python3
"""serve_load.py - load generator of bench/serve.sh (standard library only).

Usage: serve_load.py PORT CLIENTS REQUESTS MAX_TOKENS [SOAK]

CLIENTS threads each send REQUESTS streamed /v1/completions one after the
other (greedy, ignore_eos, MAX_TOKENS each; prompts differ per client) and
time each: time to the first token chunk (text possibly empty), tokens (the usage of the last
chunk), end.
Prints one JSON line: aggregate tok/s (all tokens over the wall time from
the first request to the last answer), TTFT p50/p95/p99 in ms, per-client
tok/s (mean of each client's tokens over its own busy time), requests
completed / failed; and the decode rate: the tokens after each request's
first over the times after its first, summed (per request), and the same
tokens over the span from the first first token to the last answer
(aggregate).
Environment: LOAD_SERIAL=1 sends every client's requests from one thread,
one after the other (the same prompts, each alone on the server: the solo
runs to compare with); LOAD_TEXTS=FILE writes {prompt: text} of the
completed requests as JSON. With SOAK=1 every fourth request is aborted after its
first chunk, every seventh is a malformed body (must get a 4xx), every
eleventh asks for an unknown endpoint (404), and the rest are as above."""
import http.client
import json
import os
import socket
import sys
import threading
import time

port, clients, per, max_tok = (int(a) for a in sys.argv[1:5])
soak = len(sys.argv) > 5 and sys.argv[5] == "1"
lock = threading.Lock()
ttft, counts, busy, done, failed, aborted, refused = [], [], [], 0, [], 0, 0
texts, dec = {}, []  # prompt -> text; (tokens after the first, first, end) per request
serial = os.environ.get("LOAD_SERIAL") == "1"
words = ["river", "mill", "keeper", "boat", "lock", "canal", "stone", "bridge", "lamp", "harbour"]


def one(cid, k):
    global done, aborted, refused
    n_req = cid * per + k
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    if soak and n_req % 7 == 3:
        c.request("POST", "/v1/completions", body='{"prompt": "x", "max_tokens": [', headers={"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        with lock:
            if 400 <= r.status < 500:
                refused += 1
            else:
                failed.append(("malformed body got", r.status))
        return 0, 0
    if soak and n_req % 11 == 5:
        c.request("GET", "/v1/nothing-here")
        r = c.getresponse()
        r.read()
        with lock:
            if r.status == 404:
                refused += 1
            else:
                failed.append(("unknown path got", r.status))
        return 0, 0
    prompt = "The %s and the %s: a story of %s number %d" % (words[cid % 10], words[(k + 3) % 10], words[(cid + k) % 10], n_req)
    body = {"prompt": prompt, "max_tokens": max_tok, "temperature": 0, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}}
    t0 = time.monotonic()
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        with lock:
            if r.status == 503:
                refused += 1
            else:
                failed.append(("status", r.status))
        r.read()
        return 0, 0
    first, n, used, buf, text = None, 0, None, b"", []
    while True:
        chunk = r.read1(65536) if hasattr(r, "read1") else r.read(4096)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            if ev.startswith(b"data: ") and ev != b"data: [DONE]":
                e = json.loads(ev[6:])
                if e.get("usage"):
                    used = e["usage"].get("completion_tokens")
                if e.get("choices") and e["choices"][0].get("text") is not None:
                    # a token's chunk, even when its text is empty (a generated
                    # model's tokens may decode to nothing)
                    text.append(e["choices"][0]["text"])
                    n += 1
                    if first is None:
                        first = time.monotonic() - t0
        if soak and n_req % 4 == 1 and n >= 1:
            c.sock.shutdown(socket.SHUT_RDWR)
            c.close()
            with lock:
                aborted += 1
            return 0, 0
    t1 = time.monotonic()
    with lock:
        if first is not None:
            ttft.append(first)
            if used and used > 1:
                dec.append((used - 1, t0 + first, t1))
        texts[prompt] = "".join(text)
        done += 1
        if not used:
            failed.append(("no tokens", prompt))
    return used or 0, t1 - t0


def client(cid):
    tok, t = 0, 0.0
    for k in range(per):
        try:
            n, dt = one(cid, k)
        except Exception as e:  # noqa: BLE001
            with lock:
                failed.append(("exception", repr(e)))
            continue
        tok, t = tok + n, t + dt
    with lock:
        counts.append(tok)
        busy.append(t)


def serial_clients():
    for i in range(clients):
        client(i)


t0 = time.monotonic()
th = [threading.Thread(target=client, args=(i,)) for i in range(clients)] if not serial else \
    [threading.Thread(target=serial_clients)]
for x in th:
    x.start()
for x in th:
    x.join()
wall = time.monotonic() - t0


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return round(1000 * v[min(len(v) - 1, int(p / 100.0 * len(v)))], 1)


if os.environ.get("LOAD_TEXTS"):
    with open(os.environ["LOAD_TEXTS"], "w") as f:
        json.dump(texts, f, sort_keys=True)
dec_busy = sum(e - f for _, f, e in dec)  # the requests' own decode times, summed
span = (max(e for _, _, e in dec) - min(f for _, f, _ in dec)) if dec else 0
print(json.dumps({
    "clients": 1 if serial else clients, "serial_prompts": clients if serial else None, "requests": clients * per, "completed": done, "aborted": aborted,
    "refused_4xx_503": refused, "failed": len(failed), "failures": failed[:5],
    "tokens": sum(counts), "wall_s": round(wall, 2),
    "aggregate_tok_s": round(sum(counts) / wall, 2) if wall > 0 else 0,
    "ttft_ms_p50": pct(ttft, 50), "ttft_ms_p95": pct(ttft, 95), "ttft_ms_p99": pct(ttft, 99),
    "per_client_tok_s": round(sum(c / b for c, b in zip(counts, busy) if b > 0) / max(1, len(counts)), 2),
    "decode_tok_s_per_request": round(sum(n for n, _, _ in dec) / dec_busy, 2) if dec_busy > 0 else 0,
    "decode_tok_s_aggregate": round(sum(n for n, _, _ in dec) / span, 2) if span > 0 else 0,
}))
