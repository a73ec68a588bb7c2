#!/usr/bin/env bash
# `sluice mkmodel`: every architecture at --preset tiny, determinism, and
# clear errors for bad flags. Expected sizes are hand counts of the weights
# (see below), never taken from sluice.
set -u
cd "$(dirname "$0")/../.."
SLUICE=${SLUICE:-build/san/sluice}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-mkmodel-XXXXXX")
trap 'rm -rf "$work"' EXIT

size_of() { stat -c %s "$1" 2>/dev/null || echo 0; }

# expect_fail NAME CODE PATTERN ARGS...: exits CODE and stderr matches PATTERN
expect_fail() {
    local name=$1 code=$2 pat=$3
    shift 3
    "$SLUICE" mkmodel "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    if [ "$rc" -eq "$code" ] && grep -q -- "$pat" "$work/err"; then
        ok "$name"
    else
        bad "$name (exit $rc, stderr: $(head -c 300 "$work/err"))"
    fi
}

# ---- every architecture, tiny, f32 ----------------------------------------
# Data bytes = 4 x weights. tiny: n_embd 64, 2 layers, q width 4x16 = 64,
# k/v width 2x16 = 32, dense ff 128, 8 experts of width 32, shared 64,
# vocab 512. Common to all: token_embd + output 2x64x512 + output_norm 64
# = 65600; per layer attn_norm + ffn_norm 128 and q,k,v,o 4096+2048+2048+4096
# = 12288. Then per layer:
#   MoE: router 64x8 = 512, experts 3x64x32x8 = 49152
#   dense: 3x64x128 = 24576
#   qwen3 q/k norms 16+16; qwen2 biases 64+32+32;
#   olmoe has 4 kv heads (no GQA): k, v 2x64x64 instead of 2x64x32 (+4096),
#   q/k norms 64+64;
#   qwen2moe shared expert: gate 64 + 3x64x64 = 12352
# qwen3moe: 65600 + 2x(12416+32+49664)     = 189824 -> 759296 bytes
# qwen2moe: 65600 + 2x(12416+128+49664+12352) = 214720 -> 858880
# mixtral:  65600 + 2x(12416+49664)        = 189760 -> 759040
# olmoe:    65600 + 2x(12416+4096+128+49664) = 198208 -> 792832
# llama:    65600 + 2x(12416+24576)        = 139584 -> 558336
# qwen3:    65600 + 2x(12416+32+24576)     = 139648 -> 558592
# qwen2:    65600 + 2x(12416+128+24576)    = 139840 -> 559360
# The file adds a header (metadata with a 512-token vocabulary and ~250
# merges, well under 64 KiB) and alignment padding.
while read -r arch data; do
    f="$work/$arch.gguf"
    if "$SLUICE" mkmodel --arch "$arch" --preset tiny -q -o "$f" 2>"$work/err"; then
        ok "$arch: exit 0"
    else
        bad "$arch: exit 0 ($(head -c 300 "$work/err"))"
        continue
    fi
    s=$(size_of "$f")
    if [ "$s" -gt "$data" ] && [ "$s" -lt $((data + 65536)) ]; then
        ok "$arch: size $s plausible (data $data)"
    else
        bad "$arch: size $s, data alone is $data"
    fi
    head -c 4 "$f" | grep -q GGUF && ok "$arch: GGUF magic" || bad "$arch: GGUF magic"
    [ "$s" -lt 10000000 ] && ok "$arch: under 10 MB" || bad "$arch: under 10 MB"
done <<'LIST'
qwen3moe 759296
qwen2moe 858880
mixtral 759040
olmoe 792832
llama 558336
qwen3 558592
qwen2 559360
LIST

# llama with --experts is Mixtral-style: same tensors as --arch mixtral with
# 4 experts instead of 8, i.e. 2 x 3x64x32x4 + 2 x 64x4 fewer weights:
# 189760 - 2x(24576 + 256) = 140096 -> 560384 bytes.
f="$work/llama-moe.gguf"
if "$SLUICE" mkmodel --arch llama --experts 4 --preset tiny -q -o "$f" 2>"$work/err"; then
    s=$(size_of "$f")
    [ "$s" -gt 560384 ] && [ "$s" -lt $((560384 + 65536)) ] && ok "llama --experts 4: size $s" ||
        bad "llama --experts 4: size $s, data alone 560384"
else
    bad "llama --experts 4 ($(head -c 300 "$work/err"))"
fi

# ---- a quantised mix with real K-quants ----------------------------------
# tiny-k (n_embd 256, heads 4x64, kv 2x64, 4 experts of 256, vocab 512) in
# q4_k_m, 2 layers (layer 1 gets q6_K for attn_v and ffn_down_exps).
# Bytes: q4_K 144 per 256 weights, q6_K 210 per 256.
#   token_embd 131072 q4_K = 73728; output q6_K = 107520; output_norm 1024
#   layer 0: q 36864, k 18432, v 18432, o 36864, router 4096 (f32),
#            norms 2x256+2x64 floats = 2560, 3 experts tensors 3x147456
#            -> 559616
#   layer 1: v 26880 (q6_K), down_exps 215040 (q6_K) -> 635648
#   total 1377536
f="$work/q4km.gguf"
if "$SLUICE" mkmodel --arch qwen3moe --preset tiny-k --type q4_k_m -q -o "$f" 2>"$work/err"; then
    s=$(size_of "$f")
    [ "$s" -gt 1377536 ] && [ "$s" -lt $((1377536 + 65536)) ] && ok "tiny-k q4_k_m: size $s" ||
        bad "tiny-k q4_k_m: size $s, data alone 1377536"
    grep -q . "$work/err" && bad "tiny-k q4_k_m: unexpected note $(cat "$work/err")" ||
        ok "tiny-k q4_k_m: no fallback note"
else
    bad "tiny-k q4_k_m ($(head -c 300 "$work/err"))"
fi
# tiny rows (64, 32) do not fit K-quant blocks: the command says so.
if "$SLUICE" mkmodel --arch qwen3moe --preset tiny --type q4_k -q -o "$work/fb.gguf" 2>"$work/err" &&
    grep -q "tiny-k" "$work/err" && grep -q "q8_0 or f32" "$work/err"; then
    ok "tiny q4_k: fallback reported"
else
    bad "tiny q4_k: fallback reported ($(head -c 300 "$work/err"))"
fi

# ---- --dims: a preset's dimensions by name ----------------------------------
# qwen3moe tiny (above: data 759296 bytes) with head 32 and experts of 48.
# Per layer: q and o 64x64 -> 64x128 (+2 x 4096 weights), k and v 64x32 ->
# 64x64 (+2 x 2048), q/k norms 16 -> 32 (+32), experts 3x64x32x8 ->
# 3x64x48x8 (+24576): +36896 weights, 2 layers: +295168 bytes -> 1054464.
f="$work/dims.gguf"
if "$SLUICE" mkmodel --arch qwen3moe --preset tiny --dims head-dim=32,ff-exp=48 -q -o "$f" \
    2>"$work/err"; then
    "$SLUICE" inspect "$f" >"$work/dims.insp" 2>&1
    grep -q "key_length *uint32 *32" "$work/dims.insp" &&
        grep -q "expert_feed_forward_length *uint32 *48" "$work/dims.insp" &&
        ok "--dims: keys written" || bad "--dims: keys ($(head -c 300 "$work/dims.insp"))"
    s=$(size_of "$f")
    [ "$s" -gt 1054464 ] && [ "$s" -lt $((1054464 + 65536)) ] && ok "--dims: size $s" ||
        bad "--dims: size $s, data alone 1054464"
else
    bad "--dims ($(head -c 300 "$work/err"))"
fi
expect_fail "--dims unknown key" 2 "'kv-lora' is not a dimension" --arch qwen3moe --dims kv-lora=64 -o "$work/x.gguf"
expect_fail "--dims bad value" 2 "head-dim=x is not a whole number" --arch qwen3moe --dims head-dim=x -o "$work/x.gguf"
expect_fail "--dims no =" 2 "expects key=value" --arch qwen3moe --dims head-dim -o "$work/x.gguf"

# ---- determinism -------------------------------------------------------------
a="$work/d1.gguf" b="$work/d2.gguf" c="$work/d3.gguf"
"$SLUICE" mkmodel --arch olmoe --preset tiny --type q8_0 --seed 123 --threads 1 -q -o "$a" &&
    "$SLUICE" mkmodel --arch olmoe --preset tiny --type q8_0 --seed 123 --threads 2 -q -o "$b" &&
    "$SLUICE" mkmodel --arch olmoe --preset tiny --type q8_0 --seed 124 -q -o "$c"
cmp -s "$a" "$b" && ok "same seed, 1 vs 2 threads: identical" || bad "same seed differs"
cmp -s "$a" "$c" && bad "different seeds: identical files" || ok "different seeds differ"

# ---- help and errors --------------------------------------------------------------
if "$SLUICE" mkmodel --help >"$work/out" 2>&1 && grep -q "30b-a3b" "$work/out" &&
    grep -q "q4_k_m" "$work/out" && grep -q -- "--arch" "$work/out"; then
    ok "--help"
else
    bad "--help"
fi
expect_fail "unknown arch" 2 "unknown architecture 'gptx'" --arch gptx -o "$work/x.gguf"
expect_fail "unknown preset" 2 "unknown preset 'huge'" --arch qwen3moe --preset huge -o "$work/x.gguf"
expect_fail "bad type" 2 "unknown type 'q3_k'" --arch qwen3moe --type q3_k -o "$work/x.gguf"
expect_fail "missing -o" 2 "-o OUT.gguf is required" --arch qwen3moe
expect_fail "missing --arch" 2 "--arch is required" -o "$work/x.gguf"
expect_fail "unknown option" 2 "unknown option '--bogus'" --arch qwen3moe --bogus -o "$work/x.gguf"
expect_fail "bad number" 2 "--layers expects a whole number" --arch qwen3moe --layers abc -o "$work/x.gguf"
expect_fail "flag without value" 2 "--seed needs a value" --arch qwen3moe -o "$work/x.gguf" --seed
expect_fail "top-k above experts" 2 "top-k 9 out of range" --arch qwen3moe --top-k 9 -o "$work/x.gguf"
expect_fail "experts on dense arch" 2 "is dense" --arch qwen3 --experts 8 -o "$work/x.gguf"
expect_fail "vocab too small" 2 "--vocab expects" --arch qwen3moe --vocab 100 -o "$work/x.gguf"
[ -e "$work/x.gguf" ] && bad "a failed run left x.gguf" || ok "failed runs leave no file"
expect_fail "unwritable output" 1 "/nonexistent-sluice-dir/m.gguf" --arch qwen3moe -o /nonexistent-sluice-dir/m.gguf
expect_fail "output is a directory" 1 "$work" --arch qwen3moe -o "$work"

# a disk that fills up mid-write, played by a file-size limit of 2 MiB (the
# write then fails with EFBIG, as it would with ENOSPC): a clear message,
# exit 1, and no half-written model left behind
(trap '' XFSZ; ulimit -f 4096; "$SLUICE" mkmodel --arch qwen3moe --preset small -q \
    -o "$work/full.gguf") 2>"$work/full.err"
[ $? -eq 1 ] && ok "a write that fails mid-model exits 1" || bad "a write that fails mid-model exits 1"
grep -q "write to '$work/full.gguf' failed: File too large" "$work/full.err" &&
    ok "... naming the file and the reason" || bad "... naming the file and the reason: $(cat "$work/full.err")"
[ ! -e "$work/full.gguf" ] && ok "... and removes the partial file" || bad "... and removes the partial file"

# ---- --holes: the tensor data left as a hole ---------------------------------
# The same file as a real write, byte for byte, except that every tensor
# byte reads as zero: every byte that differs is zero in the holes file,
# the two differ somewhere (real weights are not all zero) and never in the
# header (its first 4 KiB at least: magic, counts, metadata).
for spec in "deepseek2 tiny q8_0" "qwen3moe tiny-k q4_k_m"; do
    set -- $spec
    "$SLUICE" mkmodel --arch "$1" --preset "$2" --type "$3" -q -o "$work/real.gguf" &&
        "$SLUICE" mkmodel --arch "$1" --preset "$2" --type "$3" --holes -q \
            -o "$work/holes.gguf"
    if [ $? -ne 0 ]; then
        bad "--holes $1: mkmodel failed"
        continue
    fi
    [ "$(size_of "$work/real.gguf")" = "$(size_of "$work/holes.gguf")" ] &&
        ok "--holes $1 $3: same size as the real file" ||
        bad "--holes $1 $3: sizes $(size_of "$work/real.gguf") vs $(size_of "$work/holes.gguf")"
    cmp -l "$work/holes.gguf" "$work/real.gguf" > "$work/diff" 2>/dev/null
    nd=$(wc -l < "$work/diff")
    nonzero=$(awk '$2 != 0' "$work/diff" | wc -l)
    first=$(head -1 "$work/diff" | awk '{print $1}')
    [ "$nd" -gt 0 ] && [ "$nonzero" -eq 0 ] && [ "${first:-0}" -gt 4096 ] &&
        ok "--holes $1 $3: header identical, every tensor byte zero" ||
        bad "--holes $1 $3: $nd differing bytes, $nonzero non-zero in the holes file, first at ${first:-none}"
done

# The full depth of Kimi K2 (61 layers, 384 experts of 7168 x 2048, vocab
# 163840), ~580 GB of q4_k_m tensor data that no test disk holds: written
# in moments, a sparse file where the file system has them (probed with
# truncate), and its index readable. Hand count of the tensors: 3 global;
# the dense layer 0 has 9 attention (norm, q_a, q_a_norm, q_b, kv_a_mqa,
# kv_a_norm, k_b, v_b, output) + 4 FFN (norm, gate, up, down); each of
# the 60 MoE layers 9 attention + 9 FFN (norm, router, exp_probs_b, three
# expert stacks, three shared): 3 + 13 + 60 x 18 = 1096.
if "$SLUICE" mkmodel --arch deepseek2 --preset kimi-k2 --type q4_k_m --holes \
    -o "$work/k2.gguf" > "$work/k2.out" 2>&1; then
    ok "--holes kimi-k2 full depth: written"
    sz=$(size_of "$work/k2.gguf")
    [ "$sz" -gt $((500 * 1024 * 1024 * 1024)) ] && ok "... $sz bytes (> 500 GiB)" ||
        bad "... size $sz"
    truncate -s 1G "$work/probe" 2>/dev/null
    if [ "$(stat -c %b "$work/probe" 2>/dev/null || echo 1)" = 0 ]; then
        kb=$(( $(stat -c %b "$work/k2.gguf") * $(stat -c %B "$work/k2.gguf") / 1024 ))
        [ "$kb" -lt 65536 ] && ok "... takes $kb KiB of disk" || bad "... takes $kb KiB of disk"
    else
        echo "skip ... disk use (this file system has no sparse files)"
    fi
    rm -f "$work/probe"
    "$SLUICE" inspect "$work/k2.gguf" > "$work/k2.insp" 2>&1
    grep -q "^tensors *1096$" "$work/k2.insp" &&
        grep -Eq "deepseek2.expert_count +uint32 +384$" "$work/k2.insp" &&
        grep -Eq "deepseek2.block_count +uint32 +61$" "$work/k2.insp" &&
        ok "... inspect reads its index: 1096 tensors, 61 blocks, 384 experts" ||
        bad "... inspect: $(head -c 300 "$work/k2.insp")"
    rm -f "$work/k2.gguf"
else
    bad "--holes kimi-k2 full depth: $(cat "$work/k2.out")"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
