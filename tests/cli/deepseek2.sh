#!/usr/bin/env bash
# deepseek2 (MLA) and glm4moe end to end on generated models (issue 17):
# mkmodel writes both; greedy text streamed through a 3-expert cache equals
# the resident text; perplexity runs in batches; inspect names the layer
# kinds and the latent cache's bytes per token (2 x (64 + 16) x 3 layers).
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-ds2-XXXXXX")
trap 'rm -rf "$work"' EXIT
T=$work/text.txt
for i in $(seq 1 30); do echo "The keeper opened the sluice and the water rose in the lock."; done >"$T"
same_text() { [ -n "$1" ] && [ "$1" = "$2" ]; }
for arch in deepseek2 glm4moe; do
    M=$work/$arch.gguf
    if ! "$SLUICE" mkmodel --arch $arch --preset tiny --type q8_0 --seed 5 -q -o "$M"; then
        bad "mkmodel $arch"
        continue
    fi
    res=$("$SLUICE" run -m "$M" -p "Once upon a time" -n 24 --temp 0 -t 2 --no-stream 2>/dev/null)
    str=$("$SLUICE" run -m "$M" -p "Once upon a time" -n 24 --temp 0 -t 2 -b 3 --moe-stream \
          --cache-experts 3 2>/dev/null)
    check "$arch: streamed text equals resident text" same_text "$res" "$str"
    check "$arch: perplexity in batches of 7" bash -c '"$1" perplexity -m "$2" -f "$3" -c 64 -b 7 2>&1 |
        grep -Eq "^Final estimate: PPL = [0-9]+\.[0-9]+"' _ "$SLUICE" "$M" "$T"
done
check "deepseek2: inspect shows MLA layers and the latent cache" bash -c '
    out=$("$1" inspect --no-tensors "$2") &&
    echo "$out" | grep -q "mixers .*0-2 mla" && echo "$out" | grep -q "^  state *480 bytes per token"' \
    _ "$SLUICE" "$work/deepseek2.gguf"
check "mkmodel refuses a group count that does not divide the experts" bash -c '
    ! "$1" mkmodel --arch deepseek2 --preset tiny --experts 6 -q -o "$2" 2>/dev/null' \
    _ "$SLUICE" "$work/bad.gguf"
finish
