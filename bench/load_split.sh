#!/usr/bin/env bash
# bench/load_split.sh MODEL [RUNS] [SLUICE]: where a cold `--no-stream` load
# of MODEL spends its time, in one run. Back to back, RUNS times:
# `iobench --slice-kb 2048` (the load's 2 MiB reads, io_bulk.c) on 8 and 16
# lanes into pages faulted once (the drive's read rate), the same with
# --fresh (every read into freshly committed huge pages: read + first
# touch), then the load itself (`run --no-stream -n 1 --stats`: its "load"
# line; a Q4_K file has nothing to repack). Timed: run it under
# `flock /work/timing.lock`.
set -eu
MODEL=${1:?usage: bench/load_split.sh MODEL [RUNS] [SLUICE]}
RUNS=${2:-2}
SLUICE=${3:-build/rel/sluice}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-load-XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/xdg
peak() { python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["peak"]; print("%.0f@%d" % (p["mib_s"], p["lanes"]))' "$1"; }
printf '%-4s %14s %14s %s\n' run "read MiB/s" "read+fault" "load"
for r in $(seq 1 "$RUNS"); do
    "$SLUICE" iobench --model "$MODEL" --slice-kb 2048 --lanes 8,16 --seconds 2 --json >"$work/a.json"
    "$SLUICE" iobench --model "$MODEL" --slice-kb 2048 --lanes 8,16 --seconds 2 --fresh \
        --json >"$work/b.json"
    "$SLUICE" run -m "$MODEL" -p "The river" -n 1 --temp 0 --no-stream --stats >/dev/null \
        2>"$work/l.err"
    printf '%-4s %14s %14s %s\n' "$r" "$(peak "$work/a.json")" "$(peak "$work/b.json")" \
        "$(sed -n 's/^load  *//p' "$work/l.err")"
done
