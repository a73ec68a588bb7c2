#!/usr/bin/env bash
# `sluice perplexity` on generated tiny models: llama.cpp's output format,
# results independent of threads and batch size, the KL-divergence base
# file (its exact size from the layout in src/eval/kld_file.h), KLD of a
# model against itself (zero, same top token everywhere) and of its q8_0
# twin (small but not zero), and the error cases.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-ppl-XXXXXX")
trap 'rm -rf "$work"' EXIT

F32=$work/f32.gguf
Q8=$work/q8.gguf
V600=$work/v600.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 11 -q -o "$F32" ||
    ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 11 --type q8_0 -q -o "$Q8" ||
    ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 11 --vocab 600 -q -o "$V600"; then
    bad "mkmodel"
    echo "$pass passed, $fail failed"
    exit 1
fi

T=$work/text.txt
cat >"$T" <<'EOF'
Every morning the keeper walked along the canal to the lock and read the level
of the water from the painted post. When the boats came up from the river he
closed the lower gate, opened the sluice in the upper one, and waited while the
chamber filled. It took eleven minutes in summer and nearly twenty in a dry
autumn, when the feeder stream ran thin and the reservoir above the village was
low. The boatmen knew this and did not hurry him.

His notebook recorded the boats by name: the Heron, the Patience, the Margaret
Ann, and a green barge with no name at all that carried coal twice a week. He
wrote down the cargo, the draught and the time of passage, and in the margin
the weather. On the 14th of March there was ice on the upper pound; on the 2nd
of June the water was so warm that weed grew over the cill and had to be raked
away before the gate would close.

People asked him whether the work was dull. He said it was like keeping a clock
that someone else wound: you did not make the water, you only decided when it
moved. A lock that leaks loses the pound above it overnight; a gate opened too
fast throws the boat against the wall. The skill was in the waiting, and in
knowing which sounds from the culverts meant trouble and which meant nothing.

In the winter, when traffic stopped, the canal company drained a length at a
time and the keepers mended what the summer had broken. They replaced rotten
balance beams, reset the coping stones, and puddled the bed with clay so that
it held water again. It was cold, heavy work, and at the end of each day the
men sat in the lock cottage and talked about the boats they had seen and the
ones they expected in spring.
EOF
for i in 1 2; do cat "$T" "$T" >"$T.x" && mv "$T.x" "$T"; done # four copies: ~7 KB
C=64
N=5

# ---- perplexity and its format ------------------------------------------------------------
"$SLUICE" perplexity --help >"$work/help" 2>&1
check "--help exits 0" [ $? -eq 0 ]
check "--help mentions --kl-divergence-base" grep -q -- "--kl-divergence-base" "$work/help"

"$SLUICE" perplexity -m "$F32" -f "$T" -c $C --chunks $N -t 1 >"$work/p1" 2>&1
check "perplexity exits 0" [ $? -eq 0 ]
# llama.cpp's running estimate "[1]x,[2]y,...,[5]z," then the final line
check "per-chunk running PPL [1]..[$N]" grep -Eq '^\[1\][0-9]+\.[0-9]{4},\[2\][0-9]+\.[0-9]{4},\[3\][0-9.]+,\[4\][0-9.]+,\[5\][0-9.]+,$' "$work/p1"
check "final estimate line" grep -Eq '^Final estimate: PPL = [0-9]+\.[0-9]{4} \+/- [0-9]+\.[0-9]{5}$' "$work/p1"
ppl=$(sed -nE 's/^Final estimate: PPL = ([0-9.]+) .*/\1/p' "$work/p1")
# a perplexity is >= 1; a random model over 512 tokens sits near 512, far from 1e5
check "PPL is a plausible number ($ppl)" awk -v p="$ppl" 'BEGIN { exit !(p > 1 && p < 100000) }'
check "the last running value is the final estimate" grep -q "\[$N\]$ppl," "$work/p1"

"$SLUICE" perplexity -m "$F32" -f "$T" -c $C --chunks $N -t 2 >"$work/p2" 2>&1
check "-t 2 gives the same figures" [ "$(grep -E '^\[1\]|^Final' "$work/p1")" = "$(grep -E '^\[1\]|^Final' "$work/p2")" ]
"$SLUICE" perplexity -m "$F32" -f "$T" -c $C --chunks $N -t 1 -b 16 >"$work/p3" 2>&1
ppl3=$(sed -nE 's/^Final estimate: PPL = ([0-9.]+) .*/\1/p' "$work/p3")
# batches of 16 group the matrix products differently: equal within float
# rounding (relative 1e-4), not necessarily bit for bit
check "-b 16 agrees with -b 64 ($ppl3 vs $ppl)" awk -v a="$ppl" -v b="$ppl3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b != "" && d / a < 1e-4) }'

# ---- base file ----------------------------------------------------------------------------------
B=$work/base.kld
"$SLUICE" perplexity -m "$F32" -f "$T" -c $C --chunks $N -t 1 --kl-divergence-base "$B" >"$work/pb" 2>&1
check "writing the base exits 0" [ $? -eq 0 ]
check "writing the base prints the same PPL" grep -q "Final estimate: PPL = $ppl " "$work/pb"
# header 20 bytes + tokens 4*C*N + rows N*(C-1-C/2)*2*(2*((V+1)/2)+4)
# = 20 + 4*64*5 + 5*31*2*(512+4) = 20 + 1280 + 159960 = 161260
check "base file has the exact size (161260)" [ "$(wc -c <"$B")" -eq 161260 ]
check "base file starts with _logits_" [ "$(head -c 8 "$B")" = "_logits_" ]

# ---- KL-divergence: the same model ----------------------------------------------------------
"$SLUICE" perplexity -m "$F32" --kl-divergence-base "$B" --kl-divergence -t 1 >"$work/k1" 2>&1
check "KLD against itself exits 0" [ $? -eq 0 ]
check "KLD table header" grep -q "^chunk  *PPL  *ln(PPL(Q)/PPL(base))  *KL Divergence" "$work/k1"
check "one table line per chunk" [ "$(grep -cE '^ +[0-9]+ +[0-9.]+ ± ' "$work/k1")" -eq $N ]
kmean=$(sed -nE 's/^Mean    KLD: +(-?[0-9.]+) .*/\1/p' "$work/k1")
same=$(sed -nE 's/^Same top p: +([0-9.]+) .*/\1/p' "$work/k1")
# the base stores log-probs in 16-bit steps of 16/65535 nats: KLD within 1e-6 of 0
check "mean KLD against itself is 0 ($kmean)" awk -v k="$kmean" 'BEGIN { exit !(k != "" && k < 1e-6 && k > -1e-6) }'
check "same top token 100% ($same)" [ "$same" = "100.000" ]
check "KLD report has percentiles" grep -q "^99.9%   KLD:" "$work/k1"
kppl=$(sed -nE 's/^Mean PPL\(Q\) +: +([0-9.]+) .*/\1/p' "$work/k1")
# the same value printed with 6 decimals against 4: equal to the 4-decimal rounding
check "Mean PPL(Q) equals the written PPL ($kppl vs $ppl)" awk -v a="$kppl" -v b="$ppl" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 0.00005) }'

# ---- KL-divergence: q8_0 against the f32 base -------------------------------------------------
"$SLUICE" perplexity -m "$Q8" --kl-divergence-base "$B" --kl-divergence -t 1 >"$work/k8" 2>&1
check "KLD q8_0 vs f32 exits 0" [ $? -eq 0 ]
kq=$(sed -nE 's/^Mean    KLD: +(-?[0-9.]+) .*/\1/p' "$work/k8")
sq=$(sed -nE 's/^Same top p: +([0-9.]+) .*/\1/p' "$work/k8")
# q8_0 rounds each weight to 1/127 of its block's max: a real but small
# change to a distribution over 512 tokens
check "mean KLD of q8_0 is above 0 ($kq)" awk -v k="$kq" 'BEGIN { exit !(k != "" && k > 1e-6) }'
check "mean KLD of q8_0 is small ($kq < 0.05)" awk -v k="$kq" 'BEGIN { exit !(k != "" && k < 0.05) }'
check "q8_0 mostly keeps the top token ($sq% >= 80%)" awk -v s="$sq" 'BEGIN { exit !(s != "" && s >= 80) }'
"$SLUICE" perplexity -m "$Q8" --kl-divergence-base "$B" --kl-divergence --chunks 2 -t 1 >"$work/k8c" 2>&1
check "--chunks 2 limits the KLD run" [ "$(grep -cE '^ +[0-9]+ +[0-9.]+ ± ' "$work/k8c")" -eq 2 ]

# ---- the text as llama-perplexity reads it: escapes turned into their bytes -----------------
sed 's/ the / the\\t/g' "$T" >"$work/esc.txt"   # "\t" after each " the"
sed 's/ the / the\t/g' "$T" >"$work/tab.txt"     # a tab there
"$SLUICE" perplexity -m "$F32" -f "$work/esc.txt" -c $C --chunks 2 -t 2 >"$work/pe" 2>/dev/null
"$SLUICE" perplexity -m "$F32" -f "$work/tab.txt" -c $C --chunks 2 -t 2 >"$work/pt" 2>/dev/null
"$SLUICE" perplexity -m "$F32" -f "$work/esc.txt" -c $C --chunks 2 -t 2 --no-escape >"$work/pn" 2>/dev/null
check "\\t in the text is a tab, as llama-perplexity reads it" \
    bash -c 'grep -q "^\[1\]" "$1" && cmp -s "$1" "$2"' _ "$work/pe" "$work/pt"
check "... and --no-escape keeps the backslash" bash -c '! cmp -s "$1" "$2"' _ "$work/pe" "$work/pn"

# ---- batches above llama.cpp's micro-batch ---------------------------------------------------------
# llama-perplexity runs a batch as micro-batches of 512, and under the 2026-09
# rule an IQ4_XS expert's kernel depends on its token count in the micro-batch
# (8+: the IQ panel): -b 1024 must give -b 512's bits (one 1024-row batch
# differed in 943 bytes here; llama.cpp's base of this file and text at
# -c 1024, bench/llama_ref.sh, equals sluice's at either -b now)
IQ=$work/iq4xs.gguf
"$SLUICE" mkmodel --arch qwen3moe --preset tiny-k --type iq4_xs --experts 32 --seed 3 -q -o "$IQ"
for b in 512 1024; do
    "$SLUICE" perplexity -m "$IQ" -f "$T" -c 1024 --chunks 1 -b $b -t 2 --llama-ref 2026-09 \
        --kl-divergence-base "$work/iq-$b.kld" >/dev/null 2>"$work/iq-$b.err"
done
check "-c 1024: -b 1024 gives -b 512's base (IQ4_XS, 2026-09)" cmp -s "$work/iq-512.kld" "$work/iq-1024.kld"
check "-c 1024 -b 1024 reports micro-batches of 512" grep -q "n_ctx=1024, batch_size=512" "$work/iq-1024.err"
"$SLUICE" perplexity -m "$IQ" -f "$T" -c 1024 --chunks 1 -ub 1024 -t 2 --llama-ref 2026-09 \
    --kl-divergence-base "$work/iq-ub.kld" >/dev/null 2>&1
check "-ub (llama.cpp's name) is -b" cmp -s "$work/iq-1024.kld" "$work/iq-ub.kld"
# the 2026-08 rule has no panel: a batch of any size gives the same bits
"$SLUICE" perplexity -m "$IQ" -f "$T" -c 1024 --chunks 1 -b 1024 -t 2 >/dev/null 2>"$work/iq8.err"
check "the default rule keeps -b 1024's batches" grep -q "n_ctx=1024, batch_size=1024" "$work/iq8.err"

# ---- errors -----------------------------------------------------------------------------------------
expect_fail() { # expect_fail NAME PATTERN ARGS...
    local name=$1 pat=$2
    shift 2
    "$SLUICE" perplexity "$@" >/dev/null 2>"$work/err"
    local rc=$?
    if [ $rc -ne 0 ] && grep -q -- "$pat" "$work/err"; then ok "$name"; else
        bad "$name (rc $rc: $(head -c 300 "$work/err"))"
    fi
}
printf 'Too short for a chunk.' >"$work/short.txt"
expect_fail "text shorter than two chunks" "too short" -m "$F32" -f "$work/short.txt" -c $C
expect_fail "... quoting the tokens needed" "needs at least 128 tokens" -m "$F32" -f "$work/short.txt" -c $C
expect_fail "--kl-divergence without a base" "needs --kl-divergence-base" -m "$F32" --kl-divergence
expect_fail "no text" "no text given" -m "$F32"
expect_fail "no model" "no model given" -f "$T"
expect_fail "-c 2 is too small" "-c expects a whole number" -m "$F32" -f "$T" -c 2
expect_fail "unknown flag" "unknown option '--ppl'" -m "$F32" -f "$T" --ppl
expect_fail "base n_vocab mismatch" "n_vocab" -m "$V600" --kl-divergence-base "$B" --kl-divergence
expect_fail "-c differs from the base's" "differs from the context of the base" -m "$F32" --kl-divergence-base "$B" --kl-divergence -c 128
expect_fail "missing base file" "$work/none.kld" -m "$F32" --kl-divergence-base "$work/none.kld" --kl-divergence
# token 5 of the file (offset 20 + 4*5 = 40) set to 65536: outside the 512-token vocabulary
cp "$B" "$work/badtok.kld"
printf '\000\000\001\000' | dd of="$work/badtok.kld" bs=1 seek=40 conv=notrunc 2>/dev/null
expect_fail "token id out of range in the base" "65536" -m "$F32" --kl-divergence-base "$work/badtok.kld" --kl-divergence
head -c 100000 "$B" >"$work/trunc.kld"
expect_fail "truncated base file" "trunc.kld" -m "$F32" --kl-divergence-base "$work/trunc.kld" --kl-divergence
expect_fail "base file cannot be written" "$work/no/dir/b.kld" -m "$F32" -f "$T" -c $C --chunks 1 --kl-divergence-base "$work/no/dir/b.kld"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
