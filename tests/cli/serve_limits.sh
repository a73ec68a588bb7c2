#!/usr/bin/env bash
# `sluice serve` serves everyone (issue 29, N2, N3, N7): with the default
# limits, 64, 200 and 1,000 idle connections and a slowloris of 200 leave
# /health and a chat answering within a second, and one client address past
# its cap is refused while others are served; with --timeout 1 idle and
# stalled connections and a head sent a byte at a time are closed while
# replies that wait longer than that for generation arrive whole; a chunked
# body past --max-body gets 413 as soon as it passes it; conflicting lengths, a malformed or missing Host and
# a garbage request line are refused (tests/cli/lib/serve_limits.py).
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve-limits
M=$work/m.gguf
serve_model "$M" --arch qwen3moe --preset tiny-k --layers 2 --seed 3
client() { PYTHONPATH=tests/cli/lib timeout 180 python3 tests/cli/lib/serve_limits.py "$@"; }

if serve_start defaults -m "$M" -c 512 -t 1; then
    serve_relay "defaults: " < <(client flood "$serve_port" "$serve_pid" 2>&1)
    serve_relay "defaults: " < <(client strict "$serve_port" 2>&1)
    serve_stop "$serve_pid"
fi
if serve_start short -m "$M" -c 4096 -t 1 --timeout 1 --max-body 65536; then
    serve_relay "short: " < <(client timeout "$serve_port" 2>&1)
    serve_relay "short: " < <(client body "$serve_port" 2>&1)
    serve_stop "$serve_pid"
fi
if [ "$serve_finished" -ne 4 ]; then
    bad "a client stopped early ($serve_finished of 4 finished)"
fi
"$SLUICE" serve -m "$M" --timeout -1 >/dev/null 2>"$work/flag.err"
if [ $? -eq 2 ] && grep -q -- "--timeout" "$work/flag.err"; then
    ok "--timeout -1 is refused naming the flag"
else
    bad "--timeout -1: $(cat "$work/flag.err")"
fi
finish
