#!/usr/bin/env bash
# `sluice.exe serve` (make windows) under wine on a loopback port, driven
# from Linux: the official `openai` and `@anthropic-ai/sdk` clients
# (tests/cli/lib/serve_sdk.cjs) get the Linux build's `sluice run` text for
# a greedy completion, chat, streaming, Anthropic messages and the error
# statuses (400, 401) from the exe; the same clients ask the exe and the
# Linux server the same requests, plain and streamed, greedy and sampled,
# and get the same texts (tests/cli/lib/serve_twins.cjs); with --timeout 1
# and --max-body 65536 the exe closes idle and stalled connections and a
# request head sent a byte at a time (winsock shutdown), answers a chunked
# body past the limit with a 413 written straight to the socket, and
# refuses malformed requests with 4xx (tests/cli/lib/serve_limits.py);
# Ctrl-C (wine turns SIGINT into the console's CTRL_C_EVENT) stops it
# cleanly, exit status 0. Skipped (0 passed) when build/windows/sluice.exe,
# wine or the Linux build is missing; the client checks also without
# node and the npm clients.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/wine.sh"
serve_setup win-serve
# serve_start runs "$SLUICE" serve: the exe under wine (exec: the pid is the exe's)
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$WINE" "$(cd "$(dirname "$EXE")" && pwd)/$(basename "$EXE")" \
    >"$work/sluice-win"
chmod +x "$work/sluice-win"

M=$work/m.gguf
KEY=test-key-31
PROMPT="Once upon a time"
N=8
SLUICE=$X86 serve_model "$M" --arch qwen3moe --preset tiny --seed 5
timeout 60 "$X86" run -m "$M" -p "$PROMPT" -n $N --temp 0 -c 512 >"$work/run.txt" 2>"$work/run.err" ||
    bad "Linux sluice run for the reference text: $(tail -c 300 "$work/run.err")"

lin_pid=
if SLUICE=$X86 serve_start lin -m "$M" -c 512 --api-key "$KEY" -t 1; then
    lin_pid=$serve_pid lin_port=$serve_port
fi
if SLUICE=$work/sluice-win serve_start win -m "$M" -c 512 --api-key "$KEY" -t 1; then
    ok "the exe's server starts under wine on 127.0.0.1"
    win_pid=$serve_pid
    if serve_sdks; then
        serve_relay "exe: " < <(NODE_PATH="$NPM_DIR/node_modules" timeout 120 node \
            tests/cli/lib/serve_sdk.cjs "$serve_port" "$KEY" "$work/run.txt" "$PROMPT" $N 2>&1)
        check "the official clients' script ran to its end" [ "$serve_finished" -eq 1 ]
        if [ -n "$lin_pid" ]; then
            serve_relay "Linux and exe: " < <(NODE_PATH="$NPM_DIR/node_modules" timeout 120 node \
                tests/cli/lib/serve_twins.cjs "$lin_port" "$serve_port" "$KEY" "" 2>&1)
            check "the twin clients' script ran to its end" [ "$serve_finished" -eq 2 ]
        fi
    fi
    kill -INT "$win_pid"
    wait "$win_pid"
    rc=$?
    check "Ctrl-C stops the exe's server cleanly (exit $rc)" \
        eval '[ $rc -eq 0 ] && grep -q "Ctrl-C: stopping" "$work/win.err"'
fi
[ -n "$lin_pid" ] && serve_stop "$lin_pid"

# the connection limits through winsock
if SLUICE=$work/sluice-win serve_start limits -m "$M" -c 512 -t 1 --timeout 1 --max-body 65536; then
    before=$serve_finished
    for mode in deadline body strict; do
        serve_relay "exe: " < <(PYTHONPATH=tests/cli/lib timeout 60 python3 \
            tests/cli/lib/serve_limits.py $mode "$serve_port" 2>&1)
    done
    check "the three connection-limit clients ran to their ends" \
        [ "$serve_finished" -eq $((before + 3)) ]
    kill -INT "$serve_pid"
    wait "$serve_pid"
fi
finish
