#!/usr/bin/env bash
# bench/bitcompare.sh OLD_TREE [NEW_TREE]: builds bench/logits_digest.c against
# the release library of two checkouts (each must have run `make`) and
# compares every token's logits, bit for bit, on generated models of every
# architecture and several types, in batches of 1, 7 and 40, resident and
# (MoE) streamed with a small cache; the 2026 families at their tiny
# presets, in batches of 1 and 7. Then, in the new tree alone, the same
# with a 20-token prompt given (DIGEST_PROMPT: llama.cpp's kernel per row,
# the last 20 rows generated): batches of 1, 7 and 40 must agree. Prints
# one line per model and exits 1 on any difference.
set -u
OLD=${1:?usage: bench/bitcompare.sh OLD_TREE [NEW_TREE]}
NEW=${2:-$(cd "$(dirname "$0")/.." && pwd)}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bitcmp-XXXXXX")
trap 'rm -rf "$work"' EXIT
LIBS="-lpcre2-8 -lpthread -lm $(pkg-config --exists liburing && echo -luring)"
for t in OLD NEW; do
    dir=${!t}
    cc -O2 -I"$dir/include" "$NEW/bench/logits_digest.c" "$dir/build/rel/libsluice.a" $LIBS \
        -o "$work/digest-$t" || exit 2
done
S=$NEW/build/rel/sluice
status=0
# the new tree, a 20-token prompt given: every batch size the same bits
prompt_rule() {
    local f=$1 first="" d r=same
    shift
    for b in "$@"; do
        d=$(DIGEST_PROMPT=20 "$work/digest-NEW" "$f" "$b" | tail -1)
        [ -z "$first" ] && first=$d
        [ "$d" = "$first" ] || { r=DIFFERENT; status=1; }
    done
    echo "$(basename "$f" .gguf) prompt 20, batches $*: $r ($first)"
}
for arch in qwen3moe qwen2moe mixtral llama olmoe qwen3 qwen2; do
    for ty in f32 q8_0 q4_k_m; do
        f=$work/$arch-$ty.gguf
        "$S" mkmodel --arch "$arch" --preset tiny-k --type "$ty" --seed 3 -q -o "$f" || exit 2
        for b in 1 7 40; do
            a=$("$work/digest-OLD" "$f" "$b" | tail -1)
            n=$("$work/digest-NEW" "$f" "$b" | tail -1)
            if [ "$a" = "$n" ]; then r=same; else r=DIFFERENT; status=1; fi
            echo "$arch $ty batch $b: $r ($n)"
        done
        prompt_rule "$f" 1 7 40
        case $arch in qwen3moe|qwen2moe|mixtral|olmoe)
            a=$("$work/digest-OLD" "$f" 7 2 | tail -1)
            n=$("$work/digest-NEW" "$f" 7 2 5 | tail -1)
            if [ "$a" = "$n" ]; then r=same; else r=DIFFERENT; status=1; fi
            echo "$arch $ty streamed (5 cache slots) vs old resident: $r ($n)";;
        esac
    done
done
# the 2026 families (their tiny presets), resident and streamed
for arch in qwen35moe gpt-oss gemma4 deepseek2 glm4moe glm-dsa deepseek4; do
    for ty in f32 q8_0; do
        f=$work/$arch-$ty.gguf
        "$S" mkmodel --arch "$arch" --preset tiny --type "$ty" --seed 3 -q -o "$f" || exit 2
        for b in 1 7; do
            a=$("$work/digest-OLD" "$f" "$b" | tail -1)
            n=$("$work/digest-NEW" "$f" "$b" | tail -1)
            if [ "$a" = "$n" ]; then r=same; else r=DIFFERENT; status=1; fi
            echo "$arch $ty batch $b: $r ($n)"
        done
        prompt_rule "$f" 1 7 40
        a=$("$work/digest-OLD" "$f" 7 2 | tail -1)
        n=$("$work/digest-NEW" "$f" 7 2 5 | tail -1)
        if [ "$a" = "$n" ]; then r=same; else r=DIFFERENT; status=1; fi
        echo "$arch $ty streamed (5 cache slots) vs old resident: $r ($n)"
    done
done
exit $status
