#!/usr/bin/env bash
# `sluice serve` end to end (issue 13): a server on a free loopback port
# (--port 0; the port is read from its start-up line) with a generated
# model, driven by tests/cli/lib/serve_client.py (standard library only):
# every endpoint (OpenAI and Anthropic), SSE parsed event by event, a greedy
# completion equal to `sluice run` on the same prompt, the error paths
# (400/401/403/404/405/413/503), a client that disconnects mid-stream, a
# bounded fuzz of bodies; then by the official `openai` and
# `@anthropic-ai/sdk` npm packages (tests/cli/lib/serve_sdk.cjs; installed
# once into build/npm, or $SLUICE_NPM_DIR; skipped without node/npm or
# network); a clean exit on SIGTERM; --prompt-cache DIR across restarts
# (same text, cached_tokens, faster; corrupt and foreign files refused with a
# log line) and /slots/ID?action=save|restore in --slot-save-path (round
# trip, path traversal refused). The server is stopped on any exit.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve

M=$work/m.gguf
KEY=test-key-13
PROMPT="Once upon a time"
N=16
serve_model "$M" --arch qwen3moe --preset tiny-k --layers 12 --seed 5
timeout 120 "$SLUICE" run -m "$M" -p "$PROMPT" -n $N --temp 0 -c 2048 >"$work/run.txt" 2>"$work/run.err" ||
    bad "sluice run for the reference text: $(tail -c 300 "$work/run.err")"

if ! serve_start srv -m "$M" -c 2048 --api-key "$KEY" --max-queue 0 --max-body 262144 \
    -t 2; then
    finish
    exit 1
fi
port=$serve_port
pid=$serve_pid
ok "the server starts and says where it listens"
if grep -q "model m.gguf: qwen3moe" "$work/srv.err" && grep -q "memory: budget" "$work/srv.err"; then
    ok "the start-up line names the model and the memory plan"
else
    bad "start-up line: $(head -c 400 "$work/srv.err")"
fi

expected_clients=1
serve_relay < <(timeout 600 python3 tests/cli/lib/serve_client.py "$port" "$KEY" "$work/run.txt" "$PROMPT" $N 2>&1)

# the official clients (npm packages into build/npm, once; skipped offline)
if serve_sdks; then
    expected_clients=$((expected_clients + 1))
    serve_relay < <(NODE_PATH="$NPM_DIR/node_modules" timeout 300 node tests/cli/lib/serve_sdk.cjs \
             "$port" "$KEY" "$work/run.txt" "$PROMPT" $N 2>&1)
fi

kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
if [ $rc -eq 0 ] && grep -q "SIGTERM: stopping" "$work/srv.err"; then ok "SIGTERM stops the server cleanly (exit 0)"
else bad "SIGTERM: exit $rc, stderr: $(tail -c 600 "$work/srv.err")"; fi
# two slots: concurrent streams equal the same requests alone; a thinking
# template (the generation prompt opens <think>) on the same weights
printf '%s' "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n<think>\n' }}{%- endif %}{# enable_thinking </think> #}" >"$work/think.jinja"
python3 tests/cli/lib/gguf_set_template.py "$M" "$work/think.gguf" "$work/think.jinja" ||
    bad "writing a copy of the model with a thinking template"
serve_start srv2 -m "$work/think.gguf" -c 512 -np 2 --max-queue 4 -t 1 --cors http://ui.example
port=$serve_port
pid=$serve_pid
if [ -n "$port" ] && grep -q "chat template qwen3, 2 slots x 512 tokens" "$work/srv2.err"; then
    ok "-np 2: the start-up line says 2 slots x 512 tokens"
    expected_clients=$((expected_clients + 1))
    serve_relay < <(timeout 300 python3 tests/cli/lib/serve_parallel.py "$port" 2>&1)
else
    [ -n "$port" ] && bad "-np 2: the start-up line: $(tail -c 600 "$work/srv2.err")"
fi
kill -TERM "$pid"
wait "$pid"
pid=
cat "$work/srv2.err" >>"$work/srv.err"
if [ "$serve_finished" -eq "$expected_clients" ]; then ok "every client script ran to its end ($serve_finished)"
else bad "a client script stopped early ($serve_finished of $expected_clients finished)"; fi


# ---- --prompt-cache DIR across restarts, slot save / restore ---------------------------
# a long system prompt: the first request evaluates it and saves it (and the
# whole prompt) in pc/; after a restart the same request restores it from
# disk (same text, cached_tokens, faster); a corrupt file is refused with a
# log line and the request answered cold with the same text
mkdir -p "$work/pc" "$work/slots"
start_pc() { # start_pc NAME [MODEL]: a server with the prompt cache, log $work/NAME.err; sets pid and port
    serve_start "$1" -m "${2:-$M}" -c 2048 -t 2 --prompt-cache "$work/pc" \
        --slot-save-path "$work/slots"
    pid=$serve_pid
    port=$serve_port
}
stop_pc() {
    kill -TERM "$pid"
    wait "$pid"
    pid=
}
pc_client() { # pc_client MODE: one timed request, its result as "text<TAB>cached<TAB>prompt<TAB>seconds"
    python3 - "$port" "$1" <<'PY'
import json, sys, time, urllib.request
port, mode = sys.argv[1], sys.argv[2]
system = " ".join("clause %d: the weir keeper logs the water at dawn and dusk." % i for i in range(25))
user = "What did the keeper log?" if mode != "other" else "Who keeps the weir?"
body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "max_tokens": 8, "temperature": 0}
req = urllib.request.Request("http://127.0.0.1:%s/v1/chat/completions" % port, json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
t0 = time.time()
js = json.load(urllib.request.urlopen(req, timeout=300))
dt = time.time() - t0
print("%s\t%d\t%d\t%.4f" % (json.dumps(js["choices"][0]["message"]["content"]),
      js["usage"]["prompt_tokens_details"]["cached_tokens"], js["usage"]["prompt_tokens"], dt))
PY
}
slot_post() { # slot_post ID ACTION BODY: prints "status body"
    python3 - "$port" "$1" "$2" "$3" <<'PY'
import sys, urllib.request, urllib.error
port, sid, action, body = sys.argv[1:5]
url = "http://127.0.0.1:%s/slots/%s?action=%s" % (port, sid, action)
req = urllib.request.Request(url, body.encode(), {"Content-Type": "application/json"})
try:
    r = urllib.request.urlopen(req, timeout=120)
    print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}
field() { printf '%s' "$1" | cut -f"$2"; }

start_pc pc1
cold=$(pc_client same)
stop_pc
n_files=$(ls "$work/pc" | grep -c '\.state$')
check "prompt cache: the first request saved its first turn and whole prompt ($n_files files)" [ "$n_files" -eq 2 ]
check "prompt cache: no temporary file left in the directory" bash -c "! ls -a '$work/pc' | grep -q tmp"
start_pc pc2
check "prompt cache: after a restart the server finds the 2 saved prefixes" \
    grep -q "prompt cache in .*: 2 saved prefixes" "$work/pc2.err"
warm=$(pc_client same)
other=$(pc_client other)
echo "prompt cache: cold $(field "$cold" 4) s, after restart $(field "$warm" 4) s (prompt $(field "$cold" 3) tokens)"
check "prompt cache: after a restart, the same text as the cold request" [ "$(field "$warm" 1)" = "$(field "$cold" 1)" ]
# (its last token evaluated again, so that poisoned rows would show: issue 29 N5)
check "prompt cache: after a restart, the whole prompt came from disk (cached $(field "$warm" 2) of $(field "$warm" 3))" \
    [ "$(field "$warm" 2)" = "$(($(field "$warm" 3) - 1))" ]
check "prompt cache: the cold request had nothing cached ($(field "$cold" 2))" [ "$(field "$cold" 2)" = 0 ]
check "prompt cache: after a restart the request is faster ($(field "$warm" 4) s < $(field "$cold" 4) s)" \
    python3 -c "import sys; sys.exit(0 if $(field "$warm" 4) < $(field "$cold" 4) else 1)"
check "prompt cache: another question reuses the saved system prompt (cached $(field "$other" 2))" \
    [ "$(field "$other" 2)" -gt 100 ]

# slot save / restore: the slot now holds the "other" conversation
r=$(slot_post 0 save '{"filename": "conv.bin"}')
check "slot save: 200 and the file is in --slot-save-path ($r)" \
    bash -c "[ '${r%% *}' = 200 ] && [ -s '$work/slots/conv.bin' ]"
pc_client same >/dev/null # the slot moves on to another prompt
r=$(slot_post 0 restore '{"filename": "conv.bin"}')
check "slot restore: 200 with the saved token count ($r)" \
    bash -c "[ '${r%% *}' = 200 ] && printf '%s' '$r' | grep -q '\"n_restored\": *[1-9]'"
again=$(pc_client other)
check "slot restore: the restored conversation is reused and answers the same" \
    bash -c "[ '$(field "$again" 1)' = '$(field "$other" 1)' ] && [ $(field "$again" 2) -ge $(($(field "$other" 3) - 1)) ]"
for name in '../conv.bin' 'a/b' '..' '' '/etc/passwd'; do
    r=$(slot_post 0 save "{\"filename\": \"$name\"}")
    check "slot save refuses the file name '$name' with 400" [ "${r%% *}" = 400 ]
    r=$(slot_post 0 restore "{\"filename\": \"$name\"}")
    check "slot restore refuses the file name '$name' with 400" [ "${r%% *}" = 400 ]
done
check "no file was written outside --slot-save-path" [ ! -e "$work/conv.bin" ]
r=$(slot_post 0 restore '{"filename": "missing.bin"}')
check "slot restore of a missing file: 404" [ "${r%% *}" = 404 ]
r=$(slot_post 7 save '{"filename": "x.bin"}')
check "slot save of a slot that does not exist: 404" [ "${r%% *}" = 404 ]
r=$(slot_post 0 jump '{"filename": "x.bin"}')
check "an unknown slot action: 400" [ "${r%% *}" = 400 ]
cp "$work/slots/conv.bin" "$work/slots/bad.bin"
printf 'garbage' | dd of="$work/slots/bad.bin" bs=1 seek=300 conv=notrunc 2>/dev/null
r=$(slot_post 0 restore '{"filename": "bad.bin"}')
check "slot restore of a corrupt file: 400 naming the checksum" \
    bash -c "[ '${r%% *}' = 400 ] && printf '%s' '$r' | grep -q checksum"
stop_pc

# a corrupt cache file: refused with a log line, the request answered cold
for f in "$work"/pc/*.state; do
    size=$(stat -c %s "$f")
    printf '\x5a' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
done
start_pc pc3
bad_run=$(pc_client same)
stop_pc
check "prompt cache: a corrupt file is refused with a log line" \
    grep -q "prompt cache: session file .* refused: corrupt" "$work/pc3.err"
check "prompt cache: after the refusal, the same text as the cold request" [ "$(field "$bad_run" 1)" = "$(field "$cold" 1)" ]
check "prompt cache: nothing was taken from the corrupt files (cached $(field "$bad_run" 2))" [ "$(field "$bad_run" 2)" = 0 ]
# a foreign file: another model of the same file name and size (another seed)
# finds the files by name, and each is refused as made for another model
mkdir -p "$work/other"
if "$SLUICE" mkmodel --arch qwen3moe --preset tiny-k --layers 12 --seed 6 -q -o "$work/other/m.gguf"; then
    start_pc pc4 "$work/other/m.gguf"
    foreign_run=$(pc_client same)
    stop_pc
    check "prompt cache: a file made for another model is refused with a log line" \
        grep -q "prompt cache: session file .* refused: made for another model" "$work/pc4.err"
    check "prompt cache: nothing was taken from the foreign file (cached $(field "$foreign_run" 2))" \
        [ "$(field "$foreign_run" 2)" = 0 ]
else
    bad "mkmodel of the other model"
fi
cat "$work"/pc[1234].err >>"$work/srv.err"

if grep -q "ERROR: \|runtime error\|ThreadSanitizer" "$work/srv.err"; then bad "sanitizer reports: $(grep -m3 -A30 'ERROR: \|runtime error\|ThreadSanitizer' "$work/srv.err")"
else ok "no sanitizer report from the server"; fi
finish
