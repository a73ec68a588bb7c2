#!/usr/bin/env bash
# Runs aarch64 test binaries through tests/run.sh once per cpu model.
#   usage: scripts/run-aarch64.sh RUNNER "CPU..." BIN...
# RUNNER is qemu-aarch64 (empty on an aarch64 host: the binaries run
# directly and the cpu list is ignored). Each binary gets a small wrapper
# script named like it, so run.sh's per-binary summary is unchanged.
set -u
runner=$1
cpus=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$runner" ] || cpus=native
status=0
for cpu in $cpus; do
    dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-a64-XXXXXX")
    wrapped=()
    for bin in "$@"; do
        w="$dir/build/aarch64-$cpu/$(basename "$bin")"
        mkdir -p "$(dirname "$w")"
        abs=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
        if [ -n "$runner" ]; then
            printf '#!/bin/sh\nexec %s -cpu %s %s "$@"\n' "$runner" "$cpu" "$abs" >"$w"
        else
            printf '#!/bin/sh\nexec %s "$@"\n' "$abs" >"$w"
        fi
        chmod +x "$w"
        wrapped+=("$w")
    done
    echo "==== aarch64, cpu $cpu"
    (cd "$here" && ./tests/run.sh "${wrapped[@]}") || status=1
    rm -rf "$dir"
done
exit $status
