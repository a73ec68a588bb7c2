/* family_gptoss.c - gpt-oss (gpt-oss-20b / 120b) as ../shared/ARCHS.md
 * section 2 gives llama.cpp's rules: pre-norm attention with q/k/v/o
 * biases, one sink logit per head, NeoX YaRN rope over the whole head, a
 * sliding window on the layers l % P < P - 1 (P =
 * attention.sliding_window_pattern, default 2: the even layers); then
 * routed experts (the FFN pre-norm is post_attention_norm): top-k of the
 * biased router logits, softmax over those k, per-expert gate/up/down
 * biases and the clamped SwiGLU with (u + 1). The expert biases stay
 * resident when experts are streamed (they are small). */
#include <math.h>

#include "model/model_internal.h"

static bool get_u32(const sl_gguf *g, const char *suffix, uint32_t *out)
{
    char key[128];
    return sl_gguf_get_u32(g, sl_arch_key(key, sizeof key, "gpt-oss", suffix), out);
}

int sl_family_gptoss_layer(sl_binder *b, int il)
{
    const sl_hparams *hp = &b->m->hp;
    sl_layer *L = &b->m->layers[il];
    const uint64_t E = (uint64_t)hp->n_embd, H = (uint64_t)hp->n_head;
    const uint64_t q_dim = H * (uint64_t)hp->head_dim;
    const uint64_t kv_dim = (uint64_t)hp->n_head_kv * (uint64_t)hp->head_dim;
    uint32_t n_swa = 0, pattern = 2;
    if (!get_u32(b->m->gguf, "attention.sliding_window", &n_swa) || n_swa == 0)
        return sl_err_set(b->err, SL_EFORMAT, "gpt-oss.attention.sliding_window is missing "
                          "or 0: a gpt-oss file needs it (128 in the published models)");
    if (n_swa > (1u << 24))
        return sl_err_set(b->err, SL_EFORMAT, "metadata 'gpt-oss.attention.sliding_window' = "
                          "%u is out of range [1, %u]", n_swa, 1u << 24);
    get_u32(b->m->gguf, "attention.sliding_window_pattern", &pattern);
    if (pattern == 0)
        return sl_err_set(b->err, SL_EFORMAT, "gpt-oss.attention.sliding_window_pattern is 0");
    if (hp->n_expert == 0 || hp->n_ff_exp == 0 || hp->n_expert_used == 0)
        return sl_err_set(b->err, SL_EFORMAT, "gpt-oss needs expert_count, expert_used_count "
                          "and expert_feed_forward_length");
    if (hp->head_dim != hp->head_dim_v)
        return sl_err_set(b->err, SL_EFORMAT, "gpt-oss: key_length %d and value_length %d "
                          "differ", hp->head_dim, hp->head_dim_v);
    const uint64_t X = (uint64_t)hp->n_expert, F = (uint64_t)hp->n_ff_exp;
    int rc;
    if ((rc = sl_bind_role(b, il, SL_LT_ATTN_NORM, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WQ, true, 2, E, q_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WK, true, 2, E, kv_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WV, true, 2, E, kv_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WO, true, 2, q_dim, E, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_BQ, true, 1, q_dim, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_BK, true, 1, kv_dim, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_BV, true, 1, kv_dim, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_BO, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SINKS, true, 1, H, 0, 0))) return rc;
    if ((rc = sl_bind_named(b, il, SL_LT_FFN_NORM, "post_attention_norm.weight", true, 1, E, 0,
                            0)))
        return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_ROUTER, true, 2, E, X, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_ROUTER_B, true, 1, X, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_GATE_EXPS, true, 3, E, F, X))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_UP_EXPS, true, 3, E, F, X))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_DOWN_EXPS, true, 3, F, E, X))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_GATE_EXPS_B, true, 2, F, X, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_UP_EXPS_B, true, 2, F, X, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_DOWN_EXPS_B, true, 2, E, X, 0))) return rc;

    sl_layer_desc *d = &L->d;
    d->mixer = SL_MIXER_ATTN;
    d->norm = SL_NORM_PRE;
    const bool sliding = (uint32_t)il % pattern < pattern - 1;
    d->attn = (sl_attn_desc){
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hp->head_dim,
        .head_dim_v = hp->head_dim_v,
        .qk_norm = SL_QK_NORM_NONE,
        .scale = 1.0f / sqrtf((float)hp->head_dim),
        .rope = sl_hparams_rope(hp, true),
        .sinks = true,
        .sink_fma = b->llama_rev >= SL_LLAMA_REV_2026_09,
        .n_swa = sliding ? (int)n_swa : 0,
    };
    d->ffn = (sl_ffn_desc){
        .kind = SL_FFN_ROUTED,
        .act = SL_ACT_SWIGLU_OAI,
        .n_ff = hp->n_ff_exp,
        .router = {.score = SL_SCORE_TOPK_SOFTMAX, .n_expert = hp->n_expert,
                   .top_k = hp->n_expert_used, .renorm = false},
        .biases = true,
    };
    return SL_OK;
}
