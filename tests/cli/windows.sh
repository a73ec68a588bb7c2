#!/usr/bin/env bash
# The Windows exe (make windows) under wine: the demo model (qwen3moe,
# preset small, q4_k_m, seed 1) written by the Linux binary decodes greedily
# (64 tokens) to the Linux build's bytes, resident and streamed (unbuffered
# overlapped lanes, a 96-expert cache); so do tiny qwen35moe, gpt-oss and
# gemma4 (tanh softcap, GELU) models, resident and streamed. That holds
# because the exe's expf, logf, powf, sinf, cosf, tanhf are glibc 2.36's
# twins (src/util/libm_glibc.c; the engine's own arithmetic, fmaf
# included, is the same: docs/ARCHITECTURE.md, "Windows"), so the Linux
# reference is the plain Linux build. A copy of the model with a non-ASCII
# name loads and gives the same text; so do sampled text and a model the
# exe's mkmodel writes, a two-turn chat, perplexity's figures and inspect's
# listing; bench times; a prompt cache in a non-ASCII directory is hit, and
# the usage history lives under a non-ASCII %LOCALAPPDATA%, and serve's
# --prompt-cache and --slot-save-path work in such directories; a streamed run creates no file section and leaves
# no view of the model (SLUICE_WIN_MAP_REPORT); `tokenize` lists the
# tokenizer fixtures as Linux does; `iobench` reports unbuffered
# overlapped lanes; the model file is never mapped (--dense-weights mmap is
# refused); `serve` is tests/cli/windows_serve.sh. Skipped (0 passed) when
# build/windows/sluice.exe or wine is missing; .ci/run builds it first.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/wine.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-win-XXXXXX")
trap 'serve_stop_all; rm -rf "$work"' EXIT
win() { "$WINE" "$EXE" "$@"; }

M=$work/demo.gguf
"$X86" mkmodel --arch qwen3moe --preset small --type q4_k_m --seed 1 -q -o "$M"
check "Linux mkmodel writes the demo model" [ -s "$M" ]
P="The river carries"
"$X86" run -m "$M" -p "$P" -n 64 --temp 0 -t 2 >"$work/lin.txt" 2>/dev/null
check "Linux greedy run" [ -s "$work/lin.txt" ]

win run -m "$M" -p "$P" -n 64 --temp 0 -t 2 >"$work/res.txt" 2>"$work/res.err"
check "exe resident greedy text (64 tokens) equals Linux's byte for byte" \
    same_text "$work/lin.txt" "$work/res.txt"
SLUICE_WIN_MAP_REPORT=1 win run -m "$M" -p "$P" -n 64 --temp 0 -t 2 --moe-stream \
    --cache-experts 96 --stats >"$work/str.txt" 2>"$work/str.err"
check "exe streamed greedy text equals Linux's byte for byte" same_text "$work/lin.txt" "$work/str.txt"
check "exe streams through unbuffered overlapped lanes" \
    grep -q 'I/O overlapped x[0-9]*, FILE_FLAG_NO_BUFFERING' "$work/str.err"
check "a streamed run creates no file section and leaves no view of the model" \
    grep -q 'map report: 0 file sections created, 0 views of .gguf files alive' "$work/str.err"

# qwen35moe, gpt-oss (its answer goes through the harmony stream: a pipe
# and a thread in the exe) and gemma4 generated models, resident and streamed
for arch in qwen35moe:q4_k_m:16 gpt-oss:q8_0:8 gemma4:q4_k_m:8; do
    IFS=: read -r a t c <<<"$arch"
    G=$work/$a.gguf
    "$X86" mkmodel --arch "$a" --preset tiny --type "$t" --seed 1 -q -o "$G" 2>/dev/null
    "$X86" run -m "$G" -p "Hi there" -n 32 --temp 0 -t 2 >"$work/$a-lin.txt" 2>/dev/null
    win run -m "$G" -p "Hi there" -n 32 --temp 0 -t 2 >"$work/$a-res.txt" 2>/dev/null
    check "$a: exe resident greedy text equals Linux's" \
        same_text "$work/$a-lin.txt" "$work/$a-res.txt"
    win run -m "$G" -p "Hi there" -n 32 --temp 0 -t 2 --moe-stream --cache-experts "$c" \
        >"$work/$a-str.txt" 2>/dev/null
    check "$a: exe streamed greedy text equals Linux's" same_text "$work/$a-lin.txt" "$work/$a-str.txt"
done

# sampling (temperature 0.9, seeded: the sampler's double exp is still the
# C runtime's) and a model written by the exe's mkmodel equal Linux's too
"$X86" run -m "$M" -p "$P" -n 32 --temp 0.9 --seed 7 -t 2 >"$work/lin-t.txt" 2>/dev/null
win run -m "$M" -p "$P" -n 32 --temp 0.9 --seed 7 -t 2 >"$work/res-t.txt" 2>/dev/null
check "exe sampled text (temp 0.9, seed 7) equals Linux's" same_text "$work/lin-t.txt" "$work/res-t.txt"
win mkmodel --arch qwen35moe --preset tiny --type q4_k_m --seed 1 -q -o "$work/q35-win.gguf" 2>/dev/null
check "exe mkmodel writes Linux's bytes" same_text "$work/qwen35moe.gguf" "$work/q35-win.gguf"

# the other commands: chat (stdin, greedy), perplexity, inspect and bench
printf 'Hello there\nTell me more\n' | "$X86" chat -m "$M" -n 16 --temp 0 -t 2 >"$work/lin-chat.txt" 2>/dev/null
printf 'Hello there\nTell me more\n' | win chat -m "$M" -n 16 --temp 0 -t 2 >"$work/res-chat.txt" 2>/dev/null
check "exe chat (two turns from stdin) equals Linux's" same_text "$work/lin-chat.txt" "$work/res-chat.txt"
for i in $(seq 1 24); do echo "The river carries the boat past the mill and under the old bridge."; done \
    >"$work/ppl.txt"
"$X86" perplexity -m "$M" -f "$work/ppl.txt" -c 64 -t 2 >"$work/lin-ppl.txt" 2>/dev/null
win perplexity -m "$M" -f "$work/ppl.txt" -c 64 -t 2 >"$work/res-ppl.txt" 2>/dev/null
check "exe perplexity's chunk figures equal Linux's" \
    eval '[ -s "$work/lin-ppl.txt" ] && cmp -s "$work/lin-ppl.txt" "$work/res-ppl.txt"'
"$X86" inspect -m "$M" 2>/dev/null | tail -n +2 >"$work/lin-insp.txt"
win inspect -m "$M" 2>/dev/null | tr -d '\r' | tail -n +2 >"$work/res-insp.txt"
check "exe inspect lists what Linux's lists" \
    eval '[ -s "$work/lin-insp.txt" ] && cmp -s "$work/lin-insp.txt" "$work/res-insp.txt"'
win bench -m "$M" -p 8 -n 4 -r 1 -t 2 >"$work/bench.txt" 2>/dev/null
check "exe bench times pp8 and tg4" eval 'grep -q "| *pp8 |" "$work/bench.txt" && grep -q "| *tg4 |" "$work/bench.txt"'

U="$work/módel-модель-模型.gguf"
cp "$M" "$U"
win run -m "$U" -p "$P" -n 64 --temp 0 -t 2 >"$work/uni.txt" 2>"$work/uni.err"
check "a model with a non-ASCII name loads and gives the same text" \
    same_text "$work/res.txt" "$work/uni.txt"

# tokenize: the llama.cpp vocabulary fixtures' strings (checked against the
# fixtures' ids by tokenize.sh on Linux) give Linux's listing, and a
# non-ASCII prompt arrives intact through the UTF-16 command line
for v in gpt-2 llama-spm deepseek-llm; do
    F=tests/data/tokenizers/ggml-vocab-$v.gguf
    "$X86" tokenize -m "$F" -f "$F.inp" >"$work/tok-$v-lin.txt" 2>&1
    win tokenize -m "$F" -f "$F.inp" >"$work/tok-$v-win.txt" 2>&1
    check "tokenize $v: the exe's listing equals Linux's" \
        same_text "$work/tok-$v-lin.txt" "$work/tok-$v-win.txt"
done
"$X86" tokenize -m tests/data/tokenizers/ggml-vocab-gpt-2.gguf -p "🦙 naïve" >"$work/tok-p-lin.txt"
win tokenize -m tests/data/tokenizers/ggml-vocab-gpt-2.gguf -p "🦙 naïve" >"$work/tok-p-win.txt"
check "tokenize a non-ASCII prompt: the exe's listing equals Linux's" \
    same_text "$work/tok-p-lin.txt" "$work/tok-p-win.txt"

win iobench --model "$M" --lanes 1,4 --seconds 0.3 >"$work/io.txt" 2>&1
check "iobench reports unbuffered overlapped lanes" \
    grep -Eq '^ +4 .* unbuffered overlapped$' "$work/io.txt"
# the map report sees a mapping when there is one: iobench --mmap maps
SLUICE_WIN_MAP_REPORT=1 win iobench --model "$M" --mmap --lanes 1 --seconds 0.2 >"$work/iom.txt" 2>&1
check "the map report counts the sections iobench --mmap creates" \
    grep -Eq 'map report: [1-9][0-9]* file sections created' "$work/iom.txt"

# paths with non-ASCII directory names (stat, access, opendir and the
# environment go through UTF-16, as file opens do): a prompt cache in such a
# directory is written, then hit by a second run with the same prompt
PC="$work/cache-é中"
mkdir "$PC"
for i in 1 2; do
    win run -m "$M" -p "$P" -n 8 --temp 0 -t 2 --prompt-cache "$PC/p.cache" \
        >"$work/pc$i.txt" 2>"$work/pc$i.err"
done
check "a prompt cache in a non-ASCII directory is written" [ -s "$PC/p.cache" ]
check "a second run restores the prompt from it" \
    grep -Eq "^prompt cache: [1-9][0-9]* of [0-9]+ prompt tokens restored" "$work/pc2.err"
check "the restored run gives the same text" same_text "$work/pc1.txt" "$work/pc2.txt"
# the expert-usage history under %LOCALAPPDATA%\sluice when that directory
# (the user's profile) has a non-ASCII name, for a model with one too. Wine
# sets LOCALAPPDATA from its prefix's profile, so cmd sets it for the exe.
zpath() { printf 'Z:%s' "$(printf '%s' "$1" | tr / '\\')"; }
LA="$work/appdata-é中"
mkdir "$LA"
EXE_W=$(zpath "$(cd "$(dirname "$EXE")" && pwd)/$(basename "$EXE")")
for i in 1 2; do
    env -u XDG_CACHE_HOME "$WINE" cmd /c "set LOCALAPPDATA=$(zpath "$LA")&& $EXE_W run -m \
$(zpath "$U") -p river -n 8 --temp 0 -t 2 --moe-stream --cache-experts 96 --stats" \
        >/dev/null 2>"$work/la$i.err"
done
check "the usage history is kept under a non-ASCII %LOCALAPPDATA%\\sluice" \
    eval 'ls "$LA"/sluice/*.usage >/dev/null 2>&1 && grep -q "no history yet" "$work/la1.err"'
check "a second run preloads from that history" \
    grep -Eq "warm start +[1-9][0-9]* of [0-9]+ hottest experts preloaded" "$work/la2.err"

# serve --prompt-cache DIR and --slot-save-path DIR in non-ASCII
# directories: a restarted server finds the prefix the first one saved
# (opendir/readdir), and a slot is saved as DIR/F
SD="$work/srv-é中" SS="$work/slots-é中"
mkdir "$SD" "$SS"
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$WINE" "$(cd "$(dirname "$EXE")" && pwd)/$(basename "$EXE")" \
    >"$work/sluice-win"
chmod +x "$work/sluice-win"
for i in 1 2; do
    if SLUICE=$work/sluice-win serve_start srv$i -m "$M" -c 512 -t 1 --prompt-cache "$SD" \
        --slot-save-path "$SS"; then
        curl -s -m 60 "http://127.0.0.1:$serve_port/completion" \
            -d '{"prompt":"Once upon a time","n_predict":2}' >"$work/srv$i.json"
        [ $i = 1 ] && curl -s -m 60 -X POST "http://127.0.0.1:$serve_port/slots/0?action=save" \
            -d '{"filename":"s.bin"}' >"$work/slot.json"
        serve_stop "$serve_pid"
    fi
done
check "serve saves a prompt in a non-ASCII --prompt-cache DIR and a restart lists it" \
    grep -q "prompt cache in '.*': 1 saved prefix of this model" "$work/srv2.err"
check "the restarted server reuses it" grep -Eq '"tokens_cached":[1-9]' "$work/srv2.json"
check "a slot is saved in a non-ASCII --slot-save-path DIR" [ -s "$SS/s.bin" ]

win run -m "$M" -p "$P" -n 4 --dense-weights mmap >/dev/null 2>"$work/map.err"
rc=$?
check "the exe refuses to map the model file" \
    eval '[ $rc -ne 0 ] && grep -q "never maps model files" "$work/map.err"'

finish
