#!/usr/bin/env bash
# deepseek4 (DeepSeek-V4) end to end on a generated model (issue 17):
# mkmodel writes it; greedy text streamed through a 3-expert cache equals
# the resident text; perplexity runs in batches; inspect names each layer's
# compression ratio and the state's bytes (per token: the compressed rows,
# 2 x (128 + 64) / 4 x 2 ratio-4 layers + 2 x 128 / 128 for the ratio-128
# one; per sequence: the compressor state and the window rings).
set -u
. "$(dirname "$0")/lib/common.sh"
. tests/cli/lib/moe_arch.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-ds4-XXXXXX")
trap 'rm -rf "$work"' EXIT
M=$work/ds4.gguf
if "$SLUICE" mkmodel --arch deepseek4 --preset tiny --type q8_0 --seed 5 -q -o "$M"; then
    moe_arch_checks deepseek4 "$M"
    check "deepseek4: inspect shows the ratios and the state" bash -c '
        out=$("$1" inspect --no-tensors "$2") &&
        echo "$out" | grep -q "mixers .*0 ds4-window, 1 ds4-ratio4, 2 ds4-ratio128, 3 ds4-ratio4" &&
        echo "$out" | grep -q "^  state *194 bytes per token" &&
        echo "$out" | grep -q "196608 bytes per sequence"' _ "$SLUICE" "$M"
else
    bad "mkmodel deepseek4"
fi
check "mkmodel refuses deepseek4 with fewer experts than top-k" bash -c '
    if out=$("$1" mkmodel --arch deepseek4 --preset tiny --experts 1 -q -o "$2" 2>&1); then
        exit 1
    fi
    echo "$out" | grep -q "out of range"' \
    _ "$SLUICE" "$work/bad.gguf"
finish
