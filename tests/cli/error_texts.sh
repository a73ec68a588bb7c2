#!/usr/bin/env bash
# Error texts say things once and exactly (issue 29, N7): a model that cannot
# be loaded is named once in the message, whatever the reason; a bad integer
# in the metadata is printed as the integer it is, not as 2.14748e+09.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-errtext-XXXXXX")
trap 'rm -rf "$work"' EXIT

# once_named NAME FILE ARGS...: `sluice run -m FILE ARGS` fails with one line
# that names FILE exactly once
once_named() {
    local name=$1 file=$2
    shift 2
    "$SLUICE" run -m "$file" -p hi -n 1 "$@" >/dev/null 2>"$work/err"
    local rc=$? n
    n=$(grep -o -F "$(basename "$file")" "$work/err" | wc -l)
    if [ "$rc" -ne 0 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && [ "$n" -eq 1 ] &&
        grep -q "cannot load" "$work/err"; then
        ok "$name: one line naming the file once"
    else
        bad "$name (exit $rc, named $n times): $(cat "$work/err")"
    fi
}

echo "my notes" >"$work/notes-file.txt"
once_named "a text file as the model" "$work/notes-file.txt"
once_named "a missing model" "$work/missing-model.gguf"
"$SLUICE" mkmodel --arch qwen3moe --preset tiny-k --layers 2 -q -o "$work/m.gguf"
head -c 1000 "$work/m.gguf" >"$work/cut-short.gguf"
once_named "a truncated model" "$work/cut-short.gguf"

# deepseek4: layer 1's compress ratio set to INT32_MAX
"$SLUICE" mkmodel --arch deepseek4 --preset tiny -q -o "$work/ds4.gguf"
python3 - "$work/ds4.gguf" "$work/ds4-ratio.gguf" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
k = b"deepseek4.attention.compress_ratios"
j = b.find(k) + len(k)
kind, elem, n = struct.unpack_from("<IIQ", b, j)
assert kind == 9 and elem == 5 and n >= 2, (kind, elem, n)  # an array of int32
struct.pack_into("<i", b, j + 16 + 4, 2147483647)
open(sys.argv[2], "wb").write(b)
PY
"$SLUICE" run -m "$work/ds4-ratio.gguf" -p hi -n 1 >/dev/null 2>"$work/err"
if grep -q "compress ratio 2147483647 is not supported" "$work/err" && ! grep -q "e+" "$work/err"; then
    ok "an integer ratio of 2147483647 is printed as 2147483647"
else
    bad "the ratio: $(cat "$work/err")"
fi
finish
