#!/usr/bin/env python3
"""GET /api/events of `sluice serve` read as a client would (tests/cli/webui.sh).

usage: webui_events.py PORT CALIBRATED [KEY]

Reads the event stream while one chat request (max_tokens N, non-streamed)
runs, and checks what the stream says against the request's own answer:
the plan first, then ticks at the asked interval whose decoded-token counts
rose by the reply's tokens (less the first, sampled from the prompt's
logits, and at most one more), whose prompt counts rose by the prompt's
uncached tokens, with a decode rate, an expert-cache hit rate in [0, 1] and
MiB read per token during the run (the model is streamed). Also: a bad
interval is a 400, and without the key (when the server has one) a 401.
CALIBRATED (1 or 0): the server was started with --stats, which measures
the drive's rate at load, so the ticks carry it (else it is null).
Prints "ok   NAME" / "FAIL NAME" lines and "client-finished" at the end.
"""
import http.client
import json
import sys
import threading
import time

PORT = int(sys.argv[1])
CALIBRATED = sys.argv[2] == "1"
KEY = sys.argv[3] if len(sys.argv) > 3 else None
N = 120


def report(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond or not detail else ": " + detail),
          flush=True)


def headers(extra=None):
    h = dict(extra or {})
    if KEY:
        h["Authorization"] = "Bearer " + KEY
    return h


def read_events(seconds, interval_ms, out):
    """Appends (name, data) of each event for `seconds`."""
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    c.request("GET", "/api/events?interval_ms=%d" % interval_ms, headers=headers())
    r = c.getresponse()
    out.append(("status", r.status))
    out.append(("type", r.getheader("Content-Type")))
    end = time.time() + seconds
    name, data = "message", []
    while time.time() < end:
        line = r.fp.readline()
        if not line:
            break
        line = line.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                out.append((name, json.loads("\n".join(data))))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    c.close()


def main():
    events = []
    t = threading.Thread(target=read_events, args=(3.0, 100, events))
    t.start()
    time.sleep(0.6)  # a few idle ticks first
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    body = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": N,
            "temperature": 0, "ignore_eos": True}
    c.request("POST", "/v1/chat/completions", json.dumps(body),
              headers(extra={"Content-Type": "application/json"}))
    r = c.getresponse()
    answer = json.loads(r.read())
    report("the chat request answered", r.status == 200, str(answer)[:300])
    t.join()
    usage = answer.get("usage", {})
    gen = usage.get("completion_tokens", 0)
    prompt_new = usage.get("prompt_tokens", 0) - \
        usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)

    report("GET /api/events is 200 text/event-stream",
           events[0] == ("status", 200) and (events[1][1] or "").startswith("text/event-stream"),
           str(events[:2]))
    ev = events[2:]
    names = [n for n, _ in ev]
    report("the stream opens with the plan", names[:1] == ["plan"], str(names[:3]))
    plan = ev[0][1] if ev else {}
    report("the plan has the budget, the dense weights, the streamed experts' cache",
           plan.get("budget_mib", 0) > 0 and plan.get("dense_mib", 0) > 0 and
           plan.get("streaming") is True and plan.get("cache_mib", 0) > 0 and
           plan.get("interval_ms") == 100, json.dumps(plan))
    ticks = [d for n, d in ev if n == "tick"]
    report("ticks every 100 ms (>= 15 in 3 s)", len(ticks) >= 15, str(len(ticks)))
    gaps = [round(d["dt"], 3) for d in ticks]
    report("each tick covers 50 ms to 1 s (100 ms asked, late ones restart the count)",
           all(0.049 < g < 1.0 for g in gaps), str(gaps))
    if len(ticks) < 2:
        return
    first, last = ticks[0], ticks[-1]
    dec = last["decoded_total"] - first["decoded_total"]
    # tokens of the first tick's interval precede first's counts: none ran then
    report("decoded tokens rose by the reply's (%d generated: %d decoded)" % (gen, dec),
           gen == N and gen - 1 <= dec <= gen, "")
    pr = last["prompt_total"] - first["prompt_total"]
    report("prompt tokens rose by the prompt's uncached ones (%d: %d)" % (prompt_new, pr),
           prompt_new > 0 and pr == prompt_new, "")
    busy = [d for d in ticks if d["gen_tok_s"]]
    report("ticks during the run show a decode rate",
           busy and all(d["gen_tok_s"] > 0 for d in busy), str([d["gen_tok_s"] for d in ticks]))
    report("and the hit rate in [0, 1], MiB read per token > 0, the RSS, stall share >= 0",
           busy and all(d["hit_rate"] is not None and 0 <= d["hit_rate"] <= 1 and
                        d["mib_per_token"] > 0 and d["rss_mib"] > 0 and d["stall_share"] >= 0
                        for d in busy), json.dumps(busy[:1]))
    drives = [d["drive_mib_s"] for d in ticks]
    if CALIBRATED:
        report("the drive's rate (serve --stats measured it) in every tick",
               all(v is not None and v > 0 for v in drives), str(drives[:3]))
    else:
        report("no drive rate without a measurement (null)", all(v is None for v in drives),
               str(drives[:3]))
    idle = ticks[:3]
    report("idle ticks: no rate, no lookups (null)",
           all(d["gen_tok_s"] == 0 and d["hit_rate"] is None and d["mib_per_token"] is None
               for d in idle), json.dumps(idle[:1]))

    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    c.request("GET", "/api/events?interval_ms=5", headers=headers())
    r = c.getresponse()
    msg = json.loads(r.read()).get("error", {}).get("message", "")
    report("interval_ms=5 is a 400 that says the range", r.status == 400 and "50 to 10000" in msg,
           "%d %s" % (r.status, msg))
    if KEY:
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        c.request("GET", "/api/events")
        r = c.getresponse()
        r.read()
        report("without the key /api/events is a 401", r.status == 401, str(r.status))
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        c.request("GET", "/")
        r = c.getresponse()
        page = r.read()
        report("without the key the page itself loads (it asks for the key)",
               r.status == 200 and b"<title>sluice</title>" in page, str(r.status))


main()
print("client-finished")
