#!/usr/bin/env python3
"""fuzz_http_raw.py - throws mutated raw HTTP requests at a running
`sluice serve` on the loopback, for SECONDS (tests/cli/fuzz_http_brief.sh,
`make fuzz-http`).

Usage: fuzz_http_raw.py PORT SECONDS SEED
Each round takes a valid request (the endpoints, JSON bodies, chunked
bodies, keep-alive pairs) and mutates it: flipped, inserted, deleted and
repeated bytes, lines doubled or dropped, header values replaced with
hostile ones (huge or negative lengths, two lengths, bad chunk sizes, odd
Host forms), bodies cut or padded; then it is sent in one piece or in
slices, and the connection may be closed early, half-closed or left to
the server's timeout. Every reply that comes must start with an HTTP/1.x
status line; the server must stay up and answer /health within 2 seconds
at each checkpoint. 500s are counted and fail the run (a request may be
refused, never break the server). Prints "ok NAME" / "FAIL NAME: why"
lines, the status counts, and "client-finished"."""
import json
import random
import socket
import sys
import time

from serve_http import check

port, seconds, seed = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)

BODIES = [
    {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2},
    {"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": [{"type": "text", "text": "y"}]}],
     "max_tokens": 2, "stream": True},
    {"prompt": "Hello", "max_tokens": 2, "temperature": 0, "stop": ["\n"]},
    {"content": "Hello world", "with_pieces": True},
    {"tokens": [1, 2, 3]},
    {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "system": "s"},
    {"prompt": "Hi", "n_predict": 2, "stream": True},
]
PATHS = ["/v1/chat/completions", "/v1/chat/completions", "/v1/completions", "/tokenize",
         "/detokenize", "/v1/messages", "/completion", "/v1/messages/count_tokens",
         "/apply-template", "/api/chat", "/api/generate", "/api/show"]
GETS = ["/health", "/v1/models", "/props", "/slots", "/metrics", "/v1/models/x", "/api/tags",
        "/api/version", "/api/ps"]
HOSTILE = [b"-1", b"99999999999999999999", b"0x10", b" 5", b"5 5", b"", b"\xff\xfe",
           b"127.0.0.1:80@evil.com", b"[::1", b"localhost:99999", b"%00", b"a" * 3000,
           b"chunked", b"gzip, chunked", b"chunked, identity", b"100-continue",
           b"application/json; charset=utf-16", b"Bearer \x00"]


def base_request():
    if rng.random() < 0.25:
        path = rng.choice(GETS)
        return ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: fuzz\r\n\r\n" % (path, port)).encode()
    body = json.dumps(rng.choice(BODIES)).encode()
    path = rng.choice(PATHS)
    head = "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % (path, port)
    if rng.random() < 0.3:
        cut = rng.randint(0, len(body))
        chunks = b""
        for part in (body[:cut], body[cut:]):
            if part:
                chunks += b"%x\r\n%s\r\n" % (len(part), part)
        return head.encode() + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    return head.encode() + b"Content-Length: %d\r\n\r\n" % len(body) + body


def mutate(req):
    data = bytearray(req)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        if op == 0 and data:  # flip a byte
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256)
        elif op == 1:  # insert bytes
            i = rng.randrange(len(data) + 1)
            data[i:i] = rng.choice([b"\r\n", b"\n", b"\r", b" ", b":", b"\x00", b"\x7f",
                                    bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))])
        elif op == 2 and data:  # delete a span
            i = rng.randrange(len(data))
            del data[i:i + rng.randint(1, 16)]
        elif op == 3:  # double or drop a header line
            lines = bytes(data).split(b"\r\n")
            head_end = lines.index(b"") if b"" in lines else len(lines)
            if head_end > 1:
                k = rng.randrange(1, head_end)
                if rng.random() < 0.5:
                    lines.insert(k, lines[k])
                else:
                    del lines[k]
                data = bytearray(b"\r\n".join(lines))
        elif op == 4:  # a hostile header value
            name = rng.choice([b"Content-Length", b"Transfer-Encoding", b"Host", b"Content-Type",
                               b"Expect", b"Authorization", b"Connection", b"X-" + b"y" * 40])
            i = bytes(data).find(b"\r\n") + 2
            data[i:i] = name + b": " + rng.choice(HOSTILE) + b"\r\n"
        elif op == 5:  # cut the request short
            data = data[:rng.randrange(len(data) + 1)]
        elif op == 6:  # pad the body
            data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        elif op == 7:  # a second request on the same connection
            data += base_request()
        elif op == 8 and data:  # repeat a span
            i = rng.randrange(len(data))
            data[i:i] = data[i:i + rng.randint(1, 32)] * rng.randint(2, 50)
    return bytes(data)


statuses = {}
bad_lines = []


def complete(reply):
    """Whether reply holds one whole response (by Content-Length, or the
    last chunk of a chunked one)."""
    head, sep, rest = reply.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length" and v.strip().isdigit():
            return len(rest) >= int(v)
    return rest.endswith(b"\r\n0\r\n\r\n") or rest.startswith(b"0\r\n\r\n")


def send(data):
    s = socket.create_connection(("127.0.0.1", port), timeout=2.0)
    try:
        if rng.random() < 0.3:  # in slices
            i = 0
            while i < len(data):
                n = rng.randint(1, 64)
                s.sendall(data[i:i + n])
                i += n
                if rng.random() < 0.05:
                    time.sleep(0.01)
        else:
            s.sendall(data)
        how = rng.random()
        if how < 0.1:
            return  # close at once
        if how < 0.2:
            s.shutdown(socket.SHUT_WR)
        out = b""
        t0 = time.monotonic()
        s.settimeout(0.5)
        while time.monotonic() - t0 < 1.5 and len(out) < 1 << 20 and not complete(out):
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            out += b
        if out:
            if not out.startswith(b"HTTP/1.") or len(out) < 12 or not out[9:12].isdigit():
                bad_lines.append(out[:80])
            else:
                st = int(out[9:12])
                statuses[st] = statuses.get(st, 0) + 1
    except OSError:
        pass
    finally:
        s.close()


def health():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2.0)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        out = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            out += b
        s.close()
        return out.startswith(b"HTTP/1.1 200")
    except OSError:
        return False


t_end = time.monotonic() + seconds
n = 0
alive = True
while time.monotonic() < t_end:
    send(mutate(base_request()) if rng.random() < 0.9 else base_request())
    n += 1
    if n % 50 == 0 and not health():
        alive = False
        break
alive = alive and health()
print("   %d mutated requests (seed %d); statuses %s" % (n, seed, dict(sorted(statuses.items()))))
check("the server answers /health after %d mutated requests" % n, alive)
check("every reply starts with an HTTP/1.x status line", not bad_lines, bad_lines[:3])
check("no 500 among the replies", 500 not in statuses, statuses)
print("client-finished")
