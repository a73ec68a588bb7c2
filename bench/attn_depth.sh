#!/usr/bin/env bash
# bench/attn_depth.sh MODEL "DEPTHS" OLD_SLUICE NEW_SLUICE [N_GEN] [W_MB] [KV_BYTES]
#
# Decode speed at depth, old binary against new, alternated per depth in
# one run (the machine is shared: compare within a row, not across runs):
#   sluice bench -m MODEL -p 0 -n N_GEN -r 1 -t 2 --no-stream -d D --json
# (each run under flock /tmp/bench.lock)
# and, per binary, the bandwidth bound tg(0) x W / (W + KV(d)) from its own
# depth-0 figure, with W the bytes a decode step reads besides the cache
# (W_MB, default 691: the 30B-A3B-shaped 12-layer Q4_K file, docs/perf.md)
# and KV(d) = d x KV_BYTES (default 24576: 12 layers x 4 K/V heads x 128 x
# 2 (K and V) x 2 bytes). The first depth must be 0. Prints one line per
# depth: tg old, tg new, the bound and each binary's share of it; then the
# same in CPU time (bench's cpu_ms_per_token: every thread's CPU time per
# decoded token, less sensitive to other jobs than the wall clock): per
# binary cpu(d) and its share of the bound cpu(0) x (W + KV(d)) / W. Each run
# holds /tmp/bench.lock (flock), so no two timed runs on the machine overlap,
# and the load average is printed before each depth.
set -u
M=${1:?usage: bench/attn_depth.sh MODEL "DEPTHS" OLD NEW [N_GEN] [W_MB] [KV_BYTES]}
DEPTHS=${2:?depths, e.g. "0 1024 4096 8192"}
OLD=${3:?old sluice binary}
NEW=${4:?new sluice binary}
NG=${5:-32}
W_MB=${6:-691}
KVB=${7:-24576}

tg() { # binary depth -> "tok/s cpu_ms_per_token"
    flock /tmp/bench.lock "$1" bench -m "$M" -p 0 -n "$NG" -r 1 -t 2 --no-stream -d "$2" --json 2>/dev/null |
        sed -n 's/.*"tps_mean":\([0-9.]*\).*"cpu_ms_per_token":\([0-9.]*\).*/\1 \2/p' | tail -1
}

printf '%6s %10s %10s %10s %9s %9s | %9s %9s %9s %9s\n' depth tg_old tg_new bound old/bnd new/bnd \
    cpu_old cpu_new old/bnd new/bnd
t0o= t0n= c0o= c0n=
for d in $DEPTHS; do
    echo "# $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
    read -r o co <<<"$(tg "$OLD" "$d")"
    read -r n cn <<<"$(tg "$NEW" "$d")"
    [ -z "$t0o" ] && t0o=$o && t0n=$n && c0o=$co && c0n=$cn
    awk -v d="$d" -v o="$o" -v n="$n" -v to="$t0o" -v tn="$t0n" -v w="$W_MB" -v kb="$KVB" \
        -v co="$co" -v cn="$cn" -v c0o="$c0o" -v c0n="$c0n" 'BEGIN {
        W = w * 1e6; kv = d * kb
        bo = to * W / (W + kv); bn = tn * W / (W + kv)
        printf "%6d %10.2f %10.2f %10.2f %8.0f%% %8.0f%% | %9.2f %9.2f %8.0f%% %8.0f%%\n", d, o, n, bn,
            100 * o / bo, 100 * n / bn, co, cn, 100 * c0o * (W + kv) / W / co,
            100 * c0n * (W + kv) / W / cn }'
done
