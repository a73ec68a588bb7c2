#!/usr/bin/env bash
# `sluice serve` soak, short form (issue 13; the long one: SOAK=1
# bench/serve.sh): three rounds of 4 clients x 8 requests on a two-slot
# server (bench/serve_load.py SOAK mode: streams aborted after their first
# chunk, malformed bodies, unknown paths, among complete streamed
# completions): every request is answered or cleanly refused, the server
# stays up and answers /health, and its resident memory does not keep
# growing (the third round adds at most 48 MiB to the second's).
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve-soak
M=$work/m.gguf
serve_model "$M" --arch qwen3moe --preset tiny-k --layers 2 --seed 3
rss() { awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$1/status"; }
if serve_start soak -m "$M" -c 512 -np 2 -t 2 --max-queue 64; then
    for round in 1 2 3; do
        out=$(timeout 120 python3 bench/serve_load.py "$serve_port" 4 8 12 1 2>&1)
        if python3 -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if r["failed"] == 0 and r["completed"] + r["aborted"] + r["refused_4xx_503"] == r["requests"] and r["aborted"] > 0 and r["refused_4xx_503"] > 0 else 1)' "$out" 2>/dev/null; then
            ok "soak round $round: every request answered, aborted or refused with a 4xx"
        else
            bad "soak round $round: $out"
        fi
        eval "rss$round=$(rss "$serve_pid")"
    done
    if [ "$((rss3 - rss2))" -le 48 ]; then
        ok "resident memory is bounded (${rss1}, ${rss2}, ${rss3} MiB after the rounds)"
    else
        bad "resident memory keeps growing: ${rss1}, ${rss2}, ${rss3} MiB after the rounds"
    fi
    if curl -sf "http://127.0.0.1:$serve_port/health" >/dev/null 2>&1 ||
        python3 -c 'import http.client,sys; c=http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10); c.request("GET", "/health"); sys.exit(0 if c.getresponse().status == 200 else 1)' "$serve_port"; then
        ok "the server still answers /health"
    else
        bad "the server no longer answers: $(tail -c 600 "$work/soak.err")"
    fi
fi
finish
