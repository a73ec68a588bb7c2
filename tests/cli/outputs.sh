#!/usr/bin/env bash
# Files the commands write and read (issue 10, D6-D9): an output that is an
# input (the model, a part of a split model, -f, a KL-divergence base being
# read; through a symlink, a hard link or ./x) is refused and the input left
# as it was; every failed write (a full device, a missing directory, a closed
# stdout, a file size limit) is an error naming the file with a non-zero exit;
# the KL-divergence base is never left half-written; inputs are regular files
# of at most 1 GiB, and a FIFO, device or directory is refused without
# blocking (each command under `timeout`, so a regression fails, not hangs).
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-out-XXXXXX")
trap 'rm -rf "$work"' EXIT
TO="timeout 60"

M=$work/m.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 5 -q -o "$M"; then
    bad "mkmodel"
    finish
    exit 1
fi
cp "$M" "$work/orig.gguf"
ln -s m.gguf "$work/sym.gguf"
ln "$M" "$work/hard.gguf"
head -c 6000 /work/shared/fixtures/reference/text.txt >"$work/text.txt" 2>/dev/null ||
    for i in $(seq 1 200); do echo "the keeper walked along the canal to the lock $i"; done >"$work/text.txt"
echo "Once upon a time" >"$work/prompt.txt"

# expect_refused NAME PATTERN CMD...: CMD exits non-zero and its stderr
# contains PATTERN
expect_refused() {
    local name=$1 pat=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- "$pat" "$work/err"; then ok "$name"
    else bad "$name: exit $rc, stderr: $(head -c 400 "$work/err")"; fi
}
model_intact() { cmp -s "$M" "$work/orig.gguf"; }

# ---- D6: an output that is an input ------------------------------------------
expect_refused "--stats-json naming the model" "same file as the model" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 2 --stats-json "$M"
check "  the model is intact" model_intact
expect_refused "--stats-json through a symlink to the model" "same file as the model" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 2 --stats-json "$work/sym.gguf"
expect_refused "--stats-json as ./x of the model" "same file as the model" \
    $TO bash -c "cd '$work' && '$SLUICE' run -m m.gguf -p Hi -n 2 --stats-json ./m.gguf"
expect_refused "--io-trace through a hard link, streaming" "same file as the model" \
    $TO "$SLUICE" run -m "$work/sym.gguf" -p Hi -n 2 --moe-stream --io-trace "$work/hard.gguf"
expect_refused "--io-trace naming the model, resident" "same file as the model" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 2 --no-stream --io-trace "$M"
expect_refused "chat --stats-json naming the model" "same file as the model" \
    $TO "$SLUICE" chat -m "$M" --stats-json "$work/hard.gguf" </dev/null
expect_refused "bench --stats-json naming the model" "same file as the model" \
    $TO "$SLUICE" bench -m "$M" -p 4 -n 2 -r 1 --stats-json "$M"
expect_refused "perplexity --kl-divergence-base naming the model" "same file as the model" \
    $TO "$SLUICE" perplexity -m "$M" -f "$work/text.txt" -c 64 --kl-divergence-base "$M"
check "  the model is intact" model_intact
expect_refused "--stats-json naming the -f prompt" "same file as the prompt file" \
    $TO "$SLUICE" run -m "$M" -f "$work/prompt.txt" -n 2 --stats-json "$work/prompt.txt"
check "  the prompt is intact" grep -q "Once upon a time" "$work/prompt.txt"
expect_refused "standard output appended to the model" "standard output is the same file" \
    $TO bash -c "'$SLUICE' run -m '$M' -p Hi -n 2 >>'$M'"
expect_refused "tokenize appending to the model" "standard output is the same file" \
    $TO bash -c "'$SLUICE' tokenize -m '$M' -p Hi >>'$work/sym.gguf'"
check "  the model is intact" model_intact
expect_refused "--stats-json and --io-trace in one file" "are the same file" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 2 --moe-stream --io-trace "$work/same" \
    --stats-json "$work/same"
touch "$work/same2"
expect_refused "--stats-json and --io-trace in one existing file" "are the same file" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 2 --moe-stream --io-trace "$work/same2" \
    --stats-json "$work/./same2"

# a KLD base being read is an input
$TO "$SLUICE" perplexity -m "$M" -f "$work/text.txt" -c 64 --chunks 2 \
    --kl-divergence-base "$work/base.kld" >/dev/null 2>"$work/err"
check "perplexity writes a base" test -s "$work/base.kld"
cp "$work/base.kld" "$work/base.orig"
expect_refused "--stats-json naming the KLD base being read" "same file as the KL-divergence base" \
    $TO "$SLUICE" perplexity -m "$M" --kl-divergence-base "$work/base.kld" --kl-divergence \
    --stats-json "$work/base.kld"
check "  the base is intact" same_text "$work/base.kld" "$work/base.orig"

# a split model: the second part is an input too (part 2 holds no tensors:
# a 24-byte GGUF v3 header)
cp "$M" "$work/s-00001-of-00002.gguf"
printf 'GGUF\003\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' \
    >"$work/s-00002-of-00002.gguf"
cp "$work/s-00002-of-00002.gguf" "$work/part2.orig"
if $TO "$SLUICE" run -m "$work/s-00001-of-00002.gguf" -p Hi -n 2 >/dev/null 2>&1; then
    expect_refused "--stats-json naming part 2 of a split model" "a part of the model" \
        $TO "$SLUICE" run -m "$work/s-00001-of-00002.gguf" -p Hi -n 2 \
        --stats-json "$work/s-00002-of-00002.gguf"
    expect_refused "--io-trace naming part 2 of a split model" "is the model file" \
        $TO "$SLUICE" run -m "$work/s-00001-of-00002.gguf" -p Hi -n 2 --moe-stream \
        --io-trace "$work/s-00002-of-00002.gguf"
    check "  part 2 is intact" same_text "$work/s-00002-of-00002.gguf" "$work/part2.orig"
else
    bad "the two-part split model does not load"
fi

# ---- D7: failed writes --------------------------------------------------------
# A device node of our own where a regression could remove or replace it
# (mkmodel deletes a half-written output; a rename replaces its target).
FULL=/dev/full
mknod "$work/full" c 1 7 2>/dev/null && FULL=$work/full
expect_refused "--stats-json to a full device" "'$FULL' failed: No space left" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 2 --stats-json "$FULL"
expect_refused "--stats-json into a missing directory" "No such file or directory" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 2 --stats-json "$work/no/such/dir.json"
expect_refused "run > /dev/full" "No space left on device" \
    $TO bash -c "'$SLUICE' run -m '$M' -p Hi -n 4 >/dev/full"
expect_refused "run with stdout closed" "Bad file descriptor" \
    $TO bash -c "'$SLUICE' run -m '$M' -p Hi -n 4 >&-"
# with stdout closed, the generated text must not land in the next file
# opened (the trace takes the lowest free descriptor): only trace lines
$TO bash -c "'$SLUICE' run -m '$M' -p Hi -n 4 --moe-stream --io-trace '$work/t.trace' >&-" \
    2>/dev/null
check "  the trace holds only trace lines" bash -c \
    "[ -s '$work/t.trace' ] && ! grep -qv '^layer=[0-9]* expert=[0-9]* proj=' '$work/t.trace'"
expect_refused "tokenize > /dev/full" "cannot write standard output: No space left" \
    $TO bash -c "'$SLUICE' tokenize -m '$M' -p Hello >/dev/full"
expect_refused "inspect > /dev/full" "No space left\|writing the output failed" \
    $TO bash -c "'$SLUICE' inspect '$M' >/dev/full"
expect_refused "perplexity > /dev/full" "No space left on device" \
    $TO bash -c "'$SLUICE' perplexity -m '$M' -f '$work/text.txt' -c 64 --chunks 2 >/dev/full"
expect_refused "bench > /dev/full" "No space left on device" \
    $TO bash -c "'$SLUICE' bench -m '$M' -p 4 -n 2 -r 1 >/dev/full"
if [ "$FULL" != /dev/full ]; then
    expect_refused "mkmodel -o a device" "is a character device; the model is written to a" \
        $TO "$SLUICE" mkmodel --arch qwen3moe --preset tiny -q -o "$FULL"
    check "  the device node is still there" test -c "$FULL"
fi
expect_refused "--io-trace unwritable, not streaming" "--io-trace: cannot create" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 2 --no-stream --io-trace "$work/no/such/trace"
expect_refused "--io-trace to a full device, streaming" "I/O trace '$FULL' failed: No space left" \
    $TO "$SLUICE" run -m "$M" -p Hi -n 2 --moe-stream --io-trace "$FULL"
$TO "$SLUICE" run -m "$M" -p Hi -n 2 --no-stream --io-trace "$work/empty.trace" >/dev/null 2>&1
check "--io-trace without streaming is created empty" \
    bash -c "[ -f '$work/empty.trace' ] && [ ! -s '$work/empty.trace' ]"

# the KLD base: a write failure (file size limit: EFBIG) leaves the old file
# and no temporary behind
cp "$work/base.kld" "$work/keep.kld"
expect_refused "KLD base past the file size limit" "not written.*File too large" \
    bash -c "trap '' XFSZ; ulimit -f 40; $TO '$SLUICE' perplexity -m '$M' -f '$work/text.txt' \
    -c 128 --chunks 2 --kl-divergence-base '$work/keep.kld'"
check "  the old base is left as it was" cmp -s "$work/keep.kld" "$work/base.kld"
check "  no temporary file is left" bash -c "! ls -a '$work' | grep -q 'tmp-'"
expect_refused "KLD base to a device" "character device; the base file must be a regular file" \
    $TO "$SLUICE" perplexity -m "$M" -f "$work/text.txt" -c 64 --kl-divergence-base "$FULL"
check "  the device node is still there" test -c "$FULL"
$TO "$SLUICE" perplexity -m "$M" --kl-divergence-base "$work/base.kld" --kl-divergence \
    >"$work/kld.out" 2>&1
check "a complete base reads back" grep -q "Same top p" "$work/kld.out"

# ---- D8: whole-text inputs ----------------------------------------------------
expect_refused "run -f /dev/zero" "'/dev/zero' is a character device" \
    $TO "$SLUICE" run -m "$M" -f /dev/zero -n 2
expect_refused "perplexity -f /dev/zero" "'/dev/zero' is a character device" \
    $TO "$SLUICE" perplexity -m "$M" -f /dev/zero
expect_refused "tokenize -f - from /dev/zero" "standard input is a character device" \
    $TO bash -c "'$SLUICE' tokenize -m '$M' -f - </dev/zero"
truncate -s $((1024 * 1024 * 1024 + 1)) "$work/huge.txt"
expect_refused "a text over 1 GiB" "limit for an input text (1 GiB)" \
    $TO "$SLUICE" tokenize -m "$M" -f "$work/huge.txt"
rm -f "$work/huge.txt"
a=$(printf 'Hello world' | $TO "$SLUICE" tokenize -m "$M" -f - --ids 2>&1)
b=$($TO "$SLUICE" tokenize -m "$M" -p 'Hello world' --ids 2>&1)
check "tokenize -f - reads a pipe" test -n "$a" -a "$a" == "$b"
expect_refused "chat: a 16 MiB line without a newline" "longer than 16 MiB" \
    $TO bash -c "head -c 17000000 /dev/zero | '$SLUICE' chat -m '$M'"

# ---- D9: FIFOs, directories, devices as inputs -----------------------------------
mkfifo "$work/fifo"
expect_refused "run -m FIFO" "is a FIFO, not a regular file" \
    timeout 20 "$SLUICE" run -m "$work/fifo" -p Hi
expect_refused "inspect FIFO" "is a FIFO, not a regular file" \
    timeout 20 "$SLUICE" inspect "$work/fifo"
expect_refused "KLD base FIFO" "is a FIFO, not a regular file" \
    timeout 20 "$SLUICE" perplexity -m "$M" --kl-divergence-base "$work/fifo" --kl-divergence
expect_refused "run -f FIFO" "is a FIFO, not a regular file" \
    timeout 20 "$SLUICE" run -m "$M" -f "$work/fifo"
expect_refused "--stats-json to a FIFO without a reader" "FIFO with no reader" \
    timeout 20 "$SLUICE" run -m "$M" -p Hi -n 2 --stats-json "$work/fifo"
expect_refused "mkmodel -o FIFO" "is a FIFO; the model is written to a regular file" \
    timeout 20 "$SLUICE" mkmodel --arch qwen3moe --preset tiny -q -o "$work/fifo"
expect_refused "run -m a directory" "is a directory, not a regular file" \
    timeout 20 "$SLUICE" run -m "$work" -p Hi
expect_refused "tokenize -m /dev/null" "is a character device, not a regular file" \
    timeout 20 "$SLUICE" tokenize -m /dev/null -p Hi

finish
