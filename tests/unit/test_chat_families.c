/* test_chat_families.c - the chat families of the newer models (Qwen3.5,
 * DeepSeek, Kimi K2, GLM-4.x, Gemma 4): detection from their official
 * template text (tests/data/chat/, one .jinja per model) and the rendered prompts. The
 * expected strings were produced by tests/data/chat/render.py, which renders
 * the official templates with Jinja2 as Hugging Face transformers does. */
#include <stdio.h>
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

static char *read_template(const char *name)
{
    const char *d = getenv("SLUICE_TEST_DATA");
    char path[512];
    snprintf(path, sizeof path, "%s/chat/%s", d ? d : "tests/data", name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        s = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (s && (fseek(f, 0, SEEK_SET) || fread(s, 1, (size_t)n, f) != (size_t)n)) {
            free(s);
            s = NULL;
        }
        if (s) s[n] = '\0';
    }
    fclose(f);
    return s;
}

/* A template built from the official file, checked to be of family fam. */
static void init_from_file_bos(sl_chat_template *t, const char *file, sl_chat_family fam,
                               bool thinking, const char *bos)
{
    char *j = read_template(file);
    CHECK_MSG(j != NULL, "cannot read tests/data/chat/%s", file);
    CHECK_EQ_INT(sl_chat_detect(j), fam);
    sl_chat_opts o = sl_chat_opts_default();
    o.enable_thinking = thinking;
    o.bos_text = bos;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(t, j, &o, &err), SL_OK);
    CHECK_EQ_INT(t->family, fam);
    free(j);
}

static void check_render(const sl_chat_template *t, const sl_chat_turn *m, size_t n,
                         const char *tools, bool gen, const char *want)
{
    char *out = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_render_turns(t, m, n, tools, gen, false, &out, &err), SL_OK);
    CHECK_STR_EQ(out, want);
    free(out);
}

static void init_from_file(sl_chat_template *t, const char *file, sl_chat_family fam,
                           bool thinking)
{
    init_from_file_bos(t, file, fam, thinking, NULL);
}

/* the conversations of render.py */
static const sl_chat_turn k_history[4] = {
    {.role = "system", .content = " Be brief. "},
    {.role = "user", .content = "Hi"},
    {.role = "assistant", .content = "<think>\nsay hi\n</think>\n\nHello!"},
    {.role = "user", .content = "Sky? "},
};

static const sl_chat_turn k_after_query[2] = {
    {.role = "user", .content = "Hi"},
    {.role = "assistant", .content = "Hello!", .reasoning = " greet "},
};

static const char k_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
    "\"Weather now\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "
    "{\"type\": \"string\"}}, \"required\": [\"city\"]}}}]";

static const sl_chat_tool_call k_calls[2] = {
    {"c1", "get_weather",
     "{\"city\": \"Paris\", \"days\": 2, \"hourly\": true, \"units\": [\"C\", \"hPa\"]}"},
    {"c2", "get_weather", "{\"city\": \"Nice\"}"},
};

static const sl_chat_turn k_tool_trip[5] = {
    {.role = "system", .content = "Be brief."},
    {.role = "user", .content = "Weather in Paris?"},
    {.role = "assistant", .content = "Let me look.", .tool_calls = k_calls, .n_tool_calls = 2},
    {.role = "tool", .content = "{\"temp\": 21}", .name = "get_weather"},
    {.role = "tool", .content = "{\"temp\": 23}", .name = "get_weather"},
};

TEST(qwen35)
{
    sl_chat_template t, nt;
    init_from_file(&t, "Qwen3.5-4B.jinja", SL_CHAT_QWEN35, true);
    init_from_file(&nt, "Qwen3.5-4B.jinja", SL_CHAT_QWEN35, false);
    check_render(&t, k_history, 4, NULL, true,
                 "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                 "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nSky?<|im_end|>\n"
                 "<|im_start|>assistant\n<think>\n");
    check_render(&nt, k_history, 4, NULL, true,
                 "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                 "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nSky?<|im_end|>\n"
                 "<|im_start|>assistant\n<think>\n\n</think>\n\n");
    check_render(&t, k_after_query, 2, NULL, false,
                 "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\ngreet\n"
                 "</think>\n\nHello!<|im_end|>\n");
    check_render(&t, k_tool_trip, 5, k_tools, true,
                 "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather now\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>\n\nBe brief.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nLet me look.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n<parameter=hourly>\nTrue\n</parameter>\n<parameter=units>\n[\"C\", \"hPa\"]\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNice\n</parameter>\n</function>\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response>\n<tool_response>\n{\"temp\": 23}\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n");
    CHECK_STR_EQ(sl_chat_turn_end(&t), "<|im_end|>\n");
    CHECK_STR_EQ(sl_chat_stop_strings(&t)[0], "<|im_end|>");
    /* arguments that are not an object are refused */
    sl_chat_tool_call bad = {"c", "f", "[1]"};
    sl_chat_turn m[2] = {{.role = "user", .content = "x"},
                         {.role = "assistant", .content = "", .tool_calls = &bad, .n_tool_calls = 1}};
    char *out = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_render_turns(&t, m, 2, NULL, false, false, &out, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "not a JSON object");
    sl_chat_template_free(&t);
    sl_chat_template_free(&nt);
}

#define DS_BOS "<\xef\xbd\x9c" "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
#define DS_EOS "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
#define DS_USER "<\xef\xbd\x9cUser\xef\xbd\x9c>"
#define DS_ASSISTANT "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"

TEST(deepseek)
{
    sl_chat_template t, nt;
    init_from_file_bos(&t, "deepseek-ai-DeepSeek-V3.1.jinja", SL_CHAT_DEEPSEEK_V31, true, DS_BOS);
    init_from_file_bos(&nt, "deepseek-ai-DeepSeek-V3.1.jinja", SL_CHAT_DEEPSEEK_V31, false, DS_BOS);
    check_render(&t, k_history, 4, NULL, true,
                 DS_BOS " Be brief. " DS_USER "Hi" DS_ASSISTANT "<think></think>\n\nHello!" DS_EOS
                 DS_USER "Sky? " DS_ASSISTANT "<think>");
    check_render(&nt, k_history, 4, NULL, true,
                 DS_BOS " Be brief. " DS_USER "Hi" DS_ASSISTANT "<think></think>\n\nHello!" DS_EOS
                 DS_USER "Sky? " DS_ASSISTANT "<think></think>");
    check_render(&t, k_after_query, 2, NULL, false,
                 DS_BOS DS_USER "Hi" DS_ASSISTANT "<think></think>Hello!" DS_EOS);
    CHECK_STR_EQ(sl_chat_turn_end(&t), DS_EOS);
    CHECK_STR_EQ(sl_chat_stop_strings(&t)[0], DS_EOS);
    sl_chat_template_free(&t);
    sl_chat_template_free(&nt);
    init_from_file_bos(&t, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", SL_CHAT_DEEPSEEK_R1,
                       true, DS_BOS);
    init_from_file_bos(&nt, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
                       SL_CHAT_DEEPSEEK_R1, false, DS_BOS);
    check_render(&t, k_history, 4, NULL, true,
                 DS_BOS " Be brief. " DS_USER "Hi" DS_ASSISTANT "\n\nHello!" DS_EOS DS_USER "Sky? "
                 DS_ASSISTANT "<think>\n");
    check_render(&nt, k_history, 4, NULL, true,
                 DS_BOS " Be brief. " DS_USER "Hi" DS_ASSISTANT "\n\nHello!" DS_EOS DS_USER "Sky? "
                 DS_ASSISTANT "<think>\n</think>");
    check_render(&t, k_after_query, 2, NULL, false, DS_BOS DS_USER "Hi" DS_ASSISTANT "Hello!" DS_EOS);
    /* tools have no form here yet: refused */
    char *out = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_render_turns(&t, k_tool_trip, 2, k_tools, true, false, &out, &err),
                 SL_EINVAL);
    sl_chat_template_free(&t);
    sl_chat_template_free(&nt);
}

TEST(kimi_k2)
{
    sl_chat_template t;
    init_from_file(&t, "Kimi-K2-Instruct.jinja", SL_CHAT_KIMI, true);
    check_render(&t, k_history, 4, NULL, true,
                 "<|im_system|>system<|im_middle|> Be brief. <|im_end|><|im_user|>user<|im_middle|>Hi<|im_end|><|im_assistant|>assistant<|im_middle|><think>\nsay hi\n</think>\n\nHello!<|im_end|><|im_user|>user<|im_middle|>Sky? <|im_end|><|im_assistant|>assistant<|im_middle|>");
    check_render(&t, k_after_query, 2, NULL, false,
                 "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>\n<|im_user|>user<|im_middle|>Hi<|im_end|><|im_assistant|>assistant<|im_middle|>Hello!<|im_end|>");
    CHECK_STR_EQ(sl_chat_turn_end(&t), "<|im_end|>");
    sl_chat_template_free(&t);
    init_from_file(&t, "Kimi-K2-Thinking.jinja", SL_CHAT_KIMI_THINKING, true);
    check_render(&t, k_history, 4, NULL, true,
                 "<|im_system|>system<|im_middle|> Be brief. <|im_end|><|im_user|>user<|im_middle|>Hi<|im_end|><|im_assistant|>assistant<|im_middle|><think></think><think>\nsay hi\n</think>\n\nHello!<|im_end|><|im_user|>user<|im_middle|>Sky? <|im_end|><|im_assistant|>assistant<|im_middle|>");
    check_render(&t, k_after_query, 2, NULL, false,
                 "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|><|im_user|>user<|im_middle|>Hi<|im_end|><|im_assistant|>assistant<|im_middle|><think></think>Hello!<|im_end|>");
    sl_chat_template_free(&t);
}

TEST(glm)
{
    sl_chat_template t, nt;
    init_from_file(&t, "GLM-4.6.jinja", SL_CHAT_GLM4, true);
    init_from_file(&nt, "GLM-4.6.jinja", SL_CHAT_GLM4, false);
    check_render(&t, k_history, 4, NULL, true,
                 "[gMASK]<sop><|system|>\n Be brief. <|user|>\nHi<|assistant|>\n<think></think>\nHello!<|user|>\nSky? <|assistant|>");
    check_render(&nt, k_history, 4, NULL, true,
                 "[gMASK]<sop><|system|>\n Be brief. <|user|>\nHi/nothink<|assistant|>\n<think></think>\nHello!<|user|>\nSky? /nothink<|assistant|>\n<think></think>");
    check_render(&t, k_after_query, 2, NULL, false,
                 "[gMASK]<sop><|user|>\nHi<|assistant|>\n<think>greet</think>\nHello!");
    CHECK_STR_EQ(sl_chat_turn_end(&t), "");
    CHECK_STR_EQ(sl_chat_stop_strings(&t)[0], "<|user|>");
    CHECK_STR_EQ(sl_chat_stop_strings(&t)[1], "<|observation|>");
    sl_chat_template_free(&t);
    sl_chat_template_free(&nt);
    init_from_file(&t, "GLM-4.7-Flash.jinja", SL_CHAT_GLM47, true);
    init_from_file(&nt, "GLM-4.7-Flash.jinja", SL_CHAT_GLM47, false);
    check_render(&t, k_history, 4, NULL, true,
                 "[gMASK]<sop><|system|> Be brief. <|user|>Hi<|assistant|></think>Hello!<|user|>Sky? <|assistant|><think>");
    check_render(&nt, k_history, 4, NULL, true,
                 "[gMASK]<sop><|system|> Be brief. <|user|>Hi<|assistant|></think>Hello!<|user|>Sky? <|assistant|></think>");
    check_render(&t, k_after_query, 2, NULL, false,
                 "[gMASK]<sop><|user|>Hi<|assistant|><think>greet</think>Hello!");
    sl_chat_template_free(&t);
    sl_chat_template_free(&nt);
}

TEST(gemma4)
{
    sl_chat_template t, nt;
    init_from_file_bos(&t, "google-gemma-4-31B-it.jinja", SL_CHAT_GEMMA4, true, "<bos>");
    init_from_file_bos(&nt, "google-gemma-4-31B-it.jinja", SL_CHAT_GEMMA4, false, "<bos>");
    check_render(&t, k_history, 4, NULL, true,
                 "<bos><|turn>system\n<|think|>\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n<think>\nsay hi\n</think>\n\nHello!<turn|>\n<|turn>user\nSky?<turn|>\n<|turn>model\n");
    check_render(&nt, k_history, 4, NULL, true,
                 "<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n<think>\nsay hi\n</think>\n\nHello!<turn|>\n<|turn>user\nSky?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
    check_render(&t, k_after_query, 2, NULL, false,
                 "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\nHello!<turn|>\n");
    check_render(&nt, k_after_query, 2, NULL, false,
                 "<bos><|turn>user\nHi<turn|>\n<|turn>model\nHello!<turn|>\n");
    CHECK_STR_EQ(sl_chat_stop_strings(&t)[0], "<turn|>");
    CHECK_STR_EQ(sl_chat_turn_end(&t), "<turn|>\n");
    sl_chat_template_free(&t);
    sl_chat_template_free(&nt);
}

/* every family name round-trips, and a continuation equals the tail of the
 * whole render for the families whose history is kept verbatim */
TEST(names_and_continuation)
{
    const char *names[] = {"qwen3.5", "deepseek-v3", "deepseek-v3.1", "deepseek-r1",
                           "kimi-k2", "kimi-k2-thinking", "glm4", "glm4.7", "gemma4"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        sl_chat_family f;
        sl_err err = {0};
        CHECK_EQ_INT(sl_chat_family_from_name(names[i], &f, &err), SL_OK);
        CHECK_STR_EQ(sl_chat_family_name(f), names[i]);
    }
    const sl_chat_turn conv[3] = {
        {.role = "user", .content = "Hi"},
        {.role = "assistant", .content = "Hello!"},
        {.role = "user", .content = "Sky?"},
    };
    /* (with thinking off: the generation prompt then opens the turn the way
     * history writes it) */
    const char *cont_names[] = {"deepseek-v3", "kimi-k2", "glm4.7"};
    for (size_t i = 0; i < 3; i++) {
        sl_chat_template t;
        sl_chat_opts o = sl_chat_opts_default();
        o.name = cont_names[i];
        o.enable_thinking = false;
        sl_err err = {0};
        CHECK_EQ_INT(sl_chat_template_init(&t, NULL, &o, &err), SL_OK);
        char *first = NULL, *whole = NULL, *next = NULL;
        CHECK_EQ_INT(sl_chat_render_turns(&t, conv, 1, NULL, true, false, &first, &err), SL_OK);
        CHECK_EQ_INT(sl_chat_render_turns(&t, conv, 3, NULL, true, false, &whole, &err), SL_OK);
        CHECK_EQ_INT(sl_chat_render_turns(&t, conv + 2, 1, NULL, true, true, &next, &err), SL_OK);
        size_t fl = strlen(first);
        /* whole = first + "Hello!" + continuation */
        CHECK_MSG(!strncmp(whole, first, fl) && !strncmp(whole + fl, "Hello!", 6) &&
                      !strcmp(whole + fl + 6, next),
                  "%s: first \"%s\" + reply + \"%s\" != \"%s\"", cont_names[i], first, next, whole);
        free(first);
        free(whole);
        free(next);
        sl_chat_template_free(&t);
    }
}

static void keep(void *ud, const char *p, size_t n)
{
    char *s = ud;
    size_t l = strlen(s);
    if (l + n < 128) memcpy(s + l, p, n), s[l + n] = '\0';
}

/* the answer's calls in Qwen3.5's form (as its template writes them in
 * history) come back as name + JSON arguments, fed in pieces */
TEST(qwen35_call_parsed)
{
    const char *ans = "Let me look.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
                      "Paris\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n"
                      "</tool_call>";
    sl_tc_stream st;
    sl_tc_init(&st);
    char content[128] = "";
    const size_t len = strlen(ans);
    for (size_t i = 0; i < len; i += 5)
        sl_tc_feed(&st, ans + i, len - i < 5 ? len - i : 5, keep, content);
    sl_tc_finish(&st, keep, content);
    CHECK_EQ_INT(st.n_calls, 1);
    if (st.n_calls == 1) {
        CHECK_STR_EQ(st.calls[0].name, "get_weather");
        CHECK_STR_EQ(st.calls[0].arguments, "{\"city\":\"Paris\",\"days\":2}");
    }
    CHECK_STR_EQ(content, "Let me look.\n\n");
    sl_tc_free(&st);
}

int main(void)
{
    RUN(qwen35_call_parsed);
    RUN(qwen35);
    RUN(deepseek);
    RUN(kimi_k2);
    RUN(glm);
    RUN(gemma4);
    RUN(names_and_continuation);
    return TEST_REPORT();
}
