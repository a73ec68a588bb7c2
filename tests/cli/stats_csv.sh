#!/usr/bin/env bash
# --stats-csv FILE: one row per decoded token after a prompt row, 13 columns;
# the rows' hits, misses and bytes add up to what --stats-json counts for the
# whole run; a resident run has no lookups; bench writes rows too (none
# for its warm-up run, which --no-warmup leaves out); an
# unwritable path or the model as the output is refused.
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-csv-XXXXXX")
trap 'rm -rf "$work"' EXIT

M=$work/m.gguf
"$SLUICE" mkmodel --arch qwen3moe --preset tiny --layers 3 --experts 16 --top-k 4 --seed 4 \
    -q -o "$M"
check "mkmodel" [ $? -eq 0 ]
"$SLUICE" run -m "$M" -p "Once upon a time" -n 10 --temp 0 --ignore-eos --moe-stream \
    --cache-experts 8 --stats-csv "$work/t.csv" --stats-json "$work/s.json" >/dev/null 2>"$work/err"
check "run with --stats-csv succeeds" [ $? -eq 0 ]
check "header" bash -c "head -1 '$work/t.csv' | grep -qx 'token,phase,ms,compute_ms,manage_ms,stall_ms,hits,misses,read_bytes,prefetch_used,prefetch_wasted,major_faults,rss_mib'"
check "a prompt row and 10 decode rows" \
    python3 - "$work/t.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["token"] for r in rows] == [str(i) for i in range(11)], rows
assert rows[0]["phase"] == "prompt" and all(r["phase"] == "decode" for r in rows[1:])
assert all(len(r) == 13 and float(r["ms"]) > 0 and float(r["rss_mib"]) > 0 for r in rows)
PY
check "the rows add up to the run's totals" \
    python3 - "$work/t.csv" "$work/s.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
s = json.load(open(sys.argv[2]))
tot = lambda k: sum(int(r[k]) for r in rows)
assert tot("hits") == s["hits"] and tot("misses") == s["misses"], (tot("hits"), s["hits"])
assert tot("read_bytes") == s["window_bytes"] and s["misses"] > 0
assert all(int(r["hits"]) + int(r["misses"]) > 0 for r in rows)
PY
"$SLUICE" run -m "$M" -p "Once" -n 3 --temp 0 --ignore-eos --no-stream \
    --stats-csv "$work/r.csv" >/dev/null 2>&1
check "resident: 4 rows without lookups" \
    python3 -c "import csv; r=list(csv.DictReader(open('$work/r.csv'))); assert len(r)==4 and all(x['hits']=='0' and x['misses']=='0' for x in r)"
"$SLUICE" bench -m "$M" -p 0 -n 4 -r 2 --stats-csv "$work/b.csv" >/dev/null 2>&1
check "bench: a start row and 4 rows per repetition" [ "$(grep -c ',decode,' "$work/b.csv")" -eq 8 ]
"$SLUICE" bench -m "$M" -p 0 -n 4 -r 2 --stats >/dev/null 2>"$work/warm.err"
check "bench: an untimed warm-up run before the 2 timed ones (1 + 3 x 4 tokens)" \
    grep -q "13 evaluated (12 generated)" "$work/warm.err"
"$SLUICE" bench -m "$M" -p 0 -n 4 -r 2 --stats --no-warmup >/dev/null 2>"$work/cold.err"
check "bench --no-warmup: the 2 timed runs only (1 + 2 x 4 tokens)" \
    grep -q "9 evaluated (8 generated)" "$work/cold.err"
"$SLUICE" run -m "$M" -p "Once" -n 2 --stats-csv "$work/no/such/dir/x.csv" >/dev/null 2>"$work/err"
check "an unwritable --stats-csv fails" [ $? -ne 0 ]
check "... naming it" grep -q -- "--stats-csv: cannot create '$work/no/such/dir/x.csv'" "$work/err"
"$SLUICE" run -m "$M" -p "Once" -n 2 --stats-csv "$M" >/dev/null 2>"$work/err"
check "the model as --stats-csv is refused" [ $? -ne 0 ]
check "... and the model is intact" "$SLUICE" inspect "$M" >/dev/null 2>&1
finish
