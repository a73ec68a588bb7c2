#!/usr/bin/env bash
# bench/stream_cmp.sh - one model, streamed inside a memory cgroup against
# fully resident, in one script run: a prompt of about PP tokens (prefill)
# then N greedy tokens (decode), resident and streamed alternated REPS
# times; the greedy text of every run must be byte-identical (cmp), and the
# streamed runs print the bound (`--stats`: 1 / max(compute, bytes read per
# token / calibrated drive rate), over the decode phase).
#
# Environment: MODEL (required), PP (prompt tokens, default 1000), N (decoded
# tokens, default 32), REPS (default 2), THREADS (2), LANES (4), LIMIT_MB
# (default: half the model), OUT (result folder), RAW (1: add --raw, for
# gpt-oss's harmony wrapping). Needs root for the cgroup (v1 memory
# controller or v2), as bench/stream.sh.
set -eu
cd "$(dirname "$0")/.."
SLUICE=${SLUICE:-build/rel/sluice}
MODEL=${MODEL:?MODEL=file.gguf}
PP=${PP:-1000}
N=${N:-32}
REPS=${REPS:-2}
THREADS=${THREADS:-2}
LANES=${LANES:-4}
OUT=${OUT:-build/bench-stream-cmp/$(basename "$MODEL" .gguf)}
mkdir -p "$OUT"
model_mb=$(( $(stat -c %s "$MODEL") / 1048576 ))
LIMIT_MB=${LIMIT_MB:-$(( model_mb / 2 ))}
echo "== $(date -u +%H:%M:%S) UTC, $(uptime | sed 's/.*load/load/')"
echo "model $MODEL: $model_mb MiB; cgroup limit for the streamed runs: $LIMIT_MB MiB"

# A prompt of about PP tokens: the reference text cut by the model's own
# tokenizer's bytes-per-token ratio.
text=tests/data/reference/text.txt
[ -f "$text" ] || text=../shared/fixtures/reference/text.txt
ntok=$("$SLUICE" tokenize -m "$MODEL" -f "$text" --ids --no-bos | wc -w)
bytes=$(stat -c %s "$text")
head -c $(( bytes * PP / ntok )) "$text" > "$OUT/prompt.txt"
ptok=$("$SLUICE" tokenize -m "$MODEL" -f "$OUT/prompt.txt" --ids | wc -w)
echo "prompt: $(stat -c %s "$OUT/prompt.txt") bytes, $ptok tokens"

echo "== drive: iobench --expert, $LANES lanes, 3 s"
"$SLUICE" iobench --model "$MODEL" --expert --lanes "$LANES" --seconds 3 2>&1 | tail -n 3

. bench/lib/cgroup.sh
cg_make "$LIMIT_MB" sluice-cmp || { echo "cannot make a memory cgroup (needs root)" >&2; exit 2; }
trap 'rmdir "$cg" 2>/dev/null || true' EXIT

args="-m $MODEL -f $OUT/prompt.txt -n $N --temp 0 --ignore-eos -c $(( ptok + N + 16 )) -t $THREADS"
[ "${RAW:-0}" = 1 ] && args="$args --raw"
for r in $(seq 1 "$REPS"); do
    echo "== rep $r: resident ($(uptime | sed 's/.*load/load/'))"
    $SLUICE run $args --no-stream --no-warm > "$OUT/resident-$r.txt" 2> "$OUT/resident-$r.err"
    grep -E "^(load|prompt|generated):" "$OUT/resident-$r.err"
    echo "== rep $r: streamed in the $LIMIT_MB MiB cgroup ($(uptime | sed 's/.*load/load/'))"
    sh -c "echo \$\$ > $cg/cgroup.procs && exec $SLUICE run $args --io-threads $LANES --stats \
        --no-warm" > "$OUT/streamed-$r.txt" 2> "$OUT/streamed-$r.err"
    sed -n '/^load:/,$p' "$OUT/streamed-$r.err"
    echo "cgroup peak $(cg_peak_mb) MiB of $LIMIT_MB"
    if cmp "$OUT/resident-$r.txt" "$OUT/streamed-$r.txt"; then
        echo "greedy text: streamed == resident ($(wc -c < "$OUT/resident-$r.txt") bytes)"
    else
        echo "greedy text: DIFFERS"
        exit 1
    fi
done
cmp "$OUT/resident-1.txt" "$OUT/resident-$REPS.txt" && echo "every run gave the same text"

# Generated vocabularies can decode greedy tokens to empty text, which makes
# the cmp above weak: every position's logits, bit for bit (the 40-token
# sequence of bench/logits_digest.c in batches of 7), resident and streamed
# through DIGEST_EXPERTS cache slots inside the cgroup.
DIGEST=${DIGEST:-build/rel/bench/logits_digest}
if [ -x "$DIGEST" ]; then
    "$DIGEST" "$MODEL" 7 "$THREADS" 0 > "$OUT/digest-resident.txt"
    sh -c "echo \$\$ > $cg/cgroup.procs && exec $DIGEST $MODEL 7 $THREADS ${DIGEST_EXPERTS:-16}" \
        > "$OUT/digest-streamed.txt"
    tail -n 1 "$OUT/digest-resident.txt"
    if cmp "$OUT/digest-resident.txt" "$OUT/digest-streamed.txt"; then
        echo "logits of all 40 positions: streamed (${DIGEST_EXPERTS:-16} slots) == resident, bit for bit"
    else
        echo "logits: DIFFER"
        exit 1
    fi
fi
