#!/usr/bin/env bash
# `sluice inspect` on the llama.cpp vocabulary fixtures, on generated models
# and on broken files. Expected values come from the fixture README table and
# from sizes worked out by hand below, never from sluice itself.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-inspect-XXXXXX")
trap 'rm -rf "$work"' EXIT

# jq-free JSON field access: json FILE EXPR (python3 is a build dependency)
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }

# ---- the fixture vocabularies (no tensors) --------------------------------
fx=""
for d in ../shared/fixtures/tokenizers /work/shared/fixtures/tokenizers; do
    [ -f "$d/ggml-vocab-gpt-2.gguf" ] && fx=$d && break
done
if [ -z "$fx" ]; then
    echo "skipped: fixture vocabularies not found (../shared/fixtures/tokenizers)"
else
    # name model pre vocab, from the fixture README table
    while read -r name model pre vocab; do
        f="$fx/ggml-vocab-$name.gguf"
        out="$work/$name.json"
        if ! "$SLUICE" inspect --json "$f" >"$out" 2>"$work/err"; then
            cat "$work/err"
            bad "$name: inspect --json exits 0"
            continue
        fi
        check "$name: valid JSON" python3 -m json.tool "$out" /dev/null
        check "$name: vocab $vocab" [ "$(json "$out" "d['tokenizer']['vocab_size']")" = "$vocab" ]
        check "$name: model $model" [ "$(json "$out" "d['tokenizer']['model']")" = "$model" ]
        check "$name: pre $pre" [ "$(json "$out" "d['tokenizer']['pre']")" = "$pre" ]
        check "$name: no tensors, v3" [ "$(json "$out" "d['tensor_count'], d['version'], d['sizing']['total_bytes']")" = "0 3 0" ]
        check "$name: tokens array summarised" [ "$(json "$out" "d['metadata']['tokenizer.ggml.tokens']['length'], len(d['metadata']['tokenizer.ggml.tokens']['head'])")" = "$vocab 8" ]
        "$SLUICE" inspect "$f" >"$work/$name.txt" 2>&1
        check "$name: text shows the vocab size" grep -Eq "^  vocab size +$vocab\$" "$work/$name.txt"
        check "$name: text is short (arrays not dumped)" [ "$(wc -c <"$work/$name.txt")" -lt 20000 ]
    done <<'EOF'
gpt-2 gpt2 gpt-2 50257
deepseek-llm gpt2 deepseek-llm 102400
starcoder gpt2 starcoder 49152
llama-spm llama default 32000
phi-3 llama default 32064
EOF
    # GPT-2's <|endoftext|> (id 50256, the last of its 50257 tokens) is both
    # bos and eos; phi-3's vocabulary file carries a chat template, gpt-2's not
    check "gpt-2: bos/eos 50256" [ "$(json "$work/gpt-2.json" "d['tokenizer']['bos_id'], d['tokenizer']['eos_id']")" = "50256 50256" ]
    check "phi-3: has chat template" [ "$(json "$work/phi-3.json" "d['tokenizer']['has_chat_template']")" = "True" ]
    check "gpt-2: no chat template" [ "$(json "$work/gpt-2.json" "d['tokenizer']['has_chat_template']")" = "False" ]
fi

# ---- a generated MoE model --------------------------------------------------
# qwen3moe tiny: n_embd 64, expert ff 32 (preset table); overridden to 3 layers,
# 4 experts, top-3, f32. One expert's slice of ffn_gate_exps [64, 32, 4] is
# 64 * 32 * 4 bytes = 8192, same for up and down [32, 64, 4]: 24576 bytes per
# expert; routed bytes = 3 layers * 4 experts * 24576 = 294912; one token's
# expert cycle = 3 layers * 3 used * 24576 = 221184.
m="$work/tiny.gguf"
if timeout 300 "$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 3 --experts 4 --top-k 3 \
    --type f32 -q -o "$m" >"$work/mk.log" 2>&1; then
    "$SLUICE" inspect --json "$m" >"$work/tiny.json"
    check "tiny: valid JSON" python3 -m json.tool "$work/tiny.json" /dev/null
    check "tiny: routed bytes 294912" [ "$(json "$work/tiny.json" "d['sizing']['routed_expert_bytes']")" = 294912 ]
    check "tiny: 3 expert layers of 4 experts" [ "$(json "$work/tiny.json" "d['sizing']['layers_with_experts'], sorted(set(l['experts'] for l in d['sizing']['layers']))")" = "3 [4]" ]
    check "tiny: 24576 bytes per expert (8192 per projection)" [ "$(json "$work/tiny.json" "sorted(set((l['bytes_per_expert'], l['gate'], l['up'], l['down']) for l in d['sizing']['layers']))")" = "[(24576, 8192, 8192, 8192)]" ]
    check "tiny: expert cycle 221184" [ "$(json "$work/tiny.json" "d['sizing']['expert_cycle_bytes'], d['sizing']['expert_used_count']")" = "221184 3" ]
    check "tiny: dense + routed = total" [ "$(json "$work/tiny.json" "d['sizing']['dense_bytes'] + d['sizing']['routed_expert_bytes'] == d['sizing']['total_bytes'] == sum(t['bytes'] for t in d['tensors'])")" = True ]
    check "tiny: gate_exps shape [64, 32, 4]" [ "$(json "$work/tiny.json" "[t['shape'] for t in d['tensors'] if t['name'] == 'blk.1.ffn_gate_exps.weight']")" = "[[64, 32, 4]]" ]
    check "tiny: offsets aligned" [ "$(json "$work/tiny.json" "all(t['offset'] % d['alignment'] == 0 for t in d['tensors'])")" = True ]
    "$SLUICE" inspect "$m" >"$work/tiny.txt"
    check "tiny: text cycle line" grep -Eq "expert cycle / token +221184 .*3 layers x 3 experts" "$work/tiny.txt"
    check "tiny: text tensor row" grep -Eq "blk\.0\.ffn_down_exps\.weight +f32 +\[32, 64, 4\]" "$work/tiny.txt"
    "$SLUICE" inspect --no-tensors "$m" >"$work/nt.txt"
    check "--no-tensors leaves the table out" bash -c "! grep -q 'ffn_down_exps' '$work/nt.txt'"
    "$SLUICE" inspect --json --no-tensors "$m" >"$work/nt.json"
    check "--json --no-tensors has no tensor list" [ "$(json "$work/nt.json" "'tensors' in d")" = False ]

    # q8_0: a row of 64 is 2 blocks of 34 bytes = 68; gate [64, 32] per
    # expert = 32 rows * 68 = 2176; down [32, 64]: 64 rows * 1 block = 2176.
    m8="$work/tiny8.gguf"
    if timeout 300 "$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 3 --experts 4 --top-k 3 \
        --type q8_0 -q -o "$m8" >"$work/mk8.log" 2>&1; then
        "$SLUICE" inspect --json "$m8" >"$work/tiny8.json"
        check "tiny q8_0: 6528 bytes per expert" [ "$(json "$work/tiny8.json" "sorted(set((l['bytes_per_expert'], l['gate'], l['up'], l['down']) for l in d['sizing']['layers']))")" = "[(6528, 2176, 2176, 2176)]" ]
        check "tiny q8_0: cycle 3*3*6528 = 58752" [ "$(json "$work/tiny8.json" "d['sizing']['expert_cycle_bytes']")" = 58752 ]
    else
        cat "$work/mk8.log"
        bad "mkmodel q8_0 for inspect"
    fi

    # a dense model has no routed bytes
    md="$work/dense.gguf"
    if timeout 300 "$SLUICE" mkmodel --arch qwen3 --preset tiny -q -o "$md" >/dev/null 2>&1; then
        "$SLUICE" inspect --json "$md" >"$work/dense.json"
        check "dense: no routed bytes, no cycle" [ "$(json "$work/dense.json" "d['sizing']['routed_expert_bytes'], d['sizing']['expert_cycle_bytes']")" = "0 None" ]
    else
        bad "mkmodel dense for inspect"
    fi
else
    cat "$work/mk.log"
    bad "mkmodel tiny for inspect"
fi

# ---- every architecture mkmodel writes --------------------------------------
# MoE families must show routed bytes (and a cycle), dense ones none; the
# qwen2moe shared expert (ffn_*_shexp) is dense, not routed.
for spec in qwen3moe:moe qwen2moe:moe mixtral:moe olmoe:moe llama:dense qwen3:dense qwen2:dense; do
    arch=${spec%%:*}
    kind=${spec##*:}
    f="$work/arch-$arch.gguf"
    if ! timeout 300 "$SLUICE" mkmodel --arch "$arch" --preset tiny -q -o "$f" >/dev/null 2>&1; then
        bad "$arch: mkmodel tiny"
        continue
    fi
    if ! "$SLUICE" inspect --json "$f" >"$work/arch.json" 2>"$work/arch.err" ||
        ! "$SLUICE" inspect "$f" >/dev/null 2>>"$work/arch.err"; then
        cat "$work/arch.err"
        bad "$arch: inspect"
        continue
    fi
    if [ "$kind" = moe ]; then
        want="True True True"
    else
        want="False False True"
    fi
    check "$arch: routed bytes and cycle as a $kind model" [ "$(json "$work/arch.json" "d['sizing']['routed_expert_bytes'] > 0, d['sizing']['expert_cycle_bytes'] is not None, d['sizing']['dense_bytes'] > 0")" = "$want" ]
done
if [ -f "$work/arch-qwen2moe.gguf" ]; then
    "$SLUICE" inspect --json "$work/arch-qwen2moe.gguf" >"$work/q2.json"
    check "qwen2moe: shared expert counted as dense" [ "$(json "$work/q2.json" "any('shexp' in t['name'] for t in d['tensors']), sum(t['bytes'] for t in d['tensors'] if '_exps' in t['name']) == d['sizing']['routed_expert_bytes']")" = "True True" ]
fi

# ---- one expert stored 2-D (gguf-py / llama.cpp), issue 10 D5 ---------------
# dense1-Q8_0 is a llama file with llama.expert_count 1 whose experts are
# [n_embd, n_ff] / [n_ff, n_embd] (the trailing expert dimension of 1 is
# dropped). The expert count must be 1 and one expert's bytes per layer the
# sum of that layer's three _exps tensors as the tensor table lists them.
ref=tests/data/reference/dense1-Q8_0.gguf # a copy of the shared fixture
if [ ! -f "$ref" ]; then
    echo "skipped: $ref not found"
else
    "$SLUICE" inspect --json "$ref" >"$work/d1.json" 2>"$work/d1.err"
    check "dense1: inspect --json exits 0" [ $? -eq 0 ]
    check "dense1: experts are 2-D in the file" [ "$(json "$work/d1.json" "sorted(set(len(t['shape']) for t in d['tensors'] if '_exps' in t['name']))")" = "[2]" ]
    check "dense1: every layer has 1 expert, none flagged" [ "$(json "$work/d1.json" "d['sizing']['expert_count'], sorted(set(l['experts'] for l in d['sizing']['layers'])), len(d['sizing']['layers'])")" = "1 [1] 3" ]
    check "dense1: bytes per expert = sum of the layer's three _exps tensors" [ "$(json "$work/d1.json" "all(l['bytes_per_expert'] == sum(t['bytes'] for t in d['tensors'] if t['name'].startswith('blk.%d.' % l['layer']) and t['name'].split('.')[2] in ('ffn_gate_exps', 'ffn_up_exps', 'ffn_down_exps')) > 0 for l in d['sizing']['layers'])")" = True ]
    check "dense1: per projection = that tensor's bytes" [ "$(json "$work/d1.json" "all(l[p] == [t['bytes'] for t in d['tensors'] if t['name'] == 'blk.%d.ffn_%s_exps.weight' % (l['layer'], p)][0] for l in d['sizing']['layers'] for p in ('gate', 'up', 'down'))")" = True ]
    "$SLUICE" inspect "$ref" >"$work/d1.txt" 2>&1
    # text: the layer row reads "0-2  1  <per expert>" with no "!" mark
    check "dense1: text row shows 1 expert, no mismatch mark" grep -Eq '^    0-2 +1  +[0-9.]+ KiB' "$work/d1.txt"
    check "dense1: text has no '!' expert count" bash -c "! grep -Eq '^    [0-9-]+ +[0-9]+!' '$work/d1.txt'"
fi

# ---- errors and usage ---------------------------------------------------------
printf 'GGUF\001\000\000\000' >"$work/v1.gguf"
"$SLUICE" inspect "$work/v1.gguf" >/dev/null 2>"$work/v1.err"
rc=$?
check "version 1 file: exit 1" [ $rc -eq 1 ]
check "version 1 file: clear message" grep -q "unsupported GGUF version 1 at byte offset 4" "$work/v1.err"
printf 'GGUF\003\000\000\000\001\000\000\000' >"$work/trunc.gguf"
"$SLUICE" inspect "$work/trunc.gguf" >/dev/null 2>"$work/trunc.err"
check "truncated file: message names the field and offset" grep -q "unexpected end of file: header: tensor count needs 8 bytes at byte offset 8" "$work/trunc.err"
"$SLUICE" inspect "$work/missing.gguf" >/dev/null 2>"$work/missing.err"
check "missing file: exit 1" [ $? -eq 1 ]
"$SLUICE" inspect --help >"$work/help.txt"
check "--help exits 0 and lists --json" grep -q -- "--json" "$work/help.txt"
"$SLUICE" inspect --bogus x.gguf >/dev/null 2>&1
check "unknown option: exit 2" [ $? -eq 2 ]
"$SLUICE" inspect >/dev/null 2>&1
check "no model: exit 2" [ $? -eq 2 ]
"$SLUICE" inspect -m >/dev/null 2>&1
check "-m without a file: exit 2" [ $? -eq 2 ]

# qwen35moe's layers (issue 12): the tiny preset alternates gated DeltaNet and
# attention (full_attention_interval 2); its state, from ARCHS.md's formulas:
# per token 2 attention layers x (K + V) x 2 KV heads x 16 x 2 bytes = 256;
# per sequence 2 DeltaNet layers x 4 bytes x ((conv 4 - 1) x (2 x 2 x 16 +
# 4 x 16) + 4 v heads x 16 x 16) = 11264
Q35=$(mktemp "${TMPDIR:-/tmp}/sluice-q35-XXXXXX.gguf")
if "$SLUICE" mkmodel --arch qwen35moe --preset tiny -q -o "$Q35"; then
    out=$("$SLUICE" inspect --no-tensors "$Q35")
    check "-m FILE (llama.cpp's spelling) shows the same" \
        bash -c '[ "$("$1" inspect -m "$2" --no-tensors)" = "$3" ]' _ "$SLUICE" "$Q35" "$out"
    check "qwen35moe layer pattern" \
        bash -c 'echo "$1" | grep -q "mixers  *0 gated DeltaNet, 1 attention, 2 gated DeltaNet, 3 attention"' _ "$out"
    check "qwen35moe state per token" bash -c 'echo "$1" | grep -q "state  *256 bytes per token"' _ "$out"
    check "qwen35moe state per sequence" bash -c 'echo "$1" | grep -q " 11264 bytes per sequence"' _ "$out"
    json=$("$SLUICE" inspect --json --no-tensors "$Q35")
    check "qwen35moe layers in --json" bash -c 'echo "$1" | grep -q "\"state_bytes_per_sequence\": 11264"' _ "$json"
else
    bad "mkmodel qwen35moe"
fi
rm -f "$Q35"

# Fused gate/up experts: the gemma4 reference fixture stores each layer's
# ffn_gate_up_exps [256, 2 x 128, 8] in q8_0 (a row of 256 is 8 blocks of 34
# bytes = 272). One expert's gate half is 128 rows x 272 = 34816 bytes, the up
# half the same; ffn_down_exps [128, 256, 8]: 256 rows x 4 blocks x 34 = 34816;
# ffn_down_exps.scale [8] f32: 4 bytes an expert (other). Per expert 104452.
g4=""
for d in ../shared/fixtures/reference /work/shared/fixtures/reference; do
    [ -f "$d/gemma4-Q8_0.gguf" ] && g4=$d/gemma4-Q8_0.gguf && break
done
if [ -z "$g4" ]; then
    echo "skipped: the gemma4 reference fixture not found (../shared/fixtures/reference)"
else
    "$SLUICE" inspect --json --no-tensors "$g4" >"$work/g4.json"
    check "fused gate/up: shape [256, 256, 8] q8_0" [ "$("$SLUICE" inspect "$g4" | grep -c 'ffn_gate_up_exps\.weight  *q8_0  *\[256, 256, 8\]')" = 4 ]
    check "fused gate/up: gate 34816, up 34816, down 34816, other 4 in every layer" [ "$(json "$work/g4.json" "sorted(set((l['gate'], l['up'], l['down'], l['other'], l['bytes_per_expert']) for l in d['sizing']['layers']))")" = "[(34816, 34816, 34816, 4, 104452)]" ]
    "$SLUICE" inspect --no-tensors "$g4" >"$work/g4.txt"
    check "fused gate/up: text columns gate and up 34.00 KiB" grep -Eq "^ +0-3 +8 +102\.00 KiB +34\.00 KiB +34\.00 KiB +34\.00 KiB +4 B" "$work/g4.txt"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
