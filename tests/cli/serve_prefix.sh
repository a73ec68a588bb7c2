#!/usr/bin/env bash
# Prompt reuse from any slot (issue 32): with -np 4, chat requests that
# share a long system prompt reuse it whichever slot takes them: the slot
# holding the longest prefix, or any other through the prompt cache in
# memory (--cache-ram), or after a restart through --prompt-cache DIR.
# Each such answer reports cached tokens and is byte-identical to the
# same request answered by a fresh server with no cache at all. For a
# qwen3moe (attention), a qwen35moe (gated DeltaNet: restored only where a
# kept state ends) and a gpt-oss (sliding-window rings) generated model;
# on qwen3moe also the Anthropic and llama-server dialects' counts, and
# --cache-ram 0 (no reuse across slots).
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve-prefix
client=tests/cli/lib/serve_prefix.py

"$SLUICE" serve --help 2>&1 | grep -q -- "--cache-ram MB"
check "serve --help documents --cache-ram" [ $? -eq 0 ]

"$SLUICE" serve -m "$work/none.gguf" --cache-ram lots >/dev/null 2>"$work/badflag.err"
rc=$?
check "a bad --cache-ram value is refused before loading (exit $rc, one line)" \
    bash -c "[ $rc = 2 ] && grep -q -- '--cache-ram' '$work/badflag.err' && [ \$(wc -l <'$work/badflag.err') = 1 ]"

cached() { cat "$1.cached" 2>/dev/null || echo 0; }

run_client() { # run_client LABEL ARGS...: the client's report counted
    local label=$1
    shift
    timeout 300 python3 "$client" "$@" >"$work/py.out" 2>&1
    local rc=$?
    serve_relay "$label: " <"$work/py.out"
    [ $rc -eq 0 ] || bad "$label: client exited $rc: $(tail -c 400 "$work/py.out")"
}

for arch in qwen3moe qwen35moe gpt-oss; do
    M=$work/$arch.gguf
    serve_model "$M" --arch "$arch" --preset tiny --seed 11
    ref=$work/$arch-ref
    got=$work/$arch-got
    mkdir -p "$ref" "$got" "$work/$arch-pc"
    common=(-m "$M" -c 2048 -t 2)
    # fresh, cacheless servers: one per request compared
    for u in u2 u3 u4; do
        serve_start "$arch-ref-$u" "${common[@]}" -np 1 --cache-ram 0 || continue
        run_client "$arch ref $u" ask "$serve_port" "$ref" "$u"
        serve_stop "$serve_pid"
        check "$arch: the fresh server reused nothing for $u" [ "$(cached "$ref/$u")" = 0 ]
    done

    if serve_start "$arch-np4" "${common[@]}" -np 4 --prompt-cache "$work/$arch-pc"; then
        run_client "$arch -np 4" ask "$serve_port" "$got" u1 u2
        check "$arch: the second request reused the system prompt ($(cached "$got/u2") tokens)" \
            [ "$(cached "$got/u2")" -gt 0 ]
        check "$arch: its answer is the fresh server's" same_text "$ref/u2.txt" "$got/u2.txt"
        # u2 took u1's slot: the next one, from another slot, gets the prefix from memory
        run_client "$arch other slot" slots "$serve_port" "$got" u3
        check "$arch: another slot restored the prefix from memory ($(cached "$got/u3") tokens)" \
            [ "$(cached "$got/u3")" -gt 0 ]
        check "$arch: that answer is the fresh server's" same_text "$ref/u3.txt" "$got/u3.txt"
        [ "$arch" = qwen3moe ] && run_client "$arch dialects" dialects "$serve_port" "$got"
        serve_stop "$serve_pid"
        grep -Eq "prompt cache [1-9][0-9]* MiB" "$work/$arch-np4.err"
        check "$arch: the start-up line plans a prompt cache in memory by default" [ $? -eq 0 ]
        if [ "$arch" = qwen35moe ]; then
            grep -q "prompt cache: qwen35moe's recurrent layers" "$work/$arch-np4.err"
            check "$arch: one log line says which prefixes a recurrent model can reuse" [ $? -eq 0 ]
        fi
    fi

    # a restart: the disk cache, not memory, gives the system prompt to a new message
    if serve_start "$arch-restart" "${common[@]}" -np 4 --prompt-cache "$work/$arch-pc" --cache-ram 0; then
        run_client "$arch restart" ask "$serve_port" "$got" u4
        check "$arch: after a restart the saved prefix was reused ($(cached "$got/u4") tokens)" \
            [ "$(cached "$got/u4")" -gt 0 ]
        check "$arch: after a restart the answer is the fresh server's" same_text "$ref/u4.txt" "$got/u4.txt"
        serve_stop "$serve_pid"
    fi
done

# --cache-ram 0: a request on another slot evaluates the prompt again
M=$work/qwen3moe.gguf
mkdir -p "$work/off"
if serve_start off -m "$M" -c 2048 -t 2 -np 4 --cache-ram 0; then
    run_client "off" ask "$serve_port" "$work/off" u1
    timeout 300 python3 "$client" slots "$serve_port" "$work/off" u3 >/dev/null 2>&1
    check "--cache-ram 0: another slot reused nothing ($(cached "$work/off/u3") tokens)" \
        [ "$(cached "$work/off/u3")" = 0 ]
    check "--cache-ram 0: the same answer" same_text "$work/qwen3moe-ref/u3.txt" "$work/off/u3.txt"
    serve_stop "$serve_pid"
fi
grep -q "prompt cache 0 MiB" "$work/off.err"
check "--cache-ram 0: the start-up line plans no prompt cache" [ $? -eq 0 ]
finish
