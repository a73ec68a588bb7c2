/* test_gen.c - the generation step (sl_gen_*, include/sluice.h) on a
 * generated tiny model, against a hand-written loop of the primitives it
 * stands on (sample, accept, decode, evaluate): the same tokens and text;
 * its two halves driven by sl_session_eval_multi for two replies at once
 * give each reply's tokens; a stop text ends the text just before it and
 * leaves its last token unevaluated; the limit, a cancel, log-probabilities
 * and misuse. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"
#include "synth/synth.h"
#include "test.h"
#include "common/testutil.h"

#define N_GEN 24

static sl_model *g_model;
static const char *PROMPT = "The river comes down from the hills";

/* A session holding the prompt, and a sampler (temp 0.9, seeded) that has
 * seen it. */
static void start(sl_session **s, sl_sampling **smp, bool all_logits)
{
    sl_err err = {0};
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 128;
    sp.all_logits = all_logits;
    *s = NULL;
    *smp = NULL;
    if (sl_session_create(s, g_model, &sp, &err)) return;
    sl_sampling_params p = sl_sampling_default_params();
    p.temp = 0.9f;
    p.seed = 11;
    if (sl_sampling_create(smp, &p, sl_model_n_vocab(g_model), &err)) return;
    int32_t ids[64];
    int n = sl_tokenize(g_model, PROMPT, strlen(PROMPT), ids, 64, 0, &err);
    if (n <= 0 || sl_session_eval(*s, ids, n, &err)) return;
    for (int i = 0; i < n; i++) sl_sampling_accept(*smp, ids[i], &err);
}

static void stop_all(sl_session *s, sl_sampling *smp)
{
    sl_sampling_free(smp);
    sl_session_free(s);
}

/* The reference: N_GEN tokens by hand, no stop. */
static int reference(int32_t *ids, char *text, size_t cap)
{
    sl_session *s;
    sl_sampling *smp;
    sl_err err = {0};
    start(&s, &smp, false);
    sl_detok *d = NULL;
    size_t n_text = 0;
    int n = 0;
    if (!s || !smp || sl_detok_create(&d, g_model, 0, &err)) goto out;
    for (; n < N_GEN; n++) {
        int id = sl_sampling_sample(smp, sl_session_logits(s), &err);
        if (id < 0 || sl_sampling_accept(smp, id, &err)) break;
        ids[n] = id;
        const char *t;
        size_t len;
        if (sl_detok_push(d, id, &t, &len, &err) || n_text + len >= cap) break;
        memcpy(text + n_text, t, len);
        n_text += len;
        if (sl_session_eval(s, &ids[n], 1, &err)) break;
    }
    const char *t;
    size_t len;
    sl_detok_flush(d, &t, &len);
    if (n_text + len < cap) memcpy(text + n_text, t, len), n_text += len;
out:
    text[n_text] = '\0';
    sl_detok_free(d);
    stop_all(s, smp);
    return n;
}

static int32_t g_ref[N_GEN];
static char g_ref_text[4096];
static int g_n_ref;

/* Runs a generator to its end by sl_gen_step; collects ids and text. */
static int run_steps(sl_gen *g, int32_t *ids, int cap, char *text, size_t tcap, sl_gen_event *last)
{
    int n = 0;
    size_t nt = 0;
    sl_err err = {0};
    for (int guard = 0; guard < 1000; guard++) {
        if (sl_gen_step(g, last, &err)) return -1;
        for (int i = 0; i < last->n_ids && n < cap; i++) ids[n++] = last->ids[i];
        if (nt + last->len < tcap) memcpy(text + nt, last->text, last->len), nt += last->len;
        if (last->stop != SL_GEN_GOING) break;
    }
    text[nt] = '\0';
    return n;
}

TEST(steps_match_the_hand_loop)
{
    CHECK_EQ_INT(g_n_ref, N_GEN);
    sl_session *s;
    sl_sampling *smp;
    start(&s, &smp, false);
    CHECK(s && smp);
    if (!s || !smp) return;
    const int n_prompt = sl_session_n_past(s);
    sl_gen_params p = sl_gen_default_params();
    p.sampler = smp;
    p.max_tokens = N_GEN;
    p.ignore_eog = true;
    sl_gen *g = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_gen_create(&g, s, &p, &err), SL_OK);
    int32_t ids[N_GEN + 4];
    char text[4096];
    sl_gen_event ev;
    int n = run_steps(g, ids, N_GEN + 4, text, sizeof text, &ev);
    CHECK_EQ_INT(n, N_GEN);
    CHECK(!memcmp(ids, g_ref, sizeof g_ref));
    CHECK_MSG(!strcmp(text, g_ref_text), "text '%s' vs '%s'", text, g_ref_text);
    CHECK_EQ_INT(ev.stop, SL_GEN_LIMIT);
    CHECK_EQ_INT(ev.n_ids, 0);
    CHECK_EQ_INT(sl_gen_n_taken(g), N_GEN);
    /* the limit is seen after the last token's evaluation */
    CHECK_EQ_INT(sl_session_n_past(s), n_prompt + N_GEN);
    /* after the end: refused */
    CHECK_EQ_INT(sl_gen_next(g, &ev, &err), SL_EINVAL);
    sl_gen_free(g);
    stop_all(s, smp);
}

TEST(halves_batched_for_two_replies)
{
    sl_session *s[2];
    sl_sampling *smp[2];
    sl_gen *g[2] = {NULL, NULL};
    sl_err err = {0};
    for (int k = 0; k < 2; k++) {
        start(&s[k], &smp[k], false);
        CHECK(s[k] && smp[k]);
        if (!s[k] || !smp[k]) return;
        sl_gen_params p = sl_gen_default_params();
        p.sampler = smp[k];
        p.max_tokens = k == 0 ? N_GEN : N_GEN / 2;
        p.ignore_eog = true;
        CHECK_EQ_INT(sl_gen_create(&g[k], s[k], &p, &err), SL_OK);
    }
    sl_session *batch = NULL;
    sl_session_params bp = sl_session_default_params();
    bp.n_ctx = 1;
    bp.all_logits = true;
    bp.n_batch_max = 8;
    CHECK_EQ_INT(sl_session_create(&batch, g_model, &bp, &err), SL_OK);
    int32_t got[2][N_GEN];
    int n[2] = {0, 0};
    bool done[2] = {false, false};
    while (!done[0] || !done[1]) {
        /* the tokens both replies need evaluated, in one pass */
        sl_session *ss[2];
        const int32_t *tk[2];
        int nt[2], count = 0, who[2];
        for (int k = 0; k < 2; k++) {
            if (done[k]) continue;
            const int32_t *ids;
            const int np = sl_gen_pending(g[k], &ids);
            if (np == 0) continue;
            ss[count] = s[k];
            tk[count] = ids;
            nt[count] = np;
            who[count++] = k;
        }
        if (count > 0) {
            CHECK_EQ_INT(sl_session_eval_multi(batch, ss, tk, nt, count, &err), SL_OK);
            for (int i = 0; i < count; i++) sl_gen_evaluated(g[who[i]], nt[i]);
        }
        for (int k = 0; k < 2; k++) {
            if (done[k]) continue;
            sl_gen_event ev;
            if (sl_gen_next(g[k], &ev, &err) != SL_OK) {
                CHECK_MSG(0, "next: %s", err.msg);
                return;
            }
            for (int i = 0; i < ev.n_ids && n[k] < N_GEN; i++) got[k][n[k]++] = ev.ids[i];
            done[k] = ev.stop != SL_GEN_GOING;
        }
    }
    CHECK_EQ_INT(n[0], N_GEN);
    CHECK_EQ_INT(n[1], N_GEN / 2);
    CHECK(!memcmp(got[0], g_ref, sizeof g_ref));
    CHECK(!memcmp(got[1], g_ref, sizeof g_ref / 2));
    for (int k = 0; k < 2; k++) {
        sl_gen_free(g[k]);
        stop_all(s[k], smp[k]);
    }
    sl_session_free(batch);
}

TEST(stop_text_holds_back_and_ends)
{
    /* a stop text from the middle of the reference text (its first
     * occurrence decides) */
    const size_t len = strlen(g_ref_text);
    CHECK(len > 12);
    if (len <= 12) return;
    char stop[8];
    memcpy(stop, g_ref_text + len / 2, 3);
    stop[3] = '\0';
    const char *at = strstr(g_ref_text, stop);
    const size_t want = (size_t)(at - g_ref_text);
    sl_session *s;
    sl_sampling *smp;
    start(&s, &smp, false);
    if (!s || !smp) return;
    const int n_prompt = sl_session_n_past(s);
    const char *stops[] = {"\x01never", stop, NULL};
    sl_gen_params p = sl_gen_default_params();
    p.sampler = smp;
    p.max_tokens = N_GEN;
    p.ignore_eog = true;
    p.stop_texts = stops;
    sl_gen *g = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_gen_create(&g, s, &p, &err), SL_OK);
    int32_t ids[N_GEN];
    char text[4096];
    sl_gen_event ev;
    int n = run_steps(g, ids, N_GEN, text, sizeof text, &ev);
    CHECK_EQ_INT(ev.stop, SL_GEN_STOP_TEXT);
    CHECK_EQ_INT(ev.stop_text, 1);
    CHECK_EQ_INT((int)strlen(text), (int)want);
    CHECK(!strncmp(text, g_ref_text, want));
    CHECK(n >= 1 && !memcmp(ids, g_ref, (size_t)n * sizeof *ids));
    /* the stop text's last token is taken, not evaluated */
    CHECK_EQ_INT(sl_session_n_past(s), n_prompt + n - 1);
    sl_gen_free(g);
    stop_all(s, smp);
}

TEST(logprobs_cancel_and_misuse)
{
    sl_session *s;
    sl_sampling *smp;
    start(&s, &smp, false);
    if (!s || !smp) return;
    const int n_prompt = sl_session_n_past(s);
    sl_err err = {0};
    sl_gen *g = NULL;
    sl_gen_params p = sl_gen_default_params();
    CHECK_EQ_INT(sl_gen_create(&g, s, &p, &err), SL_EINVAL); /* no sampler */
    p.sampler = smp;
    p.logprobs = 21;
    CHECK_EQ_INT(sl_gen_create(&g, s, &p, &err), SL_EINVAL);
    const char *too_long[] = {"0123456789012345678901234567890123456789012345678901234567890123456789",
                              NULL};
    p.logprobs = 3;
    p.stop_texts = too_long;
    CHECK_EQ_INT(sl_gen_create(&g, s, &p, &err), SL_EINVAL);
    CHECK(g == NULL);
    p.stop_texts = NULL;
    p.ignore_eog = true;
    CHECK_EQ_INT(sl_gen_create(&g, s, &p, &err), SL_OK);
    sl_gen_event ev;
    CHECK_EQ_INT(sl_gen_step(g, &ev, &err), SL_OK);
    CHECK_EQ_INT(ev.n_ids, 1);
    CHECK(ev.logprobs != NULL);
    if (ev.logprobs) {
        const sl_gen_logprob *l = &ev.logprobs[0];
        CHECK_EQ_INT(l->id, ev.ids[0]);
        CHECK_EQ_INT(l->n_top, 3);
        CHECK(l->lp <= 0 && l->top_lp[0] <= 0);
        CHECK(l->top_lp[0] >= l->lp && l->top_lp[0] >= l->top_lp[1] &&
              l->top_lp[1] >= l->top_lp[2]);
        /* the figures sum to at most 1 */
        CHECK(expf(l->top_lp[0]) + expf(l->top_lp[1]) + expf(l->top_lp[2]) <= 1.0f + 1e-5f);
    }
    /* a token pending: next is refused until it is evaluated */
    const int32_t *pend;
    CHECK_EQ_INT(sl_gen_pending(g, &pend), 1);
    CHECK_EQ_INT(sl_gen_next(g, &ev, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_gen_step(g, &ev, &err), SL_OK);
    CHECK_EQ_INT(ev.stop, SL_GEN_GOING);
    sl_gen_cancel(g);
    CHECK_EQ_INT(sl_gen_step(g, &ev, &err), SL_OK);
    CHECK_EQ_INT(ev.stop, SL_GEN_CANCELLED);
    CHECK_EQ_INT(ev.n_ids, 0);
    /* both taken tokens were evaluated before the cancel showed */
    CHECK_EQ_INT(sl_session_n_past(s), n_prompt + 2);
    sl_gen_free(g);
    stop_all(s, smp);
}

int main(void)
{
    g_model = t_load_tiny("qwen3moe", "gen-qwen3moe.gguf", false);
    if (!g_model) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    g_n_ref = reference(g_ref, g_ref_text, sizeof g_ref_text);
    RUN(steps_match_the_hand_loop);
    RUN(halves_batched_for_two_replies);
    RUN(stop_text_holds_back_and_ends);
    RUN(logprobs_cancel_and_misuse);
    sl_model_free(g_model);
    return TEST_REPORT();
}
