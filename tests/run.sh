#!/usr/bin/env bash
# Runs every test binary given on the command line (and the shell tests in
# tests/cli/), sums their "N passed, N failed" lines and ends with the total.
set -u
# Streamed runs keep an expert-usage history under $XDG_CACHE_HOME/sluice/
# and start warm from it; tests must not see one another's (nor the user's).
if [ -z "${SLUICE_TEST_KEEP_CACHE:-}" ]; then
    XDG_CACHE_HOME=$(mktemp -d "${TMPDIR:-/tmp}/sluice-test-cache.XXXXXX")
    export XDG_CACHE_HOME
    trap 'rm -rf "$XDG_CACHE_HOME"' EXIT
fi
total_pass=0
total_fail=0
failed_bins=()
for bin in "$@"; do
    name=${bin#*build/}
    name=${name#san/tests/}
    echo "== $name"
    out=$("$bin" 2>&1)
    rc=$?
    echo "$out" | grep -v '^ok ' || true
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
if [ ${#failed_bins[@]} -gt 0 ]; then
    echo "failing: ${failed_bins[*]}"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
