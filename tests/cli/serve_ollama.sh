#!/usr/bin/env bash
# `sluice serve`'s Ollama API (issue 32 part 3; app/server/server_ollama.c) on a
# generated qwen3moe model: the official `ollama` npm client
# (tests/cli/lib/serve_ollama.cjs, installed into build/npm as serve.sh's
# clients are) lists, shows and chats, streamed and not, with options,
# tools and think, and its greedy text and counts equal the OpenAI
# endpoints' for the same conversation; curl checks the wire: NDJSON lines
# and their Content-Type, errors as {"error": "..."} with the right status
# (400, 404, 405, 501). Skipped (with a note) only where node or npm is
# missing; servers with a chatml template (tools, no thinking), a thinking
# template (the generation prompt opens <think>) and a harmony one (think
# levels as gpt-oss's reasoning effort).
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve-ollama
M=$work/m.gguf
CTX=1024
serve_model "$M" --arch qwen3moe --preset tiny-k --layers 2 --seed 5
printf '%s' "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n<think>\n' }}{%- endif %}{# enable_thinking </think> #}" >"$work/think.jinja"
mkdir -p "$work/t"
printf '%s' "{{- '<|start|>system<|message|>' }}{# harmony: <|channel|>final #}" >"$work/h.jinja"
mkdir -p "$work/h"
python3 tests/cli/lib/gguf_set_template.py "$M" "$work/t/m.gguf" "$work/think.jinja" ||
    bad "writing a copy of the model with a thinking template"
python3 tests/cli/lib/gguf_set_template.py "$M" "$work/h/m.gguf" "$work/h.jinja" ||
    bad "writing a copy of the model with a harmony template"
serve_start plain -m "$M" -c $CTX -n 8 --chat-template chatml -t 1 || { finish; exit 1; }
port=$serve_port
pid=$serve_pid
serve_start think -m "$work/t/m.gguf" -c $CTX -n 8 -t 1 || { finish; exit 1; }
tport=$serve_port
tpid=$serve_pid
serve_start harmony -m "$work/h/m.gguf" -c $CTX -n 8 -t 1 || { finish; exit 1; }
hport=$serve_port
hpid=$serve_pid
base=http://127.0.0.1:$port

# status and body of a request: req METHOD PATH [BODY] -> "$st" and $work/body
req() {
    st=$(curl -s -o "$work/body" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
        ${3:+--data-binary "$3"} "$base$2")
}
# whether $work/body is {"error": "<text matching $1>"} and nothing else
ollama_error() {
    python3 -c 'import json, re, sys
o = json.load(open(sys.argv[1]))
sys.exit(0 if list(o) == ["error"] and re.search(sys.argv[2], o["error"]) else 1)' "$work/body" "$1"
}
expect() { # expect NAME STATUS PATTERN METHOD PATH [BODY]
    local name=$1 want=$2 pat=$3
    shift 3
    req "$@"
    if [ "$st" = "$want" ] && ollama_error "$pat"; then ok "$name: $want {\"error\": ...}"
    else bad "$name: status $st, body $(head -c 300 "$work/body")"; fi
}
expect "POST /api/embed" 501 "no embeddings" POST /api/embed '{"model":"m.gguf","input":"hi"}'
expect "DELETE /api/delete" 501 "no model library" DELETE /api/delete '{"model":"m.gguf"}'
expect "HEAD-less GET /api/blobs/sha256:x" 501 "no model library" GET /api/blobs/sha256:00
expect "a body that is not JSON" 400 "not valid JSON" POST /api/chat '{"model":'
expect "no model" 400 "model is required" POST /api/chat '{"messages":[{"role":"user","content":"hi"}]}'
expect "messages not an array" 400 "messages must be an array" POST /api/chat '{"model":"m.gguf","messages":"hi"}'
expect "stream not a boolean" 400 "stream" POST /api/generate '{"model":"m.gguf","prompt":"hi","stream":"yes"}'
expect "think not a boolean or level" 400 "think must be" POST /api/chat \
    '{"model":"m.gguf","messages":[{"role":"user","content":"hi"}],"think":"max"}'
expect "generate with a suffix" 400 "suffix" POST /api/generate '{"model":"m.gguf","prompt":"a","suffix":"b"}'
expect "generate with a context" 400 "context" POST /api/generate '{"model":"m.gguf","prompt":"a","context":[1,2]}'
expect "GET /api/chat" 405 "takes POST" GET /api/chat
expect "an unknown /api/ path" 404 "no endpoint" GET /api/nothing

# the stream on the wire: NDJSON lines, the last one done
curl -s -D "$work/head" -o "$work/stream" -H 'Content-Type: application/json' --data-binary \
    '{"model":"m.gguf","messages":[{"role":"user","content":"Say hello."}],"options":{"temperature":0,"num_predict":4}}' \
    "$base/api/chat"
if grep -qi '^content-type: application/x-ndjson' "$work/head" && python3 -c 'import json, sys
lines = open(sys.argv[1]).read().split("\n")
objs = [json.loads(l) for l in lines[:-1]]
ok = lines[-1] == "" and len(objs) >= 2 and all(not o["done"] for o in objs[:-1]) and objs[-1]["done"]
ok = ok and objs[-1]["eval_count"] == 4 and all(o["message"]["role"] == "assistant" for o in objs)
sys.exit(0 if ok else 1)' "$work/stream"; then
    ok "a chat streams by default: application/x-ndjson, one object a line, the last done with eval_count 4"
else
    bad "the NDJSON stream: $(head -c 300 "$work/head") $(head -c 600 "$work/stream")"
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "note: node/npm not found: the checks through the ollama npm client are skipped"
elif serve_sdks; then
    NODE_PATH="$NPM_DIR/node_modules" timeout 300 node tests/cli/lib/serve_ollama.cjs "$port" "$tport" "$hport" $CTX \
        "$(wc -c <"$M")" >"$work/node.out" 2>&1
    serve_relay <"$work/node.out"
    check "serve_ollama.cjs ran to its end" grep -q '^client-finished' "$work/node.out"
else
    bad "npm could not install the ollama client: $(tail -c 300 "$NPM_DIR/install.log" 2>/dev/null)"
fi

serve_stop "$pid"
serve_stop "$tpid"
serve_stop "$hpid"
if grep -q "ERROR: \|runtime error\|ThreadSanitizer" "$work/plain.err" "$work/think.err" "$work/harmony.err"; then
    bad "sanitizer reports: $(grep -h -m3 -A30 "ERROR: \|runtime error\|ThreadSanitizer" "$work"/*.err)"
else
    ok "no sanitizer report from the servers"
fi
finish
