/* synth_ds.c - synthetic deepseek2, glm4moe and glm-dsa models (see
 * synth_ds.h). glm-dsa is deepseek2's MLA plus the sparse-attention
 * indexer, whose dimensions follow from the MLA ones (see idx_dims). */
#include "synth/synth_ds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf_writer.h"
#include "model/arch.h"
#include "synth/synth_keys.h"
#include "synth/synth_stream.h"
#include "synth/synth_vocab.h"

typedef struct ds_preset {
    const char *name, *arch;
    sl_synth_ds c;
} ds_preset;

/* The published shapes are the models' configs (config.json of
 * deepseek-ai/DeepSeek-V3, moonshotai/Kimi-K2-Instruct, zai-org/GLM-4.6);
 * the tiny ones keep every row a multiple of 32 (q8_0) and the MLA
 * scratch rules (key_length_mla <= kv_lora_rank, q_lora_rank <= n_embd). */
static const ds_preset presets[] = {
    {"tiny", "deepseek2",
     {.n_layer = 3, .n_embd = 64, .n_head = 4, .n_ff = 128, .n_ff_exp = 32, .n_expert = 8,
      .n_expert_used = 2, .n_expert_shared = 1, .n_dense_lead = 1, .n_group = 4,
      .n_group_used = 2, .gating = 2, .w_scale = 2.5f, .w_norm = true, .sel_bias = true,
      .q_lora = 64, .kv_lora = 64, .nope = 32, .rope = 16, .v_head = 32, .yarn_factor = 40.0f,
      .yarn_orig_ctx = 4096, .yarn_log_mul = 0.1f, .n_vocab = 512, .n_ctx = 4096,
      .rope_base = 10000.0f, .rms_eps = 1e-6f}},
    {"deepseek-v3", "deepseek2",
     {.n_layer = 61, .n_embd = 7168, .n_head = 128, .n_ff = 18432, .n_ff_exp = 2048,
      .n_expert = 256, .n_expert_used = 8, .n_expert_shared = 1, .n_dense_lead = 3,
      .n_group = 8, .n_group_used = 4, .gating = 2, .w_scale = 2.5f, .w_norm = true,
      .sel_bias = true, .q_lora = 1536, .kv_lora = 512, .nope = 128, .rope = 64,
      .v_head = 128, .yarn_factor = 40.0f, .yarn_orig_ctx = 4096, .yarn_log_mul = 0.1f,
      .n_vocab = 129280, .n_ctx = 163840, .rope_base = 10000.0f, .rms_eps = 1e-6f,
      .pre = "deepseek-v3"}},
    {"kimi-k2", "deepseek2",
     {.n_layer = 61, .n_embd = 7168, .n_head = 64, .n_ff = 18432, .n_ff_exp = 2048,
      .n_expert = 384, .n_expert_used = 8, .n_expert_shared = 1, .n_dense_lead = 1,
      .n_group = 1, .n_group_used = 1, .gating = 2, .w_scale = 2.827f, .w_norm = true,
      .sel_bias = true, .q_lora = 1536, .kv_lora = 512, .nope = 128, .rope = 64,
      .v_head = 128, .yarn_factor = 32.0f, .yarn_orig_ctx = 4096, .yarn_log_mul = 0.1f,
      .n_vocab = 163840, .n_ctx = 131072, .rope_base = 50000.0f, .rms_eps = 1e-6f}},
    {"tiny", "glm4moe",
     {.n_layer = 3, .n_embd = 64, .n_head = 4, .n_head_kv = 2, .head_dim = 32, .rope_dim = 16,
      .n_ff = 128, .n_ff_exp = 32, .n_expert = 8, .n_expert_used = 2, .n_expert_shared = 1,
      .n_dense_lead = 1, .n_group = 1, .n_group_used = 1, .gating = 2, .w_scale = 2.5f,
      .w_norm = true, .sel_bias = true, .qkv_bias = true, .qk_norm = true, .n_vocab = 512,
      .n_ctx = 4096, .rope_base = 1000000.0f, .rms_eps = 1e-5f}},
    {"tiny", "glm-dsa",
     {.n_layer = 3, .n_embd = 64, .n_head = 4, .n_ff = 128, .n_ff_exp = 32, .n_expert = 8,
      .n_expert_used = 2, .n_expert_shared = 1, .n_dense_lead = 1, .n_group = 1,
      .n_group_used = 1, .gating = 2, .w_scale = 2.5f, .w_norm = true, .sel_bias = true,
      .q_lora = 64, .kv_lora = 64, .nope = 32, .rope = 32, .v_head = 32, .n_vocab = 512,
      .n_ctx = 4096, .rope_base = 1000000.0f, .rms_eps = 1e-5f}},
    {"glm-5", "glm-dsa",
     {.n_layer = 78, .n_nextn = 1, .n_embd = 6144, .n_head = 64, .n_ff = 12288,
      .n_ff_exp = 2048, .n_expert = 256, .n_expert_used = 8, .n_expert_shared = 1,
      .n_dense_lead = 3, .n_group = 1, .n_group_used = 1, .gating = 2, .w_scale = 2.5f,
      .w_norm = true, .sel_bias = true, .q_lora = 2048, .kv_lora = 512, .nope = 192,
      .rope = 64, .v_head = 256, .n_vocab = 154880, .n_ctx = 202752,
      .rope_base = 1000000.0f, .rms_eps = 1e-5f, .pre = "glm4"}},
    {"glm-4.6", "glm4moe",
     {.n_layer = 92, .n_nextn = 1, .n_embd = 5120, .n_head = 96, .n_head_kv = 8,
      .head_dim = 128, .rope_dim = 64, .n_ff = 12288, .n_ff_exp = 1536, .n_expert = 160,
      .n_expert_used = 8, .n_expert_shared = 1, .n_dense_lead = 3, .n_group = 1,
      .n_group_used = 1, .gating = 2, .w_scale = 2.5f, .w_norm = true, .sel_bias = true,
      .qkv_bias = true, .qk_norm = true, .n_vocab = 151552, .n_ctx = 202752,
      .rope_base = 1000000.0f, .rms_eps = 1e-5f, .pre = "glm4"}},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

bool sl_synth_ds_arch(const char *arch)
{
    return arch && (!strcmp(arch, "deepseek2") || !strcmp(arch, "glm4moe") ||
                    !strcmp(arch, "glm-dsa") || !strcmp(arch, "deepseek4"));
}

/* MLA attention: deepseek2 and glm-dsa. */
static bool is_mla(const sl_synth_ds *c)
{
    return !strcmp(c->arch, "deepseek2") || !strcmp(c->arch, "glm-dsa");
}

/* glm-dsa's indexer, keys of 2 x rope (llama.cpp splits its heads
 * [rope | nope] correctly only then, and its Hadamard needs a multiple of
 * 64). GLM-5: 32 heads, top-k 2048, every layer full (its files have no
 * attention.indexer.types). tiny: 4 heads, top-k 4 (so a short prompt
 * already selects), every layer full but the last of three or more,
 * which shares the selection before it. */
typedef struct idx_dims {
    uint32_t n_head, dim, top_k;
} idx_dims;

static bool is_glm5(const sl_synth_ds *c) { return !strcmp(c->preset, "glm-5"); }

static idx_dims idx_of(const sl_synth_ds *c)
{
    return is_glm5(c) ? (idx_dims){32, 2 * c->rope, 2048} : (idx_dims){4, 2 * c->rope, 4};
}

static bool idx_full(const sl_synth_ds *c, uint32_t l)
{
    return is_glm5(c) || c->n_layer < 3 || l + 1 < c->n_layer;
}

const char *sl_synth_ds_presets(void)
{
    return "tiny (deepseek2, glm4moe and glm-dsa: n_embd 64, 3 layers, 8 experts top-2; "
           "deepseek4: the reference fixture's shape, 4 layers with ratios 0/4/128/4), "
           "deepseek-v3, "
           "kimi-k2 (deepseek2), glm-4.6 (glm4moe), glm-5 (glm-dsa), v4-flash (deepseek4) with "
           "the published dimensions (use --layers for a few)";
}

int sl_synth_ds_init(sl_synth_ds *c, const char *arch, const char *preset, sl_err *err)
{
    memset(c, 0, sizeof *c);
    if (!sl_synth_ds_arch(arch))
        return sl_err_set(err, SL_EINVAL, "'%s' is not deepseek2, glm4moe, glm-dsa or deepseek4",
                          arch ? arch : "(none)");
    if (!strcmp(arch, "deepseek4")) return sl_synth_ds4_init(c, preset, err);
    for (size_t i = 0; i < N_PRESETS; i++)
        if (preset && !strcmp(preset, presets[i].name) && !strcmp(arch, presets[i].arch)) {
            *c = presets[i].c;
            snprintf(c->arch, sizeof c->arch, "%s", arch);
            snprintf(c->preset, sizeof c->preset, "%s", preset);
            c->type = SL_SYNTH_F32;
            c->seed = 1;
            return SL_OK;
        }
    return sl_err_set(err, SL_EINVAL, "unknown preset '%s' for %s (known: %s)",
                      preset ? preset : "(none)", arch, sl_synth_ds_presets());
}

#define MAX_DIM 65536u

int sl_synth_ds_validate(const sl_synth_ds *c, sl_err *err)
{
    const bool mla = is_mla(c);
    if (!sl_synth_ds_arch(c->arch))
        return sl_err_set(err, SL_EINVAL, "unknown architecture '%s'", c->arch);
    if (!strcmp(c->arch, "deepseek4")) return sl_synth_ds4_validate(c, err);
    if (c->n_layer < 1 || c->n_layer > 1024 || c->n_nextn > 4)
        return sl_err_set(err, SL_EINVAL, "layer count %u (MTP %u) out of range 1..1024",
                          c->n_layer, c->n_nextn);
    if (c->n_embd < 32 || c->n_embd > MAX_DIM || c->n_head < 1 || c->n_head > 1024)
        return sl_err_set(err, SL_EINVAL, "n_embd %u or head count %u out of range", c->n_embd,
                          c->n_head);
    if (c->n_dense_lead > c->n_layer || c->n_ff < 1 || c->n_ff > MAX_DIM || c->n_ff_exp < 1 ||
        c->n_ff_exp > MAX_DIM)
        return sl_err_set(err, SL_EINVAL, "dense layers %u (of %u) or widths %u / %u out of "
                          "range", c->n_dense_lead, c->n_layer, c->n_ff, c->n_ff_exp);
    if (c->n_expert < 1 || c->n_expert > 4096 || c->n_expert_used < 1 ||
        c->n_expert_used > c->n_expert || c->n_expert_shared > 16)
        return sl_err_set(err, SL_EINVAL, "experts %u top-%u (shared %u) out of range",
                          c->n_expert, c->n_expert_used, c->n_expert_shared);
    if (c->n_group > 1 &&
        (c->n_expert % c->n_group || c->n_expert / c->n_group < 2 || c->n_group_used < 1 ||
         c->n_group_used > c->n_group ||
         c->n_expert_used > c->n_group_used * (c->n_expert / c->n_group)))
        return sl_err_set(err, SL_EINVAL, "%u groups keeping %u do not fit %u experts top-%u",
                          c->n_group, c->n_group_used, c->n_expert, c->n_expert_used);
    if (c->gating != 1 && c->gating != 2)
        return sl_err_set(err, SL_EINVAL, "gating function %u is not 1 (softmax) or 2 (sigmoid)",
                          c->gating);
    if (mla) {
        if (c->kv_lora < 2 || c->rope < 2 || c->rope % 2 || c->nope < 1 || c->v_head < 1 ||
            c->nope + c->rope > c->kv_lora || c->v_head > c->kv_lora + c->rope ||
            c->q_lora > c->n_embd || c->kv_lora > MAX_DIM)
            return sl_err_set(err, SL_EINVAL, "MLA dimensions (q_lora %u, kv_lora %u, nope %u, "
                              "rope %u, v %u) out of range", c->q_lora, c->kv_lora, c->nope,
                              c->rope, c->v_head);
        const uint32_t di = idx_of(c).dim;
        if (!strcmp(c->arch, "glm-dsa") && (c->q_lora == 0 || di % 64 || (di & (di - 1))))
            return sl_err_set(err, SL_EINVAL, "glm-dsa needs q_lora > 0 and an indexer key of "
                              "2 x rope = %u a power of two of at least 64", di);
    } else {
        if (c->n_head_kv < 1 || c->n_head % c->n_head_kv || c->head_dim < 2 ||
            c->head_dim % 2 || c->rope_dim > c->head_dim || c->rope_dim % 2 || !c->sel_bias)
            return sl_err_set(err, SL_EINVAL, "glm4moe heads %u/%u of %u (rope %u) out of range "
                              "(its selection bias is required)", c->n_head, c->n_head_kv,
                              c->head_dim, c->rope_dim);
    }
    if (c->n_vocab < SL_SYNTH_VOCAB_MIN || c->n_vocab > (1u << 22) || c->n_ctx < 1)
        return sl_err_set(err, SL_EINVAL, "vocabulary %u or context %u out of range",
                          c->n_vocab, c->n_ctx);
    if (!(c->rope_base > 1.0f) || !(c->rms_eps > 0.0f) || (unsigned)c->type >= SL_SYNTH_TYPE_COUNT)
        return sl_err_set(err, SL_EINVAL, "rope base, rms epsilon or file type out of range");
    return SL_OK;
}

/* ---- the tensor list ----------------------------------------------------- */

typedef struct plan {
    sl_synth_tensor *t;
    size_t n, cap;
    int rc;
} plan;

static void add(plan *p, int layer, const char *suffix, sl_synth_role role, uint32_t n_dims,
                uint64_t ne0, uint64_t ne1, uint64_t ne2);

/* add for synth_ds4.c (sl_synth_ds_add_fn) */
static void add_cb(void *p, int layer, const char *suffix, sl_synth_role role, uint32_t n_dims,
                   uint64_t ne0, uint64_t ne1, uint64_t ne2)
{
    add(p, layer, suffix, role, n_dims, ne0, ne1, ne2);
}

static void add(plan *p, int layer, const char *suffix, sl_synth_role role, uint32_t n_dims,
                uint64_t ne0, uint64_t ne1, uint64_t ne2)
{
    if (p->rc) return;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 128;
        sl_synth_tensor *nt = realloc(p->t, cap * sizeof *nt);
        if (!nt) {
            p->rc = SL_ENOMEM;
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
}

static void add_attention(plan *p, const sl_synth_ds *c, int l)
{
    const uint64_t E = c->n_embd, H = c->n_head;
    add(p, l, SL_T_ATTN_NORM, SL_SYNTH_R_NORM, 1, E, 0, 0);
    if (is_mla(c)) {
        const uint64_t hd = c->nope + c->rope;
        if (c->q_lora) {
            add(p, l, "attn_q_a.weight", SL_SYNTH_R_ATTN_Q, 2, E, c->q_lora, 0);
            add(p, l, "attn_q_a_norm.weight", SL_SYNTH_R_NORM, 1, c->q_lora, 0, 0);
            add(p, l, "attn_q_b.weight", SL_SYNTH_R_ATTN_Q, 2, c->q_lora, H * hd, 0);
        } else {
            add(p, l, SL_T_ATTN_Q, SL_SYNTH_R_ATTN_Q, 2, E, H * hd, 0);
        }
        add(p, l, "attn_kv_a_mqa.weight", SL_SYNTH_R_ATTN_K, 2, E, c->kv_lora + c->rope, 0);
        add(p, l, "attn_kv_a_norm.weight", SL_SYNTH_R_NORM, 1, c->kv_lora, 0, 0);
        add(p, l, "attn_k_b.weight", SL_SYNTH_R_ATTN_K, 3, c->nope, c->kv_lora, H);
        add(p, l, "attn_v_b.weight", SL_SYNTH_R_ATTN_V, 3, c->kv_lora, c->v_head, H);
        add(p, l, SL_T_ATTN_OUT, SL_SYNTH_R_ATTN_OUT, 2, H * c->v_head, E, 0);
        const idx_dims ix = idx_of(c);
        if (!strcmp(c->arch, "glm-dsa") && (uint32_t)l < c->n_layer && idx_full(c, (uint32_t)l)) {
            add(p, l, "indexer.k_norm.weight", SL_SYNTH_R_NORM, 1, ix.dim, 0, 0);
            add(p, l, "indexer.k_norm.bias", SL_SYNTH_R_BIAS, 1, ix.dim, 0, 0);
            add(p, l, "indexer.proj.weight", SL_SYNTH_R_ATTN_K, 2, E, ix.n_head, 0);
            add(p, l, "indexer.attn_k.weight", SL_SYNTH_R_ATTN_K, 2, E, ix.dim, 0);
            add(p, l, "indexer.attn_q_b.weight", SL_SYNTH_R_ATTN_Q, 2, c->q_lora,
                (uint64_t)ix.n_head * ix.dim, 0);
        }
        return;
    }
    const uint64_t q = H * c->head_dim, kv = (uint64_t)c->n_head_kv * c->head_dim;
    add(p, l, SL_T_ATTN_Q, SL_SYNTH_R_ATTN_Q, 2, E, q, 0);
    add(p, l, SL_T_ATTN_K, SL_SYNTH_R_ATTN_K, 2, E, kv, 0);
    add(p, l, SL_T_ATTN_V, SL_SYNTH_R_ATTN_V, 2, E, kv, 0);
    add(p, l, SL_T_ATTN_OUT, SL_SYNTH_R_ATTN_OUT, 2, q, E, 0);
    if (c->qkv_bias) {
        add(p, l, SL_T_ATTN_Q_BIAS, SL_SYNTH_R_BIAS, 1, q, 0, 0);
        add(p, l, SL_T_ATTN_K_BIAS, SL_SYNTH_R_BIAS, 1, kv, 0, 0);
        add(p, l, SL_T_ATTN_V_BIAS, SL_SYNTH_R_BIAS, 1, kv, 0, 0);
    }
    if (c->qk_norm) {
        add(p, l, SL_T_ATTN_Q_NORM, SL_SYNTH_R_NORM, 1, c->head_dim, 0, 0);
        add(p, l, SL_T_ATTN_K_NORM, SL_SYNTH_R_NORM, 1, c->head_dim, 0, 0);
    }
}

static void add_ffn(plan *p, const sl_synth_ds *c, int l)
{
    const uint64_t E = c->n_embd, X = c->n_expert, F = c->n_ff_exp;
    add(p, l, !strcmp(c->arch, "glm4moe") ? "post_attention_norm.weight" : SL_T_FFN_NORM,
        SL_SYNTH_R_NORM, 1, E, 0, 0);
    if ((uint32_t)l < c->n_dense_lead) {
        add(p, l, SL_T_FFN_GATE, SL_SYNTH_R_FFN_GATE, 2, E, c->n_ff, 0);
        add(p, l, SL_T_FFN_UP, SL_SYNTH_R_FFN_UP, 2, E, c->n_ff, 0);
        add(p, l, SL_T_FFN_DOWN, SL_SYNTH_R_FFN_DOWN, 2, c->n_ff, E, 0);
        return;
    }
    add(p, l, SL_T_FFN_ROUTER, SL_SYNTH_R_ROUTER, 2, E, X, 0);
    if (c->sel_bias) add(p, l, "exp_probs_b.bias", SL_SYNTH_R_BIAS, 1, X, 0, 0);
    add(p, l, SL_T_FFN_GATE_EXPS, SL_SYNTH_R_EXP_GATE, 3, E, F, X);
    add(p, l, SL_T_FFN_UP_EXPS, SL_SYNTH_R_EXP_UP, 3, E, F, X);
    add(p, l, SL_T_FFN_DOWN_EXPS, SL_SYNTH_R_EXP_DOWN, 3, F, E, X);
    if (c->n_expert_shared) {
        const uint64_t S = F * c->n_expert_shared;
        add(p, l, SL_T_FFN_GATE_SHEXP, SL_SYNTH_R_SH_GATE, 2, E, S, 0);
        add(p, l, SL_T_FFN_UP_SHEXP, SL_SYNTH_R_SH_UP, 2, E, S, 0);
        add(p, l, SL_T_FFN_DOWN_SHEXP, SL_SYNTH_R_SH_DOWN, 2, S, E, 0);
    }
}

/* The generic generator's view of c: its seed, file type and layer count
 * decide values and types exactly as for the other architectures. */
static sl_synth_config generic_view(const sl_synth_ds *c)
{
    sl_synth_config g;
    memset(&g, 0, sizeof g);
    snprintf(g.arch, sizeof g.arch, "%s", c->arch);
    g.n_layer = c->n_layer + c->n_nextn;
    g.n_expert = c->n_expert; /* deepseek4's token-id table draws ids below it */
    g.type = c->type;
    g.seed = c->seed;
    return g;
}

static int build_plan(const sl_synth_ds *c, plan *p)
{
    memset(p, 0, sizeof *p);
    const uint64_t E = c->n_embd, V = c->n_vocab;
    if (!strcmp(c->arch, "deepseek4")) {
        sl_synth_ds4_plan(c, add_cb, p);
    } else {
        add(p, -1, SL_T_TOKEN_EMBD, SL_SYNTH_R_TOKEN_EMBD, 2, E, V, 0);
        add(p, -1, SL_T_OUTPUT_NORM, SL_SYNTH_R_NORM, 1, E, 0, 0);
        add(p, -1, SL_T_OUTPUT, SL_SYNTH_R_OUTPUT, 2, E, V, 0);
        for (uint32_t l = 0; l < c->n_layer + c->n_nextn; l++) {
            add_attention(p, c, (int)l);
            add_ffn(p, c, (int)l);
            if (l >= c->n_layer) { /* an MTP block: loaded as weights, never run */
                add(p, (int)l, "nextn.eh_proj.weight", SL_SYNTH_R_ATTN_OUT, 2, 2 * E, E, 0);
                add(p, (int)l, "nextn.enorm.weight", SL_SYNTH_R_NORM, 1, E, 0, 0);
                add(p, (int)l, "nextn.hnorm.weight", SL_SYNTH_R_NORM, 1, E, 0, 0);
            }
        }
    }
    const sl_synth_config g = generic_view(c);
    for (size_t i = 0; i < p->n && !p->rc; i++)
        p->t[i].type = sl_synth_pick_type(&g, p->t[i].role, p->t[i].layer, p->t[i].ne[0],
                                          &p->t[i].fell_back);
    return p->rc;
}

/* ---- metadata ------------------------------------------------------------ */

/* The keys llama.cpp's converter writes (ARCHS.md sections 3 and 4). */
/* glm-dsa's attention.indexer.types: one bool per layer (true: full). */
static void idx_types(sl_synth_keys *k, const sl_synth_ds *c)
{
    uint8_t full[1024];
    for (uint32_t l = 0; l < c->n_layer; l++) full[l] = idx_full(c, l);
    sl_gguf_value v = {.type = SL_GGUF_ARRAY,
                       .v.arr = {.type = SL_GGUF_BOOL, .n = c->n_layer, .data = full}};
    sl_synth_key_value(k, "attention.indexer.types", &v);
}

static void arch_keys(sl_synth_keys *k, const sl_synth_ds *c)
{
    const bool mla = is_mla(c);
    sl_synth_key_u32(k, SL_KEY_BLOCK_COUNT, c->n_layer + c->n_nextn);
    if (c->n_nextn) sl_synth_key_u32(k, "nextn_predict_layers", c->n_nextn);
    sl_synth_key_u32(k, SL_KEY_CONTEXT_LENGTH, c->n_ctx);
    sl_synth_key_u32(k, SL_KEY_EMBEDDING_LENGTH, c->n_embd);
    sl_synth_key_u32(k, SL_KEY_FEED_FORWARD_LENGTH, c->n_ff);
    sl_synth_key_u32(k, SL_KEY_HEAD_COUNT, c->n_head);
    sl_synth_key_f32(k, SL_KEY_RMS_EPS, c->rms_eps);
    sl_synth_key_f32(k, SL_KEY_ROPE_FREQ_BASE, c->rope_base);
    sl_synth_key_u32(k, SL_KEY_EXPERT_COUNT, c->n_expert);
    sl_synth_key_u32(k, SL_KEY_EXPERT_USED_COUNT, c->n_expert_used);
    sl_synth_key_u32(k, SL_KEY_EXPERT_FF_LENGTH, c->n_ff_exp);
    sl_synth_key_u32(k, "expert_shared_count", c->n_expert_shared);
    sl_synth_key_u32(k, "leading_dense_block_count", c->n_dense_lead);
    sl_synth_key_u32(k, "expert_group_count", c->n_group);
    sl_synth_key_u32(k, "expert_group_used_count", c->n_group_used);
    sl_synth_key_u32(k, "expert_gating_func", c->gating);
    sl_synth_key_f32(k, "expert_weights_scale", c->w_scale);
    sl_synth_key_bool(k, SL_KEY_EXPERT_WEIGHTS_NORM, c->w_norm);
    if (mla) {
        sl_synth_key_u32(k, SL_KEY_HEAD_COUNT_KV, 1);
        sl_synth_key_u32(k, "vocab_size", c->n_vocab);
        if (c->q_lora) sl_synth_key_u32(k, "attention.q_lora_rank", c->q_lora);
        sl_synth_key_u32(k, "attention.kv_lora_rank", c->kv_lora);
        sl_synth_key_u32(k, SL_KEY_KEY_LENGTH, c->kv_lora + c->rope);
        sl_synth_key_u32(k, SL_KEY_VALUE_LENGTH, c->kv_lora);
        sl_synth_key_u32(k, "attention.key_length_mla", c->nope + c->rope);
        sl_synth_key_u32(k, "attention.value_length_mla", c->v_head);
        sl_synth_key_u32(k, SL_KEY_ROPE_DIM, c->rope);
        if (c->yarn_factor > 0.0f) {
            sl_synth_key_str(k, SL_KEY_ROPE_SCALING_TYPE, "yarn");
            sl_synth_key_f32(k, SL_KEY_ROPE_SCALING_FACTOR, c->yarn_factor);
            sl_synth_key_u32(k, SL_KEY_ROPE_SCALING_ORIG_CTX, c->yarn_orig_ctx);
            sl_synth_key_f32(k, "rope.scaling.yarn_log_multiplier", c->yarn_log_mul);
        }
        if (!strcmp(c->arch, "glm-dsa")) {
            const idx_dims ix = idx_of(c);
            sl_synth_key_u32(k, "attention.indexer.head_count", ix.n_head);
            sl_synth_key_u32(k, "attention.indexer.key_length", ix.dim);
            sl_synth_key_u32(k, "attention.indexer.top_k", ix.top_k);
            if (!is_glm5(c)) idx_types(k, c);
        }
    } else {
        sl_synth_key_u32(k, SL_KEY_HEAD_COUNT_KV, c->n_head_kv);
        sl_synth_key_u32(k, SL_KEY_KEY_LENGTH, c->head_dim);
        sl_synth_key_u32(k, SL_KEY_VALUE_LENGTH, c->head_dim);
        sl_synth_key_u32(k, SL_KEY_ROPE_DIM, c->rope_dim);
    }
}

static int write_metadata(sl_gguf_writer *w, const sl_synth_ds *c, const sl_synth_vocab *v)
{
    sl_synth_keys k = {w, c->arch, SL_OK};
    char name[128];
    snprintf(name, sizeof name, "sluice synthetic %s %s (seed %llu)", c->arch, c->preset,
             (unsigned long long)c->seed);
    sl_synth_keys_general(&k, name, c->type);
    if (!strcmp(c->arch, "deepseek4")) {
        if (!k.rc) k.rc = sl_synth_ds4_keys(c, w);
    } else {
        arch_keys(&k, c);
    }
    sl_synth_keys_vocab(&k, v, c->pre[0] ? c->pre : SL_SYNTH_PRE_NAME);
    if (!k.rc) k.rc = sl_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false);
    if (!k.rc) k.rc = sl_gguf_writer_set_str(w, "tokenizer.chat_template", sl_synth_chat_template());
    if (!k.rc) k.rc = sl_gguf_writer_set_u64(w, "sluice.synth.seed", c->seed);
    if (!k.rc) k.rc = sl_gguf_writer_set_str(w, "sluice.synth.preset", c->preset);
    return k.rc;
}

/* ---- data: synth_stream.c's pipeline -------------------------------------- */

int sl_synth_ds_write(const sl_synth_ds *c, const char *path, uint64_t *bytes, sl_err *err)
{
    plan p;
    if (build_plan(c, &p)) {
        free(p.t);
        return sl_err_set(err, SL_ENOMEM, "out of memory listing tensors");
    }
    sl_synth_vocab v;
    int rc = sl_synth_vocab_build(&v, c->n_vocab, err);
    if (rc) {
        free(p.t);
        return rc;
    }
    sl_gguf_writer *w = NULL;
    sl_synth_stream_size sz;
    if ((rc = sl_synth_stream_measure(p.t, p.n, &sz, err))) goto done;
    if ((rc = sl_gguf_writer_open(&w, path, err))) goto done;
    if ((rc = write_metadata(w, c, &v))) {
        rc = sl_err_set(err, rc, "cannot set model metadata (out of memory?)");
        goto done;
    }
    for (size_t i = 0; i < p.n; i++)
        if ((rc = sl_gguf_writer_add_tensor(w, p.t[i].name, p.t[i].type, p.t[i].n_dims,
                                            p.t[i].ne, err)))
            goto done;
    const sl_synth_config g = generic_view(c); /* threads 0: all in this thread */
    if ((rc = c->holes ? sl_gguf_writer_write_holes(w, err)
                       : sl_synth_stream_write(w, &g, p.t, p.n, &sz, NULL, NULL, err)))
        goto done;
    rc = sl_gguf_writer_close(w, err);
    w = NULL;
done:
    if (w) sl_gguf_writer_abort(w);
    if (!rc && bytes) *bytes = sz.data_bytes;
    free(p.t);
    sl_synth_vocab_free(&v);
    return rc;
}
