/* synth_ds.h - synthetic deepseek2 (MLA: DeepSeek-V3 / Kimi K2), glm4moe
 * (GLM-4.5 / 4.6) and glm-dsa (GLM-5.x: MLA plus the sparse-attention
 * indexer) models, deterministic from a seed.
 *
 * Owns: these architectures' presets (tiny ones for tests, and the
 * published dimensions of DeepSeek-V3, Kimi K2, GLM-4.6 and GLM-5 at any layer
 * count), their tensor list and GGUF keys as llama.cpp's converter writes
 * them (ARCHS.md sections 3 and 4), and writing the file a tensor row
 * chunk at a time (little memory whatever the size). Values, tensor types
 * and the tokenizer are the generic generator's (synth.h: the same
 * statistics by role, the same type rule, the same vocabulary).
 * Must not know how a model is run. */
#ifndef SL_SYNTH_SYNTH_DS_H
#define SL_SYNTH_SYNTH_DS_H

#include <stdbool.h>
#include <stdint.h>

#include "synth/synth.h"
#include "util/status.h"

typedef struct sl_synth_ds {
    char arch[16];         /* "deepseek2", "glm4moe" or "glm-dsa" */
    char preset[32];
    uint32_t n_layer;      /* main layers (block_count = n_layer + n_nextn) */
    uint32_t n_nextn;      /* MTP blocks written after them (never run) */
    uint32_t n_embd, n_head;
    uint32_t n_ff;         /* the dense leading layers' width */
    uint32_t n_ff_exp, n_expert, n_expert_used, n_expert_shared, n_dense_lead;
    uint32_t n_group, n_group_used; /* expert groups (1: no limit) */
    uint32_t gating;       /* expert_gating_func: 1 softmax, 2 sigmoid */
    float w_scale;         /* expert_weights_scale */
    bool w_norm;           /* expert_weights_norm */
    bool sel_bias;         /* exp_probs_b (glm4moe: always) */
    /* deepseek2 (MLA) */
    uint32_t q_lora;       /* 0: attn_q instead of q_a / q_b */
    uint32_t kv_lora, nope, rope, v_head;
    float yarn_factor;     /* 0: no YaRN */
    uint32_t yarn_orig_ctx;
    float yarn_log_mul;    /* as the converter stores it: 0.1 x mscale_all_dim */
    /* glm4moe */
    uint32_t n_head_kv, head_dim, rope_dim;
    bool qkv_bias, qk_norm;
    uint32_t n_vocab, n_ctx;
    float rope_base, rms_eps;
    sl_synth_type type;
    uint64_t seed;
    bool holes;            /* tensor data left as holes (all zeros, a sparse
                              file): sl_gguf_writer_write_holes */
    char pre[24];          /* tokenizer.ggml.pre written ("" : the generic
                              generator's qwen2; its vocabulary either way) */
    /* deepseek4 (synth_ds4.c; ARCHS.md section 9): head_dim is D, rope_dim
     * the roped tail, q_lora the q rank; layers < n_raw are ratio 0, then
     * ratio 4 and 128 alternate (V4-Flash's [0, 0, 4, 128, 4, 128, ...]) */
    uint32_t n_swa, n_raw, o_groups, o_lora, idx_head, idx_dim, idx_top_k;
    uint32_t hc_iters, n_hash;
    float clamp, comp_base;
} sl_synth_ds;

/* deepseek4's presets, checks and tensor list (synth_ds4.c), called by
 * the functions below for that architecture. */
int sl_synth_ds4_init(sl_synth_ds *c, const char *preset, sl_err *err);
int sl_synth_ds4_validate(const sl_synth_ds *c, sl_err *err);
/* The compress ratio of main layer l (0, 4 or 128). */
uint32_t sl_synth_ds4_ratio(const sl_synth_ds *c, uint32_t l);
/* Adds one tensor to a plan (synth_ds.c's list): layer -1 for a global
 * tensor, suffix its name (after "blk.N."), its role and shape. */
typedef void (*sl_synth_ds_add_fn)(void *plan, int layer, const char *suffix, sl_synth_role role,
                                   uint32_t n_dims, uint64_t ne0, uint64_t ne1, uint64_t ne2);
/* deepseek4's tensor list through add, and its architecture keys into w
 * (0 or the writer's error). */
int sl_synth_ds4_plan(const sl_synth_ds *c, sl_synth_ds_add_fn add, void *plan);
struct sl_gguf_writer;
int sl_synth_ds4_keys(const sl_synth_ds *c, struct sl_gguf_writer *w);

/* True if arch is one this file writes (deepseek2, glm4moe, glm-dsa,
 * deepseek4). */
bool sl_synth_ds_arch(const char *arch);

/* Fills c from an architecture and a preset: "tiny" (unit tests), and the
 * published shapes "deepseek-v3", "kimi-k2" (deepseek2), "glm-4.6"
 * (glm4moe) and "glm-5" (glm-dsa). The caller may then change fields (layer count, q_lora 0,
 * groups, ...) and must call sl_synth_ds_validate. Fails (SL_EINVAL) on
 * an unknown arch or preset or a preset of the other architecture. */
int sl_synth_ds_init(sl_synth_ds *c, const char *arch, const char *preset, sl_err *err);

/* Checks that c describes a model sluice and llama.cpp can load (head
 * sizes, groups that divide the experts, top-k within the kept groups,
 * dense layers within the layer count, sizes below sane caps). */
int sl_synth_ds_validate(const sl_synth_ds *c, sl_err *err);

/* Presets, for --help: a comma-separated list with one-line summaries. */
const char *sl_synth_ds_presets(void);

/* Writes the model c describes (validated) to path: metadata, the
 * generated vocabulary, then every tensor. Deterministic in c. On failure
 * the partial file is removed. *bytes (if non-NULL) receives the file's
 * tensor bytes. */
int sl_synth_ds_write(const sl_synth_ds *c, const char *path, uint64_t *bytes, sl_err *err);

#endif
