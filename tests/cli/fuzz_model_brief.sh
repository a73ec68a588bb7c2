#!/usr/bin/env bash
# A short run of the model fuzzer inside the suite (tests/fuzz/fuzz_model.c:
# each input becomes a valid small model, loaded and evaluated resident and
# streamed, streamed logits bit-identical). Builds build/fuzz/fuzz_model
# (clang + libFuzzer, the whole library under ASan+UBSan), replays every
# committed seed and every reproducer of a fixed defect once, then mutates
# for FUZZ_MODEL_BRIEF_SECONDS (default 45). Any crash, leak, timeout or
# mismatch fails the test. Without clang or the libFuzzer runtime the test is
# skipped (reported, not failed). The long run is
# `make fuzz-model FUZZ_SECONDS=600`.
#
# FUZZ_MODEL_AVOID steers the generator off defects that are known and not
# fixed yet (see fuzz_model.c); each name here must go once its fix lands.
set -u
. "$(dirname "$0")/lib/common.sh"
. tests/cli/lib/fuzz.sh

secs=${FUZZ_MODEL_BRIEF_SECONDS:-45}
export FUZZ_MODEL_AVOID=${FUZZ_MODEL_AVOID-}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-fuzz-model-XXXXXX")
trap 'rm -rf "$work"' EXIT

fuzz_require_libfuzzer "$work"
fuzz_build fuzz_model "$work"
[ -n "$FUZZ_MODEL_AVOID" ] && echo "   generator avoids known open defects: $FUZZ_MODEL_AVOID"

# every seed once
n_seeds=$(ls tests/fuzz/corpus_model | wc -l)
if [ "$n_seeds" -gt 0 ] &&
    build/fuzz/fuzz_model -runs=0 tests/fuzz/corpus_model >"$work/seeds.log" 2>&1; then
    share=$(grep -Eo 'models accepted \([0-9.]+%\)' "$work/seeds.log" | tail -n 1)
    ok "replay $n_seeds seeds (${share:-share unknown})"
else
    tail -n 40 "$work/seeds.log"
    bad "replay seeds ($n_seeds files)"
fi

# the reproducers of what this fuzzer found (tests/fuzz/regress_model,
# named <defect>-<what>), each once with the generator unsteered, except
# those of a defect still listed in FUZZ_MODEL_AVOID
regress=()
held=()
for f in tests/fuzz/regress_model/*; do
    [ -f "$f" ] || continue
    case $f in *.md) continue ;; esac
    d=$(basename "$f")
    case ",$FUZZ_MODEL_AVOID," in *",${d%%-*},"*) held+=("$d"); continue ;; esac
    regress+=("$f")
done
[ ${#held[@]} -gt 0 ] && echo "   not replayed (defect still open): ${held[*]}"
for f in ${regress[@]+"${regress[@]}"}; do
    if FUZZ_MODEL_AVOID= build/fuzz/fuzz_model "$f" >"$work/regress.log" 2>&1; then
        ok "reproducer $(basename "$f") runs clean"
    else
        tail -n 30 "$work/regress.log"
        bad "reproducer $(basename "$f")"
    fi
done

mkdir -p "$work/corpus"
if build/fuzz/fuzz_model -max_total_time="$secs" -max_len=256 -timeout=60 \
    -rss_limit_mb=2048 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus_model >"$work/fuzz.log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs' "$work/fuzz.log" | tail -n 1)
    share=$(grep -Eo 'models accepted \([0-9.]+%\)' "$work/fuzz.log" | tail -n 1)
    ok "fuzz ${secs}s clean (${runs:-runs unknown}, ${share:-share unknown})"
else
    tail -n 60 "$work/fuzz.log"
    for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [ -e "$a" ] && mkdir -p build/fuzz && cp "$a" "build/fuzz/model-$(basename "$a")" &&
            echo "   finding kept as build/fuzz/model-$(basename "$a")"
    done
    bad "fuzz ${secs}s"
fi

finish
