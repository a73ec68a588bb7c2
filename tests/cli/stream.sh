#!/usr/bin/env bash
# Expert streaming end to end through `sluice run`: the same greedy text
# fully resident and streamed (tiny cache, io_uring, no overlap, dense mmap),
# the --stats summary and --stats-json figures, reading ahead, the I/O trace, and the
# refusals (a cache below one layer's top-k, a budget below the dense
# weights, bad flag values).
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-stream-XXXXXX")
trap 'rm -rf "$work"' EXIT

# tiny preset: 2 layers, 8 experts, top-2 (see sluice mkmodel --help)
M=$work/tiny.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 9 -q -o "$M"; then
    bad "mkmodel"
    echo "$pass passed, $fail failed"
    exit 1
fi
P="The miller's daughter kept a notebook of the river and its moods."
run() { # run OUT ARGS...
    local out=$1
    shift
    "$SLUICE" run -m "$M" -p "$P" -n 24 --temp 0 --ignore-eos "$@" >"$out" 2>"$out.err"
}

run "$work/resident" --no-stream
check "resident run succeeds" [ $? -eq 0 ]
for v in "--cache-experts 2 --io-threads 1" "--cache-experts 3 --io-backend uring" \
         "--cache-experts 2 --no-overlap --dense-weights mmap" "--cache-experts 16 -b 1" \
         "--cache-experts 4 --prefetch" "--cache-experts 4 --no-prefetch"; do
    # shellcheck disable=SC2086
    run "$work/streamed" --moe-stream $v
    check "streamed ($v) succeeds" [ $? -eq 0 ]
    check "streamed ($v) gives the resident text" same_text "$work/resident" "$work/streamed"
done

# --no-warm: a warm start's preload reads experts no lookup missed
run "$work/stats" --moe-stream --cache-experts 2 --stats --stats-json "$work/stats.json" \
    --io-trace "$work/trace.txt" --no-warm
check "stats run succeeds" [ $? -eq 0 ]
check "--stats names the split of a token's time" \
    grep -q "compute .*cache management .*flash stall" "$work/stats.err"
check "--stats shows the hit rate" grep -q "hit rate" "$work/stats.err"
check "--stats-json says streaming" grep -q '"streaming":true' "$work/stats.json"
# a cache of 2 experts with top-2 over 2 layers must miss on every layer
misses=$(sed -n 's/.*"misses":\([0-9]*\).*/\1/p' "$work/stats.json")
reads=$(sed -n 's/.*"reads":\([0-9]*\).*/\1/p' "$work/stats.json")
check "misses counted" [ "${misses:-0}" -gt 0 ]
check "three reads per miss" [ "${reads:-0}" -eq $(( ${misses:-0} * 3 )) ]
check "the trace has a line per read" [ "$(wc -l < "$work/trace.txt")" -eq "${reads:-x}" ]
check "trace lines name layer, expert and lane" grep -q "^layer=[0-9]* expert=[0-9]* proj=gate .* lane=" "$work/trace.txt"
check "a warning when the cache is below one token's cycle" \
    grep -q "fewer than one token's cycle" "$work/stats.err"
dec_reads=$(sed -n 's/.*"dec_reads":\([0-9]*\).*/\1/p' "$work/stats.json")
check "--stats splits the decode's reads into queued and drive time" \
    grep -q "^decode reads .*queued for a lane p50 .*at the drive p50 .*lanes busy" "$work/stats.err"
check "the decode's reads are some of the run's, not the prompt's" \
    [ "${dec_reads:-0}" -gt 0 ] && [ "${dec_reads:-0}" -lt "${reads:-0}" ]

run "$work/ahead" --moe-stream --cache-experts 4 --prefetch --stats --stats-json "$work/ahead.json"
check "read-ahead run succeeds" [ $? -eq 0 ]
check "--stats shows how often the next layer's experts were guessed right" \
    grep -q "next layer's experts guessed [0-9.]*% right; [0-9]* read ahead" "$work/ahead.err"
ahead=$(sed -n 's/.*"prefetched":\([0-9]*\).*/\1/p' "$work/ahead.json")
check "--prefetch reads experts ahead" [ "${ahead:-0}" -gt 0 ]

run "$work/progress" --moe-stream --cache-experts 2 --progress
check "--progress draws a status line with the hit rate" \
    grep -q "tokens, .* tok/s, hit .*%, stall .* ms/token, RSS" "$work/progress.err"

run "$work/too-small" --moe-stream --cache-experts 1
check "a cache below one layer's top-k is refused" [ $? -ne 0 ]
check "... saying so" grep -q "cannot hold one layer's top-2 experts" "$work/too-small.err"
run "$work/budget" --mem-budget 1
check "a budget below the dense weights is refused" [ $? -ne 0 ]
check "... saying what to do" grep -q "raise --mem-budget" "$work/budget.err"
run "$work/flag" --io-backend floppy
check "a bad --io-backend is refused" [ $? -eq 2 ]
run "$work/flag2" --dense-weights heap
check "a bad --dense-weights is refused" [ $? -eq 2 ]

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
