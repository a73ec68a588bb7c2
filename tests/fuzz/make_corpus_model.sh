#!/usr/bin/env bash
# Regenerates the seeds of the model fuzzer in tests/fuzz/corpus_model: for
# each of the 7 architecture choices of fuzz_model.c (llama dense, llama
# Mixtral-style, qwen2, qwen3, qwen2moe, qwen3moe, olmoe) 4 inputs of 96
# deterministic pseudo-random bytes whose first byte picks the architecture
# (the rest picks layers, widths, types, ... as fuzz_model.c reads them).
# Any byte string is a valid input; these only spread the start over the
# architectures and sizes. Commit the result.
set -eu
cd "$(dirname "$0")/../.."
out=tests/fuzz/corpus_model
rm -rf "$out"
mkdir -p "$out"
names=(llama mixtral qwen2 qwen3 qwen2moe qwen3moe olmoe)
for arch in 0 1 2 3 4 5 6; do
    for v in 0 1 2 3; do
        hex=$(LC_ALL=C awk -v a="$arch" -v seed=$((arch * 4 + v + 1)) 'BEGIN {
            x = seed * 2654435 % 4294967296
            printf "%02x", a
            for (i = 1; i < 96; i++) {
                x = (x * 69069 + 1) % 4294967296
                printf "%02x", int(x / 16777216)
            }
        }')
        printf "$(echo "$hex" | sed 's/../\\x&/g')" >"$out/${names[$arch]}-$v"
    done
done
echo "$(ls "$out" | wc -l) files, $(du -sb "$out" | cut -f1) bytes in $out"
