/* block.c - the table of layer kinds (block.h) and the pre-norm kind. */
#include "engine/block.h"
#include "families/deepseek4/ds4.h"
#include "engine/ffn.h"
#include "engine/fwd_mm.h"
#include "engine/mixer.h"

/* Pre-norm after the mixer: its output added to the stream, then ffn_norm
 * and the dense SwiGLU or the routed experts, added too. */
static int prenorm_after_mixer(sl_session *s, const sl_layer *L, int il, int n, sl_err *err)
{
    const sl_hparams *hp = &s->m->hp;
    const int E = hp->n_embd;
    for (size_t i = 0; i < (size_t)n * E; i++) s->x[i] += s->tmp[i];
    for (int t = 0; t < n; t++)
        sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)t * E, L->ffn_norm.data, E, hp->rms_eps);
    if (L->d.ffn.kind == SL_FFN_ROUTED) {
        int rc = sl_moe_block(s, L, il, n, err);
        if (rc) return rc;
    } else {
        sl_mat g = sl_fwd_mat(&L->ffn_gate), u = sl_fwd_mat(&L->ffn_up), d = sl_fwd_mat(&L->ffn_down);
        sl_ffn_swiglu(s, &g, &u, &d, s->xb, n, s->ffn_out, 0.0f, false);
    }
    for (size_t i = 0; i < (size_t)n * E; i++) s->x[i] += s->ffn_out[i];
    return SL_OK;
}

static const sl_block_ops kinds[] = {
    [SL_NORM_PRE] = {"pre-norm", NULL, prenorm_after_mixer, NULL, NULL, NULL},
    [SL_NORM_SANDWICH] = {"sandwich", NULL, sl_block_sandwich_after_mixer, NULL, NULL, NULL},
    [SL_NORM_HC] = {"hyper-connections", sl_block_ds4, NULL, sl_ds4_embed, sl_ds4_head,
                    sl_ds4_scratch_floats},
};

const sl_block_ops *sl_block_of(sl_norm_place kind) { return &kinds[kind]; }

const sl_block_ops *sl_block_stream(const sl_model *m) { return sl_block_of(m->layers[0].d.norm); }

int sl_block_forward(sl_session *s, const sl_layer *L, int il, int n, const sl_out_rows *out,
                     sl_err *err)
{
    const sl_block_ops *k = sl_block_of(L->d.norm);
    if (k->forward) return k->forward(s, L, il, n, err);
    const sl_hparams *hp = &s->m->hp;
    const int E = hp->n_embd;
    for (int t = 0; t < n; t++)
        sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)t * E, L->attn_norm.data, E, hp->rms_eps);
    sl_mixer_of(L->d.mixer)->forward(s, L, il, n, s->tmp);
    if (!out) return k->after_mixer(s, L, il, n, err);
    /* the last layer goes on with the output rows alone, as their own batch */
    const int first = out->first, cnt = n - first;
    if (cnt == 0) return SL_OK;
    sl_out_rows_move(s, 0, first, cnt);
    const uint8_t *form = s->mm_form;
    const int form_n = s->mm_form_n;
    const int32_t *tokens = s->tokens;
    s->mm_form = out->form;
    s->mm_form_n = cnt;
    if (tokens) s->tokens = tokens + first;
    const int rc = k->after_mixer(s, L, il, cnt, err);
    s->mm_form = form;
    s->mm_form_n = form_n;
    s->tokens = tokens;
    return rc;
}
