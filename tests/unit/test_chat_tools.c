/* test_chat_tools.c - Qwen3-style tool calls: the tools system block and
 * the call / result forms as Qwen3's chat template writes them (expected
 * strings copied from that template's text; an assistant turn after the
 * last user query that is not the last message and has no reasoning gets no
 * think block there), and the <tool_call> parser of
 * a streamed answer (chat/toolcall_stream.h). */
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "chat/toolcall_stream.h"
#include "test.h"

#define CHECK_STR_EQ(got, want)                                                \
    do {                                                                       \
        const char *t_g_ = (got), *t_w_ = (want);                              \
        CHECK_MSG(t_g_ && !strcmp(t_g_, t_w_), "\n  got:  \"%s\"\n  want: \"%s\"", \
                  t_g_ ? t_g_ : "(null)", t_w_);                               \
    } while (0)

static const char k_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}]";

TEST(qwen3_tools_round_trip)
{
    sl_chat_template t;
    sl_chat_opts o = sl_chat_opts_default();
    o.name = "qwen3";
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(&t, NULL, &o, &err), SL_OK);
    sl_chat_tool_call c = {"c1", "get_weather", "{\"city\": \"Paris\"}"};
    sl_chat_turn m[4] = {
        {.role = "system", .content = "Be brief."},
        {.role = "user", .content = "Weather in Paris?"},
        {.role = "assistant", .content = "", .tool_calls = &c, .n_tool_calls = 1},
        {.role = "tool", .content = "{\"temp\": 21}"},
    };
    char *out = NULL;
    CHECK_EQ_INT(sl_chat_render_turns(&t, m, 4, k_tools, true, false, &out, &err), SL_OK);
    CHECK_STR_EQ(out,
                 "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions "
                 "to assist with the user query.\n\nYou are provided with function signatures "
                 "within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", "
                 "\"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": "
                 "\"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}\n</tools>\n\n"
                 "For each function call, return a json object with function name and arguments "
                 "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
                 "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
                 "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
                 "<|im_start|>assistant\n<tool_call>\n{\"name\": "
                 "\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
                 "<|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n"
                 "</tool_response><|im_end|>\n<|im_start|>assistant\n");
    free(out);
    /* families without a form for tools refuse them */
    sl_chat_template l;
    o.name = "llama3";
    CHECK_EQ_INT(sl_chat_template_init(&l, NULL, &o, &err), SL_OK);
    CHECK_EQ_INT(sl_chat_render_turns(&l, m + 1, 1, k_tools, true, false, &out, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "no form for tools");
    CHECK_EQ_INT(sl_chat_render_turns(&l, m + 3, 1, NULL, true, false, &out, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_chat_render_turns(&t, m, 1, "{\"a\": 1}", true, false, &out, &err), SL_EINVAL);
    sl_chat_template_free(&l);
    sl_chat_template_free(&t);
}

typedef struct text {
    char s[256];
} text;

static void out_text(void *ud, const char *p, size_t n)
{
    text *t = ud;
    size_t l = strlen(t->s);
    if (l + n < sizeof t->s) memcpy(t->s + l, p, n), t->s[l + n] = '\0';
}

TEST(tool_call_stream)
{
    const char *ans = "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                      "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"f\"}\n"
                      "</tool_call> <b>x</b> <tool_call>not json</tool_call>";
    for (size_t step = 1; step <= 9; step++) {
        sl_tc_stream s;
        text t = {{0}};
        sl_tc_init(&s);
        for (size_t i = 0; i < strlen(ans); i += step)
            sl_tc_feed(&s, ans + i, strlen(ans) - i < step ? strlen(ans) - i : step, out_text, &t);
        sl_tc_finish(&s, out_text, &t);
        CHECK_EQ_INT(s.n_calls, 2);
        if (s.n_calls == 2) {
            CHECK_STR_EQ(s.calls[0].name, "get_weather");
            CHECK_STR_EQ(s.calls[0].arguments, "{\"city\":\"Paris\"}");
            CHECK_STR_EQ(s.calls[1].name, "f");
            CHECK_STR_EQ(s.calls[1].arguments, "{}");
        }
        CHECK_STR_EQ(t.s, "Let me check.\n\n <b>x</b> <tool_call>not json</tool_call>");
        sl_tc_free(&s);
    }
    /* an unclosed call at the end is content */
    sl_tc_stream s;
    text t = {{0}};
    sl_tc_init(&s);
    sl_tc_feed(&s, "a<tool_call>{\"name\"", 19, out_text, &t);
    sl_tc_finish(&s, out_text, &t);
    CHECK_EQ_INT(s.n_calls, 0);
    CHECK_STR_EQ(t.s, "a<tool_call>{\"name\"");
    sl_tc_free(&s);
}

int main(void)
{
    RUN(qwen3_tools_round_trip);
    RUN(tool_call_stream);
    return TEST_REPORT();
}
