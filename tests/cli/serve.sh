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
# network); a clean exit on SIGTERM. The server is stopped on any exit.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-serve-XXXXXX")
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
if ! command -v python3 >/dev/null; then
    bad "python3 is needed by this test"
    finish
    exit 1
fi

M=$work/m.gguf
KEY=test-key-13
PROMPT="Once upon a time"
N=16
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny-k --layers 12 --seed 5 -q -o "$M"; then
    bad "mkmodel"
    finish
    exit 1
fi
timeout 120 "$SLUICE" run -m "$M" -p "$PROMPT" -n $N --temp 0 -c 2048 >"$work/run.txt" 2>"$work/run.err" ||
    bad "sluice run for the reference text: $(tail -c 300 "$work/run.err")"

"$SLUICE" serve -m "$M" --port 0 -c 2048 --api-key "$KEY" --max-queue 0 --max-body 262144 \
    -t 2 >"$work/out" 2>"$work/err" &
pid=$!
port=
for _ in $(seq 1 600); do
    port=$(sed -n 's/^sluice serve: listening on http:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$work/err")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$port" ]; then
    bad "the server did not start: $(tail -c 600 "$work/err")"
    finish
    exit 1
fi
ok "the server starts and says where it listens"
if grep -q "model m.gguf: qwen3moe" "$work/err" && grep -q "memory: budget" "$work/err"; then
    ok "the start-up line names the model and the memory plan"
else
    bad "start-up line: $(head -c 400 "$work/err")"
fi

finished=0
expected_clients=1
while IFS= read -r line; do
    case $line in
    "ok   "*) ok "${line#ok   }" ;;
    "FAIL "*) bad "${line#FAIL }" ;;
    client-finished) finished=$((finished + 1)) ;;
    *) echo "$line" ;;
    esac
done < <(timeout 600 python3 tests/cli/lib/serve_client.py "$port" "$KEY" "$work/run.txt" "$PROMPT" $N 2>&1)

# the official clients (npm packages into build/npm, once; skipped offline)
NPM_DIR=${SLUICE_NPM_DIR:-$PWD/build/npm}
if command -v node >/dev/null && command -v npm >/dev/null; then
    if [ ! -d "$NPM_DIR/node_modules/openai" ] || [ ! -d "$NPM_DIR/node_modules/@anthropic-ai/sdk" ]; then
        mkdir -p "$NPM_DIR"
        timeout 300 npm install --prefix "$NPM_DIR" --no-audit --no-fund --silent \
            openai@4.104.0 @anthropic-ai/sdk@1.15.0 >"$work/npm.log" 2>&1 ||
            echo "note: npm install failed (offline?): the official-client checks are skipped"
    fi
    if [ -d "$NPM_DIR/node_modules/openai" ] && [ -d "$NPM_DIR/node_modules/@anthropic-ai/sdk" ]; then
        expected_clients=$((expected_clients + 1))
        while IFS= read -r line; do
            case $line in
            "ok   "*) ok "${line#ok   }" ;;
            "FAIL "*) bad "${line#FAIL }" ;;
            client-finished) finished=$((finished + 1)) ;;
            *) echo "$line" ;;
            esac
        done < <(NODE_PATH="$NPM_DIR/node_modules" timeout 300 node tests/cli/lib/serve_sdk.cjs \
                 "$port" "$KEY" "$work/run.txt" "$PROMPT" $N 2>&1)
    fi
else
    echo "note: node/npm not found: the official-client checks are skipped"
fi

kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
if [ $rc -eq 0 ] && grep -q "SIGTERM: stopping" "$work/err"; then ok "SIGTERM stops the server cleanly (exit 0)"
else bad "SIGTERM: exit $rc, stderr: $(tail -c 600 "$work/err")"; fi
# two slots: concurrent streams equal the same requests alone; a thinking
# template (the generation prompt opens <think>) on the same weights
printf '%s' "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n<think>\n' }}{%- endif %}{# enable_thinking </think> #}" >"$work/think.jinja"
python3 tests/cli/lib/gguf_set_template.py "$M" "$work/think.gguf" "$work/think.jinja" ||
    bad "writing a copy of the model with a thinking template"
"$SLUICE" serve -m "$work/think.gguf" --port 0 -c 512 -np 2 --max-queue 4 -t 1 --cors http://ui.example >"$work/out2" 2>"$work/err2" &
pid=$!
port=
for _ in $(seq 1 600); do
    port=$(sed -n 's/^sluice serve: listening on http:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$work/err2")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if [ -n "$port" ] && grep -q "chat template qwen3, 2 slots x 512 tokens" "$work/err2"; then
    ok "-np 2: the start-up line says 2 slots x 512 tokens"
    expected_clients=$((expected_clients + 1))
    while IFS= read -r line; do
        case $line in
        "ok   "*) ok "${line#ok   }" ;;
        "FAIL "*) bad "${line#FAIL }" ;;
        client-finished) finished=$((finished + 1)) ;;
        *) echo "$line" ;;
        esac
    done < <(timeout 300 python3 tests/cli/lib/serve_parallel.py "$port" 2>&1)
else
    bad "-np 2: the server did not start: $(tail -c 600 "$work/err2")"
fi
kill -TERM "$pid"
wait "$pid"
pid=
cat "$work/err2" >>"$work/err"
if [ "$finished" -eq "$expected_clients" ]; then ok "every client script ran to its end ($finished)"
else bad "a client script stopped early ($finished of $expected_clients finished)"; fi

if grep -q "ERROR: \|runtime error\|ThreadSanitizer" "$work/err"; then bad "sanitizer reports: $(grep -m3 -A30 'ERROR: \|runtime error\|ThreadSanitizer' "$work/err")"
else ok "no sanitizer report from the server"; fi
finish
