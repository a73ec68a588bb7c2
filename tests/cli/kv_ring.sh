#!/usr/bin/env bash
# Sliding-window rings (issues 15, 18, 19) from the command line: --help
# lists --swa-full; on the gpt-oss fixture (window 8 on half the layers)
# and a generated gemma4 (window 4), the greedy text with the ring (and
# micro-batches of 1 and 3) is the same as with --swa-full; --stats shows
# the planned KV cache smaller with the ring (gpt-oss fixture: 4 layers x
# 2 KV heads x 32 values, K and V in f16 = 1 KiB a position per layer; at
# -c 4096 every position is 4.0 MiB, the ring of 8 + 511 positions kept
# twice on the 2 sliding layers makes it 2.5 MiB); a prompt cache file
# written with the ring is taken back, with and without --swa-full.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kvring-XXXXXX")
trap 'rm -rf "$work"' EXIT

"$SLUICE" run --help >"$work/help" 2>&1
check "--help lists --swa-full" grep -q -- "--swa-full" "$work/help"

G=../shared/fixtures/reference/gpt-oss-MXFP4_MOE.gguf
[ -r "$G" ] || G=/work/shared/fixtures/reference/gpt-oss-MXFP4_MOE.gguf
M=$work/g4.gguf
"$SLUICE" mkmodel --arch gemma4 --preset tiny --type q8_0 --seed 9 -q -o "$M"
check "mkmodel gemma4" [ $? -eq 0 ]
P="The miller's daughter kept a notebook of the river and its moods, and of the mill."
for f in "$G" "$M"; do
    [ -r "$f" ] || { echo "   (skipped: no $f)"; continue; }
    name=$(basename "$f")
    "$SLUICE" run -m "$f" -p "$P" -n 24 --temp 0 --ignore-eos -c 256 --swa-full >"$work/full" 2>/dev/null
    check "$name: --swa-full runs" [ $? -eq 0 ]
    for b in 1 3; do
        "$SLUICE" run -m "$f" -p "$P" -n 24 --temp 0 --ignore-eos -c 256 -b $b >"$work/ring" 2>/dev/null
        check "$name: the ring (batches of $b) gives the --swa-full text" same_text "$work/full" "$work/ring"
    done
done
if [ -r "$G" ]; then
    "$SLUICE" run -m "$G" -p hi -n 1 -c 4096 --stats >/dev/null 2>"$work/ring.err"
    "$SLUICE" run -m "$G" -p hi -n 1 -c 4096 --stats --swa-full >/dev/null 2>"$work/full.err"
    check "--stats: the ring's KV cache" grep -q "kv cache  *2.5 MiB for a context of 4096 (sliding-window layers: a ring" "$work/ring.err"
    check "--stats: every position with --swa-full" grep -q "kv cache  *4.0 MiB for a context of 4096 (sliding-window layers: every position" "$work/full.err"
    # a prompt cache written with the ring (micro-batches of 4: a ring of 11)
    C=$work/prompt.state
    "$SLUICE" run -m "$G" -p "$P" -n 8 --temp 0 --ignore-eos -c 256 -b 4 --prompt-cache "$C" >"$work/pc1" 2>/dev/null
    check "a prompt cache is written with the ring" [ -s "$C" ]
    for x in "" "--swa-full"; do
        # shellcheck disable=SC2086
        "$SLUICE" run -m "$G" -p "$P" -n 8 --temp 0 --ignore-eos -c 256 -b 4 --prompt-cache "$C" $x >"$work/pc2" 2>"$work/pc2.err"
        check "... and taken back ${x:-with the ring}: the same text" same_text "$work/pc1" "$work/pc2"
        check "... without a warning" bash -c '! grep -q warning "$1"' _ "$work/pc2.err"
        # all but the last, which is evaluated again (poisoned rows would show: issue 29 N5)
        check "... all of its tokens but the last" bash -c 'r=$(sed -nE "s/^prompt cache: ([0-9]+) of ([0-9]+) .*/\1 \2/p" "$1"); [ -n "$r" ] && [ $((${r#* } - ${r% *})) -eq 1 ]' _ "$work/pc2.err"
    done
    # a prompt that leaves the saved one early: the ring cannot go back that
    # far, so the prompt is evaluated again from the start, giving the text
    # of a run without the cache
    Q="The miller's daughter sang of other things entirely, far from any river or mill."
    "$SLUICE" run -m "$G" -p "$Q" -n 8 --temp 0 --ignore-eos -c 256 -b 4 >"$work/q1" 2>/dev/null
    "$SLUICE" run -m "$G" -p "$Q" -n 8 --temp 0 --ignore-eos -c 256 -b 4 --prompt-cache "$C" >"$work/q2" 2>"$work/q2.err"
    check "a prefix the ring no longer holds: evaluated again, the same text" same_text "$work/q1" "$work/q2"
    check "... from the start" grep -q "prompt cache: 0 of" "$work/q2.err"
fi
finish
