#!/usr/bin/env bash
# The harmony chat format (gpt-oss) end to end on a generated model whose
# chat template is swapped for a harmony one (the weights are random, so the
# answers are not harmony messages; the format's rendering and parsing are
# tested against the specification in tests/unit/test_chat_harmony.c):
# `run` and `chat` take --reasoning and --show-reasoning and refuse an
# unknown effort; the server renders a request with reasoning_effort as the
# spec's system message (checked through /apply-template) and answers it.
set -u
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/serve.sh"
serve_setup harmony
"$SLUICE" mkmodel --arch qwen3moe --preset tiny-k --layers 2 --seed 3 -q -o "$work/m.gguf" || bad "mkmodel"
printf '%s' "{{- '<|start|>system<|message|>' }}{# harmony: <|channel|>final #}" >"$work/h.jinja"
python3 tests/cli/lib/gguf_set_template.py "$work/m.gguf" "$work/h.gguf" "$work/h.jinja" ||
    bad "writing a copy of the model with a harmony template"
H=$work/h.gguf

if "$SLUICE" run -m "$H" -c 1024 -p "Hello" -n 6 --temp 0 --reasoning high >"$work/run.out" 2>"$work/run.err"; then
    ok "run on a harmony template with --reasoning high"
else
    bad "run --reasoning high: $(tail -c 300 "$work/run.err")"
fi
if "$SLUICE" run -m "$H" -c 1024 -p "Hello" -n 6 --temp 0 --show-reasoning >/dev/null 2>"$work/run2.err"; then
    ok "run --show-reasoning"
else
    bad "run --show-reasoning: $(tail -c 300 "$work/run2.err")"
fi
if "$SLUICE" run -m "$H" -p "Hello" -n 2 --reasoning extreme >/dev/null 2>"$work/bad.err"; then
    bad "run accepted --reasoning extreme"
elif grep -q "reasoning effort 'extreme' is not low, medium or high" "$work/bad.err"; then
    ok "run refuses an unknown reasoning effort, naming it"
else
    bad "run --reasoning extreme said: $(head -c 300 "$work/bad.err")"
fi
if printf 'Hi\nAgain\n' | "$SLUICE" chat -m "$H" -c 1024 -n 4 --temp 0 --reasoning low >"$work/chat.out" 2>"$work/chat.err"; then
    ok "chat: two turns on a harmony template with --reasoning low"
else
    bad "chat --reasoning low: $(tail -c 300 "$work/chat.err")"
fi

if ! serve_start srv -m "$H" -c 1024 -t 2 --reasoning low; then
    finish
    exit 1
fi
port=$serve_port
pid=$serve_pid
serve_relay < <(timeout 300 python3 - "$port" <<'PY' 2>&1
import datetime, json, sys
sys.path.insert(0, "tests/cli/lib")
from http_post import check, poster
post = poster(int(sys.argv[1]))
today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
def system(effort):
    return ("<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
            "Knowledge cutoff: 2024-06\nCurrent date: " + today + "\n\nReasoning: " + effort +
            "\n\n# Valid channels: analysis, commentary, final. Channel must be included for "
            "every message.<|end|>")
msgs = [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 2?"}]
st, body = post("/apply-template", {"messages": msgs, "reasoning_effort": "high"})
want = (system("high") + "<|start|>developer<|message|># Instructions\n\nBe brief.<|end|>"
        "<|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant")
check("reasoning_effort high renders the spec's system and developer messages",
      st == 200 and json.loads(body)["prompt"] == want, body)
st, body = post("/apply-template", {"messages": msgs[1:]})
check("the server's --reasoning low is the default effort",
      st == 200 and json.loads(body)["prompt"].startswith(system("low")), body)
st, body = post("/v1/chat/completions", {"messages": msgs, "max_tokens": 4, "temperature": 0,
                                         "reasoning_effort": "medium"})
check("a harmony chat request is answered", st == 200 and
      json.loads(body)["choices"][0]["message"]["role"] == "assistant", body)
st, body = post("/v1/chat/completions", {"messages": msgs, "max_tokens": 2, "reasoning_effort": 3})
check("400 for a reasoning_effort that is not a string", st == 400, (st, body))
PY
)
serve_stop "$pid"
finish
