#!/usr/bin/env bash
# `sluice bench --kernels --kernel-types`: the listed types (TYPE or TYPE:x8)
# and a read sweep, timed in rounds; the table names each of them once, the
# first type's ratio to itself is 100 %, and bad lists exit 2 with the
# entry named. Speeds are not asserted (a shared machine); 1 MiB matrices.
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kb-XXXXXX")
trap 'rm -rf "$work"' EXIT

"$SLUICE" bench --kernels -t 1 --mb 1 --rounds 3 --kernel-types q4_K,mxfp4:x8,mxfp4 >"$work/out" 2>"$work/err"
check "paired run exits 0 ($(head -c 200 "$work/err"))" test $? -eq 0
check "3 rounds announced" grep -q "3 rounds" "$work/out"
for row in "read sweep" "q4_K" "mxfp4 x8" "mxfp4"; do
    check "a row for '$row'" grep -qE "^\| $row +\|" "$work/out"
done
check "the first type against itself: 100.0 %" grep -qE "^\| q4_K +\|.*\| +100\.0% \(100\.0-100\.0\) \|$" "$work/out"
check "the others get a ratio to q4_K" grep -qE "^\| mxfp4 x8 +\|.*[0-9.]+% \([0-9.]+-[0-9.]+\) \|$" "$work/out"

for list in "q4_K,nosuch" "q4_K:x8" "mxfp4:x9" "q4_K,,mxfp4" ",q4_K"; do
    "$SLUICE" bench --kernels -t 1 --mb 1 --rounds 1 --kernel-types "$list" >/dev/null 2>"$work/err"
    rc=$?
    check "'$list' refused with exit 2 ($(head -c 120 "$work/err"))" test $rc -eq 2
    check "'$list': a message on stderr" test -s "$work/err"
done
"$SLUICE" bench --kernel-types q4_K >/dev/null 2>"$work/err"
check "--kernel-types without --kernels exits 2" test $? -eq 2
check "--help names --kernel-types" sh -c "'$SLUICE' bench --help | grep -q -- --kernel-types"
finish
