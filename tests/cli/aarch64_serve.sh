#!/usr/bin/env bash
# `sluice serve` of the static aarch64 build (libmicrohttpd without TLS,
# scripts/aarch64-sysroot.sh) under qemu-aarch64 on a loopback port, driven
# from the host by the official `openai` and `@anthropic-ai/sdk` clients
# (tests/cli/lib/serve_sdk.cjs, as tests/cli/serve.sh drives the x86
# server): the greedy completion equals the x86 build's `sluice run` text,
# chat, streaming, Anthropic messages and the error statuses parse in both
# clients. Also: --host takes numeric addresses only (no name lookups in a
# static binary): a host name is refused with one line, and [::1] is
# accepted as a loopback address. A tiny model keeps it to seconds under
# qemu. Skipped (0 passed) without build/aarch64/sluice, qemu-aarch64 or
# the npm clients.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/aarch64.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup a64-serve
# serve_start runs "$SLUICE" serve: here the aarch64 binary under qemu
printf '#!/bin/sh\nexec qemu-aarch64 -cpu max "%s" "$@"\n' "$(cd "$(dirname "$A64")" && pwd)/$(basename "$A64")" \
    >"$work/sluice-a64"
chmod +x "$work/sluice-a64"

M=$work/m.gguf
KEY=test-key-37
PROMPT="Once upon a time"
N=8
SLUICE=$X86 serve_model "$M" --arch qwen3moe --preset tiny --seed 5
timeout 120 "$X86" run -m "$M" -p "$PROMPT" -n $N --temp 0 -c 512 >"$work/run.txt" 2>"$work/run.err" ||
    bad "x86 sluice run for the reference text: $(tail -c 300 "$work/run.err")"

SLUICE=$work/sluice-a64
"$SLUICE" serve -m "$M" --host localhost.example --port 0 >/dev/null 2>"$work/name.err"
rc=$?
check "aarch64 serve: a host name is refused (exit $rc) with one line, no lookup" \
    sh -c "[ $rc -ne 0 ] && grep -q \"not a numeric address\" '$work/name.err' && [ \$(wc -l <'$work/name.err') -le 3 ]"

if serve_start a64 -m "$M" -c 512 --host 127.0.0.1 --api-key "$KEY" -t 2; then
    ok "the aarch64 server starts under qemu on 127.0.0.1"
    if serve_sdks; then
        serve_relay "aarch64: " < <(NODE_PATH="$NPM_DIR/node_modules" timeout 300 node \
            tests/cli/lib/serve_sdk.cjs "$serve_port" "$KEY" "$work/run.txt" "$PROMPT" $N 2>&1)
        check "the client script ran to its end" [ "$serve_finished" -eq 1 ]
    fi
    serve_stop "$serve_pid"
    check "SIGTERM stops the aarch64 server cleanly" grep -q "SIGTERM: stopping" "$work/a64.err"
fi
if serve_start v6 -m "$M" -c 512 --host '[::1]' -t 1; then
    code=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://[::1]:$serve_port/health').status)" 2>&1)
    check "the aarch64 server listens on [::1] (/health $code)" [ "$code" = 200 ]
    serve_stop "$serve_pid"
fi
finish
