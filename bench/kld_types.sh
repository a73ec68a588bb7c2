#!/usr/bin/env bash
# KL-divergence of every weight type sluice can write, against llama.cpp's
# own output on the f32 file: each matrix of a reference model requantised
# by sluice's quantisers (tests/tools/retype_main.c), then
#   sluice perplexity -m T.gguf --kl-divergence-base F32.kld --kl-divergence
# Usage: bench/kld_types.sh [REFERENCE_DIR] (default ../shared/fixtures/reference)
# Needs build/rel/sluice (make). Prints a markdown table.
set -eu
cd "$(dirname "$0")/.."
REF=${1:-../shared/fixtures/reference}
S=build/rel/sluice
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kldtypes-XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -Iinclude -Itests tests/tools/retype_main.c \
    tests/common/retype.c build/rel/libsluice.a -lpcre2-8 -lpthread -lm -o "$work/retype"
echo "| type | mean KLD vs llama.cpp f32 | same top token |"
echo "|---|---|---|"
for t in f32 f16 bf16 q8_0 q6_K q5_K q5_1 q5_0 q4_K q4_1 q4_0 iq4_xs iq4_nl q3_K q2_K; do
    if [ "$t" = f32 ]; then cp "$REF/dense1-f32.gguf" "$work/m.gguf"
    elif ! "$work/retype" "$REF/dense1-f32.gguf" "$work/m.gguf" "$t" 2>/dev/null; then
        echo "| $t | (no quantiser) | |"; continue
    fi
    out=$("$S" perplexity -m "$work/m.gguf" --kl-divergence-base "$REF/dense1-f32.kld" \
          --kl-divergence -t 2 2>&1) || { echo "| $t | FAILED: $(echo "$out" | tail -1) | |"; continue; }
    kld=$(echo "$out" | sed -n 's/^Mean    KLD: *\([0-9.e+-]*\).*/\1/p')
    top=$(echo "$out" | sed -n 's/^Same top p: *\([0-9.]*\).*/\1 %/p')
    echo "| $t | $kld | $top |"
done
