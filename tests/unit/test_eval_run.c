/* test_eval_run.c - the perplexity / KL-divergence procedures
 * (src/eval/eval_run.c) over a fake model whose logits are a closed-form
 * function of the evaluated tokens, so the expected numbers are computed
 * here independently, position by position, from the method's definition:
 * chunk c's logits at position p (p = n_ctx/2 .. n_ctx-2) score token
 * p+1 of that chunk, and position 0 is evaluated as BOS. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "eval/eval_run.h"
#include "test.h"

enum { V = 7, CTX = 8, FIRST = 4, SCORED = 3, NTOK = 37, NCHUNK = 4, BOS = 6 };

/* Fake model: the logits at position p depend on the token there, on the
 * token at position 0 (so evaluating BOS there matters) and on p. `shift`
 * perturbs it into a second, different model. */
static void fake_logits(const int32_t *t, int p, double shift, float *out)
{
    for (int j = 0; j < V; j++)
        out[j] = (float)(((t[p] * 3 + j * 5 + p + t[0] * 2) % 7) * 0.5 - 1.5 +
                         shift * sin(j + p));
}

typedef struct fake_model {
    double shift;
    int chunks_seen;
    int32_t first_token_seen[16]; /* token evaluated at position 0, per chunk */
    int mode;                     /* 0 ok, 1 out of order, 2 skip last, 3 fail in chunk 2,
                                     4 logits of +-1e30 */
} fake_model;

static int fake_eval(void *model, const int32_t *tokens, int32_t n, int32_t first,
                     sl_eval_row_fn row, void *sink, sl_err *err)
{
    fake_model *m = model;
    if (m->chunks_seen < 16) m->first_token_seen[m->chunks_seen] = tokens[0];
    m->chunks_seen++;
    if (m->mode == 3 && m->chunks_seen == 2) return sl_err_set(err, SL_EIO, "fake failure");
    float l[V];
    for (int32_t p = first; p <= n - 2; p++) {
        if (m->mode == 2 && p == n - 2) break;
        int32_t q = (m->mode == 1 && p == first) ? p + 1 : p;
        fake_logits(tokens, q, m->shift, l);
        if (m->mode == 4) /* finite, but far beyond any trained model's spread */
            for (int j = 0; j < V; j++) l[j] = j % 2 ? -1e30f : 1e30f;
        int rc = row(sink, q, l, err);
        if (rc) return rc;
    }
    return SL_OK;
}

static int32_t text[NTOK];

static void make_text(void)
{
    for (int i = 0; i < NTOK; i++) text[i] = (int32_t)((i * 5 + 2) % V);
}

/* Independent expectation: mean NLL over the scored positions. */
static double expected_mean_nll(double shift)
{
    double sum = 0;
    int32_t buf[CTX];
    float l[V];
    for (int c = 0; c < NCHUNK; c++) {
        memcpy(buf, text + c * CTX, sizeof buf);
        buf[0] = BOS;
        for (int p = FIRST; p <= CTX - 2; p++) {
            fake_logits(buf, p, shift, l);
            double mx = -1e30, z = 0;
            for (int j = 0; j < V; j++) mx = l[j] > mx ? l[j] : mx;
            for (int j = 0; j < V; j++) z += exp(l[j] - mx);
            sum += mx + log(z) - l[text[c * CTX + p + 1]];
        }
    }
    return sum / (NCHUNK * SCORED);
}

/* Independent expectation: mean exact KL(A || B) over the scored positions. */
static double expected_mean_kld(double shift_a, double shift_b)
{
    double sum = 0;
    int32_t buf[CTX];
    float a[V], b[V];
    for (int c = 0; c < NCHUNK; c++) {
        memcpy(buf, text + c * CTX, sizeof buf);
        buf[0] = BOS;
        for (int p = FIRST; p <= CTX - 2; p++) {
            fake_logits(buf, p, shift_a, a);
            fake_logits(buf, p, shift_b, b);
            double ma = -1e30, mb = -1e30, za = 0, zb = 0;
            for (int j = 0; j < V; j++) {
                ma = a[j] > ma ? a[j] : ma;
                mb = b[j] > mb ? b[j] : mb;
            }
            for (int j = 0; j < V; j++) {
                za += exp(a[j] - ma);
                zb += exp(b[j] - mb);
            }
            for (int j = 0; j < V; j++) {
                double la = a[j] - ma - log(za), lb = b[j] - mb - log(zb);
                sum += exp(la) * (la - lb);
            }
        }
    }
    return sum / (NCHUNK * SCORED);
}

typedef struct capture {
    char s1[8192], s2[1024];
} capture;

static void cap_out(void *user, int stream, const char *text_)
{
    capture *c = user;
    char *dst = stream == 1 ? c->s1 : c->s2;
    size_t cap = stream == 1 ? sizeof c->s1 : sizeof c->s2;
    strncat(dst, text_, cap - strlen(dst) - 1);
}

TEST(perplexity_scores_the_second_half_with_bos_first)
{
    make_text();
    fake_model m = {0};
    capture cap = {{0}, {0}};
    sl_eval_run r = {V, BOS, fake_eval, &m, cap_out, &cap};
    sl_ppl res;
    sl_err err = {0};
    /* 37 tokens, n_ctx 8: 4 chunks (5 tokens dropped), 3 scored each */
    CHECK_EQ_INT(sl_eval_perplexity(&r, text, NTOK, CTX, 0, NULL, &res, &err), SL_OK);
    CHECK_EQ_INT(res.count, NCHUNK * SCORED);
    CHECK_NEAR(res.nll / (double)res.count, expected_mean_nll(0.0), 1e-9);
    CHECK_EQ_INT(m.chunks_seen, NCHUNK);
    for (int c = 0; c < NCHUNK; c++) CHECK_EQ_INT(m.first_token_seen[c], BOS);
    /* lines: "[1]..,[2]..,[3]..,[4]X," then "\n"; final on stream 2 */
    char want[64];
    snprintf(want, sizeof want, "[4]%.4f,\n", exp(expected_mean_nll(0.0)));
    CHECK_STR_CONTAINS(cap.s1, "[1]");
    CHECK_STR_CONTAINS(cap.s1, want);
    snprintf(want, sizeof want, "Final estimate: PPL = %.4f +/- ", exp(expected_mean_nll(0.0)));
    CHECK_STR_CONTAINS(cap.s2, want);

    /* bos = -1: position 0 keeps the text's token */
    fake_model m2 = {0};
    sl_eval_run r2 = {V, -1, fake_eval, &m2, NULL, NULL};
    CHECK_EQ_INT(sl_eval_perplexity(&r2, text, NTOK, CTX, 2, NULL, &res, &err), SL_OK);
    CHECK_EQ_INT(res.count, 2 * SCORED);
    CHECK_EQ_INT(m2.first_token_seen[1], text[CTX]);
}

TEST(base_file_then_kl_divergence)
{
    make_text();
    char path[512];
    t_path(path, sizeof path, "run.kld");
    fake_model a = {0};
    sl_eval_run ra = {V, BOS, fake_eval, &a, NULL, NULL};
    sl_ppl base_ppl;
    sl_err err = {0};
    CHECK_EQ_INT(sl_eval_perplexity(&ra, text, NTOK, CTX, 0, path, &base_ppl, &err), SL_OK);
    /* the writer's NLL is llama.cpp's float arithmetic: same value to ~1e-6 */
    CHECK_NEAR(base_ppl.nll / (double)base_ppl.count, expected_mean_nll(0.0), 1e-5);

    /* the file holds the original tokens (not the BOS that was evaluated) */
    sl_kld_base b;
    CHECK_EQ_INT(sl_kld_base_open(&b, path, V, &err), SL_OK);
    CHECK_EQ_INT(b.n_chunk, NCHUNK);
    CHECK_EQ_INT(b.n_ctx, CTX);
    for (int i = 0; i < NCHUNK * CTX; i++) CHECK_EQ_INT(b.tokens[i], text[i]);
    sl_kld_base_close(&b);

    /* the same model against its own base: KLD ~ 0 (quantisation only:
     * logits span 3 + 0 nats here, steps 3/65535, error < 3e-5 per
     * log-prob), same top token always, the same PPL */
    fake_model a2 = {0};
    capture cap = {{0}, {0}};
    sl_eval_run ra2 = {V, BOS, fake_eval, &a2, cap_out, &cap};
    sl_kld_stats st;
    CHECK_EQ_INT(sl_eval_kl_divergence(&ra2, path, 0, &st, &err), SL_OK);
    CHECK_EQ_INT(st.count, NCHUNK * SCORED);
    CHECK_NEAR(st.kld.value, 0.0, 1e-4);
    CHECK_NEAR(st.same_top.value, 1.0, 0);
    CHECK_NEAR(log(st.ppl.value), expected_mean_nll(0.0), 1e-9);
    CHECK_NEAR(log(st.ppl_base.value), expected_mean_nll(0.0), 1e-4);
    CHECK_STR_CONTAINS(cap.s1, "chunk             PPL");
    CHECK_STR_CONTAINS(cap.s1, "\n   4 ");
    CHECK_STR_CONTAINS(cap.s1, "====== KL divergence statistics ======");
    CHECK_STR_CONTAINS(cap.s1, "Same top p: 100.000 ± 0.000 %");
    for (int c = 0; c < NCHUNK; c++) CHECK_EQ_INT(a2.first_token_seen[c], BOS);

    /* a different model: the mean KLD is the exact mean KL(A||B) within the
     * quantisation bound */
    fake_model bm = {0.4, 0, {0}, 0};
    sl_eval_run rb = {V, BOS, fake_eval, &bm, NULL, NULL};
    CHECK_EQ_INT(sl_eval_kl_divergence(&rb, path, 0, &st, &err), SL_OK);
    double want = expected_mean_kld(0.0, 0.4);
    CHECK(want > 0.01);
    CHECK_NEAR(st.kld.value, want, 1e-4);
    CHECK_NEAR(log(st.ppl.value), expected_mean_nll(0.4), 1e-9);

    /* --chunks 2 */
    fake_model bm2 = {0.4, 0, {0}, 0};
    rb.model = &bm2;
    CHECK_EQ_INT(sl_eval_kl_divergence(&rb, path, 2, &st, &err), SL_OK);
    CHECK_EQ_INT(st.count, 2 * SCORED);
    CHECK_EQ_INT(bm2.chunks_seen, 2);

    /* a model with another vocabulary size is refused */
    sl_eval_run rv = {V + 1, BOS, fake_eval, &bm2, NULL, NULL};
    CHECK_EQ_INT(sl_eval_kl_divergence(&rv, path, 0, &st, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "n_vocab at offset 12 is 7 but the model's vocabulary has 8");
}

TEST(callback_misbehaviour_and_bad_input_are_errors)
{
    make_text();
    sl_err err = {0};
    sl_ppl res;
    fake_model m1 = {0, 0, {0}, 1};
    sl_eval_run r = {V, BOS, fake_eval, &m1, NULL, NULL};
    CHECK_EQ_INT(sl_eval_perplexity(&r, text, NTOK, CTX, 0, NULL, &res, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "chunk 1: eval callback delivered the logits of position 5, "
                                "expected position 4");
    fake_model m2 = {0, 0, {0}, 2};
    r.model = &m2;
    CHECK_EQ_INT(sl_eval_perplexity(&r, text, NTOK, CTX, 0, NULL, &res, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "delivered 2 of the 3 scored rows");

    /* a failure while writing a base file leaves no file (it is written to
     * a temporary beside the path and renamed only once complete) */
    char path[512];
    t_path(path, sizeof path, "broken.kld");
    fake_model m3 = {0, 0, {0}, 3};
    r.model = &m3;
    CHECK_EQ_INT(sl_eval_perplexity(&r, text, NTOK, CTX, 0, path, &res, &err), SL_EIO);
    CHECK_STR_CONTAINS(err.msg, "chunk 2: fake failure");
    CHECK_STR_CONTAINS(err.msg, "not written");
    sl_kld_base b;
    CHECK_EQ_INT(sl_kld_base_open(&b, path, V, &err), SL_EIO);
    CHECK_STR_CONTAINS(err.msg, "No such file");

    fake_model m4 = {0};
    r.model = &m4;
    int32_t bad[NTOK];
    memcpy(bad, text, sizeof bad);
    bad[9] = V;
    CHECK_EQ_INT(sl_eval_perplexity(&r, bad, NTOK, CTX, 0, NULL, &res, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "token 9 is 7");
    CHECK_EQ_INT(sl_eval_perplexity(&r, text, 15, CTX, 0, NULL, &res, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "at least 16 tokens");
    r.bos = V;
    CHECK_EQ_INT(sl_eval_perplexity(&r, text, NTOK, CTX, 0, NULL, &res, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "BOS id 7");
}

/* Every logit finite (+1e30 at even ids, -1e30 at odd ones), so every NLL
 * is (log 4 for an even target, 2e30 for an odd one), but their mean is
 * beyond exp() from the first odd target on, token 23 = 5 in chunk 3 (the
 * scored targets of chunks 1 and 2 are 6 4 2 and 4 2 0): the perplexity
 * is +inf there, an error naming the chunk, not a printed "PPL = inf". */
TEST(a_perplexity_that_is_not_finite_is_an_error)
{
    make_text();
    sl_err err = {0};
    sl_ppl res;
    fake_model m = {0, 0, {0}, 4};
    capture cap = {{0}, {0}};
    sl_eval_run r = {V, BOS, fake_eval, &m, cap_out, &cap};
    CHECK_EQ_INT(sl_eval_perplexity(&r, text, NTOK, CTX, 0, NULL, &res, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "chunk 3: the perplexity is inf");
    CHECK_STR_CONTAINS(err.msg, "not a usable distribution");
    CHECK(strstr(cap.s2, "Final estimate") == NULL);
    CHECK_EQ_INT(m.chunks_seen, 3);
}

int main(void)
{
    RUN(perplexity_scores_the_second_half_with_bos_first);
    RUN(base_file_then_kl_divergence);
    RUN(callback_misbehaviour_and_bad_input_are_errors);
    RUN(a_perplexity_that_is_not_finite_is_an_error);
    return TEST_REPORT();
}
