/* model.h - a loaded model: hyperparameters and bound weight tensors.
 *
 * Owns: the GGUF handle, the resident weight memory, the per-layer tensor
 * table: what the file says and where its resident weights lie, nothing
 * that changes after load, so sessions share it without a lock. What
 * changes while it runs lives in its runtime (engine/model_runtime.h).
 * Must not know: sessions, sampling, tokenizer algorithms, the CLI. */
#ifndef SL_MODEL_MODEL_H
#define SL_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "ops/ops.h"
#include "quant/quant.h"
#include "sluice.h"

typedef enum sl_rope_scaling {
    SL_ROPE_SCALING_NONE = 0,
    SL_ROPE_SCALING_LINEAR,
    SL_ROPE_SCALING_YARN,
} sl_rope_scaling;

typedef struct sl_hparams {
    int n_layer;         /* blocks the forward pass runs */
    int n_nextn;         /* multi-token-prediction blocks after them (not run) */
    int n_embd;
    int n_head;
    int n_head_kv;
    int head_dim;        /* key/query head size */
    int head_dim_v;      /* value head size */
    int n_ff;            /* dense feed-forward width (0 if all layers MoE) */
    int n_expert;        /* 0 for dense models */
    int n_expert_used;   /* top-k */
    int n_ff_exp;        /* routed expert width */
    int n_ff_shexp;      /* shared expert width (qwen2moe) */
    int n_vocab;
    int n_ctx_train;
    int rope_dim;        /* rotated dims per head (<= head_dim) */
    float rms_eps;
    float rope_freq_base;
    sl_rope_scaling rope_scaling;
    float rope_freq_scale; /* 1/factor for linear and yarn */
    int rope_yarn_orig_ctx;
    bool expert_weights_norm; /* renormalise the top-k router weights */
    /* routing keys (deepseek2, glm4moe) and MLA dimensions */
    int n_dense_lead;    /* leading_dense_block_count: the first layers are dense */
    int n_expert_shared; /* expert_shared_count: the shared expert is this many experts wide */
    int n_group;         /* expert_group_count (0 or 1: no group limit) */
    int n_group_used;    /* expert_group_used_count */
    int gating_func;     /* expert_gating_func as written (0: absent, 1 softmax, 2 sigmoid) */
    float expert_weights_scale; /* routed scaling factor (0: none) */
    int q_lora;          /* MLA: attention.q_lora_rank (0: q is one matrix) */
    int kv_lora;         /* MLA: attention.kv_lora_rank */
    int head_dim_mla;    /* MLA: key_length_mla, q/k head size nope + rope */
    int head_dim_v_mla;  /* MLA: value_length_mla */
    float yarn_log_mul;  /* rope.scaling.yarn_log_multiplier / 0.1 (0: absent) */
    /* glm-dsa: the sparse-attention indexer (0: none) */
    int idx_n_head;      /* attention.indexer.head_count */
    int idx_dim;         /* attention.indexer.key_length */
    int idx_top_k;       /* attention.indexer.top_k */
    /* deepseek4 (ARCHS.md section 9; 0: not that family) */
    int n_hc;            /* hyper_connection.count: residual streams per token */
    int hc_iters;        /* hyper_connection.sinkhorn_iterations */
    float hc_eps;        /* hyper_connection.epsilon */
    bool hc_fused;       /* stream sums as multiply-adds (llama.cpp's fused ops), else
                          * every product and sum rounded (its unfused graph): decided
                          * per model (family_deepseek4.c ds4_hc_fused) */
    bool swiglu_clamp_op; /* the clamped SwiGLU as llama.cpp 2026-09's ggml_swiglu_clamp
                           * (engine/ffn.h sl_ffn_swiglu_clamp_op), else the inputs
                           * clamped before ggml's SwiGLU (the fixtures' build) */
    int n_swa;           /* attention.sliding_window */
    int n_hash;          /* hash_layer_count: layers routed by token id */
    int o_groups;        /* attention.output_group_count */
    int o_lora;          /* attention.output_lora_rank */
    float comp_rope_base; /* attention.compress_rope_freq_base */
} sl_hparams;

/* A resident tensor: shape, type and a pointer into the model's memory. */
typedef struct sl_tensor {
    const char *name;
    const sl_gguf_tensor *info; /* where it lies in the file; NULL when absent */
    sl_type type;
    uint64_t ne[4];
    uint64_t nbytes;
    uint64_t row_bytes;  /* bytes of one row of ne[0] elements */
    const void *data;    /* NULL when the tensor is absent */
    /* A view into another tensor of the layer (gemma4's fused
     * ffn_gate_up_exps seen as gate and up): view_of is that tensor's role
     * + 1 (0: not a view); its bytes are the viewed tensor's, from
     * view_offset within each expert's slice, experts expert_bytes apart
     * (0: rows * row_bytes, the plain stacked layout). A view is neither
     * counted nor read on its own. */
    int view_of;
    uint64_t view_offset;
    uint64_t expert_bytes;
    /* How data holds the rows: SL_MAT_ROWS (0) as in the file, or SL_MAT_X8
     * (ops/ops.h) when the load rewrote them eight-row interleaved for the
     * repacked-order kernels (model_load.c). */
    int layout;
    /* Multiplied in the order of llama.cpp's IQ panel gemm (ops/ops.h
     * sl_mat.iq_panel): an IQ4_XS matrix of rows % 8 == 0 under
     * --llama-ref 2026-09 (model_load.c). */
    bool iq_panel;
    /* An f32 matrix under --llama-ref 2026-09: the products llama.cpp
     * leaves to ggml_vec_dot_f32 round its leftover as that build does
     * (ops/ops.h sl_mat.f32_vtail). */
    bool f32_vtail;
} sl_tensor;

/* The tensors of a layer by role: the index into sl_layer.t. The role
 * table (sl_layer_role) gives each one's GGUF name and what it reads. */
typedef enum sl_ltensor {
    SL_LT_ATTN_NORM,
    SL_LT_WQ, SL_LT_WK, SL_LT_WV, SL_LT_WO,
    SL_LT_BQ, SL_LT_BK, SL_LT_BV,
    SL_LT_Q_NORM, SL_LT_K_NORM,
    SL_LT_FFN_NORM,
    SL_LT_FFN_GATE, SL_LT_FFN_UP, SL_LT_FFN_DOWN,
    SL_LT_ROUTER,
    SL_LT_GATE_EXPS, SL_LT_UP_EXPS, SL_LT_DOWN_EXPS,
    SL_LT_GATE_SHEXP, SL_LT_UP_SHEXP, SL_LT_DOWN_SHEXP,
    SL_LT_SHEXP_GATE,
    /* gated DeltaNet (qwen35moe linear layers) */
    SL_LT_SSM_QKV, SL_LT_SSM_Z, SL_LT_SSM_CONV, SL_LT_SSM_DT, SL_LT_SSM_A,
    SL_LT_SSM_BETA, SL_LT_SSM_ALPHA, SL_LT_SSM_NORM, SL_LT_SSM_OUT,
    /* gpt-oss: the output bias, attention sinks, router and expert biases */
    SL_LT_BO, SL_LT_SINKS, SL_LT_ROUTER_B, SL_LT_GATE_EXPS_B, SL_LT_UP_EXPS_B, SL_LT_DOWN_EXPS_B,
    /* per-expert output scales (any architecture: llama.cpp's generic
     * *_exps.scale), gemma4's sandwich norms, router scale, layer scalar
     * and fused gate/up experts */
    SL_LT_GATE_EXPS_S, SL_LT_UP_EXPS_S, SL_LT_DOWN_EXPS_S,
    SL_LT_POST_ATTN_NORM, SL_LT_POST_FFW_NORM, SL_LT_PRE_FFW_NORM_2, SL_LT_POST_FFW_NORM_1,
    SL_LT_POST_FFW_NORM_2, SL_LT_ROUTER_S, SL_LT_OUT_SCALE, SL_LT_GATE_UP_EXPS,
    /* the router's selection bias; MLA's low-rank q, the
     * compressed KV latent and its norm, the per-head k/v up-projections */
    SL_LT_EXP_PROBS_B,
    SL_LT_WQ_A, SL_LT_Q_A_NORM, SL_LT_WQ_B, SL_LT_WKV_A, SL_LT_KV_A_NORM, SL_LT_WK_B, SL_LT_WV_B,
    /* glm-dsa: the indexer's key norm (LayerNorm weight and bias), head
     * weights, key and query projections */
    SL_LT_IDX_K_NORM, SL_LT_IDX_K_NORM_B, SL_LT_IDX_PROJ, SL_LT_IDX_K, SL_LT_IDX_Q_B,
    /* deepseek4: the hyper-connection mixes of the attention and FFN halves
     * (fn, base, scale each), the shared key/value projection, the grouped
     * low-rank output, the compressor and the indexer's compressor (kv,
     * gate, ape, norm each), the hash layers' token-id table */
    SL_LT_HC_ATTN_FN, SL_LT_HC_ATTN_BASE, SL_LT_HC_ATTN_SCALE,
    SL_LT_HC_FFN_FN, SL_LT_HC_FFN_BASE, SL_LT_HC_FFN_SCALE,
    SL_LT_WKV, SL_LT_WO_A, SL_LT_WO_B,
    SL_LT_COMP_KV, SL_LT_COMP_GATE, SL_LT_COMP_APE, SL_LT_COMP_NORM,
    SL_LT_IDX_COMP_KV, SL_LT_IDX_COMP_GATE, SL_LT_IDX_COMP_APE, SL_LT_IDX_COMP_NORM,
    SL_LT_TID2EID,
    SL_LT_COUNT
} sl_ltensor;

/* What a layer tensor is to the forward pass. */
typedef enum sl_lt_reads {
    SL_READS_NOTHING = 0, /* a vector: norm weight, bias, the shared-expert gate */
    SL_READS_INPUT,       /* a matrix over the block's (normalised) input row */
    SL_READS_FFN_ROWS,    /* a down projection over SwiGLU rows */
} sl_lt_reads;

typedef struct sl_lt_role {
    const char *suffix;   /* GGUF name after "blk.N." */
    sl_lt_reads reads;
    bool routed;          /* a stacked routed-expert tensor (streamed) */
} sl_lt_role;

/* The role table entry of r (r < SL_LT_COUNT). */
const sl_lt_role *sl_layer_role(sl_ltensor r);

/* ---- what a layer computes, filled at load by its architecture ---------- */

/* What mixes the tokens of a layer. */
typedef enum sl_mixer_kind {
    SL_MIXER_ATTN = 0, /* causal softmax attention over a K/V cache */
    SL_MIXER_GDN,      /* gated DeltaNet: a causal conv and a delta-rule state */
    SL_MIXER_MLA,      /* multi-head latent attention over a compressed KV cache */
    SL_MIXER_DS4,      /* deepseek4: one shared K=V head over a raw window and
                          compressed blocks (mix_ds4.c) */
    SL_MIXER_COUNT
} sl_mixer_kind;

typedef struct sl_attn_desc {
    int n_head, n_head_kv;   /* query heads; K/V heads (n_head % n_head_kv == 0) */
    int head_dim, head_dim_v;
    sl_qk_norm qk_norm;      /* RMS norm of q and k: none, per head, whole projection */
    float scale;             /* of q.k before the softmax: 1/sqrt(head_dim) */
    sl_rope rope;            /* applied to q and k at each token's position */
    bool gated;              /* each head's q rows are followed by as many gate
                                rows: the output is o * sigmoid(gate) (qwen35moe) */
    bool sinks;              /* one logit per head in the softmax's denominator
                                (the layer's sinks tensor, gpt-oss) */
    int n_swa;               /* > 0: a sliding window, a token sees itself and the
                                n_swa - 1 before it; 0: the whole context */
    bool v_from_k;           /* no v projection: v is k's projection (gemma4's
                                full layers), taken before k's norm and rope */
    bool v_norm;             /* v RMS-normed per head without a weight (gemma4) */
    bool rope_ff;            /* rope frequencies divided by the model's
                                rope_freqs (gemma4's proportional rope) */
} sl_attn_desc;

/* Multi-head latent attention (deepseek2, ARCHS.md section 3) in its
 * absorbed form: the cache holds per position the normalised KV latent
 * (kv_lora values) and the roped shared key (n_rot values); each head's
 * query is [q_nope | q_pe] (head_dim = nope + n_rot), its nope part turned
 * into latent space by attn_k_b, and the attention's output (a latent
 * vector) into head_dim_v values by attn_v_b. */
typedef struct sl_mla_desc {
    int n_head;
    int q_lora;      /* rank of the low-rank q (attn_q_a, attn_q_b); 0: attn_q */
    int kv_lora;     /* r: the latent width */
    int head_dim;    /* q/k head size: nope + n_rot */
    int n_rot;       /* the roped part (rope.dimension_count) */
    int head_dim_v;  /* value head size after attn_v_b */
    float scale;     /* of the scores: mscale^2 / sqrt(head_dim) */
    sl_rope rope;    /* NORM-style, on the n_rot part of q and k */
    /* glm-dsa's indexer (ARCHS.md section 5; idx_top_k 0: none): each query
     * attends only to the idx_top_k visible keys of highest indexer score */
    int idx_top_k;
    int idx_n_head;  /* indexer query heads */
    int idx_dim;     /* their size, and the cached indexer key's ([rope | nope]) */
    bool idx_full;   /* the layer scores and selects; else it reuses the
                        selection of the last full layer before it */
} sl_mla_desc;

/* deepseek4's attention (ARCHS.md section 9): H query heads against one
 * shared head of D values that is both key and value, over the raw keys
 * of the last n_swa positions and, when ratio is 4 or 128, the compressed
 * blocks of ratio positions each (ratio 4: the indexer's top_k of them). */
typedef struct sl_ds4_desc {
    int ratio;       /* 0, 4 or 128 */
    int n_head, head_dim, n_rot, q_lora;
    int n_swa;
    int o_groups, o_lora;
    int idx_n_head, idx_dim, idx_top_k; /* ratio 4 only */
    int hadamard;    /* > 0: q, k and compressed rows pass through an
                        orthonormal Hadamard transform of this size (D == di) */
    int idx_hadamard; /* the indexer's transform size */
    sl_rope rope;    /* of q, k and the output's de-rope at the token's position */
    sl_rope comp_rope; /* of compressed rows and the indexer (compress base, YaRN) */
    float scale;     /* 1 / sqrt(D) */
} sl_ds4_desc;

/* Gated DeltaNet (ARCHS.md section 1): nk q/k heads and nv v heads of ds
 * values, a causal depthwise conv of conv_k taps over the 2 nk ds + nv ds
 * projected channels, and one ds x ds state per v head. */
typedef struct sl_gdn_desc {
    int conv_k;   /* conv taps (the state keeps conv_k - 1 inputs) */
    int d_state;  /* ds: the head size of q, k and v */
    int n_qk;     /* nk */
    int n_v;      /* nv; v head h reads q/k head h % nk */
    float eps;    /* of the L2 norms of q and k and of the output RMS norm */
    bool l2_rms;  /* q/k L2 norms as llama.cpp's later RMS-norm form (model/llama_rev.h) */
    bool dot_vtail; /* the delta rule's dots as 2026-09's build rounds their
                       leftover (sl_dot_f32_untiled_vtail) */
} sl_gdn_desc;

typedef enum sl_ffn_kind {
    SL_FFN_DENSE = 0, /* one gated MLP */
    SL_FFN_ROUTED,    /* routed experts, optionally beside a shared expert */
} sl_ffn_kind;

typedef enum sl_activation {
    SL_ACT_SWIGLU = 0,  /* silu(gate) * up */
    SL_ACT_SWIGLU_OAI,  /* gpt-oss: g = min(gate, 7), u = clamp(up, -7, 7),
                           g * sigmoid(1.702 g) * (u + 1) */
    SL_ACT_GEGLU,       /* gelu_tanh(gate) * up, gelu through llama.cpp's f16 table */
} sl_activation;

typedef enum sl_router_score {
    SL_SCORE_SOFTMAX = 0, /* softmax over every expert, then top-k */
    SL_SCORE_TOPK_SOFTMAX, /* top-k of the raw logits, softmax over those k (gpt-oss) */
    SL_SCORE_SIGMOID,      /* sigmoid of each logit (deepseek2, glm4moe) */
    SL_SCORE_SQRT_SOFTPLUS, /* sqrt(softplus(logit)) (deepseek4) */
} sl_router_score;

typedef struct sl_router_desc {
    sl_router_score score;
    int n_expert, top_k;
    bool renorm;             /* the top-k weights rescaled to sum to 1 */
    bool own_norm;           /* gemma4: the router reads the residual stream's
                                unweighted RMS norm / sqrt(n_embd) times the
                                per-channel scale (ffn_gate_inp.scale), not the
                                FFN's input */
    bool sel_bias;           /* exp_probs_b is added to the scores for the
                                selection only, never to the weights */
    int n_group, n_group_used; /* n_group > 1: experts in n_group equal groups,
                                  each scored by its two best; only the
                                  n_group_used best groups are eligible */
    float w_scale;           /* the weights multiplied by it after renorm
                                (0 or 1: not) */
    bool hash;               /* deepseek4's first layers: the experts are the
                                token's row of the tid2eid table */
} sl_router_desc;

typedef struct sl_ffn_desc {
    sl_ffn_kind kind;
    sl_activation act;
    int n_ff;                /* dense width, or each routed expert's */
    sl_router_desc router;   /* routed only */
    int n_ff_shexp;          /* routed: the shared expert's width, 0 for none;
                                its output is scaled by sigmoid(gate . x) */
    bool biases;             /* routed: router and per-expert gate/up/down biases
                                (resident, added after each product) */
    int n_ff_dense;          /* gemma4: the width of the dense GeGLU MLP that runs
                                beside the routed experts (0: none) */
    bool shexp_ungated;      /* the shared expert's output is added as it is
                                (deepseek2, glm4moe): no sigmoid gate tensor */
    bool shexp_silu_div;     /* the gate's sigmoid written silu(g) / g, rounded
                                as llama.cpp's qwen2moe graph does */
    float clamp, clamp_sh;   /* deepseek4: > 0 clamps the SwiGLU of the routed
                                (shared) experts: gate min(g, L), up clamp(u, -L, L) */
} sl_ffn_desc;

/* Where the RMS norms sit around a layer's two blocks. */
typedef enum sl_norm_place {
    SL_NORM_PRE = 0, /* x += mixer(norm(x)); x += ffn(norm(x)) */
    SL_NORM_SANDWICH, /* gemma4: x += post(mixer(norm(x))); x += post(ffn(...)),
                         then x *= the layer's scalar (families/gemma4/block_gemma4.c) */
    SL_NORM_HC,       /* deepseek4: four hyper-connection streams mixed around
                         each half (families/deepseek4/block_ds4.c) */
} sl_norm_place;

typedef struct sl_layer_desc {
    sl_mixer_kind mixer;
    sl_attn_desc attn;       /* SL_MIXER_ATTN */
    sl_gdn_desc gdn;         /* SL_MIXER_GDN */
    sl_ffn_desc ffn;
    sl_norm_place norm;
    sl_mla_desc mla;         /* SL_MIXER_MLA */
    sl_ds4_desc ds4;         /* SL_MIXER_DS4 */
} sl_layer_desc;

/* A layer's tensors, by role (t[SL_LT_WQ]) or by name (wq): the same
 * storage; the names follow the enum's order (checked in model_load.c). */
typedef struct sl_layer {
    union {
        sl_tensor t[SL_LT_COUNT];
        struct {
            sl_tensor attn_norm;
            sl_tensor wq, wk, wv, wo;         /* [n_embd, out] each, wo [n_head*hd, n_embd] */
            sl_tensor bq, bk, bv;             /* optional biases */
            sl_tensor q_norm, k_norm;         /* optional q/k norms */
            sl_tensor ffn_norm;
            sl_tensor ffn_gate, ffn_up, ffn_down;          /* dense layers */
            sl_tensor router;                              /* [n_embd, n_expert] */
            sl_tensor gate_exps, up_exps, down_exps;       /* stacked experts */
            sl_tensor gate_shexp, up_shexp, down_shexp;    /* shared expert */
            sl_tensor shexp_gate;                          /* [n_embd] -> 1 */
            /* gated DeltaNet: qkv [n_embd, 2kd + vd], z gate [n_embd, vd],
             * conv [K, 2kd + vd], dt bias / a [nv], beta / alpha
             * [n_embd, nv], norm [ds], out [vd, n_embd] */
            sl_tensor ssm_qkv, ssm_z, ssm_conv, ssm_dt, ssm_a, ssm_beta, ssm_alpha, ssm_norm,
                ssm_out;
            /* gpt-oss: bo [n_embd], sinks [n_head], router bias [n_expert],
             * expert biases [n_ff, n_expert] (gate, up) and [n_embd, n_expert] */
            sl_tensor bo, sinks, router_b, gate_exps_b, up_exps_b, down_exps_b;
            /* per-expert scales [n_expert]; gemma4: sandwich norms [n_embd],
             * router scale [n_embd], layer scalar [1], fused gate/up
             * experts [n_embd, 2 n_ff_exp, n_expert] */
            sl_tensor gate_exps_s, up_exps_s, down_exps_s;
            sl_tensor post_attn_norm, post_ffw_norm, pre_ffw_norm_2, post_ffw_norm_1,
                post_ffw_norm_2, router_s, out_scale, gate_up_exps;
            /* selection bias [n_expert]; MLA: q_a [n_embd, q_lora],
             * q_a_norm [q_lora], q_b [q_lora, n_head*hd], kv_a [n_embd, r + rope],
             * kv_a_norm [r], k_b [nope, r, n_head], v_b [r, hdv, n_head] */
            sl_tensor exp_probs_b, wq_a, q_a_norm, wq_b, wkv_a, kv_a_norm, wk_b, wv_b;
            /* glm-dsa indexer: k_norm, its bias [di], proj [n_embd, ih],
             * attn_k [n_embd, di], attn_q_b [q_lora, ih*di] */
            sl_tensor idx_k_norm, idx_k_norm_b, idx_proj, idx_k, idx_q_b;
            /* deepseek4: hc fn [4E, 24], base [24], scale [3] (attention,
             * FFN); kv [E, D]; wo_a [H D / G, G R] (group g: rows
             * [g R, (g+1) R)); wo_b [G R, E]; compressor kv / gate
             * [E, c D], ape [c D, ratio], norm [D]; the indexer's the same
             * with di; tid2eid [top_k, n_vocab] (I32) */
            sl_tensor hc_attn_fn, hc_attn_base, hc_attn_scale, hc_ffn_fn, hc_ffn_base,
                hc_ffn_scale, wkv, wo_a, wo_b, comp_kv, comp_gate, comp_ape, comp_norm,
                idx_comp_kv, idx_comp_gate, idx_comp_ape, idx_comp_norm, tid2eid;
        };
    };
    sl_layer_desc d;
} sl_layer;

struct sl_model {
    const sl_arch *arch;
    sl_hparams hp;
    sl_gguf *gguf;
    sl_tensor tok_embd;
    sl_tensor output_norm;
    sl_tensor output;       /* a copy of tok_embd when tied */
    bool output_tied;
    sl_layer *layers;       /* n_layer entries */
    void *weights;          /* one allocation holding every resident tensor */
    uint64_t weights_bytes;
    void **maps;            /* --dense-weights mmap: one mapping per file */
    uint64_t *map_sizes;
    uint64_t dense_bytes;   /* bytes of tensors that are always resident */
    uint64_t expert_bytes;  /* bytes of routed-expert tensors */
    bool ubatch_bits;       /* some product's kernel depends on its token count
                               in llama.cpp's micro-batch (sl_tensor.iq_panel) */
    bool described_only;    /* loaded with describe_only: no weights, cannot run */
    struct sl_tokenizer *tok; /* from tokenizer.ggml.*; NULL if the file has none */
    /* gemma4: rope_freqs [head_dim_full / 2] (absent: NULL data), the
     * embedding rows' scale (0: none) and the final logit softcap (0: none) */
    sl_tensor rope_freqs;
    /* deepseek4: the hyper-connection head, output_hc_fn [4E, 4], _base [4],
     * _scale [1] (absent: NULL data) */
    sl_tensor hc_head_fn, hc_head_base, hc_head_scale;
    /* A model loaded as an MTP block (sl_model_params.nextn_block): its one
     * layer is the file's nextn block and these its own tensors (ARCHS.md
     * "MTP blocks"): eh_proj [2 n_embd, n_embd], enorm and hnorm [n_embd],
     * shared_head_norm [n_embd] (absent: output_norm), shared_head_head
     * [n_embd, n_vocab] (absent: output), embed_tokens [n_embd, n_vocab]
     * (absent: token_embd). Absent (info NULL) otherwise. */
    sl_tensor nextn_eh_proj, nextn_enorm, nextn_hnorm, nextn_head_norm, nextn_head, nextn_embd;
    float embd_scale;
    float logit_softcap;
    sl_load_stats load;     /* how the resident weights were read */
    /* What the engine made at load to run the model (the memory plan,
     * pool, streamer, lock, knobs: engine/model_runtime.h), shared by its
     * sessions; set once at load, never read by model code. NULL until
     * then and for a model only read (sl_model_read). */
    struct sl_runtime *rt;
};

/* Opens the GGUF at path, checks its architecture and hyperparameters,
 * loads its tokenizer and binds every tensor with its expected shape; no
 * weight is read yet. described_only is set from params. Fails with a
 * message naming the missing or mis-shaped key or tensor. The engine's
 * sl_model_load (engine/model_open.c) goes on from here. */
int sl_model_read(sl_model **out, const char *path, const sl_model_params *params,
                  sl_err *err);

/* Reads the resident weights into memory (or maps them) as the plan says
 * (experts_streamed: the routed experts stay on disk),
 * refuses a file whose small f32 tensors (norms, biases, scales) hold
 * absurd values (model/value_ranges.h), and interleaves the matrices the
 * kernels take in the x8 layout. */
int sl_model_place_weights(sl_model *m, const sl_model_params *params, bool experts_streamed,
                           sl_err *err);

/* Frees what sl_model_read and sl_model_place_weights made, and m. */
void sl_model_release(sl_model *m);

/* Reads hyperparameters for arch from g into hp; fails with a message
 * naming the missing or absurd key. */
int sl_hparams_read(sl_hparams *hp, const sl_gguf *g, const sl_arch *arch, sl_err *err);

#endif
