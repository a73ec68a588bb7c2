#!/usr/bin/env bash
# bench/cal_vs_iobench.sh MODEL [RUNS] [SLUICE] [BASE_SLUICE]: does --stats'
# drive calibration (no lane curve kept) agree with `sluice iobench
# --expert`'s peak? Each run, back to back: iobench over lanes 1,2,4,8,16
# (2 s a row), then a streamed run that calibrates (an empty cache
# directory, so nothing is kept), and with BASE_SLUICE the older binary's
# calibration too. Prints one line a run: iobench peak, the calibration's
# rate, their ratio. Timed: run it under `flock /work/timing.lock`.
set -eu
MODEL=${1:?usage: bench/cal_vs_iobench.sh MODEL [RUNS] [SLUICE] [BASE_SLUICE]}
RUNS=${2:-3}
SLUICE=${3:-build/rel/sluice}
BASE=${4:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-cal-XXXXXX")
trap 'rm -rf "$work"' EXIT
cal() { # cal BINARY: the calibrated drive rate in MiB/s, and the MiB it read
    XDG_CACHE_HOME=$work/empty "$1" run -m "$MODEL" -p "The river" -n 2 --temp 0 --moe-stream \
        --cache-mb 1024 --no-warm --stats-json "$work/s.json" >/dev/null 2>"$work/s.err"
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%.0f" % (j["drive_bytes_per_s"]/1048576))' "$work/s.json"
}
printf '%-4s %10s %6s %10s %7s %10s %7s\n' run iobench lanes calibrated ratio base_cal ratio
for r in $(seq 1 "$RUNS"); do
    XDG_CACHE_HOME=$work/io "$SLUICE" iobench --model "$MODEL" --expert --lanes 1,2,4,8,16 \
        --seconds 2 --json >"$work/io.json"
    read -r peak lanes < <(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["peak"]; print("%.0f %d" % (p["mib_s"], p["lanes"]))' "$work/io.json")
    c=$(cal "$SLUICE")
    b=-; br=-
    if [ -n "$BASE" ]; then
        b=$(cal "$BASE")
        br=$(python3 -c "print('%.2f' % ($b / $peak))")
    fi
    printf '%-4s %10s %6s %10s %7s %10s %7s\n' "$r" "$peak" "$lanes" "$c" \
        "$(python3 -c "print('%.2f' % ($c / $peak))")" "$b" "$br"
done
