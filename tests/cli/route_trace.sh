#!/usr/bin/env bash
# Route replay (--route-trace) and cache policies (--cache-policy) end to
# end through `sluice run`, on the recorded Qwen3-30B-A3B trace and a tiny
# model of its shape (48 layers, 128 experts, top-6): the replayed greedy
# text is the same for every cache size and policy (only hit rates move),
# differs from the router's own choice (the trace is used), --stats names
# the policy and the wrap and scores the learned next-layer guesses (the
# same text without them); and a trace that does not fit (layers, experts,
# top-k, a damaged or missing file, a resident model, an unknown policy) is
# refused with a message naming the problem.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-route-XXXXXX")
trap 'rm -rf "$work"' EXIT

T=/work/shared/traces/qwen3-30b-a3b.route.csv
[ -r "$T" ] || T=../shared/traces/qwen3-30b-a3b.route.csv
if [ ! -r "$T" ]; then
    echo "ok   skipped: no route trace at ../shared/traces"
    finish
    exit $?
fi
M=$work/m48.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 48 --experts 128 --top-k 6 \
        --seed 3 -q -o "$M"; then
    bad "mkmodel"
    finish
    exit 1
fi
P="Explain how a mixture-of-experts model decides which experts handle each token."
run() { # run OUT MODEL ARGS...
    local out=$1 model=$2
    shift 2
    "$SLUICE" run -m "$model" -p "$P" -n 40 --temp 0 --ignore-eos "$@" >"$out" 2>"$out.err"
}

run "$work/ref" "$M" --moe-stream --cache-experts 6144 --route-trace "$T" --stats
check "replay with every expert cached succeeds" [ $? -eq 0 ]
check "--stats names the policy" grep -q "^cache policy    lru" "$work/ref.err"
check "--stats says the replay stayed in the first pass" \
    grep -q "route replay .*156 steps (28 prompt, 128 generated).*within the first pass" \
    "$work/ref.err"
run "$work/router" "$M" --moe-stream --cache-experts 6144
check "the router's own choice gives another text (the trace is used)" \
    bash -c "! cmp -s '$work/ref' '$work/router'"
for pol in lru slru lfu layer; do
    for n in 6 100 1536; do
        run "$work/out" "$M" --moe-stream --cache-experts $n --cache-policy $pol \
            --route-trace "$T" --stats-json "$work/s.json"
        check "replay, $pol, $n experts cached, succeeds" [ $? -eq 0 ]
        check "replay, $pol, $n experts cached, gives the same text" same_text "$work/ref" "$work/out"
    done
done
# hit rates do move with the policy: 1536 slots (a quarter), lru against slru
hit() { sed -n 's/.*"hit_rate":\([0-9.e-]*\).*/\1/p' "$1"; }
run "$work/a" "$M" --moe-stream --cache-experts 1536 --route-trace "$T" --stats-json "$work/a.json"
run "$work/b" "$M" --moe-stream --cache-experts 1536 --route-trace "$T" --cache-policy slru \
    --stats-json "$work/b.json"
check "lru and slru hit rates differ" [ "$(hit "$work/a.json")" != "$(hit "$work/b.json")" ]

# learned next-layer guesses (under replay with --prefetch): they read ahead
# and are scored, and the text is the same without them
run "$work/g" "$M" --moe-stream --cache-experts 1536 --route-trace "$T" --stats --no-warm \
    --prefetch
check "replay with learned guesses gives the same text" cmp -s "$work/ref" "$work/g"
check "--stats scores the learned guesses" \
    grep -Eq "^learned guesses [1-9][0-9]* experts guessed .*% right; .*% of those layers' misses guessed" \
    "$work/g.err"
run "$work/ng" "$M" --moe-stream --cache-experts 1536 --route-trace "$T" --stats --no-warm \
    --no-prefetch
check "replay with --no-prefetch gives the same text" cmp -s "$work/ref" "$work/ng"
check "--no-prefetch makes no learned guesses" bash -c "! grep -q '^learned guesses' '$work/ng.err'"
run "$work/d" "$M" --moe-stream --cache-experts 1536 --route-trace "$T" --stats --no-warm
check "replay by default gives the same text" cmp -s "$work/ref" "$work/d"
check "by default no learned guesses" bash -c "! grep -q '^learned guesses' '$work/d.err'"

# past the trace's end it wraps, and says so
"$SLUICE" run -m "$M" -p "$P" -n 150 --temp 0 --ignore-eos --moe-stream --cache-experts 600 \
    --route-trace "$T" --stats >/dev/null 2>"$work/wrap.err"
check "a replay longer than the trace succeeds" [ $? -eq 0 ]
check "--stats says it wrapped and flatters the cache" \
    grep -q "wrapped 1 time: past step 156 the trace repeats" "$work/wrap.err"

refused() { # refused NAME NEEDLE MODEL ARGS...
    local name=$1 needle=$2 model=$3
    shift 3
    run "$work/bad" "$model" "$@"
    local rc=$?
    check "$name: refused" [ $rc -ne 0 ]
    check "$name: says why" grep -qF -- "$needle" "$work/bad.err"
}
"$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 3 -q -o "$work/m2.gguf"
refused "a 2-layer model" "n_layer=48 but the model has 2 layers" "$work/m2.gguf" \
    --moe-stream --route-trace "$T"
"$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 48 --experts 64 --top-k 6 --seed 3 -q \
    -o "$work/m64.gguf"
refused "64 experts" "n_expert=128 but the model has 64 experts" "$work/m64.gguf" \
    --moe-stream --route-trace "$T"
"$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 48 --experts 128 --top-k 8 --seed 3 -q \
    -o "$work/k8.gguf"
refused "top-8" "n_expert_used=6 but the model uses top-8 (mkmodel --top-k 6)" "$work/k8.gguf" \
    --moe-stream --route-trace "$T"
refused "a resident model" "fully resident: add --moe-stream" "$M" --no-stream --route-trace "$T"
refused "a missing trace" "cannot read route trace '$work/none.csv'" "$M" --moe-stream \
    --route-trace "$work/none.csv"
head -n 20000 "$T" >"$work/cut.csv"
refused "a trace cut after a row" "step 69 layer 39 has 5 of its 6 slots (slot 5 missing)" "$M" --moe-stream \
    --route-trace "$work/cut.csv"
head -c 600000 "$T" >"$work/cut.csv"
refused "a trace cut inside a row" "line 20374: fewer than 9 fields" "$M" --moe-stream \
    --route-trace "$work/cut.csv"
sed '300s/,0\.[0-9]*,/,zz,/' "$T" >"$work/w.csv"
refused "a damaged weight" "line 300 field 'weight': 'zz'" "$M" --moe-stream \
    --route-trace "$work/w.csv"
head -c 4096 "$M" >"$work/bin.csv"
refused "a binary file" "byte 5 is NUL: not a text file" "$M" --moe-stream --route-trace "$work/bin.csv"
refused "an unknown policy" "unknown cache policy 'mru' (known: lru, slru, lfu, layer)" "$M" \
    --moe-stream --cache-policy mru
cp "$T" "$work/t.csv"
refused "the trace as an output" "--route-trace" "$M" --moe-stream --route-trace "$work/t.csv" \
    --stats-json "$work/t.csv"
check "the trace was not overwritten" same_text "$T" "$work/t.csv"
finish
