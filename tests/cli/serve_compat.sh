#!/usr/bin/env bash
# `sluice serve` as real front-ends use it (issue 13; docs/server.md's compatibility
# table): the fields Open WebUI, LibreChat, SillyTavern, Continue, Cline/Roo,
# aider (litellm) and Claude Code send are accepted, ignored or refused with a
# clear 4xx in each API's error shape (tests/cli/lib/serve_compat.py: each
# check asserts the status and a field of the answer); llama-server's /props
# and /completion; HEAD and CORS preflights; bodies too large, of the wrong
# type, or not UTF-8; max_tokens beyond the context; and requests that arrive
# while the model is still loading get 503 until it is ready
# (tests/cli/lib/serve_loading.py, which starts its own server); Anthropic
# "thinking" on a thinking template (tests/cli/lib/serve_compat_think.py). The same
# fields through the official `openai` and `@anthropic-ai/sdk` clients
# (tests/cli/lib/serve_compat_sdk.cjs) when npm can install them.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve-compat
M=$work/m.gguf
CTX=1024
ORIGIN=http://ui.example:3000
serve_model "$M" --arch qwen3moe --preset tiny-k --layers 2 --seed 5
# with llama-server's usual flags, which sluice takes (app/llama_flags.c)
if serve_start compat -m "$M" -c $CTX -n 8 --chat-template qwen3 --max-body 65536 --cors "$ORIGIN" -t 2 \
    --jinja -fa on -ngl 99 -cb; then
    check "llama-server's --jinja -fa on -ngl 99 -cb: taken, -ngl with a note" \
        grep -q "note: -ngl 99 is ignored" "$work/compat.err"
    timeout 300 python3 tests/cli/lib/serve_compat.py "$serve_port" $CTX "$ORIGIN" >"$work/py.out" 2>&1
    rc=$?
    serve_relay <"$work/py.out"
    [ $rc -eq 0 ] || bad "serve_compat.py exited $rc: $(tail -c 600 "$work/py.out")"
    check "serve_compat.py ran to its end" grep -q '^client-finished' "$work/py.out"
    # the same fields through the official clients (installed as tests/cli/serve.sh does;
    # skipped without node/npm or network)
    if serve_sdks; then
        NODE_PATH="$NPM_DIR/node_modules" timeout 300 node tests/cli/lib/serve_compat_sdk.cjs \
            "$serve_port" $CTX >"$work/sdk.out" 2>&1
        serve_relay <"$work/sdk.out"
        check "serve_compat_sdk.cjs ran to its end" grep -q '^client-finished' "$work/sdk.out"
    fi
    serve_stop "$serve_pid"
    if grep -q "ERROR: \|runtime error\|ThreadSanitizer" "$work/compat.err"; then
        bad "sanitizer reports: $(grep -m3 -A30 "ERROR: \|runtime error\|ThreadSanitizer" "$work/compat.err")"
    else
        ok "no sanitizer report from the server"
    fi
fi

# Anthropic "thinking" on a thinking template (the generation prompt opens <think>)
printf '%s' "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n<think>\n' }}{%- endif %}{# enable_thinking </think> #}" >"$work/think.jinja"
if python3 tests/cli/lib/gguf_set_template.py "$M" "$work/think.gguf" "$work/think.jinja" &&
    serve_start think -m "$work/think.gguf" -c $CTX -t 2; then
    timeout 300 python3 tests/cli/lib/serve_compat_think.py "$serve_port" >"$work/think.out" 2>&1
    rc=$?
    serve_relay <"$work/think.out"
    [ $rc -eq 0 ] && grep -q '^client-finished' "$work/think.out" ||
        bad "serve_compat_think.py exited $rc: $(tail -c 600 "$work/think.out")"
    serve_stop "$serve_pid"
    check "no sanitizer report from the thinking server" \
        bash -c "! grep -q 'ERROR: \|runtime error\|ThreadSanitizer' '$work/think.err'"
else
    bad "a server on a copy of the model with a thinking template"
fi

# requests while the model loads: a larger model, so that loading takes a while
L=$work/load.gguf
serve_model "$L" --arch qwen3moe --preset tiny-k --layers 24 --seed 7
timeout 300 python3 tests/cli/lib/serve_loading.py "$SLUICE" "$L" "$work/load.err" >"$work/load.out" 2>&1
rc=$?
serve_relay <"$work/load.out"
[ $rc -eq 0 ] || bad "serve_loading.py exited $rc: $(tail -c 600 "$work/load.out")"
finish
