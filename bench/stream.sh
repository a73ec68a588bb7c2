#!/usr/bin/env bash
# bench/stream.sh - decode speed of a MoE model held to a memory limit of
# about half its size, against the physical bound of this machine.
#
# Steps (all with the optimised build):
#   1. the model: the 12-layer Qwen3-30B-A3B-shaped q4_k_m file, generated
#      if missing (about 4.1 GB)
#   2. the drive: `sluice iobench --expert` (whole experts, three slices,
#      as the streamer reads them) over CURVE lanes gives the bandwidth at
#      the expert size; its curve is kept for the device, so the streamed
#      run reads on the lanes of its best point and --stats' bound uses it
#   3. fully resident decode (no limit): compute seconds per token
#   4. streamed decode inside a memory cgroup of LIMIT_MB (default: half
#      the model): tok/s, hit rate, MiB/token, the stall split, peak RSS
#   5. the bound: 1 / max(resident s/token, miss MiB per token / drive MiB/s),
#      drive = iobench's peak; beside it the bound --stats printed and the
#      source of its drive rate
#
# Environment: MODEL, N (tokens, default 256: enough for the cache to reach
# its steady state), CACHE_EXPERTS (cap the expert cache below what the
# limit allows, to study the I/O-bound regime), THREADS (default 2),
# CURVE (iobench's lane counts, default 1,2,4,8,16), LANES (force the
# streamed run's I/O lanes; default: the curve's), LIMIT_MB, OUT (result
# folder), EXTRA (more
# flags for the streamed run, e.g. --no-prefetch).
# Needs root for the cgroup (v1 memory controller or v2).
set -eu
cd "$(dirname "$0")/.."
SLUICE=build/rel/sluice
MODEL=${MODEL:-models/qwen3moe-30b-a3b-l12-q4_k_m.gguf}
N=${N:-256}
THREADS=${THREADS:-2}
CURVE=${CURVE:-1,2,4,8,16}
LANES=${LANES:-}
OUT=${OUT:-build/bench-stream}
mkdir -p "$OUT"
make -s all

if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    "$SLUICE" mkmodel --arch qwen3moe --preset 30b-a3b --layers 12 --type q4_k_m --seed 1 -o "$MODEL"
fi
model_mb=$(( $(stat -c %s "$MODEL") / 1048576 ))
LIMIT_MB=${LIMIT_MB:-$(( model_mb / 2 ))}
echo "model $MODEL: $model_mb MiB; memory limit for the streamed run: $LIMIT_MB MiB"

echo "== 1/3 drive: iobench --expert, lanes $CURVE"
"$SLUICE" iobench --model "$MODEL" --expert --lanes "$CURVE" --seconds 4 --json > "$OUT/iobench.json"

echo "== 2/3 fully resident decode, $N tokens"
"$SLUICE" bench -m "$MODEL" -p 0 -n "$N" -r 1 -t "$THREADS" --no-stream \
    --stats-json "$OUT/resident.json" | tee "$OUT/resident.txt"

echo "== 3/3 streamed decode inside a $LIMIT_MB MiB memory cgroup"
. bench/lib/cgroup.sh
cg_make "$LIMIT_MB" sluice-bench || { echo "cannot make a memory cgroup (needs root)" >&2; exit 2; }
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
sh -c "echo \$\$ > $cg/cgroup.procs && exec $SLUICE bench -m $MODEL -p 0 -n $N -r 1 \
    -t $THREADS ${LANES:+--io-threads $LANES} ${CACHE_EXPERTS:+--cache-experts $CACHE_EXPERTS} \
    --stats --stats-json $OUT/stream.json ${EXTRA:-}" | tee "$OUT/stream.txt"
cg_peak=$(cat "$cg/$peak_file" 2>/dev/null || echo 0)

python3 - "$OUT" "$LIMIT_MB" "$cg_peak" <<'PY'
import json, sys
out, limit_mb, cg_peak = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
io = json.load(open(out + "/iobench.json"))
res = json.load(open(out + "/resident.json"))
st = json.load(open(out + "/stream.json"))
MiB = 1048576.0
drive = io["peak"]["mib_s"]
t_res = res["seconds"] / res["tokens"]
t_str = st["seconds"] / st["tokens"]
miss = st["mib_per_token"]
t_io = miss / drive
bound = 1.0 / max(t_res, t_io)
print()
print("drive (iobench --expert, peak)   %.0f MiB/s at %d lanes" % (drive, io["peak"]["lanes"]))
print("resident decode                  %.2f tok/s (%.1f ms/token)" % (1 / t_res, 1e3 * t_res))
print("streamed decode                  %.2f tok/s (%.1f ms/token)" % (1 / t_str, 1e3 * t_str))
print("  hit rate %.1f%%, %.2f MiB/token read, stall %.1f ms/token, cache mgmt %.2f ms/token"
      % (100 * st["hit_rate"], miss, 1e3 * st["stall_s"] / st["tokens"],
         1e3 * st["manage_s"] / st["tokens"]))
print("  peak RSS %.0f MiB, cgroup peak %.0f MiB, limit %.0f MiB, major faults %d"
      % (st["peak_rss_bytes"] / MiB, cg_peak / MiB, limit_mb, st["major_faults"]))
print("bound 1/max(%.1f ms compute, %.1f ms I/O)  %.2f tok/s" % (1e3 * t_res, 1e3 * t_io, bound))
print("achieved / bound                 %.0f%%" % (100 * (1 / t_str) / bound))
if "drive_bytes_per_s" in st:
    print("--stats' own bound               %.2f tok/s, drive %.0f MiB/s from %s (%d lanes)"
          % (st["bound_tok_s"], st["drive_bytes_per_s"] / MiB, st["drive_source"],
             st["drive_lanes"]))
PY
