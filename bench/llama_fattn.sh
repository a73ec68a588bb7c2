#!/usr/bin/env bash
# bench/llama_fattn.sh [N_KV [N_TOK]] (default 256 64): llama.cpp's flash-attention op against
# sluice's attention over the same cache bytes (bench/llama_fattn.c), for
# every pair of cache types, printing how many outputs differ per pair.
# Needs llama.cpp's libraries installed by bench/llama_ref.sh (run it once).
# With N_TOK >= 64 an f16 or f32 cache of one type compares the tiled
# kernels (llama.cpp's choice from 64 tokens on); with fewer, llama.cpp
# takes its one-chunk loop there and the bits part by design (sluice's
# decode gives the bits of its batched prompt instead).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
ref=$root/build/llama-ref
libs=$(ls -d "$ref"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64 2>/dev/null) || {
    echo "llama_fattn.sh: run bench/llama_ref.sh once first (it installs llama.cpp)" >&2
    exit 2
}
[ -d "$ref/src" ] || git clone -q "$ref/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$ref/src"
[ -f "$root/build/rel/libsluice.a" ] || make -C "$root" -j2 build/rel/libsluice.a >/dev/null
cc -O2 -std=gnu11 -Wno-deprecated-declarations -I"$ref/src/include" -I"$ref/src/ggml/include" \
    -I"$root/src" -I"$root/include" "$root/bench/llama_fattn.c" "$root/build/rel/libsluice.a" \
    -L"$libs" -l:"$(basename "$(ls "$libs"/libggml.v*.so)")" -l:libggml-base.so -Wl,-rpath,"$libs" \
    -ldl -lpcre2-8 -ljansson -lpthread -lm $(pkg-config --exists liburing && echo -luring) \
    -o "$ref/llama_fattn" || exit 2
status=0
for k in f16 f32 q8_0 q4_0; do
    for v in f16 f32 q8_0 q4_0; do
        n=$(LLAMA_CPU_BACKEND=$libs/libggml-cpu-haswell.so "$ref/llama_fattn" "$k" "$v" "${1:-256}" \
            "${2:-64}" 2>/dev/null | awk '/outputs differ/ {s += $3; t += $5} END {print s " of " t}')
        echo "K $k V $v: $n outputs differ"
        case $n in 0\ of*) ;; *) status=1 ;; esac
    done
done
exit $status
