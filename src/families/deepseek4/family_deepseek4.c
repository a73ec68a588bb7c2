/* family_deepseek4.c - DeepSeek-V4 / V4-Flash (deepseek4) as
 * ../shared/ARCHS.md section 9 gives llama.cpp's rules.
 *
 * Every layer: two hyper-connection halves around a single-head attention
 * whose key is its value (raw sliding window, plus compressed blocks on
 * ratio-4 and ratio-128 layers, ratio 4 through the lightning indexer's
 * top-k) and a routed FFN with sqrt-softplus scores (hash-routed by token
 * id on the first hash_layer_count layers), a clamped SwiGLU and a shared
 * expert. The model-wide hc head (output_hc_*) is bound with layer 0.
 * MTP blocks (nextn) are counted out of the main pass by hparams.c and
 * never bound. Limits llama.cpp enforces are enforced here with a message:
 * hc 4, sqrt-softplus gating, ratios 0/4/128, one KV head, key length =
 * value length, indexer key length a multiple of 64. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/llama_rev.h"
#include "model/model_internal.h"
#include "model/value_ranges.h"

/* A per-layer integer or float array key, or its scalar form. */
static bool arr_at(const sl_gguf *g, const char *key, int il, double *out)
{
    const sl_gguf_array *a = sl_gguf_get_arr(g, key);
    if (a) return (uint64_t)il < a->n && sl_gguf_arr_f64(a, (uint64_t)il, out);
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    if (!kv) return false;
    float f;
    uint32_t u;
    if (sl_gguf_get_f32(g, key, &f)) *out = f;
    else if (sl_gguf_get_u32(g, key, &u)) *out = u;
    else return false;
    return true;
}

static int need_u32(sl_binder *b, const char *suffix, int lo, int hi, int *out)
{
    char key[128];
    uint32_t v;
    sl_arch_key(key, sizeof key, b->m->arch->name, suffix);
    if (!sl_gguf_get_u32(b->m->gguf, key, &v))
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: metadata key '%s' is missing", key);
    if ((int64_t)v < lo || (int64_t)v > hi)
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: '%s' = %u is out of range [%d, %d]",
                          key, v, lo, hi);
    *out = (int)v;
    return SL_OK;
}

/* A required float key in range r. */
static int need_f32(sl_binder *b, const char *suffix, const sl_f32_range *r, float *out)
{
    char key[128];
    sl_arch_key(key, sizeof key, b->m->arch->name, suffix);
    if (!sl_gguf_get_f32(b->m->gguf, key, out))
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: metadata key '%s' is missing", key);
    return sl_check_range(r, key, *out, b->err);
}

/* The largest power of two >= 64 that divides n (0: none). */
static int hadamard_size(int n)
{
    int h = 0;
    for (int p = 64; p <= n; p *= 2)
        if (n % p == 0) h = p;
    return h;
}

/* Whether llama.cpp computes this model's hyper-connection stream sums
 * (build_hc_pre's u = sum_s pre[s] X[s] and build_hc_post's
 * X'[d] = post[d] f + sum_s C[d][s] X[s], every layer) in its fused
 * DSV4_HC_PRE / DSV4_HC_POST ops, whose loops its AVX2 build compiles to
 * multiply-add chains, or in the unfused graph of ggml_mul / ggml_add,
 * every product and sum rounded. The head's sum (build_hc_head, il -1) is
 * always the unfused graph. The reference fixtures' build is unfused on
 * the 4-layer deepseek4 fixture (8 experts, top 2) and fused on the
 * 6-layer variants (16 experts, top 4), every layer alike; the ops' own
 * shapes (n_embd 256, 4 streams, 128 tokens) are the same in both, so the
 * switch is model-wide. No llama.cpp source read (node-llama-cpp 3.22.1's
 * snapshot, upstream's deepseek4.cpp) has a shape condition there: on a
 * CPU they are always fused (resolve_fused_ops only compares devices), as
 * node-llama-cpp's build (2026-09) computes every shape. So: fused unless
 * the model is no larger than that fixture on all three counts (a
 * boundary fitted to the two cases, docs/ARCHITECTURE.md "llama.cpp
 * revisions"). Pure. */
static bool ds4_hc_fused(int n_layer, int n_expert, int n_expert_used, sl_llama_rev rev)
{
    if (rev >= SL_LLAMA_REV_2026_09) return true;
    return n_layer > 4 || n_expert > 8 || n_expert_used > 2;
}

/* The model-wide keys and limits, read once (layer 0). */
static int read_model_keys(sl_binder *b)
{
    sl_hparams *hp = &b->m->hp;
    const int big = 1 << 20;
    int rc;
    if ((rc = need_u32(b, "hyper_connection.count", 1, 64, &hp->n_hc))) return rc;
    if (hp->n_hc != 4)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "deepseek4: hyper_connection.count %d is "
                          "not supported (llama.cpp's graph needs 4)", hp->n_hc);
    if ((rc = need_u32(b, "hyper_connection.sinkhorn_iterations", 1, 1000, &hp->hc_iters)))
        return rc;
    if ((rc = need_f32(b, "hyper_connection.epsilon", &SL_RANGE_EPS, &hp->hc_eps))) return rc;
    if ((rc = sl_llama_rev_check(b->llama_rev, b->err))) return rc;
    hp->hc_fused = ds4_hc_fused(hp->n_layer, hp->n_expert, hp->n_expert_used, b->llama_rev);
    hp->swiglu_clamp_op = b->llama_rev >= SL_LLAMA_REV_2026_09;
    if ((rc = need_u32(b, "attention.sliding_window", 1, big, &hp->n_swa))) return rc;
    if ((rc = need_u32(b, "hash_layer_count", 0, hp->n_layer, &hp->n_hash))) return rc;
    if ((rc = need_u32(b, "attention.output_group_count", 1, 4096, &hp->o_groups))) return rc;
    if ((rc = need_u32(b, "attention.output_lora_rank", 1, big, &hp->o_lora))) return rc;
    if ((rc = need_f32(b, "attention.compress_rope_freq_base", &SL_RANGE_ROPE_BASE,
                       &hp->comp_rope_base)))
        return rc;
    if (hp->gating_func != 4)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "deepseek4: expert_gating_func %d is not "
                          "supported (llama.cpp takes only 4, sqrt-softplus)", hp->gating_func);
    if (hp->n_head_kv != 1)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "deepseek4: attention.head_count_kv %d "
                          "(the cache holds one shared head: it must be 1)", hp->n_head_kv);
    if (hp->head_dim != hp->head_dim_v)
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: key_length %d differs from "
                          "value_length %d (the key is the value)", hp->head_dim, hp->head_dim_v);
    if (hp->rope_dim <= 0 || hp->rope_dim > hp->head_dim)
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: rope.dimension_count %d must be in "
                          "(0, key_length %d]", hp->rope_dim, hp->head_dim);
    if (hp->q_lora <= 0)
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: attention.q_lora_rank is missing");
    if (hp->n_head % hp->o_groups != 0)
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: head_count %d is not a multiple of "
                          "output_group_count %d", hp->n_head, hp->o_groups);
    if (hp->idx_n_head <= 0 || hp->idx_dim <= 0 || hp->idx_top_k <= 0)
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: attention.indexer.head_count, "
                          ".key_length and .top_k are required");
    if (hp->idx_dim % 64 != 0 || hp->idx_dim < hp->rope_dim)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "deepseek4: indexer.key_length %d must be a "
                          "multiple of 64 (llama.cpp's Hadamard rotation) and hold the %d roped "
                          "dims", hp->idx_dim, hp->rope_dim);
    if (hp->n_expert == 0 || hp->n_ff_exp == 0 || hp->n_expert_used == 0)
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: expert_count, expert_used_count and "
                          "expert_feed_forward_length are required");
    char key[128];
    const sl_gguf_array *ra = sl_gguf_get_arr(
        b->m->gguf, sl_arch_key(key, sizeof key, b->m->arch->name, "attention.compress_ratios"));
    if (!ra || ra->n < (uint64_t)(hp->n_layer + hp->n_nextn))
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: attention.compress_ratios is missing "
                          "or shorter than block_count %d", hp->n_layer + hp->n_nextn);
    /* the engine's compressor rows (engine/ds4.h SL_DS4_MAX_HEAD), and the
     * indexer's key and kept scores in the attention scratch */
    if (hp->head_dim > 4096 || hp->idx_dim > 4096 ||
        hp->idx_dim + hp->idx_top_k > 64 * (2 * hp->head_dim + 1))
        return sl_err_set(b->err, SL_EUNSUPPORTED, "deepseek4: key_length %d, indexer "
                          "key_length %d and top_k %d are beyond what sluice takes (4096, 4096, "
                          "top_k + key_length <= 64 (2 key_length + 1))", hp->head_dim,
                          hp->idx_dim, hp->idx_top_k);
    return SL_OK;
}

/* The hc head, output_hc_{fn,base,scale}. */
static int bind_head(sl_binder *b)
{
    sl_model *m = b->m;
    const uint64_t hc = (uint64_t)m->hp.n_hc, E = (uint64_t)m->hp.n_embd;
    int rc;
    if ((rc = sl_bind_global(b, &m->hc_head_fn, "output_hc_fn.weight", true, 2, hc * E, hc, 0)))
        return rc;
    if ((rc = sl_bind_global(b, &m->hc_head_base, "output_hc_base.weight", true, 1, hc, 0, 0)))
        return rc;
    if (m->output_tied)
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: tensor 'output.weight' is required "
                          "(the head is not tied)");
    return sl_bind_global(b, &m->hc_head_scale, "output_hc_scale.weight", true, 1, 1, 0, 0);
}

/* The compressor of a ratio-r layer (c = 2 rows per position for r = 4)
 * and, for r = 4, the indexer. */
static int bind_compressor(sl_binder *b, int il, int r)
{
    const sl_hparams *hp = &b->m->hp;
    const uint64_t E = (uint64_t)hp->n_embd, D = (uint64_t)hp->head_dim;
    const uint64_t c = r == 4 ? 2 : 1, R = (uint64_t)r;
    int rc;
    if ((rc = sl_bind_role(b, il, SL_LT_COMP_KV, true, 2, E, c * D, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_COMP_GATE, true, 2, E, c * D, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_COMP_APE, true, 2, c * D, R, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_COMP_NORM, true, 1, D, 0, 0))) return rc;
    if (r != 4) return SL_OK;
    const uint64_t di = (uint64_t)hp->idx_dim, ih = (uint64_t)hp->idx_n_head;
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_PROJ, true, 2, E, ih, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_Q_B, true, 2, (uint64_t)hp->q_lora, ih * di, 0)))
        return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_COMP_KV, true, 2, E, 2 * di, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_COMP_GATE, true, 2, E, 2 * di, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_COMP_APE, true, 2, 2 * di, 4, 0))) return rc;
    return sl_bind_role(b, il, SL_LT_IDX_COMP_NORM, true, 1, di, 0, 0);
}

/* Every id of layer il's token-id table must name an expert: read from
 * the file here (V K 4 bytes), before any token is routed. */
static int check_table(sl_binder *b, int il)
{
    const sl_tensor *t = &b->m->layers[il].tid2eid;
    const int X = b->m->hp.n_expert;
    int32_t *ids = malloc((size_t)t->nbytes);
    if (!ids) return sl_err_set(b->err, SL_ENOMEM, "out of memory reading %s", t->name);
    int rc = sl_gguf_read_tensor(b->m->gguf, t->info, 0, ids, t->nbytes, b->err);
    const uint64_t n = t->nbytes / 4;
    for (uint64_t i = 0; !rc && i < n; i++)
        if (ids[i] < 0 || ids[i] >= X)
            rc = sl_err_set(b->err, SL_EFORMAT, "deepseek4: %s gives token %llu expert %d, "
                            "outside [0, %d)", t->name,
                            (unsigned long long)(i / t->ne[0]), (int)ids[i], X);
    free(ids);
    return rc;
}

/* The routed FFN: router, the hash table or the selection bias, the
 * split experts, the shared expert, the clamps. */
static int bind_ffn(sl_binder *b, int il)
{
    sl_hparams *hp = &b->m->hp;
    sl_layer *L = &b->m->layers[il];
    const uint64_t E = (uint64_t)hp->n_embd, X = (uint64_t)hp->n_expert;
    const uint64_t F = (uint64_t)hp->n_ff_exp, K = (uint64_t)hp->n_expert_used;
    const bool hash = il < hp->n_hash;
    int rc;
    if ((rc = sl_bind_role(b, il, SL_LT_FFN_NORM, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_ROUTER, true, 2, E, X, 0))) return rc;
    if (hash) {
        b->allow_i32 = true;
        rc = sl_bind_role(b, il, SL_LT_TID2EID, true, 2, K, (uint64_t)hp->n_vocab, 0);
        b->allow_i32 = false;
        if (rc) return rc;
        if (L->tid2eid.type != SL_TYPE_I32)
            return sl_err_set(b->err, SL_EFORMAT, "deepseek4: blk.%d.ffn_gate_tid2eid.weight "
                              "must be I32", il);
        if ((rc = check_table(b, il))) return rc;
    } else if ((rc = sl_bind_role(b, il, SL_LT_EXP_PROBS_B, true, 1, X, 0, 0))) {
        return rc;
    }
    if ((rc = sl_bind_role(b, il, SL_LT_GATE_EXPS, true, 3, E, F, X))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_UP_EXPS, true, 3, E, F, X))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_DOWN_EXPS, true, 3, F, E, X))) return rc;
    const uint64_t S = F * (uint64_t)(hp->n_expert_shared > 0 ? hp->n_expert_shared : 1);
    if (hp->n_expert_shared <= 0 || S > (1u << 24))
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: expert_shared_count %d is required "
                          "(and the shared width below 2^24)", hp->n_expert_shared);
    if ((rc = sl_bind_role(b, il, SL_LT_GATE_SHEXP, true, 2, E, S, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_UP_SHEXP, true, 2, E, S, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_DOWN_SHEXP, true, 2, S, E, 0))) return rc;
    if ((int)S > hp->n_ff_shexp) hp->n_ff_shexp = (int)S;

    char key[128];
    const char *a = b->m->arch->name;
    double lim = 0.0, lim_sh;
    if (!arr_at(b->m->gguf, sl_arch_key(key, sizeof key, a, "swiglu_clamp_exp"), il, &lim))
        return sl_err_set(b->err, SL_EFORMAT, "deepseek4: %s.swiglu_clamp_exp is missing (or "
                          "has no entry for layer %d)", a, il);
    if (!arr_at(b->m->gguf, sl_arch_key(key, sizeof key, a, "swiglu_clamp_shexp"), il, &lim_sh))
        lim_sh = lim;
    if (!sl_in_range(&SL_RANGE_CLAMP, lim) || !sl_in_range(&SL_RANGE_CLAMP, lim_sh))
        return sl_err_set(b->err, SL_EFORMAT, "metadata '%s.swiglu_clamp_exp' / "
                          "'swiglu_clamp_shexp' = %g / %g for layer %d is out of range [%g, %g]",
                          a, lim, lim_sh, il, (double)SL_RANGE_CLAMP.lo,
                          (double)SL_RANGE_CLAMP.hi);
    L->d.ffn = (sl_ffn_desc){
        .kind = SL_FFN_ROUTED,
        .act = SL_ACT_SWIGLU,
        .n_ff = hp->n_ff_exp,
        .router = {.score = SL_SCORE_SQRT_SOFTPLUS, .n_expert = hp->n_expert,
                   .top_k = hp->n_expert_used, .renorm = hp->expert_weights_norm,
                   .sel_bias = !hash, .n_group = hp->n_group, .n_group_used = hp->n_group_used,
                   .w_scale = hp->expert_weights_scale, .hash = hash},
        .n_ff_shexp = (int)S,
        .shexp_ungated = true,
        /* llama.cpp skips the clamp at L <= 1e-6 */
        .clamp = lim > 1e-6 ? (float)lim : 0.0f,
        .clamp_sh = lim_sh > 1e-6 ? (float)lim_sh : 0.0f,
    };
    if (hp->n_group > 1) {
        const int per = hp->n_expert / hp->n_group;
        if (hp->n_group > 256 || hp->n_expert % hp->n_group || per < 2 || hp->n_group_used < 1 ||
            hp->n_group_used > hp->n_group || hp->n_expert_used > per * hp->n_group_used)
            return sl_err_set(b->err, SL_EFORMAT, "deepseek4: expert groups %d / %d do not fit "
                              "%d experts with top-%d", hp->n_group, hp->n_group_used,
                              hp->n_expert, hp->n_expert_used);
    }
    return SL_OK;
}

int sl_family_deepseek4_layer(sl_binder *b, int il)
{
    sl_hparams *hp = &b->m->hp;
    sl_layer *L = &b->m->layers[il];
    int rc;
    if (il == 0 && ((rc = read_model_keys(b)) || (rc = bind_head(b)))) return rc;
    char key[128];
    const sl_gguf_array *ra = sl_gguf_get_arr(
        b->m->gguf, sl_arch_key(key, sizeof key, b->m->arch->name, "attention.compress_ratios"));
    double rv = -1.0;
    if (!ra || !sl_gguf_arr_f64(ra, (uint64_t)il, &rv) || !(rv == 0.0 || rv == 4.0 || rv == 128.0))
        return sl_err_set(b->err, SL_EUNSUPPORTED, "deepseek4: layer %d's compress ratio %.10g is "
                          "not supported (0, 4 or 128)", il, rv);
    const int ratio = (int)rv;
    const uint64_t E = (uint64_t)hp->n_embd, H = (uint64_t)hp->n_head, D = (uint64_t)hp->head_dim;
    const uint64_t hc = (uint64_t)hp->n_hc, mix = (2 + hc) * hc, ql = (uint64_t)hp->q_lora;
    const uint64_t G = (uint64_t)hp->o_groups, R = (uint64_t)hp->o_lora;
    static const sl_ltensor hc_roles[2][3] = {
        {SL_LT_HC_ATTN_FN, SL_LT_HC_ATTN_BASE, SL_LT_HC_ATTN_SCALE},
        {SL_LT_HC_FFN_FN, SL_LT_HC_FFN_BASE, SL_LT_HC_FFN_SCALE}};
    for (int h = 0; h < 2; h++) {
        if ((rc = sl_bind_role(b, il, hc_roles[h][0], true, 2, hc * E, mix, 0))) return rc;
        if ((rc = sl_bind_role(b, il, hc_roles[h][1], true, 1, mix, 0, 0))) return rc;
        if ((rc = sl_bind_role(b, il, hc_roles[h][2], true, 1, 3, 0, 0))) return rc;
    }
    if ((rc = sl_bind_role(b, il, SL_LT_ATTN_NORM, true, 1, E, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_SINKS, true, 1, H, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WQ_A, true, 2, E, ql, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_Q_A_NORM, true, 1, ql, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WQ_B, true, 2, ql, H * D, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WKV, true, 2, E, D, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_KV_A_NORM, true, 1, D, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WO_A, true, 2, H * D / G, G * R, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_WO_B, true, 2, G * R, E, 0))) return rc;
    if (ratio && (rc = bind_compressor(b, il, ratio))) return rc;
    if ((rc = bind_ffn(b, il))) return rc;

    sl_layer_desc *d = &L->d;
    d->mixer = SL_MIXER_DS4;
    d->norm = SL_NORM_HC;
    const int n_rot = hp->rope_dim;
    sl_rope raw = sl_hparams_rope(hp, false);
    /* ratio-0 layers: the file's base without YaRN */
    raw.freq_scale = 1.0f, raw.ext_factor = 0.0f, raw.attn_factor = 1.0f;
    raw.beta_fast = 0.0f, raw.beta_slow = 0.0f, raw.n_ctx_orig = 0;
    sl_rope comp = sl_hparams_rope(hp, false);
    comp.freq_base = hp->comp_rope_base;
    /* llama.cpp's dsv4_rope_attn_factor (generic build: no fused multiply-add) */
    if (comp.ext_factor != 0.0f)
        comp.attn_factor = 1.0f / (1.0f + 0.1f * logf(1.0f / comp.freq_scale));
    d->ds4 = (sl_ds4_desc){
        .ratio = ratio, .n_head = hp->n_head, .head_dim = hp->head_dim, .n_rot = n_rot,
        .q_lora = hp->q_lora, .n_swa = hp->n_swa, .o_groups = hp->o_groups, .o_lora = hp->o_lora,
        .idx_n_head = ratio == 4 ? hp->idx_n_head : 0, .idx_dim = ratio == 4 ? hp->idx_dim : 0,
        .idx_top_k = ratio == 4 ? hp->idx_top_k : 0,
        .hadamard = hp->head_dim == hp->idx_dim ? hadamard_size(hp->head_dim) : 0,
        .idx_hadamard = hadamard_size(hp->idx_dim),
        .rope = ratio ? comp : raw, .comp_rope = comp,
        .scale = 1.0f / sqrtf((float)hp->head_dim),
    };
    /* what the session's attention buffers must hold: H query heads over
     * one head of D */
    d->attn = (sl_attn_desc){.n_head = hp->n_head, .n_head_kv = 1, .head_dim = hp->head_dim,
                             .head_dim_v = hp->head_dim, .scale = d->ds4.scale,
                             .rope = d->ds4.rope, .sinks = true};
    return SL_OK;
}
