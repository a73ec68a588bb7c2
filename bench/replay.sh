#!/usr/bin/env bash
# bench/replay.sh - expert cache policies under real routing: replays the
# Qwen3-30B-A3B route trace (--route-trace) on a generated model of its shape
# (48 layers, 128 experts, top-6) and reports, per policy and cache size,
# the hit rate and decode tok/s of the first pass over the trace (156
# evaluated tokens: a prompt of the trace's 28 prompt tokens in one batch,
# then 128 generated ones) on its own, and of
# passes 2-4 (the trace repeats, which flatters any cache).
#
#   bench/replay.sh                      # tiny-dimension 48-layer model: hit rates
#   MODEL=big.gguf bench/replay.sh       # e.g. mkmodel --preset 30b-a3b --layers 48
#                                        #   --top-k 6 --type q4_k_m: tok/s too
#   POLICIES="lru slru" SIZES="1536" PASSES=1 bench/replay.sh
#
# Hit rates do not depend on the model's dimensions (the cache counts
# experts, the trace decides the routing, read-ahead is off: --no-prefetch),
# so the tiny model gives the exact figures of the big one in seconds.
set -u
cd "$(dirname "$0")/.." || exit 2
SLUICE=${SLUICE:-build/rel/sluice}
T=${TRACE:-../shared/traces/qwen3-30b-a3b.route.csv}
POLICIES=${POLICIES:-lru slru lfu layer}
SIZES=${SIZES:-768 1536 3072}          # 12.5 / 25 / 50 % of 48 x 128 experts
PASSES=${PASSES:-4}
THREADS=${THREADS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-replay-XXXXXX")
trap 'rm -rf "$work"' EXIT
MODEL=${MODEL:-}
if [ -z "$MODEL" ]; then
    MODEL=$work/tiny48.gguf
    "$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 48 --experts 128 --top-k 6 -q \
        -o "$MODEL" || exit 1
fi
STEPS=$(awk -F, '/^[0-9]/ { if ($3 + 1 > n) n = $3 + 1 } END { print n }' "$T")
NPROMPT=$(awk -F, '/^[0-9]/ && $2 == 0 { if ($3 + 1 > n) n = $3 + 1 } END { print n }' "$T")
ntok() { "$SLUICE" tokenize -m "$MODEL" -p "$1" 2>/dev/null | grep -c -- '->'; }
# a prompt of exactly the trace's prompt length in this model's tokens, so
# that the replay evaluates the recorded prompt as one batch and every
# generated step alone, as the recording did
PROMPT=""
for w in Explain how a mixture-of-experts model decides which experts handle each token.; do
    [ "$(ntok "$PROMPT $w")" -le "$NPROMPT" ] || break
    PROMPT="$PROMPT $w"
done
while [ "$(ntok "$PROMPT")" -lt "$NPROMPT" ]; do PROMPT="$PROMPT ."; done
if [ "$(ntok "$PROMPT")" -ne "$NPROMPT" ]; then
    echo "cannot make a prompt of $NPROMPT tokens for $MODEL" >&2
    exit 1
fi

# run N POLICY SIZE: N evaluated tokens in all; prints "hits misses gen gen_s"
run() {
    local total=$1 pol=$2 size=$3
    "$SLUICE" run -m "$MODEL" -p "$PROMPT" -n $((total - NPROMPT)) -c $((total + 8)) --temp 0 \
        --ignore-eos -t "$THREADS" --moe-stream --no-prefetch --cache-experts "$size" \
        --cache-policy "$pol" --route-trace "$T" --stats-json "$work/s.json" \
        >"$work/out.txt" 2>"$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
    local h m g
    h=$(sed -n 's/.*"hits":\([0-9]*\).*/\1/p' "$work/s.json")
    m=$(sed -n 's/.*"misses":\([0-9]*\).*/\1/p' "$work/s.json")
    g=$(sed -n 's/^generated: *\([0-9]*\) tokens in *\([0-9.]*\) s.*/\1 \2/p' "$work/err.txt")
    echo "$h $m $g"
}

echo "model: $MODEL ($(du -h "$MODEL" | cut -f1)); trace: $T ($STEPS steps, $NPROMPT prompt);" \
    "threads $THREADS; prompt:$PROMPT"
echo
later="passes 2-$PASSES"
[ "$PASSES" -gt 1 ] || later="later passes (not run)"
echo "| policy | cache (experts) | first pass: hit rate | tok/s (decode) | $later: hit rate | tok/s (decode) |"
echo "|---|---:|---:|---:|---:|---:|"
for size in $SIZES; do
    for pol in $POLICIES; do
        read -r h1 m1 g1 s1 < <(run "$STEPS" "$pol" "$size")
        line=$(awk -v h="$h1" -v m="$m1" -v g="$g1" -v s="$s1" -v pol="$pol" -v size="$size" \
            'BEGIN { printf "| %s | %d | %.1f %% | %.2f |", pol, size, 100 * h / (h + m), g / s }')
        if [ "$PASSES" -gt 1 ]; then
            read -r h2 m2 g2 s2 < <(run $((STEPS * PASSES)) "$pol" "$size")
            line="$line$(awk -v h="$((h2 - h1))" -v m="$((m2 - m1))" -v g="$((g2 - g1))" \
                -v s="$s2" -v s1="$s1" \
                'BEGIN { printf " %.1f %% | %.2f |", 100 * h / (h + m), g / (s - s1) }')"
        else
            line="$line - | - |"
        fi
        echo "$line"
    done
done
