#!/usr/bin/env bash
# A short libFuzzer run of the GGUF reader inside the suite: builds
# build/fuzz/fuzz_gguf (clang + libFuzzer), replays every committed seed once,
# then mutates for FUZZ_BRIEF_SECONDS (default 20). Without clang or the
# libFuzzer runtime the test is skipped (reported, not failed). The long run
# is `make fuzz FUZZ_SECONDS=600`.
set -u
. "$(dirname "$0")/lib/common.sh"
. tests/cli/lib/fuzz.sh

secs=${FUZZ_BRIEF_SECONDS:-20}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-fuzz-XXXXXX")
trap 'rm -rf "$work"' EXIT

fuzz_require_libfuzzer "$work"
fuzz_build fuzz_gguf "$work"

# every seed once: valid and corrupt files alike must be handled cleanly
n_seeds=$(ls tests/fuzz/corpus | wc -l)
if [ "$n_seeds" -gt 0 ] &&
    build/fuzz/fuzz_gguf -runs=0 tests/fuzz/corpus >"$work/seeds.log" 2>&1; then
    ok "replay $n_seeds seeds"
else
    tail -n 30 "$work/seeds.log"
    bad "replay seeds ($n_seeds files)"
fi

mkdir -p "$work/corpus"
if build/fuzz/fuzz_gguf -max_total_time="$secs" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -dict=tests/fuzz/gguf.dict -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus >"$work/fuzz.log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs' "$work/fuzz.log" | tail -n 1)
    ok "fuzz ${secs}s clean (${runs:-runs unknown})"
else
    tail -n 40 "$work/fuzz.log"
    for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [ -e "$a" ] && mkdir -p build/fuzz && cp "$a" build/fuzz/ &&
            echo "   finding kept as build/fuzz/$(basename "$a")"
    done
    bad "fuzz ${secs}s"
fi

finish
