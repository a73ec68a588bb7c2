# common.sh - sourced by the CLI tests in tests/cli/: the counters, the
# ok/bad/check helpers and the binary under test. Each test ends with
# `finish`, which prints the "N passed, N failed" line the suite sums.
cd "$(dirname "$0")/../.." || exit 2
SLUICE=${SLUICE:-build/san/sluice}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { # check NAME CMD...: passes when CMD succeeds
    local name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
same_text() { # same_text A B: both files hold output and it is the same bytes
    # (an empty output would make any two runs "equal" and prove nothing)
    [ -s "$1" ] && [ -s "$2" ] && cmp -s "$1" "$2"
}
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
