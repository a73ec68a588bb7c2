#!/usr/bin/env bash
# bench/pair_old_new.sh OLD_SLUICE NEW_SLUICE MODEL [ROUNDS]: two binaries
# timed in alternated pairs (old, new, then new, old in the next round, so a
# drift of the machine's load falls on both), resident pp128/tg16 and a
# streamed tg32 in a 1,200 MiB budget, 2 threads. Prints each run's tok/s
# lines and the load; run it under `flock /work/timing.lock`.
set -u
OLD=${1:?usage: bench/pair_old_new.sh OLD_SLUICE NEW_SLUICE MODEL [ROUNDS]}
NEW=${2:?new binary}
M=${3:?model}
ROUNDS=${4:-3}
one() {
    echo "== round $1 $2 load $(cut -d' ' -f1 /proc/loadavg)"
    "$3" bench -m "$M" -p 128 -n 16 -r 2 -t 2 --no-stream 2>/dev/null | grep -E "pp128|tg16"
    "$3" bench -m "$M" -p 0 -n 32 -r 2 -t 2 --moe-stream --mem-budget 1200 --no-warm 2>/dev/null |
        grep -E "tg32"
}
for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
        one "$r" OLD "$OLD"; one "$r" NEW "$NEW"; one "$r" NEW "$NEW"; one "$r" OLD "$OLD"
    else
        one "$r" NEW "$NEW"; one "$r" OLD "$OLD"; one "$r" OLD "$OLD"; one "$r" NEW "$NEW"
    fi
done
