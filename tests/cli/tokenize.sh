#!/usr/bin/env bash
# `sluice tokenize` on the llama.cpp vocabulary fixtures: every string of the
# GPT-2 fixture (byte-level BPE) and of the Llama SentencePiece fixture must
# print exactly the ids of the matching line of the fixture's .out file
# (produced by the models' own tokenizers), plus the piece listing, BOS,
# special-token parsing and the error paths.
set -u
cd "$(dirname "$0")/../.."
SLUICE=${SLUICE:-build/san/sluice}
DATA=tests/data/tokenizers
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-tok-XXXXXX")
trap 'rm -rf "$work"' EXIT

# k-th string of an .inp file (strings end with "\n__ggml_vocab_test__\n")
nth_string() { awk -v RS='\n__ggml_vocab_test__\n' -v k="$2" 'NR == k { printf "%s", $0 }' "$1"; }

# Every fixture string through -f FILE --ids --no-bos against its .out line.
check_fixture() {
    local name=$1 model=$DATA/ggml-vocab-$1.gguf
    local n
    n=$(awk -v RS='\n__ggml_vocab_test__\n' 'END { print NR }' "$model.inp")
    [ "$n" -eq 46 ] || bad "$name: expected 46 strings in $model.inp, found $n"
    local good=0
    for k in $(seq 1 "$n"); do
        nth_string "$model.inp" "$k" >"$work/in.txt"
        want=$(sed -n "${k}p" "$model.out" | sed 's/^ *//')
        got=$("$SLUICE" tokenize -m "$model" -f "$work/in.txt" --ids --no-bos 2>"$work/err")
        if [ "$got" == "$want" ]; then
            good=$((good + 1))
        else
            bad "$name string $k: got '$got', want '$want' $(cat "$work/err")"
        fi
    done
    [ "$good" -eq "$n" ] && ok
    echo "     $name: $good/$n strings match"
}
check_fixture gpt-2
check_fixture llama-spm

# The listing: one line per token, id then quoted piece (line 13 of the
# gpt-2 .out: " Hello world" -> 18435 995).
out=$("$SLUICE" tokenize -m $DATA/ggml-vocab-gpt-2.gguf -p " Hello world")
if [ "$out" == "$(printf '%6d -> %s\n%6d -> %s' 18435 "' Hello'" 995 "' world'")" ]; then ok
else bad "listing: $out"; fi

# llama-spm asks for BOS (add_bos_token = true, bos = 1): without --no-bos
# the ids are 1 followed by line 12 of the .out ("Hello world").
want="1 $(sed -n 12p $DATA/ggml-vocab-llama-spm.gguf.out | sed 's/^ *//')"
got=$("$SLUICE" tokenize -m $DATA/ggml-vocab-llama-spm.gguf -p "Hello world" --ids)
[ "$got" == "$want" ] && ok || bad "BOS: got '$got', want '$want'"

# Control text: <|endoftext|> is token 50256 (control) in GPT-2; with
# --no-parse-special it is plain text and 50256 must not appear.
got=$("$SLUICE" tokenize -m $DATA/ggml-vocab-gpt-2.gguf -p "a<|endoftext|>b" --ids)
[ "$got" == "64 50256 65" ] && ok || bad "parse special: got '$got'"
got=$("$SLUICE" tokenize -m $DATA/ggml-vocab-gpt-2.gguf -p "a<|endoftext|>b" --ids --no-parse-special)
case " $got " in *" 50256 "*) bad "no-parse-special: got '$got'" ;; *) ok ;; esac

# Partial UTF-8 pieces are escaped, not printed raw: "🦙" in GPT-2 is split
# into byte-level tokens whose pieces are incomplete sequences.
out=$("$SLUICE" tokenize -m $DATA/ggml-vocab-gpt-2.gguf -p "🦙")
if echo "$out" | grep -q '\\xF0'; then ok; else bad "escapes: $out"; fi

# Issue 10 D10: 10 MB of spaces between two letters under the qwen2
# pre-tokenizer (what mkmodel writes) stopped at PCRE2's match limit. It
# must tokenize: the pieces are "x", the spaces but the last, and " y", so
# the ids start with those of "x" and end with those of " y".
if "$SLUICE" mkmodel --arch qwen3moe --preset tiny -q -o "$work/tiny.gguf"; then
    { printf x; head -c 10000000 /dev/zero | tr '\0' ' '; printf y; } >"$work/ws.txt"
    got=$(timeout 300 "$SLUICE" tokenize -m "$work/tiny.gguf" -f "$work/ws.txt" --ids \
        --no-bos 2>"$work/err")
    rc=$?
    x=$("$SLUICE" tokenize -m "$work/tiny.gguf" -p x --ids --no-bos)
    y=$("$SLUICE" tokenize -m "$work/tiny.gguf" -p " y" --ids --no-bos)
    if [ $rc -eq 0 ] && [ "${got%% *}" == "$x" ] && [ "${got##* }" == "${y##* }" ] &&
        [ "$(echo "$got" | wc -w)" -gt 2 ]; then ok
    else bad "10 MB of spaces: exit $rc, $(head -c 300 "$work/err")"; fi
    rm -f "$work/ws.txt"
else
    bad "mkmodel for the long-run case"
fi

# Errors and help.
"$SLUICE" tokenize --help | grep -q "usage: sluice tokenize" && ok || bad "--help"
"$SLUICE" tokenize -p x >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "missing -m must exit 2"
"$SLUICE" tokenize -m "$work/nope.gguf" -p x >/dev/null 2>"$work/err"
[ $? -eq 1 ] && grep -q "nope.gguf" "$work/err" && ok || bad "missing file: $(cat "$work/err")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
