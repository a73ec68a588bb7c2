"""http_post.py - what the inline Python clients of the server tests
(chat_harmony.sh, serve_tools.sh) share: a JSON POST to the server under
test, and the "ok   NAME" / "FAIL NAME: why" lines that serve.sh's
serve_relay counts. Standard library only."""
import json
import urllib.error
import urllib.request


def poster(port):
    """post(path, body) for the server on 127.0.0.1:port: (status, text),
    an HTTP error's status and body included."""
    def post(path, body):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
    return post


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:500]),
          flush=True)
