/* test_chat_harmony.c - the harmony format (gpt-oss). Every expected string
 * is copied from OpenAI's specification (github.com/openai/harmony,
 * docs/format.md: "Function calling" and "Handling reasoning output in
 * subsequent sampling"); the spec shows messages on separate lines for
 * reading in its chat examples and back to back in its complete input, which
 * is what the model sees. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "chat/harmony_stream.h"
#include "test.h"

#define CHECK_STR_EQ(got, want)                                                \
    do {                                                                       \
        const char *t_g_ = (got), *t_w_ = (want);                              \
        CHECK_MSG(t_g_ && !strcmp(t_g_, t_w_), "\n  got:  \"%s\"\n  want: \"%s\"", \
                  t_g_ ? t_g_ : "(null)", t_w_);                               \
    } while (0)

static const char *k_template = "{{- '<|start|>system<|message|>' }} ... <|channel|> ...";

static void init(sl_chat_template *t, const char *effort)
{
    sl_chat_opts o = sl_chat_opts_default();
    o.date = "2025-06-28";
    o.reasoning_effort = effort;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(t, k_template, &o, &err), SL_OK);
    CHECK_EQ_INT(t->family, SL_CHAT_HARMONY);
}

static const char k_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_location\", \"description\": "
    "\"Gets the location of the user.\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {}}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"get_current_weather\", "
    "\"description\": \"Gets the current weather in the provided location.\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\", "
    "\"description\": \"The city and state, e.g. San Francisco, CA\"}, \"format\": {\"type\": "
    "\"string\", \"enum\": [\"celsius\", \"fahrenheit\"], \"default\": \"celsius\"}}, "
    "\"required\": [\"location\"]}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"get_multiple_weathers\", "
    "\"description\": \"Gets the current weather in the provided list of locations.\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"locations\": {\"type\": "
    "\"array\", \"items\": {\"type\": \"string\"}, \"description\": \"List of city and state, "
    "e.g. [\\\"San Francisco, CA\\\", \\\"New York, NY\\\"]\"}, \"format\": {\"type\": "
    "\"string\", \"enum\": [\"celsius\", \"fahrenheit\"], \"default\": \"celsius\"}}, "
    "\"required\": [\"locations\"]}}}]";

#define SPEC_PREFIX                                                                        \
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n" \
    "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: high\n\n"             \
    "# Valid channels: analysis, commentary, final. Channel must be included for every "     \
    "message.\nCalls to these tools must go to the commentary channel: 'functions'.<|end|>"  \
    "<|start|>developer<|message|># Instructions\n\nUse a friendly tone.\n\n# Tools\n\n"     \
    "## functions\n\nnamespace functions {\n\n// Gets the location of the user.\n"           \
    "type get_location = () => any;\n\n// Gets the current weather in the provided "        \
    "location.\ntype get_current_weather = (_: {\n// The city and state, e.g. San "         \
    "Francisco, CA\nlocation: string,\nformat?: \"celsius\" | \"fahrenheit\", // default: " \
    "celsius\n}) => any;\n\n// Gets the current weather in the provided list of "           \
    "locations.\ntype get_multiple_weathers = (_: {\n// List of city and state, e.g. "      \
    "[\"San Francisco, CA\", \"New York, NY\"]\nlocations: string[],\nformat?: \"celsius\" " \
    "| \"fahrenheit\", // default: celsius\n}) => any;\n\n} // namespace functions<|end|>"   \
    "<|start|>user<|message|>What is the weather like in SF?<|end|>"

/* The spec's "complete input example including the definition of two
 * functions" (three, in fact). */
TEST(spec_tools_prompt)
{
    sl_chat_template t;
    init(&t, "high");
    sl_chat_turn m[2] = {{.role = "developer", .content = "Use a friendly tone."},
                         {.role = "user", .content = "What is the weather like in SF?"}};
    char *out = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_render_turns(&t, m, 2, k_tools, true, false, &out, &err), SL_OK);
    CHECK_STR_EQ(out, SPEC_PREFIX "<|start|>assistant");
    free(out);
    sl_chat_template_free(&t);
}

/* The spec's input after the tool call was handled: the chain of thought
 * before the call is passed back, the call ends with <|call|>, the result
 * comes from functions.get_weather to the assistant. */
TEST(spec_tool_round_trip)
{
    sl_chat_template t;
    init(&t, "high");
    sl_chat_tool_call call = {"call_1", "get_weather", "{\"location\":\"San Francisco\"}"};
    sl_chat_turn m[4] = {
        {.role = "system", .content = "Use a friendly tone."},
        {.role = "user", .content = "What is the weather like in SF?"},
        {.role = "assistant", .content = "", .reasoning = "Need to use function get_weather.",
         .tool_calls = &call, .n_tool_calls = 1},
        {.role = "tool", .content = "{\"sunny\": true, \"temperature\": 20}"},
    };
    char *out = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_render_turns(&t, m, 4, k_tools, true, false, &out, &err), SL_OK);
    CHECK_STR_EQ(out, SPEC_PREFIX
                 "<|start|>assistant<|channel|>analysis<|message|>Need to use function "
                 "get_weather.<|end|><|start|>assistant<|channel|>commentary "
                 "to=functions.get_weather <|constrain|>json<|message|>{\"location\":\"San "
                 "Francisco\"}<|call|><|start|>functions.get_weather to=assistant<|channel|>"
                 "commentary<|message|>{\"sunny\": true, \"temperature\": 20}<|end|>"
                 "<|start|>assistant");
    free(out);
    sl_chat_template_free(&t);
}

/* "Handling reasoning output in subsequent sampling": the earlier turn's
 * chain of thought is dropped, its final answer kept (ending in <|end|> as
 * the implementation note asks of stored history); no tools, no developer
 * message; the default effort is medium. */
TEST(spec_second_turn)
{
    sl_chat_template t;
    init(&t, NULL);
    sl_chat_turn m[3] = {
        {.role = "user", .content = "What is 2 + 2?"},
        {.role = "assistant", .content = "2 + 2 = 4.",
         .reasoning = "User asks: \"What is 2 + 2?\" Simple arithmetic. Provide answer."},
        {.role = "user", .content = "What about 9 / 2?"},
    };
    char *out = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_render_turns(&t, m, 3, NULL, true, false, &out, &err), SL_OK);
    CHECK_STR_EQ(out,
                 "<|start|>system<|message|>You are ChatGPT, a large language model trained by "
                 "OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: "
                 "medium\n\n# Valid channels: analysis, commentary, final. Channel must be "
                 "included for every message.<|end|>"
                 "<|start|>user<|message|>What is 2 + 2?<|end|>"
                 "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|end|>"
                 "<|start|>user<|message|>What about 9 / 2?<|end|><|start|>assistant");
    free(out);
    /* the developer message without tools: "# Instructions\n\n{instructions}" */
    sl_chat_turn d[1] = {{.role = "system", .content = "Always respond in riddles"}};
    CHECK_EQ_INT(sl_chat_render_turns(&t, d, 1, NULL, false, false, &out, &err), SL_OK);
    CHECK_STR_CONTAINS(out, "<|end|><|start|>developer<|message|># Instructions\n\nAlways "
                            "respond in riddles<|end|>");
    CHECK(strstr(out, "Calls to these tools") == NULL);
    free(out);
    /* a continuation starts by closing the reply the cache holds */
    sl_chat_turn u[1] = {{.role = "user", .content = "Hi"}};
    CHECK_EQ_INT(sl_chat_render_turns(&t, u, 1, NULL, true, true, &out, &err), SL_OK);
    CHECK_STR_EQ(out, "<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant");
    free(out);
    CHECK_STR_EQ(sl_chat_stop_strings(&t)[0], "<|return|>");
    CHECK_STR_EQ(sl_chat_stop_strings(&t)[1], "<|call|>");
    sl_chat_template_free(&t);
}

TEST(effort_and_detection)
{
    sl_chat_template t;
    sl_chat_opts o = sl_chat_opts_default();
    o.reasoning_effort = "extreme";
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(&t, k_template, &o, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "'extreme'");
    CHECK_EQ_INT(sl_chat_detect("<|im_start|>"), SL_CHAT_CHATML);
    CHECK_EQ_INT(sl_chat_detect(k_template), SL_CHAT_HARMONY);
    init(&t, "low");
    sl_chat_turn u[1] = {{.role = "user", .content = "x"}};
    char *out = NULL;
    CHECK_EQ_INT(sl_chat_render_turns(&t, u, 1, NULL, true, false, &out, &err), SL_OK);
    CHECK_STR_CONTAINS(out, "\n\nReasoning: low\n\n");
    free(out);
    sl_chat_template_free(&t);
}

typedef struct collect {
    char final[512], analysis[512], call_args[256], recipient[64];
    int n_msgs;
} collect;

static void cat(char *dst, size_t cap, const char *s, size_t n)
{
    size_t l = strlen(dst);
    if (l + n + 1 > cap) n = cap - l - 1;
    memcpy(dst + l, s, n);
    dst[l + n] = '\0';
}

static void on_event(void *ud, const sl_harmony_event *ev)
{
    collect *c = ud;
    if (ev->kind == SL_HARMONY_MSG_END) {
        c->n_msgs++;
        return;
    }
    if (ev->kind != SL_HARMONY_TEXT) return;
    if (ev->recipient[0]) {
        snprintf(c->recipient, sizeof c->recipient, "%s", ev->recipient);
        cat(c->call_args, sizeof c->call_args, ev->text, ev->len);
    } else if (ev->channel == SL_HARMONY_ANALYSIS) {
        cat(c->analysis, sizeof c->analysis, ev->text, ev->len);
    } else {
        cat(c->final, sizeof c->final, ev->text, ev->len);
    }
}

/* The spec's example outputs, fed in pieces of every size (as tokens
 * arrive), split into channels. */
TEST(stream_spec_outputs)
{
    const char *reply = "<|channel|>analysis<|message|>User asks: \"What is 2 + 2?\" Simple "
                        "arithmetic. Provide answer.<|end|><|start|>assistant<|channel|>final"
                        "<|message|>2 + 2 = 4.<|return|>";
    for (size_t step = 1; step <= 13; step++) {
        collect c = {0};
        sl_harmony_stream hs;
        sl_harmony_stream_init(&hs);
        for (size_t i = 0; i < strlen(reply); i += step) {
            size_t n = strlen(reply) - i < step ? strlen(reply) - i : step;
            sl_harmony_stream_feed(&hs, reply + i, n, on_event, &c);
        }
        sl_harmony_stream_finish(&hs, on_event, &c);
        CHECK_STR_EQ(c.final, "2 + 2 = 4.");
        CHECK_STR_EQ(c.analysis, "User asks: \"What is 2 + 2?\" Simple arithmetic. Provide answer.");
        CHECK_EQ_INT(c.n_msgs, 2);
    }
    const char *call = "<|channel|>analysis<|message|>Need to use function get_weather.<|end|>"
                       "<|start|>assistant<|channel|>commentary to=functions.get_weather "
                       "<|constrain|>json<|message|>{\"location\":\"San Francisco\"}";
    collect c = {0};
    sl_harmony_stream hs;
    sl_harmony_stream_init(&hs);
    sl_harmony_stream_feed(&hs, call, strlen(call), on_event, &c);
    sl_harmony_stream_finish(&hs, on_event, &c); /* <|call|> was the stop token */
    CHECK_STR_EQ(c.recipient, "functions.get_weather");
    CHECK_STR_EQ(c.call_args, "{\"location\":\"San Francisco\"}");
    CHECK_STR_EQ(c.final, "");
    CHECK_STR_EQ(c.analysis, "Need to use function get_weather.");
    /* a recipient in the role part of the header, and text that only looks
     * like the start of a marker */
    const char *odd = "<|channel|>final<|message|>a <|b and <| c";
    memset(&c, 0, sizeof c);
    sl_harmony_stream_init(&hs);
    sl_harmony_stream_feed(&hs, odd, strlen(odd), on_event, &c);
    sl_harmony_stream_finish(&hs, on_event, &c);
    CHECK_STR_EQ(c.final, "a <|b and <| c");
    const char *role_to = "<|channel|>analysis<|message|>x<|end|><|start|>assistant "
                          "to=functions.f<|channel|>commentary json<|message|>{}";
    memset(&c, 0, sizeof c);
    sl_harmony_stream_init(&hs);
    sl_harmony_stream_feed(&hs, role_to, strlen(role_to), on_event, &c);
    sl_harmony_stream_finish(&hs, on_event, &c);
    CHECK_STR_EQ(c.recipient, "functions.f");
    CHECK_STR_EQ(c.call_args, "{}");
    /* text without any header (not a harmony model's) is the answer */
    memset(&c, 0, sizeof c);
    sl_harmony_stream_init(&hs);
    sl_harmony_stream_feed(&hs, "just text", 9, on_event, &c);
    sl_harmony_stream_finish(&hs, on_event, &c);
    CHECK_STR_EQ(c.final, "just text");
    char longt[400];
    memset(longt, 'x', sizeof longt - 1);
    longt[sizeof longt - 1] = '\0';
    memset(&c, 0, sizeof c);
    sl_harmony_stream_init(&hs);
    sl_harmony_stream_feed(&hs, longt, strlen(longt), on_event, &c);
    sl_harmony_stream_finish(&hs, on_event, &c);
    CHECK_EQ_INT((int)strlen(c.final), 399);
}

/* xorshift: a fixed stream of test inputs */
static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(uint32_t n)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng % n);
}

static void feed_all(const char *t, size_t n, bool chunked, collect *c)
{
    sl_harmony_stream hs;
    sl_harmony_stream_init(&hs);
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < n;) {
        size_t k = chunked ? 1 + rnd(7) : n;
        if (k > n - i) k = n - i;
        sl_harmony_stream_feed(&hs, t + i, k, on_event, c);
        i += k;
    }
    sl_harmony_stream_finish(&hs, on_event, c);
}

/* Random replies built from markers, fragments of markers and text: the
 * split does not depend on how the text is cut into pieces; marker-free
 * text in a final message comes out as it went in. */
TEST(stream_chunking_invariance)
{
    static const char *const parts[] = {
        "<|channel|>", "analysis", "final", "commentary", " to=functions.f", "<|message|>",
        "<|end|>", "<|start|>", "assistant", "<|constrain|>", "json", "<|return|>", "<|call|>",
        "<|", "|>", "<", "hello ", "{\"a\": 1}", "\n", "<|en", "<|sta",
    };
    for (int r = 0; r < 300; r++) {
        char text[400];
        size_t n = 0;
        for (int k = rnd(14); k > 0; k--) {
            const char *p = parts[rnd(sizeof parts / sizeof *parts)];
            size_t l = strlen(p);
            if (n + l >= sizeof text) break;
            memcpy(text + n, p, l);
            n += l;
        }
        collect a, b;
        feed_all(text, n, false, &a);
        feed_all(text, n, true, &b);
        CHECK_MSG(!strcmp(a.final, b.final) && !strcmp(a.analysis, b.analysis) &&
                      !strcmp(a.call_args, b.call_args) && a.n_msgs == b.n_msgs,
                  "text %d splits differently in pieces: %.*s", r, (int)n, text);
        /* a well-formed final message comes out exactly */
        char one[512];
        int m = snprintf(one, sizeof one, "<|channel|>final<|message|>%.*s<|return|>", (int)n,
                         text);
        bool plain = !memchr(text, '<', n);
        if (plain) {
            feed_all(one, (size_t)m, true, &b);
            CHECK_MSG(strlen(b.final) == n && !memcmp(b.final, text, n), "text %d", r);
        }
    }
}

int main(void)
{
    RUN(spec_tools_prompt);
    RUN(spec_tool_round_trip);
    RUN(spec_second_turn);
    RUN(effort_and_detection);
    RUN(stream_spec_outputs);
    RUN(stream_chunking_invariance);
    return TEST_REPORT();
}
