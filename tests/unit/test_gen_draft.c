/* test_gen_draft.c - drafting in the generation step (sl_gen_params.draft,
 * include/sluice.h) on generated tiny models: with prompt lookup on, a
 * reply is the same tokens, text, log-probabilities (bits), stop and final
 * session position as without, greedy and sampled, with the draft capped
 * by the session's logit rows, and when a stop text ends it anywhere; a
 * repeating prompt gets drafts accepted; the refusals (drafts evaluated in
 * two batches, draft_max out of range) and drafting off with its reason (a
 * session keeping one logit row, a model with recurrent layers); with
 * speculative sampling (draft_sampling) the greedy reply is the plain one
 * and a sampled reply is the same whatever was drafted; the drafting policy
 * a session's replies share carries over from one reply to the next and
 * starts afresh for another draft_max. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/session.h"
#include "engine/spec_policy.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"
#include "common/testutil.h"

#define N_GEN 32
#define ROWS 9

static sl_model *g_model, *g_gemma, *g_recurrent;
static const char *PROMPT = "The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The cat";

typedef struct reply {
    int32_t ids[N_GEN + 4];
    float lp[N_GEN + 4];
    int n;
    char text[4096];
    sl_gen_stop stop;
    int n_past;
    sl_gen_draft_stats st;
    int rc;
} reply;

/* One reply on a fresh session of m (rows of logits kept) holding the
 * prompt: temp 0 or 0.9 (seeded), drafting as asked, an optional stop text. */
static bool g_spec_sampling; /* generate()'s draft_sampling */
static bool g_by_cost;       /* generate() drafts only when it pays (not draft_always) */

static void generate(reply *r, sl_model *m, int rows, float temp, bool draft, int draft_max,
                     const char *stop)
{
    memset(r, 0, sizeof *r);
    r->rc = -1;
    sl_err err = {0};
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 256;
    sp.n_logit_rows = rows;
    sl_session *s = NULL;
    sl_sampling *smp = NULL;
    sl_gen *g = NULL;
    int32_t ids[128];
    int n = sl_tokenize(m, PROMPT, strlen(PROMPT), ids, 128, 0, &err);
    sl_sampling_params p = sl_sampling_default_params();
    p.temp = temp;
    p.seed = 11;
    if (n <= 0 || sl_session_create(&s, m, &sp, &err) ||
        sl_sampling_create(&smp, &p, sl_model_n_vocab(m), &err) ||
        sl_session_eval(s, ids, n, &err))
        goto out;
    for (int i = 0; i < n; i++) sl_sampling_accept(smp, ids[i], &err);
    const char *stops[2] = {stop, NULL};
    sl_gen_params gp = sl_gen_default_params();
    gp.sampler = smp;
    gp.max_tokens = N_GEN;
    gp.ignore_eog = true;
    gp.logprobs = 2;
    gp.stop_texts = stop ? stops : NULL;
    if (draft) {
        gp.draft = SL_GEN_DRAFT_NGRAM;
        gp.draft_max = draft_max;
        gp.draft_always = !g_by_cost; /* every guess verified: the exactness under test */
        gp.draft_sampling = g_spec_sampling;
        gp.context = ids;
        gp.n_context = n;
    }
    if ((r->rc = sl_gen_create(&g, s, &gp, &err))) goto out;
    size_t nt = 0;
    sl_gen_event ev;
    for (int guard = 0; guard < 1000; guard++) {
        if ((r->rc = sl_gen_step(g, &ev, &err))) break;
        for (int i = 0; i < ev.n_ids && r->n < N_GEN + 4; i++) {
            r->lp[r->n] = ev.logprobs[i].lp;
            r->ids[r->n++] = ev.ids[i];
        }
        if (nt + ev.len < sizeof r->text) memcpy(r->text + nt, ev.text, ev.len), nt += ev.len;
        if (ev.stop != SL_GEN_GOING) break;
    }
    r->text[nt] = '\0';
    r->stop = ev.stop;
    r->n_past = sl_session_n_past(s);
    sl_gen_draft_stats_get(g, &r->st);
out:
    sl_gen_free(g);
    sl_sampling_free(smp);
    sl_session_free(s);
}

static bool same_reply(const reply *a, const reply *b)
{
    return a->rc == SL_OK && b->rc == SL_OK && a->n == b->n &&
           !memcmp(a->ids, b->ids, (size_t)a->n * sizeof a->ids[0]) &&
           !memcmp(a->lp, b->lp, (size_t)a->n * sizeof a->lp[0]) && !strcmp(a->text, b->text) &&
           a->stop == b->stop && a->n_past == b->n_past;
}

TEST(greedy_and_sampled_replies_unchanged)
{
    static reply plain, drafted;
    sl_model *ms[2] = {g_model, g_gemma};
    long sampled_drafted = 0;
    for (int k = 0; k < 2; k++) {
        for (int t = 0; t < 2; t++) {
            const float temp = t ? 0.9f : 0.0f;
            generate(&plain, ms[k], 1, temp, false, 0, NULL);
            generate(&drafted, ms[k], ROWS, temp, true, ROWS - 1, NULL);
            CHECK_EQ_INT(plain.n, N_GEN);
            CHECK_MSG(same_reply(&plain, &drafted), "model %d temp %.1f: '%s' vs '%s'", k,
                      (double)temp, plain.text, drafted.text);
            CHECK(drafted.st.off == NULL);
            sampled_drafted += t ? drafted.st.drafted : 0;
            CHECK(drafted.st.accepted <= drafted.st.drafted);
            /* each verify step evaluates the taken token and its drafts at once */
            CHECK(drafted.st.steps <= N_GEN - drafted.st.accepted);
            if (temp == 0.0f) CHECK_MSG(drafted.st.accepted > 0, "model %d: none accepted", k);
        }
    }
    /* sampled text rarely repeats, but some drafts were checked against it */
    CHECK(sampled_drafted > 0);
}

TEST(draft_capped_by_the_rows)
{
    static reply plain, drafted;
    generate(&plain, g_model, 1, 0.0f, false, 0, NULL);
    generate(&drafted, g_model, 3, 0.0f, true, 16, NULL);
    CHECK(same_reply(&plain, &drafted));
    CHECK(drafted.st.verify_steps > 0);
    CHECK(drafted.st.drafted <= 2 * drafted.st.verify_steps);
}

TEST(stop_text_anywhere)
{
    static reply ref, plain, drafted;
    generate(&ref, g_model, 1, 0.0f, false, 0, NULL);
    int tried = 0;
    for (int i = 1; i < ref.n; i++) {
        /* each token's text as the stop text: the reply ends at its first appearance */
        size_t len;
        const char *piece = sl_token_piece(g_model, ref.ids[i], false, &len);
        if (!piece || len == 0 || len > 32) continue;
        char stop[40];
        memcpy(stop, piece, len);
        stop[len] = '\0';
        generate(&plain, g_model, 1, 0.0f, false, 0, stop);
        generate(&drafted, g_model, ROWS, 0.0f, true, ROWS - 1, stop);
        CHECK_MSG(same_reply(&plain, &drafted), "stop '%s': %d tokens at %d vs %d at %d", stop,
                  plain.n, plain.n_past, drafted.n, drafted.n_past);
        tried++;
    }
    CHECK(tried > 4);
}

TEST(refusals_and_off)
{
    sl_err err = {0};
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 256;
    sp.n_logit_rows = ROWS;
    sl_session *s = NULL;
    sl_sampling *smp = NULL;
    sl_sampling_params p = sl_sampling_default_params();
    p.temp = 0;
    int32_t ids[128];
    const int n = sl_tokenize(g_model, PROMPT, strlen(PROMPT), ids, 128, 0, &err);
    CHECK(n > 0);
    CHECK_EQ_INT(sl_session_create(&s, g_model, &sp, &err), SL_OK);
    CHECK_EQ_INT(sl_sampling_create(&smp, &p, sl_model_n_vocab(g_model), &err), SL_OK);
    if (!s || !smp || n <= 0) goto out;
    CHECK_EQ_INT(sl_session_eval(s, ids, n, &err), SL_OK);
    sl_gen_params gp = sl_gen_default_params();
    gp.sampler = smp;
    gp.draft = SL_GEN_DRAFT_NGRAM;
    gp.draft_always = true; /* drafts whatever the step times (a loaded machine's) */
    gp.context = ids;
    gp.n_context = n;
    sl_gen *g = NULL;
    gp.draft_max = SL_GEN_MAX_DRAFT + 1;
    CHECK_EQ_INT(sl_gen_create(&g, s, &gp, &err), SL_EINVAL);
    CHECK(g == NULL);
    gp.draft_max = ROWS - 1;
    CHECK_EQ_INT(sl_gen_create(&g, s, &gp, &err), SL_OK);
    if (!g) goto out;
    /* step until drafts are pending, then evaluate them in two batches */
    sl_gen_event ev;
    const int32_t *pend = NULL;
    int np = 0;
    for (int i = 0; i < 64 && np < 2; i++) {
        if (sl_gen_next(g, &ev, &err) || ev.stop != SL_GEN_GOING) break;
        np = sl_gen_pending(g, &pend);
        if (np == 1) {
            sl_session_eval(s, pend, 1, &err);
            sl_gen_evaluated(g, 1);
        }
    }
    CHECK_MSG(np >= 2, "no drafts pending");
    if (np >= 2) {
        int32_t copy[SL_GEN_MAX_DRAFT + 1];
        memcpy(copy, pend, (size_t)np * sizeof *copy);
        CHECK_EQ_INT(sl_session_eval(s, copy, 1, &err), SL_OK);
        sl_gen_evaluated(g, 1);
        CHECK_EQ_INT(sl_session_eval(s, copy + 1, np - 1, &err), SL_OK);
        sl_gen_evaluated(g, np - 1);
        CHECK_EQ_INT(sl_gen_next(g, &ev, &err), SL_EINVAL);
        CHECK_STR_CONTAINS(err.msg, "one batch");
    }
    sl_gen_free(g);
out:
    sl_sampling_free(smp);
    sl_session_free(s);
    /* one logit row: drafting off, with the reason; the reply as without */
    static reply plain, one_row, rec;
    generate(&plain, g_model, 1, 0.0f, false, 0, NULL);
    generate(&one_row, g_model, 1, 0.0f, true, 8, NULL);
    CHECK(same_reply(&plain, &one_row));
    CHECK(one_row.st.off && strstr(one_row.st.off, "one row of logits"));
    CHECK_EQ_INT(one_row.st.drafted, 0);
    if (g_recurrent) {
        generate(&rec, g_recurrent, ROWS, 0.0f, true, ROWS - 1, NULL);
        CHECK_EQ_INT(rec.rc, SL_OK);
        CHECK(rec.st.off && strstr(rec.st.off, "recurrent"));
        CHECK_EQ_INT(rec.st.drafted, 0);
        CHECK_EQ_INT(rec.n, N_GEN);
    }
}

TEST(spec_sampling_follows_the_tokens_not_the_drafts)
{
    static reply plain, a, b, c, d;
    g_spec_sampling = true;
    /* greedy: the plain reply */
    generate(&plain, g_model, ROWS, 0.0f, false, 0, NULL);
    generate(&a, g_model, ROWS, 0.0f, true, ROWS - 1, NULL);
    CHECK(same_reply(&plain, &a));
    /* sampled: the same reply whatever is drafted (long drafts, one at a
     * time, only when it pays), and again with the same seed */
    generate(&a, g_model, ROWS, 0.9f, true, ROWS - 1, NULL);
    generate(&b, g_model, ROWS, 0.9f, true, 1, NULL);
    g_by_cost = true;
    generate(&c, g_model, ROWS, 0.9f, true, ROWS - 1, NULL);
    g_by_cost = false;
    generate(&d, g_model, ROWS, 0.9f, true, ROWS - 1, NULL);
    CHECK(a.rc == SL_OK && a.n == N_GEN);
    CHECK(a.st.drafted > 0 && b.st.drafted > 0);
    /* the schedules differ */
    CHECK_MSG(a.st.drafted != b.st.drafted || a.st.steps != b.st.steps,
              "%ld/%ld drafted, %ld/%ld steps", a.st.drafted, b.st.drafted, a.st.steps,
              b.st.steps);
    CHECK(same_reply(&a, &b));
    CHECK(same_reply(&a, &c));
    CHECK(same_reply(&a, &d));
    g_spec_sampling = false;
}

/* Steps the policy of s has measured (plain and verify). */
static int measured(const sl_session *s)
{
    int n = s->spec->n_plain;
    for (int k = 0; k <= SL_SPEC_MAX; k++) n += s->spec->n_verify[k];
    return n;
}

/* One greedy reply of N_GEN tokens on s, drafting by cost. */
static int reply_on(sl_session *s, sl_sampling *smp, int draft_max)
{
    sl_err err = {0};
    sl_gen_params gp = sl_gen_default_params();
    gp.sampler = smp;
    gp.max_tokens = N_GEN;
    gp.ignore_eog = true;
    gp.draft = SL_GEN_DRAFT_NGRAM;
    gp.draft_max = draft_max;
    sl_gen *g = NULL;
    int rc = sl_gen_create(&g, s, &gp, &err);
    sl_gen_event ev;
    for (int guard = 0; rc == SL_OK && guard < 1000; guard++)
        if ((rc = sl_gen_step(g, &ev, &err)) || ev.stop != SL_GEN_GOING) break;
    sl_gen_free(g);
    return rc;
}

TEST(policy_kept_across_replies)
{
    sl_err err = {0};
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 256;
    sp.n_logit_rows = ROWS;
    sl_session *s = NULL;
    sl_sampling *smp = NULL;
    int32_t ids[128];
    const int n = sl_tokenize(g_model, PROMPT, strlen(PROMPT), ids, 128, 0, &err);
    sl_sampling_params p = sl_sampling_default_params();
    p.temp = 0;
    CHECK(n > 0);
    CHECK_EQ_INT(sl_session_create(&s, g_model, &sp, &err), SL_OK);
    CHECK_EQ_INT(sl_sampling_create(&smp, &p, sl_model_n_vocab(g_model), &err), SL_OK);
    CHECK_EQ_INT(sl_session_eval(s, ids, n, &err), SL_OK);
    CHECK_EQ_INT(reply_on(s, smp, ROWS - 1), SL_OK);
    CHECK(s->spec != NULL);
    const int m1 = measured(s);
    CHECK(m1 > 0 && m1 <= N_GEN);
    CHECK_EQ_INT(reply_on(s, smp, ROWS - 1), SL_OK); /* the same drafter: carried over */
    const int m2 = measured(s);
    CHECK_MSG(m2 > m1 && m2 <= 2 * N_GEN, "%d then %d steps measured", m1, m2);
    CHECK_EQ_INT(reply_on(s, smp, ROWS - 2), SL_OK); /* another maximum: afresh */
    const int m3 = measured(s);
    CHECK_MSG(m3 > 0 && m3 <= N_GEN, "%d steps measured after a new maximum", m3);
    sl_sampling_free(smp);
    sl_session_free(s);
}

int main(void)
{
    g_model = t_load_tiny("qwen3moe", "gen-draft-qwen3moe.gguf", true);
    g_gemma = t_load_tiny("gemma4", "gen-draft-gemma4.gguf", true);
    g_recurrent = t_load_tiny("qwen35moe", "gen-draft-qwen35moe.gguf", true);
    if (!g_model || !g_gemma || !g_recurrent) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    RUN(greedy_and_sampled_replies_unchanged);
    RUN(draft_capped_by_the_rows);
    RUN(stop_text_anywhere);
    RUN(refusals_and_off);
    RUN(spec_sampling_follows_the_tokens_not_the_drafts);
    RUN(policy_kept_across_replies);
    sl_model_free(g_model);
    sl_model_free(g_gemma);
    sl_model_free(g_recurrent);
    return TEST_REPORT();
}
