/* test_draft_mtp.c - the MTP drafter (engine/draft_mtp.c) on the trained
 * glm4moe (tests/data/trained: one trained nextn block, blk.6):
 * - its guesses and logits against a plain twin of the block written here
 *   from the rules (ARCHITECTURE.md "MTP blocks": eh_proj over
 *   [enorm(embedding of the next token) ; hnorm(the main model's last
 *   hidden state)], the glm4moe decoder layer with its own attention cache
 *   over every earlier position, shared_head_norm, the output head; further
 *   guesses chained on the block's own output), fed the engine's hidden rows
 *   (the main pass is checked against llama.cpp elsewhere);
 * - the same guesses, bit for bit, whether the prompt came in one batch or
 *   token by token (the block's cache rows do not depend on the split);
 * - the same with one block loaded once for several drafters;
 * - a model without an MTP block is refused in one line;
 * - the memory planned for it (sl_draft_plan_bytes): the block's weights as
 *   loaded, and for each session at least what a session of the block
 *   lays out; the plan of the model reports what it was given. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/ref_math.h"
#include "common/testutil.h"
#include "engine/draft.h"
#include "engine/session.h"
#include "gguf/gguf.h"
#include "test.h"

#define FILE_F32 "tests/data/trained/glm4moe-stories-f32.gguf"
#define NP 8     /* prompt tokens */
#define NG 3     /* guesses */
#define MAXR (NP + NG)

/* ---- the twin: the block from the file's tensors, textbook loops ---- */

typedef struct twin {
    int E, H, HK, D, rot, X, K, F, FS, V;
    float eps, base, wscale;
    bool renorm;
    ref_w emb, eh, enorm, hnorm, hdnorm, out, an, wq, wk, wv, wo, bq, bk, bv, fnorm, router,
        bias, gx, ux, dx, gs, us, ds;
} twin;

static bool rd(sl_gguf *g, const char *name, ref_w *w)
{
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
    return t && ref_w_read(g, t, w) == 0;
}

static int u32(sl_gguf *g, const char *k)
{
    uint32_t v = 0;
    return sl_gguf_get_u32(g, k, &v) ? (int)v : -1;
}

static bool twin_load(twin *t, const char *path)
{
    sl_gguf *g;
    sl_err err;
    if (sl_gguf_open(&g, path, &err)) return false;
    memset(t, 0, sizeof *t);
    t->E = u32(g, "glm4moe.embedding_length");
    t->H = u32(g, "glm4moe.attention.head_count");
    t->HK = u32(g, "glm4moe.attention.head_count_kv");
    t->D = u32(g, "glm4moe.attention.key_length");
    t->rot = u32(g, "glm4moe.rope.dimension_count");
    t->X = u32(g, "glm4moe.expert_count");
    t->K = u32(g, "glm4moe.expert_used_count");
    t->F = u32(g, "glm4moe.expert_feed_forward_length");
    t->FS = t->F * u32(g, "glm4moe.expert_shared_count");
    sl_gguf_get_f32(g, "glm4moe.attention.layer_norm_rms_epsilon", &t->eps);
    sl_gguf_get_f32(g, "glm4moe.rope.freq_base", &t->base);
    sl_gguf_get_f32(g, "glm4moe.expert_weights_scale", &t->wscale);
    sl_gguf_get_bool(g, "glm4moe.expert_weights_norm", &t->renorm);
    bool ok = u32(g, "glm4moe.block_count") == 7 && u32(g, "glm4moe.nextn_predict_layers") == 1 &&
              rd(g, "token_embd.weight", &t->emb) && rd(g, "output.weight", &t->out) &&
              rd(g, "blk.6.nextn.eh_proj.weight", &t->eh) &&
              rd(g, "blk.6.nextn.enorm.weight", &t->enorm) &&
              rd(g, "blk.6.nextn.hnorm.weight", &t->hnorm) &&
              rd(g, "blk.6.nextn.shared_head_norm.weight", &t->hdnorm) &&
              rd(g, "blk.6.attn_norm.weight", &t->an) && rd(g, "blk.6.attn_q.weight", &t->wq) &&
              rd(g, "blk.6.attn_k.weight", &t->wk) && rd(g, "blk.6.attn_v.weight", &t->wv) &&
              rd(g, "blk.6.attn_output.weight", &t->wo) && rd(g, "blk.6.attn_q.bias", &t->bq) &&
              rd(g, "blk.6.attn_k.bias", &t->bk) && rd(g, "blk.6.attn_v.bias", &t->bv) &&
              rd(g, "blk.6.post_attention_norm.weight", &t->fnorm) &&
              rd(g, "blk.6.ffn_gate_inp.weight", &t->router) &&
              rd(g, "blk.6.exp_probs_b.bias", &t->bias) &&
              rd(g, "blk.6.ffn_gate_exps.weight", &t->gx) &&
              rd(g, "blk.6.ffn_up_exps.weight", &t->ux) &&
              rd(g, "blk.6.ffn_down_exps.weight", &t->dx) &&
              rd(g, "blk.6.ffn_gate_shexp.weight", &t->gs) &&
              rd(g, "blk.6.ffn_up_shexp.weight", &t->us) &&
              rd(g, "blk.6.ffn_down_shexp.weight", &t->ds) &&
              !sl_gguf_find_tensor(g, "blk.6.attn_q_norm.weight");
    t->V = (int)t->emb.ne[1];
    sl_gguf_close(g);
    return ok;
}

static void twin_free(twin *t)
{
    ref_w *w = &t->emb;
    for (ref_w *e = w; e <= &t->ds; e++) free(e->w);
}

static void mv(float *y, const ref_w *w, size_t off, const float *x, int rows, int cols)
{
    ref_matvec(y, w->w + off, w->act_type, x, rows, cols);
}

/* SwiGLU of one expert (or the shared one) at offset off, added times w */
static void expert(float *acc, const twin *t, const ref_w *g, const ref_w *u, const ref_w *d,
                   size_t off_gu, size_t off_d, int F, const float *x, double w)
{
    float a[256], b[256], y[256];
    mv(a, g, off_gu, x, F, t->E);
    mv(b, u, off_gu, x, F, t->E);
    for (int i = 0; i < F; i++) a[i] = ref_silu(a[i]) * b[i];
    mv(y, d, off_d, a, t->E, F);
    for (int i = 0; i < t->E; i++) acc[i] += (float)(w * y[i]);
}

/* NeoX rope of the first rot dims at position p */
static void rope(float *v, int rot, int p, float base)
{
    for (int i = 0; i < rot / 2; i++) {
        const double th = p * pow(base, -2.0 * i / rot), c = cos(th), s = sin(th);
        const double a = v[i], b = v[i + rot / 2];
        v[i] = (float)(a * c - b * s);
        v[i + rot / 2] = (float)(a * s + b * c);
    }
}

/* Rows 0..n of the block: row p reads token tok[p] and hidden hid[p], or
 * (hid[p] NULL) row p - 1's output. logits (n, V). */
static void twin_run(const twin *t, const int32_t *tok, const float *const *hid, int n,
                     float *logits)
{
    enum { EM = 64, QM = 64, KM = 32, RM = MAXR };
    const int E = t->E, D = t->D, qd = t->H * D, kd = t->HK * D;
    static float kc[RM][KM], vc[RM][KM], xs[RM][EM];
    float cat[2 * EM], x[EM], xb[EM], q[QM], att[QM], o[EM], acc[EM], r[16], sel[16];
    for (int p = 0; p < n; p++) {
        const float *h = hid[p] ? hid[p] : xs[p - 1];
        ref_rmsnorm(cat, t->emb.w + (size_t)tok[p] * E, t->enorm.w, E, t->eps);
        ref_rmsnorm(cat + E, h, t->hnorm.w, E, t->eps);
        mv(x, &t->eh, 0, cat, E, 2 * E);
        ref_rmsnorm(xb, x, t->an.w, E, t->eps);
        mv(q, &t->wq, 0, xb, qd, E);
        mv(kc[p], &t->wk, 0, xb, kd, E);
        mv(vc[p], &t->wv, 0, xb, kd, E);
        for (int i = 0; i < qd; i++) q[i] += t->bq.w[i];
        for (int i = 0; i < kd; i++) kc[p][i] += t->bk.w[i], vc[p][i] += t->bv.w[i];
        for (int hh = 0; hh < t->H; hh++) rope(q + hh * D, t->rot, p, t->base);
        for (int hh = 0; hh < t->HK; hh++) rope(kc[p] + hh * D, t->rot, p, t->base);
        for (int hh = 0; hh < t->H; hh++) {
            const int kh = hh / (t->H / t->HK);
            double sc[RM], mx = -1e300, sum = 0;
            for (int j = 0; j <= p; j++) {
                double d = 0;
                for (int i = 0; i < D; i++) d += (double)q[hh * D + i] * kc[j][kh * D + i];
                sc[j] = d / sqrt((double)D);
                if (sc[j] > mx) mx = sc[j];
            }
            for (int j = 0; j <= p; j++) sum += exp(sc[j] - mx);
            for (int i = 0; i < D; i++) {
                double a = 0;
                for (int j = 0; j <= p; j++) a += exp(sc[j] - mx) / sum * vc[j][kh * D + i];
                att[hh * D + i] = (float)a;
            }
        }
        mv(o, &t->wo, 0, att, E, qd);
        for (int i = 0; i < E; i++) x[i] += o[i];
        /* routed experts: sigmoid scores, the selection bias for the choice
         * only, top-k, renormalised and scaled; the shared expert ungated */
        ref_rmsnorm(xb, x, t->fnorm.w, E, t->eps);
        mv(r, &t->router, 0, xb, t->X, E);
        for (int e = 0; e < t->X; e++) {
            r[e] = 1.0f / (1.0f + expf(-r[e]));
            sel[e] = r[e] + t->bias.w[e];
        }
        int ch[16];
        double wsum = 0;
        for (int k = 0; k < t->K; k++) {
            int best = -1;
            for (int e = 0; e < t->X; e++) {
                bool used = false;
                for (int j = 0; j < k; j++) used |= ch[j] == e;
                if (!used && (best < 0 || sel[e] > sel[best])) best = e;
            }
            ch[k] = best;
            wsum += r[best];
        }
        memset(acc, 0, sizeof acc);
        for (int k = 0; k < t->K; k++) {
            double w = r[ch[k]];
            if (t->renorm) w /= wsum;
            if (t->wscale != 0.0f) w *= t->wscale;
            expert(acc, t, &t->gx, &t->ux, &t->dx, (size_t)ch[k] * t->F * E,
                   (size_t)ch[k] * t->F * E, t->F, xb, w);
        }
        expert(acc, t, &t->gs, &t->us, &t->ds, 0, 0, t->FS, xb, 1.0);
        for (int i = 0; i < E; i++) x[i] += acc[i];
        memcpy(xs[p], x, sizeof(float) * E);
        ref_rmsnorm(xb, x, t->hdnorm.w, E, t->eps);
        mv(logits + (size_t)p * t->V, &t->out, 0, xb, t->V, E);
    }
}

/* ---- the engine side ---- */

typedef struct capture {
    int (*inner)(void *, sl_session *, const int32_t *, int, sl_err *);
    void *inner_ud;
    float h[MAXR][64];
} capture;

/* The target's hidden rows by position, then the drafter's own hook. */
static int capture_hidden(void *ud, sl_session *s, const int32_t *tokens, int n, sl_err *err)
{
    capture *c = ud;
    for (int i = 0; i < n && s->n_past + i < MAXR; i++)
        memcpy(c->h[s->n_past + i], s->x + (size_t)i * s->m->hp.n_embd, sizeof c->h[0]);
    return c->inner(c->inner_ud, s, tokens, n, err);
}

static int32_t argmax(const float *x, int n)
{
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

typedef struct run {
    int32_t tok[NP + 1];  /* the prompt and the greedy token after it */
    int32_t guess[NG];
    float logits[512];    /* of the last guess */
    int n_guess;
} run;

/* The prompt (BOS and the model's greedy text) evaluated in batches of
 * `batch`, the greedy token after it, then NG guesses. */
static bool drive_on(sl_model *m, sl_model *block, int batch, run *r, capture *cap)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = 16;
    sl_session *s = NULL;
    sl_draft_src *d = NULL;
    sl_err err = {0};
    bool ok = sl_session_create(&s, m, &sp, &err) == 0 &&
              (block ? sl_draft_mtp_create_on(&d, s, block, &err)
                     : sl_draft_mtp_create(&d, s, NULL, &err)) == 0;
    CHECK_MSG(ok, "%s", err.msg);
    if (!ok) goto done;
    if (cap) {
        cap->inner = s->on_hidden;
        cap->inner_ud = s->on_hidden_ud;
        s->on_hidden = capture_hidden;
        s->on_hidden_ud = cap;
    }
    /* the prompt: BOS, then the model's own greedy tokens (one batch each
     * to find them, on a scratch session) */
    r->tok[0] = 1;
    {
        sl_session *g = NULL;
        ok = sl_session_create(&g, m, &sp, &err) == 0;
        for (int i = 0; ok && i < NP; i++) {
            ok = sl_session_eval(g, &r->tok[i], 1, &err) == 0;
            if (ok) r->tok[i + 1] = argmax(sl_session_logits(g), sl_model_n_vocab(m));
        }
        sl_session_free(g);
    }
    for (int i = 0; ok && i < NP; i += batch) {
        const int k = NP - i < batch ? NP - i : batch;
        ok = sl_session_eval(s, r->tok + i, k, &err) == 0;
    }
    CHECK_MSG(ok, "%s", err.msg);
    if (ok) {
        sl_drafter dr = {.kind = SL_DRAFT_SRC, .src = d};
        r->n_guess = sl_draft_propose(&dr, r->tok, NP + 1, r->guess, NG);
        memcpy(r->logits, sl_draft_mtp_logits(d), sizeof r->logits);
    }
done:
    sl_draft_src_free(d);
    sl_session_free(s);
    return ok;
}

/* drive_on with a block of the drafter's own. */
static bool drive(sl_model *m, int batch, run *r, capture *cap)
{
    return drive_on(m, NULL, batch, r, cap);
}

TEST(mtp_guesses_match_the_twin)
{
    sl_model *m = t_load_resident(FILE_F32, 2);
    CHECK(m != NULL);
    if (!m) return;
    CHECK_EQ_INT(m->hp.n_nextn, 1);
    static capture cap;
    run r;
    if (drive(m, NP, &r, &cap)) {
        CHECK_EQ_INT(r.n_guess, NG);
        twin t;
        const bool ok = twin_load(&t, FILE_F32);
        CHECK(ok);
        if (ok && t.E == 64 && t.V == 512) {
            /* rows 0 .. NP - 1: the target's hidden row p and token p + 1;
             * then the chained guesses */
            int32_t tok[MAXR];
            const float *hid[MAXR];
            for (int p = 0; p < NP; p++) {
                tok[p] = r.tok[p + 1];
                hid[p] = cap.h[p];
            }
            for (int k = 1; k < NG; k++) {
                tok[NP - 1 + k] = r.guess[k - 1];
                hid[NP - 1 + k] = NULL;
            }
            const int n = NP - 1 + NG;
            float *lg = malloc(sizeof(float) * (size_t)n * t.V);
            twin_run(&t, tok, hid, n, lg);
            for (int k = 0; k < NG; k++) {
                const float *row = lg + (size_t)(NP - 1 + k) * t.V;
                CHECK_MSG(argmax(row, t.V) == r.guess[k], "guess %d: twin %d, drafter %d", k,
                          argmax(row, t.V), r.guess[k]);
            }
            const float *last = lg + (size_t)(n - 1) * t.V;
            double md = 0, mx = 0;
            for (int i = 0; i < t.V; i++) {
                md = fmax(md, fabs((double)last[i] - r.logits[i]));
                mx = fmax(mx, fabs((double)last[i]));
            }
            printf("  MTP guesses %d %d %d; the last row's logits within %.2g of the twin's "
                   "(max |%.2f|)\n", r.guess[0], r.guess[1], r.guess[2], md, mx);
            CHECK_MSG(md <= 1e-4 * (mx > 1 ? mx : 1), "logits differ from the twin by %g", md);
            free(lg);
        }
        twin_free(&t);
    }
    sl_model_free(m);
}

TEST(mtp_guesses_do_not_depend_on_the_prompt_split)
{
    sl_model *m = t_load_resident(FILE_F32, 2);
    CHECK(m != NULL);
    if (!m) return;
    run a, b, c;
    if (drive(m, NP, &a, NULL) && drive(m, 1, &b, NULL) && drive(m, 3, &c, NULL)) {
        CHECK(a.n_guess == NG && b.n_guess == NG && c.n_guess == NG);
        CHECK(!memcmp(a.guess, b.guess, sizeof a.guess) &&
              !memcmp(a.guess, c.guess, sizeof a.guess));
        CHECK_MSG(!memcmp(a.logits, b.logits, sizeof a.logits) &&
                  !memcmp(a.logits, c.logits, sizeof a.logits),
                  "the last guess's logits differ between batch splits");
    }
    sl_model_free(m);
}

/* One block loaded for several drafters (the server's slots): each,
 * also after another was freed, guesses as a drafter with its own block. */
TEST(a_shared_block_guesses_as_its_own)
{
    sl_model *m = t_load_resident(FILE_F32, 2);
    CHECK(m != NULL);
    if (!m) return;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sl_session *s = NULL;
    sl_model *block = NULL;
    sl_err err = {0};
    const bool ok = sl_session_create(&s, m, &sp, &err) == 0 &&
                    sl_draft_mtp_block_load(&block, s, NULL, &err) == 0;
    CHECK_MSG(ok, "%s", err.msg);
    sl_session_free(s);
    run own, a, b;
    if (ok && drive(m, NP, &own, NULL) && drive_on(m, block, NP, &a, NULL) &&
        drive_on(m, block, 3, &b, NULL)) {
        CHECK(own.n_guess == NG && a.n_guess == NG && b.n_guess == NG);
        CHECK(!memcmp(own.guess, a.guess, sizeof a.guess) &&
              !memcmp(own.guess, b.guess, sizeof a.guess));
        CHECK(!memcmp(own.logits, a.logits, sizeof a.logits) &&
              !memcmp(own.logits, b.logits, sizeof a.logits));
    }
    sl_draft_mtp_block_free(block);
    sl_model_free(m);
}

TEST(no_mtp_block_is_refused)
{
    sl_model_params mp = sl_model_default_params();
    mp.nextn_block = 2;
    sl_model *m = NULL;
    sl_err err = {0};
    const int rc = sl_model_load(&m, FILE_F32, &mp, &err);
    CHECK_EQ_INT(rc, SL_EUNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "MTP block");
    sl_model_free(m);
}

TEST(drafter_memory_planned)
{
    uint64_t one = 0, two = 0;
    sl_err err = {0};
    const sl_kv_type F16 = SL_KV_F16, F32 = SL_KV_F32;
    CHECK_EQ_INT(sl_draft_plan_bytes(FILE_F32, NULL, 256, 32, 1, F16, F16, &one, &err), SL_OK);
    CHECK_EQ_INT(sl_draft_plan_bytes(FILE_F32, NULL, 256, 32, 2, F16, F16, &two, &err), SL_OK);
    CHECK(two > one && one > 0);
    const uint64_t per_seq = two - one, weights = one - per_seq;
    /* f32 caches (-ctk f32 -ctv f32): the drafter's session follows the
     * target's types, so its plan grows by the cache's difference */
    uint64_t one32 = 0;
    CHECK_EQ_INT(sl_draft_plan_bytes(FILE_F32, NULL, 256, 32, 1, F32, F32, &one32, &err), SL_OK);
    const uint64_t per_seq32 = one32 - weights;
    sl_model *m = t_load_resident(FILE_F32, 1);
    CHECK(m != NULL);
    if (!m) return;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 256;
    sp.n_batch_max = 32;
    sl_session *s = NULL, *bs = NULL;
    sl_model *block = NULL;
    bool ok = sl_session_create(&s, m, &sp, &err) == 0 &&
              sl_draft_mtp_block_load(&block, s, NULL, &err) == 0;
    CHECK_MSG(ok, "%s", err.msg);
    if (ok) {
        CHECK_EQ_INT((long long)weights, (long long)(block->dense_bytes + block->expert_bytes));
        sl_session_params bp = sl_session_default_params();
        bp.n_ctx = 256;
        bp.n_batch_max = 33; /* the drafter's: a row more than the target's */
        CHECK_EQ_INT(sl_session_create(&bs, block, &bp, &err), SL_OK);
        if (bs) CHECK(per_seq >= bs->layout.arena_bytes);
        sl_session_free(bs);
        bs = NULL;
        bp.type_k = bp.type_v = SL_KV_F32;
        CHECK_EQ_INT(sl_session_create(&bs, block, &bp, &err), SL_OK);
        if (bs) CHECK(per_seq32 >= bs->layout.arena_bytes);
        /* exactly the cache's bytes more: 256 positions of f32 over f16 */
        CHECK_EQ_INT((long long)(per_seq32 - per_seq),
                     (long long)(256 * (sl_model_kv_bytes_per_token(block, F32, F32) -
                                        sl_model_kv_bytes_per_token(block, F16, F16))));
    }
    sl_session_free(bs);
    sl_session_free(s);
    sl_draft_mtp_block_free(block);
    sl_model_free(m);
    /* the plan says what it was given */
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_OFF;
    mp.drafter_bytes = one;
    sl_model *pm = NULL;
    CHECK_EQ_INT(sl_model_load(&pm, FILE_F32, &mp, &err), SL_OK);
    if (pm) {
        sl_stream_stats st;
        sl_model_stream_stats(pm, &st);
        CHECK_EQ_INT((long long)st.drafter_bytes, (long long)one);
    }
    sl_model_free(pm);
}

int main(void)
{
    RUN(mtp_guesses_match_the_twin);
    RUN(mtp_guesses_do_not_depend_on_the_prompt_split);
    RUN(a_shared_block_guesses_as_its_own);
    RUN(no_mtp_block_is_refused);
    RUN(drafter_memory_planned);
    return TEST_REPORT();
}
