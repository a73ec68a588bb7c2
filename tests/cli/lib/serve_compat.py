#!/usr/bin/env python3
"""serve_compat.py - what real front-ends send, against a running `sluice serve`,
for tests/cli/serve_compat.sh (docs/server.md's compatibility table, issue 13).

Usage: serve_compat.py PORT N_CTX ORIGIN
  a server started with -c N_CTX -n 8 --max-body 65536 --cors ORIGIN and the
  qwen3 chat template (tools rendered). Every check asserts the status code and
  a field of the answer. Prints "ok NAME" / "FAIL NAME: why" lines and
  "client-finished" at its end; standard library only."""
import http.client
import json
import sys

import serve_http
from serve_http import check

port, n_ctx, origin = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


def request(method, path, body=None, headers=None, raw=None):
    """serve_http.request to this server: (status, json or None, bytes, headers)."""
    return serve_http.request(port, method, path, body, headers, raw)


def post(path, body, headers=None):
    st, js, out, _ = request("POST", path, body, headers)
    return st, js if js is not None else out


def events(path, body, headers=None):
    """POSTs a streaming request; returns (status, [(event name or None, json or '[DONE]')])."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", path, body=json.dumps(body).encode(), headers=h)
    r = c.getresponse()
    raw = r.read().decode("utf-8")
    c.close()
    if r.status != 200:
        return r.status, raw
    out = []
    for ev in raw.split("\n\n"):
        if not ev:
            continue
        name, data = None, None
        for line in ev.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        out.append((name, data if data == "[DONE]" else json.loads(data)))
    return 200, out


def oai_error(js, *words):
    """An OpenAI-shaped error whose message holds every word."""
    try:
        m = js["error"]["message"]
        return isinstance(m, str) and all(w in m for w in words) and "type" in js["error"]
    except (KeyError, TypeError):
        return False


def ant_error(js, *words):
    """An Anthropic-shaped error whose message holds every word."""
    try:
        m = js["error"]["message"]
        return js["type"] == "error" and isinstance(js["error"]["type"], str) and all(w in m for w in words)
    except (KeyError, TypeError):
        return False


USER = [{"role": "user", "content": "Say hello."}]
BASE = {"model": "m.gguf", "messages": USER, "max_tokens": 4, "temperature": 0}


def chat(extra, name_ok, name=None):
    body = dict(BASE)
    body.update(extra)
    st, js = post("/v1/chat/completions", body)
    ok = st == 200 and isinstance(js, dict) and js["choices"][0]["message"]["role"] == "assistant"
    check(name_ok, ok, (st, js))
    return js if ok else None


def chat_400(extra, name, *words):
    body = dict(BASE)
    body.update(extra)
    st, js = post("/v1/chat/completions", body)
    check(name, st == 400 and oai_error(js, *words), (st, js))


# ---- OpenAI chat: fields clients send ------------------------------------------------
ref = chat({}, "chat: a plain request (reference answer)")
ref_text = ref["choices"][0]["message"]["content"] if ref else None
js = chat({"user": "u-42", "metadata": {"k": "v"}, "store": False, "service_tier": "auto",
           "parallel_tool_calls": False, "logit_bias": {}, "n": 1, "seed": -1,
           "response_format": {"type": "text"}, "frequency_penalty": 0, "presence_penalty": 0,
           "some_future_field": {"x": [1, 2]}, "modalities": ["text"], "max_completion_tokens": None},
          "chat: user, metadata, store, parallel_tool_calls, empty logit_bias, n 1, seed -1, "
          "response_format text, modalities [text] and unknown fields are accepted")
check("chat: ... and they leave the greedy answer unchanged",
      js is not None and js["choices"][0]["message"]["content"] == ref_text, (js, ref_text))
js = chat({"top_k": -1}, "chat: top_k -1 (off, as vLLM clients send it) is accepted")
js = chat({"max_tokens": None}, "chat: max_tokens null is accepted")
check("chat: max_tokens null falls back to the server's -n (8)", js is not None and js["usage"]["completion_tokens"] <= 8, js)
js = chat({"messages": [{"role": "system", "content": "Be brief.", "name": "sys"},
                        {"role": "user", "content": "Hi.", "name": "alice"}]},
          "chat: 'name' on messages is accepted")
js = chat({"messages": [{"role": "user", "content": [{"type": "text", "text": "Say "},
                                                     {"type": "text", "text": "hello."}]}]},
          "chat: content as an array of text parts is accepted")
check("chat: text parts answer as the joined string", js is not None and
      js["choices"][0]["message"]["content"] == ref_text, js)
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city", "strict": True,
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
js = chat({"tools": tools, "tool_choice": "none"}, "chat: tool_choice none is accepted")
check("chat: tool_choice none answers text, no tool_calls", js is not None and
      isinstance(js["choices"][0]["message"]["content"], str) and "tool_calls" not in js["choices"][0]["message"], js)
js = chat({"tools": tools, "tool_choice": "auto", "parallel_tool_calls": True,
           "messages": [{"role": "user", "content": "Weather in Paris?"},
                        {"role": "assistant", "content": None,
                         "tool_calls": [{"id": "call_1", "type": "function",
                                         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}]},
          "chat: an assistant turn with tool_calls and content null, then the tool's result")
check("chat: that answer has a finish_reason", js is not None and js["choices"][0]["finish_reason"] in
      ("stop", "length", "tool_calls"), js)
st, a = post("/apply-template", {"messages": [{"role": "user", "content": "Weather?"},
                                              {"role": "assistant", "content": None,
                                               "tool_calls": [{"id": "c1", "type": "function",
                                                               "function": {"name": "get_weather",
                                                                            "arguments": "{\"city\": \"Oslo\"}"}}]},
                                              {"role": "tool", "tool_call_id": "c1", "content": "rain"}],
                                 "tools": tools})
check("chat: the earlier call and its result are in the prompt", st == 200 and "Oslo" in a["prompt"] and
      "rain" in a["prompt"], (st, a))
for eff in ("minimal", "low", "high", "none", "xhigh"):
    chat({"reasoning_effort": eff}, "chat: reasoning_effort %s is accepted" % eff)
chat_400({"reasoning_effort": "extreme"}, "chat: reasoning_effort 'extreme' is a 400 naming the levels",
         "reasoning_effort", "minimal")
js = chat({"stop": "\n\n\n\n"}, "chat: stop as a string")
js = chat({"stop": ["\n\n\n\n", "###"]}, "chat: stop as an array")
js = chat({"stop": ["zz%02d" % i for i in range(16)]}, "chat: stop with 16 texts (SillyTavern sends many)")
chat_400({"stop": ["zz%02d" % i for i in range(17)]}, "chat: stop with 17 texts is a 400", "at most 16")
chat_400({"stop": [""]}, "chat: an empty stop text is a 400", "stop")

# refused with a clear 400 instead of silently ignored
chat_400({"n": 2}, "chat: n 2 is a 400 (one choice per request)", "'n' is 2", "one choice")
chat_400({"response_format": {"type": "json_object"}}, "chat: response_format json_object is a 400",
         "response_format", "json_object")
chat_400({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}},
         "chat: response_format json_schema is a 400", "json_schema")
chat_400({"logit_bias": {"42": -100}}, "chat: a non-empty logit_bias is a 400", "logit_bias")
chat_400({"functions": [{"name": "f", "parameters": {}}]}, "chat: the deprecated 'functions' is a 400 pointing "
         "to tools", "tools")
chat_400({"modalities": ["text", "audio"]}, "chat: modalities with audio is a 400", "modalities")
chat_400({"messages": [{"role": "user", "content": [
    {"type": "text", "text": "What is this?"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]},
    "chat: an image_url part is a 400 saying the model reads text only", "image_url", "text only")
chat_400({"max_tokens": n_ctx + 1}, "chat: max_tokens beyond the context is a 400 with the numbers",
         str(n_ctx + 1), str(n_ctx))
chat_400({"max_completion_tokens": 10 ** 6}, "chat: max_completion_tokens beyond the context is a 400",
         "1000000", str(n_ctx))
st, js = post("/v1/chat/completions", dict(BASE, messages=[{"role": "user", "content": "word " * (2 * n_ctx)}]))
check("chat: a prompt longer than the context: 400 context_length_exceeded in OpenAI's wording", st == 400 and
      oai_error(js, "maximum context length is %d tokens" % n_ctx) and js["error"]["code"] == "context_length_exceeded",
      (st, js))
st, js = post("/v1/messages", {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "word " * (2 * n_ctx)}]})
check("messages: a prompt longer than the context: 400 in Anthropic's shape", st == 400 and
      ant_error(js, "maximum context length"), (st, js))
js = chat({"max_tokens": -1, "ignore_eos": True}, "chat: max_tokens -1 (no limit) is accepted")
check("chat: max_tokens -1 generates until the context is full", js is not None and
      js["usage"]["prompt_tokens"] + js["usage"]["completion_tokens"] == n_ctx + 1 and
      js["choices"][0]["finish_reason"] == "length", js and js["usage"])
js = chat({"max_tokens": n_ctx}, "chat: max_tokens equal to the context is answered")
# the last token is sampled from a full context and never stored: prompt + answer <= n_ctx + 1
check("chat: ... and stops with the context (finish_reason length or stop)", js is not None and
      js["usage"]["prompt_tokens"] + js["usage"]["completion_tokens"] <= n_ctx + 1, js and (js["usage"], js["choices"][0]["finish_reason"]))

# streaming as Cline / Roo / aider (litellm) send it
st, evs = events("/v1/chat/completions", dict(BASE, stream=True, stream_options={"include_usage": True},
                                               messages=[{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}]))
check("stream with stream_options.include_usage and text parts: 200, [DONE] last", st == 200 and evs[-1][1] == "[DONE]",
      (st, evs))
if st == 200:
    chunks = [e[1] for e in evs if e[1] != "[DONE]"]
    check("stream: the usage chunk has empty choices and completion_tokens",
          chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] >= 1, chunks[-1])
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    check("stream: the deltas join to the non-streamed answer", text == ref_text, (text, ref_text))
st, evs = events("/v1/chat/completions", dict(BASE, stream=True, stream_options={"include_usage": False}))
check("stream with include_usage false: no usage chunk", st == 200 and
      all("usage" not in e[1] for e in evs if e[1] != "[DONE]"), evs)

# ---- OpenAI completions ---------------------------------------------------------------
st, js = post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 6, "temperature": 0, "user": "x",
                                  "logit_bias": {}, "suffix": ""})
check("completions: user, empty logit_bias, empty suffix accepted", st == 200 and isinstance(js["choices"][0]["text"], str),
      (st, js))
cmpl_text = js["choices"][0]["text"] if st == 200 else None
for extra, name, word in (({"suffix": "end"}, "a suffix (fill-in-the-middle)", "suffix"),
                          ({"echo": True}, "echo", "echo"), ({"best_of": 3}, "best_of 3", "best_of"),
                          ({"n": 3}, "n 3", "one choice")):
    st, js = post("/v1/completions", dict({"prompt": "x", "max_tokens": 2}, **extra))
    check("completions: %s is a 400" % name, st == 400 and oai_error(js, word), (st, js))

# ---- model listing ----------------------------------------------------------------------
st, js, _, _ = request("GET", "/v1/models/m.gguf")
check("GET /v1/models/{id}: 200 with the model object", st == 200 and js["id"] == "m.gguf" and js["object"] == "model",
      (st, js))
st, js, _, _ = request("GET", "/v1/models/gpt-4o")
check("GET /v1/models/{unknown}: 404 model_not_found", st == 404 and oai_error(js, "gpt-4o") and
      js["error"]["code"] == "model_not_found", (st, js))
st, js, _, _ = request("GET", "/v1/models", headers={"Authorization": "Bearer "})
check("GET /v1/models with an empty bearer (no --api-key): 200", st == 200 and js["data"][0]["id"] == "m.gguf", (st, js))
check("GET /v1/models: Anthropic's list fields too (type, display_name, has_more)", st == 200 and
      js["data"][0]["type"] == "model" and js["data"][0]["display_name"] == "m.gguf" and js["has_more"] is False, js)
st, js = post("/v1/responses", {"model": "m", "input": "hi"})
check("POST /v1/responses: 404 listing the endpoints this server has", st == 404 and
      oai_error(js, "/v1/responses", "/v1/chat/completions"), (st, js))
st, js = post("/v1//chat/completions/", BASE)
check("a doubled or trailing slash in the path (a base URL ending in '/') still finds the endpoint",
      st == 200 and js["choices"][0]["message"]["content"] == ref_text, (st, js))
st, js, body, _ = request("HEAD", "/health")
check("HEAD /health: 200 without a body", st == 200 and body == b"", (st, body))
st, js, body, _ = request("HEAD", "/v1/models")
check("HEAD /v1/models: 200 without a body", st == 200 and body == b"", (st, body))
st, js, _, _ = request("DELETE", "/v1/models")
check("DELETE /v1/models: 405 naming the methods", st == 405 and oai_error(js, "GET"), (st, js))

# ---- llama-server's /props and /completion ----------------------------------------------
st, js, _, _ = request("GET", "/props")
check("GET /props: the slots' context and count", st == 200 and js["default_generation_settings"]["n_ctx"] == n_ctx
      and js["total_slots"] == 1 and js["modalities"]["vision"] is False, (st, js))
st, js = post("/completion", {"prompt": "Once upon a time", "n_predict": 6, "temperature": 0, "cache_prompt": True,
                              "seed": -1, "samplers": ["top_k", "temperature"], "stop": []})
check("/completion: content, stop true, the counts", st == 200 and js["stop"] is True and
      js["tokens_predicted"] <= 6 and js["tokens_evaluated"] > 0 and js["stop_type"] in ("eos", "limit", "word"), (st, js))
check("/completion: the same text as /v1/completions", st == 200 and js["content"] == cmpl_text, (js, cmpl_text))
lc_text = js["content"] if st == 200 else ""
st, evs = events("/completion", {"prompt": "Once upon a time", "n_predict": 6, "temperature": 0, "stream": True})
check("/completion stream: data events, stop false until the last", st == 200 and evs[-1][1]["stop"] is True and
      all(e[1]["stop"] is False for e in evs[:-1]) and all(e[1] != "[DONE]" for e in evs), (st, evs))
if st == 200:
    check("/completion stream: the pieces join to the whole text", "".join(e[1]["content"] for e in evs) == lc_text,
          (evs, lc_text))
    check("/completion stream: the last event has the counts", evs[-1][1]["tokens_predicted"] <= 6, evs[-1])
if lc_text.strip():
    word = lc_text.strip()[:3]
    st, js = post("/completion", {"prompt": "Once upon a time", "n_predict": 6, "temperature": 0, "stop": [word]})
    check("/completion stop: stop_type word and the stopping_word", st == 200 and js["stop_type"] == "word" and
          js["stopping_word"] == word and word not in js["content"], (st, js, word))
st, js = post("/completion", {"prompt": "x", "grammar": "root ::= \"a\""})
check("/completion: a grammar is a 400", st == 400 and oai_error(js, "grammar"), (st, js))
st, js = post("/completion", {"prompt": "x", "n_probs": 5})
check("/completion: n_probs is a 400 pointing to /v1/completions", st == 400 and oai_error(js, "logprobs"), (st, js))
st, js = post("/completion", {"prompt": [1, 2, 3]})
check("/completion: a token-array prompt is a 400", st == 400 and oai_error(js, "prompt"), (st, js))

# ---- CORS preflight (server started with --cors ORIGIN) ---------------------------------------
st, _, _, h = request("OPTIONS", "/v1/messages", headers={
    "Origin": origin, "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "content-type,x-api-key,anthropic-version,anthropic-beta,x-stainless-os"})
check("OPTIONS preflight: 204, the origin, the asked headers allowed", st == 204 and
      h.get("access-control-allow-origin") == origin and "x-stainless-os" in h.get("access-control-allow-headers", "")
      and "POST" in h.get("access-control-allow-methods", ""), (st, h))
st, _, _, h = request("OPTIONS", "/v1/chat/completions", headers={
    "Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-a, <script>"})
check("OPTIONS preflight with odd header names: not echoed, the default list", st == 204 and
      "script" not in h.get("access-control-allow-headers", "script") and
      "authorization" in h.get("access-control-allow-headers", "").lower(), (st, h))
st, js, _, h = request("GET", "/v1/models", headers={"Origin": origin})
check("GET with an Origin: Access-Control-Allow-Origin", st == 200 and h.get("access-control-allow-origin") == origin,
      (st, h))

# ---- bodies: size, type, encoding ---------------------------------------------------------------
st, js, _, _ = request("POST", "/v1/chat/completions", raw=json.dumps(dict(BASE, pad="x" * 70000)).encode())
check("a body over --max-body: 413 with the limit", st == 413 and oai_error(js, "65536"), (st, js))
st, js, _, _ = request("POST", "/v1/messages", raw=json.dumps({"pad": "x" * 70000}).encode())
check("a body over --max-body on /v1/messages: 413 in Anthropic's shape", st == 413 and ant_error(js, "65536"), (st, js))
st, js, _, _ = request("POST", "/v1/chat/completions", raw=json.dumps(BASE).encode(),
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
check("JSON sent as curl -d's form type is read (as llama-server does)", st == 200 and
      js["choices"][0]["message"]["content"] == ref_text, (st, js))
st, js, _, _ = request("POST", "/v1/chat/completions", raw=b"--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--b--",
                       headers={"Content-Type": "multipart/form-data; boundary=b"})
check("a multipart body: 415 naming the Content-Type", st == 415 and oai_error(js, "multipart/form-data"), (st, js))
st, js, _, _ = request("POST", "/v1/chat/completions",
                       raw=b'{"messages": [{"role": "user", "content": "caf\xe9"}], "max_tokens": 2}')
check("invalid UTF-8 in the body: 400 saying the JSON is not valid", st == 400 and oai_error(js, "not valid JSON"), (st, js))
st, js, _, _ = request("POST", "/v1/chat/completions", raw=b'{"messages": [{"role": "user", "content": "\\ud800"}]}')
check("a lone surrogate escape: 400", st == 400 and oai_error(js), (st, js))
st, js, _, _ = request("POST", "/v1/chat/completions",
                       raw=json.dumps(dict(BASE, messages=[{"role": "user", "content": "caf\u00e9 \u2603 \U0001F600"}]),
                                      ensure_ascii=False).encode("utf-8"))
check("valid UTF-8 (accents, emoji) in the body: 200", st == 200, (st, js))

# ---- Anthropic Messages as Claude Code sends it --------------------------------------------------
AH = {"anthropic-version": "2023-06-01", "anthropic-beta": "prompt-caching-2024-07-31", "x-api-key": "unused"}
claude = {
    "model": "claude-sonnet-4-5", "max_tokens": 4, "temperature": 0,
    "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}},
               {"type": "text", "text": "Be brief."}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello.", "cache_control": {"type": "ephemeral"}}]}],
    "metadata": {"user_id": "user_abc"},
    "tools": [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object",
              "properties": {"command": {"type": "string"}}}, "cache_control": {"type": "ephemeral"}}],
    "tool_choice": {"type": "auto"},
}
st, js = post("/v1/messages?beta=true", claude, AH)
check("messages: system blocks with cache_control, metadata, tools, tool_choice auto, ?beta=true: 200",
      st == 200 and js["type"] == "message" and js["role"] == "assistant", (st, js))
if st == 200:
    out = js["usage"]["output_tokens"]
    check("messages: stop_reason max_tokens exactly when max_tokens tokens came",
          js["stop_reason"] == ("max_tokens" if out == 4 else "end_turn") or js["stop_reason"] == "tool_use", js)
st, js = post("/v1/messages", dict(claude, thinking={"type": "enabled", "budget_tokens": 1024}), AH)
check("messages: a thinking field is accepted", st == 200 and js["type"] == "message", (st, js))
st, js = post("/v1/messages", dict(claude, messages=[
    {"role": "user", "content": "Run ls."},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "I should list.", "signature": "c2ln"},
                                      {"type": "text", "text": "Listing."},
                                      {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                                  "content": [{"type": "text", "text": "a.txt b.txt"}]}]}]), AH)
check("messages: an assistant turn with thinking, text and tool_use blocks, then the tool_result", st == 200 and
      js["type"] == "message", (st, js))
st, js = post("/v1/messages", dict(claude, max_tokens=n_ctx + 5), AH)
check("messages: max_tokens beyond the context is a 400 in Anthropic's shape with the numbers", st == 400 and
      ant_error(js, str(n_ctx + 5), str(n_ctx)), (st, js))
st, js = post("/v1/messages", dict(claude, messages=[{"role": "user", "content": [
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
    {"type": "text", "text": "What is this?"}]}]), AH)
check("messages: an image block is a 400 in Anthropic's shape saying text only", st == 400 and
      ant_error(js, "image", "text only") and js["error"]["type"] == "invalid_request_error", (st, js))
st, js = post("/v1/messages", {"model": "m", "max_tokens": 4, "messages": USER})
check("messages: no anthropic-version header is fine too", st == 200 and js["type"] == "message", (st, js))
st, js = post("/v1/messages", {"model": "m", "messages": USER})
check("messages: no max_tokens is a 400 naming it", st == 400 and ant_error(js, "max_tokens"), (st, js))
st, js = post("/v1/messages", {"model": "m", "max_tokens": 6, "messages": USER, "temperature": 0})
atext = js["content"][0]["text"] if st == 200 else ""
if atext.strip():
    word = atext.strip()[:3]
    st, js = post("/v1/messages", {"model": "m", "max_tokens": 6, "messages": USER, "temperature": 0,
                                   "stop_sequences": [word]})
    check("messages: stop_reason stop_sequence and the stop_sequence", st == 200 and js["stop_reason"] == "stop_sequence"
          and js["stop_sequence"] == word, (st, js, word))
st, evs = events("/v1/messages", dict(claude, stream=True), AH)
check("messages stream (Claude Code's request): message_start ... message_stop, stop_reason in message_delta",
      st == 200 and evs[0][0] == "message_start" and evs[-1][0] == "message_stop" and
      [e for e in evs if e[0] == "message_delta"][0][1]["delta"]["stop_reason"] in ("end_turn", "max_tokens", "tool_use"),
      (st, evs))
st, js = post("/v1/messages/count_tokens", dict(claude, thinking={"type": "enabled", "budget_tokens": 1024}), AH)
check("count_tokens with Claude Code's fields: input_tokens", st == 200 and js["input_tokens"] > 10, (st, js))

st, js = post("/v1/messages/batches", {"requests": []}, AH)
check("an unknown path under /v1/messages: 404 in Anthropic's shape", st == 404 and ant_error(js, "batches"), (st, js))

# the server keeps serving
st, js, _, _ = request("GET", "/health")
check("the server is alive after all of it", st == 200 and js == {"status": "ok"}, (st, js))
print("client-finished")
