#!/usr/bin/env bash
# Speculative decoding with prompt lookup (--spec-type ngram-simple): the
# text is the same bytes as without drafting, resident and streamed through
# a small expert cache, greedy and sampled, on the attention families
# (qwen3moe, gpt-oss, gemma4 with its sliding-window rings, deepseek2's
# MLA; the text alone on seven more); a prompt that repeats itself gets drafts accepted (--stats' draft
# line, with --draft-always: by default drafting stops where it does not pay,
# and --stats says so, --stats-json the same figures; gemma4: verified, its random greedy
# text repeats nothing the drafts guess); the recurrent families (qwen35moe, deepseek4) turn drafting off
# with one line and give the same text; bad flag values are refused
# (the server: tests/cli/serve_spec.sh).
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-spec-XXXXXX")
trap 'rm -rf "$work"' EXIT

P="The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The cat"
run() { # run MODEL OUT ARGS...
    local m=$1 out=$2
    shift 2
    "$SLUICE" run -m "$m" -p "$P" -n 32 --ignore-eos "$@" >"$out" 2>"$out.err"
}
accepted() { # accepted ERRFILE: the accepted count of the draft line
    sed -n 's/^draft: *[0-9]* drafted, \([0-9]*\) accepted.*/\1/p' "$1"
}
drafted() { # drafted ERRFILE: the drafted count of the draft line
    sed -n 's/^draft: *\([0-9]*\) drafted,.*/\1/p' "$1"
}

for a in qwen3moe gpt-oss gemma4 deepseek2 qwen35moe deepseek4; do
    M=$work/$a.gguf
    if ! "$SLUICE" mkmodel --arch "$a" --preset tiny --type q8_0 --seed 2 -q -o "$M"; then
        bad "mkmodel --arch $a"
        continue
    fi
    run "$M" "$work/$a.plain" --temp 0 --no-stream
    check "$a: plain greedy run succeeds" [ $? -eq 0 ]
    for v in "--no-stream" "--moe-stream --cache-experts 3" "--moe-stream --cache-experts 2 -b 1"; do
        # shellcheck disable=SC2086
        run "$M" "$work/$a.spec" --temp 0 $v --spec-type ngram-simple --draft-always --stats
        check "$a ($v): drafting run succeeds" [ $? -eq 0 ]
        check "$a ($v): drafting gives the same text" same_text "$work/$a.plain" "$work/$a.spec"
        case $a in
        qwen35moe | deepseek4)
            check "$a ($v): drafting is off, said once" \
                [ "$(grep -c 'drafting is off: the model.s recurrent layers' "$work/$a.spec.err")" -eq 1 ]
            check "$a ($v): the draft line says off" grep -q '^draft: *off' "$work/$a.spec.err"
            ;;
        gemma4)
            # this random file's greedy text repeats nothing the drafts guess
            # (with llama.cpp's one-chunk decode attention): drafts verified
            n=$(drafted "$work/$a.spec.err")
            check "$a ($v): drafts verified (${n:-none})" [ "${n:-0}" -gt 0 ]
            ;;
        *)
            n=$(accepted "$work/$a.spec.err")
            check "$a ($v): drafts accepted (${n:-none})" [ "${n:-0}" -gt 0 ]
            ;;
        esac
    done
    run "$M" "$work/$a.splain" --temp 0.8 --seed 7 --no-stream
    run "$M" "$work/$a.sspec" --temp 0.8 --seed 7 --no-stream --spec-type ngram-simple \
        --draft-always --draft-max 4 --draft-min 2
    check "$a: sampled text with drafting is the same" same_text "$work/$a.splain" "$work/$a.sspec"
done

# the other families: the same text resident and streamed
for a in qwen2moe mixtral olmoe llama qwen3 glm4moe glm-dsa; do
    M=$work/$a.gguf
    if ! "$SLUICE" mkmodel --arch "$a" --preset tiny --type q8_0 --seed 2 -q -o "$M"; then
        bad "mkmodel --arch $a"
        continue
    fi
    run "$M" "$work/$a.plain" --temp 0 --no-stream
    for v in "--no-stream" "--moe-stream --cache-experts 3"; do
        case $a in llama | qwen3) [ "$v" = "--no-stream" ] || continue ;; esac # dense
        # shellcheck disable=SC2086
        run "$M" "$work/$a.spec" --temp 0 $v --spec-type ngram-simple --draft-always --stats
        check "$a ($v): drafting gives the same text ($(grep -o '[0-9]* accepted' "$work/$a.spec.err"))" \
            same_text "$work/$a.plain" "$work/$a.spec"
    done
done

# a small draft cap still gives the text; drafting off by default prints no draft line
M=$work/qwen3moe.gguf
run "$M" "$work/cap" --temp 0 --no-stream --spec-type ngram-simple --draft-always --draft-max 1 -v
check "--draft-max 1 gives the same text" same_text "$work/qwen3moe.plain" "$work/cap"
check "--draft-max 1: tokens per verify step at most 2" \
    grep -Eq '^draft: .*\((1\.[0-9]+|2\.00) tokens each\)' "$work/cap.err"
check "--draft-max 1 -v: drafts held by position" grep -Eq '^draft: +held by position: 1:[0-9]+%$' \
    "$work/cap.err"
run "$M" "$work/auto" --temp 0 --no-stream --spec-type ngram-simple --stats
check "drafting when it pays (the default): the same text" same_text "$work/qwen3moe.plain" \
    "$work/auto"
check "--stats: the step times and the measured gain" grep -Eq \
    '^draft: +plain step [0-9.]+ ms \([0-9]+\), verify step [0-9.]+ ms \([0-9]+, [0-9.]+ tokens each\)(: [0-9.]+x plain decoding)?, switched off [0-9]+ times, [0-9]+ probes$' \
    "$work/auto.err"
run "$M" "$work/js" --temp 0 --no-stream --spec-type ngram-simple --draft-always --draft-max 3 \
    --stats --stats-json "$work/js.json"
check "--stats-json: the draft figures --stats prints" \
    python3 tests/cli/lib/draft_stats_json.py "$work/js.err" "$work/js.json"
run "$M" "$work/t1" --temp 0 --no-stream --spec-type ngram-simple --draft-always -t 1
check "one thread, drafting: the same text" same_text "$work/qwen3moe.plain" "$work/t1"

# the trained glm4moe: with drafting, still llama.cpp's 64 greedy tokens
D=tests/data/trained
"$SLUICE" run -m "$D/glm4moe-stories-f32.gguf" -p "Once upon a time" -n 64 --temp 0 -t 2 \
    --spec-type ngram-simple >"$work/trained" 2>/dev/null
check "trained glm4moe: drafting gives llama.cpp's greedy text" \
    same_text "$work/trained" "$D/glm4moe-stories-f32.greedy.txt"
run "$M" "$work/nodraft" --temp 0 --no-stream --stats
check "no draft line without --spec-type" bash -c "! grep -q '^draft:' '$work/nodraft.err'"

# speculative sampling: a seed repeats the text whatever is drafted; greedy is the plain text
run "$M" "$work/ss1" --temp 0.8 --seed 7 --no-stream --spec-type ngram-simple --spec-sampling
run "$M" "$work/ss2" --temp 0.8 --seed 7 --no-stream --spec-type ngram-simple --spec-sampling \
    --draft-always --draft-max 2
check "--spec-sampling: the seed's text whatever is drafted" same_text "$work/ss1" "$work/ss2"
run "$M" "$work/ssg" --temp 0 --no-stream --spec-type ngram-simple --spec-sampling --draft-always
check "--spec-sampling, greedy: the plain text" same_text "$work/qwen3moe.plain" "$work/ssg"

for f in "--spec-sampling" "--spec-type mtp" "--draft-max 0" "--draft-max 33" "--draft-min -1"; do
    # shellcheck disable=SC2086
    run "$M" "$work/badflag" --temp 0 $f
    rc=$?
    check "'$f' is refused" [ $rc -ne 0 ]
    check "'$f': one line naming the flag" bash -c \
        "[ \$(wc -l < '$work/badflag.err') -eq 1 ] && grep -q -- '${f%% *}' '$work/badflag.err'"
done

# chat: each turn's answer the same, prompt lookup over the turn and the answer
turns="$P
$P $P"
printf '%s\n' "$turns" | "$SLUICE" chat -m "$M" -n 24 --temp 0 >"$work/chat.plain" 2>/dev/null
printf '%s\n' "$turns" | "$SLUICE" chat -m "$M" -n 24 --temp 0 --spec-type ngram-simple -v \
    --draft-always --stats-json "$work/chat.json" >"$work/chat.spec" 2>"$work/chat.err"
check "chat: the same answers with drafting" same_text "$work/chat.plain" "$work/chat.spec"
check "chat -v: a draft line per turn" [ "$(grep -c '^draft: .* drafted' "$work/chat.err")" -eq 2 ]
turns_sum=$(sed -n 's/^draft: *\([0-9]*\) drafted, \([0-9]*\) accepted.*/\1 \2/p' "$work/chat.err" |
    awk '{d += $1; a += $2} END {print d, a}')
check "chat --stats-json: the turns' drafted and accepted summed ($turns_sum)" [ \
    "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["draft_drafted"], d["draft_accepted"])' "$work/chat.json")" = "$turns_sum" ]

finish
