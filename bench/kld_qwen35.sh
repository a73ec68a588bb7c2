#!/usr/bin/env bash
# bench/kld_qwen35.sh [TYPES...]: generated qwen35moe files against the
# llama.cpp that bench/llama_ref.sh runs (node-llama-cpp 3.22.1's build): for
# each preset (tiny, tiny-k) and type, `sluice mkmodel --arch qwen35moe
# --seed 11`, llama.cpp's KL-divergence base on the first 5000 bytes of the
# fixtures' text, then sluice perplexity --kl-divergence twice: following the
# fixtures' llama.cpp (--llama-ref 2026-08, the default) and following this
# one (--llama-ref 2026-09). Prints a markdown table: mean KLD / same top per cell.
set -eu
cd "$(dirname "$0")/.."
REF=${REF:-../shared/fixtures/reference}
[ -d "$REF" ] || REF=/work/shared/fixtures/reference
S=build/rel/sluice
TYPES=${*:-f32 q8_0 q4_k_m q4_0}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kldq35-XXXXXX")
trap 'rm -rf "$work"' EXIT
head -c 5000 "$REF/text.txt" >"$work/text.txt"
echo "| file | --llama-ref 2026-08 (default) | --llama-ref 2026-09 |"
echo "|---|---|---|"
for p in tiny tiny-k; do
    for t in $TYPES; do
        f=$work/$p-$t.gguf
        "$S" mkmodel --arch qwen35moe --preset "$p" --type "$t" --seed 11 -q -o "$f"
        bench/llama_ref.sh "$f" "$work/text.txt" "$work/base.kld" >/dev/null 2>&1
        row="| qwen35moe $p $t |"
        for rev in 2026-08 2026-09; do
            out=$("$S" perplexity -m "$f" --kl-divergence-base "$work/base.kld" \
                --kl-divergence --llama-ref "$rev" -t 2 2>&1)
            kld=$(echo "$out" | sed -n 's/^Mean    KLD: *\([0-9.e+-]*\).*/\1/p')
            top=$(echo "$out" | sed -n 's/^Same top p: *\([0-9.]*\).*/\1/p')
            row="$row $kld / $top % |"
        done
        echo "$row"
        rm -f "$f"
    done
done
