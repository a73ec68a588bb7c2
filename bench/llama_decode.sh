#!/usr/bin/env bash
# bench/llama_decode.sh MODEL TEXT N_PROMPT N_GEN [THREADS]: llama.cpp's decode
# against sluice's (bench/llama_decode.c): bit-identical teacher-forced steps
# and where greedy texts part. Needs llama.cpp installed by bench/llama_ref.sh
# (run it once); links build/rel/libsluice.a (SLUICE_LIB overrides).
# sluice follows the rule of node-llama-cpp's build, the one compared with
# (--llama-ref 2026-09); LLAMA_REF=2026-08 for sluice's default instead.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
ref=$root/build/llama-ref
lib=${SLUICE_LIB:-$root/build/rel/libsluice.a}
libs=$(ls -d "$ref"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64 2>/dev/null) || {
    echo "llama_decode.sh: run bench/llama_ref.sh once first (it installs llama.cpp)" >&2
    exit 2
}
[ -f "$lib" ] || make -C "$root" -j2 build/rel/libsluice.a >/dev/null
out=$(mktemp "${TMPDIR:-/tmp}/llama_decode.XXXXXX")
trap 'rm -f "$out"' EXIT
cc -O2 ${CFLAGS_EXTRA:-} -I"$ref/src/include" -I"$ref/src/ggml/include" -I"$root/include" \
    "$root/bench/llama_decode.c" "$lib" -L"$libs" \
    -l:$(basename "$(ls "$libs"/libllama.v*.so)") -l:$(basename "$(ls "$libs"/libggml.v*.so)") \
    -l:libggml-base.so -Wl,-rpath,"$libs" -lpcre2-8 -ljansson -lpthread -lm \
    $(pkg-config --exists liburing && echo -luring) -o "$out"
LLAMA_CPU_BACKEND=${LLAMA_CPU_BACKEND:-$libs/libggml-cpu-haswell.so} "$out" "$@"
