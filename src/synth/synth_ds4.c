/* synth_ds4.c - synthetic deepseek4 (DeepSeek-V4 / V4-Flash) models: their
 * presets, checks, tensor list and GGUF keys as llama.cpp's converter
 * writes them (ARCHS.md section 9). synth_ds.c owns the file writing; the
 * values are the generic generator's by role, the hash layers' token-id
 * table an I32 tensor of distinct expert ids per token (synth_plan.c). */
#include "synth/synth_ds.h"

#include <stdio.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "model/arch.h"
#include "synth/synth_vocab.h"

typedef struct ds4_preset {
    const char *name;
    sl_synth_ds c;
} ds4_preset;

/* tiny: the reference fixture's shape (4 layers, ratios 0/4/128/4, window
 * 8, one hash layer, top-2 indexer); v4-flash: the published config of
 * deepseek-ai/DeepSeek-V4-Flash as ARCHS.md section 9 reports it (43
 * layers, E 4096, 64 heads, D 512, rope 64, q_lora 1024, window 128,
 * indexer 64 x 128 top-512, hc 4 with 20 iterations, vocab 129280; its
 * expert and output-group figures are the converter's keys for that
 * config: 256 experts top-6 of 2048, one shared, 8 groups of rank 1024,
 * 3 hash layers, one MTP block). Use --layers for a few. */
static const ds4_preset presets[] = {
    {"tiny",
     {.n_layer = 4, .n_embd = 256, .n_head = 4, .head_dim = 128, .rope_dim = 32, .q_lora = 64,
      .n_ff = 512, .n_ff_exp = 128, .n_expert = 8, .n_expert_used = 2, .n_expert_shared = 1,
      .w_scale = 2.5f, .w_norm = true, .n_swa = 8, .n_raw = 1, .o_groups = 2, .o_lora = 64,
      .idx_head = 8, .idx_dim = 64, .idx_top_k = 2, .hc_iters = 20, .n_hash = 1,
      .clamp = 2.5f, .comp_base = 160000.0f, .yarn_factor = 16.0f, .yarn_orig_ctx = 4096,
      .n_vocab = 512, .n_ctx = 4096, .rope_base = 10000.0f, .rms_eps = 1e-6f}},
    {"v4-flash",
     {.n_layer = 43, .n_nextn = 1, .n_embd = 4096, .n_head = 64, .head_dim = 512, .rope_dim = 64,
      .q_lora = 1024, .n_ff = 2048, .n_ff_exp = 2048, .n_expert = 256, .n_expert_used = 6,
      .n_expert_shared = 1, .w_scale = 1.5f, .w_norm = true, .n_swa = 128, .n_raw = 2,
      .o_groups = 8, .o_lora = 1024, .idx_head = 64, .idx_dim = 128, .idx_top_k = 512,
      .hc_iters = 20, .n_hash = 3, .clamp = 10.0f, .comp_base = 160000.0f,
      .yarn_factor = 16.0f, .yarn_orig_ctx = 65536, .n_vocab = 129280, .n_ctx = 1048576,
      .rope_base = 10000.0f, .rms_eps = 1e-6f, .pre = "deepseek-v3"}},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

int sl_synth_ds4_init(sl_synth_ds *c, const char *preset, sl_err *err)
{
    for (size_t i = 0; i < N_PRESETS; i++)
        if (preset && !strcmp(preset, presets[i].name)) {
            *c = presets[i].c;
            snprintf(c->arch, sizeof c->arch, "deepseek4");
            snprintf(c->preset, sizeof c->preset, "%s", preset);
            c->type = SL_SYNTH_F32;
            c->seed = 1;
            return SL_OK;
        }
    return sl_err_set(err, SL_EINVAL, "unknown preset '%s' for deepseek4 (known: tiny, v4-flash)",
                      preset ? preset : "(none)");
}

uint32_t sl_synth_ds4_ratio(const sl_synth_ds *c, uint32_t l)
{
    if (l < c->n_raw || l >= c->n_layer) return 0; /* an MTP block: ratio 0 */
    return (l - c->n_raw) % 2 == 0 ? 4 : 128;
}

#define MAX_DIM 65536u

int sl_synth_ds4_validate(const sl_synth_ds *c, sl_err *err)
{
    if (c->n_layer < 1 || c->n_layer > 1023 || c->n_nextn > 1)
        return sl_err_set(err, SL_EINVAL, "deepseek4: layer count %u out of range 1..1023 (and "
                          "at most one MTP block, as llama.cpp)", c->n_layer);
    if (c->n_embd < 32 || c->n_embd > MAX_DIM || c->n_embd % 32 || c->n_head < 1 ||
        c->n_head > 1024)
        return sl_err_set(err, SL_EINVAL, "deepseek4: n_embd %u (a multiple of 32) or head count "
                          "%u out of range", c->n_embd, c->n_head);
    if (c->head_dim < 64 || c->head_dim > 4096 || c->head_dim % 32 || c->rope_dim < 2 ||
        c->rope_dim % 2 || c->rope_dim > c->head_dim || c->q_lora < 32 || c->q_lora % 32 ||
        c->q_lora > MAX_DIM)
        return sl_err_set(err, SL_EINVAL, "deepseek4: head %u (rope %u) or q_lora %u out of range",
                          c->head_dim, c->rope_dim, c->q_lora);
    if (c->o_groups < 1 || c->n_head % c->o_groups || (c->n_head * c->head_dim / c->o_groups) % 32 ||
        c->o_lora < 32 || c->o_lora % 32)
        return sl_err_set(err, SL_EINVAL, "deepseek4: %u output groups of rank %u do not fit %u "
                          "heads", c->o_groups, c->o_lora, c->n_head);
    if (c->idx_dim < 64 || c->idx_dim % 64 || c->idx_dim < c->rope_dim || c->idx_head < 1 ||
        c->idx_top_k < 1 || c->idx_dim + c->idx_top_k > 64 * (2 * c->head_dim + 1))
        return sl_err_set(err, SL_EINVAL, "deepseek4: indexer %u heads of %u (a multiple of 64), "
                          "top-%u out of range", c->idx_head, c->idx_dim, c->idx_top_k);
    if (c->n_swa < 1 || c->n_hash > c->n_layer || c->hc_iters < 1 || !(c->clamp >= 0.0f) ||
        !(c->comp_base > 1.0f))
        return sl_err_set(err, SL_EINVAL, "deepseek4: window %u, hash layers %u, Sinkhorn "
                          "iterations %u, clamp or compress base out of range", c->n_swa,
                          c->n_hash, c->hc_iters);
    if (c->n_ff_exp < 32 || c->n_ff_exp % 32 || c->n_ff_exp > MAX_DIM || c->n_expert < 1 ||
        c->n_expert > 4096 || c->n_expert_used < 1 || c->n_expert_used > c->n_expert ||
        c->n_expert_shared < 1 || c->n_expert_shared > 16)
        return sl_err_set(err, SL_EINVAL, "deepseek4: experts %u of %u top-%u (shared %u) out of "
                          "range", c->n_expert, c->n_ff_exp, c->n_expert_used, c->n_expert_shared);
    if (c->n_vocab < SL_SYNTH_VOCAB_MIN || c->n_vocab > (1u << 22) || c->n_ctx < 1)
        return sl_err_set(err, SL_EINVAL, "deepseek4: vocabulary %u or context %u out of range",
                          c->n_vocab, c->n_ctx);
    if (!(c->rope_base > 1.0f) || !(c->rms_eps > 0.0f) || (unsigned)c->type >= SL_SYNTH_TYPE_COUNT)
        return sl_err_set(err, SL_EINVAL, "deepseek4: rope base, rms epsilon or file type out of "
                          "range");
    return SL_OK;
}

int sl_synth_ds4_plan(const sl_synth_ds *c, sl_synth_ds_add_fn add, void *p)
{
    const uint64_t E = c->n_embd, H = c->n_head, D = c->head_dim, V = c->n_vocab;
    const uint64_t hc = 4, mix = (2 + hc) * hc, ql = c->q_lora;
    const uint64_t G = c->o_groups, R = c->o_lora, X = c->n_expert, F = c->n_ff_exp;
    const uint64_t di = c->idx_dim, ih = c->idx_head, S = F * c->n_expert_shared;
    add(p, -1, SL_T_TOKEN_EMBD, SL_SYNTH_R_TOKEN_EMBD, 2, E, V, 0);
    add(p, -1, SL_T_OUTPUT_NORM, SL_SYNTH_R_NORM, 1, E, 0, 0);
    add(p, -1, SL_T_OUTPUT, SL_SYNTH_R_OUTPUT, 2, E, V, 0);
    add(p, -1, "output_hc_fn.weight", SL_SYNTH_R_ATTN_K, 2, hc * E, hc, 0);
    add(p, -1, "output_hc_base.weight", SL_SYNTH_R_BIAS, 1, hc, 0, 0);
    add(p, -1, "output_hc_scale.weight", SL_SYNTH_R_NORM, 1, 1, 0, 0);
    for (uint32_t u = 0; u < c->n_layer + c->n_nextn; u++) {
        const int l = (int)u;
        const uint32_t r = sl_synth_ds4_ratio(c, u);
        if (u >= c->n_layer) { /* the MTP block: a ratio-0, non-hash layer and its inputs */
            add(p, l, "nextn.eh_proj.weight", SL_SYNTH_R_ATTN_OUT, 2, 2 * E, E, 0);
            add(p, l, "nextn.enorm.weight", SL_SYNTH_R_NORM, 1, E, 0, 0);
            add(p, l, "nextn.hnorm.weight", SL_SYNTH_R_NORM, 1, E, 0, 0);
        }
        add(p, l, "hc_attn_fn.weight", SL_SYNTH_R_ATTN_K, 2, hc * E, mix, 0);
        add(p, l, "hc_attn_base.weight", SL_SYNTH_R_BIAS, 1, mix, 0, 0);
        add(p, l, "hc_attn_scale.weight", SL_SYNTH_R_NORM, 1, 3, 0, 0);
        add(p, l, "hc_ffn_fn.weight", SL_SYNTH_R_ATTN_K, 2, hc * E, mix, 0);
        add(p, l, "hc_ffn_base.weight", SL_SYNTH_R_BIAS, 1, mix, 0, 0);
        add(p, l, "hc_ffn_scale.weight", SL_SYNTH_R_NORM, 1, 3, 0, 0);
        add(p, l, SL_T_ATTN_NORM, SL_SYNTH_R_NORM, 1, E, 0, 0);
        add(p, l, "attn_sinks.weight", SL_SYNTH_R_BIAS, 1, H, 0, 0);
        add(p, l, "attn_q_a.weight", SL_SYNTH_R_ATTN_Q, 2, E, ql, 0);
        add(p, l, "attn_q_a_norm.weight", SL_SYNTH_R_NORM, 1, ql, 0, 0);
        add(p, l, "attn_q_b.weight", SL_SYNTH_R_ATTN_Q, 2, ql, H * D, 0);
        add(p, l, "attn_kv.weight", SL_SYNTH_R_ATTN_K, 2, E, D, 0);
        add(p, l, "attn_kv_a_norm.weight", SL_SYNTH_R_NORM, 1, D, 0, 0);
        add(p, l, "attn_output_a.weight", SL_SYNTH_R_ATTN_OUT, 2, H * D / G, G * R, 0);
        add(p, l, "attn_output_b.weight", SL_SYNTH_R_ATTN_OUT, 2, G * R, E, 0);
        if (r) {
            const uint64_t cc = r == 4 ? 2 : 1;
            add(p, l, "attn_compressor_kv.weight", SL_SYNTH_R_ATTN_V, 2, E, cc * D, 0);
            add(p, l, "attn_compressor_gate.weight", SL_SYNTH_R_ATTN_K, 2, E, cc * D, 0);
            add(p, l, "attn_compressor_ape.weight", SL_SYNTH_R_ATTN_K, 2, cc * D, r, 0);
            add(p, l, "attn_compressor_norm.weight", SL_SYNTH_R_NORM, 1, D, 0, 0);
        }
        if (r == 4) {
            add(p, l, "indexer.proj.weight", SL_SYNTH_R_ATTN_K, 2, E, ih, 0);
            add(p, l, "indexer.attn_q_b.weight", SL_SYNTH_R_ATTN_Q, 2, ql, ih * di, 0);
            add(p, l, "indexer_compressor_kv.weight", SL_SYNTH_R_ATTN_V, 2, E, 2 * di, 0);
            add(p, l, "indexer_compressor_gate.weight", SL_SYNTH_R_ATTN_K, 2, E, 2 * di, 0);
            add(p, l, "indexer_compressor_ape.weight", SL_SYNTH_R_ATTN_K, 2, 2 * di, 4, 0);
            add(p, l, "indexer_compressor_norm.weight", SL_SYNTH_R_NORM, 1, di, 0, 0);
        }
        add(p, l, SL_T_FFN_NORM, SL_SYNTH_R_NORM, 1, E, 0, 0);
        add(p, l, SL_T_FFN_ROUTER, SL_SYNTH_R_ROUTER, 2, E, X, 0);
        if (u < c->n_hash)
            add(p, l, "ffn_gate_tid2eid.weight", SL_SYNTH_R_TID2EID, 2, c->n_expert_used, V, 0);
        else
            add(p, l, "exp_probs_b.bias", SL_SYNTH_R_BIAS, 1, X, 0, 0);
        add(p, l, SL_T_FFN_GATE_EXPS, SL_SYNTH_R_EXP_GATE, 3, E, F, X);
        add(p, l, SL_T_FFN_UP_EXPS, SL_SYNTH_R_EXP_UP, 3, E, F, X);
        add(p, l, SL_T_FFN_DOWN_EXPS, SL_SYNTH_R_EXP_DOWN, 3, F, E, X);
        add(p, l, SL_T_FFN_GATE_SHEXP, SL_SYNTH_R_SH_GATE, 2, E, S, 0);
        add(p, l, SL_T_FFN_UP_SHEXP, SL_SYNTH_R_SH_UP, 2, E, S, 0);
        add(p, l, SL_T_FFN_DOWN_SHEXP, SL_SYNTH_R_SH_DOWN, 2, S, E, 0);
    }
    return SL_OK;
}

/* One key "deepseek4.<suffix>". */
static int key_u32(sl_gguf_writer *w, const char *suffix, uint32_t v)
{
    char key[128];
    return sl_gguf_writer_set_u32(w, sl_arch_key(key, sizeof key, "deepseek4", suffix), v);
}

static int key_f32(sl_gguf_writer *w, const char *suffix, float v)
{
    char key[128];
    return sl_gguf_writer_set_f32(w, sl_arch_key(key, sizeof key, "deepseek4", suffix), v);
}

int sl_synth_ds4_keys(const sl_synth_ds *c, sl_gguf_writer *w)
{
    char key[128];
    int32_t ratios[1024];
    float clamps[1024];
    const uint32_t n_all = c->n_layer + c->n_nextn;
    for (uint32_t l = 0; l < n_all; l++) {
        ratios[l] = (int32_t)sl_synth_ds4_ratio(c, l);
        clamps[l] = c->clamp;
    }
    const struct { const char *k; uint32_t v; } u[] = {
        {SL_KEY_BLOCK_COUNT, n_all}, {SL_KEY_CONTEXT_LENGTH, c->n_ctx},
        {SL_KEY_EMBEDDING_LENGTH, c->n_embd}, {SL_KEY_FEED_FORWARD_LENGTH, c->n_ff},
        {SL_KEY_HEAD_COUNT, c->n_head}, {SL_KEY_HEAD_COUNT_KV, 1},
        {SL_KEY_KEY_LENGTH, c->head_dim}, {SL_KEY_VALUE_LENGTH, c->head_dim},
        {SL_KEY_ROPE_DIM, c->rope_dim}, {"attention.q_lora_rank", c->q_lora},
        {"attention.sliding_window", c->n_swa}, {SL_KEY_EXPERT_COUNT, c->n_expert},
        {SL_KEY_EXPERT_USED_COUNT, c->n_expert_used}, {SL_KEY_EXPERT_FF_LENGTH, c->n_ff_exp},
        /* 4 (sqrt-softplus) unless a test asks for another to see it refused */
        {"expert_shared_count", c->n_expert_shared}, {"expert_gating_func", c->gating ? c->gating : 4},
        {"attention.indexer.head_count", c->idx_head},
        {"attention.indexer.key_length", c->idx_dim}, {"attention.indexer.top_k", c->idx_top_k},
        {"attention.output_group_count", c->o_groups},
        {"attention.output_lora_rank", c->o_lora}, {"hyper_connection.count", 4},
        {"hyper_connection.sinkhorn_iterations", c->hc_iters}, {"hash_layer_count", c->n_hash},
        {"embedding_length_out", 4 * c->n_embd},
    };
    int rc = SL_OK;
    for (size_t i = 0; i < sizeof u / sizeof u[0] && !rc; i++) rc = key_u32(w, u[i].k, u[i].v);
    if (!rc && c->n_nextn) rc = key_u32(w, "nextn_predict_layers", c->n_nextn);
    if (!rc) rc = key_f32(w, SL_KEY_RMS_EPS, c->rms_eps);
    if (!rc) rc = key_f32(w, SL_KEY_ROPE_FREQ_BASE, c->rope_base);
    if (!rc) rc = key_f32(w, "expert_weights_scale", c->w_scale);
    if (!rc) rc = key_f32(w, "attention.compress_rope_freq_base", c->comp_base);
    if (!rc) rc = key_f32(w, "hyper_connection.epsilon", 1e-6f);
    if (!rc)
        rc = sl_gguf_writer_set_bool(w, sl_arch_key(key, sizeof key, "deepseek4",
                                                    SL_KEY_EXPERT_WEIGHTS_NORM), c->w_norm);
    if (!rc)
        rc = sl_gguf_writer_set_arr_i32(
            w, sl_arch_key(key, sizeof key, "deepseek4", "attention.compress_ratios"), ratios,
            n_all);
    if (!rc)
        rc = sl_gguf_writer_set_arr_f32(
            w, sl_arch_key(key, sizeof key, "deepseek4", "swiglu_clamp_exp"), clamps, n_all);
    if (!rc)
        rc = sl_gguf_writer_set_arr_f32(
            w, sl_arch_key(key, sizeof key, "deepseek4", "swiglu_clamp_shexp"), clamps, n_all);
    if (!rc && c->yarn_factor > 0.0f) {
        rc = sl_gguf_writer_set_str(
            w, sl_arch_key(key, sizeof key, "deepseek4", SL_KEY_ROPE_SCALING_TYPE), "yarn");
        if (!rc) rc = key_f32(w, SL_KEY_ROPE_SCALING_FACTOR, c->yarn_factor);
        if (!rc) rc = key_u32(w, SL_KEY_ROPE_SCALING_ORIG_CTX, c->yarn_orig_ctx);
    }
    return rc;
}
