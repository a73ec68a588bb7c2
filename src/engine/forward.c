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
#include <string.h>

#include "engine/block.h"
#include "engine/fwd_mm.h"
#include "engine/model_runtime.h"
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

/* llama.cpp evaluates its last layer past the mixer, and the lm head, for
 * the rows whose logits are asked only: a generation (not all_logits) asks
 * for a prompt's last row alone, which then takes a micro-batch of one's
 * product forms there. The batch's forms with that row's so changed, in
 * s->form_buf, or NULL when the batch does not hold that row. */
static const uint8_t *output_forms(sl_session *s, int n)
{
    const int p = s->prompt_n - 1 - s->n_past;
    if (s->all_logits || !s->mm_form || s->mm_form_n != n || p < 0 || p >= n) return NULL;
    memcpy(s->form_buf, s->mm_form, (size_t)n);
    s->form_buf[p] |= SL_MM_FORM_ONE | SL_MM_FORM_TAIL;
    return s->form_buf;
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
    const uint8_t *out_form = output_forms(s, n);
    for (int il = 0; il < m->hp.n_layer; il++) {
        s->mm_form_after = il == m->hp.n_layer - 1 ? out_form : NULL;
        int rc = sl_block_forward(s, &m->layers[il], il, n, err);
        s->mm_form_after = NULL;
        if (!rc) rc = sl_check_hidden(s->x, n, E, s->n_past, il, err);
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
    /* logits: every token's, or the last n_logit_rows tokens' */
    const int first = n > s->n_logit_rows ? n - s->n_logit_rows : 0;
    const int cnt = n - first;
    if (out_form) s->mm_form = out_form;
    if (s->mm_form) s->mm_form += first; /* the head's rows: the batch's last cnt */
    s->mm_form_n = cnt;
    if (stream->head) stream->head(s, first, cnt);
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
