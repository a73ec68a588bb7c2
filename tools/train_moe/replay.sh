#!/usr/bin/env bash
# tools/train_moe/replay.sh TRACE MODEL [SIZES]: the streamer under the
# trained glm4moe's learned routing at the benchmark's expert size: replays
# TRACE (route_trace.py's `# route_trace v1`, 5 MoE layers, 16 experts,
# top-4) with `sluice run --route-trace` on MODEL, a generated file of the
# same layer and expert counts with Qwen3-30B-A3B's experts (made when
# absent: mkmodel --preset 30b-a3b --layers 5 --experts 16 --top-k 4 --vocab
# 512 --type q4_k_m, 2.65 MB an expert), once without read-ahead
# (--no-prefetch) and once with it (--prefetch: under replay, next_guess.c's
# learned id-based guesses), per cache size in experts (default 20 and 40:
# 25 and 50 % of 80). Prints hit rate, stall, the guesses and their use, and
# decode tok/s; the runs hold /work/timing.lock (LOCK=none: no lock, and no
# timings printed: hit rates and guesses do not depend on them much).
set -u
T=${1:?usage: replay.sh TRACE MODEL [SIZES]}
M=${2:?MODEL}
SIZES=${3:-20 40}
S=${SLUICE:-$(cd "$(dirname "$0")/../.." && pwd)/build/rel/sluice}
LOCK=${LOCK:-/work/timing.lock}
w=$(mktemp -d "${TMPDIR:-/tmp}/tr-replay-XXXXXX")
trap 'rm -rf "$w"' EXIT
[ -f "$M" ] || "$S" mkmodel --arch qwen3moe --preset 30b-a3b --layers 5 --experts 16 --top-k 4 \
    --vocab 512 --type q4_k_m --seed 1 -q -o "$M" || exit 1
STEPS=$(awk -F, '/^[0-9]/ { if ($3 + 1 > n) n = $3 + 1 } END { print n }' "$T")
NPROMPT=$(awk -F, '/^[0-9]/ && $2 == 0 { if ($3 + 1 > n) n = $3 + 1 } END { print n }' "$T")
ntok() { "$S" tokenize -m "$M" -p "$1" 2>/dev/null | grep -c -- '->'; }
# a prompt of the trace's prompt length, so the replay's batches are the recording's
for P in Once On O; do
    while [ "$(ntok "$P")" -lt "$NPROMPT" ]; do P="$P ."; done
    [ "$(ntok "$P")" -eq "$NPROMPT" ] && break
done
[ "$(ntok "$P")" -eq "$NPROMPT" ] || { echo "no prompt of $NPROMPT tokens" >&2; exit 1; }
echo "trace: $T ($STEPS steps, $NPROMPT prompt); model: $M ($(du -h "$M" | cut -f1))"
echo
echo "| cache (experts) | read-ahead | hit rate | stall s | learned guesses right | prefetched: used / wasted | MiB/token | tok/s (decode) |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|"
for size in $SIZES; do
    for pf in --no-prefetch --prefetch; do
        lk=(flock "$LOCK")
        [ "$LOCK" = none ] && lk=()
        "${lk[@]}" "$S" run -m "$M" -p "$P" -n $((STEPS - NPROMPT)) -c $((STEPS + 8)) \
            --temp 0 --ignore-eos -t 2 --moe-stream --no-warm "$pf" --cache-experts "$size" \
            --route-trace "$T" --stats --stats-json "$w/s.json" >"$w/out" 2>"$w/err" ||
            { cat "$w/err" >&2; exit 1; }
        python3 - "$size" "$pf" "$w/s.json" "$w/err" "$LOCK" <<'PY'
import json, re, sys
size, pf, js, err, lock = sys.argv[1:]
d = json.load(open(js))
m = re.search(r"generated: *([0-9]+) tokens in *([0-9.]+) s", open(err).read())

tps = f"{int(m.group(1)) / float(m.group(2)):.2f}" if m and lock != "none" else "-"
stall = f"{d['stall_s']:.3f}" if lock != "none" else "-"
t = open(err).read()
m2 = re.search(r"learned guesses +([0-9]+) experts guessed.*?([0-9.]+)% right; ([0-9.]+)% of", t)
gr = f"{m2.group(2)} % of {m2.group(1)} ({m2.group(3)} % of misses)" if m2 else "-"
print(f"| {size} | {pf[2:]} | {100 * d['hit_rate']:.1f} % | {stall} | {gr} | "
      f"{d.get('prefetch_used', 0)} / {d.get('prefetch_wasted', 0)} | "
      f"{d['mib_per_token']:.2f} | {tps} |")
PY
    done
done
