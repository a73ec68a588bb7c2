#!/usr/bin/env bash
# Weights damaged on disk (issue 10, D11): an infinity or NaN in a matrix
# makes the hidden state or the logits non-finite. run, perplexity and the
# KL-divergence pass stop with an error naming the position and the layer
# ("the weights may be damaged") instead of sampling from garbage or
# printing a PPL of nan with exit 0.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-damaged-XXXXXX")
trap 'rm -rf "$work"' EXIT

GOOD=$work/good.gguf
if ! "$SLUICE" mkmodel --arch llama --preset tiny --seed 3 -o "$GOOD" >/dev/null 2>&1; then
    bad "mkmodel"
    finish
    exit 1
fi
# poison FILE TENSOR BYTES: overwrites the tensor's first value (its offset
# from inspect's table, which is absolute in the file) with the 4 bytes given
poison() {
    local off
    off=$("$SLUICE" inspect "$1" | awk -v t="$2" '$2 == t { print $(NF - 1) }')
    [ -n "$off" ] || return 1
    printf "$3" | dd of="$1" bs=1 seek="$off" conv=notrunc status=none
}
INF='\x00\x00\x80\x7f'
NAN='\x00\x00\xc0\x7f'
cp "$GOOD" "$work/ffn.gguf" && poison "$work/ffn.gguf" blk.0.ffn_down.weight "$INF"
cp "$GOOD" "$work/attn.gguf" && poison "$work/attn.gguf" blk.1.attn_q.weight "$NAN"
cp "$GOOD" "$work/head.gguf" && poison "$work/head.gguf" output.weight "$INF"
T=$work/text.txt
for i in $(seq 1 40); do echo "The keeper opened the sluice and the water rose in the lock."; done >"$T"

expect_damage() { # NAME WANT CMD...: CMD exits 1 and stderr says WANT
    local name=$1 want=$2
    shift 2
    local err rc
    err=$("$@" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" -eq 1 ] && echo "$err" | grep -q "$want" &&
        echo "$err" | grep -q "the weights may be damaged"; then
        ok "$name"
    else
        bad "$name (exit $rc: $err)"
    fi
}
expect_damage "run: infinity in layer 0's FFN" "position 0 is not finite.*after layer 0" \
    "$SLUICE" run -m "$work/ffn.gguf" -p "Hello" -n 4 --temp 0
expect_damage "run: NaN in layer 1's attention" "after layer 1" \
    "$SLUICE" run -m "$work/attn.gguf" -p "Hello" -n 4 --temp 0
expect_damage "run: infinity in the output head" "logits of the token at position" \
    "$SLUICE" run -m "$work/head.gguf" -p "Hello" -n 4 --temp 0
expect_damage "perplexity: infinity in layer 0's FFN" "after layer 0" \
    "$SLUICE" perplexity -m "$work/ffn.gguf" -f "$T" -c 64
expect_damage "perplexity writing a KLD base" "logits" \
    "$SLUICE" perplexity -m "$work/head.gguf" -f "$T" -c 64 --kl-divergence-base "$work/b.kld"
check "the undamaged model still runs" "$SLUICE" run -m "$GOOD" -p "Hello" -n 4 --temp 0 -t 2 \
    >/dev/null 2>&1
finish
