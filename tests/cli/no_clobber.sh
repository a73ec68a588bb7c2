#!/usr/bin/env bash
# Outputs never clobber inputs (issue 29, N1): a --prompt-cache path that is
# the model, a text file, a symlink to the model or a FIFO is neither read
# nor written (one warning line, the run goes on without the cache, exit 0);
# `chat` the same; mkmodel -o over a file that is not a GGUF is refused; a
# text output (--stats-json) never replaces a binary file; the server's slot
# save over the model (or any non-session file) in --slot-save-path is
# refused with 400. Each victim is compared byte for byte with a copy.
set -u
. "$(dirname "$0")/lib/common.sh"
. tests/cli/lib/serve.sh
serve_setup noclobber
TO="timeout 120"

M=$work/victim.gguf
serve_model "$M" --arch mixtral --preset tiny --type q8_0
cp "$M" "$work/orig.gguf"
intact() { cmp -s "$M" "$work/orig.gguf"; }
echo "my notes" >"$work/notes.txt"
cp "$work/notes.txt" "$work/notes.orig"
ln -s victim.gguf "$work/link.pc"

# cache_refused NAME CACHE [CMD]: a run (or chat) with --prompt-cache CACHE
# exits 0, prints exactly one warning line about the prompt cache, and
# answers what a run without the cache answers
want=$($TO "$SLUICE" run -m "$M" -p "Hello there" -n 2 --temp 0 -t 1 2>/dev/null)
cache_refused() {
    local name=$1 cache=$2
    $TO "$SLUICE" run -m "$M" -p "Hello there" -n 2 --temp 0 -t 1 --prompt-cache "$cache" \
        >"$work/out" 2>"$work/err"
    local rc=$?
    local n_warn
    n_warn=$(grep -c 'warning' "$work/err")
    if [ $rc -eq 0 ] && [ "$n_warn" -eq 1 ] &&
        grep -q 'warning: prompt cache: .*left as it is; going on without the prompt cache' \
            "$work/err" && [ "$(cat "$work/out")" = "$want" ]; then
        ok "$name: one warning line, exit 0, the same answer"
    else
        bad "$name: exit $rc, $n_warn warnings: $(head -c 600 "$work/err")"
    fi
}

cache_refused "the model as its own prompt cache" "$M"
check "  the model is unchanged" intact
cache_refused "a text file as the prompt cache" "$work/notes.txt"
check "  the text file is unchanged" cmp -s "$work/notes.txt" "$work/notes.orig"
cache_refused "a symlink to the model as the prompt cache" "$work/link.pc"
check "  the model is unchanged" intact
check "  the symlink is still a symlink" test -L "$work/link.pc"
cp "$M" "$work/copy.gguf"
cache_refused "another GGUF as the prompt cache" "$work/copy.gguf"
check "  that GGUF is unchanged" cmp -s "$work/copy.gguf" "$work/orig.gguf"
mkfifo "$work/fifo"
cache_refused "a FIFO as the prompt cache" "$work/fifo"
check "  the FIFO is still a FIFO" test -p "$work/fifo"

printf 'hi\n' | $TO "$SLUICE" chat -m "$M" -n 2 --temp 0 -t 1 --prompt-cache "$M" \
    >"$work/out" 2>"$work/err"
rc=$?
check "chat with the model as the prompt cache: exit 0 ($rc), one warning line" \
    bash -c "[ $rc -eq 0 ] && [ \$(grep -c warning '$work/err') -eq 1 ]"
check "  the model is unchanged" intact

# a session file of its own is still written and used
$TO "$SLUICE" run -m "$M" -p "Hello there" -n 2 --temp 0 -t 1 --prompt-cache "$work/ok.pc" \
    >/dev/null 2>&1
$TO "$SLUICE" run -m "$M" -p "Hello there" -n 2 --temp 0 -t 1 --prompt-cache "$work/ok.pc" \
    >"$work/out" 2>"$work/err"
check "a real prompt cache is still saved and restored" \
    grep -q "prompt cache: [1-9][0-9]* of [0-9]* prompt tokens restored" "$work/err"
check "  with the same answer" [ "$(cat "$work/out")" = "$want" ]

# mkmodel -o: a GGUF may be replaced, nothing else
expect_refused() { # expect_refused NAME PATTERN CMD...: non-zero exit, stderr has PATTERN
    local name=$1 pat=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    if [ $rc -ne 0 ] && grep -q -- "$pat" "$work/err"; then ok "$name"
    else bad "$name: exit $rc, stderr: $(head -c 400 "$work/err")"; fi
}
expect_refused "mkmodel -o over a text file" "is a text file, not a GGUF model" \
    $TO "$SLUICE" mkmodel --arch mixtral --preset tiny -q -o "$work/notes.txt"
check "  the text file is unchanged" cmp -s "$work/notes.txt" "$work/notes.orig"
check "  and no temporary file is left" bash -c "! ls -a '$work' | grep -q 'tmp-'"
check "mkmodel -o over a GGUF replaces it" \
    $TO "$SLUICE" mkmodel --arch mixtral --preset tiny --seed 9 -q -o "$work/copy.gguf"
check "  with a different model" bash -c "! cmp -s '$work/copy.gguf' '$work/orig.gguf'"

# a text output never replaces a binary file
cp "$M" "$work/data.bin"
expect_refused "--stats-json over a binary file" "not text" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 1 -t 1 --stats-json "$work/data.bin"
check "  the binary file is unchanged" cmp -s "$work/data.bin" "$work/orig.gguf"

# ---- the server: a slot save over the model in --slot-save-path ---------------
mkdir -p "$work/slots"
mv "$M" "$work/slots/model.gguf"
M=$work/slots/model.gguf
cp "$work/orig.gguf" "$work/slots/other.gguf"
if serve_start srv -m "$M" -c 512 -t 1 --slot-save-path "$work/slots"; then
    python3 - "$serve_port" <<'PY' | serve_relay "slot save: "
import json, sys, urllib.request, urllib.error
sys.path.insert(0, "tests/cli/lib")
from http_post import poster, check
post = poster(int(sys.argv[1]))
st, _ = post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                      "max_tokens": 2, "temperature": 0})
check("a request first (the slot holds tokens)", st == 200, st)
for name in ("model.gguf", "other.gguf"):
    st, text = post("/slots/0?action=save", {"filename": name})
    check("over %s: 400 (%s)" % (name, text[:160]), st == 400 and "left as it is" in text, text)
st, text = post("/slots/0?action=save", {"filename": "mine.bin"})
check("to a new name: 200", st == 200, text)
st, text = post("/slots/0?action=save", {"filename": "mine.bin"})
check("over its own save: 200", st == 200, text)
print("client-finished")
PY
    serve_stop "$serve_pid"
    check "the model in --slot-save-path is unchanged" cmp -s "$M" "$work/orig.gguf"
    check "the other GGUF there is unchanged" cmp -s "$work/slots/other.gguf" "$work/orig.gguf"
    check "the next start of the server still loads the model" \
        serve_start srv2 -m "$M" -c 512 -t 1
    serve_stop "$serve_pid"
fi

if cat "$work"/*.err 2>/dev/null | grep -q "ERROR: \|runtime error"; then
    bad "sanitizer reports: $(cat "$work"/*.err | grep -m3 -A20 'ERROR: \|runtime error')"
else ok "no sanitizer report"; fi
finish
