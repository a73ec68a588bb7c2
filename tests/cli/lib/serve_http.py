"""serve_http.py - what the standard-library clients of `sluice serve`
(serve_client.py, serve_compat.py) share: the "ok NAME" / "FAIL NAME: why"
lines the shell tests count, and one plain HTTP request to the server on the
loopback."""
import http.client
import json


def check(name, cond, why=""):
    """Prints "ok   NAME", or "FAIL NAME: why" (why cut to 700 chars); returns cond."""
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(why)[:700]), flush=True)
    return cond


def request(port, method, path, body=None, headers=None, raw=None, timeout=120):
    """Sends METHOD path to 127.0.0.1:port with raw (bytes) or body (as JSON,
    Content-Type application/json unless headers name one) and headers; returns
    (status, the reply as JSON or None, its bytes, {lower-case header: value})."""
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=timeout)
    h = dict(headers or {})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    if data is not None:
        h.setdefault("Content-Type", "application/json")
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    try:
        js = json.loads(out)
    except ValueError:
        js = None
    return r.status, js, out, hdrs
