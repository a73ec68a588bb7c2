#!/usr/bin/env bash
# tools/train_moe/make_files.sh CKPT DATA_DIR OUT_DIR: the trained student as
# the files in tests/data/trained: the f32 GGUF (export_gguf.py), llama.cpp's
# own Q8_0 and Q4_K_M quantisations of it (llama_tool.sh quantize), the
# held-out text (decode.py: teacher samples never trained on), llama.cpp's
# KL-divergence base of each file on that text (bench/llama_ref.sh, chunks of
# 128 tokens) and llama.cpp's greedy continuation of the pinned prompt.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ckpt=${1:?usage: make_files.sh CKPT DATA_DIR OUT_DIR}
data=${2:?DATA_DIR}
out=${3:?OUT_DIR}
py=${PYTHON:-/usr/bin/python3}
mkdir -p "$out"
n=glm4moe-stories
$py "$here/export_gguf.py" --ckpt "$ckpt" --out "$out/$n-f32.gguf"
"$here/llama_tool.sh" quantize "$out/$n-f32.gguf" "$out/$n-q8_0.gguf" q8_0
"$here/llama_tool.sh" quantize "$out/$n-f32.gguf" "$out/$n-q4_k_m.gguf" q4_k_m
$py "$here/decode.py" "$data/heldout.u16" 506 512 > "$out/text.txt"
for t in f32 q8_0 q4_k_m; do
    "$root/bench/llama_ref.sh" "$out/$n-$t.gguf" "$out/text.txt" "$out/$n-$t.kld" 128
    "$here/llama_tool.sh" greedy "$out/$n-$t.gguf" "Once upon a time" 64 > "$out/$n-$t.greedy.txt"
done
