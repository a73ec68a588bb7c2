#!/usr/bin/env bash
# `sluice iobench` from the outside: options, refusals, the fallback report,
# JSON, deterministic offset streams (via --trace) and --slice-kb auto on a
# generated model. Runs are a fraction of a second on small files in /tmp;
# no figure is asserted, only that rows exist and say what they measured.
set -u
cd "$(dirname "$0")/../.."
SLUICE=${SLUICE:-build/san/sluice}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-iobench-XXXXXX")
trap 'rm -rf "$work"' EXIT

# 8 MiB of non-zero bytes (zeros could be special-cased by a thin disk)
head -c 8388608 /dev/urandom >"$work/data.bin"
head -c 65536 /dev/urandom >"$work/small.bin"
RUN="$SLUICE iobench --model $work/data.bin --slice-kb 64 --seconds 0.2"

$SLUICE iobench --help >"$work/help" 2>&1
check "help exits 0 and lists the options" \
    '[ $? -eq 0 ] && grep -q -- "--slice-kb" "$work/help" && grep -q -- "--reopen-lanes" "$work/help"'

$SLUICE iobench --slice-kb 64 >/dev/null 2>"$work/err"
check "missing --model is a usage error (2)" '[ $? -eq 2 ] && grep -q -- "--model" "$work/err"'

$SLUICE iobench --model "$work/data.bin" --slice-kb 64 --bogus >/dev/null 2>"$work/err"
check "unknown option is a usage error" '[ $? -eq 2 ] && grep -q "bogus" "$work/err"'

$SLUICE iobench --model "$work/data.bin" --slice-kb 64 --lanes 0 >/dev/null 2>"$work/err"
check "lanes 0 refused" '[ $? -eq 2 ]'

# 64 KiB file, 64 KiB reads: 1 slice, fewer than the 8 required
$SLUICE iobench --model "$work/small.bin" --slice-kb 64 --seconds 0.2 >/dev/null 2>"$work/err"
check "file smaller than a few slices is refused" '[ $? -eq 1 ] && grep -q "too small" "$work/err"'

# 8 MiB region confined to 256 KiB by --range-mb? range is in MiB: 1 MiB / 256 KiB = 4 < 8
$SLUICE iobench --model "$work/data.bin" --slice-kb 256 --range-mb 1 --seconds 0.2 >/dev/null 2>"$work/err"
check "range smaller than a few slices is refused" '[ $? -eq 1 ] && grep -q "range-mb" "$work/err"'

$SLUICE iobench --model "$work/data.bin" --seconds 0.2 >/dev/null 2>"$work/err"
check "--slice-kb auto on a non-GGUF file asks for --slice-kb N" \
    '[ $? -eq 1 ] && grep -q "GGUF" "$work/err"'

$RUN --lanes 1,2 >"$work/out" 2>&1
rc=$?
check "pread run exits 0" '[ $rc -eq 0 ]'
check "one row per lane count, then the peak" \
    '[ $(grep -cE "^ +[12] +[0-9.]+ +[0-9]+ " "$work/out") -eq 2 ] && grep -q "peak:" "$work/out"'
# /tmp may be tmpfs (O_DIRECT refused on older kernels): then it must say so
if grep -q "O_DIRECT unavailable" "$work/out"; then
    check "fallback rows are marked and the peak disowned" \
        'grep -q "buffered(fallback) pread" "$work/out" && grep -q "NOT the drive" "$work/out"'
else
    check "rows say direct pread" '[ $(grep -c "direct pread" "$work/out") -ge 2 ]'
fi

$RUN --lanes 2 --backend uring --qd 2 >"$work/out" 2>&1
check "io_uring run (or its reported fallback)" \
    '[ $? -eq 0 ] && (grep -q " io_uring$" "$work/out" || grep -q "io_uring unavailable" "$work/out")'

SLUICE_TEST_REFUSE_DIRECT=1 $RUN --lanes 1 >"$work/out" 2>&1
check "refused O_DIRECT is reported and the figure disowned" \
    '[ $? -eq 0 ] && grep -q "O_DIRECT unavailable" "$work/out" && grep -q "NOT the drive" "$work/out" && grep -q "buffered(fallback)" "$work/out"'

SLUICE_TEST_REFUSE_DIRECT=1 $RUN --lanes 1 --json >"$work/out" 2>&1
check "refused O_DIRECT in JSON: drive_figure false" \
    'grep -q "\"direct_fallback\":true" "$work/out" && grep -q "\"drive_figure\":false" "$work/out"'

$RUN --lanes 1 --buffered >"$work/out" 2>&1
check "--buffered is labelled, not the drive" \
    '[ $? -eq 0 ] && grep -q "buffered pread" "$work/out" && grep -q "not the drive" "$work/out"'

$RUN --lanes 1,2 --json >"$work/out" 2>&1
check "JSON has rows, peak, parts" \
    '[ $? -eq 0 ] && [ $(grep -o "\"lanes\":" "$work/out" | wc -l) -eq 3 ] && grep -q "\"parts_bytes\":\[65536\]" "$work/out" && grep -q "\"peak\"" "$work/out"'

$RUN --lanes 2 --expert --json >"$work/out" 2>&1
check "--expert on a plain file: three reads per logical read" \
    '[ $? -eq 0 ] && grep -q "\"parts_bytes\":\[65536,65536,65536\]" "$work/out"'

$RUN --lanes 2 --scatter 4 --json >"$work/out" 2>&1
# 64 KiB in 4 pieces = 16384 bytes each
check "--scatter 4 splits a 64 KiB read into 4 x 16 KiB" \
    '[ $? -eq 0 ] && grep -q "\"parts_bytes\":\[16384,16384,16384,16384\]" "$work/out"'

$RUN --lanes 2 --fresh --mmap --compute-load 1 --range-mb 4 >"$work/out" 2>&1
check "fresh pages, mapping held, compute load, range" \
    '[ $? -eq 0 ] && grep -q "fresh pages" "$work/out" && grep -q "mapped during the run" "$work/out" && grep -q "1 burning" "$work/out"'

$RUN --lanes 1 --json >"$work/out" 2>&1
check "huge pages asked by default" 'grep -q "\"huge_pages\":true" "$work/out"'
$RUN --lanes 1 --small-pages >"$work/out" 2>&1
check "--small-pages is labelled" '[ $? -eq 0 ] && grep -q "small pages" "$work/out"'

$RUN --lanes 1 --mmap --reopen-lanes >"$work/out" 2>&1
check "--mmap --reopen-lanes drops the mapping first" \
    '[ $? -eq 0 ] && grep -q "unmapped before the run" "$work/out"'

# Deterministic streams: the first 3 reads of each stream have the same
# offsets in two runs with the same seed, and not with another seed.
firsts() { awk '$3 < 3 { print $1, $2, $3, $4, $6 }' "$1" | sort; }
$RUN --lanes 1,2 --seed 9 --trace "$work/t1" >/dev/null 2>&1
$RUN --lanes 1,2 --seed 9 --trace "$work/t2" >/dev/null 2>&1
$RUN --lanes 1,2 --seed 10 --trace "$work/t3" >/dev/null 2>&1
check "trace lines have 10 fields" '[ -s "$work/t1" ] && awk "NF != 10 { exit 1 }" "$work/t1"'
check "same seed, same offsets per stream" \
    '[ -n "$(firsts "$work/t1")" ] && [ "$(firsts "$work/t1")" = "$(firsts "$work/t2")" ]'
check "another seed, other offsets" '[ "$(firsts "$work/t1")" != "$(firsts "$work/t3")" ]'
# offsets are 4096-aligned and reads stay inside the 8 MiB file
check "trace offsets aligned and in range" \
    'awk "\$6 % 4096 != 0 || \$6 + \$7 > 8388608 { exit 1 }" "$work/t1"'

# --slice-kb auto on a generated model. tiny-k in q4_k: gate_exps is
# [n_embd 256, n_ff_exp 256, 4 experts]; a q4_k row of 256 elements is one
# 144-byte block, so one expert's gate slice is 256 rows * 144 = 36864 bytes
# (36.0 KiB); up and down have the same shape class, 36864 bytes each.
if $SLUICE mkmodel --arch qwen3moe --preset tiny-k --type q4_k -q -o "$work/m.gguf" >"$work/mk" 2>&1; then
    $SLUICE iobench --model "$work/m.gguf" --lanes 1 --seconds 0.2 >"$work/out" 2>&1
    check "auto slice from the model: 36.0 KiB" \
        '[ $? -eq 0 ] && grep -q "read: 36.0 KiB" "$work/out" && grep -q "ffn_gate_exps" "$work/out"'
    $SLUICE iobench --model "$work/m.gguf" --lanes 2 --expert --seconds 0.2 --json \
        --trace "$work/te" >"$work/out" 2>&1
    check "auto --expert: three 36864-byte slices at real offsets" \
        '[ $? -eq 0 ] && grep -q "\"parts_bytes\":\[36864,36864,36864\]" "$work/out" && grep -q "\"real_expert_offsets\":true" "$work/out"'
    # real offsets: every read is one whole slice (36864 bytes)
    check "expert reads are whole slices" 'awk "\$7 != 36864 { exit 1 }" "$work/te"'
elif grep -q "not built yet" "$work/mk"; then
    echo "skipped: --slice-kb auto needs 'sluice mkmodel', not built yet"
else
    bad "mkmodel for the auto-slice test: $(tail -n 1 "$work/mk")"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
