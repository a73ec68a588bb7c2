/* fuzz_model.c - libFuzzer target past the parser: every input becomes a
 * valid small model that is loaded and run.
 *
 * The input bytes are read as a sequence of choices (an exhausted input
 * reads as zeros, so any input is a model): the architecture (each row of
 * src/model/arch.c, llama dense and Mixtral-style with dense and MoE layers
 * mixed, and qwen35moe, below), the hyperparameters (1..3 layers, heads
 * and KV heads that divide, head sizes given or derived, rope dimension and
 * scaling, FFN widths down to 1, 1..16 experts with top-k 1..n, a shared
 * expert for qwen2moe), the type
 * of every matrix among all types the loader computes with whose block size
 * divides the row length (1-D tensors f32), shapes with trailing 1s dropped
 * as gguf-py writes a one-expert model ([n_embd, n_ff] experts, [n_embd]
 * router), tied or untied head, vocabulary 1..300, context 1..64, and a
 * seed for the weights (small values, quantised with src/quant).
 *
 * qwen35moe (ARCHS.md section 1) adds: 1..4 layers plus 0 or 1 MTP block
 * (nextn_predict_layers; its full-attention block and nextn.* tensors are
 * in the file and must be ignored), the layer pattern from
 * full_attention_interval 1..4 (or its default 4) or now and then
 * attention.recurrent_layers, gated DeltaNet layers (conv kernel 1..4 in
 * f32, state size 2..32, group count nk 1..4 and time_step_rank nv a
 * multiple of it, inner_size nv*ds, ssm_a negative), gated full attention
 * (q of 2*H*D rows), post_attention_norm, routed experts beside the
 * sigmoid-gated shared expert (its width given or n_ff), and
 * rope.dimension_sections of any split (pairs left to the "e" section
 * rotate by position 0 for text). A few plans are invalid on purpose and
 * must be refused: sections negative, all of t/h/w zero or summing past
 * the head size, inner_size != nv*ds, an f16 ssm_conv1d,
 * value_length != key_length. Its sessions rewind often: to 0, to the
 * snapshot (the end of the last multi-token batch; the single tokens
 * evaluated after it are replayed and must give bit-identical logits) and
 * elsewhere, which a model with a recurrent layer must refuse with
 * SL_EINVAL, n_past unchanged (sl_session_truncate's contract).
 *
 * The model is written with the project's GGUF writer to one temporary file
 * per process (reused), loaded resident and, when it has routed experts,
 * also streamed with a cache of a few experts; a session of micro-batch
 * 1..16 then evaluates batches of 1 .. 2x the micro-batch with random valid
 * ids until the context is full (now and then rewinding both sessions to
 * an earlier position with sl_session_truncate). A batch above the micro-batch must be
 * refused with the session unchanged (and is then split); the batch that
 * overflows the context must be refused too. The oracle: the streamed
 * model's logits are bit-identical to the resident one's (memcmp), and the
 * sanitizers catch every out-of-bounds access, leak and undefined behaviour.
 * A load or session the library refuses with an error is fine; the share of
 * accepted models is printed at exit (most should be accepted).
 *
 * FUZZ_MODEL_AVOID (environment, comma-separated) steers the generator off
 * known defects so that a run can find the next one:
 *   d1        no matrix with a single output row (n_embd, FFN widths,
 *             vocabulary, expert count >= 2): issue 10's D1 (alias one-row)
 * FUZZ_MODEL_VERBOSE=1 prints every refusal and each model's summary. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"

#define FUZZ_CHECK(c)                                                                   \
    do {                                                                                \
        if (!(c)) {                                                                     \
            fprintf(stderr, "fuzz_model: check failed at line %d: %s\n", __LINE__, #c); \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* ---- the input as a stream of choices ------------------------------------- */

typedef struct choices {
    const uint8_t *p;
    size_t n, i;
} choices;

/* A value in [0, n): one byte for n <= 256, two otherwise; 0 once the input
 * is used up. */
static unsigned pick(choices *c, unsigned n)
{
    if (n <= 1) return 0;
    unsigned v = c->i < c->n ? c->p[c->i++] : 0;
    if (n > 256) v = v << 8 | (c->i < c->n ? c->p[c->i++] : 0);
    return v % n;
}

static bool pick_bool(choices *c) { return pick(c, 2) == 1; }

/* A value from a list. */
static unsigned pick_of(choices *c, const unsigned *v, unsigned n) { return v[pick(c, n)]; }

/* ---- weight values ------------------------------------------------------ */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float unit(uint64_t *s) { return (float)((double)(splitmix(s) >> 11) * 0x1p-52 - 1.0); }

/* ---- the model ----------------------------------------------------------- */

enum { ARCH_LLAMA, ARCH_MIXTRAL, ARCH_QWEN2, ARCH_QWEN3, ARCH_QWEN2MOE, ARCH_QWEN3MOE,
       ARCH_OLMOE, ARCH_QWEN35MOE, ARCH_COUNT };
static const char *const arch_names[ARCH_COUNT] = {"llama",    "llama",    "qwen2", "qwen3",
                                                   "qwen2moe", "qwen3moe", "olmoe", "qwen35moe"};

/* Every matrix type the loader accepts (it can dequantise it) and we can
 * produce (it has a quantiser). */
static const sl_type matrix_types[] = {
    SL_TYPE_F32,  SL_TYPE_F16,  SL_TYPE_BF16, SL_TYPE_Q4_0,   SL_TYPE_Q4_1,   SL_TYPE_Q5_0,
    SL_TYPE_Q5_1, SL_TYPE_Q8_0, SL_TYPE_Q8_1, SL_TYPE_Q2_K,   SL_TYPE_Q3_K,   SL_TYPE_Q4_K,
    SL_TYPE_Q5_K, SL_TYPE_Q6_K, SL_TYPE_Q8_K, SL_TYPE_IQ4_NL, SL_TYPE_IQ4_XS, SL_TYPE_MXFP4,
};
#define N_MATRIX_TYPES (sizeof matrix_types / sizeof matrix_types[0])

/* What a tensor's values look like: norm weights near 1, matrices small,
 * qwen35moe's ssm_a negative (-exp of a value near 0, as the converter
 * stores -exp(A_log)) and its ssm_dt.bias near 0. */
typedef enum kind { K_NORM, K_MAT, K_SSM_A, K_SSM_DT } kind;

typedef struct tensor_plan {
    char name[48];
    uint32_t n_dims;
    uint64_t ne[4];
    sl_type type;
    kind kind;
} tensor_plan;

#define MAX_TENSORS 160
#define MAX_LAYERS 5 /* 4 main layers and one MTP block (qwen35moe) */

/* qwen35moe's own choices (ARCHS.md section 1). */
typedef struct hybrid_plan {
    unsigned n_nextn;          /* MTP blocks after the main layers: 0 or 1 */
    bool interval_given;       /* full_attention_interval written (else 4) */
    unsigned interval;         /* 1..4 */
    bool recurrent_given;      /* attention.recurrent_layers written */
    bool recurrent[MAX_LAYERS];
    bool linear[MAX_LAYERS];   /* what the loader must make of each main layer */
    unsigned conv_k, d_state, n_group, n_v; /* K, ds, nk, nv (nv % nk == 0) */
    unsigned inner;            /* ssm.inner_size: nv * ds unless bad_inner */
    int32_t sections[4];       /* rope.dimension_sections */
    bool sections_valid;       /* a split llama.cpp's rope op takes */
    bool shexp_given;          /* expert_shared_feed_forward_length written */
    bool mtp_extras;           /* the optional nextn.shared_head_* and embed_tokens */
    bool bad_conv_type;        /* ssm_conv1d not f32 (the loader refuses) */
    bool bad_inner;            /* inner_size != nv * ds (the loader refuses) */
} hybrid_plan;

typedef struct model_plan {
    int arch;
    unsigned n_layer, n_embd, n_head, n_head_kv, head_dim, head_dim_v, rope_dim;
    bool key_length_given, value_length_given, rope_dim_given, head_kv_given;
    unsigned n_ff, n_ff_exp, n_ff_shexp, n_expert, n_expert_used, n_vocab, n_ctx;
    bool moe_layer[MAX_LAYERS], tied, drop_ones, ff_exp_given;
    hybrid_plan hy;
    int weights_norm;      /* -1: key absent */
    int rope_scaling;      /* 0 absent, 1 none, 2 linear, 3 yarn */
    float rope_factor, rope_base, rms_eps;
    unsigned yarn_orig;
    sl_type default_type;
    uint64_t seed;
    tensor_plan t[MAX_TENSORS];
    size_t n_t;
} model_plan;

static bool avoid_one_row;
static bool verbose;

static bool fits(sl_type t, uint64_t ne0) { return ne0 % sl_type_get(t)->block_size == 0; }

/* A matrix type for rows of ne0 elements: the file's default type most of
 * the time (as real files are mostly one type), any fitting one otherwise. */
static sl_type pick_type(choices *c, const model_plan *mp, uint64_t ne0)
{
    unsigned b = pick(c, 256);
    if (b < 128 && fits(mp->default_type, ne0)) return mp->default_type;
    sl_type cand[N_MATRIX_TYPES];
    unsigned n = 0;
    for (size_t i = 0; i < N_MATRIX_TYPES; i++)
        if (fits(matrix_types[i], ne0)) cand[n++] = matrix_types[i];
    return cand[b % n]; /* F32 always fits */
}

/* Adds a tensor of up to three dimensions; trailing 1s are dropped when the
 * plan says so (1-D is the least), and a tensor stored 1-D is f32. Returns
 * the tensor, whose type the caller may still change. */
static tensor_plan *add(choices *c, model_plan *mp, const char *name, kind k, uint32_t n_dims,
                        uint64_t a, uint64_t b, uint64_t d)
{
    FUZZ_CHECK(mp->n_t < MAX_TENSORS);
    tensor_plan *t = &mp->t[mp->n_t++];
    snprintf(t->name, sizeof t->name, "%s", name);
    const uint64_t ne[4] = {a, b, d, 1};
    memcpy(t->ne, ne, sizeof ne);
    t->n_dims = n_dims;
    if (mp->drop_ones)
        while (t->n_dims > 1 && t->ne[t->n_dims - 1] == 1) t->n_dims--;
    t->kind = k;
    t->type = t->n_dims == 1 ? SL_TYPE_F32 : pick_type(c, mp, a);
    return t;
}

static void add_layer(choices *c, model_plan *mp, unsigned il)
{
    const uint64_t E = mp->n_embd, q = (uint64_t)mp->n_head * mp->head_dim;
    const uint64_t k = (uint64_t)mp->n_head_kv * mp->head_dim;
    const uint64_t v = (uint64_t)mp->n_head_kv * mp->head_dim_v;
    const uint64_t o = (uint64_t)mp->n_head * mp->head_dim_v;
    char nm[48];
#define ADD(suffix, kd, nd, a, b, d)                                       \
    do {                                                                   \
        snprintf(nm, sizeof nm, "blk.%u.%s", il, suffix);                 \
        add(c, mp, nm, kd, nd, a, b, d);                                  \
    } while (0)
    ADD("attn_norm.weight", K_NORM, 1, E, 1, 1);
    ADD("attn_q.weight", K_MAT, 2, E, q, 1);
    ADD("attn_k.weight", K_MAT, 2, E, k, 1);
    ADD("attn_v.weight", K_MAT, 2, E, v, 1);
    if (mp->arch == ARCH_QWEN2 || mp->arch == ARCH_QWEN2MOE) {
        ADD("attn_q.bias", K_MAT, 1, q, 1, 1);
        ADD("attn_k.bias", K_MAT, 1, k, 1, 1);
        ADD("attn_v.bias", K_MAT, 1, v, 1, 1);
    }
    if (mp->arch == ARCH_QWEN3 || mp->arch == ARCH_QWEN3MOE) {
        ADD("attn_q_norm.weight", K_NORM, 1, mp->head_dim, 1, 1);
        ADD("attn_k_norm.weight", K_NORM, 1, mp->head_dim, 1, 1);
    } else if (mp->arch == ARCH_OLMOE) {
        ADD("attn_q_norm.weight", K_NORM, 1, q, 1, 1);
        ADD("attn_k_norm.weight", K_NORM, 1, k, 1, 1);
    }
    ADD("attn_output.weight", K_MAT, 2, o, E, 1);
    ADD("ffn_norm.weight", K_NORM, 1, E, 1, 1);
    if (mp->moe_layer[il]) {
        const uint64_t X = mp->n_expert, F = mp->n_ff_exp;
        ADD("ffn_gate_inp.weight", K_MAT, 2, E, X, 1);
        ADD("ffn_gate_exps.weight", K_MAT, 3, E, F, X);
        ADD("ffn_up_exps.weight", K_MAT, 3, E, F, X);
        ADD("ffn_down_exps.weight", K_MAT, 3, F, E, X);
        if (mp->arch == ARCH_QWEN2MOE) {
            const uint64_t S = mp->n_ff_shexp;
            ADD("ffn_gate_shexp.weight", K_MAT, 2, E, S, 1);
            ADD("ffn_up_shexp.weight", K_MAT, 2, E, S, 1);
            ADD("ffn_down_shexp.weight", K_MAT, 2, S, E, 1);
            ADD("ffn_gate_inp_shexp.weight", K_MAT, 1, E, 1, 1);
        }
    } else {
        const uint64_t F = mp->n_ff;
        ADD("ffn_gate.weight", K_MAT, 2, E, F, 1);
        ADD("ffn_up.weight", K_MAT, 2, E, F, 1);
        ADD("ffn_down.weight", K_MAT, 2, F, E, 1);
    }
#undef ADD
}

/* A qwen35moe block (ARCHS.md section 1): attn_norm, then gated DeltaNet
 * (linear) or gated full attention (q carries D gate rows per head), then
 * post_attention_norm and softmax-routed experts beside a sigmoid-gated
 * shared expert. An MTP block (il == n_layer) is a full-attention block
 * plus the nextn.* tensors; the main pass must ignore all of it. */
static void add_hybrid_layer(choices *c, model_plan *mp, unsigned il)
{
    const hybrid_plan *h = &mp->hy;
    const bool mtp = il >= mp->n_layer, linear = !mtp && h->linear[il];
    const uint64_t E = mp->n_embd, D = mp->head_dim, V = mp->n_vocab;
    const uint64_t QD = (uint64_t)mp->n_head * D, KD = (uint64_t)mp->n_head_kv * D;
    char nm[48];
#define ADD(suffix, kd, nd, a, b, d) \
    (snprintf(nm, sizeof nm, "blk.%u.%s", il, suffix), add(c, mp, nm, kd, nd, a, b, d))
    ADD("attn_norm.weight", K_NORM, 1, E, 1, 1);
    if (linear) {
        const uint64_t kd = (uint64_t)h->n_group * h->d_state;
        const uint64_t vd = (uint64_t)h->n_v * h->d_state, C = 2 * kd + vd;
        ADD("attn_qkv.weight", K_MAT, 2, E, C, 1);
        ADD("attn_gate.weight", K_MAT, 2, E, vd, 1);
        tensor_plan *conv = ADD("ssm_conv1d.weight", K_MAT, 2, h->conv_k, C, 1);
        conv->type = h->bad_conv_type ? SL_TYPE_F16 : SL_TYPE_F32; /* the loader wants f32 */
        ADD("ssm_dt.bias", K_SSM_DT, 1, h->n_v, 1, 1);
        ADD("ssm_a", K_SSM_A, 1, h->n_v, 1, 1);
        ADD("ssm_beta.weight", K_MAT, 2, E, h->n_v, 1);
        ADD("ssm_alpha.weight", K_MAT, 2, E, h->n_v, 1);
        ADD("ssm_norm.weight", K_NORM, 1, h->d_state, 1, 1);
        ADD("ssm_out.weight", K_MAT, 2, vd, E, 1);
    } else {
        ADD("attn_q.weight", K_MAT, 2, E, 2 * QD, 1);
        ADD("attn_k.weight", K_MAT, 2, E, KD, 1);
        ADD("attn_v.weight", K_MAT, 2, E, KD, 1);
        ADD("attn_output.weight", K_MAT, 2, QD, E, 1);
        ADD("attn_q_norm.weight", K_NORM, 1, D, 1, 1);
        ADD("attn_k_norm.weight", K_NORM, 1, D, 1, 1);
    }
    ADD("post_attention_norm.weight", K_NORM, 1, E, 1, 1);
    const uint64_t X = mp->n_expert, F = mp->n_ff_exp;
    const uint64_t S = h->shexp_given ? mp->n_ff_shexp : mp->n_ff;
    ADD("ffn_gate_inp.weight", K_MAT, 2, E, X, 1);
    ADD("ffn_gate_exps.weight", K_MAT, 3, E, F, X);
    ADD("ffn_up_exps.weight", K_MAT, 3, E, F, X);
    ADD("ffn_down_exps.weight", K_MAT, 3, F, E, X);
    ADD("ffn_gate_inp_shexp.weight", K_MAT, 1, E, 1, 1);
    ADD("ffn_gate_shexp.weight", K_MAT, 2, E, S, 1);
    ADD("ffn_up_shexp.weight", K_MAT, 2, E, S, 1);
    ADD("ffn_down_shexp.weight", K_MAT, 2, S, E, 1);
    if (mtp) {
        ADD("nextn.eh_proj.weight", K_MAT, 2, 2 * E, E, 1);
        ADD("nextn.enorm.weight", K_NORM, 1, E, 1, 1);
        ADD("nextn.hnorm.weight", K_NORM, 1, E, 1, 1);
        if (h->mtp_extras) {
            ADD("nextn.shared_head_norm.weight", K_NORM, 1, E, 1, 1);
            ADD("nextn.shared_head_head.weight", K_MAT, 2, E, V, 1);
            ADD("nextn.embed_tokens.weight", K_MAT, 2, E, V, 1);
        }
    }
#undef ADD
}

/* Whether IMROPE sections are a split llama.cpp's rope op takes: none
 * negative, one of t/h/w positive, a sum (the sectors: pair i's is i mod
 * sum) of at most the head size. Splits that leave pairs to the "e"
 * section are valid: for text those pairs rotate by 0. */
static bool sections_valid(const int32_t sec[4], unsigned head_dim)
{
    if (sec[0] < 0 || sec[1] < 0 || sec[2] < 0 || sec[3] < 0) return false;
    if (sec[0] == 0 && sec[1] == 0 && sec[2] == 0) return false;
    return (int64_t)sec[0] + sec[1] + sec[2] + sec[3] <= (int64_t)head_dim;
}

/* qwen35moe's choices, read after the common ones. */
static void plan_hybrid(choices *c, model_plan *mp)
{
    hybrid_plan *h = &mp->hy;
    static const unsigned states[] = {2, 4, 6, 8, 16, 32};
    if (pick(c, 4) == 0) mp->n_layer = 4;
    h->n_nextn = pick_bool(c);
    h->interval_given = pick(c, 4) != 0;
    h->interval = h->interval_given ? 1 + pick(c, 4) : 4;
    h->recurrent_given = pick(c, 4) == 0;
    for (unsigned il = 0; il < mp->n_layer + h->n_nextn; il++) h->recurrent[il] = pick_bool(c);
    for (unsigned il = 0; il < mp->n_layer; il++)
        h->linear[il] = h->recurrent_given ? h->recurrent[il] : (il + 1) % h->interval != 0;
    h->conv_k = 1 + pick(c, 4);
    h->d_state = pick_of(c, states, sizeof states / sizeof states[0]);
    h->n_group = 1 + pick(c, 4);
    h->n_v = h->n_group * (1 + pick(c, 3));
    h->bad_inner = pick(c, 32) == 0;
    h->inner = h->n_v * h->d_state + (h->bad_inner ? h->d_state : 0);
    h->bad_conv_type = pick(c, 32) == 0;
    h->shexp_given = pick_bool(c);
    h->mtp_extras = pick_bool(c);
    /* value_length must equal key_length (the converter writes both) */
    if (pick(c, 8) != 0) mp->head_dim_v = mp->head_dim;
    /* sections: random (any split, most leaving some pairs to "e"), now
     * and then the converter's [11,11,10,0] or [a,a,a,0], which cover any
     * rope size */
    for (int i = 0; i < 3; i++) h->sections[i] = (int32_t)pick(c, 13);
    h->sections[3] = (int32_t)pick(c, 4);
    if (pick(c, 32) == 0) h->sections[pick(c, 4)] = -1 - (int32_t)pick(c, 3);
    if (pick(c, 4) == 0) {
        const int32_t a = (int32_t)(1 + pick(c, 12));
        const bool conv = pick_bool(c);
        const int32_t s[4] = {conv ? 11 : a, conv ? 11 : a, conv ? 10 : a, 0};
        memcpy(h->sections, s, sizeof s);
    }
    h->sections_valid = sections_valid(h->sections, mp->head_dim);
    for (unsigned il = 0; il < mp->n_layer + h->n_nextn; il++) mp->moe_layer[il] = true;
    if (avoid_one_row && h->n_v == 1) { /* nk is 1 too: 2 is a multiple */
        h->n_v = 2;
        h->inner = h->n_v * h->d_state + (h->bad_inner ? h->d_state : 0);
    }
}

/* Whether the loader must refuse the qwen35moe plan, and why. */
static const char *hybrid_refusal(const model_plan *mp)
{
    const hybrid_plan *h = &mp->hy;
    bool any_linear = false, any_full = false;
    for (unsigned il = 0; il < mp->n_layer; il++) {
        any_linear |= h->linear[il];
        any_full |= !h->linear[il];
    }
    if (!h->sections_valid) return "rope.dimension_sections not a valid split";
    if (any_linear && h->bad_inner) return "ssm.inner_size is not time_step_rank x state_size";
    if (any_linear && h->bad_conv_type) return "ssm_conv1d is not f32";
    if (any_full && mp->head_dim_v != mp->head_dim) return "value_length != key_length";
    return NULL;
}

/* Whether the model has a recurrent (gated DeltaNet) layer: its sessions
 * can only rewind to 0 or to the snapshot. */
static bool plan_recurrent(const model_plan *mp)
{
    if (mp->arch != ARCH_QWEN35MOE) return false;
    for (unsigned il = 0; il < mp->n_layer; il++)
        if (mp->hy.linear[il]) return true;
    return false;
}

/* Elements of every expert tensor of the plan so far, for the size cap. */
static uint64_t expert_elems(const model_plan *mp)
{
    unsigned moe = 0;
    for (unsigned il = 0; il < mp->n_layer + mp->hy.n_nextn; il++) moe += mp->moe_layer[il];
    return 3ull * moe * mp->n_embd * mp->n_ff_exp * mp->n_expert;
}

static unsigned min1(unsigned v, unsigned lo) { return v < lo ? lo : v; }

static void plan_model(choices *c, model_plan *mp)
{
    memset(mp, 0, sizeof *mp);
    static const unsigned embd[] = {1, 2, 4, 6, 8, 16, 32, 32, 64, 64, 96, 128, 256, 256};
    static const unsigned ffw[] = {1, 2, 3, 5, 8, 16, 32, 32, 64, 96, 256};
    static const unsigned hdim[] = {2, 4, 6, 8, 16, 32, 64};
    static const unsigned vocab[] = {1, 2, 3, 7, 31, 64, 97, 128, 255, 256, 300};

    mp->arch = (int)pick(c, ARCH_COUNT);
    const bool moe_arch = mp->arch == ARCH_MIXTRAL || mp->arch == ARCH_QWEN2MOE ||
                          mp->arch == ARCH_QWEN3MOE || mp->arch == ARCH_OLMOE ||
                          mp->arch == ARCH_QWEN35MOE;
    mp->n_layer = 1 + pick(c, 3);
    mp->n_embd = pick_of(c, embd, sizeof embd / sizeof embd[0]);
    mp->n_head = 1 + pick(c, 4);
    unsigned divs[4], nd = 0;
    for (unsigned d = 1; d <= mp->n_head; d++)
        if (mp->n_head % d == 0) divs[nd++] = d;
    mp->n_head_kv = divs[pick(c, nd)];
    mp->head_kv_given = mp->n_head_kv != mp->n_head || pick_bool(c);
    /* head size: derived from n_embd when it comes out even, else given */
    const unsigned derived = mp->n_embd / mp->n_head;
    mp->key_length_given = !(derived >= 2 && derived % 2 == 0) || pick(c, 4) == 0;
    mp->head_dim = mp->key_length_given ? pick_of(c, hdim, sizeof hdim / sizeof hdim[0])
                                        : derived;
    mp->value_length_given = pick(c, 4) == 0;
    mp->head_dim_v = mp->value_length_given ? pick_of(c, hdim, sizeof hdim / sizeof hdim[0])
                                            : mp->head_dim;
    mp->rope_dim_given = pick_bool(c);
    mp->rope_dim = mp->rope_dim_given ? 2 * (1 + pick(c, mp->head_dim / 2)) : mp->head_dim;
    mp->rope_scaling = (int)pick(c, 4);
    mp->rope_factor = (float)(1 + pick(c, 8));
    mp->yarn_orig = 1 + pick(c, 64);
    static const float bases[] = {10000.0f, 1000000.0f, 2.0f, 500000.0f};
    mp->rope_base = bases[pick(c, 4)];
    mp->rms_eps = pick_bool(c) ? 1e-5f : 1e-6f;

    mp->n_ff = pick_of(c, ffw, sizeof ffw / sizeof ffw[0]);
    mp->ff_exp_given = pick(c, 4) != 0;
    mp->n_ff_exp = mp->ff_exp_given ? pick_of(c, ffw, sizeof ffw / sizeof ffw[0]) : mp->n_ff;
    mp->n_ff_shexp = pick_of(c, ffw, sizeof ffw / sizeof ffw[0]);
    mp->n_expert = 1 + pick(c, 16);
    mp->n_expert_used = 1 + pick(c, mp->n_expert);
    mp->weights_norm = (int)pick(c, 3) - 1;
    for (unsigned il = 0; il < mp->n_layer; il++)
        mp->moe_layer[il] = moe_arch && (mp->arch != ARCH_MIXTRAL || pick(c, 4) != 0);
    if (mp->arch == ARCH_MIXTRAL) mp->moe_layer[0] = true; /* at least one MoE layer */
    mp->n_vocab = pick_bool(c) ? pick_of(c, vocab, sizeof vocab / sizeof vocab[0])
                               : 1 + pick(c, 300);
    mp->n_ctx = 1 + pick(c, 64);
    mp->tied = pick_bool(c);
    mp->drop_ones = pick_bool(c);
    mp->default_type = matrix_types[pick(c, N_MATRIX_TYPES)];
    mp->seed = (uint64_t)pick(c, 65536) << 16 | pick(c, 65536);
    if (mp->arch == ARCH_QWEN35MOE) plan_hybrid(c, mp);

    if (avoid_one_row) {
        mp->n_embd = min1(mp->n_embd, 2);
        mp->n_ff = min1(mp->n_ff, 2);
        mp->n_ff_exp = min1(mp->n_ff_exp, 2);
        mp->n_ff_shexp = min1(mp->n_ff_shexp, 2);
        mp->n_vocab = min1(mp->n_vocab, 2);
        mp->n_expert = min1(mp->n_expert, 2);
        mp->ff_exp_given = true;
    }
    /* keep one execution fast: at most ~400k expert weights */
    while (expert_elems(mp) > 400000 && mp->n_ff_exp > 1) {
        mp->n_ff_exp /= 2;
        mp->ff_exp_given = true;
    }
    while (expert_elems(mp) > 400000 && mp->n_expert > 1) mp->n_expert /= 2;
    if (mp->n_expert_used > mp->n_expert) mp->n_expert_used = mp->n_expert;
    if (avoid_one_row) mp->n_ff_exp = min1(mp->n_ff_exp, 2);
}

/* The tensors of the plan, each with its type from the input. */
static void plan_tensors(choices *c, model_plan *mp)
{
    const uint64_t E = mp->n_embd, V = mp->n_vocab;
    add(c, mp, "token_embd.weight", K_MAT, 2, E, V, 1);
    add(c, mp, "output_norm.weight", K_NORM, 1, E, 1, 1);
    if (!mp->tied) add(c, mp, "output.weight", K_MAT, 2, E, V, 1);
    for (unsigned il = 0; il < mp->n_layer + mp->hy.n_nextn; il++) {
        if (mp->arch == ARCH_QWEN35MOE) add_hybrid_layer(c, mp, il);
        else add_layer(c, mp, il);
    }
}

/* ---- writing the file ------------------------------------------------------ */

static int set_u32(sl_gguf_writer *w, const char *arch, const char *suffix, unsigned v)
{
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return sl_gguf_writer_set_u32(w, key, v);
}

static int set_f32(sl_gguf_writer *w, const char *arch, const char *suffix, float v)
{
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return sl_gguf_writer_set_f32(w, key, v);
}

static int write_hybrid_metadata(sl_gguf_writer *w, const model_plan *mp)
{
    const char *a = arch_names[mp->arch];
    const hybrid_plan *h = &mp->hy;
    char key[96];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", a);
    int rc = sl_gguf_writer_set_arr_i32(w, key, h->sections, 4);
    rc |= set_u32(w, a, "ssm.conv_kernel", h->conv_k);
    rc |= set_u32(w, a, "ssm.state_size", h->d_state);
    rc |= set_u32(w, a, "ssm.group_count", h->n_group);
    rc |= set_u32(w, a, "ssm.time_step_rank", h->n_v);
    rc |= set_u32(w, a, "ssm.inner_size", h->inner);
    if (h->n_nextn) rc |= set_u32(w, a, "nextn_predict_layers", h->n_nextn);
    if (h->interval_given) rc |= set_u32(w, a, "full_attention_interval", h->interval);
    if (h->recurrent_given) {
        uint8_t bits[MAX_LAYERS];
        for (unsigned il = 0; il < MAX_LAYERS; il++) bits[il] = h->recurrent[il];
        sl_gguf_value v = {.type = SL_GGUF_ARRAY};
        v.v.arr = (sl_gguf_array){SL_GGUF_BOOL, mp->n_layer + h->n_nextn, bits};
        snprintf(key, sizeof key, "%s.attention.recurrent_layers", a);
        rc |= sl_gguf_writer_set_value(w, key, &v);
    }
    return rc;
}

static int write_metadata(sl_gguf_writer *w, const model_plan *mp)
{
    const char *a = arch_names[mp->arch];
    bool any_moe = false;
    for (unsigned il = 0; il < mp->n_layer; il++) any_moe |= mp->moe_layer[il];
    int rc = sl_gguf_writer_set_str(w, "general.architecture", a);
    rc |= set_u32(w, a, "block_count", mp->n_layer + mp->hy.n_nextn);
    rc |= set_u32(w, a, "context_length", mp->n_ctx);
    rc |= set_u32(w, a, "embedding_length", mp->n_embd);
    rc |= set_u32(w, a, "feed_forward_length", mp->n_ff);
    rc |= set_u32(w, a, "attention.head_count", mp->n_head);
    if (mp->head_kv_given) rc |= set_u32(w, a, "attention.head_count_kv", mp->n_head_kv);
    if (mp->key_length_given) rc |= set_u32(w, a, "attention.key_length", mp->head_dim);
    if (mp->value_length_given) rc |= set_u32(w, a, "attention.value_length", mp->head_dim_v);
    if (mp->rope_dim_given) rc |= set_u32(w, a, "rope.dimension_count", mp->rope_dim);
    rc |= set_f32(w, a, "rope.freq_base", mp->rope_base);
    rc |= set_f32(w, a, "attention.layer_norm_rms_epsilon", mp->rms_eps);
    if (mp->rope_scaling) {
        static const char *const names[] = {"", "none", "linear", "yarn"};
        char key[96];
        snprintf(key, sizeof key, "%s.rope.scaling.type", a);
        rc |= sl_gguf_writer_set_str(w, key, names[mp->rope_scaling]);
        rc |= set_f32(w, a, "rope.scaling.factor", mp->rope_factor);
        if (mp->rope_scaling == 3)
            rc |= set_u32(w, a, "rope.scaling.original_context_length", mp->yarn_orig);
    }
    if (any_moe) {
        rc |= set_u32(w, a, "expert_count", mp->n_expert);
        rc |= set_u32(w, a, "expert_used_count", mp->n_expert_used);
        if (mp->ff_exp_given) rc |= set_u32(w, a, "expert_feed_forward_length", mp->n_ff_exp);
        if (mp->arch == ARCH_QWEN2MOE || (mp->arch == ARCH_QWEN35MOE && mp->hy.shexp_given))
            rc |= set_u32(w, a, "expert_shared_feed_forward_length", mp->n_ff_shexp);
        if (mp->weights_norm >= 0) {
            char key[96];
            snprintf(key, sizeof key, "%s.expert_weights_norm", a);
            rc |= sl_gguf_writer_set_bool(w, key, mp->weights_norm == 1);
        }
    }
    if (mp->arch == ARCH_QWEN35MOE) rc |= write_hybrid_metadata(w, mp);
    return rc;
}

/* One tensor's values (small, from the plan's seed and the tensor's index),
 * quantised to its type. */
static int write_tensor(sl_gguf_writer *w, const model_plan *mp, size_t ti, sl_err *err)
{
    const tensor_plan *t = &mp->t[ti];
    const uint64_t n = t->ne[0] * t->ne[1] * t->ne[2];
    uint64_t bytes = 0;
    FUZZ_CHECK(sl_type_nbytes(t->type, n, &bytes));
    float *f = malloc(n * sizeof *f);
    uint8_t *q = malloc(bytes ? bytes : 1);
    FUZZ_CHECK(f && q);
    uint64_t s = mp->seed * 0x100000001b3ull + ti;
    const float scale = 1.0f / sqrtf((float)t->ne[0]);
    for (uint64_t i = 0; i < n; i++) {
        const float u = unit(&s);
        f[i] = t->kind == K_NORM    ? 1.0f + 0.1f * u
               : t->kind == K_SSM_A  ? -expf(0.5f * u)
               : t->kind == K_SSM_DT ? 0.5f * u
                                     : scale * u;
    }
    if (!sl_quantize_fast(t->type, f, q, (int64_t)n)) {
        const sl_type_traits *tr = sl_type_get(t->type);
        FUZZ_CHECK(tr->from_float);
        tr->from_float(f, q, (int64_t)n);
    }
    int rc = sl_gguf_writer_write(w, q, bytes, err);
    free(f);
    free(q);
    return rc;
}

static void write_model(const model_plan *mp, const char *path)
{
    sl_err err = {0};
    sl_gguf_writer *w = NULL;
    FUZZ_CHECK(sl_gguf_writer_open(&w, path, &err) == SL_OK);
    FUZZ_CHECK(write_metadata(w, mp) == SL_OK);
    for (size_t i = 0; i < mp->n_t; i++)
        FUZZ_CHECK(sl_gguf_writer_add_tensor(w, mp->t[i].name, mp->t[i].type, mp->t[i].n_dims,
                                             mp->t[i].ne, &err) == SL_OK);
    for (size_t i = 0; i < mp->n_t; i++) FUZZ_CHECK(write_tensor(w, mp, i, &err) == SL_OK);
    if (sl_gguf_writer_close(w, &err) != SL_OK) {
        fprintf(stderr, "fuzz_model: writing %s failed: %s\n", path, err.msg);
        abort();
    }
}

/* ---- running it -------------------------------------------------------------- */

/* How a model is run: the resident and streamed loads, the session, the
 * seed of the batches. */
typedef struct run_plan {
    sl_model_params p, ps;
    sl_session_params sp;
    uint64_t rng;
} run_plan;

static void plan_run(choices *c, const model_plan *mp, run_plan *r)
{
    sl_model_params p = sl_model_default_params();
    p.n_threads = 1 + (int)pick(c, 2);
    p.mem_budget = 1ull << 30;
    p.io_threads = 1 + (int)pick(c, 2);
    sl_model_params ps = p; /* the streamed load */
    p.stream = SL_STREAM_OFF;
    p.dense = pick_bool(c) ? SL_DENSE_MMAP : SL_DENSE_ANON;
    ps.stream = SL_STREAM_ON;
    ps.dense = pick_bool(c) ? SL_DENSE_MMAP : SL_DENSE_ANON;
    ps.cache_experts = (int)(mp->n_expert_used + pick(c, 4));
    ps.io_backend = pick(c, 4) == 0 ? SL_IO_KIND_URING : SL_IO_KIND_PREAD;
    ps.no_overlap = pick(c, 4) == 0;
    ps.no_prefetch = pick(c, 4) == 0;
    ps.prefetch_always = pick_bool(c);
    sl_session_params sp = sl_session_default_params();
    sp.n_batch_max = 1 + (int)pick(c, 16);
    sp.n_ctx = pick(c, 4) == 0 ? 0 : 1 + (int)pick(c, 64);
    sp.type_k = sp.type_v = pick_bool(c) ? SL_KV_F32 : SL_KV_F16;
    sp.all_logits = pick_bool(c);
    p.n_logits_hint = ps.n_logits_hint = sp.all_logits ? sp.n_batch_max : 1;
    r->p = p;
    r->ps = ps;
    r->sp = sp;
    r->rng = (uint64_t)pick(c, 65536) << 20 ^ mp->seed;
}

static struct {
    unsigned long inputs, accepted, refused_load, refused_session, streamed, evals;
    unsigned long hybrid, hybrid_accepted, hybrid_refused_as_planned, truncations, replays;
    unsigned long truncations_refused;
} counts;
static char model_path[256];

static void at_exit(void)
{
    if (model_path[0]) unlink(model_path);
    if (!counts.inputs) return;
    fprintf(stderr,
            "fuzz_model: %lu inputs, %lu models accepted (%.1f%%), %lu loads and %lu "
            "sessions refused, %lu streamed comparisons, %lu batches evaluated\n",
            counts.inputs, counts.accepted, 100.0 * (double)counts.accepted / (double)counts.inputs,
            counts.refused_load, counts.refused_session, counts.streamed, counts.evals);
    if (counts.hybrid)
        fprintf(stderr, "fuzz_model: qwen35moe: %lu inputs, %lu accepted, %lu refused as "
                "planned; %lu truncations checked (%lu refused as they must be), %lu "
                "snapshot replays bit-identical\n",
                counts.hybrid, counts.hybrid_accepted, counts.hybrid_refused_as_planned,
                counts.truncations, counts.truncations_refused, counts.replays);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *avoid = getenv("FUZZ_MODEL_AVOID");
    avoid_one_row = avoid && (strstr(avoid, "d1") || strstr(avoid, "one-row"));
    const char *v = getenv("FUZZ_MODEL_VERBOSE");
    verbose = v && *v && strcmp(v, "0") != 0;
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(model_path, sizeof model_path, "%s/sluice-fuzz-model-%ld.gguf", dir ? dir : "/tmp",
             (long)getpid());
    atexit(at_exit);
    return 0;
}

static void refused(const char *what, const sl_err *err)
{
    FUZZ_CHECK(err->code != SL_OK && err->msg[0]);
    if (verbose) fprintf(stderr, "fuzz_model: %s refused: %s\n", what, err->msg);
}

/* Compares the logits the two sessions hold for the last batch of n. */
static void compare(const sl_session *a, const sl_session *b, int n_vocab, int n, bool all)
{
    const size_t bytes = (size_t)n_vocab * sizeof(float);
    for (int i = all ? 0 : n - 1; i < n; i++) {
        const float *x = all ? sl_session_logits_at(a, i) : sl_session_logits(a);
        const float *y = all ? sl_session_logits_at(b, i) : sl_session_logits(b);
        FUZZ_CHECK(x && y);
        if (memcmp(x, y, bytes) != 0) {
            int j = 0;
            while (j < n_vocab - 1 && memcmp(&x[j], &y[j], sizeof x[j]) == 0) j++;
            fprintf(stderr, "fuzz_model: streamed logits differ from resident ones: token %d "
                    "of the batch, logit %d: %.9g vs %.9g\n", i, j, (double)x[j], (double)y[j]);
            abort();
        }
    }
}

/* The single-token batches evaluated since the last multi-token one (the
 * snapshot a recurrent session can rewind to): their ids and last logits,
 * positions snap, snap+1, ... */
#define MAX_HISTORY 64
static struct {
    int snap; /* -1: none */
    int n;
    bool complete; /* every batch since the snapshot is recorded */
    int32_t tok[MAX_HISTORY];
    float logits[MAX_HISTORY][300];
} hist;

static void history_note(const sl_session *s, const int32_t *tok, int k, int V)
{
    if (k > 1) {
        hist.snap = sl_session_n_past(s);
        hist.n = 0;
        hist.complete = true;
        return;
    }
    if (hist.snap < 0 || !hist.complete) return;
    if (hist.n == MAX_HISTORY) {
        hist.complete = false;
        return;
    }
    FUZZ_CHECK(sl_session_n_past(s) == hist.snap + hist.n + 1);
    hist.tok[hist.n] = tok[0];
    memcpy(hist.logits[hist.n], sl_session_logits(s), (size_t)V * sizeof(float));
    hist.n++;
}

/* Evaluates the recorded single tokens again after a rewind to the
 * snapshot: the logits must be bit-identical to the first time (and the
 * streamed twin's to the resident ones). */
static void history_replay(sl_session *s, sl_session *ss, int V, bool all)
{
    sl_err err = {0};
    for (int i = 0; i < hist.n; i++) {
        FUZZ_CHECK(sl_session_eval(s, &hist.tok[i], 1, &err) == SL_OK);
        const float *x = sl_session_logits(s);
        FUZZ_CHECK(x);
        if (memcmp(x, hist.logits[i], (size_t)V * sizeof(float)) != 0) {
            int j = 0;
            while (j < V - 1 && memcmp(&x[j], &hist.logits[i][j], sizeof x[j]) == 0) j++;
            fprintf(stderr, "fuzz_model: after a rewind to the snapshot at %d, token %d of the "
                    "replay gives logit %d = %.9g, the first evaluation %.9g\n", hist.snap, i,
                    j, (double)x[j], (double)hist.logits[i][j]);
            abort();
        }
        if (ss) {
            FUZZ_CHECK(sl_session_eval(ss, &hist.tok[i], 1, &err) == SL_OK);
            compare(s, ss, V, 1, all);
        }
        counts.evals++;
    }
    FUZZ_CHECK(sl_session_n_past(s) == hist.snap + hist.n);
    counts.replays++;
}

/* Rewinds both sessions to `to` and checks the outcome against the rules
 * of sl_session_truncate: a model without recurrent layers goes anywhere;
 * one with them only to 0 or to the snapshot (else SL_EINVAL, unchanged).
 * After a rewind to the snapshot the recorded batches are replayed. */
static void rewind_to(sl_session *s, sl_session *ss, int to, bool recurrent, int V, bool all)
{
    const int past = sl_session_n_past(s);
    const bool ok = !recurrent || to == 0 || to >= past || to == hist.snap;
    const int rc = sl_session_truncate(s, to);
    if (rc != (ok ? SL_OK : SL_EINVAL)) {
        fprintf(stderr, "fuzz_model: sl_session_truncate(%d) at n_past %d (snapshot %d, %s) "
                "returned %d, expected %d\n", to, past, hist.snap,
                recurrent ? "recurrent" : "attention only", rc, ok ? SL_OK : SL_EINVAL);
        abort();
    }
    FUZZ_CHECK(sl_session_n_past(s) == (ok && to < past ? to : past));
    if (ss) {
        FUZZ_CHECK(sl_session_truncate(ss, to) == rc);
        FUZZ_CHECK(sl_session_n_past(ss) == sl_session_n_past(s));
    }
    counts.truncations++;
    counts.truncations_refused += !ok;
    if (!ok || to >= past) return;
    if (to < hist.snap) {
        hist.snap = -1;
    } else if (to == hist.snap) {
        if (hist.complete) history_replay(s, ss, V, all);
    } else if (hist.snap >= 0 && to - hist.snap <= hist.n) {
        /* an attention-only model between the snapshot and the end: the
         * batches before `to` stay recorded */
        hist.n = to - hist.snap;
        hist.complete = true;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    choices c = {data, size, 0};
    static model_plan mp; /* large: not on the stack */
    plan_model(&c, &mp);

    /* how it is run: read after the tensors' types, except for qwen35moe,
     * whose many tensors would use up a short input before (the other
     * architectures keep the order their reproducers were found with) */
    const bool hybrid = mp.arch == ARCH_QWEN35MOE;
    run_plan run;
    if (hybrid) plan_run(&c, &mp, &run);
    plan_tensors(&c, &mp);
    if (!hybrid) plan_run(&c, &mp, &run);
    sl_model_params p = run.p, ps = run.ps;
    sl_session_params sp = run.sp;
    uint64_t rng = run.rng;

    counts.inputs++;
    const char *must_refuse = hybrid ? hybrid_refusal(&mp) : NULL;
    const bool recurrent = plan_recurrent(&mp);
    counts.hybrid += hybrid;
    if (verbose && hybrid) {
        const hybrid_plan *h = &mp.hy;
        char kinds[MAX_LAYERS + 1] = {0};
        for (unsigned il = 0; il < mp.n_layer; il++) kinds[il] = h->linear[il] ? 'L' : 'A';
        fprintf(stderr, "fuzz_model: qwen35moe layers %s (interval %u%s%s) mtp %u conv %u "
                "ds %u nk %u nv %u inner %u sections [%d,%d,%d,%d] rope %u shexp %s%s%s\n",
                kinds, h->interval, h->interval_given ? "" : " default",
                h->recurrent_given ? ", recurrent_layers" : "", h->n_nextn, h->conv_k,
                h->d_state, h->n_group, h->n_v, h->inner, h->sections[0], h->sections[1],
                h->sections[2], h->sections[3], mp.rope_dim,
                h->shexp_given ? "given" : "= n_ff", must_refuse ? "; must be refused: " : "",
                must_refuse ? must_refuse : "");
    }
    if (verbose)
        fprintf(stderr, "fuzz_model: %s layers %u embd %u heads %u/%u hd %u/%u ff %u exp %u/%u "
                "ff_exp %u shexp %u vocab %u ctx %u tied %d drop %d type %s threads %d batch %d\n",
                arch_names[mp.arch], mp.n_layer, mp.n_embd, mp.n_head, mp.n_head_kv, mp.head_dim,
                mp.head_dim_v, mp.n_ff, mp.n_expert_used, mp.n_expert, mp.n_ff_exp,
                mp.n_ff_shexp, mp.n_vocab, mp.n_ctx, mp.tied, mp.drop_ones,
                sl_type_name(mp.default_type), p.n_threads, sp.n_batch_max);
    write_model(&mp, model_path);

    sl_err err = {0};
    sl_model *m = NULL, *ms = NULL;
    sl_session *s = NULL, *ss = NULL;
    if (sl_model_load(&m, model_path, &p, &err) != SL_OK) {
        FUZZ_CHECK(m == NULL);
        refused("resident load", &err);
        counts.refused_load++;
        counts.hybrid_refused_as_planned += must_refuse != NULL;
        return 0;
    }
    if (must_refuse) {
        fprintf(stderr, "fuzz_model: the loader accepted a qwen35moe model it must refuse (%s)\n",
                must_refuse);
        abort();
    }
    counts.accepted++;
    counts.hybrid_accepted += hybrid;
    FUZZ_CHECK(sl_model_n_vocab(m) == (int)mp.n_vocab);
    bool any_moe = false;
    for (unsigned il = 0; il < mp.n_layer; il++) any_moe |= mp.moe_layer[il];
    if (any_moe) {
        /* the streamed twin: its refusals are fine, its logits must match */
        if (sl_model_load(&ms, model_path, &ps, &err) != SL_OK) {
            FUZZ_CHECK(ms == NULL);
            refused("streamed load", &err);
        }
    }
    if (sl_session_create(&s, m, &sp, &err) != SL_OK) {
        FUZZ_CHECK(s == NULL);
        refused("session", &err);
        counts.refused_session++;
        goto done;
    }
    if (ms && sl_session_create(&ss, ms, &sp, &err) != SL_OK) {
        FUZZ_CHECK(ss == NULL);
        refused("streamed session", &err);
    }
    if (ss) counts.streamed++;

    const int nb = sp.n_batch_max, n_ctx = sl_session_n_ctx(s), V = (int)mp.n_vocab;
    FUZZ_CHECK(n_ctx >= 1);
    int32_t tok[32];
    hist.snap = -1;
    hist.n = 0;
    hist.complete = false;
    for (int round = 0; round < 64 && sl_session_n_past(s) < n_ctx; round++) {
        int n = 1 + (int)(splitmix(&rng) % (uint64_t)(2 * nb));
        for (int i = 0; i < n; i++) tok[i] = (int32_t)(splitmix(&rng) % (uint64_t)V);
        const int past = sl_session_n_past(s);
        if (n > nb) {
            /* more than the micro-batch: refused, the session unchanged */
            FUZZ_CHECK(sl_session_eval(s, tok, n, &err) == SL_EINVAL);
            FUZZ_CHECK(sl_session_n_past(s) == past);
        }
        if (splitmix(&rng) % 8 == 0) {
            /* an id outside the vocabulary: refused, the session unchanged */
            int32_t bad[1] = {splitmix(&rng) % 2 ? V : -1};
            FUZZ_CHECK(sl_session_eval(s, bad, 1, &err) == SL_EINVAL);
            FUZZ_CHECK(sl_session_n_past(s) == past);
        }
        for (int off = 0; off < n;) {
            const int k = n - off < nb ? n - off : nb;
            const int before = sl_session_n_past(s);
            if (before + k > n_ctx) {
                /* the context is full: refused, unchanged, and the run ends */
                FUZZ_CHECK(sl_session_eval(s, tok + off, k, &err) == SL_EINVAL);
                FUZZ_CHECK(sl_session_n_past(s) == before);
                goto done;
            }
            int rc = sl_session_eval(s, tok + off, k, &err);
            if (rc != SL_OK) {
                fprintf(stderr, "fuzz_model: a valid batch of %d was refused: %s\n", k, err.msg);
                abort();
            }
            counts.evals++;
            FUZZ_CHECK(sl_session_n_past(s) == before + k);
            history_note(s, tok + off, k, V);
            if (ss) {
                rc = sl_session_eval(ss, tok + off, k, &err);
                if (rc != SL_OK) {
                    fprintf(stderr, "fuzz_model: the streamed model refused a batch the "
                            "resident one ran: %s\n", err.msg);
                    abort();
                }
                compare(s, ss, V, k, sp.all_logits);
            }
            off += k;
        }
        if (hybrid) {
            /* qwen35moe rewinds more often, to 0, to the snapshot or
             * elsewhere (refused when a layer is recurrent) */
            if (splitmix(&rng) % 4 == 0) {
                const uint64_t r = splitmix(&rng), now = (uint64_t)sl_session_n_past(s);
                const int to = r % 4 == 0                     ? 0
                               : r % 4 != 3 && hist.snap >= 0 ? hist.snap
                                                              : (int)((r >> 2) % (now + 1));
                rewind_to(s, ss, to, recurrent, V, sp.all_logits);
            }
        } else if (splitmix(&rng) % 16 == 0) {
            /* rewind both timelines to the same earlier position */
            const int to = (int)(splitmix(&rng) % (uint64_t)(sl_session_n_past(s) + 1));
            rewind_to(s, ss, to, false, V, sp.all_logits);
        }
    }
done:
    sl_session_free(ss);
    sl_session_free(s);
    sl_model_free(ms);
    sl_model_free(m);
    return 0;
}
