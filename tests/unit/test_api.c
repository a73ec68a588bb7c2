/* test_api.c - the public API (include/sluice.h) on a generated tiny model:
 * tokenize / detokenize / pieces / the streaming decoder, the sampler
 * object, chat template rendering, and the session's errors on bad input.
 *
 * Expected values come from the documented layout of the generated
 * vocabulary (src/synth/synth_vocab.h): ids 0..255 are the byte tokens in
 * byte order; after the learnt merges come <|endoftext|> <|im_start|>
 * <|im_end|> in that order, with BOS = <|endoftext|> and EOS = <|im_end|>,
 * and add_bos_token = false. So im_start = bos + 1 and eos = bos + 2. */
#include <stdlib.h>
#include <string.h>

#include "sluice.h"
#include "synth/synth.h"
#include "test.h"
#include "common/testutil.h"

static sl_model *g_model;

TEST(special_ids)
{
    sl_model *m = g_model;
    const int32_t bos = sl_model_token_bos(m), eos = sl_model_token_eos(m);
    CHECK(bos >= 256);
    CHECK_EQ_INT(eos, bos + 2);
    CHECK_EQ_INT(sl_model_n_tokens(m), sl_model_n_vocab(m)); /* tiny: 512 of both */
    CHECK_EQ_INT(sl_model_n_vocab(m), 512);
    CHECK(!sl_model_add_bos(m));
    CHECK(sl_model_token_is_eog(m, eos));
    CHECK(!sl_model_token_is_eog(m, 'A'));
    CHECK(!sl_model_token_is_eog(m, -1));
    CHECK(!sl_model_token_is_eog(m, 1 << 20));
}

TEST(tokenize_round_trip)
{
    sl_model *m = g_model;
    sl_err err = {0};
    const char *texts[] = {"The river comes down from the hills in the spring.",
                           "Ünïcödé, 142 cm & \"quotes\"\n\ttabs  and  spaces", "", "x"};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        const char *t = texts[k];
        const size_t len = strlen(t);
        int n = sl_tokenize(m, t, len, NULL, 0, 0, &err);
        CHECK_MSG(n >= 0, "%s", err.msg);
        /* byte-level BPE: each token covers at least one byte, and every
         * non-empty text gives at least one token */
        CHECK(n <= (int)len);
        CHECK(len == 0 ? n == 0 : n >= 1);
        int32_t ids[256];
        CHECK_EQ_INT(sl_tokenize(m, t, len, ids, 256, 0, &err), n);
        char out[512];
        int w = sl_detokenize(m, ids, n, out, sizeof out, 0, &err);
        CHECK_EQ_INT(w, (int)len);
        CHECK_MSG(w == (int)len && !memcmp(out, t, len) && out[len] == '\0',
                  "round trip of '%s' gave '%s'", t, out);
    }
}

TEST(tokenize_small_buffer)
{
    sl_model *m = g_model;
    sl_err err = {0};
    const char *t = "a longer sentence about the mill and the water";
    int n = sl_tokenize(m, t, strlen(t), NULL, 0, 0, &err);
    CHECK(n >= 3);
    int32_t ids[4] = {-7, -7, -7, -7};
    /* too small: the full count comes back and the buffer is untouched */
    CHECK_EQ_INT(sl_tokenize(m, t, strlen(t), ids, 2, 0, &err), n);
    CHECK_EQ_INT(ids[0], -7);
    CHECK_EQ_INT(ids[1], -7);
    /* detokenize: the same convention, length without the NUL */
    int32_t two[2] = {'h', 'i'};
    char buf[3] = {'#', '#', '#'};
    CHECK_EQ_INT(sl_detokenize(m, two, 2, buf, 2, 0, &err), 2); /* no room for the NUL */
    CHECK_EQ_INT(buf[0], '#');
    CHECK_EQ_INT(sl_detokenize(m, two, 2, buf, 3, 0, &err), 2);
    CHECK(!strcmp(buf, "hi"));
    CHECK_EQ_INT(sl_tokenize(m, t, strlen(t), ids, -1, 0, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_tokenize(m, NULL, 3, ids, 4, 0, &err), SL_EINVAL);
}

TEST(tokenize_special_and_bos)
{
    sl_model *m = g_model;
    sl_err err = {0};
    const int32_t bos = sl_model_token_bos(m), eos = sl_model_token_eos(m);
    int32_t ids[64];
    const char *s = "<|im_start|>user";
    int n = sl_tokenize(m, s, strlen(s), ids, 64, SL_TOKENIZE_PARSE_SPECIAL, &err);
    CHECK(n >= 2);
    CHECK_EQ_INT(ids[0], bos + 1);
    n = sl_tokenize(m, "<|im_end|>", 10, ids, 64, SL_TOKENIZE_PARSE_SPECIAL, &err);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(ids[0], eos);
    /* without parsing, the marker is ordinary text: no control token in it */
    n = sl_tokenize(m, "<|im_end|>", 10, ids, 64, 0, &err);
    CHECK(n > 1);
    for (int i = 0; i < n; i++) CHECK(ids[i] < bos);
    n = sl_tokenize(m, "hi", 2, ids, 64, SL_TOKENIZE_ADD_BOS, &err);
    CHECK(n >= 2);
    CHECK_EQ_INT(ids[0], bos);
}

TEST(pieces_and_stream)
{
    sl_model *m = g_model;
    sl_err err = {0};
    size_t len;
    const char *p = sl_token_piece(m, 'A', false, &len);
    CHECK(p && len == 1 && p[0] == 'A');
    const int32_t eos = sl_model_token_eos(m);
    p = sl_token_piece(m, eos, false, &len);
    CHECK_EQ_INT(len, 0); /* control tokens are silent unless asked */
    p = sl_token_piece(m, eos, true, &len);
    CHECK(p && len == 10 && !memcmp(p, "<|im_end|>", 10));
    CHECK(sl_token_piece(m, -1, true, &len) == NULL && len == 0);
    CHECK(sl_token_piece(m, sl_model_n_tokens(m), true, &len) == NULL);

    /* "é" is C3 A9: the first byte token alone prints nothing */
    sl_detok *d = NULL;
    CHECK_EQ_INT(sl_detok_create(&d, m, 0, &err), SL_OK);
    if (!d) return;
    const char *t;
    CHECK_EQ_INT(sl_detok_push(d, 0xC3, &t, &len, &err), SL_OK);
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_INT(sl_detok_push(d, 0xA9, &t, &len, &err), SL_OK);
    CHECK(len == 2 && !memcmp(t, "\xC3\xA9", 2));
    /* an unfinished sequence at the end becomes U+FFFD (EF BF BD) */
    CHECK_EQ_INT(sl_detok_push(d, 0xE2, &t, &len, &err), SL_OK);
    CHECK_EQ_INT(len, 0);
    sl_detok_flush(d, &t, &len);
    CHECK(len == 3 && !memcmp(t, "\xEF\xBF\xBD", 3));
    /* after a flush the decoder starts a new stream */
    CHECK_EQ_INT(sl_detok_push(d, 'o', &t, &len, &err), SL_OK);
    CHECK(len == 1 && t[0] == 'o');
    CHECK_EQ_INT(sl_detok_push(d, 1 << 20, &t, &len, &err), SL_EINVAL);
    sl_detok_free(d);

    int32_t bad[2] = {'a', -3};
    char buf[8];
    CHECK_EQ_INT(sl_detokenize(m, bad, 2, buf, sizeof buf, 0, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "index 1");
}

/* A fixed, nearly flat logits row: logit_i = (i % 17) / 16, so many tokens
 * have similar probability and a draw depends on the RNG. */
static void flat_logits(float *l, int n)
{
    for (int i = 0; i < n; i++) l[i] = (float)(i % 17) / 16.0f;
}

static void draw(sl_sampling *s, const float *l, int32_t *out, int n)
{
    sl_err err;
    for (int i = 0; i < n; i++) out[i] = sl_sampling_sample(s, l, &err);
}

TEST(sampler_determinism)
{
    enum { V = 512, N = 64 };
    static float l[V];
    flat_logits(l, V);
    sl_err err = {0};
    sl_sampling_params p = sl_sampling_default_params();
    p.temp = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 42;
    sl_sampling *a = NULL, *b = NULL, *c = NULL;
    CHECK_EQ_INT(sl_sampling_create(&a, &p, V, &err), SL_OK);
    CHECK_EQ_INT(sl_sampling_create(&b, &p, V, &err), SL_OK);
    p.seed = 43;
    CHECK_EQ_INT(sl_sampling_create(&c, &p, V, &err), SL_OK);
    if (!a || !b || !c) goto done;
    int32_t x[N], y[N], z[N], w[N];
    draw(a, l, x, N);
    draw(b, l, y, N);
    draw(c, l, z, N);
    sl_sampling_reset(a);
    draw(a, l, w, N);
    int same_xy = 0, same_xz = 0, same_xw = 0, valid = 0;
    for (int i = 0; i < N; i++) {
        valid += x[i] >= 0 && x[i] < V;
        same_xy += x[i] == y[i];
        same_xz += x[i] == z[i];
        same_xw += x[i] == w[i];
    }
    CHECK_EQ_INT(valid, N);
    CHECK_EQ_INT(same_xy, N); /* same seed, same draws */
    CHECK_EQ_INT(same_xw, N); /* reset rewinds the RNG */
    /* ~32 tokens share the top logit; two seeds agreeing on all 64 draws
     * would have probability far below 1e-50 */
    CHECK(same_xz < N);
done:
    sl_sampling_free(a);
    sl_sampling_free(b);
    sl_sampling_free(c);
}

TEST(sampler_greedy_and_penalty)
{
    enum { V = 16 };
    float l[V];
    for (int i = 0; i < V; i++) l[i] = 0.0f;
    l[7] = 1.0f;
    l[3] = 0.6f;
    sl_err err = {0};
    sl_sampling_params p = sl_sampling_default_params();
    p.temp = 0.0f;
    p.repeat_penalty = 2.0f;
    p.penalty_last_n = 8;
    sl_sampling *s = NULL;
    CHECK_EQ_INT(sl_sampling_create(&s, &p, V, &err), SL_OK);
    if (!s) return;
    CHECK_EQ_INT(sl_sampling_sample(s, l, &err), 7); /* argmax */
    /* once 7 is in the history its positive logit is divided by 2:
     * 1.0 / 2 = 0.5 < 0.6, so 3 wins */
    CHECK_EQ_INT(sl_sampling_accept(s, 7, &err), SL_OK);
    CHECK_EQ_INT(sl_sampling_sample(s, l, &err), 3);
    sl_sampling_reset(s);
    CHECK_EQ_INT(sl_sampling_sample(s, l, &err), 7);
    CHECK_EQ_INT(sl_sampling_accept(s, V, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_sampling_accept(s, -1, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_sampling_sample(s, NULL, &err), SL_EINVAL);
    l[5] = NAN;
    CHECK_EQ_INT(sl_sampling_sample(s, l, &err), SL_EINVAL);
    sl_sampling_free(s);

    sl_sampling *bad = NULL;
    p = sl_sampling_default_params();
    p.top_p = 0.0f;
    CHECK_EQ_INT(sl_sampling_create(&bad, &p, V, &err), SL_EINVAL);
    CHECK(bad == NULL);
    p = sl_sampling_default_params();
    CHECK_EQ_INT(sl_sampling_create(&bad, &p, 0, &err), SL_EINVAL);
    p.penalty_last_n = -2;
    CHECK_EQ_INT(sl_sampling_create(&bad, &p, V, &err), SL_EINVAL);
}

TEST(session_errors)
{
    sl_model *m = g_model;
    sl_err err = {0};
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 8;
    sp.n_batch_max = 4;
    sl_session *s = NULL;
    CHECK_EQ_INT(sl_session_create(&s, m, &sp, &err), SL_OK);
    if (!s) return;
    const int V = sl_model_n_vocab(m);
    int32_t t[5] = {'a', 'b', 'c', 'd', 'e'};
    int32_t bad[2] = {'a', V};
    CHECK_EQ_INT(sl_session_eval(s, bad, 2, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "outside the vocabulary");
    CHECK_EQ_INT(sl_session_n_past(s), 0);
    bad[1] = -1;
    CHECK_EQ_INT(sl_session_eval(s, bad, 2, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_session_eval(s, t, 0, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_session_eval(s, t, 5, &err), SL_EINVAL); /* above n_batch_max */
    CHECK_EQ_INT(sl_session_n_past(s), 0);
    CHECK(sl_session_logits(s) == NULL); /* nothing evaluated yet */
    CHECK_EQ_INT(sl_session_eval(s, t, 4, &err), SL_OK);
    CHECK_EQ_INT(sl_session_eval(s, t, 3, &err), SL_OK);
    CHECK_EQ_INT(sl_session_n_past(s), 7);
    /* 7 cached + 2 > 8: refused, nothing changes */
    CHECK_EQ_INT(sl_session_eval(s, t, 2, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "context is full");
    CHECK_EQ_INT(sl_session_n_past(s), 7);
    CHECK_EQ_INT(sl_session_eval(s, t, 1, &err), SL_OK);
    CHECK_EQ_INT(sl_session_n_past(s), 8);
    sl_session_truncate(s, 0);
    CHECK_EQ_INT(sl_session_n_past(s), 0);
    CHECK_EQ_INT(sl_session_eval(s, t, 4, &err), SL_OK);
    sl_session_free(s);
}

/* Greedy continuation through the public API is the same whether the
 * prompt goes in one batch or one token at a time. */
TEST(greedy_batch_independent)
{
    sl_model *m = g_model;
    sl_err err = {0};
    const char *prompt = "The miller's daughter kept a notebook of the river.";
    int32_t ids[128];
    int n = sl_tokenize(m, prompt, strlen(prompt), ids, 128, 0, &err);
    CHECK(n > 4 && n <= 32);
    int32_t out[2][16];
    for (int run = 0; run < 2; run++) {
        sl_session_params sp = sl_session_default_params();
        sp.n_ctx = 64;
        sp.n_batch_max = 32;
        sl_session *s = NULL;
        sl_sampling *smp = NULL;
        sl_sampling_params p = sl_sampling_default_params();
        p.temp = 0;
        if (sl_session_create(&s, m, &sp, &err) || sl_sampling_create(&smp, &p, 512, &err)) {
            CHECK_MSG(0, "%s", err.msg);
            sl_session_free(s);
            return;
        }
        if (run == 0) {
            CHECK_EQ_INT(sl_session_eval(s, ids, n, &err), SL_OK);
        } else {
            for (int i = 0; i < n; i++) CHECK_EQ_INT(sl_session_eval(s, ids + i, 1, &err), SL_OK);
        }
        for (int i = 0; i < 16; i++) {
            out[run][i] = sl_sampling_sample(smp, sl_session_logits(s), &err);
            CHECK_EQ_INT(sl_session_eval(s, &out[run][i], 1, &err), SL_OK);
        }
        sl_sampling_free(smp);
        sl_session_free(s);
    }
    CHECK(!memcmp(out[0], out[1], sizeof out[0]));
}

TEST(chat_templates)
{
    sl_model *m = g_model;
    sl_err err = {0};
    sl_chat *c = NULL;
    CHECK_EQ_INT(sl_chat_create(&c, m, NULL, true, &err), SL_OK);
    if (!c) return;
    /* the generated model's template is ChatML (synth_corpus.c) */
    CHECK(!strcmp(sl_chat_name(c), "chatml"));
    sl_chat_message u1[2] = {{"system", "Be brief."}, {"user", "hi"}};
    char *s = NULL;
    CHECK_EQ_INT(sl_chat_format(c, u1, 2, true, &s, &err), SL_OK);
    CHECK(s && !strcmp(s, "<|im_start|>system\nBe brief.<|im_end|>\n"
                          "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"));
    free(s);
    sl_chat_message u2 = {"user", "yo"};
    CHECK_EQ_INT(sl_chat_format_next(c, &u2, 1, true, &s, &err), SL_OK);
    CHECK(s && !strcmp(s, "<|im_end|>\n<|im_start|>user\nyo<|im_end|>\n<|im_start|>assistant\n"));
    free(s);
    sl_chat_message bad = {"wizard", "x"};
    CHECK_EQ_INT(sl_chat_format(c, &bad, 1, true, &s, &err), SL_EINVAL);
    CHECK(sl_chat_is_stop_token(c, sl_model_token_eos(m)));
    CHECK(!sl_chat_is_stop_token(c, 'a'));
    /* chat.h: chatml stops at "<|im_end|>" then "<|endoftext|>" */
    const char *const *st = sl_chat_stop_texts(c);
    CHECK(st && st[0] && !strcmp(st[0], "<|im_end|>"));
    CHECK(st && st[0] && st[1] && !strcmp(st[1], "<|endoftext|>") && !st[2]);
    /* <|endoftext|> is BOS here, and a stop marker of the format */
    CHECK(sl_chat_is_stop_token(c, sl_model_token_bos(m)));
    sl_chat_free(c);

    c = NULL;
    CHECK_EQ_INT(sl_chat_create(&c, m, "llama3", true, &err), SL_OK);
    if (c) CHECK(!strcmp(sl_chat_name(c), "llama3"));
    sl_chat_free(c);
    c = NULL;
    CHECK_EQ_INT(sl_chat_create(&c, m, "no-such-template", true, &err), SL_EINVAL);
    CHECK(c == NULL);
    CHECK_STR_CONTAINS(err.msg, "chatml");
}

/* What an sl_answer hands out: reasoning and content apart. */
typedef struct answer_parts {
    char text[2][256];
} answer_parts;

static void collect_part(void *ud, bool reasoning, const char *text, size_t len)
{
    char *dst = ((answer_parts *)ud)->text[reasoning];
    strncat(dst, text, len < 255 - strlen(dst) ? len : 255 - strlen(dst));
}

/* The server's surface: turns with tools, thinking and effort per render,
 * an answer split into reasoning, content and calls, the file's metadata. */
TEST(chat_turns_answers_meta)
{
    const sl_model *m = g_model;
    sl_err err = {0};
    sl_chat *c = NULL;
    CHECK_EQ_INT(sl_chat_create(&c, m, "qwen3", true, &err), SL_OK);
    if (!c) return;
    CHECK(sl_chat_family_of(c) == SL_CHAT_QWEN3);
    CHECK(!strcmp(sl_chat_family_name(SL_CHAT_QWEN3), "qwen3"));
    CHECK(sl_chat_takes_tools(c));
    CHECK_EQ_INT(sl_chat_set_effort(c, "huge", &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "huge");
    const sl_chat_turn turns[] = {{.role = "user", .content = "hi"}};
    char *on = NULL, *off = NULL, *tools = NULL;
    CHECK_EQ_INT(sl_chat_format_turns(c, turns, 1, NULL, -1, NULL, true, &on, &err), SL_OK);
    CHECK_EQ_INT(sl_chat_format_turns(c, turns, 1, NULL, 0, NULL, true, &off, &err), SL_OK);
    const char *fn = "[{\"type\": \"function\", \"function\": {\"name\": \"get_time\", "
                     "\"parameters\": {\"type\": \"object\"}}}]";
    CHECK_EQ_INT(sl_chat_format_turns(c, turns, 1, fn, -1, NULL, true, &tools, &err), SL_OK);
    /* qwen3 with thinking off closes an empty think block in the prompt */
    CHECK(on && !strstr(on, "</think>"));
    CHECK(off && strstr(off, "<think>\n\n</think>"));
    CHECK(tools && strstr(tools, "get_time") && strstr(tools, "<tools>"));
    free(on);
    free(off);
    free(tools);
    sl_chat_free(c);

    CHECK_EQ_INT(sl_chat_create(&c, m, "harmony", true, &err), SL_OK);
    if (!c) return;
    char *hi = NULL, *lo = NULL;
    CHECK_EQ_INT(sl_chat_set_effort(c, "high", &err), SL_OK);
    CHECK_EQ_INT(sl_chat_format_turns(c, turns, 1, NULL, -1, NULL, true, &hi, &err), SL_OK);
    CHECK_EQ_INT(sl_chat_format_turns(c, turns, 1, NULL, -1, "low", true, &lo, &err), SL_OK);
    CHECK(hi && strstr(hi, "Reasoning: high"));
    CHECK(lo && strstr(lo, "Reasoning: low"));
    CHECK_EQ_INT(sl_chat_format_turns(c, turns, 1, NULL, -1, "max", true, &on, &err), SL_EINVAL);
    free(hi);
    free(lo);
    sl_chat_free(c);

    /* a thinking answer with a call, streamed in small pieces */
    const char *ans = "<think>why</think>ok<tool_call>\n{\"name\": \"f\", \"arguments\": "
                      "{\"a\": 1}}\n</tool_call>";
    answer_parts parts = {0};
    sl_answer *a = NULL;
    CHECK_EQ_INT(sl_answer_create(&a, false, true, false, true, collect_part, &parts), SL_OK);
    if (!a) return;
    for (size_t i = 0; i < strlen(ans); i += 5)
        sl_answer_feed(a, ans + i, strlen(ans) - i < 5 ? strlen(ans) - i : 5);
    sl_answer_finish(a);
    int n = 0;
    const sl_answer_call *calls = sl_answer_calls(a, &n);
    CHECK_EQ_INT(n, 1);
    CHECK(n == 1 && !strcmp(calls[0].name, "f") && strstr(calls[0].arguments, "\"a\""));
    CHECK(!strcmp(parts.text[1], "why"));
    CHECK(!strcmp(parts.text[0], "ok"));
    sl_answer_free(a);
    sl_answer_text whole;
    a = sl_answer_whole(&whole, false, true, false, true, NULL, ans, strlen(ans));
    CHECK(a && !whole.oom);
    CHECK(whole.p[1] && !strcmp(whole.p[1], "why"));
    if (a) CHECK(sl_answer_calls(a, &n) && n == 1);
    sl_answer_free(a);
    sl_answer_text_free(&whole);

    /* the file's header, as mkmodel wrote it */
    sl_meta_value v;
    CHECK(sl_model_meta_get(m, "general.architecture", &v) && v.kind == SL_META_STRING &&
          !strcmp(v.str, "qwen3moe") && v.len == 8);
    CHECK(!sl_model_meta_get(m, "no.such.key", &v));
    const uint64_t n_kv = sl_model_meta_count(m);
    const char *key = NULL;
    CHECK(n_kv > 10 && sl_model_meta_at(m, 0, &key, &v) && key && key[0]);
    CHECK(!sl_model_meta_at(m, n_kv, &key, &v));
    uint64_t bytes = 0, n_tensors = 0, n_params = 0;
    sl_model_file_totals(m, &bytes, &n_tensors, &n_params);
    CHECK(n_tensors > 10 && n_params > n_tensors && bytes > n_params);
}

int main(void)
{
    g_model = t_load_tiny("qwen3moe", "api-qwen3moe.gguf", false);
    if (!g_model) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    RUN(special_ids);
    RUN(tokenize_round_trip);
    RUN(tokenize_small_buffer);
    RUN(tokenize_special_and_bos);
    RUN(pieces_and_stream);
    RUN(sampler_determinism);
    RUN(sampler_greedy_and_penalty);
    RUN(session_errors);
    RUN(greedy_batch_independent);
    RUN(chat_templates);
    RUN(chat_turns_answers_meta);
    sl_model_free(g_model);
    return TEST_REPORT();
}
