#!/usr/bin/env bash
# bench/llama_ref.sh MODEL.gguf TEXT OUT.kld [N_CTX]: llama.cpp's own
# KL-divergence base for MODEL (bench/llama_kld.c), to compare sluice with:
#   build/rel/sluice perplexity -m MODEL.gguf --kl-divergence-base OUT.kld --kl-divergence
# llama.cpp comes from the node-llama-cpp npm package (its prebuilt CPU
# libraries and the source bundle they were built from, for the headers),
# installed once into build/llama-ref; the AVX2 ("haswell") CPU backend is
# used, the path sluice follows. Needs npm, git and network on first use.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
ref=$root/build/llama-ref
NLC_VERSION=${NLC_VERSION:-3.22.1}
if [ ! -x "$ref/llama_kld" ]; then
    mkdir -p "$ref"
    if [ ! -d "$ref/node_modules/node-llama-cpp" ]; then
        (cd "$ref" && npm init -y >/dev/null &&
            npm install --no-audit --no-fund --ignore-scripts "node-llama-cpp@$NLC_VERSION" >/dev/null)
    fi
    [ -d "$ref/src" ] || git clone -q "$ref/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$ref/src"
    [ -f "$root/build/rel/libsluice.a" ] || make -C "$root" -j2 build/rel/libsluice.a >/dev/null
    libs=$(ls -d "$ref"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64)
    cc -O2 -I"$ref/src/include" -I"$ref/src/ggml/include" -I"$root/src" -I"$root/include" \
        "$root/bench/llama_kld.c" "$root/build/rel/libsluice.a" -L"$libs" \
        -l:$(basename "$(ls "$libs"/libllama.v*.so)") -l:$(basename "$(ls "$libs"/libggml.v*.so)") \
        -l:libggml-base.so -Wl,-rpath,"$libs" -lpcre2-8 -lpthread -lm \
        $(pkg-config --exists liburing && echo -luring) -o "$ref/llama_kld"
fi
libs=$(ls -d "$ref"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64)
LLAMA_CPU_BACKEND=${LLAMA_CPU_BACKEND:-$libs/libggml-cpu-haswell.so} \
    "$ref/llama_kld" "${1:?usage: bench/llama_ref.sh MODEL.gguf TEXT OUT.kld [N_CTX]}" \
    "${2:?TEXT}" "${3:?OUT.kld}" "${4:-128}" 2
