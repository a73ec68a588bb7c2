#!/usr/bin/env bash
# `sluice serve`'s own page at / and its telemetry stream (issue 32 part 2).
# Without a browser: GET / is the built-in page (HTML, a Content-Security-
# Policy, nothing fetched from another origin); GET /api/events read as curl
# -N would, checked against a request's own counts
# (tests/cli/lib/webui_events.py), and with --api-key it needs the key while
# the page does not. With Debian's chromium and playwright-core (installed
# from npm into build/npm like the official clients of tests/cli/serve.sh;
# skipped with a note when chromium, node/npm or the install are missing):
# the page driven in headless Chromium (tests/cli/lib/webui.cjs): a message
# streams, Stop ends it, a reload keeps the conversation, the telemetry plot
# moves during a run, hostile text shows as text, the keyed server's page asks
# for the key. Screenshots: build/webui-shots/*.png.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup webui
M=$work/m.gguf
KEY=webui-test-key
SHOTS=$PWD/build/webui-shots
serve_model "$M" --arch qwen3moe --preset tiny-k --layers 2 --seed 5
# streamed experts in a cache of 4, so that hit rate and bytes read move
FLAGS=(-m "$M" -c 4096 --chat-template qwen3 --moe-stream --cache-experts 4 -t 2)
serve_start open "${FLAGS[@]}" || { finish; exit 1; }
open_pid=$serve_pid open_port=$serve_port
# this one measures the drive's rate at load (--stats): the telemetry has the bound
serve_start keyed "${FLAGS[@]}" --api-key "$KEY" --stats || { finish; exit 1; }
keyed_pid=$serve_pid keyed_port=$serve_port

# the page, as any client gets it
curl -s -D "$work/page.h" -o "$work/page.html" "http://127.0.0.1:$open_port/"
check "GET / is 200 text/html" grep -qi '^content-type: text/html' "$work/page.h"
check "with a Content-Security-Policy that allows no other origin" \
    grep -qi "^content-security-policy: default-src 'none';.*connect-src 'self'" "$work/page.h"
check "the page is the built-in one" grep -q '<title>sluice</title>' "$work/page.html"
cmp -s "$work/page.html" app/server/web/ui.html && ok "byte for byte app/server/web/ui.html" ||
    bad "GET / differs from app/server/web/ui.html"
# nothing loaded from elsewhere: no URL with a scheme or a protocol-relative one
if grep -Eqi '(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/' "$work/page.html" ||
    grep -Eqi '(src|href)=["'"'"']?(https?:|//)' "$work/page.html"; then
    bad "the page names another origin: $(grep -Eoi '(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/[^"'"'"' ]*' "$work/page.html" | head -3)"
else
    ok "the page names no other origin (no CDN)"
fi
code=$(curl -s -o /dev/null -w '%{http_code}' -I "http://127.0.0.1:$open_port/")
[ "$code" = 200 ] && ok "HEAD / is 200" || bad "HEAD / is $code"

# the event stream, read while a request runs, as curl -N reads it
timeout 2 curl -s -N "http://127.0.0.1:$open_port/api/events?interval_ms=200" >"$work/curl-events.txt"
check "curl -N /api/events: the plan and then ticks" \
    bash -c "grep -q '^event: plan' '$work/curl-events.txt' && [ \$(grep -c '^event: tick' '$work/curl-events.txt') -ge 5 ]"
timeout 120 python3 tests/cli/lib/webui_events.py "$open_port" 0 >"$work/ev.out" 2>&1
rc=$?
serve_relay <"$work/ev.out"
[ $rc -eq 0 ] && grep -q '^client-finished' "$work/ev.out" ||
    bad "webui_events.py exited $rc: $(tail -c 600 "$work/ev.out")"
timeout 120 python3 tests/cli/lib/webui_events.py "$keyed_port" 1 "$KEY" >"$work/kev.out" 2>&1
rc=$?
serve_relay "keyed: " <"$work/kev.out"
[ $rc -eq 0 ] && grep -q '^client-finished' "$work/kev.out" ||
    bad "webui_events.py (keyed) exited $rc: $(tail -c 600 "$work/kev.out")"

# the page in headless Chromium
browser_ready() {
    CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
    if [ -z "$CHROMIUM" ]; then
        echo "note: chromium not found (Debian's chromium package): the browser checks are skipped"
        return 1
    fi
    NPM_DIR=${SLUICE_NPM_DIR:-$PWD/build/npm}
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "note: node/npm not found: the browser checks are skipped"
        return 1
    fi
    if [ ! -d "$NPM_DIR/node_modules/playwright-core" ]; then
        mkdir -p "$NPM_DIR"
        timeout 300 npm install --prefix "$NPM_DIR" --no-audit --no-fund --silent \
            playwright-core@1.65.2 >"$NPM_DIR/install-playwright.log" 2>&1 ||
            echo "note: npm install playwright-core failed (offline?): the browser checks are skipped"
    fi
    [ -d "$NPM_DIR/node_modules/playwright-core" ]
}
if browser_ready; then
    rm -rf "$SHOTS"
    mkdir -p "$SHOTS"
    NODE_PATH="$NPM_DIR/node_modules" timeout 300 node tests/cli/lib/webui.cjs \
        "$open_port" "$keyed_port" "$KEY" "$SHOTS" "$CHROMIUM" >"$work/ui.out" 2>&1
    rc=$?
    serve_relay <"$work/ui.out"
    [ $rc -eq 0 ] && grep -q '^client-finished' "$work/ui.out" ||
        bad "webui.cjs exited $rc: $(tail -c 600 "$work/ui.out")"
    n=$(find "$SHOTS" -name '*.png' -size +1k | wc -l)
    [ "$n" -ge 7 ] && ok "$n screenshots in build/webui-shots" || bad "only $n screenshots in $SHOTS"
fi

# a server stops at once with a telemetry stream open (its ticks 10 s apart)
timeout 20 curl -s -N "http://127.0.0.1:$open_port/api/events?interval_ms=10000" >"$work/hold.txt" &
curl_pid=$!
sleep 0.5
start=$(date +%s%N)
serve_stop "$open_pid"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
wait "$curl_pid"
[ $rc -eq 0 ] && [ $ms -lt 5000 ] && grep -q '^event: plan' "$work/hold.txt" &&
    ok "with a stream open the server stops at once (${ms} ms) and the stream ends" ||
    bad "stopping with a stream open: exit $rc after $ms ms"
serve_stop "$keyed_pid"
for f in open keyed; do
    if grep -q "ERROR: \|runtime error\|ThreadSanitizer" "$work/$f.err"; then
        bad "sanitizer reports ($f): $(grep -m3 -A30 "ERROR: \|runtime error\|ThreadSanitizer" "$work/$f.err")"
    else
        ok "no sanitizer report from the $f server"
    fi
done
finish
