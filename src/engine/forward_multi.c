/* forward_multi.c - one forward pass over tokens of several sessions
 * (continuous batching, issue 13).
 *
 * A batch session (its own K/V unused) holds the activations of every
 * token of the step, row after row, session after session. Per layer:
 *
 *   attn_norm of every row (batch scratch)
 *   -> each session's mixer on its own rows, in its own session: its
 *      positions, its K/V rows or recurrent state, its scratch and pool;
 *      the output lands in the batch's rows
 *   -> +residual; the FFN block on all rows at once in the batch session
 *      (the router per row; each routed expert read and computed once for
 *      every row that chose it)
 *   -> output norm and lm head of each session's last row, together.
 *
 * Every value is computed as sl_forward_batch computes it: matrix
 * products give each output row from its own activation row in an order
 * that does not depend on the number of rows (fwd_mm.h, matmul_order.h),
 * attention and the recurrences are per session, so each session's
 * logits are bit-identical to evaluating it alone. */
#include <string.h>

#include "engine/block.h"
#include "engine/fwd_mm.h"
#include "engine/mixer.h"
#include "engine/route_knobs.h"
#include "engine/session.h"
#include "experts/streamer.h"
#include "util/status.h"

bool sl_model_multi_ok(const sl_model *m)
{
    if (!m || m->knobs) return false;
    if (m->streamer && sl_streamer_route_trace(m->streamer)) return false;
    for (int il = 0; il < m->hp.n_layer; il++)
        if (m->layers[il].d.norm != SL_NORM_PRE) return false;
    return true;
}

/* The checks sl_session_eval makes, for every member, plus the batch's. */
static int check_multi(sl_session *b, sl_session *const *ss, const int32_t *const *toks,
                       const int *n, int count, int *total, sl_err *err)
{
    if (count < 1) return sl_err_set(err, SL_EINVAL, "a multi-session batch of %d sessions", count);
    if (!sl_model_multi_ok(b->m))
        return sl_err_set(err, SL_EINVAL, "this model cannot batch sessions together (a "
                          "sandwich-norm or hyper-connection layer, --route-trace or a lossy routing knob): "
                          "evaluate each session on its own");
    if (!b->all_logits)
        return sl_err_set(err, SL_EINVAL, "the batch session of a multi-session batch needs "
                          "all_logits (one logit row per member)");
    int sum = 0;
    for (int i = 0; i < count; i++) {
        sl_session *s = ss[i];
        if (s == b || s->m != b->m || s->all_logits)
            return sl_err_set(err, SL_EINVAL, "member %d of a multi-session batch is the batch "
                              "session, another model's, or keeps all logits", i);
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
 * `layer` is not finite; names the position of the first such row. */
static int finite_rows(sl_session *const *ss, const int *n, int count, const float *x,
                       int64_t w, int layer, sl_err *err)
{
    for (int i = 0, row = 0; i < count; row += n[i], i++) {
        const int64_t bad = sl_first_nonfinite(x + (size_t)row * (size_t)w, (int64_t)n[i] * w);
        if (bad < 0) continue;
        const int pos = ss[i]->n_past + (int)(bad / w);
        return sl_err_set(err, SL_EFORMAT, "the hidden state of the token at position %d "
                          "is not finite (NaN or infinity) after layer %d: the weights may "
                          "be damaged", pos, layer);
    }
    return SL_OK;
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
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer *L = &m->layers[il];
        for (int t = 0; t < total; t++)
            sl_rmsnorm(b->xb + (size_t)t * E, b->x + (size_t)t * E, L->attn_norm.data, E,
                       m->hp.rms_eps);
        const sl_mixer_ops *mx = sl_mixer_of(L->d.mixer);
        for (int i = 0, row = 0; i < count; row += n[i], i++) {
            sl_session *s = ss[i];
            memcpy(s->xb, b->xb + (size_t)row * E, sizeof(float) * (size_t)n[i] * E);
            mx->forward(s, L, il, n[i], b->tmp + (size_t)row * E);
        }
        for (size_t i = 0; i < (size_t)total * E; i++) b->x[i] += b->tmp[i];
        int rc = sl_ffn_block(b, L, il, total, err);
        if (!rc) rc = finite_rows(ss, n, count, b->x, E, il, err);
        if (rc) return rc;
    }
    /* each member's last row, normalised, then the lm head on all of them */
    for (int i = 0, row = 0; i < count; row += n[i], i++)
        sl_rmsnorm(b->xb + (size_t)i * E, b->x + (size_t)(row + n[i] - 1) * E,
                   m->output_norm.data, E, m->hp.rms_eps);
    sl_fwd_mm_tensor(b, &m->output, b->xb, count, b->logits);
    const size_t V = (size_t)m->hp.n_vocab;
    if (m->logit_softcap > 0.0f) sl_softcap(b->logits, (int64_t)count * (int64_t)V, m->logit_softcap);
    for (int i = 0; i < count; i++) {
        const int last = n[i] - 1; /* position of member i's logit row: its last token */
        if (sl_first_nonfinite(b->logits + (size_t)i * V, (int64_t)V) >= 0)
            return sl_err_set(err, SL_EFORMAT, "the logits of the token at position %d are "
                              "not finite (NaN or infinity): the weights may be damaged",
                              ss[i]->n_past + last);
    }
    for (int i = 0; i < count; i++) {
        memcpy(ss[i]->logits, b->logits + (size_t)i * V, sizeof(float) * V);
        ss[i]->n_logits = 1;
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
    for (int i = 0; i < count; i++) sl_session_batch_begin(ss[i]);
    batch->n_logits = 0;
    rc = forward_multi(batch, ss, toks, n, count, total, err);
    sl_session_guards_verify(&batch->layout, batch->arena);
    for (int i = 0; i < count; i++) {
        sl_session_guards_verify(&ss[i]->layout, ss[i]->arena);
        sl_session_batch_end(ss[i], n[i], rc); /* as sl_session_eval: rings, position, snapshot */
    }
    return rc;
}
