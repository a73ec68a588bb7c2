#!/usr/bin/env bash
# bench/sweep_kld.sh [--full] [--chunk N]: sluice against llama.cpp on generated
# models of every architecture, at several shapes, in every weight type
# llama.cpp's quantiser offers that sluice computes (issue 34 part 3).
#
# For each architecture x shape: `sluice mkmodel` writes the f32 file; each
# type T is llama.cpp's own quantisation of it (tools/train_moe/llama_tool.sh
# quantize, libllama of node-llama-cpp 3.22.1); then llama.cpp's KL-divergence
# base (bench/llama_ref.sh, the same build: `--llama-ref 2026-09`) against
#   sluice perplexity -m T.gguf -f TEXT -c N -b N -t 2 --llama-ref 2026-09 \
#       --kl-divergence-base S.kld                 (sluice's own base: cmp)
#   sluice perplexity ... --kl-divergence-base B.kld --kl-divergence (stats)
# Prints a markdown table: architecture, shape, type, "bytes" (= when the two
# bases are byte-identical: every stored log-probability the same), mean KLD,
# max KLD, same top token %. A base stores log-probabilities rounded to 16
# bits, so byte-identical bases still show KLD noise up to ~1e-5 and a rare
# top-token "flip" at a tie; the byte comparison is the test of exactness.
#
#   --full       every shape and every type (default: a small set, minutes)
#   --chunk N    context of each chunk (default 128)
#   SWEEP_ARCHS="a b", SWEEP_TYPES="t u", SWEEP_SHAPES="s1 s2": filters
#   SWEEP_KEEP=DIR: keep the files there (for narrowing a cell down)
# Runs niced; not timed. Needs build/rel/sluice (make), npm and network on
# the first use of bench/llama_ref.sh.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
full=0 chunk=128
while [ $# -gt 0 ]; do
    case $1 in
    --full) full=1 ;;
    --chunk) chunk=$2; shift ;;
    *) echo "usage: bench/sweep_kld.sh [--full] [--chunk N]" >&2; exit 2 ;;
    esac
    shift
done
REF=${REF:-../shared/fixtures/reference}
[ -d "$REF" ] || REF=/work/shared/fixtures/reference
S=$root/build/rel/sluice
[ -x "$S" ] || { echo "sweep_kld: build/rel/sluice missing (make)" >&2; exit 1; }
if [ -n "${SWEEP_KEEP:-}" ]; then work=$SWEEP_KEEP; mkdir -p "$work"
else work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-sweep-XXXXXX"); trap 'rm -rf "$work"' EXIT; fi
# a copy of the binary: a rebuild during the sweep does not break it
cp "$S" "$work/sluice"
S=$work/sluice
# 3000 bytes: 13 chunks of 128 (51 of 32), each chunk scoring its second half
head -c 3000 "$REF/text.txt" >"$work/text.txt"

# Shapes: NAME ARCH MKMODEL-ARGS. tiny: rows of 16-128 (K-quants fall back
# per tensor in llama.cpp's quantiser too); k: rows that are multiples of
# 256 (head 64); h128 / h256: head sizes 128 / 256 with expert FFNs that are
# not multiples of 256 (96, 32: those rows fall back); e256: 256 experts.
# Files stay at 1-60 MB in f32.
G_TINY='--preset tiny'
G_K='--preset tiny-k --layers 3 --experts 16 --top-k 4'
G_H128='--preset tiny-k --layers 2 --dims heads=4,kv-heads=2,head-dim=128,ff=768,ff-exp=96,ff-shexp=320 --experts 64 --top-k 6'
G_H256='--preset tiny-k --layers 2 --dims heads=2,kv-heads=1,head-dim=256,ff=1024,ff-exp=32,ff-shexp=512 --experts 256 --top-k 8'
shapes_all() {
    echo "tiny llama --preset tiny"
    echo "k llama --preset tiny-k --layers 3"
    echo "h128 llama --preset tiny-k --layers 2 --dims heads=4,kv-heads=2,head-dim=128,ff=768"
    echo "h256 llama --preset tiny-k --layers 2 --dims heads=2,kv-heads=1,head-dim=256,ff=1024"
    for a in qwen3 qwen2 mixtral; do
        echo "tiny $a --preset tiny"
        echo "k $a --preset tiny-k --layers 3"
    done
    echo "tiny qwen3moe $G_TINY"; echo "k qwen3moe $G_K"
    echo "h128 qwen3moe $G_H128"; echo "h256 qwen3moe $G_H256"
    # f48: experts of 48 (down_exps rows not a multiple of 32: f32 leftover,
    # llama-quantize's fallback types)
    echo "f48 qwen3moe --preset tiny --dims ff-exp=48"
    # qwen2moe: llama.cpp sizes attn_q by n_embd (heads x head size = n_embd)
    echo "tiny qwen2moe $G_TINY"; echo "k qwen2moe $G_K"
    echo "h128 qwen2moe ${G_H128/heads=4,kv-heads=2/heads=2,kv-heads=1}"
    echo "h256 qwen2moe ${G_H256/heads=2,kv-heads=1/heads=1,kv-heads=1}"
    # olmoe: K/V heads = heads (llama.cpp sizes its k norm by n_embd)
    echo "tiny olmoe $G_TINY"; echo "k olmoe $G_K"
    echo "h128 olmoe --preset tiny-k --layers 2 --dims heads=2,kv-heads=2,head-dim=128,ff-exp=96 --experts 64 --top-k 6"
    # qwen35moe: DeltaNet and full layers alternate (every 2nd full)
    echo "tiny qwen35moe --preset tiny"
    echo "k qwen35moe --preset tiny-k --experts 16 --top-k 4"
    echo "h256 qwen35moe --preset tiny-k --dims heads=2,kv-heads=1,head-dim=256,rope-dim=64,ssm-state=128,ssm-groups=2,ssm-v-heads=4,ff-exp=32,ff-shexp=512 --experts 256 --top-k 8"
    # gemma4: sliding and full layers; l6: window 16, every third layer full
    echo "tiny gemma4 --preset tiny"
    echo "k gemma4 --preset tiny-k --experts 16 --top-k 4"
    echo "l6h256 gemma4 --preset tiny-k --layers 6 --dims heads=2,kv-heads=1,head-dim=256,head-dim-swa=128,kv-heads-swa=2,window=16,swa-period=3,ff=512,ff-exp=96 --experts 16 --top-k 4"
    # gpt-oss: sliding window 8 on even layers, sinks, biases
    echo "tiny gpt-oss --preset tiny"
    echo "k gpt-oss --preset tiny-k --layers 4 --experts 16 --top-k 4"
    echo "h128 gpt-oss --preset tiny-k --layers 2 --dims heads=4,kv-heads=2,head-dim=128,ff-exp=64 --experts 128 --top-k 4"
    # deepseek2 / glm-dsa: MLA (k: key 192 = nope 128 + rope 64, v 128);
    # glm4moe: partial rope, head 128
    echo "tiny deepseek2 --preset tiny"
    echo "e256 deepseek2 --preset tiny --experts 256 --top-k 8"
    echo "k deepseek2 --preset tiny --layers 3 --dims embd=256,heads=4,q-lora=256,kv-lora=256,nope=128,rope=64,v-head=128,ff=512,ff-exp=256 --experts 16 --top-k 4"
    echo "tiny glm4moe --preset tiny"
    echo "k glm4moe --preset tiny --layers 3 --dims embd=256,heads=4,kv-heads=2,head-dim=128,rope-dim=64,ff=512,ff-exp=256 --experts 16 --top-k 4"
    echo "tiny glm-dsa --preset tiny"
    echo "k glm-dsa --preset tiny --layers 3 --dims embd=256,heads=4,q-lora=256,kv-lora=256,nope=64,rope=64,v-head=128,ff=512,ff-exp=256 --experts 16 --top-k 4"
    # deepseek4: ratios 0/4/128/4 (tiny) and 0,4,128,4,128,4 (l6)
    echo "tiny deepseek4 --preset tiny"
    echo "l6 deepseek4 --preset tiny --layers 6"
}
shapes_small() {
    shapes_all | awk '$1 == "k" || ($1 == "tiny" && ($2 == "qwen35moe" || $2 == "deepseek4"))'
}

# llama-quantize's types that sluice computes. Left out: the IQ1-IQ3 and
# TQ types (sluice loads their bytes but has no product for them; IQ1/IQ2
# also need an importance matrix), Q2_K_S (needs an importance matrix too).
TYPES_ALL="f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k iq4_nl iq4_xs mxfp4_moe"
TYPES_TINY="f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl q4_k_m mxfp4_moe"
TYPES_SMALL="f32 q8_0 q4_k_m q6_k q5_1 iq4_xs"

kld_stat() { sed -n "s/^$1 *: *\([-0-9.e+]*\).*/\1/p" | head -1; }

echo "| arch | shape | type | base bytes | mean KLD | max KLD | same top % |"
echo "|---|---|---|---|---|---|---|"
if [ $full = 1 ]; then list=$(shapes_all); else list=$(shapes_small); fi
echo "$list" | while read -r shape arch args; do
    [ -z "${SWEEP_ARCHS:-}" ] || case " $SWEEP_ARCHS " in *" $arch "*) ;; *) continue ;; esac
    [ -z "${SWEEP_SHAPES:-}" ] || case " $SWEEP_SHAPES " in *" $shape "*) ;; *) continue ;; esac
    f32=$work/$arch-$shape-f32.gguf
    # shellcheck disable=SC2086
    if ! nice -n 10 "$S" mkmodel --arch "$arch" $args --seed 7 --threads 1 -q -o "$f32" \
        2>"$work/err"; then
        echo "| $arch | $shape | - | mkmodel failed: $(tail -1 "$work/err") | | | |"; continue
    fi
    if [ $full = 1 ]; then types=$TYPES_ALL; else types=$TYPES_SMALL; fi
    [ "$shape" != tiny ] || [ $full = 0 ] || types=$TYPES_TINY
    [ -z "${SWEEP_TYPES:-}" ] || types=$SWEEP_TYPES
    for t in $types; do
        m=$work/$arch-$shape-$t.gguf
        case $t in
        mxfp4_moe) case $arch in llama|qwen2|qwen3) continue ;; esac ;;
        esac
        if [ "$t" != f32 ] && ! nice -n 10 tools/train_moe/llama_tool.sh quantize "$f32" "$m" "$t" \
            >/dev/null 2>"$work/err"; then
            echo "| $arch | $shape | $t | llama-quantize failed: $(tail -1 "$work/err") | | | |"
            continue
        fi
        [ "$t" != f32 ] || m=$f32
        base=$work/$arch-$shape-$t.llama.kld own=$work/$arch-$shape-$t.sluice.kld
        if ! nice -n 10 bench/llama_ref.sh "$m" "$work/text.txt" "$base" "$chunk" \
            >/dev/null 2>"$work/err"; then
            echo "| $arch | $shape | $t | llama.cpp failed: $(tail -1 "$work/err") | | | |"
            continue
        fi
        if ! nice -n 10 "$S" perplexity -m "$m" -f "$work/text.txt" -c "$chunk" -b "$chunk" -t 2 \
            --llama-ref 2026-09 --kl-divergence-base "$own" >/dev/null 2>"$work/err"; then
            echo "| $arch | $shape | $t | sluice failed: $(tail -1 "$work/err") | | | |"
            continue
        fi
        if cmp -s "$own" "$base"; then same="="
        else same="$(cmp -l "$own" "$base" 2>/dev/null | wc -l) differ"; fi
        out=$(nice -n 10 "$S" perplexity -m "$m" -c "$chunk" -b "$chunk" -t 2 --llama-ref 2026-09 \
            --kl-divergence-base "$base" --kl-divergence 2>&1 || true)
        echo "| $arch | $shape | $t | $same | $(echo "$out" | kld_stat 'Mean    KLD') |" \
             "$(echo "$out" | kld_stat 'Maximum KLD') | $(echo "$out" | kld_stat 'Same top p') |"
        [ -n "${SWEEP_KEEP:-}" ] || rm -f "$base" "$own" "$([ "$t" = f32 ] || echo "$m")"
    done
    [ -n "${SWEEP_KEEP:-}" ] || rm -f "$f32"
done
