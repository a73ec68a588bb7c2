#!/usr/bin/env bash
# `--llama-ref REV` (issue 12): the llama.cpp revision sluice follows, chosen
# on the command line. tests/data/qwen35 holds a generated qwen35moe Q8_0 file
# and node-llama-cpp 3.22.1's own KL-divergence base of it (revision 2026-09;
# its README): following 2026-09 sluice matches that base exactly, the
# default (2026-08) does not; unknown names are refused naming the known
# ones; SLUICE_LLAMA_REF is not read (a warning says so).
set -u
. "$(dirname "$0")/lib/common.sh"
D=tests/data/qwen35
M=$D/qwen35moe-tiny-q8_0.gguf
B=$D/qwen35moe-tiny-q8_0-2026-09.kld
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-llamaref-XXXXXX")
trap 'rm -rf "$work"' EXIT
kld() { sed -n 's/^Mean    KLD: *\([0-9.e+-]*\).*/\1/p'; }

for c in run chat bench perplexity serve; do
    check "$c --help lists --llama-ref" bash -c '"$1" "$2" --help 2>&1 | grep -q -- "--llama-ref REV"' _ "$SLUICE" "$c"
done

"$SLUICE" perplexity -m "$M" --llama-ref 2025-01 -f /dev/null >"$work/out" 2>&1
check "an unknown revision: exit 2" [ $? -eq 2 ]
check "an unknown revision: the message names it and the known ones" \
    grep -q "'2025-01' is unknown.*2026-08.*2026-09" "$work/out"

k9=$("$SLUICE" perplexity -m "$M" --kl-divergence-base "$B" --kl-divergence --llama-ref 2026-09 -t 2 2>&1 | kld)
check "--llama-ref 2026-09 matches its build's base (mean KLD $k9)" \
    python3 -c "import sys; sys.exit(0 if abs(float('$k9')) <= 1e-6 else 1)"
k8=$("$SLUICE" perplexity -m "$M" --kl-divergence-base "$B" --kl-divergence -t 2 2>&1 | kld)
check "the default follows 2026-08, which this base tells apart (mean KLD $k8)" \
    python3 -c "import sys; sys.exit(0 if float('$k8') > 1e-5 else 1)"
out=$(SLUICE_LLAMA_REF=2026-09 "$SLUICE" perplexity -m "$M" --kl-divergence-base "$B" --kl-divergence -t 2 2>&1)
check "SLUICE_LLAMA_REF is not read: the default's KLD" [ "$(echo "$out" | kld)" = "$k8" ]
check "SLUICE_LLAMA_REF set: a warning naming the flag" \
    bash -c 'echo "$1" | grep -q "SLUICE_LLAMA_REF is set but no longer read; pass --llama-ref 2026-09"' _ "$out"

# deepseek4: node-llama-cpp 3.22.1's build fuses the hyper-connection stream
# sums at every model size and takes ggml_swiglu_clamp for the clamped
# SwiGLU; the fixtures' build rounds every product of the sums on a model of
# this (the 4-layer fixture's) size and clamps the inputs of ggml's SwiGLU. A
# generated tiny q8_0 file (deterministic) against that build's base
# (tests/data/generated): llama.cpp's numbers following 2026-09 (mean KLD
# 0.000000, every top token), told apart (same top) by default.
G=tests/data/generated
"$SLUICE" mkmodel --arch deepseek4 --preset tiny --type q8_0 -q -o "$work/ds4.gguf"
top() { sed -n 's/^Same top p: *\([0-9.]*\).*/\1/p'; }
o9=$("$SLUICE" perplexity -m "$work/ds4.gguf" --kl-divergence-base "$G/deepseek4-tiny-q8_0.kld" \
    --kl-divergence --llama-ref 2026-09 -t 2 2>&1)
check "deepseek4 --llama-ref 2026-09: mean KLD $(echo "$o9" | kld) <= 1e-6, same top $(echo "$o9" | top) % = 100" \
    python3 -c "import sys; sys.exit(0 if float('$(echo "$o9" | kld)') <= 1e-6 and float('$(echo "$o9" | top)') >= 100 else 1)"
o8=$("$SLUICE" perplexity -m "$work/ds4.gguf" --kl-divergence-base "$G/deepseek4-tiny-q8_0.kld" \
    --kl-divergence -t 2 2>&1)
check "deepseek4 by default (2026-08) this base is told apart: same top $(echo "$o8" | top) % < 99" \
    python3 -c "import sys; sys.exit(0 if float('$(echo "$o8" | top)') < 99 else 1)"

finish
