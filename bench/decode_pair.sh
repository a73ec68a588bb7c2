#!/usr/bin/env bash
# bench/decode_pair.sh MODEL OLD NEW [PAIRS] [LIMIT_MB]: streamed sampled
# decode of two binaries in one run, against min(resident, iobench peak /
# MiB per token). Back to back: `iobench --expert` over lanes 1,2,4,8,16
# (the curve kept in a scratch cache directory, which both streamed runs
# see), then PAIRS pairs of OLD and NEW streamed inside a fresh LIMIT_MB
# memory cgroup (default 2048), the order swapped every pair, each pair
# followed by the NEW binary's resident decode (the pair's bound: the
# machine's speed moves between pairs). Each decode: `run -p "Once upon a time" -n 160 --temp
# 1.5 --top-k 0 --seed 7 -t 2 --no-warm --stats`. One line a run: tok/s,
# MiB read a token, the bound and the share of it (and the decode's reads'
# queue and drive times from a binary whose --stats-json has them). EXTRA_OLD / EXTRA_NEW add
# flags. Needs root (cgroup); timed: run it under `flock /work/timing.lock`.
set -eu
MODEL=${1:?usage: bench/decode_pair.sh MODEL OLD NEW [PAIRS] [LIMIT_MB]}
OLD=${2:?}
NEW=${3:?}
PAIRS=${4:-2}
LIMIT=${5:-2048}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-pair-XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/xdg
GEN=(-p "Once upon a time" -n 160 --temp 1.5 --top-k 0 --seed 7 -t 2 --no-warm)
tok_s() { sed -n 's/^generated: .*(\s*\([0-9.]*\) tok\/s)$/\1/p' "$1"; }

"$NEW" iobench --model "$MODEL" --expert --lanes 1,2,4,8,16 --seconds 2 --json >"$work/io.json"
peak=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["peak"]; print("%.1f" % p["mib_s"])' "$work/io.json")
curve=$(python3 -c 'import json,sys; print(" ".join("%d:%.0f" % (r["lanes"], r["mib_s"]) for r in json.load(open(sys.argv[1]))["rows"]))' "$work/io.json")
echo "iobench --expert (lanes:MiB/s) $curve; peak $peak MiB/s"
resident() {
    "$NEW" run -m "$MODEL" "${GEN[@]}" --no-stream >/dev/null 2>"$work/res.err"
    tok_s "$work/res.err"
}
one() { # one LABEL BINARY EXTRA...
    local label=$1 bin=$2
    shift 2
    "$here/cgroup_run.sh" "$LIMIT" "$bin" run -m "$MODEL" "${GEN[@]}" --stats \
        --stats-json "$work/s.json" "$@" >/dev/null 2>"$work/s.err"
    cp "$work/s.json" "$work/$label.json"
    echo "$(tok_s "$work/s.err") $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["mib_per_token"], j["lat_p50_us"], j["lat_p90_us"], j["lat_p99_us"])' "$work/s.json") $(sed -n 's/.*I\/O pread x\([0-9]*\).*/\1/p' "$work/s.err")" >"$work/$label"
}
show() { # show LABEL: its line against this pair's resident rate
    # shellcheck disable=SC2046 # the fields, one argument each
    python3 - "$res" "$peak" "$pair" "$1" $(cat "$work/$1") <<'PY'
import sys
res, peak, pair, label = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
got, mib, p50, p90, p99, lanes = map(float, sys.argv[5:11])
bound = min(res, peak / mib) if mib > 0 else res
print("%-5s %-4s %8.2f %9.2f %9.2f %7.0f%% %.0f/%.0f/%.0f, pread x%d" % (pair, label, got, mib,
      bound, 100 * got / bound, p50, p90, p99, lanes))
PY
}
printf '%-5s %-4s %8s %9s %9s %8s %s\n' pair bin tok/s MiB/tok bound share "latency p50/p90/p99 us, lanes"
# shellcheck disable=SC2086 # EXTRA_OLD / EXTRA_NEW are flags, split on purpose
for pair in $(seq 1 "$PAIRS"); do
    if [ $((pair % 2)) -eq 1 ]; then
        one old "$OLD" ${EXTRA_OLD:-}
        one new "$NEW" ${EXTRA_NEW:-}
    else
        one new "$NEW" ${EXTRA_NEW:-}
        one old "$OLD" ${EXTRA_OLD:-}
    fi
    res=$(resident)
    echo "pair $pair: resident decode $res tok/s"
    show old
    show new
    for b in old new; do # the decode's reads split, from a binary that prints it
        python3 - "$b" "$work/$b.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[2]))
if "dec_reads" in j:
    print("      %-4s decode reads %d: queued p50/p90/p99 %.0f/%.0f/%.0f us, drive %.0f/%.0f/%.0f us, "
          "lanes busy %.1f %%" % (sys.argv[1], j["dec_reads"], j["dec_queue_p50_us"],
          j["dec_queue_p90_us"], j["dec_queue_p99_us"], j["dec_drive_p50_us"],
          j["dec_drive_p90_us"], j["dec_drive_p99_us"], 100 * j["dec_lanes_busy"]))
PY
    done
done
