#!/usr/bin/env bash
# The aarch64 build under qemu-user gives the x86 build's bits: the demo
# model (qwen3moe, preset small, q4_k_m, seed 1) written by the x86 binary
# decodes greedily to the same text under emulation with every extension
# (-cpu max: NEON + SDOT kernels), on a plain ARMv8.0 core (cortex-a53:
# NEON without SDOT) and with the scalar kernels (SLUICE_NO_SIMD=1); the
# logits of every position of a 32-token prefill (perplexity's
# KL-divergence base file) are byte for byte the x86 ones on both cpu
# models, and so are those of tiny q4_0 and MXFP4 models (the rp32 kernels); a
# generated tiny model written under emulation is byte for byte the x86
# one (the generator's loops); and `bench --kernels` names its kernel set.
# Skipped (0 passed) when build/aarch64/sluice (make ARCH=aarch64) or
# qemu-aarch64 is missing; .ci/run builds it before the suite.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/aarch64.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-a64-XXXXXX")
trap 'rm -rf "$work"' EXIT

M=$work/demo.gguf
"$X86" mkmodel --arch qwen3moe --preset small --type q4_k_m --seed 1 -q -o "$M"
check "x86 mkmodel writes the demo model" [ -s "$M" ]
P="The river carries"
"$X86" run -m "$M" -p "$P" -n 24 --temp 0 -t 2 >"$work/x86.txt" 2>"$work/x86.err"
check "x86 greedy run" [ -s "$work/x86.txt" ]

for cpu in max cortex-a53; do
    qemu-aarch64 -cpu "$cpu" "$A64" run -m "$M" -p "$P" -n 24 --temp 0 -t 2 \
        >"$work/a64-$cpu.txt" 2>"$work/a64-$cpu.err"
    check "aarch64 ($cpu) greedy output equals x86's" same_text "$work/x86.txt" "$work/a64-$cpu.txt"
done
SLUICE_NO_SIMD=1 qemu-aarch64 -cpu cortex-a53 "$A64" run -m "$M" -p "$P" -n 24 --temp 0 -t 1 \
    >"$work/a64-ref.txt" 2>"$work/a64-ref.err"
check "aarch64 scalar kernels' greedy output equals x86's" same_text "$work/x86.txt" "$work/a64-ref.txt"

T=/usr/share/common-licenses/GPL-3
[ -f "$T" ] || T=README.md
"$X86" perplexity -m "$M" -f "$T" -c 32 --chunks 1 -t 2 --kl-divergence-base "$work/x86.kld" \
    >/dev/null 2>&1
check "x86 writes the logits file" [ -s "$work/x86.kld" ]
for cpu in max cortex-a53; do
    qemu-aarch64 -cpu "$cpu" "$A64" perplexity -m "$M" -f "$T" -c 32 --chunks 1 -t 2 \
        --kl-divergence-base "$work/a64-$cpu.kld" >/dev/null 2>&1
    check "aarch64 ($cpu) prefill logits equal x86's bit for bit" \
        cmp -s "$work/x86.kld" "$work/a64-$cpu.kld"
done

# the rp32 order (llama.cpp's repacked Q4_0 / MXFP4 matrices, interleaved x8
# at load: the NEON rp32 kernels, SDOT and ARMv8.0): a tiny q4_0 qwen3moe and
# a tiny gpt-oss with MXFP4 experts, prefill logits bit for bit
for spec in "qwen3moe q4_0" "gpt-oss mxfp4"; do
    set -- $spec
    "$X86" mkmodel --arch "$1" --preset tiny --type "$2" --seed 2 -q -o "$work/rp-$2.gguf"
    "$X86" perplexity -m "$work/rp-$2.gguf" -f "$T" -c 32 --chunks 1 -t 2 \
        --kl-divergence-base "$work/rp-$2-x86.kld" >/dev/null 2>&1
    check "x86 writes the $2 logits file" [ -s "$work/rp-$2-x86.kld" ]
    for cpu in max cortex-a53; do
        qemu-aarch64 -cpu "$cpu" "$A64" perplexity -m "$work/rp-$2.gguf" -f "$T" -c 32 --chunks 1 \
            -t 2 --kl-divergence-base "$work/rp-$2-$cpu.kld" >/dev/null 2>&1
        check "aarch64 ($cpu) $1 $2 prefill logits equal x86's bit for bit" \
            cmp -s "$work/rp-$2-x86.kld" "$work/rp-$2-$cpu.kld"
    done
done

"$X86" mkmodel --arch qwen3moe --preset tiny --seed 3 -q -o "$work/tiny-x86.gguf"
qemu-aarch64 -cpu max "$A64" mkmodel --arch qwen3moe --preset tiny --seed 3 -q \
    -o "$work/tiny-a64.gguf"
check "aarch64 mkmodel writes the x86 bytes" same_text "$work/tiny-x86.gguf" "$work/tiny-a64.gguf"

"$X86" bench --kernels --help >/dev/null 2>&1
line=$("$X86" bench --kernels --mb 8 -t 1 2>/dev/null | head -n 1)
check "bench --kernels names the x86 kernel set ($line)" \
    sh -c "[ '$line' = 'kernels: avx2' ] || [ '$line' = 'kernels: ref' ]"
finish
