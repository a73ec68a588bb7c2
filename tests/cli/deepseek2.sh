#!/usr/bin/env bash
# deepseek2 (MLA) and glm4moe end to end on generated models (issue 17):
# mkmodel writes both; greedy text streamed through a 3-expert cache equals
# the resident text; perplexity runs in batches; inspect names the layer
# kinds and the latent cache's bytes per token (2 x (64 + 16) x 3 layers).
set -u
. "$(dirname "$0")/lib/common.sh"
. tests/cli/lib/moe_arch.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-ds2-XXXXXX")
trap 'rm -rf "$work"' EXIT
for arch in deepseek2 glm4moe; do
    M=$work/$arch.gguf
    if ! "$SLUICE" mkmodel --arch $arch --preset tiny --type q8_0 --seed 5 -q -o "$M"; then
        bad "mkmodel $arch"
        continue
    fi
    moe_arch_checks "$arch" "$M"
done
check "deepseek2: inspect shows MLA layers and the latent cache" bash -c '
    out=$("$1" inspect --no-tensors "$2") &&
    echo "$out" | grep -q "mixers .*0-2 mla" && echo "$out" | grep -q "^  state *480 bytes per token"' \
    _ "$SLUICE" "$work/deepseek2.gguf"
check "mkmodel refuses a group count that does not divide the experts" bash -c '
    ! "$1" mkmodel --arch deepseek2 --preset tiny --experts 6 -q -o "$2" 2>/dev/null' \
    _ "$SLUICE" "$work/bad.gguf"
finish
