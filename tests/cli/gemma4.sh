#!/usr/bin/env bash
# gemma4 end to end: `mkmodel --arch gemma4` (tiny: sliding and full layers,
# window 4, shorter than the prompt) runs; `inspect` shows its layers and
# state bytes; the text is the same resident and with the experts streamed
# through small caches (a cache of 2 holds one token's top-2 of one layer),
# prompts in micro-batches of 1 or 5; perplexity over all tokens agrees with
# itself across micro-batch sizes.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-gemma4-XXXXXX")
trap 'rm -rf "$work"' EXIT

M=$work/g4.gguf
if ! "$SLUICE" mkmodel --arch gemma4 --preset tiny --type q8_0 --seed 5 -q -o "$M"; then
    bad "mkmodel --arch gemma4"
    echo "$pass passed, $fail failed"
    exit 1
fi
"$SLUICE" inspect "$M" >"$work/inspect" 2>&1
check "inspect succeeds" [ $? -eq 0 ]
check "inspect names the architecture" grep -q "architecture gemma4" "$work/inspect"
check "inspect shows the window pattern" grep -q "sliding_window_pattern.*true, false, true, false" "$work/inspect"
# f16 K and V; sliding layers 2 KV heads of 8, full layers 2 of 16:
# 2 x (2 x 2 x 8 x 2) + 2 x (2 x 2 x 16 x 2) = 384
check "inspect shows the state bytes" grep -q "384 bytes per token" "$work/inspect"
check "inspect names the sliding layers" grep -Eq "^  sliding +0,2 \(window 4" "$work/inspect"
check "inspect names the full layers" grep -Eq "^  full +1,3$" "$work/inspect"

P="The miller's daughter kept a notebook of the river and its moods."
run() { # run OUT ARGS...
    local out=$1
    shift
    "$SLUICE" run -m "$M" -p "$P" -n 16 --temp 0 --ignore-eos "$@" >"$out" 2>"$out.err"
}
run "$work/resident" --no-stream
check "resident run succeeds" [ $? -eq 0 ]
for v in "--cache-experts 2" "--cache-experts 3 -b 1" "--cache-experts 5 -b 5 --io-backend uring" \
         "--cache-experts 4 --prefetch"; do
    # shellcheck disable=SC2086
    run "$work/streamed" --moe-stream $v
    check "streamed ($v) succeeds" [ $? -eq 0 ]
    check "streamed ($v) gives the resident text" same_text "$work/resident" "$work/streamed"
done

# The fixture's fused ffn_gate_up_exps streamed (issue 18): the resident text,
# and each miss reads one expert's bytes once. Q8_0 rows of 256 are 8 x 34 =
# 272 bytes: gate_up 256 rows (69632) + down 256 rows of 128 (136 each:
# 34816) = 104448 per expert (not 174080, the fused slice read twice); one
# token's cycle 4 layers x 2 experts x 104448 = 835584.
FX=../shared/fixtures/reference/gemma4-Q8_0.gguf
if [ -r "$FX" ]; then
    jq_ok() { jq -e "$1" "$2" >/dev/null; } # jq_ok FILTER FILE
    fx() { # fx OUT ARGS...
        local out=$1
        shift
        "$SLUICE" run -m "$FX" -p "$P" -n 8 --temp 0 --ignore-eos "$@" >"$out" 2>"$out.err"
    }
    fx "$work/fx-resident" --no-stream
    check "fixture resident run succeeds" [ $? -eq 0 ]
    for v in "--cache-experts 2" "--cache-experts 3 -b 1" "--cache-experts 4 --prefetch"; do
        # shellcheck disable=SC2086
        fx "$work/fx-streamed" --moe-stream $v
        check "fixture streamed ($v) gives the resident text" \
            cmp -s "$work/fx-resident" "$work/fx-streamed"
    done
    # --no-warm: a warm start's preload reads experts no lookup missed
    fx "$work/fx-stats" --moe-stream --cache-experts 3 --no-prefetch --no-warm \
        --stats-json "$work/fx.json"
    check "fixture streamed with stats succeeds" [ $? -eq 0 ]
    check "fixture stats text is the resident text" same_text "$work/fx-resident" "$work/fx-stats"
    check "fixture reads one expert's bytes per miss" \
        jq_ok '.misses > 0 and .read_bytes == .misses * 104448 and .reads == 3 * .misses' \
        "$work/fx.json"
    check "fixture plan's expert cycle counts gate and up once" \
        jq_ok '.expert_cycle_bytes == 835584' "$work/fx.json"
    "$SLUICE" inspect "$FX" >"$work/fx-inspect" 2>&1
    check "inspect's bytes per expert (and down's share) are right" \
        grep -Eq "^    0-3 +8 +102.00 KiB .* 34.00 KiB" "$work/fx-inspect"
else
    echo "skip: $FX not found"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
