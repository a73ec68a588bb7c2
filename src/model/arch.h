/* arch.h - table-driven description of each supported architecture.
 *
 * One entry per `general.architecture` value says how the shared forward pass
 * must treat that family: rope layout, which optional tensors exist, how the
 * router's weights are normalised, and so on. Tensor names follow the GGUF
 * convention (blk.N.attn_q.weight ...), built with sl_tensor_name().
 * Adding an architecture: a row here, a folder under src/families, and the
 * checklist of docs/adding-an-architecture.md. */
#ifndef SL_MODEL_ARCH_H
#define SL_MODEL_ARCH_H

#include <stdbool.h>
#include <stddef.h>

typedef enum sl_rope_style {
    SL_ROPE_NORMAL = 0, /* rotate adjacent pairs (x[2i], x[2i+1]): llama */
    SL_ROPE_NEOX = 2,   /* rotate halves (x[i], x[i + d/2]): qwen, olmoe */
} sl_rope_style;

typedef enum sl_qk_norm {
    SL_QK_NORM_NONE = 0,
    SL_QK_NORM_HEAD,   /* RMSNorm each head's q and k (weight: head_dim): qwen3 */
    SL_QK_NORM_FULL,   /* RMSNorm the whole q and k projection (weight: n_head*head_dim,
                          n_head_kv*head_dim): olmoe */
} sl_qk_norm;

struct sl_binder;

typedef struct sl_arch {
    const char *name;          /* value of general.architecture */
    /* binds layer il's tensors and fills its description (family_*.c) */
    int (*layer)(struct sl_binder *b, int il);
    sl_rope_style rope;
    sl_qk_norm qk_norm;
    bool qkv_bias;             /* attn_q/k/v.bias present (qwen2 family) */
    bool moe;                  /* routed experts expected (llama: optional,
                                  detected from the tensors) */
    bool moe_optional;         /* llama: dense or Mixtral-style */
    bool shared_expert;        /* qwen2moe: ffn_*_shexp + sigmoid gate */
    bool norm_topk_default;    /* renormalise top-k weights to sum 1 when the
                                  file says nothing (expert_weights_norm) */
    bool out_rows_at_head;     /* llama.cpp drops the rows whose logits are not
                                  asked before the output norm, not past the
                                  last layer's mixer (engine/out_rows.h) */
} sl_arch;

/* Entry for an architecture name, or NULL if sluice does not support it. */
const sl_arch *sl_arch_find(const char *name);

/* Comma-separated list of supported names, for error messages. */
const char *sl_arch_supported_list(void);

/* Metadata keys, "{arch}.<suffix>". */
#define SL_KEY_BLOCK_COUNT "block_count"
#define SL_KEY_CONTEXT_LENGTH "context_length"
#define SL_KEY_EMBEDDING_LENGTH "embedding_length"
#define SL_KEY_FEED_FORWARD_LENGTH "feed_forward_length"
#define SL_KEY_EXPERT_FF_LENGTH "expert_feed_forward_length"
#define SL_KEY_EXPERT_SHARED_FF_LENGTH "expert_shared_feed_forward_length"
#define SL_KEY_EXPERT_COUNT "expert_count"
#define SL_KEY_EXPERT_USED_COUNT "expert_used_count"
#define SL_KEY_EXPERT_WEIGHTS_NORM "expert_weights_norm"
#define SL_KEY_HEAD_COUNT "attention.head_count"
#define SL_KEY_HEAD_COUNT_KV "attention.head_count_kv"
#define SL_KEY_KEY_LENGTH "attention.key_length"
#define SL_KEY_VALUE_LENGTH "attention.value_length"
#define SL_KEY_RMS_EPS "attention.layer_norm_rms_epsilon"
#define SL_KEY_ROPE_FREQ_BASE "rope.freq_base"
#define SL_KEY_ROPE_DIM "rope.dimension_count"
#define SL_KEY_ROPE_SCALING_TYPE "rope.scaling.type"
#define SL_KEY_ROPE_SCALING_FACTOR "rope.scaling.factor"
#define SL_KEY_ROPE_SCALING_ORIG_CTX "rope.scaling.original_context_length"

/* Writes "{arch}.{suffix}" into buf; returns buf. */
char *sl_arch_key(char *buf, size_t cap, const char *arch, const char *suffix);

/* Tensor names. Global ones are fixed strings; per-layer ones are
 * "blk.{layer}.{suffix}" built by sl_tensor_name. */
#define SL_T_TOKEN_EMBD "token_embd.weight"
#define SL_T_OUTPUT_NORM "output_norm.weight"
#define SL_T_OUTPUT "output.weight" /* absent: tied to token_embd */

#define SL_T_ATTN_NORM "attn_norm.weight"
#define SL_T_ATTN_Q "attn_q.weight"
#define SL_T_ATTN_K "attn_k.weight"
#define SL_T_ATTN_V "attn_v.weight"
#define SL_T_ATTN_Q_BIAS "attn_q.bias"
#define SL_T_ATTN_K_BIAS "attn_k.bias"
#define SL_T_ATTN_V_BIAS "attn_v.bias"
#define SL_T_ATTN_Q_NORM "attn_q_norm.weight"
#define SL_T_ATTN_K_NORM "attn_k_norm.weight"
#define SL_T_ATTN_OUT "attn_output.weight"
#define SL_T_FFN_NORM "ffn_norm.weight"
/* dense feed-forward: gate/up [n_embd, n_ff], down [n_ff, n_embd] */
#define SL_T_FFN_GATE "ffn_gate.weight"
#define SL_T_FFN_UP "ffn_up.weight"
#define SL_T_FFN_DOWN "ffn_down.weight"
/* routed experts: router [n_embd, n_expert]; gate/up [n_embd, n_ff_exp,
 * n_expert]; down [n_ff_exp, n_embd, n_expert] (ne order, ne[0] first) */
#define SL_T_FFN_ROUTER "ffn_gate_inp.weight"
#define SL_T_FFN_GATE_EXPS "ffn_gate_exps.weight"
#define SL_T_FFN_UP_EXPS "ffn_up_exps.weight"
#define SL_T_FFN_DOWN_EXPS "ffn_down_exps.weight"
/* shared expert (qwen2moe): gate/up [n_embd, n_ff_shexp], down
 * [n_ff_shexp, n_embd], sigmoid gate [n_embd] (one output) */
#define SL_T_FFN_GATE_SHEXP "ffn_gate_shexp.weight"
#define SL_T_FFN_UP_SHEXP "ffn_up_shexp.weight"
#define SL_T_FFN_DOWN_SHEXP "ffn_down_shexp.weight"
#define SL_T_FFN_SHEXP_GATE "ffn_gate_inp_shexp.weight"

/* Writes "blk.{layer}.{suffix}" into buf; returns buf. */
char *sl_tensor_name(char *buf, size_t cap, int layer, const char *suffix);

#endif
