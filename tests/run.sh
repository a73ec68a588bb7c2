#!/usr/bin/env bash
# Runs every test binary or script given on the command line, sums their
# "N passed, N failed" lines and ends with the total (CI reads that last line).
# Each one's wall time is printed after it, and the total and the slowest ten
# before the last line.
set -u
# Every entry writes its files under a TMPDIR of its own, removed when it
# ends: the unit tests' t_tmpdir() and the scripts' mktemp land there, so a
# run leaves nothing behind even where a test fails or is killed, and the
# disk a run needs is the largest entry's, not the sum of all of them.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/sluice-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
# Streamed runs keep an expert-usage history under $XDG_CACHE_HOME/sluice/
# and start warm from it; tests must not see one another's (nor the user's).
if [ -z "${SLUICE_TEST_KEEP_CACHE:-}" ]; then
    XDG_CACHE_HOME=$scratch/cache
    mkdir -p "$XDG_CACHE_HOME"
    export XDG_CACHE_HOME
fi
total_pass=0
total_fail=0
failed_bins=()
timings=()
# microseconds now; the seconds (one decimal) since a reading of it
now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
elapsed() {
    local us=$(( $(now_us) - $1 ))
    printf '%d.%d' $((us / 1000000)) $((us / 100000 % 10))
}
suite_start=$(now_us)
for bin in "$@"; do
    name=${bin#*build/}
    name=${name#san/tests/}
    name=${name#rel/tests/}
    echo "== $name"
    start=$(now_us)
    mkdir -p "$scratch/tmp"
    out=$(TMPDIR=$scratch/tmp "$bin" 2>&1)
    rc=$?
    rm -rf "$scratch/tmp"
    secs=$(elapsed "$start")
    timings+=("$secs $name")
    echo "$out" | grep -v '^ok ' || true
    echo "   $name: $secs s"
    line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ -z "$line" ]; then
        echo "   $name exited $rc without a summary line"
        total_fail=$((total_fail + 1))
        failed_bins+=("$name")
        continue
    fi
    p=$(echo "$line" | cut -d' ' -f1)
    f=$(echo "$line" | cut -d' ' -f3)
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "   $name exited $rc"
        total_fail=$((total_fail + 1))
    fi
    if [ "$rc" -ne 0 ]; then failed_bins+=("$name"); fi
done
if [ ${#timings[@]} -gt 0 ]; then
    echo "slowest:"
    printf '%s\n' "${timings[@]}" | LC_ALL=C sort -rn | head -n 10 |
        while read -r t n; do printf '   %7s s  %s\n' "$t" "$n"; done
fi
echo "time: $(elapsed "$suite_start") s for ${#timings[@]} tests"
if [ ${#failed_bins[@]} -gt 0 ]; then
    echo "failing: ${failed_bins[*]}"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
