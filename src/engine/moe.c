/* moe.c - a routed layer's FFN, one way down:
 *
 *   route (router.c) -> the lossy knobs or a replayed route trace ->
 *   group the (token, rank) slots by expert -> guess the next layer's
 *   experts for read-ahead (streamed) -> quantise the inputs once ->
 *   the experts through one source (expert_src.h: resident or streamed,
 *   the same loop) -> each token's weighted sum in top-k rank order ->
 *   + the shared expert
 *
 * Each expert's weights are read once per batch, its rows multiplied for
 * every token routed to it; every output value is one thread's fixed-order
 * sum, so the results are the same for any grouping of the experts (which
 * the cache size and the order reads land in decide), any thread count
 * and any batch split. */
#include <math.h>
#include <string.h>

#include "engine/block.h"
#include "engine/expert_src.h"
#include "engine/ffn.h"
#include "engine/fwd_mm.h"
#include "engine/model_runtime.h"
#include "engine/route_knobs.h"
#include "engine/router.h"
#include "engine/session.h"
#include "experts/route_trace.h"

/* Rows [first, first + cnt) of y (width w) times expert e's scale, when
 * the layer has per-expert scales (the tensor sc, [n_expert]). */
static void scale_rows(float *y, const sl_tensor *sc, int e, int first, int cnt, size_t w)
{
    if (!sc->data) return;
    const float f = ((const float *)sc->data)[e];
    for (size_t i = (size_t)first * w; i < (size_t)(first + cnt) * w; i++) y[i] *= f;
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
        /* an expert's products have one order for every row: no forms */
        it[2 * i] = (sl_mm_item){&xs[i].g, s->moe_acts_g + first, cnt, s->hb + first * F, F, NULL};
        it[2 * i + 1] =
            (sl_mm_item){&xs[i].u, s->moe_acts_u + first, cnt, s->hb2 + first * F, F, NULL};
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
    if (L->d.ffn.clamp > 0.0f && s->m->hp.swiglu_clamp_op) { /* deepseek4, 2026-09 */
        for (int i = 0; i < n_rows; i++)
            sl_ffn_swiglu_clamp_op(s->hb + (size_t)s->moe_rows[i] * F,
                                   s->hb2 + (size_t)s->moe_rows[i] * F, F, L->d.ffn.clamp);
        sl_ffn_prepare_down_rows(s, &xs[0].d, s->moe_rows, n_rows, s->down_acts);
    } else {
        if (L->d.ffn.clamp > 0.0f) /* deepseek4 */
            for (int i = 0; i < n_rows; i++)
                sl_ffn_clamp_swiglu(s->hb + (size_t)s->moe_rows[i] * F,
                                    s->hb2 + (size_t)s->moe_rows[i] * F, F, L->d.ffn.clamp);
        sl_ffn_prepare_down(s, &xs[0].d, s->moe_rows, n_rows, s->down_acts, L->d.ffn.act);
    }
    for (int i = 0; i < nx; i++) {
        const int first = s->moe_count[xs[i].e], cnt = s->moe_count[xs[i].e + 1] - first;
        it[i] = (sl_mm_item){&xs[i].d, s->down_acts + first, cnt, s->exp_out + first * E, E, NULL};
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

/* Runs the batch's experts ids[0..n_ids) from src: the ready ones are
 * computed together while the missing ones are read, then the read ones
 * in groups of those that have landed. A cache smaller than the set takes
 * it in rounds. The guess is handed over after the first round's own
 * misses, so those are read first. */
static int run_expert_set(sl_session *s, const sl_layer *L, sl_expert_src *src, const int *ids,
                          int n_ids, const sl_expert_guess *guess, sl_err *err)
{
    sl_expert_w *xs = s->moe_xw;
    for (int done = 0; done < n_ids;) {
        int taken = 0;
        int rc = sl_expert_src_begin(src, ids + done, n_ids - done, &taken, err);
        if (!rc && done == 0) sl_expert_src_read_ahead(src, guess);
        if (!rc && taken == 0)
            rc = sl_err_set(err, SL_ENOMEM, "the expert cache has no free slot");
        while (!rc) {
            /* the first may wait for a read; the rest are in memory already */
            int nx = 0;
            while (nx == 0 || sl_expert_src_ready(src) > 0) {
                rc = sl_expert_src_next(src, &xs[nx], err);
                if (rc != 1) break;
                nx++;
                rc = 0;
            }
            if (nx > 0 && rc == 0) run_experts(s, L, xs, nx);
            for (int i = 0; i < nx; i++) sl_expert_src_release(src, xs[i].e);
            if (rc == 0 && nx == 0) break; /* the set is done */
            if (rc < 0) break;
        }
        if (rc) {
            sl_expert_src_abort(src);
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

/* The router's choice for the batch's n tokens in s->topk_ids / topk_w,
 * then what replaces it: the lossy knobs (--n-expert-used,
 * --cache-route, which take a replayed trace's choice too), or a replayed
 * route trace (--route-trace: the router still ran, so the compute is the
 * real one). */
static void route_layer(sl_session *s, const sl_layer *L, int il, int n)
{
    const int K = L->d.ffn.router.top_k;
    sl_route_batch(s, L, n);
    sl_route_trace *rt = s->m->rt->routing.trace;
    if (s->m->rt->routing.knobs) {
        sl_route_knobs_apply(s->m->rt->routing.knobs, s, L, il, n, rt);
        return;
    }
    for (int t = 0; rt && t < n; t++) {
        /* the step of row t: a multi-session step's per-row steps, a session
         * replaying on its own, else the shared cursor (forward_multi.c) */
        const int64_t step = s->route_rows        ? s->route_rows[t]
                             : s->route_step >= 0 ? s->route_step + t
                                                  : sl_route_trace_cursor(rt) + t;
        sl_route_trace_choice(rt, step, il, s->topk_ids + (size_t)t * K,
                              s->topk_w + (size_t)t * K);
    }
}

/* The next layer's experts to read ahead, when the model streams, the next
 * layer is routed and the streamer asks for a guess: one token's guess
 * (predict_experts) or a prompt batch's union (predict_union). Must run
 * before the expert inputs are prepared: it uses the same scratch. The
 * caller holds the stream lock (sl_moe_block). */
static sl_expert_guess guess_next_layer(sl_session *s, const sl_expert_src *src, int il, int n)
{
    sl_expert_guess g = {s->pf_ids, 0, false};
    const sl_model *m = s->m;
    if (!src->st || il + 1 >= m->hp.n_layer || m->layers[il + 1].d.ffn.kind != SL_FFN_ROUTED)
        return g;
    const int u_rows = n > 1 ? union_rows(s, n, m->layers[il + 1].d.ffn.router.n_expert) : 0;
    if (n > 1 && u_rows == 0) return g;
    if (!sl_expert_src_wants_guess(src, n > 1)) return g; /* under the layer's lock */
    if (n == 1) {
        g.n = predict_experts(s, il + 1);
    } else {
        g.n = predict_union(s, il + 1, n, u_rows, &g.ids);
        g.is_union = true;
    }
    return g;
}

/* Each token's experts' outputs weighted and summed in top-k rank order
 * into s->ffn_out. */
static void weighted_sum(sl_session *s, int K, int n)
{
    const int E = s->m->hp.n_embd;
    for (int t = 0; t < n; t++) {
        float *out = s->ffn_out + (size_t)t * E;
        memset(out, 0, sizeof(float) * (size_t)E);
        for (int r = 0; r < K; r++) {
            const float w = s->topk_w[(size_t)t * K + r];
            const float *eo = s->exp_out + (size_t)s->moe_pos[t * K + r] * E;
            for (int i = 0; i < E; i++) out[i] += w * eo[i];
        }
    }
}

/* The shared expert on s->xb added to s->ffn_out: as it is (deepseek2,
 * glm4moe, deepseek4) or through its sigmoid gate (qwen2moe, qwen35moe). */
static void add_shared_expert(sl_session *s, const sl_layer *L, int n)
{
    const int E = s->m->hp.n_embd;
    sl_mat g = sl_fwd_mat(&L->gate_shexp), u = sl_fwd_mat(&L->up_shexp),
           d = sl_fwd_mat(&L->down_shexp);
    sl_ffn_swiglu(s, &g, &u, &d, s->xb, n, s->tmp, L->d.ffn.clamp_sh, s->m->hp.swiglu_clamp_op);
    const float *gw = L->shexp_gate.data;
    for (int t = 0; t < n; t++) {
        const float *xb = s->xb + (size_t)t * E, *sh = s->tmp + (size_t)t * E;
        float *out = s->ffn_out + (size_t)t * E;
        if (L->d.ffn.shexp_ungated) {
            for (int i = 0; i < E; i++) out[i] += sh[i];
            continue;
        }
        const float gate = sl_shexp_gate(sl_dot_f32_untiled(gw, xb, E), L->d.ffn.shexp_silu_div);
        for (int i = 0; i < E; i++) out[i] += gate * sh[i];
    }
}

int sl_moe_block(sl_session *s, const sl_layer *L, int il, int n, sl_err *err)
{
    const int K = L->d.ffn.router.top_k, X = L->d.ffn.router.n_expert;
    sl_expert_src src;
    sl_expert_src_init(&src, s, L, il);
    /* The streamer serves one session at a time: a streamed layer takes its
     * lock once, from the routing (--cache-route asks what the cache
     * holds) through the read-ahead's question and the set's begin to the
     * last release, so every streamer call of the layer sees one state of
     * the cache and other sessions wait at one place per layer. */
    if (src.st) sl_runtime_lock(s->m->rt);
    route_layer(s, L, il, n);
    group_by_expert(s, &L->d.ffn.router, n);
    const sl_expert_guess guess = guess_next_layer(s, &src, il, n);
    prepare_expert_inputs(s, L, n);

    /* the experts in use, in id order */
    int *ids = s->moe_cursor, n_ids = 0; /* the cursor scratch is free again */
    for (int e = 0; e < X; e++)
        if (s->moe_count[e + 1] > s->moe_count[e]) ids[n_ids++] = e;
    sl_expert_src_observe(&src, s->topk_ids, n, K); /* resident: nothing */
    int rc = run_expert_set(s, L, &src, ids, n_ids, &guess, err);
    if (src.st) sl_runtime_unlock(s->m->rt);
    if (rc) return rc;
    weighted_sum(s, K, n);
    if (L->d.ffn.n_ff_shexp > 0) add_shared_expert(s, L, n);
    return SL_OK;
}
