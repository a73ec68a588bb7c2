# serve.sh - sourced by the tests of `sluice serve` (after common.sh):
# a scratch folder, a generated model, starting a server on a free loopback
# port and stopping it, and counting the results a client script prints.
#
#   serve_setup TAG            makes $work (a fresh ${TMPDIR:-/tmp}/sluice-TAG-*
#                              folder), stops every server serve_start started
#                              and removes $work on exit; reports `bad` and
#                              exits when python3 (the clients) is missing
#   serve_model FILE ARGS...   writes a generated model: "$SLUICE" mkmodel
#                              ARGS -q -o FILE; reports `bad` and exits when
#                              that fails
#   serve_start NAME ARGS...   runs "$SLUICE" serve --port 0 ARGS with its
#                              output in $work/NAME.out and $work/NAME.err;
#                              sets serve_pid and serve_port; on failure
#                              reports `bad` and returns 1
#   serve_stop PID             stops one server (SIGTERM) and waits for it;
#                              returns its exit status
#   serve_stop_all             stops every server serve_start started that
#                              is still running (for the EXIT trap)
#   serve_relay [PREFIX]       counts the "ok   NAME" / "FAIL NAME" lines of
#                              its input (a client's report) as ok / bad
#                              (named PREFIX NAME), a
#                              "client-finished" line in serve_finished, and
#                              echoes any other line
serve_finished=0
serve_setup() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-$1-XXXXXX")
    trap 'serve_stop_all; rm -rf "$work"' EXIT
    if ! command -v python3 >/dev/null; then
        bad "python3 is needed by this test"
        finish
        exit 1
    fi
}

serve_model() {
    local file=$1
    shift
    if ! "$SLUICE" mkmodel "$@" -q -o "$file"; then
        bad "mkmodel"
        finish
        exit 1
    fi
}

serve_relay() {
    local line prefix=${1:-}
    while IFS= read -r line; do
        case $line in
        "ok   "*) ok "$prefix${line#ok   }" ;;
        "FAIL "*) bad "$prefix${line#FAIL }" ;;
        client-finished) serve_finished=$((serve_finished + 1)) ;;
        *) echo "$line" ;;
        esac
    done
}

serve_pids=
serve_start() {
    local name=$1
    shift
    : >"$work/$name.err" # exists before the background job opens it (the loop below reads it)
    "$SLUICE" serve --port 0 "$@" >"$work/$name.out" 2>"$work/$name.err" &
    serve_pid=$!
    serve_pids="$serve_pids $serve_pid"
    serve_port=
    for _ in $(seq 1 1200); do
        serve_port=$(sed -n 's/^sluice serve: listening on http:\/\/[^ ]*:\([0-9][0-9]*\) .*/\1/p' "$work/$name.err")
        [ -n "$serve_port" ] && return 0
        kill -0 "$serve_pid" 2>/dev/null || break
        sleep 0.1
    done
    bad "the server ($name) did not start: $(tail -c 600 "$work/$name.err")"
    return 1
}

serve_stop() {
    kill "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

serve_stop_all() { # only this shell's own background jobs still running (no reused pid)
    local running
    running=" $(jobs -pr | tr '\n' ' ') "
    for p in $serve_pids; do
        case "$running" in
        *" $p "*) kill "$p" 2>/dev/null && wait "$p" 2>/dev/null ;;
        esac
    done
    serve_pids=
}

serve_sdks() { # serve_sdks: installs the official openai, @anthropic-ai/sdk and ollama clients into
    # $NPM_DIR (default build/npm, once; pinned versions) and succeeds when node can use
    # them; otherwise prints why the official-client checks are skipped and fails
    NPM_DIR=${SLUICE_NPM_DIR:-$PWD/build/npm}
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "note: node/npm not found: the official-client checks are skipped"
        return 1
    fi
    if [ ! -d "$NPM_DIR/node_modules/openai" ] || [ ! -d "$NPM_DIR/node_modules/@anthropic-ai/sdk" ] ||
        [ ! -d "$NPM_DIR/node_modules/ollama" ]; then
        mkdir -p "$NPM_DIR"
        timeout 300 npm install --prefix "$NPM_DIR" --no-audit --no-fund --silent \
            openai@4.104.0 @anthropic-ai/sdk@1.15.0 ollama@0.6.4 >"$NPM_DIR/install.log" 2>&1 ||
            echo "note: npm install failed (offline?): the official-client checks are skipped"
    fi
    [ -d "$NPM_DIR/node_modules/openai" ] && [ -d "$NPM_DIR/node_modules/@anthropic-ai/sdk" ] &&
        [ -d "$NPM_DIR/node_modules/ollama" ]
}
