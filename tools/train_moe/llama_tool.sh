#!/usr/bin/env bash
# tools/train_moe/llama_tool.sh greedy MODEL PROMPT N | quantize IN OUT TYPE:
# llama_tool.c built against node-llama-cpp's llama.cpp (installed into
# build/llama-ref by bench/llama_ref.sh, which this runs first if needed),
# on its AVX2 ("haswell") CPU backend as bench/llama_ref.sh uses.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
ref=$root/build/llama-ref
[ -d "$ref/src" ] || "$root/bench/llama_ref.sh" >/dev/null 2>&1 || true
libs=$(ls -d "$ref"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64)
if [ ! -x "$ref/llama_tool" ] || [ "$root/tools/train_moe/llama_tool.c" -nt "$ref/llama_tool" ]; then
    cc -O2 -I"$ref/src/include" -I"$ref/src/ggml/include" "$root/tools/train_moe/llama_tool.c" \
        -L"$libs" -l:$(basename "$(ls "$libs"/libllama.v*.so)") \
        -l:$(basename "$(ls "$libs"/libggml.v*.so)") -l:libggml-base.so -Wl,-rpath,"$libs" \
        -o "$ref/llama_tool"
fi
LLAMA_CPU_BACKEND=${LLAMA_CPU_BACKEND:-$libs/libggml-cpu-haswell.so} "$ref/llama_tool" "$@"
