#!/usr/bin/env bash
# Prompt caches heal (issue 29, N5): a checksum-valid session file whose
# state is poisoned with NaN (tests/cli/lib/session_poison.py) is deleted
# when its restore yields non-finite values, with one log line, and the
# prompt is evaluated from the start: the answer is the cold one and the
# next run is served from a healthy file again. Poisoned logits are caught
# at the restore, poisoned rows by the evaluation after it (a whole prompt's
# last token is evaluated again, so its rows are checked too). For `run
# --prompt-cache FILE`, the server's --prompt-cache DIR entries (also
# across a restart) and a slot restore.
set -u
. "$(dirname "$0")/lib/common.sh"
. tests/cli/lib/serve.sh
serve_setup heal
TO="timeout 120"
POISON="python3 tests/cli/lib/session_poison.py"

M=$work/m.gguf
serve_model "$M" --arch mixtral --preset tiny --type q8_0

# ---- run --prompt-cache FILE ---------------------------------------------------
P1="Hello there my friend"
P2="Hello there my friend and more"
cold1=$($TO "$SLUICE" run -m "$M" -p "$P1" -n 4 --temp 0 -t 1 2>/dev/null)
cold2=$($TO "$SLUICE" run -m "$M" -p "$P2" -n 4 --temp 0 -t 1 2>/dev/null)
$TO "$SLUICE" run -m "$M" -p "$P1" -n 4 --temp 0 -t 1 --prompt-cache "$work/a.pc" >/dev/null 2>&1
cp "$work/a.pc" "$work/b.pc"

# heal NAME CACHE PROMPT WANT PATTERN: the run with CACHE answers WANT, exit
# 0, with one warning line matching PATTERN; the next run restores from a
# healthy CACHE and answers WANT again
heal() {
    local name=$1 cache=$2 prompt=$3 want=$4 pat=$5
    $TO "$SLUICE" run -m "$M" -p "$prompt" -n 4 --temp 0 -t 1 --prompt-cache "$cache" \
        >"$work/out" 2>"$work/err"
    local rc=$?
    if [ $rc -eq 0 ] && [ "$(grep -c warning "$work/err")" -eq 1 ] && grep -q "$pat" "$work/err" &&
        [ "$(cat "$work/out")" = "$want" ]; then
        ok "$name: one warning line, the cold answer"
    else
        bad "$name: exit $rc: $(head -c 600 "$work/err")"
    fi
    $TO "$SLUICE" run -m "$M" -p "$prompt" -n 4 --temp 0 -t 1 --prompt-cache "$cache" \
        >"$work/out" 2>"$work/err"
    if grep -q "prompt cache: [1-9][0-9]* of [0-9]* prompt tokens restored" "$work/err" &&
        ! grep -q warning "$work/err" && [ "$(cat "$work/out")" = "$want" ]; then
        ok "$name: the next run restores a healthy file"
    else
        bad "$name: the next run: $(head -c 600 "$work/err")"
    fi
}

check "poison the saved logits (checksums valid)" $POISON "$work/a.pc" logits
heal "run, NaN logits" "$work/a.pc" "$P1" "$cold1" "holds non-finite logits (NaN or infinity): deleted"
check "poison the saved rows (checksums valid)" $POISON "$work/b.pc" rows
heal "run, NaN rows" "$work/b.pc" "$P2" "$cold2" "gave non-finite values.*deleted; the prompt was evaluated from the start"

# the whole prompt restored with finite logits but NaN rows: its last token
# is evaluated again, meets NaN, and the prompt is evaluated from the start
$TO "$SLUICE" run -m "$M" -p "$P1" -n 4 --temp 0 -t 1 --prompt-cache "$work/c.pc" >/dev/null 2>&1
check "poison the whole prompt's rows (logits finite)" $POISON "$work/c.pc" rows
heal "run, whole prompt with NaN rows" "$work/c.pc" "$P1" "$cold1" \
    "gave non-finite values.*deleted; the prompt was evaluated from the start"

# ---- serve --prompt-cache DIR and slot restore ------------------------------------
mkdir -p "$work/pc" "$work/slots"
client() { # client PORT: one chat request; prints "status<TAB>text<TAB>cached<TAB>prompt"
    python3 - "$1" <<'PY'
import json, sys, urllib.request, urllib.error
system = " ".join("clause %d: the weir keeper logs the water." % i for i in range(6))
body = {"messages": [{"role": "system", "content": system},
                     {"role": "user", "content": "What did the keeper log?"}],
        "max_tokens": 4, "temperature": 0}
req = urllib.request.Request("http://127.0.0.1:%s/v1/chat/completions" % sys.argv[1],
                             json.dumps(body).encode(), {"Content-Type": "application/json"})
try:
    js = json.load(urllib.request.urlopen(req, timeout=120))
    print("200\t%s\t%d\t%d" % (json.dumps(js["choices"][0]["message"]["content"]),
          js["usage"]["prompt_tokens_details"]["cached_tokens"], js["usage"]["prompt_tokens"]))
except urllib.error.HTTPError as e:
    print("%d\t%s\t0\t0" % (e.code, e.read().decode()[:200].replace("\t", " ")))
PY
}
field() { printf '%s' "$1" | cut -f"$2"; }
both() { [ "$1" = "$2" ] && [ "$3" = "$4" ]; } # both A B C D: A = B and C = D
entries() { ls "$work/pc" | grep '\.state$' | sort -t- -k3 -n; } # shortest prefix first

start() { serve_start "$1" -m "$M" -c 512 -t 1 --prompt-cache "$work/pc" --slot-save-path "$work/slots"; }
if start s1; then
    cold=$(client "$serve_port")
    serve_stop "$serve_pid"
fi
check "server: the cold request answers 200 ($(field "$cold" 1))" [ "$(field "$cold" 1)" = 200 ]
check "server: two entries saved (first turn, whole prompt)" [ "$(entries | wc -l)" -eq 2 ]
whole=$work/pc/$(entries | tail -n 1)
first=$work/pc/$(entries | head -n 1)

# the whole prompt's entry with NaN logits: deleted at the restore, the first
# turn's entry serves instead
check "server: poison the whole prompt's logits" $POISON "$whole" logits
if start s2; then
    r=$(client "$serve_port")
    check "server, NaN logits: 200 and the cold answer ($(field "$r" 2))" \
        both "$(field "$r" 1)" 200 "$(field "$r" 2)" "$(field "$cold" 2)"
    check "server, NaN logits: one log line says the entry was deleted" \
        [ "$(grep -c 'holds non-finite logits (NaN or infinity): deleted' "$work/s2.err")" -eq 1 ]
    r=$(client "$serve_port")
    check "server, NaN logits: the next request is served from a new file, its last token evaluated again ($(field "$r" 3) of $(field "$r" 4))" \
        both "$(field "$r" 3)" "$(($(field "$r" 4) - 1))" "$(field "$r" 2)" "$(field "$cold" 2)"
    serve_stop "$serve_pid"
fi

# the whole prompt's entry with finite logits but NaN rows (N5): its last token
# is evaluated again and meets NaN; the prompt is evaluated from the start, the
# entry deleted, and the answer is the cold one
check "server: poison the whole prompt's rows (logits finite)" $POISON "$whole" rows
if start s2b; then
    r=$(client "$serve_port")
    check "server, whole prompt with NaN rows: 200 and the cold answer ($(field "$r" 1) $(field "$r" 2))" \
        both "$(field "$r" 1)" 200 "$(field "$r" 2)" "$(field "$cold" 2)"
    check "server, whole prompt with NaN rows: one log line: deleted, evaluated from the start" \
        [ "$(grep -c 'gave non-finite values.*deleted; the prompt was evaluated from the start' "$work/s2b.err")" -eq 1 ]
    r=$(client "$serve_port")
    check "server, whole prompt with NaN rows: the next request is served from a healthy file ($(field "$r" 3) cached)" \
        both "$(field "$r" 3)" "$(($(field "$r" 4) - 1))" "$(field "$r" 2)" "$(field "$cold" 2)"
    serve_stop "$serve_pid"
fi

# the first turn's entry with NaN rows, alone: its restore is followed by an
# evaluation that meets NaN; evaluated from the start, the entry deleted
rm -f "$whole"
check "server: poison the first turn's rows" $POISON "$first" rows
if start s3; then
    r=$(client "$serve_port")
    check "server, NaN rows: 200 and the cold answer ($(field "$r" 2))" \
        both "$(field "$r" 1)" 200 "$(field "$r" 2)" "$(field "$cold" 2)"
    check "server, NaN rows: nothing counted as cached ($(field "$r" 3))" [ "$(field "$r" 3)" = 0 ]
    check "server, NaN rows: one log line: deleted, evaluated from the start" \
        [ "$(grep -c 'gave non-finite values.*deleted; the prompt was evaluated from the start' "$work/s3.err")" -eq 1 ]
    check "server, NaN rows: the poisoned file is gone" [ ! -e "$first" ]
    serve_stop "$serve_pid"
fi
if start s4; then
    r=$(client "$serve_port")
    check "server, after a restart: the healed cache serves the cold answer" \
        both "$(field "$r" 1)" 200 "$(field "$r" 2)" "$(field "$cold" 2)"
    check "server, after a restart: no non-finite line any more" \
        bash -c "! grep -q 'non-finite' '$work/s4.err'"

    # a slot save whose logits are then poisoned: its restore is refused and it is deleted
    python3 - "$serve_port" <<'PY' | serve_relay "slot: "
import sys
sys.path.insert(0, "tests/cli/lib")
from http_post import poster, check
post = poster(int(sys.argv[1]))
st, text = post("/slots/0?action=save", {"filename": "s.bin"})
check("save: 200", st == 200, text)
print("client-finished")
PY
    $POISON "$work/slots/s.bin" logits
    python3 - "$serve_port" <<'PY' | serve_relay "slot: "
import sys
sys.path.insert(0, "tests/cli/lib")
from http_post import poster, check
post = poster(int(sys.argv[1]))
st, text = post("/slots/0?action=restore", {"filename": "s.bin"})
check("restore of NaN logits: 400, deleted (%s)" % text[:120],
      st == 400 and "non-finite" in text and "deleted" in text, text)
print("client-finished")
PY
    check "slot: the poisoned slot file is gone" [ ! -e "$work/slots/s.bin" ]
    r=$(client "$serve_port")
    check "slot: the next request answers as cold" \
        both "$(field "$r" 1)" 200 "$(field "$r" 2)" "$(field "$cold" 2)"
    serve_stop "$serve_pid"
fi

if cat "$work"/*.err 2>/dev/null | grep -q "ERROR: \|runtime error"; then
    bad "sanitizer reports: $(cat "$work"/*.err | grep -m3 -A20 'ERROR: \|runtime error')"
else ok "no sanitizer report"; fi
finish
