#!/usr/bin/env bash
# bench/llama_isa_gap.sh FILE.gguf... - how far llama.cpp's AVX-512 build is
# from its AVX2 build, the one sluice reproduces on every CPU. For each
# file: llama.cpp's KL-divergence base from node-llama-cpp's AVX2 ("haswell")
# CPU backend and from its AVX-512 ("zen4") backend (bench/llama_ref.sh, the
# same libllama, LLAMA_CPU_BACKEND chosen), sluice's own base, whether
# sluice's equals the AVX2 one byte for byte, and the KLD of sluice's logits
# against the AVX-512 base (on a file where sluice equals the AVX2 base,
# that is the AVX2 build against the AVX-512 one). 128-token chunks of
# TEXT (default: the reference fixtures' text.txt); sluice runs with
# --llama-ref 2026-09, node-llama-cpp's revision.
set -u
cd "$(dirname "$0")/.." || exit 2
TEXT=${TEXT:-../shared/fixtures/reference/text.txt}
SLUICE=${SLUICE:-build/rel/sluice}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-isa-XXXXXX")
trap 'rm -rf "$work"' EXIT
printf '%-22s %-20s %s\n' file "sluice = AVX2 base" "sluice (AVX2) vs AVX-512: mean KLD, max KLD, same top"
for f in "$@"; do
    n=$(basename "$f" .gguf)
    bench/llama_ref.sh "$f" "$TEXT" "$work/h.kld" 128 >/dev/null 2>&1 || { echo "$n: llama.cpp failed"; continue; }
    libs=$(ls -d build/llama-ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64)
    LLAMA_CPU_BACKEND=$libs/libggml-cpu-zen4.so bench/llama_ref.sh "$f" "$TEXT" "$work/z.kld" 128 \
        >/dev/null 2>&1 || { echo "$n: llama.cpp (zen4) failed"; continue; }
    run=("$SLUICE" perplexity -m "$f" -f "$TEXT" -c 128 -b 128 -t 2 --llama-ref 2026-09)
    "${run[@]}" --kl-divergence-base "$work/s.kld" >/dev/null 2>&1
    same=$(cmp -s "$work/h.kld" "$work/s.kld" && echo yes || echo "no ($(cmp -l "$work/h.kld" "$work/s.kld" | wc -l) bytes)")
    k=$("${run[@]}" --kl-divergence-base "$work/z.kld" --kl-divergence 2>&1 |
        awk '/^Mean +KLD/ {m = $3} /^Maximum KLD/ {x = $3} /^Same top/ {t = $4}
             END {printf "%s, %s, %s %%", m, x, t}')
    printf '%-22s %-20s %s\n' "$n" "$same" "$k"
done
