#!/usr/bin/env bash
# bench/replay_warm.sh - warm start against cold under route replay: for each
# cache SIZE (default 1536 and 3072: 25 % and 50 % of the 48 x 128 experts),
# ROUNDS times: a cold run (fresh usage history: it writes one) then a warm
# run (preloads from it), each after dropping the model file from the page
# cache. Prints per run the prompt time, the first N generated tokens' time
# and rate, and the wall time from the process start to its exit after the
# Nth token (load + prompt + N tokens + saving the history: what a user
# waits for), and the warm / cold ratios. Timed runs hold /tmp/bench.lock.
# The drive's rate in the bound: `sluice iobench --expert` at the start.
#
#   MODEL=/work/models/q3moe-48-k6-q4km.gguf bench/replay_warm.sh
#   SIZES=3072 ROUNDS=2 bench/replay_warm.sh
set -u
cd "$(dirname "$0")/.." || exit 2
S=${SLUICE:-build/rel/sluice}
M=${MODEL:-/work/models/q3moe-48-k6-q4km.gguf}
T=${TRACE:-../shared/traces/qwen3-30b-a3b.route.csv}
SIZES=${SIZES:-1536 3072}
ROUNDS=${ROUNDS:-1}
N=${N:-100}
P=${PROMPT:-"Explain how a mixture-of-experts model decides which experts handle each token."}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-rwarm-XXXXXX")
trap 'rm -rf "$work"' EXIT
# NOLOCK=1: the caller holds /tmp/bench.lock around the whole script
lock() { if [ -n "${NOLOCK:-}" ]; then "$@"; else flock /tmp/bench.lock "$@"; fi; }
echo "uptime: $(uptime)"
mkdir -p "$work/rate"
XDG_CACHE_HOME=$work/rate lock "$S" iobench --model "$M" --expert --lanes 4 --seconds 3 2>&1 |
    grep -i "MiB/s" | tail -2
# one run: prints "prompt_s gen_s gen_tok_s wall_s"
one() {
    local tag=$1 size=$2
    dd if="$M" iflag=nocache count=0 status=none
    local t0 t1
    t0=$(date +%s.%N)
    lock "$S" run -m "$M" -p "$P" --moe-stream --cache-experts "$size" --route-trace "$T" -t 2 \
        --temp 0 --ignore-eos -n "$N" --stats >"$work/out-$tag.txt" 2>"$work/err-$tag.txt" ||
        { cat "$work/err-$tag.txt" >&2; exit 1; }
    t1=$(date +%s.%N)
    local e=$work/err-$tag.txt ps gs gr
    ps=$(sed -n 's/^prompt: *[0-9]* tokens in *\([0-9.]*\) s.*/\1/p' "$e")
    read -r gs gr < <(sed -n 's/^generated: *[0-9]* tokens in *\([0-9.]*\) s ( *\([0-9.]*\) tok\/s).*/\1 \2/p' "$e")
    grep -E "^warm start|^bound|^experts|^learned" "$e" | sed "s/^/  [$tag] /" >>"$work/notes.txt"
    echo "$ps $gs $gr $(echo "$t1 - $t0" | bc -l)"
}
echo "| cache | round | run | prompt s | first $N generated: s | tok/s | wall, start to exit after token $N: s |"
echo "|---:|---:|---|---:|---:|---:|---:|"
for size in $SIZES; do
    for r in $(seq 1 "$ROUNDS"); do
        export XDG_CACHE_HOME=$work/xdg-$size-$r
        mkdir -p "$XDG_CACHE_HOME/sluice"
        cp "$work"/rate/sluice/iobench-* "$XDG_CACHE_HOME/sluice/" 2>/dev/null
        read -r cp_ cg cr cw < <(one "cold-$size-$r" "$size")
        read -r wp wg wr ww < <(one "warm-$size-$r" "$size")
        printf '| %d | %d | cold | %.2f | %.2f | %.2f | %.2f |\n' "$size" "$r" "$cp_" "$cg" "$cr" "$cw"
        printf '| %d | %d | warm | %.2f | %.2f | %.2f | %.2f |\n' "$size" "$r" "$wp" "$wg" "$wr" "$ww"
        printf '| %d | %d | warm / cold | %.2fx faster | %.2fx faster | %.2fx | %.2fx faster |\n' \
            "$size" "$r" "$(echo "$cp_ / $wp" | bc -l)" "$(echo "$cg / $wg" | bc -l)" \
            "$(echo "$wr / $cr" | bc -l)" "$(echo "$cw / $ww" | bc -l)"
        cmp -s "$work/out-cold-$size-$r.txt" "$work/out-warm-$size-$r.txt" &&
            echo "  (text identical cold / warm)" >>"$work/notes.txt" ||
            echo "  TEXT DIFFERS cold / warm at $size round $r" >>"$work/notes.txt"
    done
done
echo
cat "$work/notes.txt"
echo "uptime: $(uptime)"
