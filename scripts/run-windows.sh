#!/usr/bin/env bash
# Runs Windows test binaries under wine through tests/run.sh, then
# tests/cli/windows.sh and windows_serve.sh (the exe against the Linux
# build).
#   usage: scripts/run-windows.sh WINE "NO_SIMD_BINS" BIN...
# Each binary gets a small wrapper named like it (run.sh's summary lines stay
# as they are; wine's CRLF line ends are dropped). The binaries named in
# NO_SIMD_BINS re-run themselves with SLUICE_NO_SIMD=1 in a child on Linux;
# Windows has no fork, so they get a second wrapper that sets it.
set -u
wine=$1
nosimd=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-win-XXXXXX")
trap 'rm -rf "$dir"' EXIT
export WINEDEBUG=-all
wrap() { # wrap NAME ENV BIN
    local w="$dir/build/windows/$1"
    mkdir -p "$(dirname "$w")"
    printf '#!/bin/bash\nset -o pipefail\n%s "%s" "%s" "$@" 2>&1 | tr -d "\\r"\n' \
        "$2" "$wine" "$3" >"$w"
    chmod +x "$w"
    wrapped+=("$w")
}
wrapped=()
for bin in "$@"; do
    abs=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
    name=$(basename "$bin" .exe)
    wrap "$name" "" "$abs"
    case " $nosimd " in *" $name "*) wrap "$name-no-simd" "SLUICE_NO_SIMD=1" "$abs" ;; esac
done
cd "$here" && ./tests/run.sh "${wrapped[@]}" tests/cli/windows.sh tests/cli/windows_serve.sh
