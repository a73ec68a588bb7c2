/* synth_plan.c - which tensors a generated model has, their shapes, types
 * and values.
 *
 * Owns: the per-architecture tensor list (names from model/arch.h), the
 * type rule of sl_synth_pick_type and the row generator. Must not know
 * about files or threads (synth_write.c streams what this describes). */
#include "synth/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/arch.h"
#include "synth/synth_rng.h"

/* qwen35moe tensor names (llama.cpp src/llama-arch.cpp, LLM_ARCH_QWEN35MOE;
 * ssm_a carries no ".weight" suffix there). */
#define SYN_T_ATTN_QKV "attn_qkv.weight"
#define SYN_T_ATTN_GATE "attn_gate.weight"
#define SYN_T_SSM_CONV1D "ssm_conv1d.weight"
#define SYN_T_SSM_DT_BIAS "ssm_dt.bias"
#define SYN_T_SSM_A "ssm_a"
#define SYN_T_SSM_BETA "ssm_beta.weight"
#define SYN_T_SSM_ALPHA "ssm_alpha.weight"
#define SYN_T_SSM_NORM "ssm_norm.weight"
#define SYN_T_SSM_OUT "ssm_out.weight"
#define SYN_T_POST_ATTN_NORM "post_attention_norm.weight"

bool sl_synth_layer_is_linear(const sl_synth_config *c, uint32_t l)
{
    return !strcmp(c->arch, "qwen35moe") && c->full_attn_interval > 0 && l < c->n_layer &&
           (l + 1) % c->full_attn_interval != 0;
}

/* llama.cpp's Q4_K_M layer rule: the first and last eighth of the layers
 * and every third layer in between get more bits. */
static bool more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static sl_type fit(sl_type want, uint64_t ne0, bool *fell_back)
{
    const sl_type_traits *tr = sl_type_get(want);
    uint32_t bs = tr ? tr->block_size : 1;
    if (ne0 % bs == 0) return want;
    *fell_back = true;
    /* K-quants (256-element blocks) fall back to Q8_0, the most accurate
     * 32-element type; anything that does not fit 32 either stays F32. */
    if (bs > 32 && ne0 % 32 == 0) return SL_TYPE_Q8_0;
    return SL_TYPE_F32;
}

sl_type sl_synth_pick_type(const sl_synth_config *c, sl_synth_role role, int layer,
                           uint64_t ne0, bool *fell_back)
{
    *fell_back = false;
    if (role == SL_SYNTH_R_TID2EID) return SL_TYPE_I32;
    switch (role) {
    case SL_SYNTH_R_NORM:
    case SL_SYNTH_R_BIAS:
    case SL_SYNTH_R_SHEXP_GATE:
    case SL_SYNTH_R_ROUTER:
    case SL_SYNTH_R_SSM_CONV:
    case SL_SYNTH_R_SSM_DT:
    case SL_SYNTH_R_SSM_A:
    case SL_SYNTH_R_ROPE_FREQS:
        return SL_TYPE_F32;
    default:
        break;
    }
    sl_type want = SL_TYPE_F32;
    switch (c->type) {
    case SL_SYNTH_F32: return SL_TYPE_F32;
    case SL_SYNTH_F16: return SL_TYPE_F16;
    case SL_SYNTH_Q8_0: want = SL_TYPE_Q8_0; break;
    case SL_SYNTH_Q4_0: want = SL_TYPE_Q4_0; break;
    case SL_SYNTH_Q4_K: want = SL_TYPE_Q4_K; break;
    case SL_SYNTH_Q5_K: want = SL_TYPE_Q5_K; break;
    case SL_SYNTH_Q6_K: want = SL_TYPE_Q6_K; break;
    case SL_SYNTH_IQ4_XS: want = SL_TYPE_IQ4_XS; break;
    case SL_SYNTH_MXFP4:
        want = role == SL_SYNTH_R_EXP_GATE || role == SL_SYNTH_R_EXP_UP ||
                       role == SL_SYNTH_R_EXP_DOWN
                   ? SL_TYPE_MXFP4
                   : SL_TYPE_Q8_0;
        break;
    case SL_SYNTH_Q4_K_M:
        want = SL_TYPE_Q4_K;
        if (role == SL_SYNTH_R_OUTPUT) want = SL_TYPE_Q6_K;
        if (role == SL_SYNTH_R_TOKEN_EMBD && c->tied) want = SL_TYPE_Q6_K;
        if ((role == SL_SYNTH_R_ATTN_V || role == SL_SYNTH_R_FFN_DOWN ||
             role == SL_SYNTH_R_EXP_DOWN || role == SL_SYNTH_R_SH_DOWN) &&
            more_bits(layer, (int)c->n_layer))
            want = SL_TYPE_Q6_K;
        if (role == SL_SYNTH_R_ATTN_QKV) want = SL_TYPE_Q5_K;
        break;
    default: return SL_TYPE_F32;
    }
    return fit(want, ne0, fell_back);
}

uint64_t sl_synth_tensor_rows(const sl_synth_tensor *t)
{
    return t->ne[1] * t->ne[2] * t->ne[3];
}

void sl_synth_tensor_stats(const sl_synth_tensor *t, double *mean, double *std)
{
    if (t->role == SL_SYNTH_R_NORM) {
        *mean = 1.0;
        *std = 0.1;
    } else if (t->role == SL_SYNTH_R_SSM_A || t->role == SL_SYNTH_R_SSM_DT) {
        /* ssm_a = -exp(x): decay rates around 1 (0.37..2.7 within one sd),
         * so with softplus(dt) ~ 0.7 a state keeps ~half of itself per
         * token; dt bias near 0. */
        *mean = 0.0;
        *std = 0.5;
    } else {
        *mean = 0.0;
        *std = 1.0 / sqrt((double)t->ne[0]);
    }
}

void sl_synth_gen_rows_simd(const sl_synth_config *c, const sl_synth_tensor *t, uint64_t row0,
                            uint64_t nrows, float *dst, bool simd)
{
    double mean, std;
    sl_synth_tensor_stats(t, &mean, &std);
    uint64_t salt = sl_rng_hash_str(t->name);
    uint64_t ne0 = t->ne[0];
    /* Keys in batches, so the vector path can take four rows at a time. */
    enum { BATCH = 64 };
    uint64_t keys[BATCH];
    for (uint64_t r = 0; r < nrows; r += BATCH) {
        uint64_t m = nrows - r < BATCH ? nrows - r : BATCH;
        for (uint64_t k = 0; k < m; k++) keys[k] = sl_rng_derive(c->seed, salt, row0 + r + k);
        sl_rng_fill_normal_rows(keys, (size_t)m, dst + r * ne0, (size_t)ne0, (float)mean,
                                (float)std, simd);
    }
    if (t->role == SL_SYNTH_R_SSM_A)
        for (uint64_t i = 0; i < nrows * ne0; i++) dst[i] = -expf(dst[i]);
    if (t->role == SL_SYNTH_R_ROPE_FREQS) /* gemma4's proportional rope */
        for (uint64_t i = 0; i < nrows * ne0; i++) dst[i] = i % ne0 < ne0 / 4 ? 1.0f : 1e30f;
    if (t->role == SL_SYNTH_R_TID2EID) { /* a run of ne0 distinct ids from a token's start */
        const uint64_t X = c->n_expert ? c->n_expert : 1;
        for (uint64_t r = 0; r < nrows; r++) {
            const uint64_t start = sl_rng_derive(c->seed, salt, row0 + r) % X;
            for (uint64_t k = 0; k < ne0; k++) dst[r * ne0 + k] = (float)((start + k) % X);
        }
    }
}

void sl_synth_gen_rows(const sl_synth_config *c, const sl_synth_tensor *t, uint64_t row0,
                       uint64_t nrows, float *dst)
{
    sl_synth_gen_rows_simd(c, t, row0, nrows, dst, true);
}

typedef struct plan {
    const sl_synth_config *c;
    sl_synth_tensor *t;
    size_t n, cap;
    int rc;
    sl_err *err;
} plan;

static void add(plan *p, int layer, const char *suffix, sl_synth_role role, uint32_t n_dims,
                uint64_t ne0, uint64_t ne1, uint64_t ne2)
{
    if (p->rc) return;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        sl_synth_tensor *nt = realloc(p->t, cap * sizeof *nt);
        if (!nt) {
            p->rc = sl_err_set(p->err, SL_ENOMEM, "out of memory listing tensors");
            return;
        }
        p->t = nt;
        p->cap = cap;
    }
    sl_synth_tensor *t = &p->t[p->n++];
    memset(t, 0, sizeof *t);
    if (layer < 0)
        snprintf(t->name, sizeof t->name, "%s", suffix);
    else
        sl_tensor_name(t->name, sizeof t->name, layer, suffix);
    t->role = role;
    t->layer = layer;
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = n_dims > 1 ? ne1 : 1;
    t->ne[2] = n_dims > 2 ? ne2 : 1;
    t->ne[3] = 1;
    t->type = sl_synth_pick_type(p->c, role, layer, ne0, &t->fell_back);
}

/* The attention block of the llama / qwen / olmoe families. */
static void add_attention(plan *p, int l, uint64_t QD, uint64_t KD)
{
    const sl_synth_config *c = p->c;
    const uint64_t E = c->n_embd;
    const bool qwen2_family = !strcmp(c->arch, "qwen2") || !strcmp(c->arch, "qwen2moe");
    const bool head_qk_norm = !strcmp(c->arch, "qwen3") || !strcmp(c->arch, "qwen3moe");
    const bool full_qk_norm = !strcmp(c->arch, "olmoe");
    add(p, l, SL_T_ATTN_NORM, SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, SL_T_ATTN_Q, SL_SYNTH_R_ATTN_Q, 2, E, QD, 1);
    if (qwen2_family) add(p, l, SL_T_ATTN_Q_BIAS, SL_SYNTH_R_BIAS, 1, QD, 1, 1);
    add(p, l, SL_T_ATTN_K, SL_SYNTH_R_ATTN_K, 2, E, KD, 1);
    if (qwen2_family) add(p, l, SL_T_ATTN_K_BIAS, SL_SYNTH_R_BIAS, 1, KD, 1, 1);
    add(p, l, SL_T_ATTN_V, SL_SYNTH_R_ATTN_V, 2, E, KD, 1);
    if (qwen2_family) add(p, l, SL_T_ATTN_V_BIAS, SL_SYNTH_R_BIAS, 1, KD, 1, 1);
    if (head_qk_norm) {
        add(p, l, SL_T_ATTN_Q_NORM, SL_SYNTH_R_NORM, 1, c->head_dim, 1, 1);
        add(p, l, SL_T_ATTN_K_NORM, SL_SYNTH_R_NORM, 1, c->head_dim, 1, 1);
    } else if (full_qk_norm) {
        add(p, l, SL_T_ATTN_Q_NORM, SL_SYNTH_R_NORM, 1, QD, 1, 1);
        add(p, l, SL_T_ATTN_K_NORM, SL_SYNTH_R_NORM, 1, KD, 1, 1);
    }
    add(p, l, SL_T_ATTN_OUT, SL_SYNTH_R_ATTN_OUT, 2, QD, E, 1);
}

/* qwen35moe's token mixer (ARCHS.md section 1, llama.cpp
 * llama_model_qwen35moe::load_arch_tensors): gated full attention, whose
 * attn_q holds per head D query rows then D gate rows, or gated DeltaNet. */
static void add_hybrid_mixer(plan *p, int l)
{
    const sl_synth_config *c = p->c;
    const uint64_t E = c->n_embd, D = c->head_dim;
    add(p, l, SL_T_ATTN_NORM, SL_SYNTH_R_NORM, 1, E, 1, 1);
    if (!sl_synth_layer_is_linear(c, (uint32_t)l)) {
        const uint64_t QD = (uint64_t)c->n_head * D, KD = (uint64_t)c->n_head_kv * D;
        add(p, l, SL_T_ATTN_Q, SL_SYNTH_R_ATTN_Q, 2, E, 2 * QD, 1);
        add(p, l, SL_T_ATTN_K, SL_SYNTH_R_ATTN_K, 2, E, KD, 1);
        add(p, l, SL_T_ATTN_V, SL_SYNTH_R_ATTN_V, 2, E, KD, 1);
        add(p, l, SL_T_ATTN_OUT, SL_SYNTH_R_ATTN_OUT, 2, QD, E, 1);
        add(p, l, SL_T_ATTN_Q_NORM, SL_SYNTH_R_NORM, 1, D, 1, 1);
        add(p, l, SL_T_ATTN_K_NORM, SL_SYNTH_R_NORM, 1, D, 1, 1);
        return;
    }
    const uint64_t kd = (uint64_t)c->ssm_groups * c->ssm_state;
    const uint64_t vd = (uint64_t)c->ssm_v_heads * c->ssm_state;
    const uint64_t C = 2 * kd + vd, nv = c->ssm_v_heads;
    add(p, l, SYN_T_ATTN_QKV, SL_SYNTH_R_ATTN_QKV, 2, E, C, 1);
    add(p, l, SYN_T_ATTN_GATE, SL_SYNTH_R_ATTN_GATE, 2, E, vd, 1);
    add(p, l, SYN_T_SSM_CONV1D, SL_SYNTH_R_SSM_CONV, 2, c->ssm_conv_kernel, C, 1);
    add(p, l, SYN_T_SSM_DT_BIAS, SL_SYNTH_R_SSM_DT, 1, nv, 1, 1);
    add(p, l, SYN_T_SSM_A, SL_SYNTH_R_SSM_A, 1, nv, 1, 1);
    add(p, l, SYN_T_SSM_BETA, SL_SYNTH_R_SSM_BETA, 2, E, nv, 1);
    add(p, l, SYN_T_SSM_ALPHA, SL_SYNTH_R_SSM_ALPHA, 2, E, nv, 1);
    add(p, l, SYN_T_SSM_NORM, SL_SYNTH_R_NORM, 1, c->ssm_state, 1, 1);
    add(p, l, SYN_T_SSM_OUT, SL_SYNTH_R_SSM_OUT, 2, vd, E, 1);
}

/* A gemma4 layer (ARCHS.md section 6, llama.cpp llama_model_gemma4's
 * tensors): attention with q/k norms (K = V on full layers: no attn_v),
 * sandwich norms, the dense MLP, the router with its scale, split gate/up
 * experts with per-expert down scales, and the layer scalar. */
static void add_gemma4_layer(plan *p, int l)
{
    const sl_synth_config *c = p->c;
    const bool swa = sl_synth_gemma4_slides(c, (uint32_t)l);
    const uint64_t E = c->n_embd, D = swa ? c->head_dim_swa : c->head_dim;
    const uint64_t QD = (uint64_t)c->n_head * D;
    const uint64_t KD = (uint64_t)(swa ? c->n_head_kv_swa : c->n_head_kv) * D;
    const uint64_t F = c->n_ff, Fx = c->n_ff_exp, X = c->n_expert;
    add(p, l, SL_T_ATTN_NORM, SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, SL_T_ATTN_Q, SL_SYNTH_R_ATTN_Q, 2, E, QD, 1);
    add(p, l, SL_T_ATTN_K, SL_SYNTH_R_ATTN_K, 2, E, KD, 1);
    if (swa) add(p, l, SL_T_ATTN_V, SL_SYNTH_R_ATTN_V, 2, E, KD, 1);
    add(p, l, SL_T_ATTN_OUT, SL_SYNTH_R_ATTN_OUT, 2, QD, E, 1);
    add(p, l, SL_T_ATTN_Q_NORM, SL_SYNTH_R_NORM, 1, D, 1, 1);
    add(p, l, SL_T_ATTN_K_NORM, SL_SYNTH_R_NORM, 1, D, 1, 1);
    add(p, l, SYN_T_POST_ATTN_NORM, SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, SL_T_FFN_NORM, SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, SL_T_FFN_GATE, SL_SYNTH_R_FFN_GATE, 2, E, F, 1);
    add(p, l, SL_T_FFN_UP, SL_SYNTH_R_FFN_UP, 2, E, F, 1);
    add(p, l, SL_T_FFN_DOWN, SL_SYNTH_R_FFN_DOWN, 2, F, E, 1);
    add(p, l, "post_ffw_norm.weight", SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, SL_T_FFN_ROUTER, SL_SYNTH_R_ROUTER, 2, E, X, 1);
    add(p, l, "ffn_gate_inp.scale", SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, "pre_ffw_norm_2.weight", SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, "post_ffw_norm_1.weight", SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, "post_ffw_norm_2.weight", SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, SL_T_FFN_GATE_EXPS, SL_SYNTH_R_EXP_GATE, 3, E, Fx, X);
    add(p, l, SL_T_FFN_UP_EXPS, SL_SYNTH_R_EXP_UP, 3, E, Fx, X);
    add(p, l, SL_T_FFN_DOWN_EXPS, SL_SYNTH_R_EXP_DOWN, 3, Fx, E, X);
    add(p, l, "ffn_down_exps.scale", SL_SYNTH_R_NORM, 1, X, 1, 1);
    add(p, l, "layer_output_scale.weight", SL_SYNTH_R_NORM, 1, 1, 1, 1);
}

/* A gpt-oss layer (ARCHS.md section 2, llama.cpp's openai-moe loader):
 * attention with q/k/v/o biases and one sink per head, the FFN pre-norm
 * named post_attention_norm, a router with a bias, split gate/up/down
 * experts each with a per-expert bias. */
static void add_gptoss_layer(plan *p, int l)
{
    const sl_synth_config *c = p->c;
    const uint64_t E = c->n_embd, D = c->head_dim, H = c->n_head;
    const uint64_t QD = H * D, KD = (uint64_t)c->n_head_kv * D;
    const uint64_t F = c->n_ff_exp, X = c->n_expert;
    add(p, l, SL_T_ATTN_NORM, SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, SL_T_ATTN_Q, SL_SYNTH_R_ATTN_Q, 2, E, QD, 1);
    add(p, l, SL_T_ATTN_Q_BIAS, SL_SYNTH_R_BIAS, 1, QD, 1, 1);
    add(p, l, SL_T_ATTN_K, SL_SYNTH_R_ATTN_K, 2, E, KD, 1);
    add(p, l, SL_T_ATTN_K_BIAS, SL_SYNTH_R_BIAS, 1, KD, 1, 1);
    add(p, l, SL_T_ATTN_V, SL_SYNTH_R_ATTN_V, 2, E, KD, 1);
    add(p, l, SL_T_ATTN_V_BIAS, SL_SYNTH_R_BIAS, 1, KD, 1, 1);
    add(p, l, SL_T_ATTN_OUT, SL_SYNTH_R_ATTN_OUT, 2, QD, E, 1);
    add(p, l, "attn_output.bias", SL_SYNTH_R_BIAS, 1, E, 1, 1);
    add(p, l, "attn_sinks.weight", SL_SYNTH_R_BIAS, 1, H, 1, 1);
    add(p, l, SYN_T_POST_ATTN_NORM, SL_SYNTH_R_NORM, 1, E, 1, 1);
    add(p, l, SL_T_FFN_ROUTER, SL_SYNTH_R_ROUTER, 2, E, X, 1);
    add(p, l, "ffn_gate_inp.bias", SL_SYNTH_R_BIAS, 1, X, 1, 1);
    add(p, l, SL_T_FFN_GATE_EXPS, SL_SYNTH_R_EXP_GATE, 3, E, F, X);
    add(p, l, "ffn_gate_exps.bias", SL_SYNTH_R_BIAS, 2, F, X, 1);
    add(p, l, SL_T_FFN_UP_EXPS, SL_SYNTH_R_EXP_UP, 3, E, F, X);
    add(p, l, "ffn_up_exps.bias", SL_SYNTH_R_BIAS, 2, F, X, 1);
    add(p, l, SL_T_FFN_DOWN_EXPS, SL_SYNTH_R_EXP_DOWN, 3, F, E, X);
    add(p, l, "ffn_down_exps.bias", SL_SYNTH_R_BIAS, 2, E, X, 1);
}

int sl_synth_plan_build(const sl_synth_config *c, sl_synth_tensor **out, size_t *n_out,
                        sl_err *err)
{
    plan p = {c, NULL, 0, 0, SL_OK, err};
    const uint64_t E = c->n_embd, V = c->n_vocab;
    const uint64_t QD = (uint64_t)c->n_head * c->head_dim;   /* q width */
    const uint64_t KD = (uint64_t)c->n_head_kv * c->head_dim; /* k, v width */
    const bool hybrid = !strcmp(c->arch, "qwen35moe");
    const bool gemma4 = !strcmp(c->arch, "gemma4");
    const bool gptoss = !strcmp(c->arch, "gpt-oss");

    /* Data-flow order: embedding, layers, output. */
    add(&p, -1, SL_T_TOKEN_EMBD, SL_SYNTH_R_TOKEN_EMBD, 2, E, V, 1);
    if (gemma4) add(&p, -1, "rope_freqs.weight", SL_SYNTH_R_ROPE_FREQS, 1, c->head_dim / 2, 1, 1);
    for (int l = 0; l < (int)c->n_layer; l++) {
        if (gemma4) {
            add_gemma4_layer(&p, l);
            continue;
        }
        if (gptoss) {
            add_gptoss_layer(&p, l);
            continue;
        }
        if (hybrid) add_hybrid_mixer(&p, l);
        else add_attention(&p, l, QD, KD);
        add(&p, l, hybrid ? SYN_T_POST_ATTN_NORM : SL_T_FFN_NORM, SL_SYNTH_R_NORM, 1, E, 1, 1);
        if (c->moe) {
            const uint64_t F = c->n_ff_exp, X = c->n_expert;
            add(&p, l, SL_T_FFN_ROUTER, SL_SYNTH_R_ROUTER, 2, E, X, 1);
            add(&p, l, SL_T_FFN_GATE_EXPS, SL_SYNTH_R_EXP_GATE, 3, E, F, X);
            add(&p, l, SL_T_FFN_UP_EXPS, SL_SYNTH_R_EXP_UP, 3, E, F, X);
            add(&p, l, SL_T_FFN_DOWN_EXPS, SL_SYNTH_R_EXP_DOWN, 3, F, E, X);
            if (c->shared_expert) {
                const uint64_t S = c->n_ff_shexp;
                add(&p, l, SL_T_FFN_SHEXP_GATE, SL_SYNTH_R_SHEXP_GATE, 1, E, 1, 1);
                add(&p, l, SL_T_FFN_GATE_SHEXP, SL_SYNTH_R_SH_GATE, 2, E, S, 1);
                add(&p, l, SL_T_FFN_UP_SHEXP, SL_SYNTH_R_SH_UP, 2, E, S, 1);
                add(&p, l, SL_T_FFN_DOWN_SHEXP, SL_SYNTH_R_SH_DOWN, 2, S, E, 1);
            }
        } else {
            const uint64_t F = c->n_ff;
            add(&p, l, SL_T_FFN_GATE, SL_SYNTH_R_FFN_GATE, 2, E, F, 1);
            add(&p, l, SL_T_FFN_UP, SL_SYNTH_R_FFN_UP, 2, E, F, 1);
            add(&p, l, SL_T_FFN_DOWN, SL_SYNTH_R_FFN_DOWN, 2, F, E, 1);
        }
    }
    add(&p, -1, SL_T_OUTPUT_NORM, SL_SYNTH_R_NORM, 1, E, 1, 1);
    if (!c->tied) add(&p, -1, SL_T_OUTPUT, SL_SYNTH_R_OUTPUT, 2, E, V, 1);
    if (p.rc) {
        free(p.t);
        return p.rc;
    }
    *out = p.t;
    *n_out = p.n;
    return SL_OK;
}
