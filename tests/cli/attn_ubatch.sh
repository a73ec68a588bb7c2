#!/usr/bin/env bash
# The attention kernel of each row follows the request, not how sluice
# splits it (sl_session_set_prompt; test_attn_ubatch proves it on every
# row's logits). On a generated qwen3moe (tiny-k, Q8_0), a prompt of over
# 1,024 tokens whose length mod 512 is under 64 (its last llama.cpp
# micro-batch takes the one-chunk kernel, the others the tiled one) gives
# the same greedy text with -b 512, 100, 32 and 7; warm from --prompt-cache
# (the prompt's last token evaluated again) as cold; after a cached prompt
# of its first 700 tokens; and from servers with -b 512 and -b 32, whose
# logprobs are the same bits, also when the same request comes again (the
# slot's prefix kept, the last token evaluated again).
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup attn-ubatch
M=$work/m.gguf
serve_model "$M" --arch qwen3moe --preset tiny-k --type q8_0 --seed 4

# the prompt: numbers 1..k, k the first with 1,030+ tokens
n=0
for k in $(seq 250 400); do
    printf '%s' "$(seq -s ' ' 1 "$k")" >"$work/p.txt" # no final newline: -f would drop it
    n=$("$SLUICE" tokenize -m "$M" -f "$work/p.txt" --ids | wc -w)
    [ "$n" -ge 1030 ] && break
done
check "a prompt of $n tokens: over 1,024, and $((n % 512)) (mod 512) under 64" \
    [ "$n" -gt 1024 -a $((n % 512)) -lt 64 ]
printf '%s' "$(seq -s ' ' 1 200)" >"$work/short.txt" # a shorter prompt it begins with (~700 tokens)

run() { # run OUT ARGS...: 24 greedy tokens after the prompt
    local out=$1
    shift
    "$SLUICE" run -m "$M" -c 1200 -t 2 -n 24 --temp 0 --ignore-eos --no-stream "$@" \
        >"$out" 2>"$out.err"
}
run "$work/b512" -f "$work/p.txt" -b 512
check "run -b 512 succeeds" [ -s "$work/b512" ]
for b in 100 32 7; do
    run "$work/b$b" -f "$work/p.txt" -b "$b"
    check "run -b $b gives -b 512's text" same_text "$work/b512" "$work/b$b"
done
run "$work/pc1" -f "$work/p.txt" --prompt-cache "$work/cache"
check "a cold --prompt-cache run gives the text" same_text "$work/b512" "$work/pc1"
run "$work/pc2" -f "$work/p.txt" --prompt-cache "$work/cache" -b 32
check "the warm run restored the prompt ($(grep -o 'prompt cache: [0-9]* of [0-9]*' "$work/pc2.err"))" \
    grep -q "prompt cache: $((n - 1)) of $n" "$work/pc2.err"
check "the warm run (the last token again) gives the text" same_text "$work/b512" "$work/pc2"
run "$work/sh" -f "$work/short.txt" --prompt-cache "$work/cache2"
run "$work/pc3" -f "$work/p.txt" --prompt-cache "$work/cache2"
check "after a cached shorter prompt, the prompt was continued ($(grep -o 'prompt cache: [0-9]* of [0-9]*' "$work/pc3.err"))" \
    grep -q "prompt cache: [1-9][0-9]* of $n" "$work/pc3.err"
check "after a cached shorter prompt, the same text" same_text "$work/b512" "$work/pc3"

ask() { # ask PORT OUT: the prompt's completion and logprobs as JSON
    python3 - "$1" "$work/p.txt" >"$2" <<'EOF'
import json, sys, urllib.request
port, path = sys.argv[1], sys.argv[2]
body = {"prompt": open(path).read(), "max_tokens": 24, "temperature": 0, "logprobs": 1}
req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % port,
                             data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
c = json.load(urllib.request.urlopen(req, timeout=300))["choices"][0]
print(json.dumps({"text": c["text"], "logprobs": c["logprobs"]}, sort_keys=True))
EOF
}
for b in 512 32; do
    if serve_start "b$b" -m "$M" -c 1200 -t 2 -np 1 -b "$b"; then
        ask "$serve_port" "$work/s$b.json"
        ask "$serve_port" "$work/s$b.again.json"
        serve_stop "$serve_pid"
    fi
done
check "the server's -b 32 logprobs and text are -b 512's" same_text "$work/s512.json" "$work/s32.json"
check "the same request again (prefix kept, last token again): the same bits" \
    same_text "$work/s32.json" "$work/s32.again.json"
check "the server's text is run's" python3 -c '
import json, sys
sys.exit(json.load(open(sys.argv[1]))["text"] != open(sys.argv[2]).read())' "$work/s512.json" "$work/b512"
finish
