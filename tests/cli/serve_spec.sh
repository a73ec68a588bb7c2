#!/usr/bin/env bash
# `sluice serve --spec-type ngram-simple | draft-mtp`, `serve -md`: drafting
# in the server's slots.
# tests/cli/lib/serve_batch.py sends greedy and sampled requests one by one
# to a one-slot server that does not draft, then all at once and with a late
# joiner to a four-slot server that drafts (its verify steps evaluated
# apart from the shared pass): every text must be the same. Then a prompt
# that repeats itself, on which `run --stats` shows drafts accepted (gemma4:
# verified; its random greedy text repeats nothing the drafts guess), gives
# the same completion from a drafting server as from one that does not.
# qwen3moe and gemma4 (sliding-window rings); then the trained glm4moe with
# its MTP block and with a draft model, whose bytes the memory plan the
# server prints counts.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve-spec
P="The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The cat"
for arch in qwen3moe gemma4; do
    M=$work/$arch.gguf
    if ! "$SLUICE" mkmodel --arch "$arch" --preset tiny --type q8_0 --seed 2 -q -o "$M"; then
        bad "mkmodel $arch"
        continue
    fi
    "$SLUICE" run -m "$M" -p "$P" -n 32 --temp 0 --ignore-eos --spec-type ngram-simple --draft-always --stats \
        >/dev/null 2>"$work/run.err"
    n=$(sed -n 's/^draft: *[0-9]* drafted, \([0-9]*\) accepted.*/\1/p' "$work/run.err")
    d=$(sed -n 's/^draft: *\([0-9]*\) drafted,.*/\1/p' "$work/run.err")
    if [ "$arch" = gemma4 ]; then
        # this random file's greedy text repeats nothing the drafts guess
        # (with llama.cpp's one-chunk decode attention): drafts verified
        check "$arch: run drafts on the repeating prompt (${d:-none})" [ "${d:-0}" -gt 0 ]
    else
        check "$arch: run drafts and accepts on the repeating prompt (${n:-none})" [ "${n:-0}" -gt 0 ]
    fi
    if serve_start "solo-$arch" -m "$M" -c 1024 -np 1 -t 2; then
        solo=$serve_port
        if serve_start "spec-$arch" -m "$M" -c 1024 -np 4 -t 2 --batch-step 24 \
            --spec-type ngram-simple; then
            timeout 300 python3 tests/cli/lib/serve_batch.py "$solo" "$serve_port" --texts-only >"$work/py.out" 2>&1
            rc=$?
            serve_relay "$arch: " <"$work/py.out"
            [ $rc -eq 0 ] || bad "$arch: serve_batch.py exited $rc: $(tail -c 600 "$work/py.out")"
            for port in "$solo" "$serve_port"; do
                python3 - "$port" "$P" >"$work/rep-$port.txt" <<'PY'
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
body = {"prompt": sys.argv[2], "max_tokens": 32, "temperature": 0, "ignore_eos": True}
c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
r = c.getresponse()
sys.stdout.write(json.loads(r.read().decode())["choices"][0]["text"] if r.status == 200 else "")
PY
            done
            check "$arch: the repeating prompt's completion is the same with drafting" \
                same_text "$work/rep-$solo.txt" "$work/rep-$serve_port.txt"
            kill -0 "$serve_pid" 2>/dev/null && ok "$arch: the drafting server is still running" ||
                bad "$arch: the drafting server died: $(tail -c 600 "$work/spec-$arch.err")"
        fi
    fi
    serve_stop_all
done

# draft-mtp (the trained glm4moe's MTP block) and -md (its Q4_K_M file): one
# drafter per slot, the drafts verified in the shared pass (a budget of 48
# holds four slots' token and 8 drafts), every guess verified
# (--draft-always): the four-slot servers' texts are the one-slot server's.
D=tests/data/trained
M=$D/glm4moe-stories-f32.gguf
if serve_start solo-glm -m "$M" -c 1024 -np 1 -t 2 --no-stream; then
    solo=$serve_port
    check "glm4moe: no drafter, none in the memory plan" \
        grep -Eq '^sluice serve: listening .* drafter 0 MiB' "$work/solo-glm.err"
    n=0
    for d in "--spec-type draft-mtp" "-md $D/glm4moe-stories-q4_k_m.gguf"; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        serve_start "glm-$n" -m "$M" -c 1024 -np 4 -t 2 --no-stream --batch-step 48 $d \
            --draft-always || continue
        check "glm4moe $d: the memory plan counts the drafter" \
            grep -Eq '^sluice serve: listening .* drafter [1-9][0-9]* MiB' "$work/glm-$n.err"
        timeout 300 python3 tests/cli/lib/serve_batch.py "$solo" "$serve_port" --texts-only >"$work/py.out" 2>&1
        rc=$?
        serve_relay "glm4moe $d: " <"$work/py.out"
        [ $rc -eq 0 ] || bad "glm4moe $d: serve_batch.py exited $rc: $(tail -c 600 "$work/py.out")"
        kill -0 "$serve_pid" 2>/dev/null && ok "glm4moe $d: the drafting server is still running" ||
            bad "glm4moe $d: the drafting server died: $(tail -c 600 "$work/glm-$n.err")"
        serve_stop "$serve_pid"
    done
fi
serve_stop_all
# what cannot draft is refused in one line before the model is served
"$SLUICE" serve -m "$M" -md "$M" --spec-type ngram-simple --port 0 >/dev/null 2>"$work/two.err"
rc=$?
check "serve -md with --spec-type: refused in one line" bash -c \
    "[ $rc -ne 0 ] && [ \$(wc -l < '$work/two.err') -eq 1 ] && grep -q -- '-md' '$work/two.err'"
finish
