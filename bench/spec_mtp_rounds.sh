#!/usr/bin/env bash
# bench/spec_mtp_rounds.sh MODEL [ROUNDS] [CACHE]: decode speed with and
# without the MTP drafter. Each round runs every configuration once, in an
# order rotated every round, under `flock /work/timing.lock` (one round at a
# time): plain, `--spec-type draft-mtp` (default policy), and with
# `--draft-always` at --draft-max 1 and 3; resident (--no-stream) and
# streamed (--moe-stream --cache-experts CACHE, default 40, --no-warm). All
# greedy, 480 tokens after "Once upon a time", one thread. Prints one line a
# configuration: the median tok/s over rounds (the `generated:` line: tokens
# over the generation's wall time), its ratio to plain of the same mode, and
# the last run's acceptance by position. SLUICE picks the binary; MODES and
# CFGS pick a subset (CFGS may add `md`: `-md DRAFT`, default the
# q4_k_m file beside MODEL).
set -eu
MODEL=${1:?usage: bench/spec_mtp_rounds.sh MODEL [ROUNDS] [CACHE]}
ROUNDS=${2:-9}
CACHE=${3:-40}
here=$(cd "$(dirname "$0")" && pwd)
SLUICE=${SLUICE:-$here/../build/rel/sluice}
DRAFT=${DRAFT:-$(dirname "$MODEL")/glm4moe-stories-q4_k_m.gguf}
LOCK=${LOCK:-/work/timing.lock}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-mtp-XXXXXX")
trap 'rm -rf "$work"' EXIT
read -ra cfgs <<<"${CFGS:-plain mtp always1 always3}"
read -ra modes <<<"${MODES:-resident streamed}"
run_one() { # run_one MODE CFG OUT
    local a=(-m "$MODEL" -p "Once upon a time" -n 480 -c 512 --temp 0 -t 1 --stats)
    [ "$1" = resident ] && a+=(--no-stream) || a+=(--moe-stream --cache-experts "$CACHE" --no-warm)
    case $2 in
    mtp) a+=(--spec-type draft-mtp) ;;
    always1) a+=(--spec-type draft-mtp --draft-always --draft-max 1) ;;
    always3) a+=(--spec-type draft-mtp --draft-always --draft-max 3) ;;
    md) a+=(-md "$DRAFT") ;;
    esac
    "$SLUICE" run "${a[@]}" >/dev/null 2>"$3"
}
export -f run_one
export MODEL CACHE SLUICE DRAFT
for r in $(seq 1 "$ROUNDS"); do
    list=()
    for m in "${modes[@]}"; do for c in "${cfgs[@]}"; do list+=("$m:$c"); done; done
    n=${#list[@]}; k=$((r % n))
    order=("${list[@]:k}" "${list[@]:0:k}")
    for mc in "${order[@]}"; do echo "$mc"; done > "$work/order"
    flock "$LOCK" bash -c '
        while read -r mc; do run_one "${mc%%:*}" "${mc#*:}" "$0/${mc/:/-}.$1" </dev/null; done < "$0/order"' "$work" "$r"
done
echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"
for m in "${modes[@]}"; do
    base=
    for c in "${cfgs[@]}"; do
        med=$(for f in "$work/$m-$c".*; do sed -n 's/^generated: .*(\s*\([0-9.]*\) tok\/s)$/\1/p' "$f"; done |
            sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}')
        [ -z "$base" ] && base=$med
        last=$(ls "$work/$m-$c".* | tail -1)
        acc=$(grep -E '^draft: .*(drafted|held by)' "$last" | sed 's/^draft: *//' | tr '\n' ' ')
        printf '%-9s %-8s %8.0f tok/s  %.2fx  %s\n' "$m" "$c" "$med" "$(echo "$med / $base" | bc -l)" "$acc"
    done
done
