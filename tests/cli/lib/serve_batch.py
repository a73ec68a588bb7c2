#!/usr/bin/env python3
"""serve_batch.py - continuous batching for tests/cli/serve_batch.sh.

Usage: serve_batch.py SOLO_PORT BATCH_PORT [--texts-only]

SOLO_PORT is a server with one slot, BATCH_PORT one with four. Requests of
different prompt lengths, greedy and sampled (temperature 0.8 with a seed),
are sent one after the other to the solo server, then all at once (streamed)
to the four-slot server, and again with a late joiner (one request starts
while the others are generating, so its prompt is evaluated in chunks beside
their decode steps): every text must equal its solo text, and the four-slot
server's /metrics must show steps that batched several slots."""
import http.client
import json
import sys
import threading
import time

solo_port, batch_port = int(sys.argv[1]), int(sys.argv[2])
# --texts-only: the drafting tests compare texts only; how many slots a step
# batches then depends on how fast each slot's guesses hold (timing)
check_members = "--texts-only" not in sys.argv[3:]
failed = 0


def check(name, cond, why=""):
    global failed
    failed += 0 if cond else 1
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(why)[:800]), flush=True)


def complete(port, req, stream):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    body = dict(req, stream=stream)
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    if r.status != 200:
        return ("status", r.status, data[:200])
    if not stream:
        return json.loads(data)["choices"][0]["text"]
    text = ""
    for ev in data.split("\n\n"):
        if ev.startswith("data: ") and ev != "data: [DONE]":
            e = json.loads(ev[6:])
            if e["choices"]:
                text += e["choices"][0]["text"]
    return text


long_prompt = " ".join("the river runs past the mill and the keeper counts the boats" for _ in range(12))
reqs = [
    {"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0, "ignore_eos": True},
    {"prompt": "The keeper walked along the canal to the lock", "max_tokens": 40, "temperature": 0.8,
     "seed": 7, "ignore_eos": True},
    {"prompt": long_prompt, "max_tokens": 32, "temperature": 0, "ignore_eos": True},
    {"prompt": "In the beginning", "max_tokens": 56, "temperature": 0.8, "top_k": 20, "seed": 3,
     "ignore_eos": True},
]
solo = [complete(solo_port, r, False) for r in reqs]
check("the solo server answers every request", all(isinstance(t, str) and t for t in solo), solo)


def run_all(delays):
    out = [None] * len(reqs)

    def one(i):
        time.sleep(delays[i])
        try:
            out[i] = complete(batch_port, reqs[i], True)
        except Exception as e:  # noqa: BLE001
            out[i] = ("exception", repr(e))

    th = [threading.Thread(target=one, args=(i,)) for i in range(len(reqs))]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return out


def metric(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    for line in c.getresponse().read().decode().splitlines():
        if line.startswith("sluice_" + name + " "):
            return float(line.split()[1])
    return None


together = run_all([0, 0, 0, 0])
for i in range(len(reqs)):
    check("4 slots at once: request %d's text equals its solo text" % i, together[i] == solo[i],
          (together[i], solo[i]))
if check_members:
    steps, members = metric(batch_port, "batch_steps_total"), metric(batch_port, "batch_step_members_total")
    check("the steps batched several slots (mean members > 1.5)",
          steps and members and members / steps > 1.5, (steps, members))
late = run_all([0, 0, 0.6, 0.3])  # the long prompt arrives while the others generate
for i in range(len(reqs)):
    check("a late joiner: request %d's text equals its solo text" % i, late[i] == solo[i], (late[i], solo[i]))
sys.exit(1 if failed else 0)
