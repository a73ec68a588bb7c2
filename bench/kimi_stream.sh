#!/usr/bin/env bash
# bench/kimi_stream.sh - issue 17 item 9: a Kimi-K2-shaped deepseek2 model
# (384 experts of 7168 x 2048, top-8, MLA; a few layers) run fully resident
# and then streamed inside a memory cgroup of about half its size, in one
# script: the greedy text must be byte-identical (cmp), and the prefill and
# decode rates of both runs plus the streamed run's --stats bound are
# printed. The machine is shared: compare the two runs as a ratio.
#
# Environment: MODEL (default /work/models/kimi-k2-l2-q4_k_m.gguf, generated
# if missing: 2 layers, 1 dense + 1 MoE, ~12.1 GiB), N (generated tokens,
# default 32), THREADS (default 2), LIMIT_MB (default: half the file),
# OUT (result folder). Needs root for the cgroup (bench/cgroup_run.sh).
set -eu
cd "$(dirname "$0")/.."
SLUICE=build/rel/sluice
MODEL=${MODEL:-/work/models/kimi-k2-l2-q4_k_m.gguf}
N=${N:-32}
THREADS=${THREADS:-2}
OUT=${OUT:-build/bench-kimi}
mkdir -p "$OUT"
make -s all
if [ ! -f "$MODEL" ]; then
    "$SLUICE" mkmodel --arch deepseek2 --preset kimi-k2 --layers 2 --type q4_k_m --seed 1 \
        -o "$MODEL"
fi
model_mb=$(( $(stat -c %s "$MODEL") / 1048576 ))
LIMIT_MB=${LIMIT_MB:-$(( model_mb / 2 ))}
PROMPT="The river carried the old mill's wheel through the valley, and every spring the
miller counted the stones that the flood had left on his doorstep before he opened the gate."
echo "model $MODEL: $model_mb MiB; cgroup limit for the streamed run: $LIMIT_MB MiB"
uptime

echo "== 1/2 fully resident (--no-stream), $N tokens, greedy"
/usr/bin/time -v "$SLUICE" run -m "$MODEL" -p "$PROMPT" -n "$N" --temp 0 --ignore-eos \
    -t "$THREADS" --no-stream --stats > "$OUT/resident.out" 2> "$OUT/resident.err"
grep -E "^(load|prompt|generated):|^mode|^memory|^bound|^process|Maximum resident" "$OUT/resident.err"

echo "== 2/2 streamed (--moe-stream) inside a $LIMIT_MB MiB memory cgroup"
uptime
bench/cgroup_run.sh "$LIMIT_MB" /usr/bin/time -v "$SLUICE" run -m "$MODEL" -p "$PROMPT" \
    -n "$N" --temp 0 --ignore-eos -t "$THREADS" --moe-stream --stats \
    > "$OUT/stream.out" 2> "$OUT/stream.err"
grep -E "^(load|prompt|generated):|^mode|^memory|^expert|^experts|^time per|^flash|^bound|^process|Maximum resident|cgroup peak" \
    "$OUT/stream.err"
grep -ao "cgroup peak: [0-9]* MiB" "$OUT/stream.out" || true
uptime

# cgroup_run.sh prints its peak on stdout right after the generated text
# (which need not end in a newline): cut it off before comparing.
python3 -c 'import re,sys; d=open(sys.argv[1],"rb").read(); sys.stdout.buffer.write(re.sub(rb"cgroup peak: \d+ MiB\n$", b"", d))' \
    "$OUT/stream.out" > "$OUT/stream.text"
if cmp "$OUT/resident.out" "$OUT/stream.text"; then
    echo "greedy output identical: streamed == resident ($(wc -c < "$OUT/resident.out") bytes of text)"
else
    echo "MISMATCH: streamed output differs from resident"
    exit 1
fi
# The synthetic vocabulary's greedy tokens may print as little or no text,
# so the text comparison above is backed by every position's logits, bit
# for bit: bench/logits_digest.c over a fixed 40-token sequence in batches
# of 7, resident and then streamed (a cache of CACHE_EXPERTS) in the cgroup.
LIBS="-lpcre2-8 -lpthread -lm $(pkg-config --exists liburing && echo -luring)"
cc -O2 -Iinclude bench/logits_digest.c build/rel/libsluice.a $LIBS -o "$OUT/logits_digest"
"$OUT/logits_digest" "$MODEL" 7 "$THREADS" > "$OUT/digest-resident.txt"
bench/cgroup_run.sh "$LIMIT_MB" "$OUT/logits_digest" "$MODEL" 7 "$THREADS" \
    "${CACHE_EXPERTS:-64}" > "$OUT/digest-stream.txt"
grep -v "^cgroup peak" "$OUT/digest-stream.txt" > "$OUT/digest-stream.cmp"
if cmp "$OUT/digest-resident.txt" "$OUT/digest-stream.cmp"; then
    echo "logits identical at all 40 positions: streamed == resident ($(tail -1 "$OUT/digest-resident.txt"))"
else
    echo "MISMATCH: streamed logits differ from resident"
    exit 1
fi
python3 - "$OUT" <<'PY'
import re, sys
out = sys.argv[1]
def rates(name):
    t = open(out + "/" + name + ".err").read()
    p = float(re.search(r"^prompt:.*\(\s*([\d.]+) tok/s\)", t, re.M).group(1))
    g = float(re.search(r"^generated:.*\(\s*([\d.]+) tok/s\)", t, re.M).group(1))
    return p, g
rp, rg = rates("resident")
sp, sg = rates("stream")
print("prefill  resident %.3f tok/s, streamed %.3f tok/s: streamed/resident %.2f" % (rp, sp, sp / rp))
print("decode   resident %.3f tok/s, streamed %.3f tok/s: streamed/resident %.2f" % (rg, sg, sg / rg))
PY
