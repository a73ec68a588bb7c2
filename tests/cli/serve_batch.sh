#!/usr/bin/env bash
# `sluice serve -np 4` continuous batching (issue 13): the decode steps of
# every busy slot run as one forward pass and a new prompt is evaluated in
# chunks beside them (tests/cli/lib/serve_batch.py): each request's text,
# greedy or sampled with a seed, equals the same request served by a
# one-slot server, with all four at once and with a late joiner, and
# /metrics shows steps of several slots. Twice: a qwen3moe model and a
# gemma4 one (sandwich-norm layers batch too).
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve-batch
# qwen3moe (pre-norm layers), then gemma4 (sandwich norms, v from k, sliding rings)
for arch in qwen3moe gemma4; do
    M=$work/$arch.gguf
    case $arch in
    qwen3moe) preset="--preset tiny-k --layers 6" ;;
    *) preset="--preset tiny" ;;
    esac
    # shellcheck disable=SC2086
    if ! "$SLUICE" mkmodel --arch "$arch" $preset --seed 9 -q -o "$M"; then
        bad "mkmodel $arch"
        continue
    fi
    if serve_start "solo-$arch" -m "$M" -c 1024 -np 1 -t 2; then
        solo=$serve_port
        if serve_start "batch-$arch" -m "$M" -c 1024 -np 4 -t 2 --batch-step 24; then
            timeout 300 python3 tests/cli/lib/serve_batch.py "$solo" "$serve_port" >"$work/py.out" 2>&1
            rc=$?
            serve_relay "$arch: " <"$work/py.out"
            [ $rc -eq 0 ] || bad "$arch: serve_batch.py exited $rc: $(tail -c 600 "$work/py.out")"
            kill -0 "$serve_pid" 2>/dev/null && ok "$arch: the four-slot server is still running" ||
                bad "$arch: the four-slot server died: $(tail -c 600 "$work/batch-$arch.err")"
        fi
    fi
done
finish
