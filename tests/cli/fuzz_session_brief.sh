#!/usr/bin/env bash
# A short run of the session-file fuzzer inside the suite
# (tests/fuzz/fuzz_session.c: mutated and re-sealed prompt caches and slot
# saves loaded into three tiny models' sessions; a refused file leaves the
# session as it was, an accepted one continues and saves again). Builds
# build/fuzz/fuzz_session (clang + libFuzzer, the whole library under
# ASan+UBSan), replays every committed seed once, then mutates for
# FUZZ_SESSION_BRIEF_SECONDS (default 20). Any crash, leak, timeout or
# broken check fails the test; without clang or the libFuzzer runtime it is
# skipped (reported, not failed). The long run is
# `make fuzz-session FUZZ_SECONDS=600`.
set -u
. "$(dirname "$0")/lib/common.sh"
. tests/cli/lib/fuzz.sh

secs=${FUZZ_SESSION_BRIEF_SECONDS:-20}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-fuzz-session-XXXXXX")
trap 'rm -rf "$work"' EXIT

fuzz_require_libfuzzer "$work"
fuzz_build fuzz_session "$work"

n_seeds=$(ls tests/fuzz/corpus_session | wc -l)
if [ "$n_seeds" -gt 0 ] &&
    build/fuzz/fuzz_session -runs=0 tests/fuzz/corpus_session >"$work/seeds.log" 2>&1; then
    ok "replay $n_seeds seeds ($(grep -o '[0-9]* of [0-9]* files loaded' "$work/seeds.log"))"
else
    tail -n 30 "$work/seeds.log"
    bad "replay seeds ($n_seeds files)"
fi

mkdir -p "$work/corpus"
if build/fuzz/fuzz_session -max_total_time="$secs" -max_len=4096 -timeout=20 \
    -rss_limit_mb=2048 -artifact_prefix="$work/" "$work/corpus" tests/fuzz/corpus_session \
    >"$work/fuzz.log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs' "$work/fuzz.log" | tail -n 1)
    ok "fuzz ${secs}s clean (${runs:-runs unknown}; $(grep -o '[0-9]* of [0-9]* files loaded' "$work/fuzz.log"))"
else
    tail -n 40 "$work/fuzz.log"
    for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [ -e "$a" ] && mkdir -p build/fuzz && cp "$a" build/fuzz/session-"$(basename "$a")" &&
            echo "   finding kept as build/fuzz/session-$(basename "$a")"
    done
    bad "fuzz ${secs}s"
fi

finish
