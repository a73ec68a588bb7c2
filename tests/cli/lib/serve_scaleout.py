#!/usr/bin/env python3
"""serve_scaleout.py - two sluice nodes behind nginx, for tests/cli/serve_scaleout.sh.

Usage: serve_scaleout.py FRONT_PORT NODE1_PORT NODE2_PORT NODE1_PID NODE2_PID

Every request goes to nginx (FRONT_PORT) with an X-Session-Id header, as a
client sets it through the OpenAI SDKs' default headers; nginx names the
node that answered in X-Sluice-Node, and each node's /metrics counts what it
did. The script finds two conversation ids that nginx's consistent hash puts
on different nodes, then checks: each conversation stays on its node and its
second request reuses the prefix (cached_tokens > 0, the node's
prompt_tokens_cached_total); both nodes served; a stream in flight when its
node is killed breaks off without [DONE]; the retry and the other
conversation are answered by the surviving node (200, never 502), and the
retried conversation's next request reuses its prefix there."""
import http.client
import json
import os
import signal
import sys
import time

front, port1, port2, pid1, pid2 = (int(a) for a in sys.argv[1:6])
nodes = {port1: pid1, port2: pid2}
failed = 0


def check(name, cond, why=""):
    global failed
    failed += 0 if cond else 1
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(why)[:600]), flush=True)


def node_of(headers):
    """The node port nginx names in X-Sluice-Node (the last address tried)."""
    addr = (headers.get("X-Sluice-Node") or "").split(",")[-1].strip()
    return int(addr.rsplit(":", 1)[1]) if ":" in addr else None


def chat(session, messages, max_tokens=8):
    c = http.client.HTTPConnection("127.0.0.1", front, timeout=60)
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}
    hdrs = {"Content-Type": "application/json"}
    if session is not None:
        hdrs["X-Session-Id"] = session
    c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers=hdrs)
    r = c.getresponse()
    data = r.read().decode()
    d = json.loads(data) if r.status == 200 else None
    c.close()
    return r.status, d, node_of(r.headers), data


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    out = {}
    for line in c.getresponse().read().decode().splitlines():
        if line.startswith("sluice_"):
            k, v = line.split()
            out[k[len("sluice_"):]] = float(v)
    return out


def cached(d):
    return d["usage"]["prompt_tokens_details"]["cached_tokens"] if d else -1


# 1. two conversation ids that hash to different nodes (the ring depends on the
#    nodes' ports, so the ids are found, not fixed): a one-token probe each
home = {}
for i in range(64):
    sid = "conversation-%d" % i
    status, d, node, data = chat(sid, [{"role": "user", "content": "hi"}], max_tokens=1)
    if status != 200:
        check("probe %s answered" % sid, False, "%d %s" % (status, data[:300]))
        break
    home.setdefault(node, sid)
    if len(home) == 2:
        break
check("two conversation ids land on different nodes (%s)" % home, sorted(home) == sorted(nodes), home)
if sorted(home) != sorted(nodes):
    print("client-finished")
    sys.exit(1)
node_a, node_b = port1, port2
sid_a, sid_b = home[node_a], home[node_b]


def system(name):
    return ("You are the %s lock keeper's assistant on the old canal: you log every boat that passes, "
            "its name, its cargo and the hour, and you answer questions about the water level. " % name) * 5


conv = {
    sid_a: [{"role": "system", "content": system("upper")}, {"role": "user", "content": "Which boats passed?"}],
    sid_b: [{"role": "system", "content": system("lower")}, {"role": "user", "content": "How high is the water?"}],
}


def turn(sid, text, expect_node, label):
    """Sends the conversation so far, appends the answer and a new user turn."""
    status, d, node, data = chat(sid, conv[sid])
    ok = status == 200
    check("%s: answered (status %d)" % (label, status), ok, data[:300])
    if ok:
        check("%s: answered by node %d (X-Sluice-Node %s)" % (label, expect_node, node), node == expect_node)
        conv[sid].append({"role": "assistant", "content": d["choices"][0]["message"]["content"] or ""})
        conv[sid].append({"role": "user", "content": text})
    return d


# 2. each conversation: two turns on its node, the second reusing the first's prefix
before = {p: metrics(p) for p in nodes}
for sid, node in ((sid_a, node_a), (sid_b, node_b)):
    turn(sid, "And the barges?", node, "%s turn 1" % sid)
    d = turn(sid, "Write the log entry.", node, "%s turn 2" % sid)
    check("%s turn 2 reused its prefix on its node (cached_tokens %d of %d)"
          % (sid, cached(d), d["usage"]["prompt_tokens"] if d else 0), cached(d) > 0)
after = {p: metrics(p) for p in nodes}
for p in nodes:
    gens = after[p]["generations_total"] - before[p]["generations_total"]
    reused = after[p]["prompt_tokens_cached_total"] - before[p]["prompt_tokens_cached_total"]
    check("node %d served its conversation's 2 turns (its /metrics: %d generations, %d prompt tokens reused)"
          % (p, gens, reused), gens == 2 and reused > 0)

# 3. a stream in flight on node a when that node dies: the stream breaks off
body = {"messages": conv[sid_a], "max_tokens": 1500, "temperature": 0, "ignore_eos": True, "stream": True}
c = http.client.HTTPConnection("127.0.0.1", front, timeout=60)
c.request("POST", "/v1/chat/completions", body=json.dumps(body),
          headers={"Content-Type": "application/json", "X-Session-Id": sid_a})
r = c.getresponse()
check("the stream starts on node a (status %d, X-Sluice-Node %s)" % (r.status, node_of(r.headers)),
      r.status == 200 and node_of(r.headers) == node_a)
first = b""
while b"data: " not in first:
    line = r.readline()
    if not line:
        break
    first += line
os.kill(nodes[node_a], signal.SIGKILL)
rest = b""
try:
    while True:
        chunk = r.read1(65536) if hasattr(r, "read1") else r.read(65536)
        if not chunk:
            break
        rest += chunk
except (http.client.IncompleteRead, ConnectionError, OSError) as e:
    rest += getattr(e, "partial", b"") or b""
c.close()
check("a stream in flight when its node dies breaks off without [DONE] (%d bytes after the kill)" % len(rest),
      b"data: " in first and b"[DONE]" not in rest)
time.sleep(0.2)

# 4. the client retries: the surviving node answers the dead node's conversation and the other
before_b = metrics(node_b)
status, d, node, data = chat(sid_a, conv[sid_a])
check("the retry of node a's conversation is answered (status %d, not 502)" % status, status == 200, data[:300])
check("by the surviving node (X-Sluice-Node %s)" % node, node == node_b)
if d:
    conv[sid_a].append({"role": "assistant", "content": d["choices"][0]["message"]["content"] or ""})
    conv[sid_a].append({"role": "user", "content": "Thank you."})
d = turn(sid_a, "Anything else?", node_b, "%s after the failover" % sid_a)
check("its next turn reuses the prefix on the surviving node (cached_tokens %d)" % cached(d), cached(d) > 0)
turn(sid_b, "Goodbye.", node_b, "%s after the failover" % sid_b)
status, d, node, data = chat(None, [{"role": "user", "content": "hi"}], max_tokens=1)
check("a request without the header is answered (status %d, node %s)" % (status, node),
      status == 200 and node == node_b)
gens = metrics(node_b)["generations_total"] - before_b["generations_total"]
check("the surviving node's /metrics counts those 4 requests (%d)" % gens, gens == 4)

print("client-finished")
sys.exit(1 if failed else 0)
