/* family_qwen35.c - qwen35moe (Qwen3.5 / 3.6 MoE), as ../shared/ARCHS.md
 * section 1 writes llama.cpp's rules: three of every four layers (by
 * full_attention_interval, or attention.recurrent_layers) are gated
 * DeltaNet, the others full attention whose q projection carries a
 * sigmoid output gate per head, q/k norms and partial rope (IMROPE, which
 * for text is NeoX over rope.dimension_count dims, but for the pairs its
 * sections give the fourth position, 0 for text). Every layer's FFN reads
 * post_attention_norm and is softmax-routed experts (top-k renormalised)
 * beside a sigmoid-gated shared expert. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/llama_rev.h"
#include "model/model_internal.h"

static bool get_u32(const sl_gguf *g, const char *suffix, uint32_t *out)
{
    char key[128];
    return sl_gguf_get_u32(g, sl_arch_key(key, sizeof key, "qwen35moe", suffix), out);
}

/* A required "qwen35moe.<suffix>" in [1, max]. */
static int need(sl_binder *b, const char *suffix, uint32_t max, int *out)
{
    uint32_t v;
    if (!get_u32(b->m->gguf, suffix, &v))
        return sl_err_set(b->err, SL_EFORMAT, "missing or non-integer metadata key "
                          "'qwen35moe.%s'", suffix);
    if (v == 0 || v > max)
        return sl_err_set(b->err, SL_EFORMAT, "metadata 'qwen35moe.%s' = %u is out of range "
                          "[1, %u]", suffix, v, max);
    *out = (int)v;
    return SL_OK;
}

/* Whether layer il is gated DeltaNet: attention.recurrent_layers when the
 * file has it, else every layer but each interval-th. */
static int is_linear(sl_binder *b, int il, bool *linear)
{
    char key[128];
    const sl_gguf_array *arr = sl_gguf_get_arr(
        b->m->gguf, sl_arch_key(key, sizeof key, "qwen35moe", "attention.recurrent_layers"));
    if (arr) {
        if (arr->type != SL_GGUF_BOOL || arr->n < (uint64_t)b->m->hp.n_layer)
            return sl_err_set(b->err, SL_EFORMAT, "'%s' must be %d booleans", key,
                              b->m->hp.n_layer);
        *linear = ((const uint8_t *)arr->data)[il] != 0;
        return SL_OK;
    }
    uint32_t interval = 4;
    get_u32(b->m->gguf, "full_attention_interval", &interval);
    if (interval == 0)
        return sl_err_set(b->err, SL_EFORMAT, "qwen35moe.full_attention_interval is 0");
    *linear = (il + 1) % (int)interval != 0;
    return SL_OK;
}

/* IMROPE's rope.dimension_sections into sec: four counts (t, h, w, e),
 * none negative, one of t/h/w positive, summing to at most the head size
 * (what llama.cpp's rope op asserts). Any such split is honoured: for text the pairs whose
 * sector falls to "e" rotate by position 0 (sl_rope_pair_at_zero), the
 * others as NeoX. */
static int read_rope_sections(sl_binder *b, int sec[4])
{
    char key[128];
    const sl_gguf_array *arr = sl_gguf_get_arr(
        b->m->gguf, sl_arch_key(key, sizeof key, "qwen35moe", "rope.dimension_sections"));
    if (!arr) return sl_err_set(b->err, SL_EFORMAT, "metadata '%s' is missing", key);
    if (arr->n != 4 || (arr->type != SL_GGUF_INT32 && arr->type != SL_GGUF_UINT32))
        return sl_err_set(b->err, SL_EFORMAT, "'%s' must be 4 integers", key);
    int32_t v[4];
    memcpy(v, arr->data, sizeof v);
    int64_t sum = 0;
    for (int i = 0; i < 4; i++) {
        if (v[i] < 0 || v[i] > 65536)
            sum = -1;
        else if (sum >= 0)
            sum += v[i];
        sec[i] = v[i];
    }
    /* llama.cpp asserts both of these in its rope op (ggml_compute_forward_rope) */
    if (sum <= 0 || (v[0] == 0 && v[1] == 0 && v[2] == 0) || sum > b->m->hp.head_dim)
        return sl_err_set(b->err, SL_EFORMAT, "'%s' = [%d, %d, %d, %d] is not a split of the "
                          "rotated pairs (none negative, one of the first three positive, "
                          "their sum at most the head size %d)", key, v[0], v[1], v[2], v[3],
                          b->m->hp.head_dim);
    return SL_OK;
}

static int bind_full_attention(sl_binder *b, int il)
{
    const sl_hparams *hp = &b->m->hp;
    const uint64_t E = (uint64_t)hp->n_embd, D = (uint64_t)hp->head_dim;
    const uint64_t H = (uint64_t)hp->n_head, HK = (uint64_t)hp->n_head_kv;
    if (hp->head_dim_v != hp->head_dim)
        return sl_err_set(b->err, SL_EFORMAT, "qwen35moe: value_length %d differs from "
                          "key_length %d", hp->head_dim_v, hp->head_dim);
    int rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WQ, true, 2, E, 2 * H * D, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WK, true, 2, E, HK * D, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WV, true, 2, E, HK * D, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WO, true, 2, H * D, E, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_Q_NORM, true, 1, D, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_K_NORM, true, 1, D, 0, 0))) return rc;
    sl_layer_desc *d = &b->m->layers[il].d;
    d->mixer = SL_MIXER_ATTN;
    d->attn = (sl_attn_desc){
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hp->head_dim,
        .head_dim_v = hp->head_dim_v,
        .qk_norm = SL_QK_NORM_HEAD,
        .scale = 1.0f / sqrtf((float)hp->head_dim),
        .rope = sl_hparams_rope(hp, true),
        .gated = true,
    };
    return read_rope_sections(b, d->attn.rope.sections);
}

static int bind_delta_net(sl_binder *b, int il)
{
    const sl_hparams *hp = &b->m->hp;
    int K, ds, nk, nv, inner, rc;
    if ((rc = need(b, "ssm.conv_kernel", 64, &K))) return rc;
    if ((rc = need(b, "ssm.state_size", 4096, &ds))) return rc;
    if ((rc = need(b, "ssm.group_count", 4096, &nk))) return rc;
    if ((rc = need(b, "ssm.time_step_rank", 4096, &nv))) return rc;
    if ((rc = need(b, "ssm.inner_size", 1 << 24, &inner))) return rc;
    if (inner != nv * ds || nv % nk != 0)
        return sl_err_set(b->err, SL_EFORMAT, "qwen35moe: ssm.inner_size %d must be "
                          "time_step_rank %d x state_size %d, and time_step_rank a multiple of "
                          "group_count %d", inner, nv, ds, nk);
    const uint64_t E = (uint64_t)hp->n_embd, kd = (uint64_t)nk * (uint64_t)ds;
    const uint64_t vd = (uint64_t)inner, C = 2 * kd + vd;
    if ((rc = sl_bind_role(b, il, SL_LT_SSM_QKV, true, 2, E, C, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SSM_Z, true, 2, E, vd, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SSM_CONV, true, 2, (uint64_t)K, C, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SSM_DT, true, 1, (uint64_t)nv, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SSM_A, true, 1, (uint64_t)nv, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SSM_BETA, true, 2, E, (uint64_t)nv, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SSM_ALPHA, true, 2, E, (uint64_t)nv, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SSM_NORM, true, 1, (uint64_t)ds, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SSM_OUT, true, 2, vd, E, 0))) return rc;
    sl_layer *L = &b->m->layers[il];
    if (L->ssm_conv.type != SL_TYPE_F32)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "tensor '%s' has type %s; sluice expects "
                          "the DeltaNet conv weights in f32", L->ssm_conv.name,
                          sl_type_name(L->ssm_conv.type));
    if ((rc = sl_llama_rev_check(b->llama_rev, b->err))) return rc;
    L->d.mixer = SL_MIXER_GDN;
    L->d.gdn = (sl_gdn_desc){.conv_k = K, .d_state = ds, .n_qk = nk, .n_v = nv,
                             .eps = hp->rms_eps, .l2_rms = b->llama_rev >= SL_LLAMA_REV_2026_09,
                             .dot_vtail = b->llama_rev >= SL_LLAMA_REV_2026_09};
    return SL_OK;
}

static int bind_ffn(sl_binder *b, int il)
{
    const sl_hparams *hp = &b->m->hp;
    if (hp->n_expert == 0 || hp->n_ff_exp == 0)
        return sl_err_set(b->err, SL_EFORMAT, "qwen35moe: expert_count and "
                          "expert_feed_forward_length are required");
    const uint64_t E = (uint64_t)hp->n_embd, X = (uint64_t)hp->n_expert;
    const uint64_t F = (uint64_t)hp->n_ff_exp;
    const uint64_t S = (uint64_t)(hp->n_ff_shexp ? hp->n_ff_shexp : hp->n_ff);
    if (S == 0)
        return sl_err_set(b->err, SL_EFORMAT, "qwen35moe: the shared expert's width "
                          "(expert_shared_feed_forward_length or feed_forward_length) is "
                          "missing");
    int rc;
    if ((rc = sl_bind_named(b, il, SL_LT_FFN_NORM, "post_attention_norm.weight", true, 1, E, 0,
                            0)))
        return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_ROUTER, true, 2, E, X, 0))) return rc;
    bool fused;
    if ((rc = sl_bind_gate_up_exps(b, il, E, F, X, &fused))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_DOWN_EXPS, true, 3, F, E, X))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SHEXP_GATE, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_GATE_SHEXP, true, 2, E, S, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_UP_SHEXP, true, 2, E, S, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_DOWN_SHEXP, true, 2, S, E, 0))) return rc;
    sl_ffn_desc *f = &b->m->layers[il].d.ffn;
    *f = (sl_ffn_desc){
        .kind = SL_FFN_ROUTED,
        .act = SL_ACT_SWIGLU,
        .n_ff = hp->n_ff_exp,
        .router = {.score = SL_SCORE_SOFTMAX, .n_expert = hp->n_expert,
                   .top_k = hp->n_expert_used, .renorm = hp->expert_weights_norm},
        .n_ff_shexp = (int)S,
    };
    return SL_OK;
}

int sl_family_qwen35_layer(sl_binder *b, int il)
{
    int rc;
    int sec[4];
    if (il == 0 && (rc = read_rope_sections(b, sec))) return rc;
    bool linear = false;
    if ((rc = is_linear(b, il, &linear))) return rc;
    const uint64_t E = (uint64_t)b->m->hp.n_embd;
    if ((rc = sl_bind_role(b, il, SL_LT_ATTN_NORM, true, 1, E, 0, 0))) return rc;
    rc = linear ? bind_delta_net(b, il) : bind_full_attention(b, il);
    if (rc) return rc;
    b->m->layers[il].d.norm = SL_NORM_PRE;
    return bind_ffn(b, il);
}
