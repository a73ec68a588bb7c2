#!/usr/bin/env bash
# bench/kld_llama.sh [TYPES...]: sluice against llama.cpp itself on every
# architecture and weight type: for each model (the reference fixtures'
# f32 files and generated models of the other architectures), each type T
# (the model requantised by tests/tools/retype_main.c), llama.cpp's own
# KL-divergence base of that T file (bench/llama_ref.sh), then
#   sluice perplexity -m T.gguf --kl-divergence-base T.kld --kl-divergence \
#       --llama-ref 2026-09
# (bench/llama_ref.sh runs node-llama-cpp 3.22.1's build, llama.cpp revision
# 2026-09: sluice follows that one's arithmetic; docs/ARCHITECTURE.md).
# Prints a markdown table: mean KLD and same top token per model and type.
# Text: the first 5000 bytes of the fixtures' text (about 20 chunks of 128).
set -eu
cd "$(dirname "$0")/.."
REF=${REF:-../shared/fixtures/reference}
[ -d "$REF" ] || REF=/work/shared/fixtures/reference
S=build/rel/sluice
TYPES=${*:-f32 f16 bf16 q8_0 q6_K q5_K q5_1 q5_0 q4_K q4_1 q4_0 iq4_xs iq4_nl q3_K q2_K}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kldllama-XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -Iinclude -Itests tests/tools/retype_main.c \
    tests/common/retype.c build/rel/libsluice.a -lpcre2-8 -lpthread -lm -o "$work/retype"
head -c 5000 "$REF/text.txt" >"$work/text.txt"
cp "$REF/dense1-f32.gguf" "$work/dense1.gguf"
cp "$REF/qwen35moe-f32.gguf" "$work/qwen35moe.gguf"
for a in qwen3moe qwen2moe olmoe mixtral qwen3 qwen2; do
    "$S" mkmodel --arch "$a" --preset tiny --seed 7 -q -o "$work/$a.gguf"
done
echo "| model | $(echo $TYPES | sed 's/ / | /g') |"
echo "|---$(for t in $TYPES; do printf '|---'; done)|"
for m in dense1 qwen3moe qwen2moe olmoe mixtral qwen3 qwen2 qwen35moe; do
    row="| $m |"
    for t in $TYPES; do
        f=$work/$m-$t.gguf
        if [ "$t" = f32 ]; then cp "$work/$m.gguf" "$f"
        elif ! "$work/retype" "$work/$m.gguf" "$f" "$t" >/dev/null 2>&1; then row="$row - |"; continue
        fi
        if ! bench/llama_ref.sh "$f" "$work/text.txt" "$work/base.kld" >/dev/null 2>&1; then
            row="$row llama.cpp failed |"; rm -f "$f"; continue
        fi
        out=$("$S" perplexity -m "$f" --kl-divergence-base "$work/base.kld" --kl-divergence \
            --llama-ref 2026-09 -t 2 2>&1) ||
            { row="$row sluice failed |"; rm -f "$f"; continue; }
        kld=$(echo "$out" | sed -n 's/^Mean    KLD: *\([0-9.e+-]*\).*/\1/p')
        top=$(echo "$out" | sed -n 's/^Same top p: *\([0-9.]*\).*/\1/p')
        row="$row $kld / $top % |"
        rm -f "$f"
    done
    echo "$row"
done
