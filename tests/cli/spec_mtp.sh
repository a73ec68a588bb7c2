#!/usr/bin/env bash
# Speculative decoding with the model's own MTP block (--spec-type
# draft-mtp) and with a draft model (-md): the text is the same bytes as
# without drafting, greedy (llama.cpp's own greedy text on the trained
# glm4moe) and sampled, resident and streamed, one thread and a one-token
# batch, in chat across turns; the trained block's guesses are accepted;
# generated glm4moe, deepseek2 and glm-dsa files with an MTP block (mkmodel
# --nextn) give the same text; what cannot draft is refused in one line
# (no MTP block, deepseek4's stream, another vocabulary, two drafters). The
# server's drafting: tests/cli/serve_spec.sh.
# --draft-always everywhere: by default drafting stops where it does not pay,
# which depends on measured step times, so a check that guesses were verified
# must not leave it to the policy.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-spec-mtp-XXXXXX")
trap 'rm -rf "$work"' EXIT

D=tests/data/trained
accepted() { # accepted ERRFILE: the accepted count of the draft line
    sed -n 's/^draft: *[0-9]* drafted, \([0-9]*\) accepted.*/\1/p' "$1"
}
trun() { # trun FILE OUT ARGS...: 64 greedy tokens after llama.cpp's prompt
    local m=$1 out=$2
    shift 2
    "$SLUICE" run -m "$m" -p "Once upon a time" -n 64 --temp 0 "$@" >"$out" 2>"$out.err"
}

for t in f32 q8_0; do
    M=$D/glm4moe-stories-$t.gguf
    vs=("--no-stream" "--no-stream -t 1 --draft-max 1" "--moe-stream --cache-experts 5"
        "--moe-stream --cache-experts 4 -b 1 -t 2")
    [ $t = q8_0 ] && vs=("--moe-stream --cache-experts 5")
    for v in "${vs[@]}"; do
        # shellcheck disable=SC2086
        trun "$M" "$work/mtp" $v --spec-type draft-mtp --draft-always --stats
        check "trained $t ($v): draft-mtp gives llama.cpp's greedy text" \
            same_text "$work/mtp" "$D/glm4moe-stories-$t.greedy.txt"
        n=$(accepted "$work/mtp.err")
        check "trained $t ($v): MTP guesses accepted (${n:-none})" [ "${n:-0}" -gt 0 ]
    done
done

M=$D/glm4moe-stories-f32.gguf
for v in "--no-stream" "--moe-stream --cache-experts 5 -t 1"; do
    # shellcheck disable=SC2086
    trun "$M" "$work/md" $v -md "$D/glm4moe-stories-q4_k_m.gguf" --draft-always --stats
    check "trained f32 ($v), -md the Q4_K_M file: llama.cpp's greedy text" \
        same_text "$work/md" "$D/glm4moe-stories-f32.greedy.txt"
    n=$(accepted "$work/md.err")
    check "trained f32 ($v), -md: guesses accepted (${n:-none})" [ "${n:-0}" -gt 0 ]
done

# sampled: the same text with a fixed seed, either drafter
srun() { "$SLUICE" run -m "$M" -p "Once upon a time" -n 48 --temp 0.8 --seed 7 "$@" 2>/dev/null; }
srun >"$work/s.plain"
srun --spec-type draft-mtp --draft-always --draft-max 3 >"$work/s.mtp"
srun -md "$D/glm4moe-stories-q8_0.gguf" --draft-always >"$work/s.md"
check "sampled: draft-mtp gives the same text" same_text "$work/s.plain" "$work/s.mtp"
check "sampled: -md gives the same text" same_text "$work/s.plain" "$work/s.md"

# chat: the block's cache follows the turns
turns="Once upon a time
Lily went to the park"
printf '%s\n' "$turns" | "$SLUICE" chat -m "$M" -n 24 --temp 0 >"$work/chat.plain" 2>/dev/null
printf '%s\n' "$turns" | "$SLUICE" chat -m "$M" -n 24 --temp 0 --spec-type draft-mtp --draft-always -v \
    >"$work/chat.mtp" 2>"$work/chat.err"
check "chat: the same answers with draft-mtp" same_text "$work/chat.plain" "$work/chat.mtp"
check "chat -v: a draft line per turn" [ "$(grep -c '^draft: .* drafted' "$work/chat.err")" -eq 2 ]

# generated files with an MTP block
P="The cat sat on the mat. The cat sat on the mat. The cat"
for a in glm4moe deepseek2 glm-dsa; do
    G=$work/$a.gguf
    if ! "$SLUICE" mkmodel --arch "$a" --preset tiny --type q8_0 --seed 2 --nextn 1 -q -o "$G"; then
        bad "mkmodel --arch $a --nextn 1"
        continue
    fi
    "$SLUICE" run -m "$G" -p "$P" -n 32 --temp 0 --ignore-eos --no-stream >"$work/g.plain" 2>/dev/null
    for v in "--no-stream" "--moe-stream --cache-experts 3"; do
        # shellcheck disable=SC2086
        "$SLUICE" run -m "$G" -p "$P" -n 32 --temp 0 --ignore-eos $v --spec-type draft-mtp --draft-always \
            --stats >"$work/g.mtp" 2>"$work/g.err"
        check "$a --nextn 1 ($v): draft-mtp gives the same text" same_text "$work/g.plain" "$work/g.mtp"
        check "$a --nextn 1 ($v): the block drafted" grep -q '^draft: *[1-9][0-9]* drafted' "$work/g.err"
    done
done

# refusals: one line each
one_line() { # one_line WORD ARGS...: the run fails with one line holding WORD
    local w=$1
    shift
    "$SLUICE" run -p "Once" -n 4 "$@" >/dev/null 2>"$work/refused"
    local rc=$?
    [ $rc -ne 0 ] && [ "$(wc -l <"$work/refused")" -eq 1 ] && grep -q -- "$w" "$work/refused"
}
"$SLUICE" mkmodel --arch qwen3moe --preset tiny --type q8_0 --seed 2 -q -o "$work/q3.gguf"
"$SLUICE" mkmodel --arch deepseek4 --preset tiny --type q8_0 --seed 2 --nextn 1 -q \
    -o "$work/ds4.gguf"
check "draft-mtp without an MTP block: refused" one_line "no MTP block" -m "$work/q3.gguf" \
    --spec-type draft-mtp
check "draft-mtp on deepseek4: refused" one_line "deepseek4" -m "$work/ds4.gguf" \
    --spec-type draft-mtp
check "-md of another vocabulary: refused" one_line "vocabulary" -m "$M" -md "$work/q3.gguf"
check "-md and --spec-type: refused" one_line "-md" -m "$M" -md "$M" --spec-type ngram-simple
check "-md of a missing file: refused" one_line "draft model" -m "$M" -md "$work/none.gguf"
"$SLUICE" mkmodel --arch qwen3moe --preset tiny --nextn 1 -q -o "$work/x.gguf" 2>"$work/mk.err"
check "mkmodel --nextn on qwen3moe: refused" grep -q -- "--nextn" "$work/mk.err"

finish
