#!/usr/bin/env bash
# `sluice chat` on a generated tiny model (ChatML template): turns piped on
# stdin, the KV cache kept between turns (the second turn evaluates only
# its own tokens), SIGINT stopping an answer and, while idle, the program,
# EOF, a full context and bad flags.
#
# The expected token counts are those of the ChatML text each turn must add,
# written out here from the format in src/chat/chat.h and counted with
# `sluice tokenize` (the tokenizer, not the chat loop under test):
#   turn 1: <|im_start|>system\n{S}<|im_end|>\n<|im_start|>user\n{U1}<|im_end|>\n<|im_start|>assistant\n
#   turn 2: <|im_end|>\n<|im_start|>user\n{U2}<|im_end|>\n<|im_start|>assistant\n
# (turn 2 starts by closing the answer: the <|im_end|> that ended it was
# sampled but not evaluated).
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-chat-XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

M=$work/tiny.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 5 -q -o "$M"; then
    bad "mkmodel"
    echo "$pass passed, $fail failed"
    exit 1
fi

"$SLUICE" chat --help >"$work/help" 2>&1
check "--help exits 0" [ $? -eq 0 ]
check "--help explains Ctrl-C" grep -q "Ctrl-C" "$work/help"
check "--help states what a full context does" grep -q "context is full" "$work/help"

# ---- two turns, cache kept ------------------------------------------------------------
S="Answer briefly."
U1="What is a sluice?"
U2="And a mill?"
ntok() { "$SLUICE" tokenize -m "$M" --no-bos --ids -p "$1" | wc -w; }
want1=$(ntok $'<|im_start|>system\n'"$S"$'<|im_end|>\n<|im_start|>user\n'"$U1"$'<|im_end|>\n<|im_start|>assistant\n')
want2=$(ntok $'<|im_end|>\n<|im_start|>user\n'"$U2"$'<|im_end|>\n<|im_start|>assistant\n')
printf '%s\n%s\n' "$U1" "$U2" |
    timeout 120 "$SLUICE" chat -m "$M" --system "$S" --temp 0 -n 12 --ignore-eos -t 1 -v \
        >"$work/two.out" 2>"$work/two.err"
check "two turns exit 0" [ $? -eq 0 ]
check "two answers printed (two lines)" [ "$(wc -l <"$work/two.out")" -eq 2 ]
e1=$(sed -nE 's/^turn 1: evaluated ([0-9]+) new tokens, ([0-9]+) cached before$/\1 \2/p' "$work/two.err")
a1=$(sed -nE 's/^turn 1: answered ([0-9]+) tokens .*, ([0-9]+) in the context$/\1 \2/p' "$work/two.err")
e2=$(sed -nE 's/^turn 2: evaluated ([0-9]+) new tokens, ([0-9]+) cached before$/\1 \2/p' "$work/two.err")
check "turn 1 evaluates the whole first render ($want1 tokens): got '$e1'" [ "$e1" = "$want1 0" ]
# with --ignore-eos and -n 12 the answer is exactly 12 tokens, all evaluated
check "turn 1 answers 12 tokens, context $want1 + 12: got '$a1'" [ "$a1" = "12 $((want1 + 12))" ]
check "turn 2 evaluates only its $want2 new tokens on top of $((want1 + 12)): got '$e2'" \
    [ "$e2" = "$want2 $((want1 + 12))" ]

# greedy chat is reproducible, and thread count does not change it
printf '%s\n%s\n' "$U1" "$U2" |
    timeout 120 "$SLUICE" chat -m "$M" --system "$S" --temp 0 -n 12 --ignore-eos -t 2 \
        >"$work/two_t2.out" 2>/dev/null
check "same answers with -t 2" same_text "$work/two.out" "$work/two_t2.out"

# without --ignore-eos an answer may end at <|im_end|>; still two turns
printf 'hello\nmore\n' | timeout 120 "$SLUICE" chat -m "$M" --temp 1 --seed 3 -n 20 -t 1 \
    >"$work/eos.out" 2>"$work/eos.err"
check "sampled chat exits 0" [ $? -eq 0 ]
check "sampled chat printed two answers" [ "$(wc -l <"$work/eos.out")" -ge 2 ]

# empty lines are not turns; EOF right away exits cleanly with no output
printf '\n\nhi\n\n' | timeout 60 "$SLUICE" chat -m "$M" -n 4 -t 1 -v >"$work/empty.out" 2>"$work/empty.err"
check "empty lines skipped: one turn" [ "$(grep -c '^turn [0-9]*: evaluated' "$work/empty.err")" -eq 1 ]
timeout 60 "$SLUICE" chat -m "$M" </dev/null >"$work/eof.out" 2>&1
check "EOF at once exits 0" [ $? -eq 0 ]

# ---- a full context -----------------------------------------------------------------------
long="the water in the river rises every spring and the gate must be opened"
long="$long $long $long $long"
printf '%s\n' "$long" | timeout 60 "$SLUICE" chat -m "$M" -c 24 -t 1 >/dev/null 2>"$work/full.err"
check "context full exits 1" [ $? -eq 1 ]
check "... with a message" grep -q "context is full" "$work/full.err"

# ---- SIGINT -------------------------------------------------------------------------------------
wait_for() { # wait_for FILE PATTERN: up to 60 s for PATTERN to appear in FILE
    for _ in $(seq 600); do
        grep -q "$1" "$2" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# Answers with no limit and --ignore-eos would run until the 20000-token
# context fills (minutes under ASan): each must be cut by a SIGINT, after
# which the next turn runs, and EOF ends the program.
mkfifo "$work/in"
# (no `timeout` wrapper here: it would receive the SIGINTs itself; a
# watchdog kills a process that hangs instead)
watchdog() {
    (for _ in $(seq 1200); do kill -0 "$1" 2>/dev/null || exit 0; sleep 0.1; done
     kill -KILL "$1" 2>/dev/null) >/dev/null 2>&1 &
    pids+=("$!")
    disown "$!"
}
"$SLUICE" chat -m "$M" -c 20000 -n -1 --ignore-eos -t 1 -v <"$work/in" \
    >"$work/int.out" 2>"$work/int.err" &
pid=$!
pids+=("$pid")
watchdog "$pid"
exec 3>"$work/in"
printf 'first\nsecond\n' >&3
wait_for "turn 1: evaluated" "$work/int.err" && sleep 0.3
kill -INT "$pid"
wait_for "turn 2: evaluated" "$work/int.err" && sleep 0.3
kill -INT "$pid"
wait_for "turn 2: answered" "$work/int.err"
exec 3>&-
wait "$pid"
rc=$?
check "SIGINT while answering: program goes on, exits 0 at EOF (rc $rc)" [ $rc -eq 0 ]
check "both answers were interrupted" [ "$(grep -c '^\[answer interrupted\]' "$work/int.err")" -eq 2 ]
check "turn 2 happened after the first interrupt" grep -q "^turn 2: answered" "$work/int.err"

# SIGINT while waiting for input ends the program cleanly
"$SLUICE" chat -m "$M" -n 4 -t 1 -v <"$work/in" >/dev/null 2>"$work/idle.err" &
pid=$!
pids+=("$pid")
watchdog "$pid"
exec 3>"$work/in"
printf 'hi\n' >&3
wait_for "turn 1: answered" "$work/idle.err" && sleep 0.3
kill -INT "$pid"
wait "$pid"
rc=$?
exec 3>&-
check "SIGINT while idle exits 0 (rc $rc)" [ $rc -eq 0 ]

# ---- bad flags --------------------------------------------------------------------------------
"$SLUICE" chat -m "$M" --chat-template nope </dev/null >/dev/null 2>"$work/bad.err"
check "unknown template fails" [ $? -ne 0 ]
check "... listing the known ones" grep -q "chatml" "$work/bad.err"
"$SLUICE" chat -m "$M" --wat </dev/null >/dev/null 2>"$work/bad.err"
check "unknown flag exits 2" [ $? -eq 2 ]
check "... naming it" grep -q "unknown option '--wat'" "$work/bad.err"
"$SLUICE" chat </dev/null >/dev/null 2>"$work/bad.err"
check "no model exits 2" [ $? -eq 2 ]
"$SLUICE" chat -m "$M" --system </dev/null >/dev/null 2>"$work/bad.err"
check "--system without a value" grep -q -- "--system needs a value" "$work/bad.err"

# a template override is used (llama3 markers in the rendered prompt are
# not in this vocabulary, but the chat still runs)
printf 'hi\n' | timeout 60 "$SLUICE" chat -m "$M" --chat-template llama3 -n 4 -t 1 -v \
    >/dev/null 2>"$work/l3.err"
check "--chat-template llama3 runs" grep -q "template llama3" "$work/l3.err"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
