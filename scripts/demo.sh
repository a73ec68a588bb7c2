#!/usr/bin/env bash
# The demo: writes a small generated MoE model (if absent) and runs a short
# generation with an expert cache smaller than the model, so the streaming
# mechanism is visible, ending with the stats summary.
#   usage: scripts/demo.sh SLUICE_BINARY MODEL_PATH
set -eu
sluice=${1:-build/rel/sluice}
model=${2:-models/demo-qwen3moe.gguf}

if [ ! -f "$model" ]; then
    mkdir -p "$(dirname "$model")"
    echo "== writing the demo model $model (qwen3moe, preset small, q4_k_m)"
    "$sluice" mkmodel --arch qwen3moe --preset small --type q4_k_m --seed 1 -o "$model"
fi

echo
echo "== the model"
"$sluice" inspect "$model" --no-tensors | tail -n 12

echo
echo "== generating with routed experts streamed from the file through a 96-expert cache"
echo "   (the model has 6 layers x 64 experts = 384; one token uses 6 x 8 = 48)"
echo "   The weights are random, so the text is too: the point is the mechanism."
"$sluice" run -m "$model" -p "The river carries" -n 48 --temp 1.0 --seed 7 \
    --moe-stream --cache-experts 96 --stats
