#!/usr/bin/env bash
# bench/stream_compute.sh - where a streamed decode's compute goes beyond the
# resident one's (issue 14: on the quiet machine the 12-layer file's streamed
# "compute", wall - stall - cache management, was 29.8 ms/token against 21.6
# resident). One script, the same sampled 64-token run four ways:
#   A. resident (--no-stream)
#   B. streamed, a cache that holds every expert, warm-started from a
#      history written by a first run, so decode finds (almost) every
#      expert resident: the streamed setting without reads
#   C. streamed in a memory cgroup of LIMIT_MB (as bench/stream.sh): the
#      misses' reads and their extra compute groups per layer
#   D. A again (drift)
# For each: decode tok/s and, streamed, the bound line's compute per token
# and hit rate. If B ~ A, the extra compute belongs to the misses (cold
# lines of freshly read experts, the per-miss compute groups); if B ~ C, to
# the streamed setting itself. Also a perf profile of the decode of A and C
# (perf record -e cpu-clock) when perf is installed.
# Environment: MODEL, LIMIT_MB (default 2048), THREADS (2), OUT.
# Needs root for the cgroup (v1 memory controller or v2).
set -eu
cd "$(dirname "$0")/.."
SLUICE=$PWD/build/rel/sluice
MODEL=${MODEL:-/work/models/qwen3moe-30b-a3b-l12-q4_k_m.gguf}
LIMIT_MB=${LIMIT_MB:-2048}
THREADS=${THREADS:-2}
OUT=${OUT:-build/bench-stream-compute}
mkdir -p "$OUT"
P="The history of the city begins in the early middle ages, when a small settlement of fishermen and traders"
RUN=(run -m "$MODEL" -p "$P" -n 64 --temp 0.7 --seed 1 --ignore-eos -t "$THREADS" --stats)
PERF=()
command -v perf >/dev/null && PERF=(perf record -q -e cpu-clock -F 499 -o)

if [ -d /sys/fs/cgroup/memory ]; then
    cg=/sys/fs/cgroup/memory/sluice-sc-$$
    mkdir "$cg"
    echo $((LIMIT_MB << 20)) > "$cg/memory.limit_in_bytes"
else
    cg=/sys/fs/cgroup/sluice-sc-$$
    mkdir "$cg"
    echo $((LIMIT_MB << 20)) > "$cg/memory.max"
fi
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
export XDG_CACHE_HOME=$OUT/cache
rm -rf "$XDG_CACHE_HOME"
uptime
summary() { # summary NAME FILE
    echo "$1: $(grep -h 'generated:' "$2" | tr -s ' ')"
    grep -h "hit rate\|^bound" "$2" | sed 's/^/    /' | cut -c1-220 || true
}
one() { # one NAME [cgroup] ARGS...
    local name=$1 cgr=$2
    shift 2
    local pre=()
    [ ${#PERF[@]} -gt 0 ] && pre=("${PERF[@]}" "$OUT/$name.perf")
    if [ "$cgr" = cgroup ]; then
        sh -c 'echo $$ > "$0/cgroup.procs" && shift && exec "$@"' "$cg" x "${pre[@]}" \
            "$SLUICE" "${RUN[@]}" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
    else
        "${pre[@]}" "$SLUICE" "${RUN[@]}" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
    fi
    summary "$name" "$OUT/$name.err"
}
one A-resident - --no-stream
"$SLUICE" "${RUN[@]}" --moe-stream --cache-experts 100000 > /dev/null 2>&1 || true # history
one B-streamed-all-cached - --moe-stream --cache-experts 100000
one C-streamed-cgroup cgroup --no-warm
one D-resident - --no-stream
cmp -s "$OUT/A-resident.out" "$OUT/C-streamed-cgroup.out" && echo "text: streamed = resident"
uptime
