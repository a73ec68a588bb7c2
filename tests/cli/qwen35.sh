#!/usr/bin/env bash
# qwen35moe end to end on a generated model (issue 12): a chat of two turns
# keeps the recurrent state and the K/V of the first (turn 2 evaluates only
# its own tokens); greedy text streamed through a 3-expert cache equals the
# resident text; perplexity runs in batches; inspect names the layer kinds.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-q35-XXXXXX")
trap 'rm -rf "$work"' EXIT
M=$work/q35.gguf
if ! "$SLUICE" mkmodel --arch qwen35moe --preset tiny --seed 5 -q -o "$M"; then
    bad "mkmodel qwen35moe"
    finish
    exit 1
fi

log=$(printf 'Hello there\nAnd again\n' | "$SLUICE" chat -m "$M" -n 8 --temp 0 -v 2>&1 >/dev/null)
t1=$(echo "$log" | sed -n 's/^turn 1: answered .*, \([0-9]*\) in the context$/\1/p')
t2=$(echo "$log" | sed -n 's/^turn 2: evaluated [0-9]* new tokens, \([0-9]*\) cached before$/\1/p')
echo "   context after turn 1: $t1; cached before turn 2: $t2"
same_nonzero() { [ -n "$1" ] && [ "$1" = "$2" ] && [ "$1" -gt 0 ]; }
check "chat: turn 2 reuses turn 1's state" same_nonzero "$t1" "$t2"

res=$("$SLUICE" run -m "$M" -p "Once upon a time" -n 24 --temp 0 -t 2 --no-stream 2>/dev/null)
str=$("$SLUICE" run -m "$M" -p "Once upon a time" -n 24 --temp 0 -t 2 -b 3 --moe-stream \
      --cache-experts 3 2>/dev/null)
same_text() { [ -n "$1" ] && [ "$1" = "$2" ]; }
check "run: streamed text equals resident text" same_text "$res" "$str"

T=$work/text.txt
for i in $(seq 1 30); do echo "The keeper opened the sluice and the water rose in the lock."; done >"$T"
check "perplexity in batches of 7" bash -c '"$1" perplexity -m "$2" -f "$3" -c 64 -b 7 2>&1 |
    grep -Eq "^Final estimate: PPL = [0-9]+\.[0-9]+"' _ "$SLUICE" "$M" "$T"
check "inspect names both layer kinds" bash -c '"$1" inspect --no-tensors "$2" |
    grep -q "mixers .*gated DeltaNet, 1 attention"' _ "$SLUICE" "$M"
finish
