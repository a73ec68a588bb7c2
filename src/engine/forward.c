/* forward.c - one token through the model, in data-flow order:
 *
 *   embedding row -> for each layer:
 *     attn_norm -> q,k,v (+bias) -> q/k norm -> RoPE -> KV append
 *       -> attention over the cache -> out proj -> +residual
 *     ffn_norm -> dense SwiGLU, or router -> softmax -> top-k -> experts
 *       (summed in top-k rank order) [+ gated shared expert] -> +residual
 *   -> output norm -> lm head -> logits
 *
 * Matrix products and attention heads are split across the session's
 * thread pool by rows/heads; each output value is computed by exactly one
 * thread in a fixed order, so results do not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "engine/session.h"

/* ---- matrix-vector product over the pool -------------------------------- */

typedef struct matvec_job {
    sl_session *s;
    const sl_mat *mat;
    const void *act;
    float *y;
} matvec_job;

static void matvec_worker(void *ctx, int ith, int nth)
{
    matvec_job *j = ctx;
    long long lo, hi;
    sl_split_range(j->mat->rows, ith, nth, &lo, &hi);
    float *tmp = j->s->row_tmp + (size_t)ith * j->s->row_tmp_stride;
    sl_matvec_rows(j->mat, j->act, j->y, lo, hi, tmp);
}

void sl_session_matvec(sl_session *s, const sl_mat *mat, const float *x, float *y)
{
    sl_matvec_prepare(mat, x, s->act);
    matvec_job j = {s, mat, s->act, y};
    sl_pool_run(s->pool, matvec_worker, &j);
}

static sl_mat mat_of(const sl_tensor *t)
{
    sl_mat m = {t->type, (int64_t)t->ne[1], (int64_t)t->ne[0], (size_t)t->row_bytes, t->data};
    return m;
}

/* Expert e of a stacked [cols, rows, n_expert] tensor. */
static sl_mat expert_mat(const sl_tensor *t, int e)
{
    sl_mat m = mat_of(t);
    m.data = (const uint8_t *)t->data + (size_t)e * (size_t)m.rows * m.row_bytes;
    return m;
}

static void matvec_t(sl_session *s, const sl_tensor *t, const float *x, float *y)
{
    sl_mat m = mat_of(t);
    sl_session_matvec(s, &m, x, y);
}

static void add_bias(float *y, const sl_tensor *b, int64_t n)
{
    if (!b->data) return;
    const float *bv = b->data;
    for (int64_t i = 0; i < n; i++) y[i] += bv[i];
}

/* ---- attention --------------------------------------------------------- */

typedef struct attn_job {
    sl_session *s;
    int layer;
    int pos;
} attn_job;

static inline float kv_get(const sl_session *s, const void *base, size_t i)
{
    if (s->kv_elem == 2) return sl_fp16_to_f32(((const uint16_t *)base)[i]);
    return ((const float *)base)[i];
}

static void attn_worker(void *ctx, int ith, int nth)
{
    attn_job *j = ctx;
    sl_session *s = j->s;
    const sl_hparams *hp = &s->m->hp;
    const int hd = hp->head_dim, hdv = hp->head_dim_v;
    const int group = hp->n_head / hp->n_head_kv;
    const int n_pos = j->pos + 1;
    const float scale = 1.0f / sqrtf((float)hd);
    const uint8_t *kl = (const uint8_t *)s->k_cache +
                        (size_t)j->layer * (size_t)s->n_ctx * s->kv_dim * s->kv_elem;
    const uint8_t *vl = (const uint8_t *)s->v_cache +
                        (size_t)j->layer * (size_t)s->n_ctx * s->kv_dim_v * s->kv_elem;
    long long h0, h1;
    sl_split_range(hp->n_head, ith, nth, &h0, &h1);
    for (int h = (int)h0; h < (int)h1; h++) {
        const float *q = s->q + (size_t)h * hd;
        const int kvh = h / group;
        float *att = s->att + (size_t)h * s->n_ctx;
        for (int t = 0; t < n_pos; t++) {
            const void *krow = kl + ((size_t)t * s->kv_dim + (size_t)kvh * hd) * s->kv_elem;
            float dot = 0.0f;
            for (int i = 0; i < hd; i++) dot += q[i] * kv_get(s, krow, (size_t)i);
            att[t] = dot * scale;
        }
        sl_softmax(att, n_pos);
        float *out = s->attn_out + (size_t)h * hdv;
        memset(out, 0, (size_t)hdv * sizeof *out);
        for (int t = 0; t < n_pos; t++) {
            const void *vrow = vl + ((size_t)t * s->kv_dim_v + (size_t)kvh * hdv) * s->kv_elem;
            const float a = att[t];
            for (int i = 0; i < hdv; i++) out[i] += a * kv_get(s, vrow, (size_t)i);
        }
    }
}

static void kv_store(sl_session *s, int layer, int pos)
{
    const size_t per_layer_k = (size_t)s->n_ctx * s->kv_dim;
    const size_t per_layer_v = (size_t)s->n_ctx * s->kv_dim_v;
    const size_t ko = (size_t)layer * per_layer_k + (size_t)pos * s->kv_dim;
    const size_t vo = (size_t)layer * per_layer_v + (size_t)pos * s->kv_dim_v;
    if (s->kv_elem == 2) {
        uint16_t *kc = (uint16_t *)s->k_cache + ko, *vc = (uint16_t *)s->v_cache + vo;
        for (size_t i = 0; i < s->kv_dim; i++) kc[i] = sl_f32_to_fp16(s->k[i]);
        for (size_t i = 0; i < s->kv_dim_v; i++) vc[i] = sl_f32_to_fp16(s->v[i]);
    } else {
        memcpy((float *)s->k_cache + ko, s->k, s->kv_dim * sizeof(float));
        memcpy((float *)s->v_cache + vo, s->v, s->kv_dim_v * sizeof(float));
    }
}

static void attention_block(sl_session *s, const sl_layer *L, int il, int pos)
{
    const sl_model *m = s->m;
    const sl_hparams *hp = &m->hp;
    const int hd = hp->head_dim;
    const int q_dim = hp->n_head * hd, k_dim = hp->n_head_kv * hd;

    sl_rmsnorm(s->xb, s->x, L->attn_norm.data, hp->n_embd, hp->rms_eps);
    matvec_t(s, &L->wq, s->xb, s->q);
    matvec_t(s, &L->wk, s->xb, s->k);
    matvec_t(s, &L->wv, s->xb, s->v);
    add_bias(s->q, &L->bq, q_dim);
    add_bias(s->k, &L->bk, k_dim);
    add_bias(s->v, &L->bv, (int64_t)s->kv_dim_v);

    if (m->arch->qk_norm == SL_QK_NORM_HEAD) {
        for (int h = 0; h < hp->n_head; h++)
            sl_rmsnorm(s->q + h * hd, s->q + h * hd, L->q_norm.data, hd, hp->rms_eps);
        for (int h = 0; h < hp->n_head_kv; h++)
            sl_rmsnorm(s->k + h * hd, s->k + h * hd, L->k_norm.data, hd, hp->rms_eps);
    } else if (m->arch->qk_norm == SL_QK_NORM_FULL) {
        sl_rmsnorm(s->q, s->q, L->q_norm.data, q_dim, hp->rms_eps);
        sl_rmsnorm(s->k, s->k, L->k_norm.data, k_dim, hp->rms_eps);
    }
    sl_rope_apply(&s->rope, s->q, hp->n_head, hd, pos);
    sl_rope_apply(&s->rope, s->k, hp->n_head_kv, hd, pos);
    kv_store(s, il, pos);

    attn_job j = {s, il, pos};
    sl_pool_run(s->pool, attn_worker, &j);

    matvec_t(s, &L->wo, s->attn_out, s->ffn_out);
    for (int i = 0; i < hp->n_embd; i++) s->x[i] += s->ffn_out[i];
}

/* ---- feed-forward ----------------------------------------------------- */

/* out = down(silu(gate x) * up x) */
static void swiglu_ffn(sl_session *s, const sl_mat *gate, const sl_mat *up, const sl_mat *down,
                       const float *x, float *out)
{
    sl_session_matvec(s, gate, x, s->hb);
    sl_session_matvec(s, up, x, s->hb2);
    sl_swiglu(s->hb, s->hb2, gate->rows);
    sl_session_matvec(s, down, s->hb, out);
}

/* Picks the k largest probabilities (ties: lower expert id first), in rank
 * order, and renormalises them to sum to 1 if asked. */
static void router_topk(const float *p, int n, int k, bool renorm, int *ids, float *w)
{
    for (int r = 0; r < k; r++) {
        int best = -1;
        for (int e = 0; e < n; e++) {
            bool taken = false;
            for (int q = 0; q < r; q++)
                if (ids[q] == e) taken = true;
            if (taken) continue;
            if (best < 0 || p[e] > p[best]) best = e;
        }
        ids[r] = best;
        w[r] = p[best];
    }
    if (renorm) {
        float sum = 0.0f;
        for (int r = 0; r < k; r++) sum += w[r];
        for (int r = 0; r < k; r++) w[r] /= sum;
    }
}

static void moe_block(sl_session *s, const sl_layer *L)
{
    const sl_hparams *hp = &s->m->hp;
    const int E = hp->n_embd, K = hp->n_expert_used;
    matvec_t(s, &L->router, s->xb, s->router);
    sl_softmax(s->router, hp->n_expert);
    router_topk(s->router, hp->n_expert, K, hp->expert_weights_norm, s->topk_ids, s->topk_w);

    memset(s->ffn_out, 0, (size_t)E * sizeof(float));
    for (int r = 0; r < K; r++) {
        const int e = s->topk_ids[r];
        sl_mat g = expert_mat(&L->gate_exps, e), u = expert_mat(&L->up_exps, e),
               d = expert_mat(&L->down_exps, e);
        swiglu_ffn(s, &g, &u, &d, s->xb, s->exp_out);
        const float w = s->topk_w[r];
        for (int i = 0; i < E; i++) s->ffn_out[i] += w * s->exp_out[i];
    }
    if (L->shexp_gate.data) {
        sl_mat g = mat_of(&L->gate_shexp), u = mat_of(&L->up_shexp), d = mat_of(&L->down_shexp);
        swiglu_ffn(s, &g, &u, &d, s->xb, s->exp_out);
        const float *gw = L->shexp_gate.data;
        float logit = 0.0f;
        for (int i = 0; i < E; i++) logit += gw[i] * s->xb[i];
        const float gate = 1.0f / (1.0f + expf(-logit));
        for (int i = 0; i < E; i++) s->ffn_out[i] += gate * s->exp_out[i];
    }
}

static void ffn_block(sl_session *s, const sl_layer *L)
{
    const sl_hparams *hp = &s->m->hp;
    sl_rmsnorm(s->xb, s->x, L->ffn_norm.data, hp->n_embd, hp->rms_eps);
    if (L->is_moe) {
        moe_block(s, L);
    } else {
        sl_mat g = mat_of(&L->ffn_gate), u = mat_of(&L->ffn_up), d = mat_of(&L->ffn_down);
        swiglu_ffn(s, &g, &u, &d, s->xb, s->ffn_out);
    }
    for (int i = 0; i < hp->n_embd; i++) s->x[i] += s->ffn_out[i];
}

/* ---- the whole model -------------------------------------------------- */

void sl_forward_token(sl_session *s, int32_t token, float *logits)
{
    const sl_model *m = s->m;
    const int pos = s->n_past;
    sl_mat emb = mat_of(&m->tok_embd);
    sl_mat_row_to_float(&emb, token, s->x);
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer *L = &m->layers[il];
        attention_block(s, L, il, pos);
        ffn_block(s, L);
    }
    if (!logits) return;
    sl_rmsnorm(s->xb, s->x, m->output_norm.data, m->hp.n_embd, m->hp.rms_eps);
    matvec_t(s, &m->output, s->xb, logits);
}
