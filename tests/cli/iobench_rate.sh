#!/usr/bin/env bash
# The drive's lane curve kept by `sluice iobench --expert` (io/io_rate.h):
# written per device under $XDG_CACHE_HOME/sluice/; its best point is
# --stats' drive rate instead of the calibration, whatever lanes the run
# reads on, and the streamer reads on the fewest lanes near that point (8 at
# least); a
# curve older than a day, another device's, or a damaged file is not used
# (the bound calibrates and says why); iobench runs that do not measure the
# streamer's reads (no --expert) keep nothing. Also the resident run's
# decode-only line, the figure a streamed bound's compute compares with.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-iorate-XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache

M=$work/tiny.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 9 -q -o "$M"; then
    bad "mkmodel"
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
check "on the default 8 lanes, saying none is kept" \
    grep -q "drive calibrated on [0-9]* MiB of whole experts on 8 lanes at start (no lane curve kept" \
    "$work/cal.err"

"$SLUICE" iobench --model "$M" --expert --lanes 1,4 --seconds 0.2 >"$work/io" 2>&1
check "iobench --expert succeeds" [ $? -eq 0 ]
f=$(ls "$XDG_CACHE_HOME/sluice"/iobench-dev-*.rate 2>/dev/null | head -1)
check "iobench --expert keeps the rate per device" [ -n "$f" ]
check "iobench says where it kept it" grep -q "kept as this drive's rate for --stats' bound: $f" "$work/io"
check "one row per lane count" [ "$(grep -c '^lanes [14] mib_s ' "$f")" -eq 2 ]

# a curve of known shape, written as iobench writes it (checksum included),
# so the test does not depend on the test machine's drive
dev=$(sed -n 's/^device //p' "$f")
curve() { # curve WHEN ROWS...: rewrites $f
    local when=$1 body
    shift
    body=$(printf 'sluice io rate v1\ndevice %s\nwhen %s\n' "${DEV:-$dev}" "$when"
        printf '%s\n' "$@")
    python3 - "$f" "$body" <<'PY'
import sys
path, body = sys.argv[1], sys.argv[2] + "\n"
h = 0xcbf29ce484222325
for c in body.encode():
    h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
open(path, "w").write(body + "end %016x\n" % h)
PY
}
now=$(date +%s)
curve "$now" "lanes 1 mib_s 1000.000" "lanes 2 mib_s 1900.000" "lanes 4 mib_s 3000.000" \
    "lanes 8 mib_s 3050.000" "lanes 16 mib_s 3300.000" "lanes 32 mib_s 3310.000"
run "$work/kept"
check "a run with --stats succeeds" [ $? -eq 0 ]
check "the bound uses the kept rate" grep -q "drive rate kept by .sluice iobench --expert." "$work/kept.err"
check "at the curve's best point, naming its lanes" \
    grep -q " / 3310 MiB/s = .*the best point of its lane curve (32 lanes), measured 0.0 h ago" \
    "$work/kept.err"
check "the streamer reads on the fewest lanes within 5 % of it (16)" \
    grep -q "I/O pread x16," "$work/kept.err"

curve "$now" "lanes 1 mib_s 1000.000" "lanes 4 mib_s 3000.000" "lanes 8 mib_s 3100.000"
run "$work/few"
check "a curve whose best needs 4 lanes: still 8, the default (never fewer)" \
    grep -q "I/O pread x8," "$work/few.err"
check "and its best point is the bound's rate" grep -q " / 3100 MiB/s = " "$work/few.err"

run "$work/other" --io-threads 2
check "--io-threads 2: its lanes are read on" grep -q "I/O pread x2," "$work/other.err"
check "and the bound is still the drive's best point" grep -q " / 3100 MiB/s = " "$work/other.err"

curve $((now - 25 * 3600)) "lanes 4 mib_s 3000.000"
run "$work/stale"
check "a curve older than a day: the bound calibrates" \
    grep -q "drive calibrated on .*measured 25.0 hours ago (kept a day at most)" "$work/stale.err"
check "and the streamer reads on the default 8 lanes" grep -q "I/O pread x8," "$work/stale.err"

DEV=dev-0-999 curve "$now" "lanes 4 mib_s 3000.000"
run "$work/otherdev"
check "another device's curve is not used" \
    grep -q "drive calibrated on .*is of device dev-0-999, the model is on $dev" "$work/otherdev.err"

curve "$now" "lanes 4 mib_s 3000.000"
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
