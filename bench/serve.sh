#!/usr/bin/env bash
# bench/serve.sh - `sluice serve` under K concurrent streaming clients.
#
#   bench/serve.sh MODEL.gguf [SLOTS] [CLIENTS] [REQUESTS] [MAX_TOKENS] [-- SERVE_FLAGS...]
#
# Starts `build/rel/sluice serve -m MODEL -np SLOTS` (SLUICE=... to choose the
# binary; extra serve flags after --, e.g. --mem 8G --stream on
# --batch-step 0), then runs bench/serve_load.py twice against it: one client
# sending every client's requests one after the other (each alone on the
# server), then CLIENTS concurrent clients, each sending its REQUESTS streamed
# greedy completions of MAX_TOKENS tokens. Prints each run's JSON line
# (aggregate tok/s, time to first token p50/p95/p99, per-client tok/s, the
# decode rate after the first token, requests completed/failed), the ratios
# of the two runs (all tokens over the wall time; decode: the concurrent
# run's aggregate decode rate over one request's alone), whether every
# concurrent text equals the same prompt's text alone (greedy: it must), the
# server's peak RSS (VmHWM) and its /metrics batch counters, and fails when a
# request failed, a text differed or the server died.
#
#   SOAK=1 bench/serve.sh MODEL 4 8 25 32   the soak: 8 clients x 25 requests
#   with aborted streams, malformed bodies and unknown paths mixed in
#   (serve_load.py); every request must be answered or cleanly refused and
#   the server must still answer afterwards.
set -u
cd "$(dirname "$0")/.." || exit 2
MODEL=${1:?usage: bench/serve.sh MODEL.gguf [SLOTS] [CLIENTS] [REQUESTS] [MAX_TOKENS] [-- FLAGS]}
shift
SLOTS=4 CLIENTS=4 REQS=2 MAXTOK=64
for v in SLOTS CLIENTS REQS MAXTOK; do
    [ $# -gt 0 ] && [ "$1" != "--" ] && { printf -v "$v" %s "$1"; shift; }
done
[ "${1:-}" = "--" ] && shift
SLUICE=${SLUICE:-build/rel/sluice}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-serve-XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
"$SLUICE" serve -m "$MODEL" --port 0 -np "$SLOTS" -c 1024 --max-queue 256 "$@" \
    >"$work/out" 2>"$work/err" &
pid=$!
port=
for _ in $(seq 1 3000); do
    port=$(sed -n 's/^sluice serve: listening on http:\/\/[^ ]*:\([0-9][0-9]*\) .*/\1/p' "$work/err")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
[ -n "$port" ] || { echo "the server did not start: $(tail -c 600 "$work/err")" >&2; exit 1; }
grep '^sluice serve:' "$work/err" | head -3
rc=0
soak=${SOAK:-0}
if [ "$soak" != 1 ]; then
    one=$(LOAD_SERIAL=1 LOAD_TEXTS="$work/t1" python3 bench/serve_load.py "$port" "$CLIENTS" "$REQS" "$MAXTOK") || rc=1
    echo "1 client:        $one"
fi
many=$(LOAD_TEXTS="$work/tk" python3 bench/serve_load.py "$port" "$CLIENTS" "$REQS" "$MAXTOK" "$soak") || rc=1
echo "$CLIENTS clients:       $many"
if [ "$soak" != 1 ]; then
    python3 -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print("aggregate ratio %d clients / 1: %.2fx (all tokens over the wall time); decode %.2fx (%.2f tok/s aggregate vs %.2f alone)" % (b["clients"], b["aggregate_tok_s"]/a["aggregate_tok_s"], b["decode_tok_s_aggregate"]/a["decode_tok_s_per_request"] if a["decode_tok_s_per_request"] else float("nan"), b["decode_tok_s_aggregate"], a["decode_tok_s_per_request"]))' "$one" "$many"
    python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); same=sum(1 for p in b if a.get(p)==b[p]); print("texts: %d of %d concurrent answers equal the same prompt alone" % (same, len(b))); sys.exit(0 if same==len(b) and len(b)>0 else 1)' "$work/t1" "$work/tk" || rc=1
fi
for r in "${one:-}" "$many"; do
    [ -n "$r" ] && python3 -c 'import json,sys; sys.exit(1 if json.loads(sys.argv[1])["failed"] else 0)' "$r" || { [ -n "$r" ] && rc=1; }
done
echo "server peak RSS: $(grep VmHWM /proc/$pid/status | awk '{print $2/1024 " MiB"}')"
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^sluice_(batch_|generations_total|requests_5xx)' || true
if curl -sf "http://127.0.0.1:$port/health" >/dev/null; then echo "the server still answers"; else echo "the server no longer answers" >&2; rc=1; fi
kill -0 "$pid" 2>/dev/null || { echo "the server died" >&2; rc=1; }
exit $rc
