#!/usr/bin/env bash
# `sluice serve` tool calls (issue 13) on a generated qwen3moe model with the
# qwen3 template: OpenAI "tools" and "tool_choice", assistant "tool_calls"
# and "tool" messages rendered in Qwen3's form (checked through
# /apply-template against strings written from Qwen3's template), requests
# with tools answered (plain and streamed), malformed tools and efforts
# refused with 400; Anthropic tools / tool_use / tool_result blocks; and the
# official `openai` and `@anthropic-ai/sdk` clients (build/npm, as serve.sh
# installs them) sending tools and a tool round trip. The model's
# random weights do not choose to call tools; parsing calls out of an answer
# is tested in tests/unit/test_chat_tools.c and test_chat_harmony.c.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup serve-tools
M=$work/m.gguf
serve_model "$M" --arch qwen3moe --preset tiny-k --layers 2 --seed 5
if ! serve_start srv -m "$M" -c 1024 --chat-template qwen3 -t 2; then
    finish
    exit 1
fi
port=$serve_port
pid=$serve_pid

serve_relay < <(timeout 300 python3 - "$port" <<'PY' 2>&1
import json, sys, urllib.request
sys.path.insert(0, "tests/cli/lib")
from http_post import check, poster
port = int(sys.argv[1])
post = poster(port)

tools = [{"type": "function", "function": {"name": "get_weather", "parameters":
          {"type": "object", "properties": {"city": {"type": "string"}}}}}]
msgs = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"}]
st, body = post("/apply-template", {"messages": msgs, "tools": tools})
p = json.loads(body).get("prompt", "") if st == 200 else ""
want_head = ("<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to "
             "assist with the user query.\n\nYou are provided with function signatures within "
             "<tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": "
             "{\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", \"properties\": "
             "{\"city\": {\"type\": \"string\"}}}}}\n</tools>\n\n")
want_tail = ("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
             "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n"
             "<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n"
             "<|im_start|>assistant\n")
check("tools render in the system block, Qwen3's form", p.startswith(want_head), p[:300])
check("a tool call and its result render as <tool_call> and <tool_response>",
      p.endswith(want_tail), p[-300:])
st, body = post("/apply-template", {"messages": msgs[1:2], "tools": tools, "tool_choice": "none"})
check("tool_choice none leaves the tools out", st == 200 and "<tools>" not in body, body)

st, body = post("/v1/chat/completions", {"messages": msgs, "tools": tools, "max_tokens": 6,
                                         "temperature": 0})
ok = st == 200
try:
    ch = json.loads(body)["choices"][0]
    ok = ok and ch["message"]["role"] == "assistant" and \
        ch["finish_reason"] in ("stop", "length", "tool_calls")
except Exception:
    ok = False
check("a request with tools and a tool round trip is answered", ok, body)

req = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port,
    data=json.dumps({"messages": msgs[1:2], "tools": tools, "max_tokens": 4, "stream": True,
                     "temperature": 0}).encode(), method="POST",
    headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=120) as r:
    events = [l[6:] for l in r.read().decode().split("\n") if l.startswith("data: ")]
check("a streamed request with tools ends with [DONE]", events and events[-1] == "[DONE]", events)

for name, bad in [("tools not an array", {"tools": "x"}),
                  ("a tool of another type", {"tools": [{"type": "retrieval"}]}),
                  ("a tool without a name", {"tools": [{"type": "function", "function": {}}]}),
                  ("parameters not an object", {"tools": [{"type": "function", "function":
                                                {"name": "f", "parameters": 3}}]}),
                  ("an unknown tool_choice", {"tools": tools, "tool_choice": "maybe"}),
                  ("an unknown reasoning effort", {"reasoning_effort": "extreme"})]:
    b = {"messages": msgs[1:2], "max_tokens": 2}
    b.update(bad)
    st, body = post("/v1/chat/completions", b)
    check("400 for " + name, st == 400 and "error" in json.loads(body), (st, body))
bad_call = [msgs[1], {"role": "assistant", "content": "", "tool_calls": [{"id": "x",
            "function": {"name": "f"}}]}]
st, body = post("/v1/chat/completions", {"messages": bad_call, "max_tokens": 2})
check("400 for a tool call without arguments", st == 400, (st, body))

# Anthropic: tools, tool_use and tool_result blocks become the same prompt
ant = {"max_tokens": 4, "temperature": 0, "system": "Be brief.",
       "tools": [{"name": "get_weather", "input_schema": {"type": "object", "properties":
                  {"city": {"type": "string"}}}}],
       "messages": [{"role": "user", "content": "Weather in Paris?"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "c1",
                     "name": "get_weather", "input": {"city": "Paris"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                     "content": "{\"temp\": 21}"}]}]}
st, body = post("/v1/messages", ant)
ok = st == 200
try:
    js = json.loads(body)
    ok = ok and js["type"] == "message" and js["stop_reason"] in ("end_turn", "max_tokens", "tool_use")
except Exception:
    ok = False
check("messages: tools and a tool_use / tool_result round trip are answered", ok, body)
st, body = post("/v1/messages/count_tokens", ant)
st2, body2 = post("/v1/messages/count_tokens", dict(ant, tools=[]))
check("messages: the tools count as prompt tokens", st == 200 and st2 == 200 and
      json.loads(body)["input_tokens"] > json.loads(body2)["input_tokens"] + 40, (body, body2))
for name, extra in [("a tool_use without input", {"messages": [{"role": "user", "content": "x"},
                     {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f"}]}]}),
                    ("an unknown tool_choice", {"tool_choice": {"type": "sometimes"}}),
                    ("tools not an array", {"tools": {"name": "f"}})]:
    st, body = post("/v1/messages", dict(ant, **extra))
    check("messages: 400 for " + name, st == 400 and json.loads(body)["type"] == "error", (st, body))
PY
)

if serve_sdks; then
    cat >"$work/sdk.cjs" <<'JS'
const OpenAI = require("openai");
const port = process.argv[2];
const c = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "none" });
const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object",
    properties: { city: { type: "string" } } } } }];
(async () => {
    try {
        const r = await c.chat.completions.create({ model: "m", max_tokens: 4, temperature: 0, tools,
            messages: [{ role: "user", content: "Weather in Paris?" },
                { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function",
                    function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
                { role: "tool", tool_call_id: "c1", content: '{"temp": 21}' }] });
        const m = r.choices[0].message;
        console.log(m.role === "assistant" ? "ok   openai client: tools and a tool round trip"
                                           : "FAIL openai client: " + JSON.stringify(r));
        const s = await c.chat.completions.create({ model: "m", max_tokens: 4, temperature: 0,
            tools, stream: true, messages: [{ role: "user", content: "Hi" }] });
        let n = 0;
        for await (const ch of s) n++;
        console.log(n > 0 ? "ok   openai client: a stream with tools" : "FAIL openai client: empty stream");
        const Anthropic = require("@anthropic-ai/sdk");
        const an = new Anthropic({ baseURL: `http://127.0.0.1:${port}`, apiKey: "none" });
        const am = await an.messages.create({ model: "m", max_tokens: 4, temperature: 0,
            tools: [{ name: "get_weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }],
            messages: [{ role: "user", content: "Weather in Paris?" },
                { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "get_weather", input: { city: "Paris" } }] },
                { role: "user", content: [{ type: "tool_result", tool_use_id: "c1", content: "21 C" }] }] });
        console.log(am.type === "message" ? "ok   anthropic client: tools and a tool round trip"
                                          : "FAIL anthropic client: " + JSON.stringify(am));
        const f = await c.chat.completions.create({ model: "m", max_tokens: 4, temperature: 0, tools,
            tool_choice: { type: "function", function: { name: "get_weather" } },
            messages: [{ role: "user", content: "Weather in Paris?" }] });
        console.log(f.choices[0].message.role === "assistant"
            ? "ok   openai client: a forced tool_choice (a named function) is answered"
            : "FAIL openai client: forced tool_choice: " + JSON.stringify(f));
        const fa = await an.messages.create({ model: "m", max_tokens: 4, temperature: 0,
            tools: [{ name: "get_weather", input_schema: { type: "object" } }],
            tool_choice: { type: "any" }, messages: [{ role: "user", content: "Weather?" }] });
        console.log(fa.type === "message" ? "ok   anthropic client: tool_choice any is answered"
                                          : "FAIL anthropic client: tool_choice any: " + JSON.stringify(fa));
    } catch (e) {
        console.log("FAIL openai client: " + e);
    }
})();
JS
    serve_relay < <(NODE_PATH="$NPM_DIR/node_modules" timeout 120 node "$work/sdk.cjs" "$port" 2>&1)
else
    echo "note: the openai npm package is not in $NPM_DIR (serve.sh installs it): client check skipped"
fi
serve_stop "$pid"
finish
