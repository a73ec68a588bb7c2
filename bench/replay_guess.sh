#!/usr/bin/env bash
# bench/replay_guess.sh - learned next-layer guesses under route replay, with
# and without, alternated in one run: replays the Qwen3-30B-A3B trace on the
# 48-layer generated model with a cache of SIZE experts (default 1536, 25 %),
# ROUNDS times each of
#   without: --no-prefetch (no read-ahead at all: the session-6 figures)
#   with:    --prefetch (under --route-trace: the learned guesses)
# cold (--no-warm), and prints per run the decode tok/s, the printed bound
# and its share, hit rate, stall, and the learned-guess line. The drive's
# rate in the bound is `sluice iobench --expert` run at the start (kept in a
# private XDG_CACHE_HOME). Every timed run holds /tmp/bench.lock. The texts
# of all runs must be identical (read-ahead only changes timing).
#
#   MODEL=/work/models/q3moe-48-k6-q4km.gguf bench/replay_guess.sh
#   SIZE=3072 ROUNDS=1 bench/replay_guess.sh
set -u
cd "$(dirname "$0")/.." || exit 2
S=${SLUICE:-build/rel/sluice}
M=${MODEL:-/work/models/q3moe-48-k6-q4km.gguf}
T=${TRACE:-../shared/traces/qwen3-30b-a3b.route.csv}
SIZE=${SIZE:-1536}
ROUNDS=${ROUNDS:-2}
N=${N:-100}
P=${PROMPT:-"Explain how a mixture-of-experts model decides which experts handle each token."}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-rguess-XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/xdg
# NOLOCK=1: the caller holds /tmp/bench.lock around the whole script
lock() { if [ -n "${NOLOCK:-}" ]; then "$@"; else flock /tmp/bench.lock "$@"; fi; }
echo "uptime: $(uptime)"
lock "$S" iobench --model "$M" --expert --lanes 4 --seconds 3 2>&1 | grep -i "MiB/s" | tail -2
RT=(--moe-stream --cache-experts "$SIZE" --route-trace "$T" -t 2 --temp 0 --ignore-eos -n "$N"
    --no-warm --stats)
echo "| run | variant | decode tok/s | printed bound | share | hit rate | stall ms/token | learned guesses |"
echo "|---|---|---:|---:|---:|---:|---:|---|"
for r in $(seq 1 "$ROUNDS"); do
    for v in without with; do
        extra=()
        [ "$v" = without ] && extra=(--no-prefetch)
        [ "$v" = with ] && extra=(--prefetch)
        dd if="$M" iflag=nocache count=0 status=none
        lock "$S" run -m "$M" -p "$P" "${RT[@]}" "${extra[@]}" >"$work/out-$v-$r.txt" \
            2>"$work/err-$v-$r.txt" || { cat "$work/err-$v-$r.txt" >&2; exit 1; }
        e=$work/err-$v-$r.txt
        gen=$(sed -n 's/^generated: *[0-9]* tokens in *[0-9.]* s ( *\([0-9.]*\) tok\/s).*/\1/p' "$e")
        bound=$(sed -n 's/^bound .*bound \([0-9.]*\) tok\/s.*/\1/p' "$e")
        share=$(sed -n 's/^bound .*: \([0-9]*%\) of the bound.*/\1/p' "$e")
        hit=$(sed -n 's/^experts  *hit rate \([0-9.]*%\).*/\1/p' "$e")
        stall=$(sed -n 's/^time per token .*flash stall \([0-9.]*\).*/\1/p' "$e")
        lg=$(sed -n 's/^learned guesses *//p' "$e")
        echo "| $r | $v | $gen | $bound | $share | $hit | $stall | ${lg:--} |"
        grep -E "^bound" "$e" >>"$work/bounds.txt"
    done
done
echo
cat "$work/bounds.txt"
same=yes
for f in "$work"/out-*.txt; do cmp -s "$f" "$work/out-without-1.txt" || same=no; done
echo "texts identical across all runs: $same"
echo "uptime: $(uptime)"
