#!/usr/bin/env bash
# `sluice serve` forcing tool_choice (issue 13): OpenAI "required" and
# {"type": "function", "function": {"name": X}}, Anthropic {"type": "any"}
# and {"type": "tool", "name": X} end the prompt with the qwen3 template's
# call opening (and X's name), so the model continues inside a call
# (checked through /apply-template and count_tokens); "none" leaves the
# tools out; unknown names and malformed choices are 400s; forced requests
# are answered (tests/cli/lib/serve_tool_choice.py). The generated model's
# random weights cannot be relied on to close a call, so the parsed call
# itself is not asserted here.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve-tc
M=$work/m.gguf
serve_model "$M" --arch qwen3moe --preset tiny-k --layers 2 --seed 5
if serve_start tc -m "$M" -c 1024 --chat-template qwen3 -t 2; then
    timeout 120 python3 tests/cli/lib/serve_tool_choice.py "$serve_port" >"$work/py.out" 2>&1
    rc=$?
    serve_relay <"$work/py.out"
    [ $rc -eq 0 ] || bad "serve_tool_choice.py exited $rc: $(tail -c 600 "$work/py.out")"
fi
finish
