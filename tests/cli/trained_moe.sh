#!/usr/bin/env bash
# The trained glm4moe model (tests/data/trained, tools/train_moe): sluice's
# greedy text equals llama.cpp's (node-llama-cpp 3.22.1, stored beside the
# files) at f32, Q8_0 and Q4_K_M (its decode steps take llama.cpp's one-row
# products: the repacked Q4_K gemv) and reads as a story;
# its held-out perplexity stays where training left it; its route trace
# replays; two of its four experts (--n-expert-used 2) cost perplexity. The
# KLD and byte-identity of the logits are test_trained_glm4moe's.
set -u
. "$(dirname "$0")/lib/common.sh"
D=tests/data/trained
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-trained-XXXXXX")
trap 'rm -rf "$work"' EXIT

for t in f32 q8_0 q4_k_m; do
    M=$D/glm4moe-stories-$t.gguf
    "$SLUICE" run -m "$M" -p "Once upon a time" -n 64 --temp 0 -t 2 >"$work/$t.out" 2>"$work/$t.err"
done
for t in f32 q8_0 q4_k_m; do
    check "$t: 64 greedy tokens equal llama.cpp's" same_text "$work/$t.out" "$D/glm4moe-stories-$t.greedy.txt"
done
check "the f32 text reads as a story (a name and 'said' or 'play')" \
    bash -c 'grep -q "named" "$1" && grep -Eq "said|play" "$1"' _ "$work/f32.out"
ppl=$("$SLUICE" perplexity -m "$D/glm4moe-stories-f32.gguf" -f "$D/text.txt" -c 128 -t 2 2>&1 |
    sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
check "f32 held-out perplexity $ppl is in the trained range (2.5..6)" \
    python3 -c "import sys; p = float('${ppl:-0}'); sys.exit(0 if 2.5 <= p <= 6 else 1)"
# the lossy knobs on its sigmoid router: two of four experts cost perplexity
# on learned routing (10-35 %; exact 4.260 -> 5.117 when measured)
ppl2=$("$SLUICE" perplexity -m "$D/glm4moe-stories-f32.gguf" -f "$D/text.txt" -c 128 -t 2 \
    --n-expert-used 2 2>&1 | sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
check "--n-expert-used 2 raises the perplexity $ppl -> $ppl2 by 10-35 %" \
    python3 -c "import sys; r = float('${ppl2:-0}') / float('${ppl:-1}'); sys.exit(0 if 1.10 <= r <= 1.35 else 1)"
# 32-token chunks (under llama.cpp's 64-token query tile: its one-chunk flash
# attention): the base sluice perplexity writes is llama.cpp's, byte for byte
# (the committed base: bench/llama_ref.sh on the text's first 640 bytes, -c 32)
head -c 640 "$D/text.txt" >"$work/short.txt"
"$SLUICE" perplexity -m "$D/glm4moe-stories-f32.gguf" -f "$work/short.txt" -c 32 -t 2 \
    --kl-divergence-base "$work/c32.kld" >/dev/null 2>&1
check "f32, 32-token chunks: the base equals llama.cpp's byte for byte" \
    cmp -s "$work/c32.kld" "$D/glm4moe-stories-f32.c32.kld"
# its routing as a replay: accepted by a generated model of its MoE shape
"$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 5 --experts 16 --top-k 4 --seed 3 -q \
    -o "$work/m5.gguf"
"$SLUICE" run -m "$work/m5.gguf" -p "Once upon a time" -n 16 --temp 0 --moe-stream \
    --cache-experts 40 --route-trace "$D/glm4moe-stories.route.csv" --stats >"$work/r.out" 2>&1
check "the route trace replays (exit 0, a hit rate reported)" grep -q "hit rate" "$work/r.out"
finish
