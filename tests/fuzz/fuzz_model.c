/* fuzz_model.c - libFuzzer target past the parser: every input becomes a
 * valid small model that is loaded and run.
 *
 * The input bytes are read as a sequence of choices (an exhausted input
 * reads as zeros, so any input is a model): the architecture (each row of
 * src/model/arch.c, llama dense and Mixtral-style with dense and MoE layers
 * mixed), the hyperparameters (1..3 layers, heads and KV heads that divide,
 * head sizes given or derived, rope dimension and scaling, FFN widths down to
 * 1, 1..16 experts with top-k 1..n, a shared expert for qwen2moe), the type
 * of every matrix among all types the loader computes with whose block size
 * divides the row length (1-D tensors f32), shapes with trailing 1s dropped
 * as gguf-py writes a one-expert model ([n_embd, n_ff] experts, [n_embd]
 * router), tied or untied head, vocabulary 1..300, context 1..64, and a
 * seed for the weights (small values, quantised with src/quant).
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
       ARCH_OLMOE, ARCH_COUNT };
static const char *const arch_names[ARCH_COUNT] = {"llama", "llama", "qwen2", "qwen3",
                                                   "qwen2moe", "qwen3moe", "olmoe"};

/* Every matrix type the loader accepts (it can dequantise it) and we can
 * produce (it has a quantiser). */
static const sl_type matrix_types[] = {
    SL_TYPE_F32,  SL_TYPE_F16,  SL_TYPE_BF16, SL_TYPE_Q4_0,   SL_TYPE_Q4_1,   SL_TYPE_Q5_0,
    SL_TYPE_Q5_1, SL_TYPE_Q8_0, SL_TYPE_Q8_1, SL_TYPE_Q2_K,   SL_TYPE_Q3_K,   SL_TYPE_Q4_K,
    SL_TYPE_Q5_K, SL_TYPE_Q6_K, SL_TYPE_Q8_K, SL_TYPE_IQ4_NL, SL_TYPE_IQ4_XS, SL_TYPE_MXFP4,
};
#define N_MATRIX_TYPES (sizeof matrix_types / sizeof matrix_types[0])

typedef enum kind { K_NORM, K_MAT } kind;

typedef struct tensor_plan {
    char name[48];
    uint32_t n_dims;
    uint64_t ne[4];
    sl_type type;
    kind kind;
} tensor_plan;

#define MAX_TENSORS 96

typedef struct model_plan {
    int arch;
    unsigned n_layer, n_embd, n_head, n_head_kv, head_dim, head_dim_v, rope_dim;
    bool key_length_given, value_length_given, rope_dim_given, head_kv_given;
    unsigned n_ff, n_ff_exp, n_ff_shexp, n_expert, n_expert_used, n_vocab, n_ctx;
    bool moe_layer[3], tied, drop_ones, ff_exp_given;
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
 * plan says so (1-D is the least), and a tensor stored 1-D is f32. */
static void add(choices *c, model_plan *mp, const char *name, kind k, uint32_t n_dims,
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

/* Elements of every expert tensor of the plan so far, for the size cap. */
static uint64_t expert_elems(const model_plan *mp)
{
    unsigned moe = 0;
    for (unsigned il = 0; il < mp->n_layer; il++) moe += mp->moe_layer[il];
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
                          mp->arch == ARCH_QWEN3MOE || mp->arch == ARCH_OLMOE;
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

    const uint64_t E = mp->n_embd, V = mp->n_vocab;
    add(c, mp, "token_embd.weight", K_MAT, 2, E, V, 1);
    add(c, mp, "output_norm.weight", K_NORM, 1, E, 1, 1);
    if (!mp->tied) add(c, mp, "output.weight", K_MAT, 2, E, V, 1);
    for (unsigned il = 0; il < mp->n_layer; il++) add_layer(c, mp, il);
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

static int write_metadata(sl_gguf_writer *w, const model_plan *mp)
{
    const char *a = arch_names[mp->arch];
    bool any_moe = false;
    for (unsigned il = 0; il < mp->n_layer; il++) any_moe |= mp->moe_layer[il];
    int rc = sl_gguf_writer_set_str(w, "general.architecture", a);
    rc |= set_u32(w, a, "block_count", mp->n_layer);
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
        if (mp->arch == ARCH_QWEN2MOE)
            rc |= set_u32(w, a, "expert_shared_feed_forward_length", mp->n_ff_shexp);
        if (mp->weights_norm >= 0) {
            char key[96];
            snprintf(key, sizeof key, "%s.expert_weights_norm", a);
            rc |= sl_gguf_writer_set_bool(w, key, mp->weights_norm == 1);
        }
    }
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
    for (uint64_t i = 0; i < n; i++)
        f[i] = t->kind == K_NORM ? 1.0f + 0.1f * unit(&s) : scale * unit(&s);
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

static struct {
    unsigned long inputs, accepted, refused_load, refused_session, streamed, evals;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    choices c = {data, size, 0};
    static model_plan mp; /* large: not on the stack */
    plan_model(&c, &mp);

    /* how it is run */
    sl_model_params p = sl_model_default_params();
    p.n_threads = 1 + (int)pick(&c, 2);
    p.mem_budget = 1ull << 30;
    p.io_threads = 1 + (int)pick(&c, 2);
    sl_model_params ps = p; /* the streamed load */
    p.stream = SL_STREAM_OFF;
    p.dense = pick_bool(&c) ? SL_DENSE_MMAP : SL_DENSE_ANON;
    ps.stream = SL_STREAM_ON;
    ps.dense = pick_bool(&c) ? SL_DENSE_MMAP : SL_DENSE_ANON;
    ps.cache_experts = (int)(mp.n_expert_used + pick(&c, 4));
    ps.io_backend = pick(&c, 4) == 0 ? SL_IO_KIND_URING : SL_IO_KIND_PREAD;
    ps.no_overlap = pick(&c, 4) == 0;
    ps.no_prefetch = pick(&c, 4) == 0;
    ps.prefetch_always = pick_bool(&c);
    sl_session_params sp = sl_session_default_params();
    sp.n_batch_max = 1 + (int)pick(&c, 16);
    sp.n_ctx = pick(&c, 4) == 0 ? 0 : 1 + (int)pick(&c, 64);
    sp.kv_type = pick_bool(&c) ? SL_KV_F32 : SL_KV_F16;
    sp.all_logits = pick_bool(&c);
    p.n_logits_hint = ps.n_logits_hint = sp.all_logits ? sp.n_batch_max : 1;
    uint64_t rng = (uint64_t)pick(&c, 65536) << 20 ^ mp.seed;

    counts.inputs++;
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
        return 0;
    }
    counts.accepted++;
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
        if (splitmix(&rng) % 16 == 0) {
            /* rewind both timelines to the same earlier position */
            const int to = (int)(splitmix(&rng) % (uint64_t)(sl_session_n_past(s) + 1));
            sl_session_truncate(s, to);
            FUZZ_CHECK(sl_session_n_past(s) == to);
            if (ss) sl_session_truncate(ss, to);
        }
    }
done:
    sl_session_free(ss);
    sl_session_free(s);
    sl_model_free(ms);
    sl_model_free(m);
    return 0;
}
