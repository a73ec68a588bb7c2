/* forward_multi.c - one forward pass over tokens of several sessions
 * (the server's continuous batching).
 *
 * A batch session (its own K/V unused) holds the activations of every
 * token of the step, row after row, session after session. Per layer:
 *
 *   attn_norm of every row (batch scratch)
 *   -> each session's mixer on its own rows, in its own session: its
 *      positions, its K/V rows or recurrent state, its scratch and pool;
 *      the output lands in the batch's rows. An attention layer's q, k, v
 *      products run once over every member's rows before the mixers, its o
 *      product once after them (fwd_mm.h's hook), so a weight row is read
 *      and unpacked once per step, not once per member
 *   -> the layer kind's part after the mixer (block.h: +residual, the FFN
 *      block) on all rows at once in the batch session (the router per
 *      row; each routed expert read and computed once for every row that
 *      chose it); kinds without that part cannot join a step
 *   -> each member's sl_session.on_hidden with its final rows (a drafter
 *      following the session, as sl_forward_batch calls it)
 *   -> output norm and lm head of each session's last row, together.
 *
 * Every value is computed as sl_forward_batch computes it: matrix
 * products give each output row from its own activation row in an order
 * that does not depend on the number of rows (fwd_mm.h, matmul_order.h),
 * attention and the recurrences are per session, so each session's
 * logits are bit-identical to evaluating it alone. */
#include <stdlib.h>
#include <string.h>

#include "engine/block.h"
#include "engine/fwd_mm.h"
#include "engine/mixer.h"
#include "engine/model_runtime.h"
#include "engine/out_rows.h"
#include "engine/route_knobs.h"
#include "engine/session.h"
#include "util/status.h"

/* sl_model_multi_ok with or without a --route-trace replay. */
static bool multi_ok(const sl_model *m, bool trace_ok)
{
    if (!m || m->rt->routing.knobs) return false;
    if (!trace_ok && m->rt->routing.trace) return false;
    for (int il = 0; il < m->hp.n_layer; il++)
        if (!sl_block_of(m->layers[il].d.norm)->after_mixer) return false;
    return true;
}

bool sl_model_multi_ok(const sl_model *m) { return multi_ok(m, false); }

int sl_session_set_route_step(sl_session *s, int64_t step, sl_err *err)
{
    if (!s || !s->m->rt->routing.trace)
        return sl_err_set(err, SL_EINVAL, "the session's model replays no --route-trace");
    if (s->m->rt->routing.knobs)
        return sl_err_set(err, SL_EINVAL, "a lossy routing knob (--n-expert-used, "
                          "--cache-route) replays the --route-trace's shared cursor only");
    if (step < -1)
        return sl_err_set(err, SL_EINVAL, "route trace step %lld (expected -1 or more)",
                          (long long)step);
    s->route_step = step;
    return SL_OK;
}

/* The checks sl_session_eval makes, for every member, plus the batch's. */
static int check_multi(sl_session *b, sl_session *const *ss, const int32_t *const *toks,
                       const int *n, int count, int *total, sl_err *err)
{
    if (count < 1) return sl_err_set(err, SL_EINVAL, "a multi-session batch of %d sessions", count);
    const bool trace = b->m->rt->routing.trace != NULL;
    if (!multi_ok(b->m, true))
        return sl_err_set(err, SL_EINVAL, "this model cannot batch sessions together (a "
                          "hyper-connection layer or a lossy routing knob): evaluate each "
                          "session on its own");
    if (!b->all_logits)
        return sl_err_set(err, SL_EINVAL, "the batch session of a multi-session batch needs "
                          "all_logits (one logit row per member)");
    int sum = 0;
    for (int i = 0; i < count; i++) {
        sl_session *s = ss[i];
        if (s == b || s->m != b->m || s->all_logits)
            return sl_err_set(err, SL_EINVAL, "member %d of a multi-session batch is the batch "
                              "session, another model's, or keeps all logits", i);
        if (trace && s->route_step < 0)
            return sl_err_set(err, SL_EINVAL, "member %d of a multi-session batch replays the "
                              "--route-trace through the shared cursor: batched members "
                              "replay on their own (sl_session_set_route_step)", i);
        for (int j = 0; j < i; j++)
            if (ss[j] == s)
                return sl_err_set(err, SL_EINVAL, "session %d appears twice in a multi-session "
                                  "batch (members %d and %d)", i, j, i);
        if (n[i] <= 0 || n[i] > s->n_batch_max)
            return sl_err_set(err, SL_EINVAL, "member %d: batch of %d tokens (expected 1 to %d)",
                              i, n[i], s->n_batch_max);
        if (s->n_past + n[i] > s->n_ctx)
            return sl_err_set(err, SL_EINVAL, "member %d: context is full: %d tokens cached + "
                              "%d new > %d (use a larger -c)", i, s->n_past, n[i], s->n_ctx);
        for (int t = 0; t < n[i]; t++)
            if (toks[i][t] < 0 || toks[i][t] >= b->m->hp.n_vocab)
                return sl_err_set(err, SL_EINVAL, "member %d: token id %d at batch position %d "
                                  "is outside the vocabulary [0, %d)", i, toks[i][t], t,
                                  b->m->hp.n_vocab);
        sum += n[i];
    }
    if (sum > b->n_batch_max || count > b->n_batch_max)
        return sl_err_set(err, SL_EINVAL, "a multi-session batch of %d tokens exceeds the batch "
                          "session's maximum %d", sum, b->n_batch_max);
    *total = sum;
    return SL_OK;
}

/* Fails when a value of the hidden state x (rows of width w) after layer
 * `layer` is out of range (sl_check_hidden); names the position of the
 * first such row. */
static int finite_rows(sl_session *const *ss, const int *n, const int *from, int count,
                       const float *x, int64_t w, int layer, sl_err *err)
{
    for (int i = 0, row = 0; i < count; row += n[i], i++) {
        const int rc = sl_check_hidden(x + (size_t)row * (size_t)w, n[i], w,
                                       ss[i]->n_past + (from ? from[i] : 0), layer, err);
        if (rc) return rc;
    }
    return SL_OK;
}

/* Before the last layer's part after the mixer: the rows each member's
 * sl_forward_batch would go on with (out_rows.h: its output rows alone, or
 * all), packed in member order in b->x, b->tmp and the forms; from[i] /
 * kept[i] say which of member i's rows stayed. Returns the rows kept. */
static int keep_out_rows(sl_session *b, const int *n, int count, const sl_out_rows *out,
                         int *from, int *kept)
{
    int at = 0;
    for (int i = 0, row = 0; i < count; row += n[i], i++) {
        from[i] = out[i].drop_in_layer ? out[i].first : 0;
        kept[i] = n[i] - from[i];
        const int src = row + from[i];
        const size_t k = (size_t)kept[i];
        sl_out_rows_move(b, at, src, kept[i]);
        if (out[i].drop_in_layer && out[i].form) memcpy(b->form_buf + at, out[i].form, k);
        else memmove(b->form_buf + at, b->form_buf + src, k);
        at += kept[i];
    }
    b->mm_form_n = at;
    return at;
}

/* Each member's mixer of layer L on its own rows and state, the output in
 * the batch's rows of b->tmp. An attention layer's projections are shared
 * by the members (fwd_mm.h's hook): q, k, v computed here once over every
 * row; o over every row after the last member's attention, when the layer
 * has no output bias (the mixer then leaves its output as the product
 * wrote it). Any product the hook does not take is computed by the mixer
 * as usual, so the hook changes which call computes a row, never its bits. */
static void run_mixers(sl_session *b, const sl_layer *L, int il, sl_session *const *ss,
                       const int *n, int count, int total)
{
    const int E = b->m->hp.n_embd;
    const sl_mixer_ops *mx = sl_mixer_of(L->d.mixer);
    const bool shared = count > 1 && L->d.mixer == SL_MIXER_ATTN;
    const sl_mat wq = sl_fwd_mat(&L->wq), wk = sl_fwd_mat(&L->wk), wv = sl_fwd_mat(&L->wv);
    const int n_qkv = L->d.attn.v_from_k ? 2 : 3; /* gemma4's full layers: no v */
    if (shared) {
        const sl_mat *qkv[3] = {&wq, &wk, &wv};
        float *out[3] = {b->q, b->k, b->v};
        sl_fwd_mm_shared(b, qkv, out, n_qkv, b->xb, total);
    }
    const int64_t o_cols = (int64_t)L->wo.ne[0];
    const bool defer = shared && !L->bo.data;
    bool deferred[SL_MULTI_MAX], all = true;
    for (int i = 0, row = 0; i < count; row += n[i], i++) {
        sl_session *s = ss[i];
        memcpy(s->xb, b->xb + (size_t)row * E, sizeof(float) * (size_t)n[i] * E);
        sl_fwd_hook h = {.s = s, .n = n[i]};
        if (shared) {
            h.n_pre = n_qkv;
            h.pre_data[0] = wq.data;
            h.pre_data[1] = wk.data;
            h.pre_data[2] = wv.data;
            h.pre_src[0] = b->q + (size_t)row * (size_t)wq.rows;
            h.pre_src[1] = b->k + (size_t)row * (size_t)wk.rows;
            h.pre_src[2] = b->v + (size_t)row * (size_t)wv.rows;
        }
        if (defer) {
            h.def_data = L->wo.data;
            h.def_x = b->attn_out + (size_t)row * (size_t)o_cols;
            h.def_cols = o_cols;
        }
        sl_fwd_hook_set(&h);
        mx->forward(s, L, il, n[i], b->tmp + (size_t)row * E);
        sl_fwd_hook_set(NULL);
        deferred[i] = h.def_used;
        all = all && h.def_used;
        sl_fwd_prof *prof = sl_fwd_prof_get();
        if (prof && shared) {
            prof->hook_calls++;
            prof->hook_pre += h.pre_used;
            prof->hook_def += h.def_used;
        }
    }
    if (!defer) return;
    if (all) {
        sl_fwd_mm_tensor(b, &L->wo, b->attn_out, total, b->tmp);
        return;
    }
    const uint8_t *form = b->mm_form;
    for (int i = 0, row = 0; i < count; row += n[i], i++)
        if (deferred[i]) {
            b->mm_form = form + row; /* member i's rows */
            b->mm_form_n = n[i];
            sl_fwd_mm_tensor(b, &L->wo, b->attn_out + (size_t)row * (size_t)o_cols, n[i],
                             b->tmp + (size_t)row * E);
        }
    b->mm_form = form;
    b->mm_form_n = total;
}

/* Profile (fwd_mm.h, bench only): the time since *t0 to the current
 * phase, then `next` becomes current. */
static void prof_phase(sl_fwd_prof *p, int next, double *t0)
{
    const double t = sl_fwd_prof_now(p);
    p->total[p->phase] += t - *t0;
    p->phase = next;
    *t0 = t;
}

/* Profile: the distinct experts and the choices of a routed layer's step
 * (the batch session's moe_count holds the offsets group_by_expert left). */
static void prof_experts(sl_fwd_prof *p, const sl_session *b, const sl_router_desc *r, int n)
{
    for (int e = 0; e < r->n_expert; e++) p->experts += b->moe_count[e + 1] > b->moe_count[e];
    p->choices += (long long)n * r->top_k;
    p->layer_steps++;
}

static int forward_multi(sl_session *b, sl_session *const *ss, const int32_t *const *toks,
                         const int *n, int count, int total, sl_err *err)
{
    const sl_model *m = b->m;
    const int E = m->hp.n_embd;
    const sl_mat emb = sl_fwd_mat(&m->tok_embd);
    for (int i = 0, row = 0; i < count; row += n[i], i++)
        for (int t = 0; t < n[i]; t++)
            sl_mat_row_to_float(&emb, toks[i][t], b->x + (size_t)(row + t) * E);
    if (m->embd_scale != 0.0f)
        for (size_t i = 0; i < (size_t)total * E; i++) b->x[i] *= m->embd_scale;
    /* the product forms of the batch's rows: each member's rows' own */
    for (int i = 0, row = 0; i < count; row += n[i], i++)
        memcpy(b->form_buf + row, ss[i]->row_kind + ss[i]->n_past, (size_t)n[i]);
    b->mm_form = b->form_buf;
    b->mm_form_n = total;
    /* each member's output rows, as its sl_forward_batch plans them */
    sl_out_rows out[SL_MULTI_MAX];
    int from[SL_MULTI_MAX], kept[SL_MULTI_MAX];
    for (int i = 0; i < count; i++) {
        sl_out_rows_plan(ss[i], n[i], &out[i]);
        from[i] = 0;
        kept[i] = n[i];
    }
    sl_fwd_prof *prof = sl_fwd_prof_get();
    double t0 = prof ? sl_fwd_prof_now(prof) : 0.0;
    if (prof) prof->phase = SL_PROF_OTHER;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer *L = &m->layers[il];
        for (int t = 0; t < total; t++)
            sl_rmsnorm(b->xb + (size_t)t * E, b->x + (size_t)t * E, L->attn_norm.data, E,
                       m->hp.rms_eps);
        if (prof) prof_phase(prof, SL_PROF_MIXER, &t0);
        run_mixers(b, L, il, ss, n, count, total);
        if (prof) prof_phase(prof, SL_PROF_FFN, &t0);
        const int rows = il == m->hp.n_layer - 1 ? keep_out_rows(b, n, count, out, from, kept)
                                                 : total;
        int rc = rows > 0 ? sl_block_of(L->d.norm)->after_mixer(b, L, il, rows, err) : SL_OK;
        if (prof) {
            prof_phase(prof, SL_PROF_OTHER, &t0);
            if (L->d.ffn.kind == SL_FFN_ROUTED) prof_experts(prof, b, &L->d.ffn.router, rows);
        }
        if (!rc) rc = finite_rows(ss, kept, from, count, b->x, E, il, err);
        if (rc) return rc;
    }
    /* each member's hook (a drafter following it) gets its own rows in its
     * own s->x, as sl_forward_batch hands them over */
    for (int i = 0, row = 0; i < count; row += kept[i], i++) {
        sl_session *s = ss[i];
        if (!s->on_hidden) continue; /* it kept every row (out_rows.h) */
        memcpy(s->x, b->x + (size_t)row * E, sizeof(float) * (size_t)n[i] * E);
        const int rc = s->on_hidden(s->on_hidden_ud, s, toks[i], n[i], err);
        if (rc) return rc;
    }
    /* each member's output rows (a token and its drafts to verify, or a
     * prompt's last row), normalised, then the lm head on all of them */
    int rows = 0;
    for (int i = 0, row = 0; i < count; row += kept[i], i++) {
        const int r = n[i] - out[i].first, skip = kept[i] - r; /* of the rows that went on */
        for (int t = 0; t < r; t++)
            sl_rmsnorm(b->xb + (size_t)(rows + t) * E, b->x + (size_t)(row + skip + t) * E,
                       m->output_norm.data, E, m->hp.rms_eps);
        if (out[i].form) memcpy(b->form_buf + rows, out[i].form, (size_t)r);
        else memmove(b->form_buf + rows, b->form_buf + row + skip, (size_t)r); /* rows <= row */
        rows += r;
    }
    b->mm_form_n = rows;
    if (prof) prof_phase(prof, SL_PROF_HEAD, &t0);
    sl_fwd_mm_tensor(b, &m->output, b->xb, rows, b->logits);
    if (prof) prof_phase(prof, SL_PROF_OTHER, &t0);
    const size_t V = (size_t)m->hp.n_vocab;
    if (m->logit_softcap > 0.0f) sl_softcap(b->logits, (int64_t)rows * (int64_t)V, m->logit_softcap);
    for (int i = 0, at = 0; i < count; i++) {
        const int r = n[i] - out[i].first;
        const int rc = sl_check_logits(b->logits + (size_t)at * V, r, (int64_t)V,
                                       ss[i]->n_past + n[i] - r, err);
        if (rc) return rc;
        at += r;
    }
    if (prof) {
        prof_phase(prof, SL_PROF_OTHER, &t0);
        prof->steps++;
    }
    for (int i = 0, at = 0; i < count; i++) {
        const int r = n[i] - out[i].first;
        memcpy(ss[i]->logits, b->logits + (size_t)at * V, sizeof(float) * V * (size_t)r);
        ss[i]->n_logits = r;
        at += r;
    }
    return SL_OK;
}

int sl_session_eval_multi(sl_session *batch, sl_session *const *ss, const int32_t *const *toks,
                          const int *n, int count, sl_err *err)
{
    if (count > SL_MULTI_MAX)
        return sl_err_set(err, SL_EINVAL, "a multi-session batch of %d sessions (at most %d)",
                          count, SL_MULTI_MAX);
    int total = 0;
    int rc = check_multi(batch, ss, toks, n, count, &total, err);
    if (rc) return rc;
    /* --route-trace: each row replays its member's own next steps */
    int64_t *route_rows = NULL;
    if (batch->m->rt->routing.trace) {
        route_rows = malloc(sizeof *route_rows * (size_t)total);
        if (!route_rows) return sl_err_set(err, SL_ENOMEM, "out of memory");
        for (int i = 0, row = 0; i < count; row += n[i], i++)
            for (int t = 0; t < n[i]; t++) route_rows[row + t] = ss[i]->route_step + t;
    }
    for (int i = 0; i < count; i++) sl_session_batch_begin(ss[i], n[i]);
    batch->n_logits = 0;
    batch->route_rows = route_rows;
    rc = forward_multi(batch, ss, toks, n, count, total, err);
    batch->route_rows = NULL;
    free(route_rows);
    if (!rc && route_rows)
        for (int i = 0; i < count; i++) ss[i]->route_step += n[i];
    sl_session_guards_verify(&batch->layout, batch->arena);
    for (int i = 0; i < count; i++) {
        sl_session_guards_verify(&ss[i]->layout, ss[i]->arena);
        sl_session_batch_end(ss[i], n[i], rc); /* as sl_session_eval: rings, position, snapshot */
    }
    return rc;
}
