#!/usr/bin/env bash
# bench/spec_pays.sh MODEL [PAIRS] [LIMIT_MB]: does `--spec-type
# ngram-simple` (drafting only while it pays) ever run slower than drafting
# off? For each configuration, PAIRS pairs of runs without and with
# drafting, the order swapped every pair: resident (--no-stream) and
# streamed inside a fresh LIMIT_MB memory cgroup (default 2048), each with
# greedy decoding of a repeating prompt (drafts hold), sampling at the
# default temperature on it (drafts mostly fail) and sampling at 1.5 with
# no top-k from "Once upon a time" (bench/decode_pair.sh's run). One line a
# configuration: tok/s off and on per pair, the ratio of the sums, and the
# drafting run's --stats draft figures. SLUICE picks the binary (default
# build/rel/sluice); WHERE (resident streamed) and CFGS (greedy sampled
# hot) pick a subset. Needs root (cgroup); timed: run it under
# `flock /work/timing.lock`.
set -eu
MODEL=${1:?usage: bench/spec_pays.sh MODEL [PAIRS] [LIMIT_MB]}
PAIRS=${2:-2}
LIMIT=${3:-2048}
here=$(cd "$(dirname "$0")" && pwd)
SLUICE=${SLUICE:-$here/../build/rel/sluice}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-pays-XXXXXX")
trap 'rm -rf "$work"' EXIT
REP="The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The cat"
tok_s() { sed -n 's/^generated: .*(\s*\([0-9.]*\) tok\/s)$/\1/p' "$1"; }
one() { # one WHERE OUT ARGS...: one run, its stderr in OUT
    local where=$1 out=$2
    shift 2
    if [ "$where" = resident ]; then
        "$SLUICE" run -m "$MODEL" --no-stream "$@" >/dev/null 2>"$out"
    else
        "$here/cgroup_run.sh" "$LIMIT" "$SLUICE" run -m "$MODEL" "$@" >/dev/null 2>"$out"
    fi
}
read -ra wheres <<<"${WHERE:-resident streamed}"
read -ra cfgs <<<"${CFGS:-greedy sampled hot}"
for where in "${wheres[@]}"; do
    for cfg in "${cfgs[@]}"; do
        case $cfg in
        greedy) args=(-p "$REP" -n 64 --temp 0 --ignore-eos) ;;
        sampled) args=(-p "$REP" -n 64 --seed 7 --ignore-eos) ;;
        hot) args=(-p "Once upon a time" -n 96 --temp 1.5 --top-k 0 --seed 7 --ignore-eos) ;;
        esac
        args+=(-t 2 --no-warm --stats)
        off_sum=0 on_sum=0 line="$where $cfg:"
        for p in $(seq 1 "$PAIRS"); do
            for side in $( [ $((p % 2)) -eq 1 ] && echo "off on" || echo "on off"); do
                if [ "$side" = on ]; then
                    one "$where" "$work/on" "${args[@]}" --spec-type ngram-simple
                else
                    one "$where" "$work/off" "${args[@]}"
                fi
            done
            a=$(tok_s "$work/off") b=$(tok_s "$work/on")
            off_sum=$(python3 -c "print($off_sum + $a)") on_sum=$(python3 -c "print($on_sum + $b)")
            line="$line $a/$b"
        done
        echo "$line tok/s (off/on); ratio $(python3 -c "print('%.3f' % ($on_sum / $off_sum))")"
        grep '^draft:' "$work/on" | sed 's/^/    /'
    done
done
