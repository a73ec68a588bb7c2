#!/usr/bin/env bash
# bench/attn_depth.sh MODEL "DEPTHS" OLD_SLUICE NEW_SLUICE [N_GEN] [W_MB] [KV_BYTES] [REPS]
#
# Decode speed at depth against the bandwidth bound, old binary and new.
# Each binary runs once, all depths in one process with the runs alternated
# between them (so depth 0 and depth d are measured over the same stretch
# of time; the machine's speed drifts between processes):
#   sluice bench -m MODEL -p 0 -n N_GEN -r REPS -t 2 --no-stream -d 0,D1,... --json
# (a binary older than bench's depth lists runs one process per depth), the
# two binaries one after the other, each under flock /tmp/bench.lock.
# The bound per binary is tg(0) x W / (W + KV(d)) from its own depth-0
# figure, with W the bytes a decode step reads besides the cache (W_MB,
# default 691: the 30B-A3B-shaped 12-layer Q4_K file, docs/perf.md) and
# KV(d) = d x KV_BYTES (default 24576: 12 layers x 4 K/V heads x 128 x 2 (K
# and V) x 2 bytes). The first depth must be 0. Prints one line per depth:
# tg old, tg new, the bound and each binary's share of it; then the same in
# CPU time (bench's cpu_ms_per_token: every thread's CPU time per decoded
# token): per binary cpu(d) and its share of the bound cpu(0) x (W +
# KV(d)) / W. OLD may be "-" (only the new binary runs; its columns repeat).
set -u
M=${1:?usage: bench/attn_depth.sh MODEL "DEPTHS" OLD NEW [N_GEN] [W_MB] [KV_BYTES] [REPS]}
DEPTHS=${2:?depths, e.g. "0 1024 4096 8192"}
OLD=${3:?old sluice binary}
NEW=${4:?new sluice binary}
NG=${5:-32}
W_MB=${6:-691}
KVB=${7:-24576}
REPS=${8:-3}

# binary -> lines "depth tok/s cpu_ms_per_token", one per depth
rows() {
    local out
    out=$(flock /tmp/bench.lock "$1" bench -m "$M" -p 0 -n "$NG" -r "$REPS" -t 2 --no-stream \
        -d "$(echo $DEPTHS | tr ' ' ,)" --json 2>/dev/null)
    if [ -z "$out" ]; then # no depth lists: one process per depth
        out=$(for d in $DEPTHS; do
            flock /tmp/bench.lock "$1" bench -m "$M" -p 0 -n "$NG" -r "$REPS" -t 2 --no-stream \
                -d "$d" --json 2>/dev/null
        done)
    fi
    echo "$out" | sed -n 's/.*"n_depth":\([0-9]*\).*"tps_mean":\([0-9.]*\).*"cpu_ms_per_token":\([0-9.]*\).*/\1 \2 \3/p'
}

echo "# $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
new=$(rows "$NEW")
if [ "$OLD" = - ]; then old=$new; else
    echo "# $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
    old=$(rows "$OLD")
fi
printf '%6s %10s %10s %10s %9s %9s | %9s %9s %9s %9s\n' depth tg_old tg_new bound old/bnd new/bnd \
    cpu_old cpu_new old/bnd new/bnd
paste -d ' ' <(echo "$old") <(echo "$new") | awk -v w="$W_MB" -v kb="$KVB" '{
    d = $1; o = $2; co = $3; n = $5; cn = $6
    if (NR == 1) { to = o; tn = n; c0o = co; c0n = cn }
    W = w * 1e6; kv = d * kb
    bo = to * W / (W + kv); bn = tn * W / (W + kv)
    printf "%6d %10.2f %10.2f %10.2f %8.0f%% %8.0f%% | %9.2f %9.2f %8.0f%% %8.0f%%\n", d, o, n, bn,
        100 * o / bo, 100 * n / bn, co, cn, 100 * c0o * (W + kv) / W / co,
        100 * c0n * (W + kv) / W / cn }'
