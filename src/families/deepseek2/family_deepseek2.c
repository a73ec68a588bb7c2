/* family_deepseek2.c - DeepSeek-V3 / R1, Kimi K2, GLM-4.7-Flash (deepseek2)
 * as ../shared/ARCHS.md section 3 gives llama.cpp's rules, and the routed
 * FFN it shares with glm4moe (section 4).
 *
 * Attention is multi-head latent attention in its absorbed form (the
 * attn_k_b / attn_v_b files llama.cpp writes when key_length_mla and
 * value_length_mla are present; the older attn_kv_b form is refused): the
 * cache holds the normalised KV latent and the roped shared key, NORM rope
 * on the rope part only, YaRN's magnitude folded into the softmax scale.
 * The first leading_dense_block_count layers have a dense SwiGLU FFN, the
 * others routed experts (the file's expert_gating_func; selection bias,
 * expert groups, renorm and scaling as its keys say) beside an ungated
 * shared expert. MTP blocks (nextn) are not layers of the main pass. */
#include <math.h>

#include "model/model_internal.h"
#include "util/checked.h"

/* The router's score from expert_gating_func (0: absent, the arch's
 * default). */
static int gating_score(const sl_binder *b, sl_router_score def, sl_router_score *out)
{
    switch (b->m->hp.gating_func) {
    case 0: *out = def; return SL_OK;
    case 1: *out = SL_SCORE_SOFTMAX; return SL_OK;
    case 2: *out = SL_SCORE_SIGMOID; return SL_OK;
    case 3: *out = SL_SCORE_TOPK_SOFTMAX; return SL_OK;
    default:
        return sl_err_set(b->err, SL_EUNSUPPORTED, "%s.expert_gating_func %d is not supported "
                          "(1 softmax, 2 sigmoid, 3 softmax over the chosen)",
                          b->m->arch->name, b->m->hp.gating_func);
    }
}

/* The group limit's keys must describe equal groups that can hold top-k. */
static int check_groups(const sl_binder *b, const sl_hparams *hp)
{
    if (hp->n_group <= 1) return SL_OK;
    const int per = hp->n_expert / hp->n_group;
    if (hp->n_group > 256) /* SL_ROUTER_MAX_GROUPS (engine/router.h) */
        return sl_err_set(b->err, SL_EUNSUPPORTED, "%s: expert_group_count %d is above 256",
                          b->m->arch->name, hp->n_group);
    if (hp->n_expert % hp->n_group != 0 || per < 2 || hp->n_group_used < 1 ||
        hp->n_group_used > hp->n_group || hp->n_expert_used > per * hp->n_group_used)
        return sl_err_set(b->err, SL_EFORMAT, "%s: expert_group_count %d / "
                          "expert_group_used_count %d do not fit %d experts with top-%d "
                          "(equal groups of 2 or more, enough kept for top-k)",
                          b->m->arch->name, hp->n_group, hp->n_group_used, hp->n_expert,
                          hp->n_expert_used);
    return SL_OK;
}

int sl_bind_ds_ffn(sl_binder *b, int il, const char *norm_name, bool bias_required,
                   sl_router_score default_score)
{
    sl_hparams *hp = &b->m->hp;
    sl_layer *L = &b->m->layers[il];
    sl_ffn_desc *f = &L->d.ffn;
    const uint64_t E = (uint64_t)hp->n_embd;
    int rc;
    if ((rc = sl_bind_named(b, il, SL_LT_FFN_NORM, norm_name, true, 1, E, 0, 0))) return rc;
    f->act = SL_ACT_SWIGLU;
    if (il + b->blk0 < hp->n_dense_lead) {
        if (hp->n_ff == 0)
            return sl_err_set(b->err, SL_EFORMAT, "%s: layer %d is dense "
                              "(leading_dense_block_count %d) but feed_forward_length is "
                              "missing", b->m->arch->name, il, hp->n_dense_lead);
        const uint64_t F = (uint64_t)hp->n_ff;
        f->kind = SL_FFN_DENSE;
        f->n_ff = hp->n_ff;
        if ((rc = sl_bind_role(b, il, SL_LT_FFN_GATE, true, 2, E, F, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_FFN_UP, true, 2, E, F, 0))) return rc;
        return sl_bind_role(b, il, SL_LT_FFN_DOWN, true, 2, F, E, 0);
    }
    if (hp->n_expert == 0 || hp->n_expert_used == 0 || hp->n_ff_exp == 0)
        return sl_err_set(b->err, SL_EFORMAT, "%s: layer %d is routed but expert_count, "
                          "expert_used_count or expert_feed_forward_length is missing",
                          b->m->arch->name, il);
    if ((rc = check_groups(b, hp))) return rc;
    sl_router_score score = default_score;
    if ((rc = gating_score(b, default_score, &score))) return rc;
    const uint64_t X = (uint64_t)hp->n_expert, F = (uint64_t)hp->n_ff_exp;
    if ((rc = sl_bind_role(b, il, SL_LT_ROUTER, true, 2, E, X, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_EXP_PROBS_B, bias_required, 1, X, 0, 0))) return rc;
    bool fused;
    if ((rc = sl_bind_gate_up_exps(b, il, E, F, X, &fused))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_DOWN_EXPS, true, 3, F, E, X))) return rc;
    *f = (sl_ffn_desc){
        .kind = SL_FFN_ROUTED,
        .act = SL_ACT_SWIGLU,
        .n_ff = hp->n_ff_exp,
        .router = {.score = score, .n_expert = hp->n_expert, .top_k = hp->n_expert_used,
                   .renorm = hp->expert_weights_norm, .sel_bias = L->exp_probs_b.info != NULL,
                   .n_group = hp->n_group, .n_group_used = hp->n_group_used,
                   .w_scale = hp->expert_weights_scale},
        .shexp_ungated = true,
    };
    if (hp->n_expert_shared > 0) {
        uint64_t S;
        if (!sl_mul_u64(F, (uint64_t)hp->n_expert_shared, &S) || S > (1u << 24))
            return sl_err_set(b->err, SL_EFORMAT, "%s: the shared expert's width %d x %d is "
                              "absurd", b->m->arch->name, hp->n_ff_exp, hp->n_expert_shared);
        if ((rc = sl_bind_role(b, il, SL_LT_GATE_SHEXP, true, 2, E, S, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_UP_SHEXP, true, 2, E, S, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_DOWN_SHEXP, true, 2, S, E, 0))) return rc;
        f->n_ff_shexp = (int)S;
        /* the session sizes its SwiGLU rows by the widest shared expert */
        if ((int)S > hp->n_ff_shexp) hp->n_ff_shexp = (int)S;
    }
    return SL_OK;
}

/* The softmax scale of MLA under llama.cpp's YaRN handling (deepseek2.cpp
 * and llama-context.cpp, both in the reference's generic build, so without
 * fused multiply-adds): the rope's magnitude is cancelled and mscale^2
 * goes into the scale. Also returns the rope's attn_factor. */
static float mla_scale(const sl_hparams *hp, int head_dim, float *rope_attn_factor)
{
    *rope_attn_factor = 1.0f;
    float mscale = 1.0f;
    if (hp->rope_scaling == SL_ROPE_SCALING_YARN) { /* sluice builds with -ffp-contract=off */
        const float ln = logf(1.0f / hp->rope_freq_scale);
        /* the context's attn_factor: get_mscale(f, m) / get_mscale(f, m_all)
         * (exactly 1 when the file has yarn_log_multiplier, else
         * 1 + 0.1 ln f), times 1 / (1 + 0.1 ln f) */
        const float ctx = hp->yarn_log_mul != 0.0f ? 1.0f : 0.1f * 1.0f * ln + 1.0f;
        const float attn_factor = ctx * (1.0f / (1.0f + 0.1f * ln));
        *rope_attn_factor = attn_factor;
        const float attn_factor_org = attn_factor * (1.0f + 0.1f * ln);
        mscale = attn_factor_org * (1.0f + 0.1f * hp->yarn_log_mul * ln);
    }
    return 1.0f * mscale * mscale / sqrtf((float)head_dim);
}

int sl_bind_mla_layer(sl_binder *b, int il, sl_router_score default_score)
{
    const sl_hparams *hp = &b->m->hp;
    sl_layer *L = &b->m->layers[il];
    const char *a = b->m->arch->name;
    const int H = hp->n_head, r = hp->kv_lora, hd = hp->head_dim_mla, hdv = hp->head_dim_v_mla;
    const int n_rot = hp->rope_dim;
    if (r == 0)
        return sl_err_set(b->err, SL_EFORMAT, "%s.attention.kv_lora_rank is missing", a);
    if (hd == 0 || hdv == 0)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "%s: attention.key_length_mla / "
                          "value_length_mla are missing: the older attn_kv_b form of MLA is "
                          "not supported (convert the model with a current llama.cpp)", a);
    if (n_rot <= 0 || n_rot >= hd)
        return sl_err_set(b->err, SL_EFORMAT, "%s: rope.dimension_count %d must be below "
                          "key_length_mla %d (the rest is the unroped part)", a, n_rot, hd);
    /* the mixer's scratch lives in the attention buffers sized for a
     * (r + rope, r) attention: the raw q there and in the FFN's rows */
    if (hd > r || hdv > r + n_rot || hp->q_lora > hp->n_embd)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "%s: sluice needs key_length_mla %d <= "
                          "kv_lora_rank %d, value_length_mla %d <= kv_lora_rank + rope and "
                          "q_lora_rank %d <= embedding_length %d", a, hd, r, hdv, hp->q_lora,
                          hp->n_embd);
    const uint64_t E = (uint64_t)hp->n_embd, nope = (uint64_t)(hd - n_rot);
    const uint64_t qd = (uint64_t)H * (uint64_t)hd;
    int rc;
    if ((rc = sl_bind_role(b, il, SL_LT_ATTN_NORM, true, 1, E, 0, 0))) return rc;
    if (hp->q_lora > 0) {
        const uint64_t ql = (uint64_t)hp->q_lora;
        if ((rc = sl_bind_role(b, il, SL_LT_WQ_A, true, 2, E, ql, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_Q_A_NORM, true, 1, ql, 0, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_WQ_B, true, 2, ql, qd, 0))) return rc;
    } else if ((rc = sl_bind_role(b, il, SL_LT_WQ, true, 2, E, qd, 0))) {
        return rc;
    }
    if ((rc = sl_bind_role(b, il, SL_LT_WKV_A, true, 2, E, (uint64_t)(r + n_rot), 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_KV_A_NORM, true, 1, (uint64_t)r, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WK_B, true, 3, nope, (uint64_t)r, (uint64_t)H))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WV_B, true, 3, (uint64_t)r, (uint64_t)hdv, (uint64_t)H)))
        return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WO, true, 2, (uint64_t)H * (uint64_t)hdv, E, 0)))
        return rc;
    if ((rc = sl_bind_ds_ffn(b, il, SL_T_FFN_NORM, false, default_score))) return rc;

    sl_layer_desc *d = &L->d;
    d->mixer = SL_MIXER_MLA;
    d->norm = SL_NORM_PRE;
    float rope_af;
    const float scale = mla_scale(hp, hd, &rope_af);
    d->mla = (sl_mla_desc){
        .n_head = H, .q_lora = hp->q_lora, .kv_lora = r, .head_dim = hd, .n_rot = n_rot,
        .head_dim_v = hdv, .scale = scale, .rope = sl_hparams_rope(hp, false),
    };
    d->mla.rope.attn_factor = rope_af;
    /* what the session's attention buffers must hold for this layer: one
     * K/V head of r + rope (values: the first r) for every query head */
    d->attn = (sl_attn_desc){.n_head = H, .n_head_kv = 1, .head_dim = r + n_rot,
                             .head_dim_v = r, .scale = scale, .rope = d->mla.rope};
    return SL_OK;
}

int sl_family_deepseek2_layer(sl_binder *b, int il)
{
    return sl_bind_mla_layer(b, il, SL_SCORE_SOFTMAX);
}
