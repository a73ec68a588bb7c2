#!/usr/bin/env bash
# A file written by llama.cpp's own tools (tests/data/reference): one expert
# stored 2-D, an f32 router of one row beside Q8_0 matrices. Each run here
# once overflowed a session buffer (issue 10, D1): KL-divergence against
# llama.cpp's base in 128-token batches, plain perplexity, single-token
# batches, generation. Under the ASan build a regression aborts.
set -u
. "$(dirname "$0")/lib/common.sh"
D=tests/data/reference
M=$D/dense1-Q8_0.gguf

out=$("$SLUICE" perplexity -m "$M" --kl-divergence-base "$D/dense1-Q8_0.kld" --kl-divergence \
      -t 2 2>&1)
rc=$?
check "kl-divergence against llama.cpp's base exits 0" [ "$rc" -eq 0 ]
kld=$(echo "$out" | sed -n 's/^Mean    KLD: *\([0-9.e+-]*\).*/\1/p')
top=$(echo "$out" | sed -n 's/^Same top p: *\([0-9.]*\).*/\1/p')
echo "   mean KLD $kld, same top $top %"
check "mean KLD is a small number" awk -v k="$kld" 'BEGIN { exit !(k != "" && k >= 0 && k < 1e-3) }'
check "same top token above 90 %" awk -v t="$top" 'BEGIN { exit !(t != "" && t > 90) }'

out=$("$SLUICE" perplexity -m "$M" -f "$D/text.txt" -c 128 -t 2 2>&1)
check "plain perplexity exits 0" [ $? -eq 0 ]
check "plain perplexity prints a finite estimate" \
    bash -c 'echo "$1" | grep -Eq "^Final estimate: PPL = [0-9]+\.[0-9]+"' _ "$out"

check "run with single-token batches" "$SLUICE" run -m "$M" -p "Hello" -n 8 -b 1 -t 2 --temp 0 >/dev/null
check "run in one batch, two threads" "$SLUICE" run -m "$M" -p "Hello world, once more" -n 8 \
    -t 2 --temp 0 >/dev/null
finish
