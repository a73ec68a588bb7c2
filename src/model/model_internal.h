/* model_internal.h - what the loader shares with the architecture family
 * files (family_*.c): binding a layer's tensors by role with their shapes.
 * Not part of the model's interface to the rest of sluice. */
#ifndef SL_MODEL_MODEL_INTERNAL_H
#define SL_MODEL_MODEL_INTERNAL_H

#include "model/model.h"

/* The loader's state while tensors are bound. */
typedef struct sl_binder sl_binder;
struct sl_binder {
    sl_model *m;
    bool experts;     /* the tensors being bound are routed experts */
    sl_err *err;
    sl_llama_rev llama_rev; /* sl_model_params.llama_rev (model/llama_rev.h) */
    int blk0;         /* the GGUF block of layer 0 (an MTP block's model: the
                         main layer count; else 0) */
    bool allow_i32;   /* the tensor being bound may be an I32 table (deepseek4's
                         tid2eid), read as it is, never as weights */
};

/* Binds layer il's tensor of role r by its GGUF name, checking its shape
 * against (w0, w1, w2)[0..n) with trailing dimensions 1 (a dropped trailing
 * 1 matches). A missing tensor fails when required, else stays absent
 * (info and data NULL). Routed experts count toward the model's expert
 * bytes, the rest toward its dense bytes. Fails with a message naming the
 * tensor, the shape seen and the shape expected. */
int sl_bind_role(sl_binder *b, int il, sl_ltensor r, bool required, int n, uint64_t w0,
                 uint64_t w1, uint64_t w2);

/* The rope the hyperparameters describe (rotated dims, base, linear or
 * YaRN scaling), NeoX-style or not. (hparams.c) */
sl_rope sl_hparams_rope(const sl_hparams *hp, bool neox);

/* sl_bind_role for a tensor stored under another name than its role's
 * (qwen35moe's FFN norm is post_attention_norm). */
int sl_bind_named(sl_binder *b, int il, sl_ltensor r, const char *suffix, bool required, int n,
                  uint64_t w0, uint64_t w1, uint64_t w2);

/* Binds a model-wide tensor (not blk.N.*) by its full GGUF name into t, as
 * sl_bind_role does (counted as dense; placed by the loader when t is one
 * it places: m->rope_freqs). */
int sl_bind_global(sl_binder *b, sl_tensor *t, const char *name, bool required, int n,
                   uint64_t w0, uint64_t w1, uint64_t w2);

/* Binds layer il's routed gate and up experts {E, F, X}: the split
 * ffn_gate_exps and ffn_up_exps, or the fused ffn_gate_up_exps {E, 2F, X}
 * (rows [0, F) of each expert gate, [F, 2F) up) seen through two views
 * (sl_tensor.view_of) in gate_exps and up_exps; *fused says which. Fails
 * naming a missing or misshapen tensor. (bind_gate_up.c) */
int sl_bind_gate_up_exps(sl_binder *b, int il, uint64_t E, uint64_t F, uint64_t X,
                         bool *fused);

/* Whether layer il has routed gate experts, split or fused. (bind_gate_up.c) */
bool sl_has_gate_exps(const sl_model *m, int il);

/* The layer function of gemma4 (family_gemma4.c). */
int sl_family_gemma4_layer(sl_binder *b, int il);
/* The layer functions of deepseek2 (family_deepseek2.c) and glm4moe
 * (family_glm4moe.c). */
int sl_family_deepseek2_layer(sl_binder *b, int il);
int sl_family_glm4moe_layer(sl_binder *b, int il);

/* The FFN of a deepseek2-style layer (deepseek2, glm4moe): its pre-norm
 * (stored as norm_name), then dense SwiGLU for il < leading_dense_block_count,
 * else routed experts with the file's routing (expert_gating_func, absent:
 * default_score; the exp_probs_b selection bias, required when bias_required;
 * expert groups, renorm, scaling) beside an ungated shared expert of
 * expert_shared_count x expert_feed_forward_length. Binds the tensors and
 * fills L->d.ffn; fails naming a missing or inconsistent key or tensor.
 * (family_deepseek2.c) */
int sl_bind_ds_ffn(sl_binder *b, int il, const char *norm_name, bool bias_required,
                   sl_router_score default_score);

/* A deepseek2-style layer: MLA attention (binds its tensors, fills
 * L->d.mla and the attention twin that sizes its scratch) and the routed
 * FFN of sl_bind_ds_ffn with default_score when expert_gating_func is
 * absent. Fails naming a missing or unsupported key or tensor.
 * (family_deepseek2.c) */
int sl_bind_mla_layer(sl_binder *b, int il, sl_router_score default_score);

/* The layer function of glm-dsa (family_glm_dsa.c): sl_bind_mla_layer
 * with sigmoid routing by default, and the sparse-attention indexer. */
int sl_family_glm_dsa_layer(sl_binder *b, int il);

/* The layer function of deepseek4 (family_deepseek4.c); layer 0 also
 * reads the model-wide keys and binds the hc head. */
int sl_family_deepseek4_layer(sl_binder *b, int il);

/* The layer function of gpt-oss (family_gptoss.c). */
int sl_family_gptoss_layer(sl_binder *b, int il);

/* The layer function of qwen35moe (family_qwen35.c). */
int sl_family_qwen35_layer(sl_binder *b, int il);

/* The layer function of the llama family (llama, qwen2, qwen3, qwen2moe,
 * qwen3moe, olmoe): binds layer il's tensors and fills its description.
 * (family_llama.c) */
int sl_family_llama_layer(sl_binder *b, int il);

#endif
