#!/usr/bin/env bash
# The house's layering rules (docs/ARCHITECTURE.md, "Overview and data flow" and "Rules"), checked on
# the sources so that a change breaking one fails here instead of being
# found by the next reader:
#  - src/model (what a file says) includes nothing from the engine, the
#    expert streamer or a family's engine files; a family's bind/describe
#    file (src/families/*/family_*.c) is model code and follows that rule;
#  - sl_model holds no runtime state: src/model names no streamer, pool,
#    lock or routing knobs (they live in the engine's runtime,
#    engine/model_runtime.h);
#  - the streamer reads experts and reads ahead; the route trace, usage
#    history and knobs are the routing's (engine/model_runtime.h); the
#    MoE block (engine/moe.c) reaches it only through engine/expert_src.h;
#  - app/ reaches a model's runtime only through include/sluice.h: no
#    streamer, runtime, usage-history or route-trace header or call;
#  - the kernels (src/ops, src/quant) include nothing above them;
#  - the layer loop (engine/forward.c, forward_multi.c) includes no
#    family's header and calls no family's function;
#  - no platform conditionals (_WIN32, __ANDROID__, __linux__, __APPLE__)
#    outside the platform layer (src/util, src/io, src/compat);
#  - the server (app/server/) reaches the library through include/sluice.h
#    only: no header under src/, directly or through the app headers it
#    shares (gen.h, args.h), but the JSON library (util/json.h).
set -u
. "$(dirname "$0")/lib/common.sh"

# includes FILES... -> the quoted includes of the files, "file: dir/x.h"
includes() { grep -HoE '^#include "[^"]+"' "$@" 2>/dev/null | sed 's/#include "//; s/"$//'; }

# none_of NAME PATTERN FILES...: passes when no include of FILES matches
none_of() {
    local name=$1 pattern=$2 hits
    shift 2
    hits=$(includes "$@" | grep -E ":($pattern)" || true)
    if [ -z "$hits" ]; then ok "$name"; else bad "$name"; echo "$hits"; fi
}

model_files=(src/model/*.c src/model/*.h src/families/*/family_*.c)
check "there are model files to check" [ "${#model_files[@]}" -gt 10 ]
none_of "src/model and the family files include nothing from the engine or the streamer" \
    'engine/|experts/|io/io_internal|families/.*/(block|mix)' "${model_files[@]}"

# none_said NAME PATTERN FILES...: passes when no line of FILES matches
none_said() {
    local name=$1 pattern=$2 hits
    shift 2
    hits=$(grep -nE "$pattern" "$@" 2>/dev/null || true)
    if [ -z "$hits" ]; then ok "$name"; else bad "$name"; echo "$hits"; fi
}
runtime_words='pthread|sl_streamer|sl_pool|stream_mu|route_knobs'
none_said "sl_model holds no runtime state (src/model names no streamer, pool, lock, knobs)" \
    "$runtime_words" src/model/*.c src/model/*.h
app_files=$(find app -name '*.[ch]')
check "there are app files to check" [ -n "$app_files" ]
none_said "app/ reaches the runtime only through sluice.h" \
    'engine/model_runtime\.h|experts/(streamer|usage_history|route_trace)\.h|sl_streamer_|sl_usage_|sl_route_trace_|->rt->' \
    $app_files

none_said "the streamer holds no routing state (no route trace, no usage counting)" \
    'sl_route_trace|sl_usage_add|route_knobs' src/experts/streamer*.c src/experts/streamer*.h

none_said "the MoE block reaches the streamer only through its expert source" \
    'sl_streamer_' src/engine/moe.c

kernel_files=(src/ops/*.c src/ops/*.h src/quant/*.c src/quant/*.h)
none_of "the kernels include nothing above them" \
    'model/|engine/|experts/|families/|io/|chat/|tok/' "${kernel_files[@]}"

loop_files=(src/engine/forward.c src/engine/forward_multi.c)
none_of "the layer loop includes no family's header" 'families/' "${loop_files[@]}"
family_calls=$(grep -hoE '\bsl_(ds4|gdn|mla|gemma4|block_ds4|block_sandwich)[a-z_]*\(' \
    "${loop_files[@]}" || true)
if [ -z "$family_calls" ]; then ok "the layer loop calls no family's function"
else bad "the layer loop calls no family's function"; echo "$family_calls"; fi

engine_files=$(find src app -name '*.[ch]' -not -path 'src/util/*' -not -path 'src/io/*' \
    -not -path 'src/compat/*')
platform=$(grep -nE '^\s*#\s*(if|ifdef|ifndef|elif).*(_WIN32|__ANDROID__|__linux__|__APPLE__)' \
    $engine_files || true)
if [ -z "$platform" ]; then ok "no platform conditionals outside the platform layer"
else bad "no platform conditionals outside the platform layer"; echo "$platform"; fi

# src_deps FILES...: the headers under src/ that FILES include, directly or
# not, as the compiler finds them (one a line), but util/json.h; a file the
# compiler cannot read is named too (so that it cannot pass unseen)
src_deps() {
    local f
    for f in "$@"; do
        ${CC:-cc} -MM -MG -Isrc -Iinclude -Ibuild/gen \
            $(pkg-config --cflags jansson libmicrohttpd 2>/dev/null) "$f" ||
            echo "src/(the compiler failed on $f)"
    done | tr ' \\' '\n\n' | grep '^src/' | grep -vx 'src/util/json.h' | sort -u
}
server_files=(app/server/*.c)
check "there are server files to check" [ "${#server_files[@]}" -gt 15 ]
server_src=$(src_deps "${server_files[@]}")
if [ -z "$server_src" ]; then ok "app/server includes no header under src/ (but util/json.h)"
else bad "app/server includes no header under src/ (but util/json.h)"; echo "$server_src"; fi

# the checks can fail: a planted violation in a copy is found
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include "engine/session.h"\n' > "$tmp/family_x.c"
hits=$(includes "$tmp/family_x.c" | grep -E ':(engine/)' || true)
check "a planted engine include in a family file is caught" [ -n "$hits" ]
printf '    struct sl_streamer *streamer;\n' > "$tmp/model_x.h"
check "a planted streamer in a model header is caught" grep -qE "$runtime_words" "$tmp/model_x.h"
printf '#include "chat/answer_stream.h"\n' > "$tmp/y.c"
check "a planted src/ include in a server file is caught" [ -n "$(src_deps "$tmp/y.c")" ]
finish
