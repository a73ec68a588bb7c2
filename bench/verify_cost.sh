#!/usr/bin/env bash
# bench/verify_cost.sh MODEL [ROUNDS] [LIMIT_MB]: the break-even table of
# speculative decoding on MODEL (bench/verify_cost.c): verify steps of 1..5
# positions against one token, resident (--no-stream) and streamed inside a
# fresh LIMIT_MB memory cgroup (default 2048), each with drafts that hold
# (the greedy continuation) and drafts that fail (random ids), one after
# the other. Needs root (cgroup); timed: run it under
# `flock /work/timing.lock`.
set -eu
MODEL=${1:?usage: bench/verify_cost.sh MODEL [ROUNDS] [LIMIT_MB]}
ROUNDS=${2:-24}
LIMIT=${3:-2048}
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../build/rel/bench/verify_cost
[ -x "$bin" ] || make -C "$here/.." build/rel/bench/verify_cost >/dev/null
for drafts in "" --random; do
    # shellcheck disable=SC2086 # an empty $drafts is no argument
    "$bin" "$MODEL" -r "$ROUNDS" --no-stream $drafts
    # shellcheck disable=SC2086
    "$here/cgroup_run.sh" "$LIMIT" "$bin" "$MODEL" -r "$ROUNDS" $drafts
done
