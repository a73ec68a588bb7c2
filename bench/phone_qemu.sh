#!/usr/bin/env bash
# bench/phone_qemu.sh - the phone-shaped run under emulation (issue 37): the
# static ARM64 build under qemu-aarch64, inside a memory cgroup of LIMIT_MB
# (default 2048 MiB, a phone's share), streams the Qwen3-30B-A3B-shaped
# q4_k_m file and must print the x86 build's greedy text with the cgroup's
# peak under the limit. Speed under emulation means nothing (qemu is some
# 20-50x slower); correctness and bounded memory do.
#
#   1. the model: MODEL (default the 12-layer 30B-A3B-shaped q4_k_m file of
#      bench/stream.sh, about 4.1 GB; generated if missing; LAYERS=N makes
#      a smaller file with the same expert shape instead)
#   2. x86 reference: build/rel/sluice run, greedy, N tokens (default 4),
#      and the logits of every position of a CTX-token prefill (default 16;
#      perplexity's KL-divergence base file): the generated model's greedy
#      tokens often print as nothing, the logits always compare
#   3. the same two under qemu-aarch64 -cpu max in the cgroup, the budget
#      left to the binary (MemAvailable and the cgroup's room, less the
#      margin), --stats for the plan and peak RSS
#   4. prints the plan line, peak RSS and the cgroup's peak; exits 1 if the
#      texts or the logits files differ or the peak passes the limit
#
# Needs root for the cgroup (bench/lib/cgroup.sh), make ARCH=aarch64 and
# qemu-user. Environment: MODEL, LAYERS, N, LIMIT_MB, THREADS (default 2),
# OUT (default build/bench-phone).
set -eu
cd "$(dirname "$0")/.."
X86=build/rel/sluice
A64=build/aarch64/sluice
LAYERS=${LAYERS:-12}
MODEL=${MODEL:-models/qwen3moe-30b-a3b-l$LAYERS-q4_k_m.gguf}
N=${N:-4}
CTX=${CTX:-16}
LIMIT_MB=${LIMIT_MB:-2048}
THREADS=${THREADS:-2}
OUT=${OUT:-build/bench-phone}
P="The river carries"
mkdir -p "$OUT"
make -s "$X86"
make -s ARCH=aarch64 "$A64"
if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    "$X86" mkmodel --arch qwen3moe --preset 30b-a3b --layers "$LAYERS" --type q4_k_m --seed 1 \
        -o "$MODEL"
fi
echo "model $MODEL: $(( $(stat -c %s "$MODEL") / 1048576 )) MiB; cgroup limit $LIMIT_MB MiB"

T=/usr/share/common-licenses/GPL-3
[ -f "$T" ] || T=README.md
echo "== x86 reference, $N tokens and a $CTX-token prefill's logits"
"$X86" run -m "$MODEL" -p "$P" -n "$N" --temp 0 -t "$THREADS" >"$OUT/x86.txt" 2>"$OUT/x86.err"
"$X86" perplexity -m "$MODEL" -f "$T" -c "$CTX" --chunks 1 -t "$THREADS" \
    --kl-divergence-base "$OUT/x86.kld" >/dev/null 2>"$OUT/x86-ppl.err"

echo "== aarch64 under qemu-aarch64 in the cgroup"
. bench/lib/cgroup.sh
cg_make "$LIMIT_MB" sluice-phone || { echo "cannot make a memory cgroup (needs root)" >&2; exit 2; }
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
start=$(date +%s)
sh -c "echo \$\$ > $cg/cgroup.procs && exec qemu-aarch64 -cpu max $A64 run -m $MODEL \
    -p '$P' -n $N --temp 0 -t $THREADS --stats" >"$OUT/a64.txt" 2>"$OUT/a64.err" && run_rc=0 ||
    run_rc=$?
sh -c "echo \$\$ > $cg/cgroup.procs && exec qemu-aarch64 -cpu max $A64 perplexity -m $MODEL \
    -f $T -c $CTX --chunks 1 -t $THREADS --kl-divergence-base $OUT/a64.kld" >/dev/null \
    2>"$OUT/a64-ppl.err" || true
secs=$(( $(date +%s) - start ))
peak_mb=$(cg_peak_mb)

echo "x86 text:     $(cat "$OUT/x86.txt" | od -c | head -3 | tr -s ' ' | tr '\n' ' ')"
echo "aarch64 text: $(cat "$OUT/a64.txt" | od -c | head -3 | tr -s ' ' | tr '\n' ' ')"
grep -E "^(memory|expert cache|process) " "$OUT/a64.err" || tail -5 "$OUT/a64.err"
echo "cgroup peak $peak_mb MiB of $LIMIT_MB MiB; $secs s under qemu"
rc=0
if [ "$run_rc" -eq 0 ] && cmp -s "$OUT/x86.txt" "$OUT/a64.txt"; then
    echo "same text: yes ($(wc -c <"$OUT/x86.txt") bytes)"
else echo "same text: NO"; rc=1; fi
if [ -s "$OUT/x86.kld" ] && cmp -s "$OUT/x86.kld" "$OUT/a64.kld"; then
    echo "same logits: yes ($CTX positions, $(wc -c <"$OUT/x86.kld") bytes)"
else echo "same logits: NO"; rc=1; fi
if [ "$peak_mb" -lt "$LIMIT_MB" ]; then echo "peak under the limit: yes"
else echo "peak under the limit: NO"; rc=1; fi
exit $rc
