#!/usr/bin/env bash
# bench/depth_curve.sh [OUT.md]: sluice against llama.cpp at depth, as
# llama-bench measures: pp NP and tg NG after D tokens of existing context,
# for each depth D and mode (resident, streamed), written as a markdown table
# to OUT.md (default build/depth_curve.md) and to standard output.
#
# Each row runs `sluice bench` and then bench/llama_speed.c on the same test,
# each under its own `flock /tmp/bench.lock` (other engineers may time
# between rows), with the load average (`uptime`) taken right before each
# engine's run; compare sluice with llama.cpp within a row, not across rows.
#   sluice:    SLUICE bench -m MODEL -p NP -n NG -d D -r REPS -t T -b 512 [--no-stream] --json
#   llama.cpp: llama_speed -m MODEL -p NP -n NG -d D -r REPS -t T -b 2048 -ub 512 --json
# "streamed" runs both inside a fresh CG_MB MiB memory cgroup (bench/lib/
# cgroup.sh; needs root): sluice streams the routed experts (its default),
# llama.cpp runs from its mmap of the file (LLAMA_STREAMED_ARGS, default
# --no-repack: its repacked copy of the weights would not fit), the page cache
# charged to the cgroup (LLAMA_STREAMED=0 skips llama.cpp there: it reads from
# the SSD whatever the page cache lost, which may take very long).
#
# Environment (defaults): MODEL (/work/models/qwen3moe-30b-a3b-l12-q4_k_m.gguf),
# DEPTHS ("0 1024 4096 8192 16384"), MODES ("resident streamed"), NP (512; 0
# skips pp), NG (128; 0 skips tg), REPS (1), T (2), CG_MB (2048), SLUICE
# (build/rel/sluice), LLAMA (0 skips llama.cpp), SLUICE_ARGS / LLAMA_ARGS
# (extra flags for each, e.g. "-ctk q8_0 -ctv q8_0"), TIMEOUT (seconds per
# engine run, 3600). llama_speed is built on first use into build/llama-ref
# from node-llama-cpp 3.22.1's libraries (npm, git and network needed once,
# as bench/llama_ref.sh), the AVX2 ("haswell") CPU backend.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$root/build/depth_curve.md}
MODEL=${MODEL:-/work/models/qwen3moe-30b-a3b-l12-q4_k_m.gguf}
DEPTHS=${DEPTHS:-0 1024 4096 8192 16384}
MODES=${MODES:-resident streamed}
NP=${NP:-512} NG=${NG:-128} REPS=${REPS:-1} T=${T:-2} CG_MB=${CG_MB:-2048}
SLUICE=${SLUICE:-$root/build/rel/sluice}
LLAMA=${LLAMA:-1} LLAMA_STREAMED=${LLAMA_STREAMED:-1}
SLUICE_ARGS=${SLUICE_ARGS:-} LLAMA_ARGS=${LLAMA_ARGS:-}
LLAMA_STREAMED_ARGS=${LLAMA_STREAMED_ARGS:---no-repack}
TIMEOUT=${TIMEOUT:-3600}
ref=$root/build/llama-ref
NLC_VERSION=${NLC_VERSION:-3.22.1}

[ -x "$SLUICE" ] || { echo "depth_curve: no sluice binary at $SLUICE (make all)" >&2; exit 2; }
[ -r "$MODEL" ] || { echo "depth_curve: cannot read $MODEL" >&2; exit 2; }

if [ "$LLAMA" != 0 ]; then
    if [ ! -d "$ref/node_modules/node-llama-cpp" ]; then
        mkdir -p "$ref"
        (cd "$ref" && npm init -y >/dev/null &&
            npm install --no-audit --no-fund --ignore-scripts "node-llama-cpp@$NLC_VERSION" >/dev/null) || exit 1
    fi
    [ -d "$ref/src" ] || git clone -q "$ref/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$ref/src" || exit 1
    libs=$(ls -d "$ref"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64)
    if [ ! -x "$ref/llama_speed" ] || [ "$root/bench/llama_speed.c" -nt "$ref/llama_speed" ]; then
        cc -std=c11 -O2 -Wall -Wextra -I"$ref/src/include" -I"$ref/src/ggml/include" \
            "$root/bench/llama_speed.c" -L"$libs" \
            "-l:$(basename "$(ls "$libs"/libllama.v*.so)")" "-l:$(basename "$(ls "$libs"/libggml.v*.so)")" \
            -l:libggml-base.so -Wl,-rpath,"$libs" -lm -o "$ref/llama_speed" || exit 1
    fi
    export LLAMA_CPU_BACKEND=${LLAMA_CPU_BACKEND:-$libs/libggml-cpu-haswell.so}
fi

. "$root/bench/lib/cgroup.sh"

load() { uptime | sed 's/.*load average: //; s/,.*//'; }

# run MODE CMD...: CMD under the bench lock (inside a fresh cgroup when MODE is
# streamed), its JSON lines on stdout; "cgroup peak" to stderr.
run() {
    local mode=$1
    shift
    if [ "$mode" = streamed ]; then
        cg_make "$CG_MB" depth-curve || { echo "depth_curve: cannot make a memory cgroup (needs root)" >&2; return 2; }
        flock /tmp/bench.lock timeout "$TIMEOUT" sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@"
        local rc=$?
        echo "cgroup peak $(cg_peak_mb) MiB" >&2
        rmdir "$cg" 2>/dev/null
        return $rc
    fi
    flock /tmp/bench.lock timeout "$TIMEOUT" "$@"
}

tps() { # TEST_PREFIX < json lines -> tok/s of the test whose name starts so
    sed -n "s/.*\"test\":\"$1[^\"]*\".*\"tps_mean\":\([0-9.]*\).*/\1/p" | tail -1
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else printf "-" }'; }

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo "?")
{
    echo "Model $(basename "$MODEL"), $T threads, sluice $SLUICE (commit $commit) $SLUICE_ARGS,"
    echo "llama.cpp: node-llama-cpp $NLC_VERSION (bench/llama_speed.c, -b 2048 -ub 512) $LLAMA_ARGS; $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "| mode | depth | pp$NP sluice | pp$NP llama.cpp | sluice / llama | tg$NG sluice | tg$NG llama.cpp | sluice / llama | load (sluice, llama) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
} | tee "$OUT"

for mode in $MODES; do
    for d in $DEPTHS; do
        sargs="-m $MODEL -p $NP -n $NG -d $d -r $REPS -t $T -b 512 --json $SLUICE_ARGS"
        [ "$mode" = resident ] && sargs="$sargs --no-stream"
        ls_=$(load)
        # shellcheck disable=SC2086
        sj=$(run "$mode" "$SLUICE" bench $sargs 2>>"$OUT.log")
        echo "$sj" >>"$OUT.log"
        sp=$(echo "$sj" | tps pp) sg=$(echo "$sj" | tps tg)
        lp= lg= ll=-
        if [ "$LLAMA" != 0 ] && { [ "$mode" = resident ] || [ "$LLAMA_STREAMED" != 0 ]; }; then
            ll=$(load)
            largs=$LLAMA_ARGS
            [ "$mode" = streamed ] && largs="$largs $LLAMA_STREAMED_ARGS"
            # shellcheck disable=SC2086
            lj=$(run "$mode" "$ref/llama_speed" -m "$MODEL" -p "$NP" -n "$NG" -d "$d" -r "$REPS" \
                -t "$T" -b 2048 -ub 512 --json $largs 2>>"$OUT.log")
            echo "$lj" >>"$OUT.log"
            lp=$(echo "$lj" | tps pp) lg=$(echo "$lj" | tps tg)
        fi
        printf '| %s | %d | %s | %s | %s | %s | %s | %s | %s, %s |\n' "$mode" "$d" \
            "${sp:--}" "${lp:--}" "$(ratio "${sp:-0}" "${lp:-0}")" \
            "${sg:--}" "${lg:--}" "$(ratio "${sg:-0}" "${lg:-0}")" "$ls_" "$ll" | tee -a "$OUT"
    done
done
