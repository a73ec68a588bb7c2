# moe_arch.sh - sourced (after common.sh) by the CLI tests of one generated
# MoE architecture (deepseek2.sh, deepseek4.sh): the end-to-end checks each
# model of theirs passes.

# moe_arch_checks NAME MODEL: greedy text streamed through a 3-expert cache
# (batches of 3) equals the resident text, and perplexity runs in batches of
# 7 on a generated text (MODEL.txt); the checks are named "NAME: ...".
moe_arch_checks() {
    local name=$1 m=$2 res str
    res=$("$SLUICE" run -m "$m" -p "Once upon a time" -n 24 --temp 0 -t 2 --no-stream 2>/dev/null)
    str=$("$SLUICE" run -m "$m" -p "Once upon a time" -n 24 --temp 0 -t 2 -b 3 --moe-stream \
          --cache-experts 3 2>/dev/null)
    # an empty output would make any two runs "equal" and prove nothing
    check "$name: streamed text equals resident text" \
        bash -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "$res" "$str"
    for i in $(seq 1 30); do
        echo "The keeper opened the sluice and the water rose in the lock."
    done >"$m.txt"
    check "$name: perplexity in batches of 7" bash -c '"$1" perplexity -m "$2" -f "$3" -c 64 -b 7 2>&1 |
        grep -Eq "^Final estimate: PPL = [0-9]+\.[0-9]+"' _ "$SLUICE" "$m" "$m.txt"
}
