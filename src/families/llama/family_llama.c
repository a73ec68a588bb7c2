/* family_llama.c - the llama family: llama (dense and Mixtral-style),
 * qwen2, qwen3, qwen2moe, qwen3moe, olmoe. Every layer is pre-norm causal
 * attention (optional q/k/v biases and q/k norms, normal or NeoX rope)
 * then a SwiGLU FFN: dense, or softmax-routed experts with an optional
 * sigmoid-gated shared expert. The differences are the arch table's flags. */
#include <math.h>
#include <string.h>

#include "model/model_internal.h"

/* Fills L->d from the hyperparameters and the arch flags (the same for
 * every layer of these families, but for dense vs routed llama layers). */
static void describe(const sl_model *m, sl_layer *L)
{
    const sl_hparams *hp = &m->hp;
    sl_layer_desc *d = &L->d;
    d->mixer = SL_MIXER_ATTN;
    d->norm = SL_NORM_PRE;
    d->attn = (sl_attn_desc){
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hp->head_dim,
        .head_dim_v = hp->head_dim_v,
        .qk_norm = m->arch->qk_norm,
        .scale = 1.0f / sqrtf((float)hp->head_dim),
        .rope = sl_hparams_rope(hp, m->arch->rope == SL_ROPE_NEOX),
    };
    d->ffn.act = SL_ACT_SWIGLU;
    if (d->ffn.kind == SL_FFN_ROUTED) {
        d->ffn.n_ff = hp->n_ff_exp;
        d->ffn.router = (sl_router_desc){.score = SL_SCORE_SOFTMAX, .n_expert = hp->n_expert,
                                         .top_k = hp->n_expert_used,
                                         .renorm = hp->expert_weights_norm};
        d->ffn.n_ff_shexp = m->arch->shared_expert ? hp->n_ff_shexp : 0;
        /* qwen2moe's graph takes the gate's sigmoid as ggml_silu(g) / g */
        d->ffn.shexp_silu_div = m->arch->shared_expert;
    } else {
        d->ffn.n_ff = hp->n_ff;
    }
}

int sl_family_llama_layer(sl_binder *b, int il)
{
    const sl_hparams *hp = &b->m->hp;
    const sl_arch *arch = b->m->arch;
    sl_layer *L = &b->m->layers[il];
    const uint64_t E = (uint64_t)hp->n_embd;
    const uint64_t q_dim = (uint64_t)hp->n_head * (uint64_t)hp->head_dim;
    const uint64_t k_dim = (uint64_t)hp->n_head_kv * (uint64_t)hp->head_dim;
    const uint64_t v_dim = (uint64_t)hp->n_head_kv * (uint64_t)hp->head_dim_v;
    const uint64_t o_in = (uint64_t)hp->n_head * (uint64_t)hp->head_dim_v;
    int rc;
    if ((rc = sl_bind_role(b, il, SL_LT_ATTN_NORM, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WQ, true, 2, E, q_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WK, true, 2, E, k_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WV, true, 2, E, v_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WO, true, 2, o_in, E, 0))) return rc;
    bool bias = arch->qkv_bias;
    if ((rc = sl_bind_role(b, il, SL_LT_BQ, bias, 1, q_dim, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_BK, bias, 1, k_dim, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_BV, bias, 1, v_dim, 0, 0))) return rc;
    if (arch->qk_norm == SL_QK_NORM_HEAD) {
        uint64_t hd = (uint64_t)hp->head_dim;
        if ((rc = sl_bind_role(b, il, SL_LT_Q_NORM, true, 1, hd, 0, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_K_NORM, true, 1, hd, 0, 0))) return rc;
    } else if (arch->qk_norm == SL_QK_NORM_FULL) {
        if ((rc = sl_bind_role(b, il, SL_LT_Q_NORM, true, 1, q_dim, 0, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_K_NORM, true, 1, k_dim, 0, 0))) return rc;
    }
    if ((rc = sl_bind_role(b, il, SL_LT_FFN_NORM, true, 1, E, 0, 0))) return rc;

    /* llama: dense or Mixtral-style, as the file's tensors say */
    const bool routed =
        arch->moe && (!arch->moe_optional ||
                      sl_has_gate_exps(b->m, il));
    L->d.ffn.kind = routed ? SL_FFN_ROUTED : SL_FFN_DENSE;
    if (L->d.ffn.kind == SL_FFN_ROUTED) {
        if (hp->n_expert == 0 || hp->n_ff_exp == 0)
            return sl_err_set(b->err, SL_EFORMAT, "layer %d has routed experts but "
                              "%s.expert_count / expert_feed_forward_length are missing",
                              il, arch->name);
        const uint64_t X = (uint64_t)hp->n_expert, F = (uint64_t)hp->n_ff_exp;
        if ((rc = sl_bind_role(b, il, SL_LT_ROUTER, true, 2, E, X, 0))) return rc;
        bool fused;
        rc = sl_bind_gate_up_exps(b, il, E, F, X, &fused);
        if (!rc) rc = sl_bind_role(b, il, SL_LT_DOWN_EXPS, true, 3, F, E, X);
        if (rc) return rc;
        if (arch->shared_expert) {
            const uint64_t S = (uint64_t)hp->n_ff_shexp;
            if (S == 0)
                return sl_err_set(b->err, SL_EFORMAT, "%s.expert_shared_feed_forward_length "
                                  "is missing", arch->name);
            if ((rc = sl_bind_role(b, il, SL_LT_GATE_SHEXP, true, 2, E, S, 0))) return rc;
            if ((rc = sl_bind_role(b, il, SL_LT_UP_SHEXP, true, 2, E, S, 0))) return rc;
            if ((rc = sl_bind_role(b, il, SL_LT_DOWN_SHEXP, true, 2, S, E, 0))) return rc;
            if ((rc = sl_bind_role(b, il, SL_LT_SHEXP_GATE, true, 1, E, 0, 0))) return rc;
        }
    } else {
        if (hp->n_ff == 0)
            return sl_err_set(b->err, SL_EFORMAT, "%s.feed_forward_length is missing",
                              arch->name);
        const uint64_t F = (uint64_t)hp->n_ff;
        if ((rc = sl_bind_role(b, il, SL_LT_FFN_GATE, true, 2, E, F, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_FFN_UP, true, 2, E, F, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_FFN_DOWN, true, 2, F, E, 0))) return rc;
    }
    describe(b->m, L);
    return SL_OK;
}
