#!/usr/bin/env bash
# The Windows exe (make windows) under wine: the demo model (qwen3moe,
# preset small, q4_k_m, seed 1) written by the Linux binary decodes greedily
# to the same bytes resident and streamed (unbuffered overlapped lanes, a
# 96-expert cache), and to the Linux build's bytes when that build runs with
# correctly rounded float functions (lib/cr_float_libm.c: the exe's C runtime
# rounds expf / sinf / cosf ... once from double, glibc's do not; the
# engine's own arithmetic, fmaf included, is the same, see
# docs/ARCHITECTURE.md, "Windows"); so do tiny qwen35moe and gpt-oss
# models, resident and streamed; a copy of the model with a non-ASCII
# name loads and gives the same text; `iobench` reports unbuffered
# overlapped lanes; the model file is never mapped (--dense-weights mmap is
# refused); `serve` says it is not in this build. Skipped (0 passed) when
# build/windows/sluice.exe or wine is missing; .ci/run builds it first.
set -u
. "$(dirname "$0")/lib/common.sh"
EXE=${SLUICE_WIN:-build/windows/sluice.exe}
X86=${SLUICE_REL:-build/rel/sluice}
WINE=$(command -v wine || echo /usr/lib/wine/wine64)
if [ ! -f "$EXE" ] || [ ! -x "$WINE" ] || [ ! -x "$X86" ] || ! command -v cc >/dev/null; then
    echo "   (no $EXE, wine or $X86: skipped)"
    finish
    exit 0
fi
export WINEDEBUG=-all
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-win-XXXXXX")
trap 'rm -rf "$work"' EXIT
win() { "$WINE" "$EXE" "$@"; }

M=$work/demo.gguf
"$X86" mkmodel --arch qwen3moe --preset small --type q4_k_m --seed 1 -q -o "$M"
check "Linux mkmodel writes the demo model" [ -s "$M" ]
cc -O2 -shared -fPIC "$(dirname "$0")/lib/cr_float_libm.c" -o "$work/cr.so" -lm
P="The river carries"
LD_PRELOAD=$work/cr.so "$X86" run -m "$M" -p "$P" -n 48 --temp 0 -t 2 >"$work/lin.txt" 2>/dev/null
check "Linux greedy run (correctly rounded float libm)" [ -s "$work/lin.txt" ]

win run -m "$M" -p "$P" -n 48 --temp 0 -t 2 >"$work/res.txt" 2>"$work/res.err"
check "exe resident greedy text equals Linux's" same_text "$work/lin.txt" "$work/res.txt"
win run -m "$M" -p "$P" -n 48 --temp 0 -t 2 --moe-stream --cache-experts 96 --stats \
    >"$work/str.txt" 2>"$work/str.err"
check "exe streamed greedy text equals its resident text" same_text "$work/res.txt" "$work/str.txt"
check "exe streams through unbuffered overlapped lanes" \
    grep -q 'I/O overlapped x[0-9]*, FILE_FLAG_NO_BUFFERING' "$work/str.err"

# a qwen35moe and a gpt-oss generated model (gpt-oss's answer goes through
# the harmony stream: a pipe and a thread in the exe), resident and streamed
for arch in qwen35moe:q4_k_m:16 gpt-oss:q8_0:8; do
    IFS=: read -r a t c <<<"$arch"
    G=$work/$a.gguf
    "$X86" mkmodel --arch "$a" --preset tiny --type "$t" --seed 1 -q -o "$G" 2>/dev/null
    LD_PRELOAD=$work/cr.so "$X86" run -m "$G" -p "Hi there" -n 16 --temp 0 -t 2 \
        >"$work/$a-lin.txt" 2>/dev/null
    win run -m "$G" -p "Hi there" -n 16 --temp 0 -t 2 >"$work/$a-res.txt" 2>/dev/null
    check "$a: exe resident greedy text equals Linux's" same_text "$work/$a-lin.txt" "$work/$a-res.txt"
    win run -m "$G" -p "Hi there" -n 16 --temp 0 -t 2 --moe-stream --cache-experts "$c" \
        >"$work/$a-str.txt" 2>/dev/null
    check "$a: exe streamed greedy text equals Linux's" same_text "$work/$a-lin.txt" "$work/$a-str.txt"
done

U="$work/módel-модель-模型.gguf"
cp "$M" "$U"
win run -m "$U" -p "$P" -n 48 --temp 0 -t 2 >"$work/uni.txt" 2>"$work/uni.err"
check "a model with a non-ASCII name loads and gives the same text" \
    same_text "$work/res.txt" "$work/uni.txt"

win iobench --model "$M" --lanes 1,4 --seconds 0.3 >"$work/io.txt" 2>&1
check "iobench reports unbuffered overlapped lanes" \
    grep -Eq '^ +4 .* unbuffered overlapped$' "$work/io.txt"

win run -m "$M" -p "$P" -n 4 --dense-weights mmap >/dev/null 2>"$work/map.err"
rc=$?
check "the exe refuses to map the model file" \
    eval '[ $rc -ne 0 ] && grep -q "never maps model files" "$work/map.err"'

win serve -m "$M" --port 0 >/dev/null 2>"$work/serve.err"
rc=$?
check "serve says it is not in this build" \
    eval '[ $rc -ne 0 ] && grep -q "not in this build yet" "$work/serve.err"'
finish
