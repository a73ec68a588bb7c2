#!/usr/bin/env bash
# KV cache types and the context the memory budget holds (issue 19):
# -ctk / -ctv q8_0 and q4_0 give the same greedy text for every thread
# count and batch size; bad types and head sizes a quantised cache cannot
# hold are refused with a message; a -c beyond the budget is refused up
# front naming the largest -c that fits, which then runs (one more token
# does not); `bench -d` measures at a depth and names its tests so.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kv-XXXXXX")
trap 'rm -rf "$work"' EXIT

M=$work/k.gguf      # head size 64
T=$work/tiny.gguf   # head size 16
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny-k --type q8_0 --seed 5 -q -o "$M" ||
    ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 5 -q -o "$T"; then
    bad "mkmodel"
    finish
    exit 1
fi
P="The miller's daughter kept a notebook of the river and its moods."
for i in 1 2 3 4 5 6; do echo "$P Every morning the keeper read the level of the water."; done >"$work/text"

"$SLUICE" run --help >"$work/help" 2>&1
check "--help lists -ctk and -ctv" grep -q -- "-ctk, --cache-type-k" "$work/help"
"$SLUICE" run -m "$M" -p hi -n 1 -v -ctk q8_0 >/dev/null 2>"$work/v.err"
check "-v names the cache types in effect (q8_0 K, f16 V)" grep -q "cache attention K q8_0, V f16," "$work/v.err"

for t in q8_0 q4_0; do
    "$SLUICE" run -m "$M" -p "$P" -n 12 --temp 0 -ctk $t -ctv $t -t 1 >"$work/$t.1" 2>/dev/null
    check "$t cache runs" [ $? -eq 0 ]
    "$SLUICE" run -m "$M" -p "$P" -n 12 --temp 0 -ctk $t -ctv $t -t 2 -b 3 >"$work/$t.2" 2>/dev/null
    check "$t: same text with 2 threads and batches of 3" same_text "$work/$t.1" "$work/$t.2"
done
"$SLUICE" run -m "$M" -p "$P" -n 12 --temp 0 --cache-type-k q8_0 -t 1 >"$work/mixed" 2>/dev/null
check "--cache-type-k alone (V stays f16) runs" [ $? -eq 0 ]

"$SLUICE" run -m "$M" -p hi -n 1 -ctv q5_1 >/dev/null 2>"$work/bad.err"
check "an unknown cache type is a usage error" [ $? -eq 2 ]
check "... naming the types" grep -q "expects f16, f32, q8_0 or q4_0" "$work/bad.err"
"$SLUICE" run -m "$T" -p hi -n 1 -ctk q8_0 >/dev/null 2>"$work/hd.err"
check "head size 16 with a q8_0 cache is refused" [ $? -ne 0 ]
check "... saying why" grep -q "blocks of 32 values per head" "$work/hd.err"

# 1 KiB of f16 K/V per token: a million tokens cannot fit 200 MiB
"$SLUICE" run -m "$M" -p hi -n 1 -c 1000000 --mem-budget 200 >/dev/null 2>"$work/ctx.err"
check "a context beyond the budget is refused" [ $? -ne 0 ]
check "... with the bytes per token" grep -q "(1024 bytes per token: K f16, V f16)" "$work/ctx.err"
fits=$(sed -n 's/.*the largest -c that fits is \([0-9]*\).*/\1/p' "$work/ctx.err")
check "... and the largest -c that fits" [ -n "$fits" ]
if [ -n "$fits" ]; then
    "$SLUICE" run -m "$M" -p hi -n 1 -c "$fits" --mem-budget 200 >/dev/null 2>&1
    check "that -c runs" [ $? -eq 0 ]
    "$SLUICE" run -m "$M" -p hi -n 1 -c $((fits + 1)) --mem-budget 200 >/dev/null 2>&1
    check "one more token is refused" [ $? -ne 0 ]
    "$SLUICE" run -m "$M" -p hi -n 1 -c $((fits + 1)) --mem-budget 200 -ctk q8_0 -ctv q8_0 \
        >/dev/null 2>&1
    check "... and fits with a q8_0 cache" [ $? -eq 0 ]
fi

# 2 layers x 2 KV heads x 64 values, K and V: 1024 bytes in f16, (64/32) x 34 x 8 in q8_0,
# (64/32) x 18 x 8 in q4_0
"$SLUICE" inspect "$M" >"$work/inspect" 2>&1
check "inspect shows the f16 state per token" grep -q "1024 bytes per token of context" "$work/inspect"
check "... and with q8_0 and q4_0 caches" grep -q "544 with -ctk/-ctv q8_0, 288 with q4_0" "$work/inspect"
"$SLUICE" inspect "$M" --json >"$work/inspect.json" 2>&1
check "inspect --json has the q8_0 figure" grep -q '"state_bytes_per_token_q8_0": *544' "$work/inspect.json"

"$SLUICE" bench -m "$M" -p 16 -n 4 -r 1 -d 24 -t 1 >"$work/bench" 2>&1
check "bench -d runs" [ $? -eq 0 ]
check "bench -d names its tests at the depth" grep -q "pp16 @ d24 .*tg4 @ d24\|tg4 @ d24" "$work/bench"
check "... both of them" grep -q "pp16 @ d24" "$work/bench"
"$SLUICE" bench -m "$M" -p 0 -n 4 -r 1 --n-depth 24 -t 1 --json >"$work/bench.json" 2>&1
check "bench --json reports n_depth" grep -q '"n_depth":24' "$work/bench.json"
# a list of depths: one row per depth, in the list's order, the runs alternated
"$SLUICE" bench -m "$M" -p 0 -n 4 -r 2 -d 0,24,8 -t 1 --json >"$work/bench3.json" 2>&1
check "bench -d 0,24,8 runs" [ $? -eq 0 ]
check "... one row per depth, in order" [ "$(sed -n 's/.*"n_depth":\([0-9]*\).*/\1/p' "$work/bench3.json" | tr '\n' ' ')" = "0 24 8 " ]
"$SLUICE" bench -m "$M" -p 4 -n 0 -r 1 -d 8,x -t 1 >"$work/bad" 2>&1
check "bench -d with a bad entry is refused" [ $? -eq 2 ]
check "... naming it" grep -q "got 'x'" "$work/bad"
# One setting for every layer kind (as llama.cpp's -ctk / -ctv): MLA's latent
# (deepseek2) lives in the K cache, so -ctk f32 caches it in f32 and gives
# the scores --kv-type f32 (-ctk f32 -ctv f32) gives, other than f16's; a
# quantised K it has no kernels for is refused, saying so.
D=$work/ds2.gguf
if "$SLUICE" mkmodel --arch deepseek2 --preset tiny --seed 3 -q -o "$D"; then
    for k in "-ctk f32" "--kv-type f32" "-ctk f16"; do
        "$SLUICE" perplexity -m "$D" -f "$work/text" -c 16 --chunks 2 -t 1 \
            --kl-divergence-base "$work/ds2 $k.kld" $k >/dev/null 2>"$work/ds2.err"
        check "deepseek2 perplexity with $k runs" [ $? -eq 0 ]
    done
    check "deepseek2: -ctk f32 scores as --kv-type f32" cmp -s "$work/ds2 -ctk f32.kld" "$work/ds2 --kv-type f32.kld"
    if cmp -s "$work/ds2 -ctk f32.kld" "$work/ds2 -ctk f16.kld"; then bad "... other than f16"
    else ok "... other than f16"; fi
    "$SLUICE" run -m "$D" -p hi -n 1 -v -ctk f32 >/dev/null 2>"$work/dv.err"
    check "-v names what MLA caches (K f32, no V)" grep -q "cache mla K f32," "$work/dv.err"
    "$SLUICE" run -m "$D" -p hi -n 1 -ctk q8_0 >/dev/null 2>"$work/dq.err"
    check "deepseek2 with a q8_0 K cache is refused" [ $? -ne 0 ]
    check "... saying why" grep -q "a q8_0 K cache: layer 0 (mla) keeps the latent" "$work/dq.err"
    "$SLUICE" run --help >"$work/help" 2>&1
    check "--help gives --kv-type as -ctk T -ctv T" grep -q -- "--kv-type T        the same as -ctk T -ctv T" "$work/help"
else
    bad "mkmodel deepseek2"
fi
finish
