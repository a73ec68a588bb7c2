/* family_glm4moe.c - GLM-4.5 / 4.6 / 4.7 (glm4moe) as ../shared/ARCHS.md
 * section 4 gives llama.cpp's rules: pre-norm attention with optional
 * q/k/v biases and optional per-head q/k RMS norms (after the biases,
 * before rope), NeoX rope over the first rope.dimension_count dims of each
 * head (half of it in the published models), scale 1/sqrt(head_dim); the
 * FFN pre-norm is post_attention_norm; the first leading_dense_block_count
 * layers are dense SwiGLU, the rest routed as the file's routing keys say
 * (sigmoid by default, the exp_probs_b selection bias, which this
 * architecture requires, renorm, scaling) beside an ungated shared expert.
 * MTP blocks (nextn_predict_layers) are not layers of the main pass: their
 * tensors stay in the file, unread. */
#include <math.h>

#include "model/model_internal.h"

int sl_family_glm4moe_layer(sl_binder *b, int il)
{
    const sl_hparams *hp = &b->m->hp;
    sl_layer *L = &b->m->layers[il];
    const uint64_t E = (uint64_t)hp->n_embd, D = (uint64_t)hp->head_dim;
    const uint64_t q_dim = (uint64_t)hp->n_head * D, kv_dim = (uint64_t)hp->n_head_kv * D;
    if (hp->head_dim != hp->head_dim_v)
        return sl_err_set(b->err, SL_EFORMAT, "glm4moe: key_length %d and value_length %d "
                          "differ", hp->head_dim, hp->head_dim_v);
    int rc;
    if ((rc = sl_bind_role(b, il, SL_LT_ATTN_NORM, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WQ, true, 2, E, q_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WK, true, 2, E, kv_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WV, true, 2, E, kv_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WO, true, 2, q_dim, E, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_BQ, false, 1, q_dim, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_BK, false, 1, kv_dim, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_BV, false, 1, kv_dim, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_Q_NORM, false, 1, D, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_K_NORM, false, 1, D, 0, 0))) return rc;
    if (!L->q_norm.info != !L->k_norm.info)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "glm4moe layer %d has only one of "
                          "attn_q_norm and attn_k_norm; sluice needs both or neither", il);
    if ((rc = sl_bind_ds_ffn(b, il, "post_attention_norm.weight", true, SL_SCORE_SIGMOID)))
        return rc;

    sl_layer_desc *d = &L->d;
    d->mixer = SL_MIXER_ATTN;
    d->norm = SL_NORM_PRE;
    d->attn = (sl_attn_desc){
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hp->head_dim,
        .head_dim_v = hp->head_dim_v,
        .qk_norm = L->q_norm.info ? SL_QK_NORM_HEAD : SL_QK_NORM_NONE,
        .scale = 1.0f / sqrtf((float)hp->head_dim),
        .rope = sl_hparams_rope(hp, true),
    };
    return SL_OK;
}
