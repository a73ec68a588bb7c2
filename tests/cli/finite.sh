#!/usr/bin/env bash
# Absurd values (issue 29, N4): the three files of the hostile-input
# campaign, each a generated tiny model with one value changed, once gave
# degenerate output with exit 0 ("run" printed 8 NUL bytes, "perplexity"
# "PPL = 512.0000 +/- nan"). Now:
#  - a gpt-oss file with one attention-output bias of 3.4e38, a deepseek4
#    file whose hyper-connection epsilon is 1e30 and a gemma4 file whose
#    final logit softcap is 1e-30 are refused at load by run, perplexity
#    and chat: exit 1, one line naming the key or tensor, the value and the
#    range (model/value_ranges.h);
#  - a huge finite weight inside a matrix (not checked at load) makes the
#    hidden state leave the range a norm can square: run, chat and
#    perplexity stop with one line naming the position and the layer, the
#    server answers 500 with that line;
#  - the undamaged files still run.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup finite
SET_F32=tests/cli/lib/gguf_set_f32.py

OSS=$work/oss.gguf DS4=$work/ds4.gguf GEMMA=$work/gemma4.gguf
serve_model "$OSS" --arch gpt-oss --preset tiny --seed 3
serve_model "$DS4" --arch deepseek4 --preset tiny --type q8_0 --seed 3
serve_model "$GEMMA" --arch gemma4 --preset tiny --type q8_0 --seed 3

# poison FILE TENSOR ENTRY: that f32 tensor's entry becomes 3.4028235e38
# (FLT_MAX; its offset from inspect's table, absolute in the file)
poison() {
    local off
    off=$("$SLUICE" inspect "$1" | awk -v t="$2" '$2 == t { print $(NF - 1) }')
    [ -n "$off" ] || return 1
    printf '\xff\xff\x7f\x7f' | dd of="$1" bs=1 seek=$((off + 4 * $3)) conv=notrunc status=none
}
cp "$OSS" "$work/bias.gguf" && poison "$work/bias.gguf" blk.0.attn_output.bias 5
cp "$DS4" "$work/eps.gguf" && python3 "$SET_F32" "$work/eps.gguf" deepseek4.hyper_connection.epsilon 1e30
cp "$GEMMA" "$work/cap.gguf" && python3 "$SET_F32" "$work/cap.gguf" gemma4.final_logit_softcapping 1e-30
cp "$OSS" "$work/matrix.gguf" && poison "$work/matrix.gguf" blk.0.attn_output.weight 0
T=$work/text.txt
for i in $(seq 1 40); do echo "The keeper opened the sluice and the water rose in the lock."; done >"$T"

# expect_refusal NAME WANT CMD...: CMD exits 1 with nothing on stdout, and
# its error is one line, the last on stderr, holding WANT (perplexity's
# progress lines may come before it)
expect_refusal() {
    local name=$1 want=$2 err rc
    shift 2
    err=$("$@" 2>&1 >"$work/stdout")
    rc=$?
    if [ "$rc" -eq 1 ] && [ ! -s "$work/stdout" ] &&
        printf '%s\n' "$err" | tail -n 1 | grep -q "^sluice [a-z]*: .*" &&
        printf '%s\n' "$err" | tail -n 1 | grep -qF -- "$want" &&
        [ "$(printf '%s\n' "$err" | grep -c '^sluice ')" -eq 1 ]; then
        ok "$name"
    else
        bad "$name (exit $rc, stdout $(head -c 80 "$work/stdout" | od -An -c | head -n 1), stderr: $err)"
    fi
}
for cmd in run perplexity chat; do
    case $cmd in
    run) args=(-p "Hello there" -n 8 --temp 0 -t 2) ;;
    perplexity) args=(-f "$T" -c 64 -t 2) ;;
    chat) args=(-n 8 --temp 0 -t 2) ;;
    esac
    expect_refusal "$cmd: gpt-oss attention-output bias 3.4e38 refused at load" \
        "tensor 'blk.0.attn_output.bias' holds 3.40282e+38 at entry 5, outside (-1e+06, 1e+06)" \
        "$SLUICE" "$cmd" -m "$work/bias.gguf" "${args[@]}" </dev/null
    expect_refusal "$cmd: deepseek4 hyper-connection epsilon 1e30 refused at load" \
        "metadata 'deepseek4.hyper_connection.epsilon' = 1e+30 is out of range [1e-12, 0.01]" \
        "$SLUICE" "$cmd" -m "$work/eps.gguf" "${args[@]}" </dev/null
    expect_refusal "$cmd: gemma4 final softcap 1e-30 refused at load" \
        "metadata 'gemma4.final_logit_softcapping' = 1e-30 is out of range [1, 10000] (or 0: off)" \
        "$SLUICE" "$cmd" -m "$work/cap.gguf" "${args[@]}" </dev/null
done

# a weight of 3.4e38 in a matrix: the run-time guard
GUARD="after layer 0, beyond the 2^64 a norm can square: the weights may be damaged"
expect_refusal "run: a huge matrix weight stops the run" "$GUARD" \
    "$SLUICE" run -m "$work/matrix.gguf" -p "Hello there" -n 8 --temp 0 -t 2
expect_refusal "chat: a huge matrix weight stops the chat" "$GUARD" \
    bash -c 'printf "hi\n" | "$@"' _ "$SLUICE" chat -m "$work/matrix.gguf" -n 8 --temp 0 -t 2
expect_refusal "perplexity: a huge matrix weight stops the evaluation" "chunk 1: the hidden state" \
    "$SLUICE" perplexity -m "$work/matrix.gguf" -f "$T" -c 64 -t 2
if serve_start matrix -m "$work/matrix.gguf" -t 2; then
    python3 - "$serve_port" "$GUARD" <<'EOF' | serve_relay "serve: "
import sys
sys.path.insert(0, "tests/cli/lib")
from http_post import check, poster
post = poster(int(sys.argv[1]))
for path, body in (("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
                   ("/v1/completions", {"prompt": "hi"})):
    body["max_tokens"] = 4
    status, text = post(path, body)
    check("%s: 500 naming the hidden state" % path,
          status == 500 and sys.argv[2] in text and "hidden state" in text, (status, text))
EOF
    serve_stop "$serve_pid"
fi

for f in "$OSS" "$DS4" "$GEMMA"; do
    check "the undamaged $(basename "$f") still runs" bash -c '"$1" run -m "$2" -p "Hello there" \
        -n 4 --temp 0 -t 2 >/dev/null 2>&1' _ "$SLUICE" "$f"
done
finish
