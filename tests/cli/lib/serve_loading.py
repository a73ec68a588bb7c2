#!/usr/bin/env python3
"""serve_loading.py - requests that arrive while `sluice serve` is still loading
its model, for tests/cli/serve_compat.sh.

Usage: serve_loading.py SLUICE MODEL ERR_FILE
Starts `SLUICE serve --port 0 -m MODEL`, reads its first line (the port, said
before the model loads), asks at once: /health, a chat completion and an
Anthropic message must get 503 in their API's error shape; then /health until
it is 200, and a chat completion is answered. Stops the server with SIGTERM and
writes its stderr to ERR_FILE. Prints "ok NAME" / "FAIL NAME: why" lines."""
import http.client
import json
import re
import signal
import subprocess
import sys
import time

sluice, model, err_file = sys.argv[1:4]


def check(name, cond, why=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(why)[:600]), flush=True)
    return cond


retry_after = []


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = json.dumps(body).encode() if body is not None else None
    c.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    r = c.getresponse()
    out = r.read()
    if r.status == 503:
        retry_after.append(r.getheader("Retry-After"))
    c.close()
    try:
        return r.status, json.loads(out)
    except ValueError:
        return r.status, out


p = subprocess.Popen([sluice, "serve", "--port", "0", "-m", model, "-c", "256", "-n", "4", "-t", "1"],
                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
lines = []
try:
    first = p.stderr.readline().decode()
    lines.append(first)
    m = re.match(r"sluice serve: loading .*; http://127\.0\.0\.1:(\d+) answers 503 until it is ready", first)
    if check("the first line, before the model loads, says where the server answers", m is not None, first):
        port = int(m.group(1))
        st_h, js_h = request(port, "GET", "/health")
        st_c, js_c = request(port, "POST", "/v1/chat/completions",
                             {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
        st_a, js_a = request(port, "POST", "/v1/messages",
                             {"model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]})
        check("while loading: /health is 503 'loading model'", st_h == 503 and "loading model" in js_h["error"]["message"],
              (st_h, js_h))
        check("while loading: a chat completion is 503 in OpenAI's shape",
              st_c == 503 and js_c["error"]["type"] == "unavailable_error", (st_c, js_c))
        check("while loading: a message is 503 in Anthropic's shape",
              st_a == 503 and js_a["type"] == "error" and js_a["error"]["type"] == "overloaded_error", (st_a, js_a))
        check("while loading: each 503 says Retry-After: 1", retry_after[:3] == ["1", "1", "1"], retry_after)
        t0, st = time.time(), 503
        while st == 503 and time.time() - t0 < 240:
            st, js = request(port, "GET", "/health")
            if st == 503:
                time.sleep(0.05)
        check("once loaded: /health is 200", st == 200 and js == {"status": "ok"}, (st, js))
        st, js = request(port, "POST", "/v1/chat/completions",
                         {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
        check("once loaded: a chat completion is answered", st == 200 and js["object"] == "chat.completion", (st, js))
finally:
    p.send_signal(signal.SIGTERM)
    rest = p.communicate(timeout=120)[1].decode(errors="replace")
    lines.append(rest)
    with open(err_file, "w") as f:
        f.write("".join(lines))
check("the listening line follows the loading line", "sluice serve: listening on" in lines[-1], lines)
check("the server stops cleanly on SIGTERM (exit 0)", p.returncode == 0, (p.returncode, lines[-1][-600:]))
check("no sanitizer report from the loading server", "ERROR: " not in lines[-1] and "runtime error" not in lines[-1]
      and "ThreadSanitizer" not in lines[-1],
      lines[-1][-800:])
