#!/usr/bin/env bash
# `sluice run --prompt-cache FILE` and `sluice chat --prompt-cache FILE` on
# generated qwen3moe and qwen35moe models: a warm run prints the same text
# as a cold one and evaluates fewer prompt tokens (its stderr and --stats
# say so); a prompt that extends the saved one reuses the saved tokens; a
# truncated, corrupt or other-model file gives one warning line and a cold
# run with the same text, and is replaced by a good file.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-pcache-XXXXXX")
trap 'rm -rf "$work"' EXIT

A=$work/a.gguf
B=$work/b.gguf
Q=$work/q35.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 3 -q -o "$A" ||
    ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 4 -q -o "$B" ||
    ! "$SLUICE" mkmodel --arch qwen35moe --preset tiny --seed 8 -q -o "$Q"; then
    bad "mkmodel"
    echo "$pass passed, $fail failed"
    exit 1
fi
P="The miller's daughter kept a notebook of the river, and every evening she wrote down the height of the water."

run() { # run MODEL OUT ARGS...
    local m=$1 out=$2
    shift 2
    "$SLUICE" run -m "$m" -p "$P" --temp 0 -n 24 --ignore-eos "$@" >"$out" 2>"$out.err"
}
evaluated() { sed -nE 's/^prompt: +([0-9]+) tokens.*/\1/p' "$1"; }
restored() { sed -nE 's/^prompt cache: ([0-9]+) of ([0-9]+) .*/\1/p' "$1"; }

"$SLUICE" run --help 2>&1 | grep -q -- "--prompt-cache"
check "run --help lists --prompt-cache" [ $? -eq 0 ]

for m in "$A" "$Q"; do
    name=$(basename "$m" .gguf)
    C=$work/$name.cache
    run "$m" "$work/cold" -t 1
    check "$name: cold run exits 0" [ $? -eq 0 ]
    cp "$work/cold" "$work/cold_$name"
    run "$m" "$work/first" -t 1 --prompt-cache "$C"
    check "$name: first cached run (no file yet) exits 0 without a warning" \
        bash -c "[ -s '$C' ] && ! grep -q warning '$work/first.err'"
    check "$name: first cached run = cold run" same_text "$work/cold" "$work/first"
    n_cold=$(evaluated "$work/first.err")
    run "$m" "$work/warm" -t 1 --prompt-cache "$C" --stats
    check "$name: warm run exits 0" [ $? -eq 0 ]
    check "$name: warm run = cold run" same_text "$work/cold" "$work/warm"
    # the whole prompt: its last token is evaluated again (poisoned rows then show),
    # except on a recurrent model, which cannot go back and samples the saved logits
    if [ "$name" = a ]; then again=1; else again=0; fi
    check "$name: warm run restored $((n_cold - again)) of $n_cold prompt tokens" \
        [ "$(restored "$work/warm.err")" = "$((n_cold - again))" ]
    check "$name: warm run evaluated $again prompt tokens" [ "$(evaluated "$work/warm.err")" = "$again" ]
    check "$name: warm --stats counts only generated tokens evaluated" \
        grep -Eq '(^| )24 tokens' "$work/warm.err"
    # the cold run's --stats, for the comparison of the token counts
    run "$m" "$work/cold_stats" -t 1 --stats
    check "$name: --stats of the warm run differs from the cold run's" \
        bash -c "! cmp -s <(grep -i token '$work/cold_stats.err') <(grep -i token '$work/warm.err')"

    # a longer prompt that begins with the saved one
    P2="$P Then she closed the notebook."
    "$SLUICE" run -m "$m" -p "$P2" --temp 0 -n 16 --ignore-eos -t 1 >"$work/long_cold" 2>/dev/null
    "$SLUICE" run -m "$m" -p "$P2" --temp 0 -n 16 --ignore-eos -t 1 --prompt-cache "$C" \
        >"$work/long_warm" 2>"$work/long_warm.err"
    check "$name: extended prompt = cold run" same_text "$work/long_cold" "$work/long_warm"
    r=$(restored "$work/long_warm.err")
    if [ "$name" = a ]; then
        check "$name: extended prompt reused the saved prefix ($r tokens)" [ "${r:-0}" -gt 0 ]
    else # a recurrent state goes back only to the end of the saved prompt
        check "$name: extended prompt reused the saved prompt ($r tokens)" [ "${r:-0}" = "$n_cold" ]
    fi
done

# ---- refused files: a warning line and a cold run ---------------------------------------
C=$work/a.cache
"$SLUICE" run -m "$A" -p "$P" --temp 0 -n 1 -t 1 --prompt-cache "$C" >/dev/null 2>&1
size=$(stat -c %s "$C")
head -c $((size - 100)) "$C" >"$work/trunc.cache"
cp "$C" "$work/corrupt.cache"
printf '\x55' | dd of="$work/corrupt.cache" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
run "$B" "$work/b_cold" -t 1
"$SLUICE" run -m "$B" -p "$P" --temp 0 -n 1 -t 1 --prompt-cache "$work/foreign.cache" >/dev/null 2>&1
cp "$work/foreign.cache" "$work/foreign_for_a.cache"
for k in trunc:truncated corrupt:checksum foreign_for_a:"another model"; do
    f=${k%%:*}
    why=${k#*:}
    run "$A" "$work/r_$f" -t 1 --prompt-cache "$work/$f.cache"
    check "$f file: run exits 0" [ $? -eq 0 ]
    check "$f file: one warning line naming it ($why)" \
        [ "$(grep -c "warning: prompt cache: .*refused.*$why" "$work/r_$f.err")" = 1 ]
    check "$f file: text = cold run" same_text "$work/cold_a" "$work/r_$f"
    check "$f file: all prompt tokens evaluated" [ "$(restored "$work/r_$f.err")" = 0 ]
    run "$A" "$work/r2_$f" -t 1 --prompt-cache "$work/$f.cache"
    check "$f file: replaced by a good one (next run reuses it: 1 token evaluated again)" \
        bash -c "[ \$(sed -nE 's/^prompt: +([0-9]+) tokens.*/\1/p' '$work/r2_$f.err') = 1 ]"
done
ls -a "$work" | grep -q '\.tmp-'
check "no temporary file left" [ $? -ne 0 ]

# ---- chat ------------------------------------------------------------------------------------
chat() { printf 'hello there\nand again\n' | "$SLUICE" chat -m "$A" --system "You are terse." \
    --temp 0 -n 12 --ignore-eos -t 1 "$@"; }
chat >"$work/chat_cold" 2>/dev/null
chat --prompt-cache "$work/chat.cache" >"$work/chat1" 2>"$work/chat1.err"
chat --prompt-cache "$work/chat.cache" >"$work/chat2" 2>"$work/chat2.err"
check "chat: cached runs = cold run" bash -c "cmp -s '$work/chat_cold' '$work/chat1' && cmp -s '$work/chat_cold' '$work/chat2'"
r=$(restored "$work/chat2.err")
check "chat: second run restored the first turn ($r tokens)" [ "${r:-0}" -gt 0 ]

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
