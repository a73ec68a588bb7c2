/* family_gemma4.c - gemma4 (Gemma 4; the MoE form is 26B-A4B) as
 * ../shared/ARCHS.md section 6 gives llama.cpp's rules: sliding and full
 * attention layers (attention.sliding_window_pattern, one bool per layer)
 * with their own head sizes, K/V head counts (head_count_kv may be an array)
 * and rope (sliding: rope.freq_base_swa over rope.dimension_count_swa; full:
 * rope.freq_base over rope.dimension_count, frequencies divided by
 * rope_freqs); q/k norms per head, v normed without a weight, attention
 * scale 1, K = V when a layer has no attn_v; sandwich norms around both
 * blocks; every layer's dense GeGLU MLP, and beside it on layers with a
 * router the routed GeGLU experts (softmax, top-k renormalised; the router
 * reads its own unweighted RMS norm scaled by 1/sqrt(E) and
 * ffn_gate_inp.scale; per-expert down scales); the layer scalar. The
 * per-layer-embedding branch (E2B/E4B) and KV-shared layers are refused. */
#include <math.h>
#include <string.h>

#include "model/model_internal.h"
#include "model/value_ranges.h"

static bool get_u32(const sl_gguf *g, const char *suffix, uint32_t *out)
{
    char key[128];
    return sl_gguf_get_u32(g, sl_arch_key(key, sizeof key, "gemma4", suffix), out);
}

static bool get_f32(const sl_gguf *g, const char *suffix, float *out)
{
    char key[128];
    return sl_gguf_get_f32(g, sl_arch_key(key, sizeof key, "gemma4", suffix), out);
}

/* A required "gemma4.<suffix>" in [1, max]. */
static int need(sl_binder *b, const char *suffix, uint32_t max, int *out)
{
    uint32_t v;
    if (!get_u32(b->m->gguf, suffix, &v))
        return sl_err_set(b->err, SL_EFORMAT, "missing or non-integer metadata key "
                          "'gemma4.%s'", suffix);
    if (v == 0 || v > max)
        return sl_err_set(b->err, SL_EFORMAT, "metadata 'gemma4.%s' = %u is out of range "
                          "[1, %u]", suffix, v, max);
    *out = (int)v;
    return SL_OK;
}

/* Whether layer il slides: the bool array's entry, or a scalar bool that
 * sets every layer (llama.cpp reads it so: not a period). */
static int is_sliding(sl_binder *b, int il, bool *swa)
{
    char key[128];
    sl_arch_key(key, sizeof key, "gemma4", "attention.sliding_window_pattern");
    const sl_gguf_array *arr = sl_gguf_get_arr(b->m->gguf, key);
    if (arr) {
        if (arr->type != SL_GGUF_BOOL || arr->n < (uint64_t)b->m->hp.n_layer)
            return sl_err_set(b->err, SL_EFORMAT, "'%s' must be %d booleans", key,
                              b->m->hp.n_layer);
        *swa = ((const uint8_t *)arr->data)[il] != 0;
        return SL_OK;
    }
    bool all;
    if (!sl_gguf_get_bool(b->m->gguf, key, &all))
        return sl_err_set(b->err, SL_EFORMAT, "metadata '%s' is missing: a gemma4 file needs "
                          "it (one bool per layer)", key);
    *swa = all;
    return SL_OK;
}

/* Layer il's K/V head count: head_count_kv's array entry, or the scalar. */
static int kv_heads(sl_binder *b, int il, int *out)
{
    char key[128];
    sl_arch_key(key, sizeof key, "gemma4", SL_KEY_HEAD_COUNT_KV);
    const sl_gguf_array *arr = sl_gguf_get_arr(b->m->gguf, key);
    int v = b->m->hp.n_head_kv;
    if (arr) {
        if ((arr->type != SL_GGUF_INT32 && arr->type != SL_GGUF_UINT32) ||
            arr->n < (uint64_t)b->m->hp.n_layer)
            return sl_err_set(b->err, SL_EFORMAT, "'%s' must be %d integers", key,
                              b->m->hp.n_layer);
        int32_t x;
        memcpy(&x, (const uint8_t *)arr->data + 4 * (size_t)il, 4);
        v = x;
    }
    if (v < 1 || b->m->hp.n_head % v != 0)
        return sl_err_set(b->err, SL_EFORMAT, "layer %d: head_count_kv %d does not divide "
                          "head_count %d", il, v, b->m->hp.n_head);
    *out = v;
    return SL_OK;
}

/* The model-wide settings, once (at layer 0). */
static int model_settings(sl_binder *b)
{
    sl_model *m = b->m;
    uint32_t v = 0;
    if (get_u32(m->gguf, "embedding_length_per_layer_input", &v) && v != 0)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "gemma4.embedding_length_per_layer_input "
                          "is %u: the per-layer embeddings of Gemma 4 E2B/E4B are not "
                          "supported (the MoE form has 0)", v);
    if (get_u32(m->gguf, "attention.shared_kv_layers", &v) && v != 0)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "gemma4.attention.shared_kv_layers is %u: "
                          "layers that reuse another layer's K/V are not supported", v);
    m->embd_scale = sqrtf((float)m->hp.n_embd);
    m->logit_softcap = 30.0f; /* llama.cpp's default when the key is absent */
    get_f32(m->gguf, "final_logit_softcapping", &m->logit_softcap);
    int rc = sl_check_range(&SL_RANGE_SOFTCAP, "gemma4.final_logit_softcapping",
                            m->logit_softcap, b->err);
    if (rc) return rc;
    if (m->hp.n_ff == 0)
        return sl_err_set(b->err, SL_EFORMAT, "gemma4.feed_forward_length is missing: every "
                          "gemma4 layer has a dense MLP");
    return SL_OK;
}

/* Binds the routed experts: split gate/up, or the fused gate_up tensor
 * seen through two views (rows [0, F) gate, [F, 2F) up of each expert). */
static int bind_experts(sl_binder *b, int il, uint64_t E, uint64_t F, uint64_t X)
{
    int rc;
    bool fused = false;
    if ((rc = sl_bind_gate_up_exps(b, il, E, F, X, &fused))) return rc;
    if (!fused) {
        if ((rc = sl_bind_role(b, il, SL_LT_GATE_EXPS_S, false, 1, X, 0, 0))) return rc;
        if ((rc = sl_bind_role(b, il, SL_LT_UP_EXPS_S, false, 1, X, 0, 0))) return rc;
    }
    if ((rc = sl_bind_role(b, il, SL_LT_DOWN_EXPS, true, 3, F, E, X))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_DOWN_EXPS_S, false, 1, X, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_ROUTER_S, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_PRE_FFW_NORM_2, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_POST_FFW_NORM_1, true, 1, E, 0, 0))) return rc;
    return sl_bind_role(b, il, SL_LT_POST_FFW_NORM_2, true, 1, E, 0, 0);
}

int sl_family_gemma4_layer(sl_binder *b, int il)
{
    sl_model *m = b->m;
    const sl_hparams *hp = &m->hp;
    sl_layer *L = &m->layers[il];
    int rc;
    if (il == 0 && (rc = model_settings(b))) return rc;
    bool swa = false;
    int n_kv = 0, n_swa = 0, hd = hp->head_dim, hdv = hp->head_dim_v, n_rot = hp->rope_dim;
    if ((rc = is_sliding(b, il, &swa)) || (rc = kv_heads(b, il, &n_kv))) return rc;
    float base = hp->rope_freq_base;
    if (swa) {
        if ((rc = need(b, "attention.sliding_window", 1u << 24, &n_swa))) return rc;
        if ((rc = need(b, "attention.key_length_swa", 65536, &hd))) return rc;
        if ((rc = need(b, "attention.value_length_swa", 65536, &hdv))) return rc;
        n_rot = hp->rope_dim;
        uint32_t r;
        if (get_u32(m->gguf, "rope.dimension_count_swa", &r)) n_rot = (int)r;
        base = 10000.0f;
        get_f32(m->gguf, "rope.freq_base_swa", &base);
        if ((rc = sl_check_range(&SL_RANGE_ROPE_BASE, "gemma4.rope.freq_base_swa", base,
                                 b->err)))
            return rc;
    }
    if (hd != hdv)
        return sl_err_set(b->err, SL_EFORMAT, "gemma4 layer %d: key length %d and value length "
                          "%d differ (llama.cpp requires them equal)", il, hd, hdv);
    if (n_rot < 2 || n_rot % 2 != 0 || n_rot > hd)
        return sl_err_set(b->err, SL_EFORMAT, "gemma4 layer %d: %d rotated dimensions for a "
                          "head of %d", il, n_rot, hd);
    const uint64_t E = (uint64_t)hp->n_embd, H = (uint64_t)hp->n_head;
    const uint64_t q_dim = H * (uint64_t)hd, kv_dim = (uint64_t)n_kv * (uint64_t)hd;
    if ((rc = sl_bind_role(b, il, SL_LT_ATTN_NORM, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WQ, true, 2, E, q_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WK, true, 2, E, kv_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WV, false, 2, E, kv_dim, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WO, true, 2, q_dim, E, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_Q_NORM, true, 1, (uint64_t)hd, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_K_NORM, true, 1, (uint64_t)hd, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_POST_ATTN_NORM, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_OUT_SCALE, false, 1, 1, 0, 0))) return rc;
    if (!swa && !m->rope_freqs.info) {
        if ((rc = sl_bind_global(b, &m->rope_freqs, "rope_freqs.weight", true, 1,
                                 (uint64_t)hd / 2, 0, 0)))
            return rc;
    } else if (!swa && m->rope_freqs.ne[0] != (uint64_t)hd / 2) {
        return sl_err_set(b->err, SL_EFORMAT, "gemma4 layer %d: full layers' head sizes differ "
                          "(rope_freqs has %llu entries, this layer needs %d)", il,
                          (unsigned long long)m->rope_freqs.ne[0], hd / 2);
    }
    const uint64_t F0 = (uint64_t)hp->n_ff;
    if ((rc = sl_bind_role(b, il, SL_LT_FFN_NORM, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_FFN_GATE, true, 2, E, F0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_FFN_UP, true, 2, E, F0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_FFN_DOWN, true, 2, F0, E, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_POST_FFW_NORM, true, 1, E, 0, 0))) return rc;
    char nm[160];
    const bool moe = sl_gguf_find_tensor(m->gguf, sl_tensor_name(nm, sizeof nm, il,
                                                                 SL_T_FFN_ROUTER)) != NULL;
    if (moe) {
        if (hp->n_expert == 0 || hp->n_expert_used == 0 || hp->n_ff_exp == 0)
            return sl_err_set(b->err, SL_EFORMAT, "gemma4 layer %d has a router but the file "
                              "lacks expert_count, expert_used_count or "
                              "expert_feed_forward_length", il);
        const uint64_t X = (uint64_t)hp->n_expert;
        if ((rc = sl_bind_role(b, il, SL_LT_ROUTER, true, 2, E, X, 0))) return rc;
        if ((rc = bind_experts(b, il, E, (uint64_t)hp->n_ff_exp, X))) return rc;
    }

    sl_layer_desc *d = &L->d;
    d->mixer = SL_MIXER_ATTN;
    d->norm = SL_NORM_SANDWICH;
    sl_rope rope = sl_hparams_rope(hp, true);
    rope.n_dims = n_rot;
    if (swa) { /* the sliding layers' rope is plain: no scaling */
        rope.freq_base = base;
        rope.freq_scale = 1.0f;
        rope.ext_factor = 0.0f;
    }
    d->attn = (sl_attn_desc){
        .n_head = hp->n_head,
        .n_head_kv = n_kv,
        .head_dim = hd,
        .head_dim_v = hdv,
        .qk_norm = SL_QK_NORM_HEAD,
        .scale = 1.0f,
        .rope = rope,
        .n_swa = n_swa,
        .v_from_k = L->wv.info == NULL,
        .v_norm = true,
        .rope_ff = !swa,
    };
    if (moe)
        d->ffn = (sl_ffn_desc){
            .kind = SL_FFN_ROUTED,
            .act = SL_ACT_GEGLU,
            .n_ff = hp->n_ff_exp,
            .router = {.score = SL_SCORE_SOFTMAX, .n_expert = hp->n_expert,
                       .top_k = hp->n_expert_used, .renorm = true, .own_norm = true},
            .n_ff_dense = hp->n_ff,
        };
    else
        d->ffn = (sl_ffn_desc){.kind = SL_FFN_DENSE, .act = SL_ACT_GEGLU, .n_ff = hp->n_ff};
    return SL_OK;
}
