/* block_gemma4.c - a gemma4 layer (../shared/ARCHS.md section 6), in
 * llama.cpp's order of operations:
 *
 *   a   = x + RMS(attn(RMS(x, attn_norm)), post_attention_norm)
 *   d   = GeGLU_dense(RMS(a, ffn_norm))
 *   routed layers: d = RMS(d, post_ffw_norm_1)
 *                  y = RMS(experts(RMS(a, pre_ffw_norm_2)), post_ffw_norm_2)
 *                  (router: engine/router.c, own_norm)
 *                  d = d + y
 *   x   = (RMS(d, post_ffw_norm) + a) * layer_output_scale
 *
 * Buffers: s->tmp holds the attention output, then the dense MLP's; s->xb
 * each block's normalised input; the experts' sum lands in s->ffn_out. */
#include <string.h>

#include "engine/block.h"
#include "engine/fwd_mm.h"
#include "engine/mixer.h"

/* rows[t] = RMS(rows[t], w) for the n rows of width E, in place. */
static void norm_rows(float *rows, const sl_tensor *w, int n, int E, float eps)
{
    for (int t = 0; t < n; t++)
        sl_rmsnorm(rows + (size_t)t * E, rows + (size_t)t * E, w->data, E, eps);
}

/* out(n, E) = down(gelu(gate x) * up x) for the n rows of s->xb. */
static void dense_geglu(sl_session *s, const sl_layer *L, int n, float *out)
{
    const sl_mat g = sl_fwd_mat(&L->ffn_gate), u = sl_fwd_mat(&L->ffn_up);
    const sl_mat d = sl_fwd_mat(&L->ffn_down);
    const sl_mat *gu[2] = {&g, &u};
    float *gu_out[2] = {s->hb, s->hb2};
    sl_fwd_mm_shared(s, gu, gu_out, 2, s->xb, n);
    const size_t F = (size_t)d.cols;
    for (int t = 0; t < n; t++) sl_geglu(s->hb + (size_t)t * F, s->hb2 + (size_t)t * F, (int64_t)F);
    sl_prep p = {&d, s->hb, F, NULL, NULL, n, s->act_down, sl_fwd_act_stride(d.type, d.cols),
                 (size_t)s->layout.bytes[SL_SB_act_down], s->down_acts, false};
    sl_fwd_prepare(s, &p);
    const sl_mm_item it = {&d, s->down_acts, n, out, (size_t)d.rows, sl_fwd_form(s, n)};
    sl_fwd_mm_run(s, &it, 1);
}

int sl_block_sandwich_after_mixer(sl_session *s, const sl_layer *L, int il, int n, sl_err *err)
{
    const sl_hparams *hp = &s->m->hp;
    const int E = hp->n_embd;
    const float eps = hp->rms_eps;
    const size_t nE = (size_t)n * (size_t)E;
    norm_rows(s->tmp, &L->post_attn_norm, n, E, eps);
    for (size_t i = 0; i < nE; i++) s->x[i] = s->tmp[i] + s->x[i];

    for (int t = 0; t < n; t++)
        sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)t * E, L->ffn_norm.data, E, eps);
    dense_geglu(s, L, n, s->tmp);
    if (L->d.ffn.kind == SL_FFN_ROUTED) {
        norm_rows(s->tmp, &L->post_ffw_norm_1, n, E, eps);
        for (int t = 0; t < n; t++)
            sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)t * E, L->pre_ffw_norm_2.data, E,
                       eps);
        int rc = sl_moe_block(s, L, il, n, err);
        if (rc) return rc;
        norm_rows(s->ffn_out, &L->post_ffw_norm_2, n, E, eps);
        for (size_t i = 0; i < nE; i++) s->tmp[i] = s->tmp[i] + s->ffn_out[i];
    }
    norm_rows(s->tmp, &L->post_ffw_norm, n, E, eps);
    for (size_t i = 0; i < nE; i++) s->x[i] = s->tmp[i] + s->x[i];
    if (L->out_scale.data) {
        const float sc = *(const float *)L->out_scale.data;
        for (size_t i = 0; i < nE; i++) s->x[i] *= sc;
    }
    return SL_OK;
}
