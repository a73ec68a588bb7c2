#!/usr/bin/env bash
# bench/prefix_ttft.sh - prompt reuse across slots (issue 32): time to first
# token of chat requests that share a long system prompt.
#
#   bench/prefix_ttft.sh ARCH [SYSTEM_WORDS] [-- SERVE_FLAGS...]
#
# Generates `sluice mkmodel --arch ARCH --preset small --type q4_k_m`,
# starts `serve -np 4 -c 4096 -t 2 --prompt-cache DIR` on it and sends three
# streamed greedy chat requests, one after the other, with the same system
# prompt (SYSTEM_WORDS words, default 1050: about 3,000 tokens of the small
# preset's vocabulary) and different user messages, then two more at the
# same time (so that one lands on another slot); then restarts the
# server on the same DIR and sends a fourth user message. Prints one line
# per request: time to the first generated token, prompt tokens,
# cached_tokens, and the first request's TTFT over each later one's.
# TURN_REPLY=R (default 0: none) adds a conversation after them: a reply
# of R tokens, then the second turn twice (bench/lib/prefix_ttft.py,
# "turnR"): the first re-evaluates the decoded reply's rows, the second
# holds them, so their TTFTs' difference is what re-evaluating costs.
set -u
cd "$(dirname "$0")/.." || exit 2
ARCH=${1:?usage: bench/prefix_ttft.sh ARCH [SYSTEM_WORDS] [-- FLAGS]}
shift
WORDS=1050
[ $# -gt 0 ] && [ "$1" != "--" ] && { WORDS=$1; shift; }
[ "${1:-}" = "--" ] && shift
SLUICE=${SLUICE:-build/rel/sluice}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-prefix-ttft-XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
"$SLUICE" mkmodel --arch "$ARCH" --preset small --type q4_k_m -q -o "$work/m.gguf" || exit 1
mkdir -p "$work/pc"

start() { # start NAME [FLAGS]: the server on a free port, $port set
    local name=$1
    shift
    "$SLUICE" serve -m "$work/m.gguf" --port 0 -np 4 -c 4096 -t 2 --prompt-cache "$work/pc" "$@" \
        >"$work/$name.out" 2>"$work/$name.err" &
    pid=$!
    port=
    for _ in $(seq 1 600); do
        port=$(sed -n 's/^sluice serve: listening on http:\/\/[^ ]*:\([0-9][0-9]*\) .*/\1/p' "$work/$name.err")
        [ -n "$port" ] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "the server did not start: $(tail -c 400 "$work/$name.err")" >&2
    exit 1
}
stop() { kill "$pid" && wait "$pid"; pid=; }

start first "$@"
grep -E "listening|prompt cache" "$work/first.err" | sed 's/^/# /'
turn=
[ "${TURN_REPLY:-0}" -gt 0 ] && turn=turn$TURN_REPLY
python3 bench/lib/prefix_ttft.py "$port" "$WORDS" u1 u2 u3 u5+u6 $turn | tee "$work/first.txt"
stop
start restart "$@"
python3 bench/lib/prefix_ttft.py "$port" "$WORDS" u4 | sed 's/^/restart /' | tee "$work/restart.txt"
stop
t1=$(awk '$1 == "u1" {print $3}' "$work/first.txt")
for r in u2 u3 u5 u6; do
    t=$(awk -v r=$r '$1 == r {print $3}' "$work/first.txt")
    echo "$ARCH $r: first/this TTFT $(awk -v a="$t1" -v b="$t" 'BEGIN {printf "%.1f", a / b}')x"
done
t=$(awk '$2 == "u4" {print $4}' "$work/restart.txt")
echo "$ARCH after restart: first/this TTFT $(awk -v a="$t1" -v b="$t" 'BEGIN {printf "%.1f", a / b}')x"
