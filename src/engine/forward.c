/* forward.c - a micro-batch of tokens through the model, in data-flow order:
 *
 *   embedding rows -> for each layer:
 *     attn_norm -> q,k,v (+bias) -> q/k norm -> RoPE -> KV append
 *       -> causal attention over the cache -> out proj -> +residual
 *     ffn_norm -> dense SwiGLU, or router -> softmax -> top-k -> experts
 *       (tokens grouped by expert, each expert's weights read once per
 *       batch; outputs summed per token in top-k rank order)
 *       [+ sigmoid-gated shared expert] -> +residual
 *   -> output norm -> lm head -> logits
 *
 * Work is split over the session's pool by weight rows (matrix products)
 * and by (token, head) pairs (attention); each output value is computed by
 * one thread in a fixed order, so results are bit-identical for any thread
 * count and any batch size. */
#include <math.h>
#include <string.h>

#include "engine/session.h"
#include "experts/streamer.h"

#include "engine/fwd_mm.h"

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

/* y(n, rows) = x(n, cols) * t^T */
static void mm_t(sl_session *s, const sl_tensor *t, const float *x, int n, float *y)
{
    const sl_mat m = mat_of(t);
    const sl_mat *mats[1] = {&m};
    float *ys[1] = {y};
    sl_fwd_mm_shared(s, mats, ys, 1, x, n);
}

static void add_bias(float *y, const sl_tensor *b, int n, int64_t dim)
{
    if (!b->data) return;
    const float *bv = b->data;
    for (int t = 0; t < n; t++)
        for (int64_t i = 0; i < dim; i++) y[(size_t)t * dim + i] += bv[i];
}

/* ---- attention --------------------------------------------------------- */

typedef struct attn_job {
    sl_session *s;
    const sl_attn_desc *a;
    int layer;
    int n;
    int pos0;
} attn_job;

static void attn_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    attn_job *j = ctx;
    sl_session *s = j->s;
    const sl_attn_desc *a = j->a;
    const int hd = a->head_dim, hdv = a->head_dim_v, H = a->n_head;
    const int group = H / a->n_head_kv;
    const float scale = a->scale;
    const uint8_t *kl = (const uint8_t *)s->k_cache +
                        (size_t)j->layer * (size_t)s->n_ctx * s->kv_dim * s->kv_elem;
    const uint8_t *vl = (const uint8_t *)s->v_cache +
                        (size_t)j->layer * (size_t)s->n_ctx * s->kv_dim_v * s->kv_elem;
    float *att = s->att + (size_t)tid * (size_t)s->n_ctx;
    const sl_attn_kernels *kr = s->attn_k;
    const bool f16 = s->kv_elem == 2;
    long long w0, w1;
    sl_split_range((long long)j->n * H, chunk, n_chunks, &w0, &w1);
    for (long long w = w0; w < w1; w++) {
        const int t = (int)(w / H), h = (int)(w % H);
        const int n_pos = j->pos0 + t + 1; /* causal: itself and everything before */
        const float *q = s->q + (size_t)t * H * hd + (size_t)h * hd;
        const int kvh = h / group;
        for (int p = 0; p < n_pos; p++) {
            const void *krow = kl + ((size_t)p * s->kv_dim + (size_t)kvh * hd) * s->kv_elem;
            const float dot = f16 ? kr->dot_f16(q, krow, hd) : kr->dot_f32(q, krow, hd);
            att[p] = dot * scale;
        }
        sl_softmax(att, n_pos);
        float *out = s->attn_out + (size_t)t * H * hdv + (size_t)h * hdv;
        memset(out, 0, (size_t)hdv * sizeof *out);
        for (int p = 0; p < n_pos; p++) {
            const void *vrow = vl + ((size_t)p * s->kv_dim_v + (size_t)kvh * hdv) * s->kv_elem;
            if (f16) kr->axpy_f16(out, att[p], vrow, hdv);
            else kr->axpy_f32(out, att[p], vrow, hdv);
        }
    }
}

static void kv_store(sl_session *s, int layer, int pos, const float *k, const float *v)
{
    const size_t ko = ((size_t)layer * (size_t)s->n_ctx + (size_t)pos) * s->kv_dim;
    const size_t vo = ((size_t)layer * (size_t)s->n_ctx + (size_t)pos) * s->kv_dim_v;
    if (s->kv_elem == 2) {
        uint16_t *kc = (uint16_t *)s->k_cache + ko, *vc = (uint16_t *)s->v_cache + vo;
        for (size_t i = 0; i < s->kv_dim; i++) kc[i] = sl_f32_to_fp16(k[i]);
        for (size_t i = 0; i < s->kv_dim_v; i++) vc[i] = sl_f32_to_fp16(v[i]);
    } else {
        memcpy((float *)s->k_cache + ko, k, s->kv_dim * sizeof(float));
        memcpy((float *)s->v_cache + vo, v, s->kv_dim_v * sizeof(float));
    }
}

static void attention_block(sl_session *s, const sl_layer *L, int il, int n)
{
    const sl_hparams *hp = &s->m->hp;
    const sl_attn_desc *a = &L->d.attn;
    const int E = hp->n_embd, hd = a->head_dim;
    const int q_dim = a->n_head * hd, k_dim = a->n_head_kv * hd;

    for (int t = 0; t < n; t++)
        sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)t * E, L->attn_norm.data, E,
                   hp->rms_eps);
    const sl_mat wq = mat_of(&L->wq), wk = mat_of(&L->wk), wv = mat_of(&L->wv);
    const sl_mat *qkv[3] = {&wq, &wk, &wv};
    float *qkv_out[3] = {s->q, s->k, s->v};
    sl_fwd_mm_shared(s, qkv, qkv_out, 3, s->xb, n);
    add_bias(s->q, &L->bq, n, q_dim);
    add_bias(s->k, &L->bk, n, k_dim);
    add_bias(s->v, &L->bv, n, (int64_t)s->kv_dim_v);

    for (int t = 0; t < n; t++) {
        float *q = s->q + (size_t)t * q_dim, *k = s->k + (size_t)t * k_dim;
        if (a->qk_norm == SL_QK_NORM_HEAD) {
            for (int h = 0; h < a->n_head; h++)
                sl_rmsnorm(q + h * hd, q + h * hd, L->q_norm.data, hd, hp->rms_eps);
            for (int h = 0; h < a->n_head_kv; h++)
                sl_rmsnorm(k + h * hd, k + h * hd, L->k_norm.data, hd, hp->rms_eps);
        } else if (a->qk_norm == SL_QK_NORM_FULL) {
            sl_rmsnorm(q, q, L->q_norm.data, q_dim, hp->rms_eps);
            sl_rmsnorm(k, k, L->k_norm.data, k_dim, hp->rms_eps);
        }
        sl_rope_apply(&a->rope, q, a->n_head, hd, s->n_past + t);
        sl_rope_apply(&a->rope, k, a->n_head_kv, hd, s->n_past + t);
        kv_store(s, il, s->n_past + t, k, s->v + (size_t)t * s->kv_dim_v);
    }

    attn_job j = {s, a, il, n, s->n_past};
    const int pairs = n * a->n_head;
    sl_pool_run(s->pool, attn_worker, &j, pairs < 64 ? pairs : 64);

    mm_t(s, &L->wo, s->attn_out, n, s->tmp);
    for (size_t i = 0; i < (size_t)n * E; i++) s->x[i] += s->tmp[i];
}

/* ---- feed-forward ----------------------------------------------------- */

/* SwiGLU of the rows of s->hb (gate) and s->hb2 (up), prepared for down:
 * rows idx[0..n) (or 0..n-1) of width down->cols, into s->act_down. */
static void prepare_down(sl_session *s, const sl_mat *down, const int *idx, int n,
                         const void **acts)
{
    const size_t F = (size_t)down->cols;
    sl_prep p = {down, s->hb, F, s->hb2, idx, n,
                 s->act_down, sl_fwd_act_stride(down->type, down->cols),
                 (size_t)s->layout.bytes[SL_SB_act_down], acts};
    sl_fwd_prepare(s, &p);
}

/* out(n, E) = down(silu(gate x) * up x) for the n rows of x */
static void swiglu_ffn(sl_session *s, const sl_mat *gate, const sl_mat *up, const sl_mat *down,
                       const float *x, int n, float *out)
{
    const sl_mat *gu[2] = {gate, up};
    float *gu_out[2] = {s->hb, s->hb2};
    sl_fwd_mm_shared(s, gu, gu_out, 2, x, n);
    prepare_down(s, down, NULL, n, s->down_acts);
    const sl_mm_item d = {down, s->down_acts, n, out, (size_t)down->rows};
    sl_fwd_mm_run(s, &d, 1);
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

/* Groups the batch's (token, rank) slots by expert: afterwards the rows of
 * expert e are [moe_count[e], moe_count[e + 1]), holding moe_slot[row] =
 * token*K + rank in token order, and moe_pos inverts moe_slot. */
static void group_by_expert(sl_session *s, const sl_router_desc *r, int n)
{
    const int X = r->n_expert, K = r->top_k;
    int *cnt = s->moe_count;
    memset(cnt, 0, sizeof(int) * (size_t)(X + 1));
    for (int i = 0; i < n * K; i++) cnt[s->topk_ids[i] + 1]++;
    for (int e = 0; e < X; e++) cnt[e + 1] += cnt[e];
    int *cur = s->moe_cursor; /* stable fill: tokens stay in order */
    for (int e = 0; e < X; e++) cur[e] = cnt[e];
    for (int i = 0; i < n * K; i++) {
        const int row = cur[s->topk_ids[i]]++;
        s->moe_slot[row] = i;
        s->moe_pos[i] = row;
    }
}

/* Quantises the batch's normalised inputs once for the experts' gate and
 * up matrices (two sets when their activation types differ) and points
 * every grouped row at its token's. */
static void prepare_expert_inputs(sl_session *s, const sl_layer *L, int n)
{
    const int K = L->d.ffn.router.top_k, B = s->n_batch_max;
    /* shapes and types only: a streamed model has no resident expert data */
    const sl_mat g = mat_of(&L->gate_exps), u = mat_of(&L->up_exps);
    const bool same = sl_matvec_act_type(g.type) == sl_matvec_act_type(u.type);
    const sl_mat *m[2] = {&g, &u};
    for (int set = 0; set < (same ? 1 : 2); set++) {
        sl_prep p = {m[set], s->xb, (size_t)g.cols, NULL, NULL, n,
                     s->act + (size_t)set * (size_t)B * s->act_stride, s->act_stride,
                     (size_t)B * s->act_stride, s->acts + (size_t)set * (size_t)B};
        sl_fwd_prepare(s, &p);
    }
    const void **ag = s->acts, **au = same ? s->acts : s->acts + B;
    for (int row = 0; row < n * K; row++) {
        const int t = s->moe_slot[row] / K;
        s->moe_acts_g[row] = ag[t];
        s->moe_acts_u[row] = au[t];
    }
}

/* Runs experts xs[0..nx) on the batch rows routed to them in three pool
 * jobs, whatever nx is: gate and up of all of them; SwiGLU of their rows
 * prepared for down; down of all of them. Outputs go to the experts'
 * grouped rows of s->exp_out. */
static void run_experts(sl_session *s, const sl_layer *L, const sl_expert_w *xs, int nx)
{
    const size_t E = (size_t)s->m->hp.n_embd, F = (size_t)L->d.ffn.n_ff;
    sl_mm_item *it = s->mm_items;
    int n_rows = 0;
    for (int i = 0; i < nx; i++) {
        const int first = s->moe_count[xs[i].e], cnt = s->moe_count[xs[i].e + 1] - first;
        it[2 * i] = (sl_mm_item){&xs[i].g, s->moe_acts_g + first, cnt, s->hb + first * F, F};
        it[2 * i + 1] = (sl_mm_item){&xs[i].u, s->moe_acts_u + first, cnt, s->hb2 + first * F, F};
        for (int r = 0; r < cnt; r++) s->moe_rows[n_rows++] = first + r;
    }
    sl_fwd_mm_run(s, it, 2 * nx);
    prepare_down(s, &xs[0].d, s->moe_rows, n_rows, s->down_acts);
    for (int i = 0; i < nx; i++) {
        const int first = s->moe_count[xs[i].e], cnt = s->moe_count[xs[i].e + 1] - first;
        it[i] = (sl_mm_item){&xs[i].d, s->down_acts + first, cnt, s->exp_out + first * E, E};
    }
    sl_fwd_mm_run(s, it, nx);
}

/* A streamed expert's weights: the same shapes as the stacked tensor's
 * slices, at the addresses the streamer filled. */
static sl_mat slice_mat(const sl_tensor *t, const void *data)
{
    sl_mat m = mat_of(t);
    m.data = data;
    return m;
}

/* The batch's experts from the streamer: the resident ones are computed
 * together while the missing ones are read, then the read ones in groups
 * of those that have landed. The cache may be smaller than the set; then
 * it is taken in rounds. */
static int run_streamed_experts(sl_session *s, const sl_layer *L, int il, int *ids, int n_ids,
                                sl_expert_w *xs, int n_pf, sl_err *err)
{
    sl_streamer *st = s->m->streamer;
    for (int done = 0; done < n_ids;) {
        int taken = 0;
        int rc = sl_streamer_begin(st, il, ids + done, n_ids - done, &taken, err);
        /* after this layer's own misses, so those are read first */
        if (!rc && done == 0 && n_pf > 0) sl_streamer_prefetch(st, il + 1, s->pf_ids, n_pf);
        if (!rc && taken == 0)
            rc = sl_err_set(err, SL_ENOMEM, "the expert cache has no free slot");
        while (!rc) {
            /* the first may wait for a read; the rest are in memory already */
            int nx = 0;
            const void *w[SL_N_PROJ];
            while (nx == 0 || sl_streamer_ready(st) > 0) {
                rc = sl_streamer_next(st, &xs[nx].e, w, err);
                if (rc != 1) break;
                xs[nx].g = slice_mat(&L->gate_exps, w[SL_PROJ_GATE]);
                xs[nx].u = slice_mat(&L->up_exps, w[SL_PROJ_UP]);
                xs[nx].d = slice_mat(&L->down_exps, w[SL_PROJ_DOWN]);
                nx++;
                rc = 0;
            }
            if (nx > 0 && rc == 0) run_experts(s, L, xs, nx);
            for (int i = 0; i < nx; i++) sl_streamer_release(st, xs[i].e);
            if (rc == 0 && nx == 0) break; /* the set is done */
            if (rc < 0) break;
        }
        if (rc) {
            sl_streamer_abort(st);
            return rc;
        }
        done += taken;
    }
    return SL_OK;
}

/* The experts layer `next` will pick, guessed by its router from the
 * residual stream as it is now (before this layer's FFN adds to it): the
 * stream changes little from one layer to the next, so the guess is often
 * right, and reading those experts now overlaps the reads with this
 * layer's work. Fills s->pf_ids; returns how many. One token only. */
static int predict_experts(sl_session *s, int next)
{
    const sl_hparams *hp = &s->m->hp;
    const sl_layer *N = &s->m->layers[next];
    const sl_router_desc *r = &N->d.ffn.router;
    sl_rmsnorm(s->pf_x, s->x, N->ffn_norm.data, hp->n_embd, hp->rms_eps);
    mm_t(s, &N->router, s->pf_x, 1, s->pf_logits);
    /* softmax keeps the order: the top-k of the logits is the top-k */
    router_topk(s->pf_logits, r->n_expert, r->top_k, false, s->pf_ids, s->pf_w);
    return r->top_k;
}

static int moe_block(sl_session *s, const sl_layer *L, int il, int n, sl_err *err)
{
    const sl_hparams *hp = &s->m->hp;
    const sl_router_desc *rd = &L->d.ffn.router;
    const int E = hp->n_embd, K = rd->top_k, X = rd->n_expert;
    mm_t(s, &L->router, s->xb, n, s->router);
    for (int t = 0; t < n; t++) {
        float *p = s->router + (size_t)t * X;
        sl_softmax(p, X);
        router_topk(p, X, K, rd->renorm, s->topk_ids + (size_t)t * K,
                    s->topk_w + (size_t)t * K);
    }
    group_by_expert(s, rd, n);
    /* before the expert inputs are prepared: the guess uses the same scratch */
    bool guess = s->m->streamer && n == 1 && il + 1 < hp->n_layer &&
                 s->m->layers[il + 1].d.ffn.kind == SL_FFN_ROUTED;
    if (guess) {
        pthread_mutex_lock(&s->m->stream_mu);
        guess = sl_streamer_wants_guess(s->m->streamer);
        pthread_mutex_unlock(&s->m->stream_mu);
    }
    const int n_pf = guess ? predict_experts(s, il + 1) : 0;
    prepare_expert_inputs(s, L, n);

    /* the experts in use, in id order */
    int *ids = s->moe_cursor, n_ids = 0; /* the cursor scratch is free again */
    for (int e = 0; e < X; e++)
        if (s->moe_count[e + 1] > s->moe_count[e]) ids[n_ids++] = e;
    sl_expert_w *xs = s->moe_xw;
    if (s->m->streamer) {
        pthread_mutex_lock(&s->m->stream_mu);
        int rc = run_streamed_experts(s, L, il, ids, n_ids, xs, n_pf, err);
        pthread_mutex_unlock(&s->m->stream_mu);
        if (rc) return rc;
    } else {
        for (int i = 0; i < n_ids; i++)
            xs[i] = (sl_expert_w){ids[i], expert_mat(&L->gate_exps, ids[i]),
                               expert_mat(&L->up_exps, ids[i]), expert_mat(&L->down_exps, ids[i])};
        run_experts(s, L, xs, n_ids);
    }
    for (int t = 0; t < n; t++) {
        float *out = s->ffn_out + (size_t)t * E;
        memset(out, 0, sizeof(float) * (size_t)E);
        for (int r = 0; r < K; r++) {
            const float w = s->topk_w[(size_t)t * K + r];
            const float *eo = s->exp_out + (size_t)s->moe_pos[t * K + r] * E;
            for (int i = 0; i < E; i++) out[i] += w * eo[i];
        }
    }
    if (L->d.ffn.n_ff_shexp > 0) {
        sl_mat g = mat_of(&L->gate_shexp), u = mat_of(&L->up_shexp), d = mat_of(&L->down_shexp);
        swiglu_ffn(s, &g, &u, &d, s->xb, n, s->tmp);
        const float *gw = L->shexp_gate.data;
        for (int t = 0; t < n; t++) {
            const float *xb = s->xb + (size_t)t * E, *sh = s->tmp + (size_t)t * E;
            float logit = 0.0f;
            for (int i = 0; i < E; i++) logit += gw[i] * xb[i];
            const float gate = 1.0f / (1.0f + expf(-logit));
            float *out = s->ffn_out + (size_t)t * E;
            for (int i = 0; i < E; i++) out[i] += gate * sh[i];
        }
    }
    return SL_OK;
}

static int ffn_block(sl_session *s, const sl_layer *L, int il, int n, sl_err *err)
{
    const sl_hparams *hp = &s->m->hp;
    const int E = hp->n_embd;
    for (int t = 0; t < n; t++)
        sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)t * E, L->ffn_norm.data, E, hp->rms_eps);
    if (L->d.ffn.kind == SL_FFN_ROUTED) {
        int rc = moe_block(s, L, il, n, err);
        if (rc) return rc;
    } else {
        sl_mat g = mat_of(&L->ffn_gate), u = mat_of(&L->ffn_up), d = mat_of(&L->ffn_down);
        swiglu_ffn(s, &g, &u, &d, s->xb, n, s->ffn_out);
    }
    for (size_t i = 0; i < (size_t)n * E; i++) s->x[i] += s->ffn_out[i];
    return SL_OK;
}

/* ---- the whole model -------------------------------------------------- */

/* Fails when a value among the n rows of width w at x is NaN or infinite:
 * finite weights and inputs never produce one, so the file is damaged.
 * what names the values, layer is -1 for the logits. */
static int check_finite(const sl_session *s, const float *x, int n, int64_t w, int first,
                        const char *what, int layer, sl_err *err)
{
    const int64_t bad = sl_first_nonfinite(x, (int64_t)n * w);
    if (bad < 0) return SL_OK;
    const int pos = s->n_past + first + (int)(bad / w);
    if (layer >= 0)
        return sl_err_set(err, SL_EFORMAT, "the %s of the token at position %d is not finite "
                          "(NaN or infinity) after layer %d: the weights may be damaged",
                          what, pos, layer);
    return sl_err_set(err, SL_EFORMAT, "the %s of the token at position %d are not finite "
                      "(NaN or infinity): the weights may be damaged", what, pos);
}

int sl_forward_batch(sl_session *s, const int32_t *tokens, int n, sl_err *err)
{
    const sl_model *m = s->m;
    const int E = m->hp.n_embd;
    sl_mat emb = mat_of(&m->tok_embd);
    for (int t = 0; t < n; t++) sl_mat_row_to_float(&emb, tokens[t], s->x + (size_t)t * E);
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer *L = &m->layers[il];
        attention_block(s, L, il, n);
        int rc = ffn_block(s, L, il, n, err);
        if (!rc) rc = check_finite(s, s->x, n, E, 0, "hidden state", il, err);
        if (rc) return rc;
    }
    /* logits: every token's, or only the last one's */
    const int first = s->all_logits ? 0 : n - 1;
    const int cnt = n - first;
    for (int t = 0; t < cnt; t++)
        sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)(first + t) * E, m->output_norm.data, E,
                   m->hp.rms_eps);
    mm_t(s, &m->output, s->xb, cnt, s->logits);
    int rc = check_finite(s, s->logits, cnt, m->hp.n_vocab, first, "logits", -1, err);
    if (rc) return rc;
    s->n_logits = cnt;
    return SL_OK;
}
