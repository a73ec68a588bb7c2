/* forward.c - a micro-batch of tokens through the model, in data-flow order:
 *
 *   embedding rows -> for each layer (as its description sl_layer_desc says):
 *     attn_norm -> the layer's mixer (mixer.h; mix_attn.c: q,k,v -> q/k norm
 *       -> RoPE -> KV append -> causal attention -> out proj) -> +residual
 *     ffn_norm -> dense SwiGLU, or router -> softmax -> top-k -> experts
 *       (tokens grouped by expert, each expert's weights read once per
 *       batch; outputs summed per token in top-k rank order)
 *       [+ sigmoid-gated shared expert] -> +residual
 *   -> output norm -> lm head -> logits
 *
 * Work is split over the session's pool by weight rows (matrix products)
 * and by (token, head) pairs (attention, in the mixer); each output value is computed by
 * one thread in a fixed order, so results are bit-identical for any thread
 * count and any batch size. */
#include <math.h>
#include <string.h>

#include "engine/session.h"
#include "experts/streamer.h"

#include "engine/block.h"
#include "engine/ds4.h"
#include "engine/fwd_mm.h"
#include "engine/mixer.h"
#include "engine/route_knobs.h"
#include "engine/router.h"

/* Expert e of a stacked [cols, rows, n_expert] tensor. */
static sl_mat expert_mat(const sl_tensor *t, int e)
{
    sl_mat m = sl_fwd_mat(t);
    const size_t stride = t->expert_bytes ? (size_t)t->expert_bytes : (size_t)m.rows * m.row_bytes;
    m.data = (const uint8_t *)t->data + (size_t)e * stride;
    m.n_experts = (int64_t)t->ne[2];
    return m;
}

/* ---- feed-forward ----------------------------------------------------- */

/* The activation act (SwiGLU, gpt-oss's clamped SwiGLU or GeGLU) of the
 * rows of s->hb (gate) and s->hb2 (up), prepared for down: rows idx[0..n)
 * (or 0..n-1) of width down->cols, into s->act_down. */
static void prepare_down(sl_session *s, const sl_mat *down, const int *idx, int n,
                         const void **acts, sl_activation act)
{
    const size_t F = (size_t)down->cols;
    if (act == SL_ACT_GEGLU) /* combined here, then prepared as plain rows */
        for (int t = 0; t < n; t++) {
            const size_t row = (size_t)(idx ? idx[t] : t);
            sl_geglu(s->hb + row * F, s->hb2 + row * F, (int64_t)F);
        }
    sl_prep p = {down, s->hb, F, act == SL_ACT_GEGLU ? NULL : s->hb2, idx, n,
                 s->act_down, sl_fwd_act_stride(down->type, down->cols),
                 (size_t)s->layout.bytes[SL_SB_act_down], acts, act == SL_ACT_SWIGLU_OAI};
    sl_fwd_prepare(s, &p);
}

/* Rows [first, first + cnt) of y (width w) times expert e's scale, when
 * the layer has per-expert scales (the tensor sc, [n_expert]). */
static void scale_rows(float *y, const sl_tensor *sc, int e, int first, int cnt, size_t w)
{
    if (!sc->data) return;
    const float f = ((const float *)sc->data)[e];
    for (size_t i = (size_t)first * w; i < (size_t)(first + cnt) * w; i++) y[i] *= f;
}

/* deepseek4's clamped SwiGLU inputs: the gate min(g, lim) (before silu),
 * the up clamp(u, -lim, lim), over one row of F. */
static void clamp_swiglu(float *g, float *u, size_t F, float lim)
{
    for (size_t i = 0; i < F; i++) {
        g[i] = fminf(g[i], lim);
        u[i] = fminf(fmaxf(u[i], -lim), lim);
    }
}

/* out(n, E) = down(silu(gate x) * up x) for the n rows of x; clamp > 0:
 * deepseek4's clamped form */
static void swiglu_ffn(sl_session *s, const sl_mat *gate, const sl_mat *up, const sl_mat *down,
                       const float *x, int n, float *out, float clamp)
{
    const sl_mat *gu[2] = {gate, up};
    float *gu_out[2] = {s->hb, s->hb2};
    sl_fwd_mm_shared(s, gu, gu_out, 2, x, n);
    if (clamp > 0.0f)
        for (int t = 0; t < n; t++)
            clamp_swiglu(s->hb + (size_t)t * (size_t)down->cols, s->hb2 + (size_t)t * (size_t)down->cols,
                         (size_t)down->cols, clamp);
    prepare_down(s, down, NULL, n, s->down_acts, SL_ACT_SWIGLU);
    const sl_mm_item d = {down, s->down_acts, n, out, (size_t)down->rows};
    sl_fwd_mm_run(s, &d, 1);
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
    const sl_mat g = sl_fwd_mat(&L->gate_exps), u = sl_fwd_mat(&L->up_exps);
    const bool same = sl_matvec_act_type(g.type) == sl_matvec_act_type(u.type);
    const sl_mat *m[2] = {&g, &u};
    for (int set = 0; set < (same ? 1 : 2); set++) {
        sl_prep p = {m[set], s->xb, (size_t)g.cols, NULL, NULL, n,
                     s->act + (size_t)set * (size_t)B * s->act_stride, s->act_stride,
                     (size_t)B * s->act_stride, s->acts + (size_t)set * (size_t)B, false};
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
    const bool biases = L->d.ffn.biases;
    if (biases) /* each expert's gate and up biases on its rows (llama.cpp's add_id) */
        for (int i = 0; i < nx; i++) {
            const int first = s->moe_count[xs[i].e], cnt = s->moe_count[xs[i].e + 1] - first;
            const float *gb = (const float *)L->gate_exps_b.data + (size_t)xs[i].e * F;
            const float *ub = (const float *)L->up_exps_b.data + (size_t)xs[i].e * F;
            sl_add_rows_bias(s->hb + first * F, gb, cnt, F);
            sl_add_rows_bias(s->hb2 + first * F, ub, cnt, F);
        }
    for (int i = 0; i < nx; i++) { /* per-expert scales of gate and up (any architecture) */
        const int first = s->moe_count[xs[i].e], cnt = s->moe_count[xs[i].e + 1] - first;
        scale_rows(s->hb, &L->gate_exps_s, xs[i].e, first, cnt, F);
        scale_rows(s->hb2, &L->up_exps_s, xs[i].e, first, cnt, F);
    }
    if (L->d.ffn.clamp > 0.0f) /* deepseek4 */
        for (int i = 0; i < n_rows; i++)
            clamp_swiglu(s->hb + (size_t)s->moe_rows[i] * F, s->hb2 + (size_t)s->moe_rows[i] * F, F,
                         L->d.ffn.clamp);
    prepare_down(s, &xs[0].d, s->moe_rows, n_rows, s->down_acts, L->d.ffn.act);
    for (int i = 0; i < nx; i++) {
        const int first = s->moe_count[xs[i].e], cnt = s->moe_count[xs[i].e + 1] - first;
        it[i] = (sl_mm_item){&xs[i].d, s->down_acts + first, cnt, s->exp_out + first * E, E};
    }
    sl_fwd_mm_run(s, it, nx);
    if (biases)
        for (int i = 0; i < nx; i++) {
            const int first = s->moe_count[xs[i].e], cnt = s->moe_count[xs[i].e + 1] - first;
            sl_add_rows_bias(s->exp_out + first * E,
                          (const float *)L->down_exps_b.data + (size_t)xs[i].e * E, cnt, E);
        }
    for (int i = 0; i < nx; i++) { /* each expert's output scale (gemma4, NVFP4 files) */
        const int first = s->moe_count[xs[i].e], cnt = s->moe_count[xs[i].e + 1] - first;
        scale_rows(s->exp_out, &L->down_exps_s, xs[i].e, first, cnt, E);
    }
}

/* A streamed expert's weights: the same shapes as the stacked tensor's
 * slices, at the addresses the streamer filled. */
static sl_mat slice_mat(const sl_tensor *t, const void *data)
{
    sl_mat m = sl_fwd_mat(t);
    m.data = data; /* a view's (fused gate/up) own rows: the streamer read just them */
    m.n_experts = (int64_t)t->ne[2];
    return m;
}

/* The batch's experts from the streamer: the resident ones are computed
 * together while the missing ones are read, then the read ones in groups
 * of those that have landed. The cache may be smaller than the set; then
 * it is taken in rounds. */
static int run_streamed_experts(sl_session *s, const sl_layer *L, int il, int *ids, int n_ids,
                                sl_expert_w *xs, const int *pf_ids, int n_pf, bool pf_union,
                                sl_err *err)
{
    sl_streamer *st = s->m->streamer;
    for (int done = 0; done < n_ids;) {
        int taken = 0;
        int rc = sl_streamer_begin(st, il, ids + done, n_ids - done, &taken, err);
        /* after this layer's own misses, so those are read first */
        if (!rc && done == 0 && n_pf > 0) {
            if (pf_union) sl_streamer_prefetch_union(st, il + 1, pf_ids, n_pf);
            else sl_streamer_prefetch(st, il + 1, pf_ids, n_pf);
        } else if (!rc && done == 0) {
            sl_streamer_prefetch_learned(st, il); /* if learned guesses are on */
        }
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
    if (r->own_norm)
        sl_router_own_input(N, s->x, 1, hp->n_embd, hp->rms_eps, s->pf_x);
    else
        sl_rmsnorm(s->pf_x, s->x, N->ffn_norm.data, hp->n_embd, hp->rms_eps);
    sl_fwd_mm_tensor(s, &N->router, s->pf_x, 1, s->pf_logits);
    sl_add_rows_bias(s->pf_logits, N->router_b.data, 1, (size_t)r->n_expert);
    const int32_t tk = r->hash ? s->tokens[0] : -1; /* deepseek4's hash layers */
    sl_router_guess(N, s->pf_logits, tk, s->pf_ids, s->pf_w);
    return r->top_k;
}

/* Tokens of a micro-batch whose guesses make the union (spread evenly). */
#define UNION_ROWS 64

/* Rows of the batch predict_union guesses from: up to UNION_ROWS, as
 * many as s->hb2 (their normalised inputs) and s->hb (their logits, the
 * ids and a mark per expert) hold; 0: no union guess. */
static int union_rows(const sl_session *s, int n, int X)
{
    const size_t E = (size_t)s->m->hp.n_embd;
    size_t rows = (size_t)(n < UNION_ROWS ? n : UNION_ROWS);
    const size_t in_cap = (size_t)s->layout.bytes[SL_SB_hb2] / sizeof(float) / E;
    if (rows > in_cap) rows = in_cap;
    const size_t hb = (size_t)s->layout.bytes[SL_SB_hb];
    while (rows > 0 && (rows * (size_t)X + (size_t)X) * sizeof(float) + (size_t)X > hb) rows--;
    return (int)rows;
}

/* predict_experts for a micro-batch (prefill): the union of the experts
 * layer `next` would pick for `rows` of its tokens (spread evenly), from
 * the residual stream as it is now. Uses s->hb2 and s->hb as scratch: the
 * experts' gate and up outputs, written before they are read in this
 * layer (and free on entry: gemma4's dense MLP, which uses them too, has
 * left its output in s->tmp). Leaves the ids, ascending, in s->hb; *out
 * points at them. Returns how many. */
static int predict_union(sl_session *s, int next, int n, int rows, const int **out)
{
    const sl_hparams *hp = &s->m->hp;
    const sl_layer *N = &s->m->layers[next];
    const sl_router_desc *r = &N->d.ffn.router;
    const int E = hp->n_embd, X = r->n_expert, K = r->top_k;
    for (int i = 0; i < rows; i++) {
        const float *x = s->x + (size_t)((int64_t)i * n / rows) * (size_t)E;
        float *o = s->hb2 + (size_t)i * (size_t)E;
        if (r->own_norm) sl_router_own_input(N, x, 1, E, hp->rms_eps, o);
        else sl_rmsnorm(o, x, N->ffn_norm.data, E, hp->rms_eps);
    }
    float *logits = s->hb;
    sl_fwd_mm_tensor(s, &N->router, s->hb2, rows, logits);
    sl_add_rows_bias(logits, N->router_b.data, rows, (size_t)X);
    int *ids = (int *)(logits + (size_t)rows * (size_t)X);
    unsigned char *seen = (unsigned char *)(ids + X);
    memset(seen, 0, (size_t)X);
    for (int i = 0; i < rows; i++) {
        const int32_t tk = r->hash ? s->tokens[(int64_t)i * n / rows] : -1;
        sl_router_guess(N, logits + (size_t)i * (size_t)X, tk, s->pf_ids, s->pf_w);
        for (int k = 0; k < K; k++) seen[s->pf_ids[k]] = 1;
    }
    int m = 0;
    for (int e = 0; e < X; e++)
        if (seen[e]) ids[m++] = e;
    *out = ids;
    return m;
}

int sl_moe_block(sl_session *s, const sl_layer *L, int il, int n, sl_err *err)
{
    const sl_hparams *hp = &s->m->hp;
    const sl_router_desc *rd = &L->d.ffn.router;
    const int E = hp->n_embd, K = rd->top_k, X = rd->n_expert;
    sl_route_batch(s, L, n);
    /* --route-trace: the recorded choice replaces the router's (which still
     * ran, so the compute is the real one) */
    sl_route_trace *rt = s->m->streamer ? sl_streamer_route_trace(s->m->streamer) : NULL;
    if (s->m->knobs) /* --n-expert-used, --cache-route: they take the trace's choice too */
        sl_route_knobs_apply(s->m->knobs, s, L, il, n, rt);
    for (int t = 0; rt && !s->m->knobs && t < n; t++) {
        /* the step of row t: a multi-session step's per-row steps, a session
         * replaying on its own, else the shared cursor (forward_multi.c) */
        const int64_t step = s->route_rows        ? s->route_rows[t]
                             : s->route_step >= 0 ? s->route_step + t
                                                  : sl_route_trace_cursor(rt) + t;
        sl_route_trace_choice(rt, step, il, s->topk_ids + (size_t)t * K,
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
    int n_pf = guess ? predict_experts(s, il + 1) : 0;
    const int *pf_ids = s->pf_ids;
    /* prefill: the next layer's union is read while this layer computes */
    const int u_rows = s->m->streamer && n > 1 && il + 1 < hp->n_layer &&
                               s->m->layers[il + 1].d.ffn.kind == SL_FFN_ROUTED
                           ? union_rows(s, n, s->m->layers[il + 1].d.ffn.router.n_expert)
                           : 0;
    bool uguess = u_rows > 0;
    if (uguess) {
        pthread_mutex_lock(&s->m->stream_mu);
        uguess = sl_streamer_wants_union_guess(s->m->streamer);
        pthread_mutex_unlock(&s->m->stream_mu);
    }
    if (uguess) n_pf = predict_union(s, il + 1, n, u_rows, &pf_ids);
    prepare_expert_inputs(s, L, n);

    /* the experts in use, in id order */
    int *ids = s->moe_cursor, n_ids = 0; /* the cursor scratch is free again */
    for (int e = 0; e < X; e++)
        if (s->moe_count[e + 1] > s->moe_count[e]) ids[n_ids++] = e;
    sl_expert_w *xs = s->moe_xw;
    if (s->m->streamer) {
        pthread_mutex_lock(&s->m->stream_mu);
        sl_streamer_observe_route(s->m->streamer, il, s->topk_ids, n, K);
        int rc = run_streamed_experts(s, L, il, ids, n_ids, xs, pf_ids, n_pf, uguess, err);
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
        sl_mat g = sl_fwd_mat(&L->gate_shexp), u = sl_fwd_mat(&L->up_shexp), d = sl_fwd_mat(&L->down_shexp);
        swiglu_ffn(s, &g, &u, &d, s->xb, n, s->tmp, L->d.ffn.clamp_sh);
        const float *gw = L->shexp_gate.data;
        for (int t = 0; t < n; t++) {
            const float *xb = s->xb + (size_t)t * E, *sh = s->tmp + (size_t)t * E;
            float *out = s->ffn_out + (size_t)t * E;
            if (L->d.ffn.shexp_ungated) { /* deepseek2, glm4moe: added as it is */
                for (int i = 0; i < E; i++) out[i] += sh[i];
                continue;
            }
            const float gate = 1.0f / (1.0f + expf(-sl_dot_f32_untiled(gw, xb, E)));
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
        int rc = sl_moe_block(s, L, il, n, err);
        if (rc) return rc;
    } else {
        sl_mat g = sl_fwd_mat(&L->ffn_gate), u = sl_fwd_mat(&L->ffn_up), d = sl_fwd_mat(&L->ffn_down);
        swiglu_ffn(s, &g, &u, &d, s->xb, n, s->ffn_out, 0.0f);
    }
    for (size_t i = 0; i < (size_t)n * E; i++) s->x[i] += s->ffn_out[i];
    return SL_OK;
}

/* ---- the whole model -------------------------------------------------- */

int sl_check_hidden(const float *x, int n, int64_t w, int pos0, int layer, sl_err *err)
{
    const int64_t bad = sl_first_beyond(x, (int64_t)n * w, SL_HIDDEN_MAX);
    if (bad < 0) return SL_OK;
    const int pos = pos0 + (int)(bad / w);
    if (isfinite(x[bad]))
        return sl_err_set(err, SL_EFORMAT, "the hidden state of the token at position %d holds "
                          "%g after layer %d, beyond the 2^64 a norm can square: the weights "
                          "may be damaged", pos, (double)x[bad], layer);
    return sl_err_set(err, SL_EFORMAT, "the hidden state of the token at position %d is not "
                      "finite (NaN or infinity) after layer %d: the weights may be damaged",
                      pos, layer);
}

int sl_check_logits(const float *x, int n, int64_t w, int pos0, sl_err *err)
{
    const int64_t bad = sl_first_nonfinite(x, (int64_t)n * w);
    if (bad < 0) return SL_OK;
    return sl_err_set(err, SL_EFORMAT, "the logits of the token at position %d are not finite "
                      "(NaN or infinity): the weights may be damaged", pos0 + (int)(bad / w));
}

int sl_forward_batch(sl_session *s, const int32_t *tokens, int n, sl_err *err)
{
    const sl_model *m = s->m;
    const int E = m->hp.n_embd;
    sl_mat emb = sl_fwd_mat(&m->tok_embd);
    for (int t = 0; t < n; t++) sl_mat_row_to_float(&emb, tokens[t], s->x + (size_t)t * E);
    if (m->embd_scale != 0.0f) /* gemma4: the rows times sqrt(n_embd) */
        for (size_t i = 0; i < (size_t)n * E; i++) s->x[i] *= m->embd_scale;
    s->tokens = tokens; /* hash routing reads them */
    if (m->hp.n_hc > 0) sl_ds4_embed(s, n); /* deepseek4: the rows to every stream */
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer *L = &m->layers[il];
        if (L->d.norm == SL_NORM_HC) { /* deepseek4 (block_ds4.c) */
            int rc = sl_block_ds4(s, L, il, n, err);
            if (!rc) rc = sl_check_hidden(s->x, n, E, s->n_past, il, err);
            if (rc) return rc;
            continue;
        }
        if (L->d.norm == SL_NORM_SANDWICH) { /* gemma4 (block_gemma4.c) */
            int rc = sl_block_sandwich(s, L, il, n, err);
            if (!rc) rc = sl_check_hidden(s->x, n, E, s->n_past, il, err);
            if (rc) return rc;
            continue;
        }
        /* pre-norm: x += mixer(norm(x)) */
        for (int t = 0; t < n; t++)
            sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)t * E, L->attn_norm.data, E,
                       m->hp.rms_eps);
        sl_mixer_of(L->d.mixer)->forward(s, L, il, n, s->tmp);
        for (size_t i = 0; i < (size_t)n * E; i++) s->x[i] += s->tmp[i];
        int rc = ffn_block(s, L, il, n, err);
        if (!rc) rc = sl_check_hidden(s->x, n, E, s->n_past, il, err);
        if (rc) return rc;
    }
    /* the next batch replays the trace's next steps */
    if (m->streamer && sl_streamer_route_trace(m->streamer)) {
        if (s->route_step >= 0) s->route_step += n;
        else sl_route_trace_advance(sl_streamer_route_trace(m->streamer), n);
    }
    /* logits: every token's, or only the last one's */
    const int first = s->all_logits ? 0 : n - 1;
    const int cnt = n - first;
    if (m->hp.n_hc > 0) sl_ds4_head(s, first, cnt); /* deepseek4: the streams collapsed */
    for (int t = 0; t < cnt; t++)
        sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)(first + t) * E, m->output_norm.data, E,
                   m->hp.rms_eps);
    sl_fwd_mm_tensor(s, &m->output, s->xb, cnt, s->logits);
    if (m->logit_softcap > 0.0f)
        sl_softcap(s->logits, (int64_t)cnt * m->hp.n_vocab, m->logit_softcap);
    int rc = sl_check_logits(s->logits, cnt, m->hp.n_vocab, s->n_past + first, err);
    if (rc) return rc;
    s->n_logits = cnt;
    return SL_OK;
}

/* Additive (issue 13, multi-session batches: forward_multi.c): the FFN
 * block of layer L on the n rows of s->x, as sl_forward_batch runs it. */
int sl_ffn_block(sl_session *s, const sl_layer *L, int il, int n, sl_err *err)
{
    return ffn_block(s, L, il, n, err);
}
