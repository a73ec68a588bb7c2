#!/usr/bin/env bash
# Scale-out behind nginx (issue 32, docs/server.md's recipe): two
# `sluice serve` nodes and an nginx on loopback (run as this user, its pid,
# logs and temp files in the test's folder) that pins a conversation to a
# node by its X-Session-Id header (`hash ... consistent`), with passive
# health checks and unbuffered streams. Shows (tests/cli/lib/serve_scaleout.py,
# and serve_scaleout_sdk.cjs for the openai client's defaultHeaders):
# both nodes serve; a conversation's second request reuses its prefix on its
# node (cached_tokens); a stream in flight when its node dies breaks off
# without [DONE]; after that the dead node's conversation and the other one
# are answered by the surviving node (200, not 502), and reuse the prefix
# there from the second request on. Skipped, with a note, without nginx.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
NGINX=${NGINX:-$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; })}
if [ -z "$NGINX" ]; then
    echo "note: nginx not found (Debian's nginx package; scripts/install-deps.sh installs it): the scale-out test is skipped"
    finish
    exit 0
fi
serve_setup serve-scaleout
nginx_pid=
stop_nginx() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    nginx_pid=
}
trap 'stop_nginx; serve_stop_all; rm -rf "$work"' EXIT

M=$work/m.gguf
serve_model "$M" --arch qwen3moe --preset tiny --seed 5
common=(-m "$M" -c 2048 -np 1 -t 1 --max-connections-per-ip 0)
serve_start node1 "${common[@]}" || { finish; exit 1; }
pid1=$serve_pid port1=$serve_port
serve_start node2 "${common[@]}" || { finish; exit 1; }
pid2=$serve_pid port2=$serve_port

# a free loopback port for nginx (it needs a number in its config)
front=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx"
# the recipe of docs/server.md, with the node addresses, port and paths of this run
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log info;
events { worker_connections 256; }
http {
    access_log $work/nginx/access.log;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;

    upstream sluice {
        hash \$http_x_session_id consistent;
        server 127.0.0.1:$port1 max_fails=1 fail_timeout=30s;
        server 127.0.0.1:$port2 max_fails=1 fail_timeout=30s;
        keepalive 16;
        keepalive_timeout 20s;
    }
    server {
        listen 127.0.0.1:$front;
        client_max_body_size 8m;
        location / {
            proxy_pass http://sluice;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host localhost;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 600s;
            proxy_send_timeout 600s;
            proxy_connect_timeout 2s;
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 2;
            add_header X-Sluice-Node \$upstream_addr always;
        }
    }
}
EOF
"$NGINX" -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' >"$work/nginx/stdout" 2>&1 &
nginx_pid=$!
up=false
for _ in $(seq 1 100); do
    if python3 -c "import http.client,sys; c = http.client.HTTPConnection('127.0.0.1', $front, timeout=2); c.request('GET', '/health'); sys.exit(c.getresponse().status != 200)" 2>/dev/null; then
        up=true
        break
    fi
    kill -0 "$nginx_pid" 2>/dev/null || break
    sleep 0.1
done
check "nginx runs in front of the two nodes" $up
if ! $up; then
    echo "nginx: $(tail -c 600 "$work/nginx/stdout" "$work/nginx/error.log" 2>/dev/null)"
    finish
    exit 1
fi

# the official openai client's defaultHeaders (skipped, with a note, without node/npm)
finished_want=1
if serve_sdks; then
    NODE_PATH="$NPM_DIR/node_modules" timeout 120 node tests/cli/lib/serve_scaleout_sdk.cjs "$front" \
        >"$work/sdk.out" 2>&1
    rc=$?
    serve_relay <"$work/sdk.out"
    [ $rc -eq 0 ] || bad "serve_scaleout_sdk.cjs exited $rc: $(tail -c 600 "$work/sdk.out")"
    finished_want=2
fi

# (the shell's own stderr is muted meanwhile: the node the client kills would
# get a "Killed" notice there)
exec 3>&2 2>/dev/null
timeout 120 python3 tests/cli/lib/serve_scaleout.py "$front" "$port1" "$port2" "$pid1" "$pid2" \
    >"$work/py.out" 2>&1
rc=$?
for p in $pid1 $pid2; do
    kill -0 "$p" 2>/dev/null || wait "$p"
done
exec 2>&3 3>&-
serve_relay <"$work/py.out"
[ $rc -eq 0 ] || bad "serve_scaleout.py exited $rc: $(tail -c 600 "$work/py.out")"
[ "$serve_finished" = "$finished_want" ] || bad "a client did not reach its end"
kill -0 "$nginx_pid" 2>/dev/null
check "nginx is still running" [ $? -eq 0 ]
stop_nginx
finish
