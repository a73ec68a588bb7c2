/* forward.c - a micro-batch of tokens through the model, in data-flow order:
 *
 *   embedding rows -> the residual stream (block.h: the stream's kind may
 *   spread them) -> each layer as its kind wires it (block.h; pre-norm:
 *     attn_norm -> the layer's mixer (mixer.h) -> +residual;
 *     ffn_norm -> dense SwiGLU (ffn.c), or the routed experts and any
 *       shared expert (moe.c) -> +residual)
 *   -> the stream collapsed -> output norm -> lm head -> logits
 *
 * Work is split over the session's pool by weight rows (matrix products)
 * and by (token, head) pairs (attention, in the mixer); each output value is computed by
 * one thread in a fixed order, so results are bit-identical for any thread
 * count and any batch size. */
#include <math.h>

#include "engine/block.h"
#include "engine/fwd_mm.h"
#include "engine/model_runtime.h"
#include "engine/out_rows.h"
#include "engine/session.h"
#include "experts/route_trace.h"

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
    const sl_block_ops *stream = sl_block_stream(m);
    if (stream->embed) stream->embed(s, n);
    /* the rows whose logits are asked: the last layer may go on with them alone */
    sl_out_rows out;
    sl_out_rows_plan(s, n, &out);
    const int last = m->hp.n_layer - 1;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const bool drop = il == last && out.drop_in_layer;
        const int skip = drop ? out.first : 0; /* rows that ended past the mixer */
        int rc = sl_block_forward(s, &m->layers[il], il, n, drop ? &out : NULL, err);
        if (!rc) rc = sl_check_hidden(s->x, n - skip, E, s->n_past + skip, il, err);
        if (rc) return rc;
    }
    if (s->on_hidden) {
        int rc = s->on_hidden(s->on_hidden_ud, s, tokens, n, err);
        if (rc) return rc;
    }
    /* the next batch replays the trace's next steps */
    if (m->rt->routing.trace) {
        if (s->route_step >= 0) s->route_step += n;
        else sl_route_trace_advance(m->rt->routing.trace, n);
    }
    /* logits: rows [out.first, n), already rows 0 .. cnt - 1 when dropped */
    const int cnt = n - out.first, row0 = out.drop_in_layer ? 0 : out.first;
    s->mm_form = out.form ? out.form : s->mm_form ? s->mm_form + out.first : NULL;
    s->mm_form_n = cnt;
    s->logits_row0 = out.first;
    s->n_logits = 0;
    if (cnt == 0) return SL_OK;
    if (stream->head) stream->head(s, row0, cnt);
    for (int t = 0; t < cnt; t++)
        sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)(row0 + t) * E, m->output_norm.data, E,
                   m->hp.rms_eps);
    sl_fwd_mm_tensor(s, &m->output, s->xb, cnt, s->logits);
    if (m->logit_softcap > 0.0f)
        sl_softcap(s->logits, (int64_t)cnt * m->hp.n_vocab, m->logit_softcap);
    int rc = sl_check_logits(s->logits, cnt, m->hp.n_vocab, s->n_past + out.first, err);
    if (rc) return rc;
    s->n_logits = cnt;
    return SL_OK;
}
