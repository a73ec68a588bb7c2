/* hparams.c - reading and checking an architecture's hyperparameters. */
#include <stdio.h>
#include <string.h>

#include "model/model.h"
#include "model/value_ranges.h"
#include "util/status.h"

static bool get_u32(const sl_gguf *g, const char *arch, const char *suffix, uint32_t *out)
{
    char key[128];
    return sl_gguf_get_u32(g, sl_arch_key(key, sizeof key, arch, suffix), out);
}

/* A required positive integer no larger than max. */
static int need_int(const sl_gguf *g, const char *arch, const char *suffix, int max,
                    int *out, sl_err *err)
{
    uint32_t v;
    if (!get_u32(g, arch, suffix, &v))
        return sl_err_set(err, SL_EFORMAT, "missing or non-integer metadata key '%s.%s'",
                          arch, suffix);
    if (v == 0 || v > (uint32_t)max)
        return sl_err_set(err, SL_EFORMAT, "metadata '%s.%s' = %u is out of range [1, %d]",
                          arch, suffix, v, max);
    *out = (int)v;
    return SL_OK;
}

/* An optional integer in [0, max]; keeps *out (the default) when absent. */
static int opt_int(const sl_gguf *g, const char *arch, const char *suffix, int max,
                   int *out, sl_err *err)
{
    uint32_t v;
    if (!get_u32(g, arch, suffix, &v)) return SL_OK;
    if (v > (uint32_t)max)
        return sl_err_set(err, SL_EFORMAT, "metadata '%s.%s' = %u is out of range [0, %d]",
                          arch, suffix, v, max);
    *out = (int)v;
    return SL_OK;
}

/* An optional float key in range r; keeps *out (the default) when absent,
 * and checks the default too. */
static int opt_f32(const sl_gguf *g, const char *arch, const char *suffix,
                   const sl_f32_range *r, float *out, sl_err *err)
{
    char key[128];
    sl_arch_key(key, sizeof key, arch, suffix);
    sl_gguf_get_f32(g, key, out);
    return sl_check_range(r, key, *out, err);
}

/* The routing keys of deepseek2 / glm4moe / glm-dsa and MLA's dimensions
 * (ARCHS.md sections 0, 3, 4): all optional here; the family files say
 * which they need. */
static int read_issue17_keys(sl_hparams *hp, const sl_gguf *g, const char *a, sl_err *err)
{
    int rc;
    if ((rc = opt_int(g, a, "leading_dense_block_count", hp->n_layer, &hp->n_dense_lead, err)))
        return rc;
    if ((rc = opt_int(g, a, "expert_shared_count", 4096, &hp->n_expert_shared, err))) return rc;
    if ((rc = opt_int(g, a, "expert_group_count", 4096, &hp->n_group, err))) return rc;
    if ((rc = opt_int(g, a, "expert_group_used_count", 4096, &hp->n_group_used, err))) return rc;
    if ((rc = opt_int(g, a, "expert_gating_func", 1 << 16, &hp->gating_func, err))) return rc;
    if ((rc = opt_int(g, a, "attention.q_lora_rank", 1 << 20, &hp->q_lora, err))) return rc;
    if ((rc = opt_int(g, a, "attention.kv_lora_rank", 1 << 20, &hp->kv_lora, err))) return rc;
    if ((rc = opt_int(g, a, "attention.key_length_mla", 65536, &hp->head_dim_mla, err)))
        return rc;
    if ((rc = opt_int(g, a, "attention.value_length_mla", 65536, &hp->head_dim_v_mla, err)))
        return rc;
    if ((rc = opt_f32(g, a, "expert_weights_scale", &SL_RANGE_EXPERT_SCALE,
                      &hp->expert_weights_scale, err)))
        return rc;
    /* the converter stores 0.1 x mscale_all_dim; llama.cpp divides it out */
    float v = 0.0f;
    if ((rc = opt_f32(g, a, "rope.scaling.yarn_log_multiplier", &SL_RANGE_YARN_LOG_MUL, &v,
                      err)))
        return rc;
    hp->yarn_log_mul = v / 0.1f;
    /* glm-dsa's indexer (the family file says which it needs) */
    if ((rc = opt_int(g, a, "attention.indexer.head_count", 4096, &hp->idx_n_head, err)))
        return rc;
    if ((rc = opt_int(g, a, "attention.indexer.key_length", 65536, &hp->idx_dim, err)))
        return rc;
    if ((rc = opt_int(g, a, "attention.indexer.top_k", 1 << 24, &hp->idx_top_k, err)))
        return rc;
    return SL_OK;
}

int sl_hparams_read(sl_hparams *hp, const sl_gguf *g, const sl_arch *arch, sl_err *err)
{
    const char *a = arch->name;
    const int big = 1 << 20;
    int rc;
    memset(hp, 0, sizeof *hp);

    if ((rc = need_int(g, a, SL_KEY_BLOCK_COUNT, 4096, &hp->n_layer, err))) return rc;
    /* the last blocks may be multi-token-prediction blocks, which the main
     * pass never runs (their tensors are in the file, unused) */
    if ((rc = opt_int(g, a, "nextn_predict_layers", hp->n_layer - 1, &hp->n_nextn, err)))
        return rc;
    hp->n_layer -= hp->n_nextn;
    if ((rc = need_int(g, a, SL_KEY_EMBEDDING_LENGTH, big, &hp->n_embd, err))) return rc;
    if ((rc = need_int(g, a, SL_KEY_HEAD_COUNT, 4096, &hp->n_head, err))) return rc;
    hp->n_head_kv = hp->n_head;
    if ((rc = opt_int(g, a, SL_KEY_HEAD_COUNT_KV, 4096, &hp->n_head_kv, err))) return rc;
    if (hp->n_head_kv == 0 || hp->n_head % hp->n_head_kv != 0)
        return sl_err_set(err, SL_EFORMAT,
                          "attention.head_count %d is not a multiple of head_count_kv %d",
                          hp->n_head, hp->n_head_kv);
    hp->n_ctx_train = 4096;
    if ((rc = opt_int(g, a, SL_KEY_CONTEXT_LENGTH, 1 << 24, &hp->n_ctx_train, err))) return rc;
    if ((rc = opt_int(g, a, SL_KEY_FEED_FORWARD_LENGTH, big, &hp->n_ff, err))) return rc;

    hp->head_dim = hp->n_embd / hp->n_head;
    if ((rc = opt_int(g, a, SL_KEY_KEY_LENGTH, 65536, &hp->head_dim, err))) return rc;
    hp->head_dim_v = hp->head_dim;
    if ((rc = opt_int(g, a, SL_KEY_VALUE_LENGTH, 65536, &hp->head_dim_v, err))) return rc;
    if (hp->head_dim == 0 || hp->head_dim % 2 != 0 || hp->head_dim_v == 0)
        return sl_err_set(err, SL_EFORMAT, "head size %d (value %d) must be even and non-zero",
                          hp->head_dim, hp->head_dim_v);
    hp->rope_dim = hp->head_dim;
    if ((rc = opt_int(g, a, SL_KEY_ROPE_DIM, hp->head_dim, &hp->rope_dim, err))) return rc;
    if (hp->rope_dim % 2 != 0)
        return sl_err_set(err, SL_EFORMAT, "rope.dimension_count %d must be even", hp->rope_dim);

    if ((rc = opt_int(g, a, SL_KEY_EXPERT_COUNT, 4096, &hp->n_expert, err))) return rc;
    if ((rc = opt_int(g, a, SL_KEY_EXPERT_USED_COUNT, 4096, &hp->n_expert_used, err))) return rc;
    hp->n_ff_exp = hp->n_ff;
    if ((rc = opt_int(g, a, SL_KEY_EXPERT_FF_LENGTH, big, &hp->n_ff_exp, err))) return rc;
    if ((rc = opt_int(g, a, SL_KEY_EXPERT_SHARED_FF_LENGTH, big, &hp->n_ff_shexp, err)))
        return rc;
    if (hp->n_expert > 0 &&
        (hp->n_expert_used == 0 || hp->n_expert_used > hp->n_expert))
        return sl_err_set(err, SL_EFORMAT, "expert_used_count %d must be in [1, expert_count %d]",
                          hp->n_expert_used, hp->n_expert);

    hp->rms_eps = 1e-6f;
    if ((rc = opt_f32(g, a, SL_KEY_RMS_EPS, &SL_RANGE_EPS, &hp->rms_eps, err))) return rc;
    hp->rope_freq_base = 10000.0f;
    if ((rc = opt_f32(g, a, SL_KEY_ROPE_FREQ_BASE, &SL_RANGE_ROPE_BASE, &hp->rope_freq_base,
                      err)))
        return rc;

    hp->rope_scaling = SL_ROPE_SCALING_NONE;
    hp->rope_freq_scale = 1.0f;
    char key[128];
    const char *scaling = sl_gguf_get_str(g, sl_arch_key(key, sizeof key, a, SL_KEY_ROPE_SCALING_TYPE));
    if (scaling && strcmp(scaling, "none") != 0) {
        float factor = 1.0f;
        if ((rc = opt_f32(g, a, SL_KEY_ROPE_SCALING_FACTOR, &SL_RANGE_ROPE_FACTOR, &factor,
                          err)))
            return rc;
        hp->rope_freq_scale = 1.0f / factor;
        if (!strcmp(scaling, "linear")) {
            hp->rope_scaling = SL_ROPE_SCALING_LINEAR;
        } else if (!strcmp(scaling, "yarn")) {
            hp->rope_scaling = SL_ROPE_SCALING_YARN;
            hp->rope_yarn_orig_ctx = hp->n_ctx_train;
            if ((rc = opt_int(g, a, SL_KEY_ROPE_SCALING_ORIG_CTX, 1 << 24,
                              &hp->rope_yarn_orig_ctx, err)))
                return rc;
        } else {
            return sl_err_set(err, SL_EUNSUPPORTED,
                              "rope.scaling.type '%s' is not supported (none, linear, yarn)",
                              scaling);
        }
    }

    hp->expert_weights_norm = arch->norm_topk_default;
    bool norm;
    if (sl_gguf_get_bool(g, sl_arch_key(key, sizeof key, a, SL_KEY_EXPERT_WEIGHTS_NORM), &norm))
        hp->expert_weights_norm = norm;
    return read_issue17_keys(hp, g, a, err);
}

sl_rope sl_hparams_rope(const sl_hparams *hp, bool neox)
{
    return (sl_rope){
        .n_dims = hp->rope_dim,
        .neox = neox,
        .freq_base = hp->rope_freq_base,
        .freq_scale = hp->rope_freq_scale,
        .ext_factor = hp->rope_scaling == SL_ROPE_SCALING_YARN ? 1.0f : 0.0f,
        .attn_factor = 1.0f,
        .beta_fast = 32.0f,
        .beta_slow = 1.0f,
        .n_ctx_orig = hp->rope_yarn_orig_ctx,
    };
}
