#!/usr/bin/env bash
# `sluice run` on a generated tiny model: greedy output identical across
# thread counts and batch sizes, seeded sampling reproducible, the prompt /
# context rules (error, --truncate, a full context) and bad flags. Expected
# counts are worked out by hand from the rules in `sluice run --help`.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-run-XXXXXX")
trap 'rm -rf "$work"' EXIT

M=$work/tiny.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 3 -q -o "$M"; then
    bad "mkmodel"
    echo "$pass passed, $fail failed"
    exit 1
fi
P="The miller's daughter kept a notebook of the river."

# ---- help ---------------------------------------------------------------------
"$SLUICE" run --help >"$work/help" 2>&1
check "--help exits 0" [ $? -eq 0 ]
check "--help lists --truncate and --top-p" grep -q -- "--truncate" "$work/help"
check "--help lists sampling flags" grep -q -- "--repeat-last-n" "$work/help"

# ---- greedy output: same for every thread count and batch size -------------------
gen() { # gen OUT ARGS...: stdout to OUT, stderr to OUT.err
    local out=$1
    shift
    "$SLUICE" run -m "$M" -p "$P" "$@" >"$out" 2>"$out.err"
}
gen "$work/g_t1_b512" --temp 0 -n 48 --ignore-eos -t 1 -b 512
check "greedy run exits 0" [ $? -eq 0 ]
check "greedy output is not empty" [ -s "$work/g_t1_b512" ]
check "stderr reports 48 generated tokens" grep -Eq '^generated: +48 tokens' "$work/g_t1_b512.err"
check "stderr reports load time" grep -Eq '^load: +[0-9.]+ s' "$work/g_t1_b512.err"
check "stderr reports prompt tok/s" grep -Eq '^prompt: +[0-9]+ tokens in +[0-9.]+ s \( *[0-9.]+ tok/s\)' "$work/g_t1_b512.err"
for v in "-t 2 -b 512" "-t 1 -b 1" "-t 2 -b 1" "-t 1 -b 3"; do
    # shellcheck disable=SC2086
    gen "$work/g_var" --temp 0 -n 48 --ignore-eos $v
    check "greedy identical with $v" same_text "$work/g_t1_b512" "$work/g_var"
done
gen "$work/g_kv32" --temp 0 -n 8 --kv-type f32
check "--kv-type f32 runs" [ $? -eq 0 ]

# -f FILE gives what -p gives for the same bytes
printf '%s' "$P" >"$work/prompt.txt"
"$SLUICE" run -m "$M" -f "$work/prompt.txt" --temp 0 -n 48 --ignore-eos >"$work/g_file" 2>/dev/null
check "-f FILE equals -p TEXT" same_text "$work/g_t1_b512" "$work/g_file"

# ---- llama.cpp's flags without a sluice option (app/llama_flags.c) ---------------------
gen "$work/g_llama" --temp 0 -n 48 --ignore-eos -fa on -ngl 99 --jinja -cb --no-mmap --mlock \
    -tb 2 --numa distribute -ub 7 -fa
check "llama.cpp's -fa on, -ngl, --jinja, -cb, --no-mmap, --mlock, -tb, --numa, -ub: same text" \
    same_text "$work/g_t1_b512" "$work/g_llama"
check "... a note for each ignored one" [ "$(grep -c "note: .* is ignored" "$work/g_llama.err")" -eq 4 ]
check "... -ngl names the CPU" grep -q "note: -ngl 99 is ignored: sluice runs on the CPU" "$work/g_llama.err"
gen "$work/g_mmap" --temp 0 -n 48 --ignore-eos --mmap -ngl 0
check "--mmap (--dense-weights mmap) and -ngl 0: same text, no note" \
    bash -c 'cmp -s "$1" "$2" && ! grep -q "note:" "$3"' _ "$work/g_t1_b512" "$work/g_mmap" "$work/g_mmap.err"

# ---- the prompt's bytes as llama.cpp's tools take them (app/prompt_text.c) ------------
# -p and -f: \n \t \" \\ \xHH ... become the bytes they name (a backslash before
# anything else stays); -f drops one final newline
say() { # say OUT ARGS...: run -v, stdout to OUT; prints the prompt's token count
    local out=$1
    shift
    "$SLUICE" run -m "$M" --temp 0 -n 8 -v "$@" >"$out" 2>"$out.err"
    sed -n 's/.*, prompt \([0-9]*\) tokens.*/\1/p' "$out.err"
}
t_esc=$(say "$work/esc" -p 'The keeper\tsaid \x41\"hi\"\\ and \q')
t_bytes=$(say "$work/bytes" -p "$(printf 'The keeper\tsaid A"hi"\\ and \\q')")
t_raw=$(say "$work/raw" --no-escape -p 'The keeper\tsaid \x41\"hi\"\\ and \q')
same_prompt() { [ -n "$1" ] && [ "$1" = "$2" ] && same_text "$3" "$4"; }
check "escapes in -p give the bytes they name ($t_esc tokens)" \
    same_prompt "$t_esc" "$t_bytes" "$work/esc" "$work/bytes"
check "--no-escape keeps them ($t_raw tokens)" [ "${t_raw:-x}" != "${t_esc:-x}" ]
printf 'The keeper said\n' >"$work/nl.txt"
t_nl=$(say "$work/nl" -f "$work/nl.txt")
t_nonl=$(say "$work/nonl" -p 'The keeper said')
check "-f drops one final newline, as llama.cpp reads a file ($t_nl tokens)" \
    same_prompt "$t_nl" "$t_nonl" "$work/nl" "$work/nonl"

# ---- seeded sampling -----------------------------------------------------------------
gen "$work/s7a" --temp 1 --seed 7 -n 48 --ignore-eos
gen "$work/s7b" --temp 1 --seed 7 -n 48 --ignore-eos -t 2 -b 2
gen "$work/s8" --temp 1 --seed 8 -n 48 --ignore-eos
check "--seed 7 twice: same text" same_text "$work/s7a" "$work/s7b"
gen "$work/s7c" --temp 1 -s 7 -n 48 --ignore-eos
check "-s 7 (llama.cpp's short form) is --seed 7" same_text "$work/s7a" "$work/s7c"
differ() { ! cmp -s "$1" "$2"; }
check "--seed 8 differs from --seed 7" differ "$work/s7a" "$work/s8"
gen "$work/pen" --temp 0.7 --seed 7 -n 16 --repeat-penalty 1.3 --repeat-last-n 16 \
    --presence-penalty 0.5 --frequency-penalty 0.2 --top-k 10 --top-p 0.9 --min-p 0.1
check "all sampling flags together run" [ $? -eq 0 ]

# ---- --stop: the output ends right before the first occurrence --------------------------
# The expected text is cut by python from the unstopped greedy output: with
# STOP = bytes 20..23 of it, the stopped run prints exactly X[:X.find(STOP)].
stop_check() {
    python3 - "$SLUICE" "$M" "$P" <<'PY'
import subprocess, sys
exe, model, prompt = sys.argv[1:4]
base = [exe, "run", "-m", model, "-p", prompt, "--temp", "0", "-n", "48", "--ignore-eos"]
x = subprocess.run(base, capture_output=True).stdout
stop = x[20:24]
if len(stop) < 4 or b"\0" in stop:
    sys.exit(1)
y = subprocess.run(base + [b"--stop", stop], capture_output=True).stdout
z = subprocess.run(base + ["--stop", "qqqqzzzz"], capture_output=True).stdout
sys.exit(0 if y == x[:x.find(stop)] and z == x else 1)
PY
}
check "--stop cuts the output before the stop text" stop_check

# ---- prompt longer than the context ---------------------------------------------------
# 8 sentences of ~50 bytes: far more than 32 tokens (a 512-token vocabulary
# needs at least one token per 8 bytes or so on this text)
long=""
for i in 1 2 3 4 5 6 7 8; do long="$long $P"; done
"$SLUICE" run -m "$M" -p "$long" -c 32 -n 8 >/dev/null 2>"$work/long.err"
rc=$?
check "prompt > context fails" [ $rc -ne 0 ]
check "... saying the context size" grep -q "context holds 32" "$work/long.err"
check "... and suggesting --truncate" grep -q -- "--truncate" "$work/long.err"
# --truncate leaves room for min(-n, ctx/2) = min(8, 16) = 8 new tokens:
# keep 32 - 8 = 24 prompt tokens, then generate 8
"$SLUICE" run -m "$M" -p "$long" -c 32 -n 8 --ignore-eos --truncate >/dev/null 2>"$work/trunc.err"
check "--truncate succeeds" [ $? -eq 0 ]
check "--truncate says it kept 24" grep -q "truncated to 24" "$work/trunc.err"
check "--truncate then generates 8" grep -Eq '^generated: +8 tokens' "$work/trunc.err"

# -n -1 until the context is full: a prompt of p tokens leaves room to
# evaluate 16 - p generated tokens, and one more is sampled and printed
# from the logits of the last position: 17 - p in all
"$SLUICE" run -m "$M" -p "Hello" -c 16 -n -1 --ignore-eos >/dev/null 2>"$work/full.err"
check "-n -1 stops at a full context" grep -q "context of 16 tokens is full" "$work/full.err"
p=$(sed -nE 's/^prompt: +([0-9]+) tokens.*/\1/p' "$work/full.err")
g=$(sed -nE 's/^generated: +([0-9]+) tokens.*/\1/p' "$work/full.err")
check "-n -1 generated 17 - prompt tokens (p=$p g=$g)" [ -n "$p" ] && [ -n "$g" ] && [ "$g" -eq $((17 - p)) ]

# ---- bad flags -------------------------------------------------------------------------------
expect_fail() { # expect_fail NAME PATTERN ARGS...: non-zero exit and PATTERN on stderr
    local name=$1 pat=$2
    shift 2
    "$SLUICE" run "$@" >/dev/null 2>"$work/bad.err"
    local rc=$?
    if [ $rc -ne 0 ] && grep -q -- "$pat" "$work/bad.err"; then ok "$name"; else
        bad "$name (rc $rc: $(head -c 300 "$work/bad.err"))"
    fi
}
expect_fail "unknown flag" "unknown option '--frobnicate'" -m "$M" -p hi --frobnicate
expect_fail "no model" "no model given" -p hi
expect_fail "no prompt" "exactly one of -p" -m "$M"
expect_fail "both -p and -f" "exactly one of -p" -m "$M" -p hi -f "$work/prompt.txt"
expect_fail "--temp not a number" "--temp expects a number" -m "$M" -p hi --temp warm
expect_fail "-n below -1" "-n expects a whole number" -m "$M" -p hi -n -2
expect_fail "-c missing value" "-c needs a value" -m "$M" -p hi -c
expect_fail "--top-p 0" "--top-p must be above 0" -m "$M" -p hi --top-p 0
expect_fail "--kv-type q4" "--kv-type expects f16, f32, q8_0 or q4_0" -m "$M" -p hi --kv-type q4
expect_fail "--seed negative" "--seed expects" -m "$M" -p hi --seed -1
expect_fail "missing model file" "cannot load" -m "$work/nope.gguf" -p hi
expect_fail "missing prompt file" "cannot open" -m "$M" -f "$work/nope.txt"
expect_fail "empty prompt" "prompt is empty" -m "$M" -p ""
expect_fail "--stop without text" "--stop needs a non-empty text" -m "$M" -p hi --stop ""
expect_fail "-fa off: refused, saying why" "computes attention only as llama.cpp's flash attention" -m "$M" -p hi -fa off
expect_fail "-ngl not a number" "-ngl expects a whole number" -m "$M" -p hi -ngl all

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
