#!/usr/bin/env bash
# A short fuzz of `sluice serve`'s HTTP side inside the suite (issue 29):
# libFuzzer on the request bodies (build/fuzz/fuzz_http: every committed seed
# once, then mutation for FUZZ_HTTP_SECONDS, default 10; skipped without
# clang's libFuzzer), then mutated raw requests thrown at a running server
# on the loopback for as long (tests/cli/lib/fuzz_http_raw.py): the server
# stays up, answers /health, every reply is HTTP and none is a 500. The long
# run: `make fuzz-http FUZZ_SECONDS=600`. --raw-only skips the libFuzzer part.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
. tests/cli/lib/fuzz.sh
secs=${FUZZ_HTTP_SECONDS:-10}
serve_setup fuzz-http

if [ "${1:-}" != --raw-only ]; then
    (fuzz_require_libfuzzer "$work") >"$work/probe.out"
    if grep -q '^skipped' "$work/probe.out"; then
        cat "$work/probe.out" | head -1
    else
        fuzz_build fuzz_http "$work"
        n_seeds=$(ls tests/fuzz/corpus_http | wc -l)
        if build/fuzz/fuzz_http -runs=0 tests/fuzz/corpus_http >"$work/seeds.log" 2>&1; then
            ok "fuzz_http: replay $n_seeds seeds"
        else
            tail -n 30 "$work/seeds.log"
            bad "fuzz_http: replay seeds ($n_seeds files)"
        fi
        mkdir -p "$work/corpus"
        if build/fuzz/fuzz_http -max_total_time="$secs" -max_len=8192 -timeout=30 \
            -rss_limit_mb=2048 -dict=tests/fuzz/http.dict -artifact_prefix="$work/" \
            "$work/corpus" tests/fuzz/corpus_http >"$work/fuzz.log" 2>&1; then
            runs=$(grep -Eo 'Done [0-9]+ runs' "$work/fuzz.log" | tail -n 1)
            ok "fuzz_http ${secs}s clean (${runs:-runs unknown})"
        else
            tail -n 40 "$work/fuzz.log"
            for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
                [ -e "$a" ] && mkdir -p build/fuzz && cp "$a" build/fuzz/http-"$(basename "$a")" &&
                    echo "   finding kept as build/fuzz/http-$(basename "$a")"
            done
            bad "fuzz_http ${secs}s"
        fi
    fi
fi

M=$work/m.gguf
serve_model "$M" --arch qwen3moe --preset tiny-k --layers 2 --seed 3
if serve_start raw -m "$M" -c 256 -np 2 -t 1 -n 4 --timeout 2 --max-body 65536; then
    serve_relay "raw: " < <(PYTHONPATH=tests/cli/lib timeout $((secs + 60)) \
        python3 tests/cli/lib/fuzz_http_raw.py "$serve_port" "$secs" "${FUZZ_HTTP_SEED:-$RANDOM}" 2>&1)
    [ "$serve_finished" -eq 1 ] || bad "the raw request client stopped early"
    if kill -0 "$serve_pid" 2>/dev/null; then
        ok "the server is still running"
    else
        bad "the server died: $(tail -c 1500 "$work/raw.err")"
    fi
    serve_stop "$serve_pid"
    if grep -q "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$work/raw.err"; then
        bad "the sanitizers reported: $(grep -m3 "ERROR\|runtime error" "$work/raw.err")"
    else
        ok "no sanitizer report from the server"
    fi
fi
finish
