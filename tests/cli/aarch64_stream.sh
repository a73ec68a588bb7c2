#!/usr/bin/env bash
# The aarch64 build streams experts under qemu-user as a phone would run it
# (the full-size run is bench/phone_qemu.sh): a generated model
# read through pread lanes with a small expert cache gives the x86 build's
# greedy text, inside a memory cgroup of 64 MiB, less than the 89 MiB model,
# when this user can make one (root; its peak stays below the limit), and
# with the model on tmpfs (buffered fallback, one note). Skipped (0 passed)
# without build/aarch64/sluice or qemu-aarch64.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/aarch64.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-a64s-XXXXXX")
cg=
trap 'rm -rf "$work"; [ -n "$cg" ] && rmdir "$cg" 2>/dev/null; rm -f "${shm_model:-}"' EXIT

M=$work/m.gguf
"$X86" mkmodel --arch qwen3moe --preset small --type q4_k_m --seed 4 -q -o "$M"
P="The river carries"
ARGS=(-p "$P" -n 12 --temp 0 -t 2 --ignore-eos)
"$X86" run -m "$M" "${ARGS[@]}" >"$work/x86.txt" 2>"$work/x86.err"
check "x86 greedy run" [ -s "$work/x86.txt" ]
STREAM=(--moe-stream --cache-experts 12 --io-threads 2 --stats)

. bench/lib/cgroup.sh
if cg_make 64 sluice-a64s 2>/dev/null; then
    sh -c "echo \$\$ > $cg/cgroup.procs && exec qemu-aarch64 -cpu max \"\$@\"" sh "$A64" run -m "$M" \
        "${ARGS[@]}" "${STREAM[@]}" >"$work/a64.txt" 2>"$work/a64.err"
    peak=$(cg_peak_mb)
    check "aarch64 streamed in a 64 MiB cgroup (the model is 89 MiB): x86's text" \
        same_text "$work/x86.txt" "$work/a64.txt"
    check "... the cgroup's peak ($peak MiB) stays below 64 MiB" [ "$peak" -lt 64 ]
else
    echo "   (cannot make a memory cgroup here: streamed without one)"
    qemu-aarch64 -cpu max "$A64" run -m "$M" "${ARGS[@]}" "${STREAM[@]}" >"$work/a64.txt" \
        2>"$work/a64.err"
    check "aarch64 streamed: x86's text" same_text "$work/x86.txt" "$work/a64.txt"
fi
check "... through pread lanes" grep -q "I/O pread x2" "$work/a64.err"

if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
    shm_model=$(mktemp /dev/shm/sluice-a64s-XXXXXX)
    cp "$M" "$shm_model"
    qemu-aarch64 -cpu max "$A64" run -m "$shm_model" "${ARGS[@]}" "${STREAM[@]}" \
        >"$work/shm.txt" 2>"$work/shm.err"
    check "aarch64 streamed from tmpfs: x86's text" same_text "$work/x86.txt" "$work/shm.txt"
    check "... buffered, one note naming tmpfs" \
        sh -c "[ \$(grep -c 'note: O_DIRECT is not used on tmpfs' '$work/shm.err') -eq 1 ]"
fi
finish
