#!/usr/bin/env bash
# The drive's rate kept by `sluice iobench --expert` (io/io_rate.h): written
# per device under $XDG_CACHE_HOME/sluice/, used by --stats' printed bound
# instead of the calibration when it has the streamer's lane count; a
# damaged file is ignored with a warning; iobench runs that do not measure
# the streamer's reads (no --expert) keep nothing. Also the resident run's
# decode-only line, the figure a streamed bound's compute compares with.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-iorate-XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache

M=$work/tiny.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 9 -q -o "$M"; then
    bad "mkmodel"
    
"$SLUICE" run -m "$M" -p "The river" -n 6 --temp 0 --ignore-eos --no-stream --stats \
    >"$work/res" 2>"$work/res.err"
check "a resident run with --stats prints its decode-only rate" \
    grep -q "^decode  *[0-9.]* tok/s: [0-9.]* ms per decoded token (6 tokens" "$work/res.err"
finish
    exit 1
fi
run() { # run OUT ARGS...
    local out=$1
    shift
    "$SLUICE" run -m "$M" -p "The river" -n 6 --temp 0 --ignore-eos --moe-stream \
        --cache-experts 4 --no-warm --stats "$@" >"$out" 2>"$out.err"
}

"$SLUICE" iobench --model "$M" --slice-kb 4 --lanes 2 --seconds 0.1 >"$work/plain" 2>&1
check "iobench without --expert keeps nothing" [ ! -e "$XDG_CACHE_HOME/sluice" ] || \
    [ -z "$(ls "$XDG_CACHE_HOME/sluice"/iobench-*.rate 2>/dev/null)" ]

run "$work/cal"
check "without a kept rate the bound calibrates" grep -q "drive calibrated on" "$work/cal.err"

"$SLUICE" iobench --model "$M" --expert --lanes 1,4 --seconds 0.2 >"$work/io" 2>&1
check "iobench --expert succeeds" [ $? -eq 0 ]
f=$(ls "$XDG_CACHE_HOME/sluice"/iobench-dev-*.rate 2>/dev/null | head -1)
check "iobench --expert keeps the rate per device" [ -n "$f" ]
check "iobench says where it kept it" grep -q "kept as this drive's rate for --stats' bound: $f" "$work/io"
check "one row per lane count" [ "$(grep -c '^lanes [14] mib_s ' "$f")" -eq 2 ]

run "$work/kept"
check "a run with --stats succeeds" [ $? -eq 0 ]
check "the bound uses the kept rate" grep -q "drive rate kept by .sluice iobench --expert." "$work/kept.err"
rate=$(awk '$1 == "lanes" && $2 == 4 { printf "%.0f", $4 }' "$f")
check "at the rate iobench measured for 4 lanes" grep -q " / ${rate} MiB/s = " "$work/kept.err"

run "$work/other" --io-threads 2
check "no kept rate for 2 lanes: calibrated" grep -q "drive calibrated on" "$work/other.err"

sed -i 's/^lanes 4 mib_s \([0-9]\)/lanes 4 mib_s 9\1/' "$f"
run "$work/damaged"
check "a damaged file: the run still succeeds" [ $? -eq 0 ]
check "a damaged file is ignored with a warning" \
    grep -q "warning: ignoring the kept drive rate: .*checksum" "$work/damaged.err"
check "and the bound calibrates" grep -q "drive calibrated on" "$work/damaged.err"

"$SLUICE" run -m "$M" -p "The river" -n 6 --temp 0 --ignore-eos --no-stream --stats \
    >"$work/res" 2>"$work/res.err"
check "a resident run with --stats prints its decode-only rate" \
    grep -q "^decode  *[0-9.]* tok/s: [0-9.]* ms per decoded token (6 tokens" "$work/res.err"
finish
