#!/usr/bin/env bash
# Regenerates the seeds of the model fuzzer in tests/fuzz/corpus_model: for
# each of the 8 architecture choices of fuzz_model.c (llama dense, llama
# Mixtral-style, qwen2, qwen3, qwen2moe, qwen3moe, olmoe, qwen35moe) 4
# inputs (qwen35moe, which has more to choose, NQ35) of 96 deterministic
# pseudo-random bytes whose first byte picks the architecture (the rest
# picks layers, widths, types, ... as fuzz_model.c reads them).
# Any byte string is a valid input; these only spread the start over the
# architectures and sizes. Commit the result.
set -eu
cd "$(dirname "$0")/../.."
out=tests/fuzz/corpus_model
rm -rf "$out"
mkdir -p "$out"
names=(llama mixtral qwen2 qwen3 qwen2moe qwen3moe olmoe qwen35moe)
NQ35=12
for arch in 0 1 2 3 4 5 6 7; do
    n=4
    [ "$arch" -eq 7 ] && n=$NQ35
    for ((v = 0; v < n; v++)); do
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
