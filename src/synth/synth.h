/* synth.h - synthetic GGUF models, deterministic from a seed.
 *
 * Owns: the model presets (tiny ... 30b-a3b), the list of tensors each
 * architecture needs and their shapes, the rule that picks each tensor's
 * type for a file type such as q4_k_m, the weight statistics, and streaming
 * the whole model through the GGUF writer in chunks (so a 20 GB model needs
 * about 30 MB of RAM). Must not know how a model is run: it writes files that
 * follow the GGUF / llama.cpp conventions, nothing more.
 *
 * Weights (all generated from (seed, tensor name, row index), see
 * synth_rng.h, so they are identical across thread counts and file types):
 *   matrices and biases  zero-mean, std 1/sqrt(ne[0])  (ne[0] = fan-in)
 *   norm weights         1 + 0.1 * N(0,1)
 *   routers              like matrices: with an RMS-normalised input the
 *                        expert logits are ~N(0,1) and independent, so the
 *                        top-k set changes from token to token.
 * Draws use the fast Irwin-Hall normal of synth_rng.h. */
#ifndef SL_SYNTH_SYNTH_H
#define SL_SYNTH_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"
#include "util/status.h"

/* File types offered by mkmodel. Uniform ones put every 2-D+ tensor except
 * the router in one type; q4_k_m is a mix (see sl_synth_pick_type). */
typedef enum sl_synth_type {
    SL_SYNTH_F32 = 0,
    SL_SYNTH_F16,
    SL_SYNTH_Q8_0,
    SL_SYNTH_Q4_0,
    SL_SYNTH_Q4_K_M,
    SL_SYNTH_Q4_K,
    SL_SYNTH_Q5_K,
    SL_SYNTH_Q6_K,
    SL_SYNTH_MXFP4,         /* llama.cpp's MXFP4_MOE: experts MXFP4, the rest Q8_0 */
    SL_SYNTH_IQ4_XS,        /* rows of whole 256-value super-blocks IQ4_XS, others fall back */
    SL_SYNTH_TYPE_COUNT,
} sl_synth_type;

typedef struct sl_synth_config {
    char arch[16];          /* general.architecture: llama qwen2 qwen3 qwen2moe
                               qwen3moe olmoe qwen35moe */
    char preset[32];        /* preset name, for general.name */
    bool moe;               /* routed experts (llama: Mixtral-style) */
    bool shared_expert;     /* qwen2moe / qwen35moe shared expert */
    bool tied;              /* no output.weight: the head reuses token_embd */
    bool holes;             /* tensor data left as holes (all zeros, a sparse
                               file; sl_gguf_writer_write_holes) */
    uint32_t n_layer;
    uint32_t n_embd;
    uint32_t n_head, n_head_kv, head_dim;
    uint32_t n_ff;          /* dense FFN width */
    uint32_t n_ff_exp;      /* routed expert FFN width */
    uint32_t n_ff_shexp;    /* shared expert FFN width */
    uint32_t n_expert, n_expert_used;
    uint32_t n_vocab;
    uint32_t n_ctx;
    float rope_base;
    float rms_eps;
    /* qwen35moe only (zero elsewhere): the gated-DeltaNet layers and the
     * hybrid pattern, with llama.cpp's GGUF key names in brackets. */
    uint32_t ssm_conv_kernel;   /* K [ssm.conv_kernel] */
    uint32_t ssm_state;         /* ds, head size of q, k, v [ssm.state_size] */
    uint32_t ssm_groups;        /* nk, q/k heads [ssm.group_count] */
    uint32_t ssm_v_heads;       /* nv, v heads [ssm.time_step_rank]; multiple of nk */
    uint32_t full_attn_interval;/* layer l is full attention iff (l+1) % it == 0 */
    uint32_t rope_dim;          /* n_rot [rope.dimension_count]: 0 = head_dim
                                   (qwen35moe: head_dim / 4, partial rope) */
    sl_synth_type type;
    uint64_t seed;
    unsigned threads;       /* generator threads; 0 or 1 = all in the caller */
    /* gemma4 (synth_gemma4.c) and gpt-oss (synth_gptoss.c; zero
     * elsewhere): the window n_swa and the pattern: layer l is full
     * attention iff (l + 1) % swa_period == 0. gemma4 only: the sliding
     * layers' head size and K/V heads (head_dim / n_head_kv are the full
     * layers'), and a dense GeGLU MLP of n_ff beside the experts in every
     * layer */
    uint32_t head_dim_swa, n_head_kv_swa, n_swa, swa_period;
} sl_synth_config;

/* Fills c from an architecture and a preset. arch is a general.architecture
 * value or the alias "mixtral" (= llama with routed experts); plain "llama"
 * is dense. The caller may then override fields (for llama, setting
 * n_expert > 0 and moe = true makes it Mixtral-style) and must call
 * sl_synth_config_validate. For olmoe the kv head count is set to the head
 * count (the family has no GQA; llama.cpp rejects other k-norm widths).
 * Fails (SL_EINVAL) on an unknown arch or preset,
 * naming the known ones. Defaults: type f32, seed 1, threads 1, untied. */
int sl_synth_config_init(sl_synth_config *c, const char *arch, const char *preset,
                         sl_err *err);

/* Checks that the dimensions make a model the writer can produce and a
 * reader can run (head counts divide, top-k <= experts, vocabulary large
 * enough for the tokenizer, sizes below sane caps). */
int sl_synth_config_validate(const sl_synth_config *c, sl_err *err);

/* qwen35moe's rope.dimension_sections for c: four counts of rotated pairs
 * (t, h, w, e) summing to n_rot/2. Text positions are the same for t, h
 * and w, so only their sum matters to a text model. */
void sl_synth_rope_sections(const sl_synth_config *c, int32_t out[4]);

/* True if layer l of c is a gated-DeltaNet (linear attention) layer:
 * qwen35moe and (l+1) % full_attn_interval != 0, as llama.cpp's loader
 * decides without attention.recurrent_layers. */
bool sl_synth_layer_is_linear(const sl_synth_config *c, uint32_t l);

/* gemma4: true if layer l of c is a sliding-window layer. (synth_gemma4.c) */
bool sl_synth_gemma4_slides(const sl_synth_config *c, uint32_t l);

/* gemma4: fills c's gemma4 fields for preset p (tiny, 26b-a4b, or any other
 * preset with a 5:1 pattern and a quarter of the head size on sliding layers).
 * (synth_gemma4.c) */
int sl_synth_gemma4_init(sl_synth_config *c, sl_err *err);

/* gpt-oss: fills c's gpt-oss fields (window and pattern: the even layers
 * slide, 128 tokens in the published models, 8 in tiny and tiny-k so tests
 * see prompts longer than the window). (synth_gptoss.c) */
int sl_synth_gptoss_init(sl_synth_config *c, sl_err *err);

/* Presets, for --help: count, name and one-line summary of preset i. */
size_t sl_synth_preset_count(void);
const char *sl_synth_preset_name(size_t i);
const char *sl_synth_preset_summary(size_t i);
/* Architectures accepted by sl_synth_config_init, comma-separated. */
const char *sl_synth_arch_list(void);

/* File type names: "f32" "f16" "q8_0" "q4_0" "q4_k_m" "q4_k" "q5_k" "q6_k"
 * "mxfp4". */
const char *sl_synth_type_name(sl_synth_type t);
bool sl_synth_type_from_name(const char *name, sl_synth_type *out);
/* general.file_type value (llama.cpp's ftype numbering) of t. */
uint32_t sl_synth_file_type(sl_synth_type t);

/* What a tensor is for: decides its type, its statistics and its layer. */
typedef enum sl_synth_role {
    SL_SYNTH_R_TOKEN_EMBD,
    SL_SYNTH_R_OUTPUT,
    SL_SYNTH_R_NORM,        /* any RMSNorm weight (attn, ffn, output, q/k) */
    SL_SYNTH_R_BIAS,
    SL_SYNTH_R_ROUTER,      /* ffn_gate_inp */
    SL_SYNTH_R_SHEXP_GATE,  /* ffn_gate_inp_shexp, 1-D */
    SL_SYNTH_R_ATTN_Q,
    SL_SYNTH_R_ATTN_K,
    SL_SYNTH_R_ATTN_V,
    SL_SYNTH_R_ATTN_OUT,
    SL_SYNTH_R_FFN_GATE,    /* dense */
    SL_SYNTH_R_FFN_UP,
    SL_SYNTH_R_FFN_DOWN,
    SL_SYNTH_R_EXP_GATE,    /* routed, stacked over experts */
    SL_SYNTH_R_EXP_UP,
    SL_SYNTH_R_EXP_DOWN,
    SL_SYNTH_R_SH_GATE,     /* shared expert */
    SL_SYNTH_R_SH_UP,
    SL_SYNTH_R_SH_DOWN,
    /* qwen35moe gated-DeltaNet layers */
    SL_SYNTH_R_ATTN_QKV,    /* attn_qkv {E, 2 nk ds + nv ds} */
    SL_SYNTH_R_ATTN_GATE,   /* attn_gate {E, nv ds}, the z gate */
    SL_SYNTH_R_SSM_CONV,    /* ssm_conv1d {K, C}: always F32 */
    SL_SYNTH_R_SSM_DT,      /* ssm_dt.bias {nv}: N(0, 0.5^2) */
    SL_SYNTH_R_SSM_A,       /* ssm_a {nv}: -exp(N(0, 0.5^2)), in (-inf, 0) */
    SL_SYNTH_R_SSM_BETA,    /* ssm_beta {E, nv} */
    SL_SYNTH_R_SSM_ALPHA,   /* ssm_alpha {E, nv} */
    SL_SYNTH_R_SSM_OUT,     /* ssm_out {nv ds, E} */
    SL_SYNTH_R_ROPE_FREQS,  /* gemma4 rope_freqs {D/2}: 1 on the first quarter of
                               the pairs, 1e30 after (proportional rope), F32 */
    SL_SYNTH_R_TID2EID,     /* deepseek4's hash table {K, V}: I32, each token's row
                               K distinct expert ids below n_expert */
} sl_synth_role;

typedef struct sl_synth_tensor {
    char name[64];
    sl_synth_role role;
    int layer;              /* -1 for global tensors */
    uint32_t n_dims;
    uint64_t ne[4];         /* GGUF order, ne[0] = row length; unused = 1 */
    sl_type type;
    bool fell_back;         /* type is a fallback: row length did not fit
                               the block size of the requested type */
} sl_synth_tensor;

/* Picks the type of a tensor. Rules:
 *   1-D tensors (norms, biases, shared-expert gate, ssm_a, ssm_dt) and
 *   routers: F32; ssm_conv1d: F32 (llama-quantize never quantises it).
 *   f32 / f16 / q8_0 / q4_0 / q4_k / q5_k / q6_k: every other tensor in it.
 *   mxfp4 (llama.cpp's MXFP4_MOE): routed experts MXFP4, every other
 *     matrix Q8_0.
 *   q4_k_m (after llama.cpp's Q4_K_M): output Q6_K; token_embd Q4_K (Q6_K
 *     when tied, since it is then also the output head); attn_v, ffn_down,
 *     ffn_down_exps and ffn_down_shexp Q6_K on the layers where
 *     more_bits(i) holds, Q4_K elsewhere; attn_qkv Q5_K (llama.cpp's
 *     Q4_K_M rule for fused qkv); all other matrices Q4_K. With n
 *     layers, more_bits(i) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2
 *     (integer division) - the first and last eighth and every third layer
 *     between: 24 of 48 layers, 6 of 12 (0, 3, 6, 9, 10, 11), 1 of 2.
 * Fallback: a K-quant needs ne[0] % 256 == 0, Q8_0/Q4_0 need % 32 == 0. A
 * K-quant tensor whose rows do not fit becomes Q8_0 (or F32 if they do not
 * fit 32 either); a Q8_0/Q4_0 tensor becomes F32. *fell_back says so. */
sl_type sl_synth_pick_type(const sl_synth_config *c, sl_synth_role role, int layer,
                           uint64_t ne0, bool *fell_back);

/* Builds the ordered tensor list of the model c describes (c validated).
 * On success *out is a malloc'ed array of *n entries the caller frees. */
int sl_synth_plan_build(const sl_synth_config *c, sl_synth_tensor **out, size_t *n,
                        sl_err *err);

/* Number of rows of t (product of ne[1..3]). */
uint64_t sl_synth_tensor_rows(const sl_synth_tensor *t);

/* Generates rows [row0, row0 + nrows) of tensor t as f32 (before any
 * quantisation) into dst, which holds nrows * ne[0] floats. Pure: the same
 * arguments always give the same values. */
void sl_synth_gen_rows(const sl_synth_config *c, const sl_synth_tensor *t, uint64_t row0,
                       uint64_t nrows, float *dst);

/* The same with the vector path allowed (simd, on a CPU with AVX2) or not.
 * Both give bit-identical values (synth_rng.h); for tests that check so. */
void sl_synth_gen_rows_simd(const sl_synth_config *c, const sl_synth_tensor *t, uint64_t row0,
                            uint64_t nrows, float *dst, bool simd);

/* Standard deviation and mean the generator targets for t (for tests and
 * for inspecting files). For ssm_a they are those of the normal draw x
 * before the stored value -exp(x) is taken. */
void sl_synth_tensor_stats(const sl_synth_tensor *t, double *mean, double *std);

typedef struct sl_synth_stats {
    size_t n_tensors;
    size_t n_fallback;      /* tensors whose type fell back (see above) */
    uint64_t data_bytes;    /* tensor bytes, without padding or header */
    uint64_t file_bytes;    /* size of the written file */
    double seconds;         /* wall time of sl_synth_write */
    bool direct_io;         /* data written with O_DIRECT: on the device, not
                               in the page cache, when sl_synth_write returns
                               (false where the file system refuses it) */
} sl_synth_stats;

/* Called by the writing thread after each chunk: bytes of tensor data done
 * and total. Return non-zero to cancel (sl_synth_write then fails with
 * SL_EINVAL "cancelled"). */
typedef int (*sl_synth_progress_fn)(void *ud, uint64_t done, uint64_t total);

/* Writes the model c describes to path: metadata (hyperparameters, the
 * tokenizer of synth_vocab.h, chat template), then every tensor, generated
 * and quantised a chunk at a time, on c->threads generator threads while the
 * calling thread writes. The file is byte-identical for a given config
 * whatever the thread count. On failure the partial file is removed.
 * stats and progress may be NULL. */
int sl_synth_write(const sl_synth_config *c, const char *path,
                   sl_synth_progress_fn progress, void *progress_ud,
                   sl_synth_stats *stats, sl_err *err);

#endif
