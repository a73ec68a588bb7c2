/* expert_src.c - resident and streamed experts behind one protocol
 * (expert_src.h). */
#include "engine/expert_src.h"
#include "engine/model_runtime.h"
#include "engine/session.h"
#include "experts/usage_history.h"

/* Expert e of a stacked [cols, rows, n_expert] tensor. */
static sl_mat expert_mat(const sl_tensor *t, int e)
{
    sl_mat m = sl_fwd_mat(t);
    const size_t stride = t->expert_bytes ? (size_t)t->expert_bytes : (size_t)m.rows * m.row_bytes;
    m.data = (const uint8_t *)t->data + (size_t)e * stride;
    m.n_experts = (int64_t)t->ne[2];
    return m;
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

void sl_expert_src_init(sl_expert_src *src, const sl_session *s, const sl_layer *L, int il)
{
    const sl_runtime *rt = s->m->rt;
    *src = (sl_expert_src){.L = L, .il = il, .st = rt->streamer,
                           .usage = rt->streamer ? rt->routing.usage : NULL};
}

int sl_expert_src_begin(sl_expert_src *src, const int *ids, int n, int *taken, sl_err *err)
{
    if (src->st) {
        const int rc = sl_streamer_begin(src->st, src->il, ids, n, taken, err);
        if (!rc && src->usage)
            for (int i = 0; i < *taken; i++) sl_usage_add(src->usage, src->il, ids[i], 1.0);
        return rc;
    }
    src->ids = ids;
    src->n = n;
    src->next = 0;
    *taken = n;
    return SL_OK;
}

bool sl_expert_src_wants_guess(const sl_expert_src *src, bool is_union)
{
    if (!src->st) return false;
    return is_union ? sl_streamer_wants_union_guess(src->st) : sl_streamer_wants_guess(src->st);
}

void sl_expert_src_observe(sl_expert_src *src, const int *ids, int n, int k)
{
    if (src->st) sl_streamer_observe_route(src->st, src->il, ids, n, k);
}

void sl_expert_src_read_ahead(sl_expert_src *src, const sl_expert_guess *g)
{
    if (!src->st) return;
    if (g->n > 0 && g->is_union) sl_streamer_prefetch_union(src->st, src->il + 1, g->ids, g->n);
    else if (g->n > 0) sl_streamer_prefetch(src->st, src->il + 1, g->ids, g->n);
    else sl_streamer_prefetch_learned(src->st, src->il); /* if learned guesses are on */
}

int sl_expert_src_next(sl_expert_src *src, sl_expert_w *w, sl_err *err)
{
    const sl_layer *L = src->L;
    if (!src->st) {
        if (src->next == src->n) return 0;
        const int e = src->ids[src->next++];
        *w = (sl_expert_w){e, expert_mat(&L->gate_exps, e), expert_mat(&L->up_exps, e),
                           expert_mat(&L->down_exps, e)};
        return 1;
    }
    const void *p[SL_N_PROJ];
    int rc = sl_streamer_next(src->st, &w->e, p, err);
    if (rc != 1) return rc;
    w->g = slice_mat(&L->gate_exps, p[SL_PROJ_GATE]);
    w->u = slice_mat(&L->up_exps, p[SL_PROJ_UP]);
    w->d = slice_mat(&L->down_exps, p[SL_PROJ_DOWN]);
    return 1;
}

int sl_expert_src_ready(const sl_expert_src *src)
{
    return src->st ? sl_streamer_ready(src->st) : src->n - src->next;
}

void sl_expert_src_release(sl_expert_src *src, int e)
{
    if (src->st) sl_streamer_release(src->st, e);
}

void sl_expert_src_abort(sl_expert_src *src)
{
    if (src->st) sl_streamer_abort(src->st);
}
