#!/usr/bin/env bash
# The lossy routing knobs end to end: --n-expert-used K on a file with top-k
# 4 gives the text of the same model written with top-k K, and says what it
# cost (weight kept, choices changed) at the end of the run and in --stats
# and --stats-json; more experts than the file's, or a bad --cache-route, is
# refused naming the values; --cache-route on a resident model says it
# changes nothing (and the text is the exact one); streamed through a small
# cache it takes cached experts (substitutions counted) and reads less;
# under route replay the knobs take the trace's choice; the same on a
# sigmoid router with a selection bias (glm4moe); perplexity with a
# knob against the exact run's KL-divergence base reports a KLD above 0.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-knobs-XXXXXX")
trap 'rm -rf "$work"' EXIT

mk() { "$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 3 --experts 16 --top-k "$1" \
    --seed 9 -q -o "$2"; }
mk 4 "$work/k4.gguf" && mk 2 "$work/k2.gguf"
check "mkmodel" [ $? -eq 0 ]
P="Once upon a time"
run() { # run OUT MODEL ARGS...
    local out=$1 model=$2
    shift 2
    "$SLUICE" run -m "$model" -p "$P" -n 24 --temp 0 --ignore-eos "$@" >"$out" 2>"$out.err"
}

run "$work/exact" "$work/k4.gguf"
run "$work/k2" "$work/k2.gguf"
run "$work/low" "$work/k4.gguf" --n-expert-used 2
check "--n-expert-used 2 runs" [ $? -eq 0 ]
check "--n-expert-used 2 gives the text of the top-2 file" same_text "$work/low" "$work/k2"
check "... which is not the exact text" bash -c "! cmp -s '$work/low' '$work/exact'"
check "the run says what it cost" \
    grep -q "lossy routing: experts used 2 of the file's 4: .*% of the routing weight kept, 50.00% of the router's choices changed" "$work/low.err"
run "$work/low" "$work/k4.gguf" --n-expert-used 2 --stats --stats-json "$work/s.json"
check "--stats has the cost line" grep -q "^lossy routing   experts used 2 of the file's 4" "$work/low.err"
check "--stats-json has the cost" grep -q '"knob_experts_used":2' "$work/s.json"
check "--stats-json: half the choices changed" \
    python3 -c "import json,sys; d=json.load(open('$work/s.json')); sys.exit(0 if d['knob_changed']*2 == d['knob_choices'] and 0.5 <= d['knob_weight_kept'] < 1 else 1)"
run "$work/plain" "$work/k4.gguf" --stats
check "an exact run prints no cost" bash -c "! grep -q 'lossy routing' '$work/plain.err'"

run "$work/x" "$work/k4.gguf" --n-expert-used 5
check "more experts than the file's is refused" [ $? -ne 0 ]
check "... saying it can only be lowered" grep -q "n_expert_used 5 is not in 1..4.*can only be lowered" "$work/x.err"
run "$work/x" "$work/k4.gguf" --cache-route 4,8
check "J not below K is refused" grep -q "cache-route 4,8 needs 0 <= J < K < M" "$work/x.err"
run "$work/x" "$work/k4.gguf" --cache-route 2
check "a malformed --cache-route is refused" grep -q "expects J,M" "$work/x.err"

run "$work/cr" "$work/k4.gguf" --cache-route 1,12
check "--cache-route on a resident model says it changes nothing" \
    grep -q "cache-route changes nothing here: every expert is resident" "$work/cr.err"
check "... and gives the exact text" same_text "$work/cr" "$work/exact"
check "... at no cost" grep -q "100.00% of the routing weight kept, 0.00% of the router's choices changed (0 experts" "$work/cr.err"

js() { python3 -c "import json; print(json.load(open('$1'))['$2'])"; }
run "$work/se" "$work/k4.gguf" --moe-stream --cache-experts 12 --stats-json "$work/se.json"
run "$work/sc" "$work/k4.gguf" --moe-stream --cache-experts 12 --cache-route 2,12 \
    --stats-json "$work/sc.json"
check "streamed --cache-route runs" [ $? -eq 0 ]
check "streamed --cache-route takes cached experts" [ "$(js "$work/sc.json" knob_substituted)" -gt 0 ]
check "streamed --cache-route misses less" \
    [ "$(js "$work/sc.json" misses)" -lt "$(js "$work/se.json" misses)" ]

# sigmoid scores with a selection bias (glm4moe): K experts ranked by score +
# exp_probs_b, their scores renormalised and scaled, as the top-K file's router
mkg() { "$SLUICE" mkmodel --arch glm4moe --preset tiny --layers 3 --experts 16 --top-k "$1" \
    --seed 9 -q -o "$2"; }
mkg 4 "$work/g4.gguf" && mkg 2 "$work/g2.gguf"
check "mkmodel glm4moe" [ $? -eq 0 ]
run "$work/ge" "$work/g4.gguf"
run "$work/g2" "$work/g2.gguf"
run "$work/gl" "$work/g4.gguf" --n-expert-used 2
check "glm4moe: --n-expert-used 2 gives the text of the top-2 file" same_text "$work/gl" "$work/g2"
check "... which is not the exact text" bash -c "! cmp -s '$work/gl' '$work/ge'"
check "... and says what it cost" \
    grep -q "experts used 2 of the file's 4: .*% of the routing weight kept, 50.00% of the router's choices changed" "$work/gl.err"
run "$work/gse" "$work/g4.gguf" --moe-stream --cache-experts 12 --stats-json "$work/gse.json"
run "$work/gsc" "$work/g4.gguf" --moe-stream --cache-experts 12 --cache-route 2,12 \
    --stats-json "$work/gsc.json"
check "glm4moe: streamed --cache-route takes cached experts" \
    [ "$(js "$work/gsc.json" knob_substituted)" -gt 0 ]
check "... and misses less" [ "$(js "$work/gsc.json" misses)" -lt "$(js "$work/gse.json" misses)" ]

T=/work/shared/traces/qwen3-30b-a3b.route.csv
[ -r "$T" ] || T=../shared/traces/qwen3-30b-a3b.route.csv
if [ -r "$T" ]; then
    M=$work/m48.gguf
    "$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 48 --experts 128 --top-k 6 \
        --seed 3 -q -o "$M"
    RT="--moe-stream --cache-experts 1536 --route-trace $T"
    run "$work/r0" "$M" $RT --stats-json "$work/r0.json"
    run "$work/r1" "$M" $RT --n-expert-used 4 --stats-json "$work/r1.json"
    check "replay with --n-expert-used 4 runs" [ $? -eq 0 ]
    check "... a third of the trace's choices changed" \
        python3 -c "import json,sys; d=json.load(open('$work/r1.json')); sys.exit(0 if d['knob_changed']*3 == d['knob_choices'] else 1)"
    check "... fewer reads than the full replay" \
        [ "$(js "$work/r1.json" misses)" -lt "$(js "$work/r0.json" misses)" ]
    run "$work/r2" "$M" $RT --n-expert-used 4 --cache-route 2,6 --stats-json "$work/r2.json"
    check "replay with --cache-route 2,6 takes cached experts" \
        [ "$(js "$work/r2.json" knob_substituted)" -gt 0 ]
    run "$work/x" "$M" $RT --n-expert-used 4 --cache-route 2,8
    check "replay: M above the trace's k is refused" grep -q "the trace records only 6 experts" "$work/x.err"
fi

# perplexity with a knob against the exact run's base
TXT=$work/t.txt
for i in $(seq 1 40); do echo "the quick brown fox jumps over the lazy dog $i times"; done >"$TXT"
"$SLUICE" perplexity -m "$work/k4.gguf" -f "$TXT" -c 64 --chunks 2 \
    --kl-divergence-base "$work/base.kld" >"$work/p0" 2>&1
check "the exact run writes a KL-divergence base" [ $? -eq 0 ]
"$SLUICE" perplexity -m "$work/k4.gguf" --kl-divergence-base "$work/base.kld" --kl-divergence \
    --n-expert-used 2 >"$work/p1" 2>&1
check "perplexity with --n-expert-used against the base runs" [ $? -eq 0 ]
check "... reports a KL divergence above 0" \
    bash -c "grep -E 'Mean +KLD' '$work/p1' | grep -qvE 'Mean +KLD: +0\.000000 '"
check "... and the cost" grep -q "lossy routing: experts used 2 of the file's 4" "$work/p1"
finish
