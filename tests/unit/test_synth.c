/* test_synth.c - generated models read back with the GGUF reader.
 *
 * Every expected shape, hyperparameter and statistic below is written out by
 * hand from the preset table and the rules in the brief (tiny: n_embd 64,
 * 2 layers, 4 heads of 16, 2 kv heads, n_ff 128, 8 experts of width 32,
 * top-2, shared expert width 64, vocab 512, ctx 256, rope base 10000,
 * eps 1e-6); none is computed by src/synth. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "synth/synth.h"
#include "test.h"
#include "common/testutil.h"

/* ---- helpers ------------------------------------------------------------- */

static int write_model(const char *arch, const char *preset, sl_synth_type type, uint64_t seed,
                       unsigned threads, const char *name, char *path, size_t cap)
{
    sl_synth_config c;
    sl_err err = {0};
    t_path(path, cap, name);
    if (sl_synth_config_init(&c, arch, preset, &err)) goto fail;
    c.type = type;
    c.seed = seed;
    c.threads = threads;
    if (sl_synth_write(&c, path, NULL, NULL, NULL, &err)) goto fail;
    return 0;
fail:
    fprintf(stderr, "  mkmodel %s %s: %s\n", arch, preset, err.msg);
    return -1;
}

static sl_gguf *open_model(const char *path)
{
    sl_gguf *g = NULL;
    sl_err err = {0};
    if (sl_gguf_open(&g, path, &err)) {
        fprintf(stderr, "  open %s: %s\n", path, err.msg);
        return NULL;
    }
    return g;
}

/* Whole tensor dequantised to f32 (malloc'ed), or NULL. */
static float *read_f32(const sl_gguf *g, const char *name, uint64_t *n_out)
{
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
    if (!t) return NULL;
    const sl_type_traits *tr = sl_type_get(t->type);
    void *raw = malloc(t->nbytes);
    float *f = malloc(t->n_elements * sizeof *f);
    sl_err err = {0};
    if (!raw || !f || !tr || !tr->to_float || sl_gguf_read_tensor(g, t, 0, raw, t->nbytes, &err)) {
        free(raw);
        free(f);
        return NULL;
    }
    tr->to_float(raw, f, (int64_t)t->n_elements);
    free(raw);
    *n_out = t->n_elements;
    return f;
}

static void mean_std(const float *x, uint64_t n, double *mean, double *std)
{
    double s = 0, s2 = 0;
    for (uint64_t i = 0; i < n; i++) s += x[i];
    *mean = s / (double)n;
    for (uint64_t i = 0; i < n; i++) s2 += (x[i] - *mean) * (x[i] - *mean);
    *std = sqrt(s2 / (double)n);
}

static int files_equal(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int eq = fa && fb;
    while (eq) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) eq = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return eq;
}

static uint32_t u32_key(const sl_gguf *g, const char *arch, const char *suffix)
{
    char key[128];
    uint32_t v = 0xffffffffu;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (!sl_gguf_get_u32(g, key, &v)) fprintf(stderr, "  missing key %s\n", key);
    return v;
}

/* ---- expected tensors of the tiny preset ---------------------------------- */

enum { QWEN3MOE = 1, QWEN2MOE = 2, MIXTRAL = 4, OLMOE = 8, LLAMA = 16, QWEN3 = 32, QWEN2 = 64 };
#define MOE (QWEN3MOE | QWEN2MOE | MIXTRAL | OLMOE)
#define DENSE (LLAMA | QWEN3 | QWEN2)
#define ALL (MOE | DENSE)

typedef struct exp_tensor {
    const char *name;  /* per-layer names without "blk.N." */
    int per_layer;
    unsigned archs;
    uint32_t n_dims;
    uint64_t ne[3];
} exp_tensor;

/* q width = 4 heads x 16 = 64; k/v width = 2 x 16 = 32, except olmoe whose
 * kv head count is its head count (no GQA in that family): 4 x 16 = 64. */
static const exp_tensor tiny_tensors[] = {
    {"token_embd.weight", 0, ALL, 2, {64, 512, 1}},
    {"output_norm.weight", 0, ALL, 1, {64, 1, 1}},
    {"output.weight", 0, ALL, 2, {64, 512, 1}},
    {"attn_norm.weight", 1, ALL, 1, {64, 1, 1}},
    {"attn_q.weight", 1, ALL, 2, {64, 64, 1}},
    {"attn_k.weight", 1, ALL & ~OLMOE, 2, {64, 32, 1}},
    {"attn_v.weight", 1, ALL & ~OLMOE, 2, {64, 32, 1}},
    {"attn_k.weight", 1, OLMOE, 2, {64, 64, 1}}, /* olmoe: kv heads = heads = 4 */
    {"attn_v.weight", 1, OLMOE, 2, {64, 64, 1}},
    {"attn_output.weight", 1, ALL, 2, {64, 64, 1}},
    {"ffn_norm.weight", 1, ALL, 1, {64, 1, 1}},
    {"attn_q.bias", 1, QWEN2 | QWEN2MOE, 1, {64, 1, 1}},
    {"attn_k.bias", 1, QWEN2 | QWEN2MOE, 1, {32, 1, 1}},
    {"attn_v.bias", 1, QWEN2 | QWEN2MOE, 1, {32, 1, 1}},
    {"attn_q_norm.weight", 1, QWEN3 | QWEN3MOE, 1, {16, 1, 1}},
    {"attn_k_norm.weight", 1, QWEN3 | QWEN3MOE, 1, {16, 1, 1}},
    {"attn_q_norm.weight", 1, OLMOE, 1, {64, 1, 1}},
    {"attn_k_norm.weight", 1, OLMOE, 1, {64, 1, 1}},
    {"ffn_gate_inp.weight", 1, MOE, 2, {64, 8, 1}},
    {"ffn_gate_exps.weight", 1, MOE, 3, {64, 32, 8}},
    {"ffn_up_exps.weight", 1, MOE, 3, {64, 32, 8}},
    {"ffn_down_exps.weight", 1, MOE, 3, {32, 64, 8}},
    {"ffn_gate_inp_shexp.weight", 1, QWEN2MOE, 1, {64, 1, 1}},
    {"ffn_gate_shexp.weight", 1, QWEN2MOE, 2, {64, 64, 1}},
    {"ffn_up_shexp.weight", 1, QWEN2MOE, 2, {64, 64, 1}},
    {"ffn_down_shexp.weight", 1, QWEN2MOE, 2, {64, 64, 1}},
    {"ffn_gate.weight", 1, DENSE, 2, {64, 128, 1}},
    {"ffn_up.weight", 1, DENSE, 2, {64, 128, 1}},
    {"ffn_down.weight", 1, DENSE, 2, {128, 64, 1}},
};

typedef struct arch_case {
    const char *cli;      /* --arch */
    const char *gguf;     /* general.architecture */
    unsigned bit;
    uint32_t ff_len;      /* feed_forward_length expected */
    int norm_topk;        /* expert_weights_norm: 1, 0, or -1 = absent */
} arch_case;

/* feed_forward_length: the dense width 128, except Mixtral and OLMoE whose
 * experts llama.cpp sizes by it (width 32). expert_weights_norm: Mixtral
 * and Qwen3-MoE renormalise the top-k weights, Qwen2-MoE and OLMoE do not. */
static const arch_case arch_cases[] = {
    {"qwen3moe", "qwen3moe", QWEN3MOE, 128, 1}, {"qwen2moe", "qwen2moe", QWEN2MOE, 128, 0},
    {"mixtral", "llama", MIXTRAL, 32, 1},       {"olmoe", "olmoe", OLMOE, 32, 0},
    {"llama", "llama", LLAMA, 128, -1},         {"qwen3", "qwen3", QWEN3, 128, -1},
    {"qwen2", "qwen2", QWEN2, 128, -1},
};

/* ---- tests ------------------------------------------------------------------ */

TEST(every_arch_tiny_has_expected_tensors_and_hparams)
{
    for (size_t a = 0; a < sizeof arch_cases / sizeof arch_cases[0]; a++) {
        const arch_case *ac = &arch_cases[a];
        char path[512], fname[64];
        snprintf(fname, sizeof fname, "tiny-%s.gguf", ac->cli);
        if (write_model(ac->cli, "tiny", SL_SYNTH_F32, 1, 1, fname, path, sizeof path)) {
            CHECK_MSG(0, "could not write %s", ac->cli);
            continue;
        }
        sl_gguf *g = open_model(path);
        CHECK(g != NULL);
        if (!g) continue;
        size_t expected = 0;
        for (size_t i = 0; i < sizeof tiny_tensors / sizeof tiny_tensors[0]; i++) {
            const exp_tensor *e = &tiny_tensors[i];
            if (!(e->archs & ac->bit)) continue;
            for (int l = 0; l < (e->per_layer ? 2 : 1); l++) {
                char name[96];
                if (e->per_layer)
                    snprintf(name, sizeof name, "blk.%d.%s", l, e->name);
                else
                    snprintf(name, sizeof name, "%s", e->name);
                expected++;
                const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
                CHECK_MSG(t != NULL, "%s: tensor %s missing", ac->cli, name);
                if (!t) continue;
                CHECK_MSG(t->n_dims == e->n_dims, "%s: %s has %u dims", ac->cli, name, t->n_dims);
                for (int d = 0; d < 3; d++)
                    CHECK_MSG(t->ne[d] == e->ne[d], "%s: %s ne[%d] = %llu, want %llu", ac->cli,
                              name, d, (unsigned long long)t->ne[d],
                              (unsigned long long)e->ne[d]);
                CHECK_MSG(t->type == SL_TYPE_F32, "%s: %s type %s", ac->cli, name,
                          sl_type_name(t->type));
            }
        }
        CHECK_MSG(sl_gguf_tensor_count(g) == expected, "%s: %llu tensors, expected %zu", ac->cli,
                  (unsigned long long)sl_gguf_tensor_count(g), expected);

        const char *arch = sl_gguf_get_str(g, "general.architecture");
        CHECK_MSG(arch && !strcmp(arch, ac->gguf), "%s: architecture %s", ac->cli,
                  arch ? arch : "(null)");
        CHECK(sl_gguf_get_str(g, "general.name") != NULL);
        uint32_t v = 0;
        CHECK(sl_gguf_get_u32(g, "general.alignment", &v) && v == 32);
        CHECK(sl_gguf_get_u32(g, "general.file_type", &v) && v == 0); /* ALL_F32 */
        CHECK_EQ_INT(sl_gguf_alignment(g), 32);
        CHECK_EQ_INT(u32_key(g, ac->gguf, "block_count"), 2);
        CHECK_EQ_INT(u32_key(g, ac->gguf, "context_length"), 256);
        CHECK_EQ_INT(u32_key(g, ac->gguf, "embedding_length"), 64);
        CHECK_EQ_INT(u32_key(g, ac->gguf, "feed_forward_length"), ac->ff_len);
        CHECK_EQ_INT(u32_key(g, ac->gguf, "attention.head_count"), 4);
        CHECK_EQ_INT(u32_key(g, ac->gguf, "attention.head_count_kv"), ac->bit == OLMOE ? 4 : 2);
        CHECK_EQ_INT(u32_key(g, ac->gguf, "attention.key_length"), 16);
        CHECK_EQ_INT(u32_key(g, ac->gguf, "attention.value_length"), 16);
        CHECK_EQ_INT(u32_key(g, ac->gguf, "rope.dimension_count"), 16);
        char key[128];
        float f = 0;
        snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", ac->gguf);
        CHECK(sl_gguf_get_f32(g, key, &f) && fabsf(f - 1e-6f) < 1e-12f);
        snprintf(key, sizeof key, "%s.rope.freq_base", ac->gguf);
        CHECK(sl_gguf_get_f32(g, key, &f) && f == 10000.0f);
        if (ac->bit & MOE) {
            CHECK_EQ_INT(u32_key(g, ac->gguf, "expert_count"), 8);
            CHECK_EQ_INT(u32_key(g, ac->gguf, "expert_used_count"), 2);
            CHECK_EQ_INT(u32_key(g, ac->gguf, "expert_feed_forward_length"), 32);
        } else {
            snprintf(key, sizeof key, "%s.expert_count", ac->gguf);
            CHECK_MSG(!sl_gguf_find(g, key), "%s: dense model has %s", ac->cli, key);
        }
        if (ac->bit & QWEN2MOE)
            CHECK_EQ_INT(u32_key(g, ac->gguf, "expert_shared_feed_forward_length"), 64);
        snprintf(key, sizeof key, "%s.expert_weights_norm", ac->gguf);
        bool b = false;
        if (ac->norm_topk < 0)
            CHECK(!sl_gguf_find(g, key));
        else
            CHECK_MSG(sl_gguf_get_bool(g, key, &b) && b == (ac->norm_topk == 1), "%s: %s",
                      ac->cli, key);
        sl_gguf_close(g);
        remove(path);
    }
}

TEST(tied_omits_output)
{
    sl_synth_config c;
    sl_err err = {0};
    char path[512];
    t_path(path, sizeof path, "tied.gguf");
    CHECK(!sl_synth_config_init(&c, "qwen3moe", "tiny", &err));
    c.tied = true;
    CHECK(!sl_synth_write(&c, path, NULL, NULL, NULL, &err));
    sl_gguf *g = open_model(path);
    CHECK(g != NULL);
    if (!g) return;
    CHECK(sl_gguf_find_tensor(g, "output.weight") == NULL);
    CHECK(sl_gguf_find_tensor(g, "token_embd.weight") != NULL);
    CHECK_EQ_INT(sl_gguf_tensor_count(g), 26); /* 27 of qwen3moe tiny minus output */
    sl_gguf_close(g);
    remove(path);
}

TEST(q4_k_m_types_in_file)
{
    /* tiny-k, 2 layers: more_bits(i, 2) with n/8 = 0 and 7n/8 = 1 holds
     * for i = 1 only (i >= 1), so layer 1's attn_v and ffn_down_exps are
     * q6_K and layer 0's q4_K. output q6_K, token_embd q4_K, norms and the
     * router f32, everything else q4_K. */
    char path[512];
    if (write_model("qwen3moe", "tiny-k", SL_SYNTH_Q4_K_M, 3, 2, "q4km.gguf", path, sizeof path)) {
        CHECK(0);
        return;
    }
    sl_gguf *g = open_model(path);
    CHECK(g != NULL);
    if (!g) return;
    static const struct { const char *name; sl_type type; } want[] = {
        {"token_embd.weight", SL_TYPE_Q4_K},        {"output.weight", SL_TYPE_Q6_K},
        {"output_norm.weight", SL_TYPE_F32},        {"blk.0.attn_norm.weight", SL_TYPE_F32},
        {"blk.0.attn_q.weight", SL_TYPE_Q4_K},      {"blk.0.attn_k.weight", SL_TYPE_Q4_K},
        {"blk.0.attn_v.weight", SL_TYPE_Q4_K},      {"blk.1.attn_v.weight", SL_TYPE_Q6_K},
        {"blk.0.attn_output.weight", SL_TYPE_Q4_K}, {"blk.0.attn_q_norm.weight", SL_TYPE_F32},
        {"blk.0.ffn_gate_inp.weight", SL_TYPE_F32}, {"blk.1.ffn_gate_inp.weight", SL_TYPE_F32},
        {"blk.0.ffn_gate_exps.weight", SL_TYPE_Q4_K}, {"blk.0.ffn_up_exps.weight", SL_TYPE_Q4_K},
        {"blk.0.ffn_down_exps.weight", SL_TYPE_Q4_K}, {"blk.1.ffn_down_exps.weight", SL_TYPE_Q6_K},
        {"blk.1.ffn_gate_exps.weight", SL_TYPE_Q4_K},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const sl_gguf_tensor *t = sl_gguf_find_tensor(g, want[i].name);
        CHECK_MSG(t && t->type == want[i].type, "%s: %s, want %s", want[i].name,
                  t ? sl_type_name(t->type) : "missing", sl_type_name(want[i].type));
    }
    uint32_t ft = 0;
    CHECK(sl_gguf_get_u32(g, "general.file_type", &ft) && ft == 15); /* MOSTLY_Q4_K_M */
    sl_gguf_close(g);
    remove(path);
}

TEST(q4_k_m_layer_rule)
{
    /* more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2.
     * n = 12: n/8 = 1, 7n/8 = 10 -> {0} + {10, 11} + {3, 6, 9}.
     * n = 48: n/8 = 6, 7n/8 = 42 -> 0..5, 42..47, and 8, 11, ..., 41
     * (12 layers): 24 of 48. */
    sl_synth_config c;
    CHECK(!sl_synth_config_init(&c, "qwen3moe", "30b-a3b", NULL));
    c.type = SL_SYNTH_Q4_K_M;
    bool fb;
    c.n_layer = 12;
    const int six12[] = {0, 3, 6, 9, 10, 11};
    for (int i = 0; i < 12; i++) {
        bool want = false;
        for (size_t k = 0; k < 6; k++) want |= six12[k] == i;
        sl_type t = sl_synth_pick_type(&c, SL_SYNTH_R_EXP_DOWN, i, 768, &fb);
        CHECK_MSG(t == (want ? SL_TYPE_Q6_K : SL_TYPE_Q4_K), "12 layers, layer %d: %s", i,
                  sl_type_name(t));
        CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_ATTN_V, i, 2048, &fb) == t);
        CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_EXP_GATE, i, 2048, &fb) == SL_TYPE_Q4_K);
        CHECK(!fb);
    }
    c.n_layer = 48;
    int n6 = 0;
    for (int i = 0; i < 48; i++) {
        bool want = i < 6 || i >= 42 || (i >= 8 && (i - 8) % 3 == 0);
        sl_type t = sl_synth_pick_type(&c, SL_SYNTH_R_FFN_DOWN, i, 768, &fb);
        CHECK_MSG(t == (want ? SL_TYPE_Q6_K : SL_TYPE_Q4_K), "48 layers, layer %d", i);
        n6 += t == SL_TYPE_Q6_K;
    }
    CHECK_EQ_INT(n6, 24);
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_OUTPUT, -1, 2048, &fb) == SL_TYPE_Q6_K);
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_TOKEN_EMBD, -1, 2048, &fb) == SL_TYPE_Q4_K);
    c.tied = true; /* the embedding is then also the head */
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_TOKEN_EMBD, -1, 2048, &fb) == SL_TYPE_Q6_K);
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_ROUTER, 0, 2048, &fb) == SL_TYPE_F32);
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_NORM, 0, 2048, &fb) == SL_TYPE_F32);
}

TEST(fallback_when_rows_do_not_fit)
{
    sl_synth_config c;
    CHECK(!sl_synth_config_init(&c, "qwen3moe", "tiny", NULL));
    bool fb = false;
    /* K-quant on a 64-element row: 64 % 256 != 0 but 64 % 32 == 0 -> Q8_0 */
    c.type = SL_SYNTH_Q4_K;
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_ATTN_Q, 0, 64, &fb) == SL_TYPE_Q8_0 && fb);
    /* 80 elements fit neither 256 nor 32 -> F32 */
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_ATTN_Q, 0, 80, &fb) == SL_TYPE_F32 && fb);
    c.type = SL_SYNTH_Q8_0;
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_ATTN_Q, 0, 80, &fb) == SL_TYPE_F32 && fb);
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_ATTN_Q, 0, 64, &fb) == SL_TYPE_Q8_0 && !fb);
    c.type = SL_SYNTH_Q6_K;
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_ATTN_Q, 0, 512, &fb) == SL_TYPE_Q6_K && !fb);
    c.type = SL_SYNTH_F16;
    CHECK(sl_synth_pick_type(&c, SL_SYNTH_R_ATTN_Q, 0, 80, &fb) == SL_TYPE_F16 && !fb);

    /* In a file: tiny q4_k has every matrix as q8_0 (rows of 64 and 32). */
    char path[512];
    if (write_model("qwen2moe", "tiny", SL_SYNTH_Q4_K, 1, 1, "fb.gguf", path, sizeof path)) {
        CHECK(0);
        return;
    }
    sl_gguf *g = open_model(path);
    CHECK(g != NULL);
    if (!g) return;
    for (uint64_t i = 0; i < sl_gguf_tensor_count(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        bool vec = t->n_dims == 1 || strstr(t->name.ptr, "ffn_gate_inp.") != NULL;
        CHECK_MSG(t->type == (vec ? SL_TYPE_F32 : SL_TYPE_Q8_0), "%s: %s", t->name.ptr,
                  sl_type_name(t->type));
    }
    sl_gguf_close(g);
    remove(path);
}

TEST(deterministic_across_threads_and_seeds)
{
    char a[512], b[512], c[512], d[512];
    int rc = write_model("qwen2moe", "tiny", SL_SYNTH_Q8_0, 42, 1, "det-a.gguf", a, sizeof a);
    rc |= write_model("qwen2moe", "tiny", SL_SYNTH_Q8_0, 42, 3, "det-b.gguf", b, sizeof b);
    rc |= write_model("qwen2moe", "tiny", SL_SYNTH_Q8_0, 43, 2, "det-c.gguf", c, sizeof c);
    rc |= write_model("qwen2moe", "tiny", SL_SYNTH_Q8_0, 42, 2, "det-d.gguf", d, sizeof d);
    CHECK(rc == 0);
    CHECK_MSG(files_equal(a, b), "same seed, 1 vs 3 threads differ");
    CHECK_MSG(files_equal(a, d), "same seed, 1 vs 2 threads differ");
    CHECK_MSG(!files_equal(a, c), "seeds 42 and 43 gave identical files");
    remove(a);
    remove(b);
    remove(c);
    remove(d);
}

/* Chunks hold 2^18 elements: a tensor larger than that spans several
 * chunks and, with threads, several workers. n_vocab 5000 gives a
 * token_embd of 64 x 5000 = 320000 elements (two chunks). */
TEST(deterministic_with_multi_chunk_tensors)
{
    char a[512], b[512];
    sl_synth_config c;
    sl_err err = {0};
    CHECK(!sl_synth_config_init(&c, "qwen3moe", "tiny", &err));
    c.n_vocab = 5000;
    c.type = SL_SYNTH_F16;
    c.threads = 1;
    t_path(a, sizeof a, "mc-a.gguf");
    t_path(b, sizeof b, "mc-b.gguf");
    CHECK(!sl_synth_write(&c, a, NULL, NULL, NULL, &err));
    c.threads = 4;
    CHECK(!sl_synth_write(&c, b, NULL, NULL, NULL, &err));
    CHECK(files_equal(a, b));
    remove(a);
    remove(b);
}

/* The generator's vector path (four row streams per AVX2 register) and
 * its scalar loop give the same bits for every tensor of a model, for row
 * ranges that start anywhere and do not divide by four: a model must not
 * depend on the machine that wrote it. (On a CPU without AVX2 both calls
 * take the scalar loop and this only checks determinism.) */
TEST(generation_identical_on_both_paths)
{
    sl_synth_config c;
    sl_err err = {0};
    CHECK(!sl_synth_config_init(&c, "qwen2moe", "tiny-k", &err));
    sl_synth_tensor *ts = NULL;
    size_t nt = 0;
    CHECK(!sl_synth_plan_build(&c, &ts, &nt, &err));
    int bad = 0, tried = 0;
    for (size_t i = 0; i < nt; i++) {
        const sl_synth_tensor *t = &ts[i];
        uint64_t rows = sl_synth_tensor_rows(t);
        uint64_t row0 = rows > 3 ? 3 : 0, nrows = rows - row0 < 11 ? rows - row0 : 11;
        float *a = malloc(sizeof(float) * t->ne[0] * nrows);
        float *b = malloc(sizeof(float) * t->ne[0] * nrows);
        if (a && b) {
            sl_synth_gen_rows_simd(&c, t, row0, nrows, a, true);
            sl_synth_gen_rows_simd(&c, t, row0, nrows, b, false);
            bad += memcmp(a, b, sizeof(float) * t->ne[0] * nrows) != 0;
            tried++;
        }
        free(a);
        free(b);
    }
    CHECK(tried == (int)nt && nt > 10);
    CHECK_EQ_INT(bad, 0);
    free(ts);
}

TEST(same_weights_at_every_type)
{
    /* Same seed, f32 and q8_0: the q8_0 values are the f32 ones quantised,
     * so each differs by at most half a step, amax(block) / 127 / 2, plus
     * the f16 rounding of the block scale. */
    char pf[512], pq[512];
    int rc = write_model("olmoe", "tiny", SL_SYNTH_F32, 9, 1, "w-f32.gguf", pf, sizeof pf);
    rc |= write_model("olmoe", "tiny", SL_SYNTH_Q8_0, 9, 2, "w-q8.gguf", pq, sizeof pq);
    CHECK(rc == 0);
    sl_gguf *gf = open_model(pf), *gq = open_model(pq);
    CHECK(gf && gq);
    if (gf && gq) {
        uint64_t n1 = 0, n2 = 0;
        float *x = read_f32(gf, "blk.1.ffn_down_exps.weight", &n1);
        float *y = read_f32(gq, "blk.1.ffn_down_exps.weight", &n2);
        CHECK(x && y && n1 == n2 && n1 == 32 * 64 * 8);
        if (x && y && n1 == n2) {
            int bad = 0;
            for (uint64_t b0 = 0; b0 < n1; b0 += 32) {
                float amax = 0;
                for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b0 + i]));
                for (int i = 0; i < 32; i++)
                    bad += fabsf(x[b0 + i] - y[b0 + i]) > amax / 127.0f * 0.51f + 1e-6f;
            }
            CHECK_EQ_INT(bad, 0);
        }
        free(x);
        free(y);
    }
    sl_gguf_close(gf);
    sl_gguf_close(gq);
    remove(pf);
    remove(pq);
}

TEST(weight_statistics)
{
    /* Matrices: mean 0, std 1/sqrt(ne[0]); norms: mean 1, std 0.1.
     * Tolerances: with N values the sample mean has sd std/sqrt(N) and the
     * sample std a relative sd of about 1/sqrt(2N); allow 5 sd on the mean
     * and 5% on the std (N >= 16384 gives 0.55% sd). q4_K adds a
     * quantisation error of a few % of the std, uncorrelated with the
     * weights, so its std check allows 8%. */
    char pf[512], pk[512];
    int rc = write_model("qwen3moe", "tiny", SL_SYNTH_F32, 5, 2, "st-f32.gguf", pf, sizeof pf);
    rc |= write_model("qwen3moe", "tiny-k", SL_SYNTH_Q4_K, 5, 2, "st-q4k.gguf", pk, sizeof pk);
    CHECK(rc == 0);
    static const struct { const char *file; const char *name; double std; double tol; } cases[] = {
        {"f", "token_embd.weight", 0.125, 0.05},            /* 1/sqrt(64) */
        {"f", "output.weight", 0.125, 0.05},
        {"f", "blk.0.ffn_gate_exps.weight", 0.125, 0.05},
        {"f", "blk.1.ffn_up_exps.weight", 0.125, 0.05},
        {"f", "blk.0.ffn_down_exps.weight", 0.1767767, 0.05}, /* 1/sqrt(32) */
        {"k", "blk.0.ffn_gate_exps.weight", 0.0625, 0.08},  /* 1/sqrt(256) */
        {"k", "blk.1.ffn_down_exps.weight", 0.0625, 0.08},
        {"k", "blk.0.attn_q.weight", 0.0625, 0.08},
        {"k", "blk.0.attn_output.weight", 0.0625, 0.08},     /* ne[0] = 4 x 64 */
        {"k", "token_embd.weight", 0.0625, 0.08},
    };
    sl_gguf *gf = open_model(pf), *gk = open_model(pk);
    CHECK(gf && gk);
    for (size_t i = 0; gf && gk && i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t n = 0;
        float *x = read_f32(cases[i].file[0] == 'f' ? gf : gk, cases[i].name, &n);
        CHECK_MSG(x != NULL, "%s unreadable", cases[i].name);
        if (!x) continue;
        double m, s;
        mean_std(x, n, &m, &s);
        CHECK_MSG(fabs(m) < 5 * cases[i].std / sqrt((double)n), "%s: mean %g", cases[i].name, m);
        CHECK_MSG(fabs(s / cases[i].std - 1) < cases[i].tol, "%s: std %g, want %g",
                  cases[i].name, s, cases[i].std);
        /* No shared offset between rows: the row means are themselves
         * spread around 0 like std/sqrt(ne0), and not all on one side. */
        const sl_gguf_tensor *t = sl_gguf_find_tensor(cases[i].file[0] == 'f' ? gf : gk,
                                                      cases[i].name);
        uint64_t ne0 = t->ne[0], rows = n / ne0, pos = 0;
        for (uint64_t r = 0; r < rows; r++) {
            double rm = 0;
            for (uint64_t k = 0; k < ne0; k++) rm += x[r * ne0 + k];
            pos += rm > 0;
        }
        CHECK_MSG(pos > rows / 4 && pos < rows - rows / 4, "%s: %llu of %llu row means > 0",
                  cases[i].name, (unsigned long long)pos, (unsigned long long)rows);
        free(x);
    }
    /* Norm weights, all of them together: 1 + 0.1 N(0,1). */
    if (gf) {
        double sum = 0, sum2 = 0;
        uint64_t cnt = 0;
        for (uint64_t i = 0; i < sl_gguf_tensor_count(gf); i++) {
            const sl_gguf_tensor *t = sl_gguf_tensor_at(gf, i);
            if (!strstr(t->name.ptr, "norm")) continue;
            uint64_t n = 0;
            float *x = read_f32(gf, t->name.ptr, &n);
            for (uint64_t k = 0; x && k < n; k++) {
                sum += x[k];
                sum2 += x[k] * x[k];
            }
            cnt += n;
            free(x);
        }
        /* 2 x (64 + 64 + 16 + 16) + 64 = 384 values */
        CHECK_EQ_INT(cnt, 384);
        double m = sum / (double)cnt, s = sqrt(sum2 / (double)cnt - m * m);
        CHECK_MSG(fabs(m - 1) < 5 * 0.1 / sqrt(384.0), "norm mean %g", m);
        CHECK_MSG(fabs(s - 0.1) < 0.025, "norm std %g", s);
    }
    /* Experts differ from each other: expert 0 and 1 of gate_exps. */
    if (gf) {
        uint64_t n = 0;
        float *x = read_f32(gf, "blk.0.ffn_gate_exps.weight", &n);
        CHECK(x && memcmp(x, x + 64 * 32, 64 * 32 * sizeof(float)) != 0);
        free(x);
    }
    sl_gguf_close(gf);
    sl_gguf_close(gk);
    remove(pf);
    remove(pk);
}

/* A generator independent of src/synth for test inputs (LCG + Box-Muller). */
static uint64_t lcg_state = 12345;
static double lcg_normal(void)
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
        u[i] = ((double)(lcg_state >> 11) + 0.5) * 0x1.0p-53;
    }
    return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

static unsigned top2_mask(const float *logits, int n)
{
    int a = 0, b = -1;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[a]) a = i;
    for (int i = 0; i < n; i++)
        if (i != a && (b < 0 || logits[i] > logits[b])) b = i;
    return (1u << a) | (1u << b);
}

TEST(routing_varies_between_tokens)
{
    /* Router [64, 8]: logits_e = sum_k w[e*64 + k] x[k]. For 64 inputs
     * the top-2 sets must vary: at least 8 distinct sets out of the 28
     * possible, and every expert chosen at least once. Inputs: random
     * normals, and the layer-0 router's real inputs, the RMS-normalised
     * token embeddings scaled by ffn_norm. */
    char path[512];
    if (write_model("qwen3moe", "tiny", SL_SYNTH_F32, 1, 2, "route.gguf", path, sizeof path)) {
        CHECK(0);
        return;
    }
    sl_gguf *g = open_model(path);
    CHECK(g != NULL);
    if (!g) return;
    uint64_t nr = 0, ne = 0, nn = 0;
    float *w = read_f32(g, "blk.0.ffn_gate_inp.weight", &nr);
    float *emb = read_f32(g, "token_embd.weight", &ne);
    float *norm = read_f32(g, "blk.0.ffn_norm.weight", &nn);
    CHECK(w && emb && norm && nr == 512 && ne == 64 * 512 && nn == 64);
    for (int mode = 0; w && emb && norm && mode < 2; mode++) {
        unsigned seen_sets[64], n_sets = 0, experts = 0;
        for (int tok = 0; tok < 64; tok++) {
            float x[64], logits[8];
            if (mode == 0) {
                for (int k = 0; k < 64; k++) x[k] = (float)lcg_normal();
            } else {
                const float *e = emb + (size_t)(tok * 7 + 3) * 64; /* tokens 3, 10, 17, ... */
                double ss = 0;
                for (int k = 0; k < 64; k++) ss += e[k] * e[k];
                float r = (float)(1.0 / sqrt(ss / 64 + 1e-6));
                for (int k = 0; k < 64; k++) x[k] = e[k] * r * norm[k];
            }
            for (int j = 0; j < 8; j++) {
                double s = 0;
                for (int k = 0; k < 64; k++) s += (double)w[j * 64 + k] * x[k];
                logits[j] = (float)s;
            }
            unsigned m = top2_mask(logits, 8);
            experts |= m;
            bool dup = false;
            for (unsigned k = 0; k < n_sets; k++) dup |= seen_sets[k] == m;
            if (!dup) seen_sets[n_sets++] = m;
        }
        CHECK_MSG(n_sets >= 8, "mode %d: only %u distinct top-2 sets", mode, n_sets);
        CHECK_MSG(experts == 0xff, "mode %d: experts used mask %#x", mode, experts);
    }
    free(w);
    free(emb);
    free(norm);
    sl_gguf_close(g);
    remove(path);
}

TEST(tokenizer_metadata)
{
    char path[512];
    if (write_model("qwen3moe", "tiny", SL_SYNTH_F32, 1, 1, "tok.gguf", path, sizeof path)) {
        CHECK(0);
        return;
    }
    sl_gguf *g = open_model(path);
    CHECK(g != NULL);
    if (!g) return;
    const char *model = sl_gguf_get_str(g, "tokenizer.ggml.model");
    const char *pre = sl_gguf_get_str(g, "tokenizer.ggml.pre");
    CHECK(model && !strcmp(model, "gpt2"));
    CHECK(pre && !strcmp(pre, "qwen2"));
    const sl_gguf_array *toks = sl_gguf_get_arr(g, "tokenizer.ggml.tokens");
    const sl_gguf_array *types = sl_gguf_get_arr(g, "tokenizer.ggml.token_type");
    const sl_gguf_array *merges = sl_gguf_get_arr(g, "tokenizer.ggml.merges");
    CHECK(toks && types && merges);
    if (!toks || !types || !merges) goto done;
    /* n_vocab = token_embd ne[1] = output ne[1] = 512 */
    CHECK_EQ_INT(toks->n, 512);
    CHECK_EQ_INT(types->n, 512);
    CHECK_EQ_INT(sl_gguf_find_tensor(g, "token_embd.weight")->ne[1], toks->n);
    CHECK_EQ_INT(sl_gguf_find_tensor(g, "output.weight")->ne[1], toks->n);
    /* Byte tokens, GPT-2 mapping: 'A' (0x41) is itself; bytes 0x00..0x20
     * are the first 33 non-printables, so 0x0A -> U+010A "Ċ" and
     * 0x20 -> U+0120 "Ġ"; 0x7F is the 34th -> U+0121 "ġ"; 0xAD, after
     * 0x80..0xA0 (33 more), is the 68th -> U+0143 "Ń". */
    CHECK(!strcmp(sl_gguf_arr_str(toks, 0x41)->ptr, "A"));
    CHECK(!strcmp(sl_gguf_arr_str(toks, 0x0A)->ptr, "\xC4\x8A"));
    CHECK(!strcmp(sl_gguf_arr_str(toks, 0x20)->ptr, "\xC4\xA0"));
    CHECK(!strcmp(sl_gguf_arr_str(toks, 0x7F)->ptr, "\xC4\xA1"));
    CHECK(!strcmp(sl_gguf_arr_str(toks, 0xAD)->ptr, "\xC5\x83"));
    CHECK(!strcmp(sl_gguf_arr_str(toks, 0xE9)->ptr, "\xC3\xA9")); /* é is itself */

    uint32_t bos = 0, eos = 0, pad = 0;
    CHECK(sl_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos));
    CHECK(sl_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos));
    CHECK(sl_gguf_get_u32(g, "tokenizer.ggml.padding_token_id", &pad));
    bool add_bos = true;
    CHECK(sl_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos) && !add_bos);
    CHECK(bos < 512 && eos < 512 && pad < 512);
    if (bos < 512 && eos < 512) {
        CHECK(!strcmp(sl_gguf_arr_str(toks, bos)->ptr, "<|endoftext|>"));
        CHECK(!strcmp(sl_gguf_arr_str(toks, eos)->ptr, "<|im_end|>"));
        CHECK(!strcmp(sl_gguf_arr_str(toks, eos - 1)->ptr, "<|im_start|>"));
    }
    /* Types: 0..bos-1 normal, the three specials control, the rest unused
     * pads; budget 512 - 259 = 253 merges in a corpus with more to learn,
     * so ids 256..508 are merges and 509..511 the specials: no pads. */
    CHECK_EQ_INT(bos, 509);
    int bad_type = 0;
    for (uint64_t i = 0; i < types->n; i++) {
        int64_t ty = 0;
        sl_gguf_arr_i64(types, i, &ty);
        int64_t want = i < bos ? 1 : i <= eos ? 3 : 5;
        bad_type += ty != want;
    }
    CHECK_EQ_INT(bad_type, 0);
    /* Token strings are unique. */
    int dups = 0;
    for (uint64_t i = 0; i < toks->n; i++)
        for (uint64_t j = i + 1; j < toks->n; j++)
            dups += !strcmp(sl_gguf_arr_str(toks, i)->ptr, sl_gguf_arr_str(toks, j)->ptr);
    CHECK_EQ_INT(dups, 0);
    /* Merges: "left right", both sides and their concatenation are normal
     * tokens (ids below the specials). */
    CHECK(merges->n >= 253);
    int bad_merge = 0;
    for (uint64_t m = 0; m < merges->n; m++) {
        const char *s = sl_gguf_arr_str(merges, m)->ptr, *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' ')) {
            bad_merge++;
            continue;
        }
        char left[128], right[128], both[256];
        snprintf(left, sizeof left, "%.*s", (int)(sp - s), s);
        snprintf(right, sizeof right, "%s", sp + 1);
        snprintf(both, sizeof both, "%s%s", left, right);
        int found = 0;
        for (uint64_t i = 0; i < bos; i++) {
            const char *t = sl_gguf_arr_str(toks, i)->ptr;
            found += !strcmp(t, left) + 2 * !strcmp(t, right) + 4 * !strcmp(t, both);
        }
        /* each of the three found exactly once (left == right adds 1 + 2) */
        bad_merge += found != 7;
    }
    CHECK_EQ_INT(bad_merge, 0);
    /* A trained vocabulary learns the commonest English words: " the" and
     * " and" (spelt with Ġ for the space) are tokens. */
    int the = 0, n_and = 0;
    for (uint64_t i = 256; i < bos; i++) {
        the += !strcmp(sl_gguf_arr_str(toks, i)->ptr, "\xC4\xA0the");
        n_and += !strcmp(sl_gguf_arr_str(toks, i)->ptr, "\xC4\xA0" "and");
    }
    CHECK(the == 1 && n_and == 1);
    const char *tmpl = sl_gguf_get_str(g, "tokenizer.chat_template");
    CHECK_STR_CONTAINS(tmpl, "<|im_start|>");
    CHECK_STR_CONTAINS(tmpl, "add_generation_prompt");
done:
    sl_gguf_close(g);
    remove(path);
}

TEST(larger_vocab_gets_pads)
{
    sl_synth_config c;
    sl_err err = {0};
    char path[512];
    t_path(path, sizeof path, "pads.gguf");
    CHECK(!sl_synth_config_init(&c, "llama", "tiny", &err));
    c.n_vocab = 1000;
    CHECK(!sl_synth_write(&c, path, NULL, NULL, NULL, &err));
    sl_gguf *g = open_model(path);
    CHECK(g != NULL);
    if (!g) return;
    const sl_gguf_array *toks = sl_gguf_get_arr(g, "tokenizer.ggml.tokens");
    CHECK(toks && toks->n == 1000);
    CHECK_EQ_INT(sl_gguf_find_tensor(g, "token_embd.weight")->ne[1], 1000);
    if (toks && toks->n == 1000) {
        /* the last token is a pad, named <|pad_N|> */
        CHECK(!strncmp(sl_gguf_arr_str(toks, 999)->ptr, "<|pad_", 6));
        uint32_t eos = 0;
        CHECK(sl_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos));
        /* ids after <|im_end|> count up from <|pad_0|> */
        char want[32];
        snprintf(want, sizeof want, "<|pad_%u|>", 999 - eos - 1);
        CHECK(!strcmp(sl_gguf_arr_str(toks, 999)->ptr, want));
        CHECK(!strcmp(sl_gguf_arr_str(toks, eos + 1)->ptr, "<|pad_0|>"));
    }
    sl_gguf_close(g);
    remove(path);
}

TEST(config_errors_are_clear)
{
    sl_synth_config c;
    sl_err err = {0};
    CHECK(sl_synth_config_init(&c, "falcon", "tiny", &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "unknown architecture 'falcon'");
    CHECK_STR_CONTAINS(err.msg, "qwen3moe");
    CHECK(sl_synth_config_init(&c, "qwen3moe", "huge", &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "unknown preset 'huge'");
    CHECK_STR_CONTAINS(err.msg, "30b-a3b");

    CHECK(!sl_synth_config_init(&c, "qwen3moe", "tiny", &err));
    c.n_expert_used = 9;
    CHECK(sl_synth_config_validate(&c, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "top-k 9");
    c.n_expert_used = 2;
    c.n_head_kv = 3;
    CHECK(sl_synth_config_validate(&c, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "not a multiple");
    c.n_head_kv = 2;
    c.n_vocab = 259;
    CHECK(sl_synth_config_validate(&c, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "vocabulary size 259");
    c.n_vocab = 260; /* 256 bytes + 3 specials + 1 merge */
    CHECK(sl_synth_config_validate(&c, &err) == SL_OK);

    CHECK(!sl_synth_config_init(&c, "qwen3", "tiny", &err));
    c.n_expert = 4;
    CHECK(sl_synth_config_validate(&c, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "dense");

    sl_synth_type t;
    CHECK(sl_synth_type_from_name("Q4_K_M", &t) && t == SL_SYNTH_Q4_K_M);
    CHECK(!sl_synth_type_from_name("q3_k", &t));
}

TEST(unwritable_path_fails_cleanly)
{
    sl_synth_config c;
    sl_err err = {0};
    CHECK(!sl_synth_config_init(&c, "qwen3moe", "tiny", &err));
    int rc = sl_synth_write(&c, "/nonexistent-dir-sluice/x.gguf", NULL, NULL, NULL, &err);
    CHECK(rc != SL_OK);
    CHECK_STR_CONTAINS(err.msg, "/nonexistent-dir-sluice/x.gguf");
}

static int cancel_after_first(void *ud, uint64_t done, uint64_t total)
{
    int *calls = ud;
    (*calls)++;
    return done < total; /* cancel unless this chunk finished the model */
}

TEST(cancel_removes_partial_file)
{
    sl_synth_config c;
    sl_err err = {0};
    char path[512];
    t_path(path, sizeof path, "cancel.gguf");
    CHECK(!sl_synth_config_init(&c, "qwen3moe", "tiny", &err));
    c.threads = 2;
    int calls = 0;
    CHECK(sl_synth_write(&c, path, cancel_after_first, &calls, NULL, &err) != SL_OK);
    CHECK_STR_CONTAINS(err.msg, "cancelled");
    CHECK_EQ_INT(calls, 1);
    struct stat st;
    CHECK_MSG(stat(path, &st) != 0, "partial file left behind");
}

TEST(stats_report_sizes)
{
    /* qwen3moe tiny f32 holds 189824 weights (hand count):
     *   token_embd + output 2 x 64 x 512 = 65536, output_norm 64,
     *   per layer: norms 64 + 64 + 16 + 16, q 4096, k 2048, v 2048, o 4096,
     *   router 512, experts 3 x 64 x 32 x 8 = 49152 -> 62112, x 2 layers.
     * So 759296 data bytes; the file adds the header (metadata, tokenizer)
     * and alignment padding. */
    sl_synth_config c;
    sl_err err = {0};
    char path[512];
    t_path(path, sizeof path, "stats.gguf");
    CHECK(!sl_synth_config_init(&c, "qwen3moe", "tiny", &err));
    sl_synth_stats st;
    CHECK(!sl_synth_write(&c, path, NULL, NULL, &st, &err));
    CHECK_EQ_INT(st.n_tensors, 27);
    CHECK_EQ_INT(st.data_bytes, 759296);
    CHECK_EQ_INT(st.n_fallback, 0);
    CHECK(st.file_bytes > st.data_bytes && st.file_bytes < st.data_bytes + 64 * 1024);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && (uint64_t)sb.st_size == st.file_bytes);
    remove(path);
}


/* ---- qwen35moe ------------------------------------------------------------ */

/* tiny qwen35moe, by hand from the brief and ARCHS.md section 1: 4 layers,
 * full_attention_interval 2 (layers 1 and 3 full attention, 0 and 2 gated
 * DeltaNet), E 64, 4 heads of 16 with 2 kv heads, rope 16/4 = 4 dims, ssm
 * K 4, ds 16, nk 2, nv 4: kd = 32, vd = 64, C = 2*32 + 64 = 128; 8 experts
 * of 32 top-2, shared expert 64. */
static const exp_tensor q35_linear[] = {
    {"attn_norm.weight", 1, 0, 1, {64, 1, 1}},
    {"attn_qkv.weight", 1, 0, 2, {64, 128, 1}},
    {"attn_gate.weight", 1, 0, 2, {64, 64, 1}},
    {"ssm_conv1d.weight", 1, 0, 2, {4, 128, 1}},
    {"ssm_dt.bias", 1, 0, 1, {4, 1, 1}},
    {"ssm_a", 1, 0, 1, {4, 1, 1}},
    {"ssm_beta.weight", 1, 0, 2, {64, 4, 1}},
    {"ssm_alpha.weight", 1, 0, 2, {64, 4, 1}},
    {"ssm_norm.weight", 1, 0, 1, {16, 1, 1}},
    {"ssm_out.weight", 1, 0, 2, {64, 64, 1}},
};
static const exp_tensor q35_full[] = {
    {"attn_norm.weight", 1, 0, 1, {64, 1, 1}},
    {"attn_q.weight", 1, 0, 2, {64, 128, 1}}, /* 2 x 4 heads x 16: query | gate */
    {"attn_k.weight", 1, 0, 2, {64, 32, 1}},
    {"attn_v.weight", 1, 0, 2, {64, 32, 1}},
    {"attn_output.weight", 1, 0, 2, {64, 64, 1}},
    {"attn_q_norm.weight", 1, 0, 1, {16, 1, 1}},
    {"attn_k_norm.weight", 1, 0, 1, {16, 1, 1}},
};
static const exp_tensor q35_ffn[] = {
    {"post_attention_norm.weight", 1, 0, 1, {64, 1, 1}},
    {"ffn_gate_inp.weight", 1, 0, 2, {64, 8, 1}},
    {"ffn_gate_exps.weight", 1, 0, 3, {64, 32, 8}},
    {"ffn_up_exps.weight", 1, 0, 3, {64, 32, 8}},
    {"ffn_down_exps.weight", 1, 0, 3, {32, 64, 8}},
    {"ffn_gate_inp_shexp.weight", 1, 0, 1, {64, 1, 1}},
    {"ffn_gate_shexp.weight", 1, 0, 2, {64, 64, 1}},
    {"ffn_up_shexp.weight", 1, 0, 2, {64, 64, 1}},
    {"ffn_down_shexp.weight", 1, 0, 2, {64, 64, 1}},
};

static size_t check_tensors(const sl_gguf *g, int layer, const exp_tensor *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char name[96];
        if (layer >= 0)
            snprintf(name, sizeof name, "blk.%d.%s", layer, e[i].name);
        else
            snprintf(name, sizeof name, "%s", e[i].name);
        const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
        CHECK_MSG(t != NULL, "qwen35moe: tensor %s missing", name);
        if (!t) continue;
        CHECK_MSG(t->n_dims == e[i].n_dims, "%s has %u dims", name, t->n_dims);
        for (int d = 0; d < 3; d++)
            CHECK_MSG(t->ne[d] == e[i].ne[d], "%s ne[%d] = %llu, want %llu", name, d,
                      (unsigned long long)t->ne[d], (unsigned long long)e[i].ne[d]);
    }
    return n;
}

TEST(qwen35moe_tiny_tensors_and_keys)
{
    char path[512];
    if (write_model("qwen35moe", "tiny", SL_SYNTH_F32, 1, 2, "q35-tiny.gguf", path, sizeof path)) {
        CHECK_MSG(0, "could not write qwen35moe tiny");
        return;
    }
    sl_gguf *g = open_model(path);
    CHECK(g != NULL);
    if (!g) return;
    static const exp_tensor globals[] = {
        {"token_embd.weight", 0, 0, 2, {64, 512, 1}},
        {"output_norm.weight", 0, 0, 1, {64, 1, 1}},
        {"output.weight", 0, 0, 2, {64, 512, 1}},
    };
    size_t expected = check_tensors(g, -1, globals, 3);
    for (int l = 0; l < 4; l++) {
        if (l % 2 == 0) {
            expected += check_tensors(g, l, q35_linear, sizeof q35_linear / sizeof q35_linear[0]);
            char name[64];
            snprintf(name, sizeof name, "blk.%d.attn_q.weight", l);
            CHECK_MSG(!sl_gguf_find_tensor(g, name), "linear layer %d has %s", l, name);
        } else {
            expected += check_tensors(g, l, q35_full, sizeof q35_full / sizeof q35_full[0]);
            char name[64];
            snprintf(name, sizeof name, "blk.%d.ssm_a", l);
            CHECK_MSG(!sl_gguf_find_tensor(g, name), "full layer %d has %s", l, name);
        }
        expected += check_tensors(g, l, q35_ffn, sizeof q35_ffn / sizeof q35_ffn[0]);
    }
    CHECK_EQ_INT(expected, 73); /* as many as llama.cpp's 4-layer reference file */
    CHECK_EQ_INT(sl_gguf_tensor_count(g), expected);

    const char *arch = sl_gguf_get_str(g, "general.architecture");
    CHECK(arch && !strcmp(arch, "qwen35moe"));
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "block_count"), 4);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "embedding_length"), 64);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "attention.head_count"), 4);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "attention.head_count_kv"), 2);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "attention.key_length"), 16);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "attention.value_length"), 16);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "rope.dimension_count"), 4);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "ssm.conv_kernel"), 4);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "ssm.state_size"), 16);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "ssm.group_count"), 2);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "ssm.time_step_rank"), 4);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "ssm.inner_size"), 64);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "full_attention_interval"), 2);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "expert_count"), 8);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "expert_used_count"), 2);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "expert_feed_forward_length"), 32);
    CHECK_EQ_INT(u32_key(g, "qwen35moe", "expert_shared_feed_forward_length"), 64);
    /* llama.cpp hard-codes the renormalisation and reads no such key. */
    CHECK(!sl_gguf_find(g, "qwen35moe.expert_weights_norm"));
    /* rope.dimension_sections: 4 int32 summing to n_rot/2 = 2 pairs. */
    const sl_gguf_array *sec = sl_gguf_get_arr(g, "qwen35moe.rope.dimension_sections");
    CHECK(sec != NULL);
    if (sec) {
        CHECK_EQ_INT(sec->type, SL_GGUF_INT32);
        CHECK_EQ_INT(sec->n, 4);
        int64_t sum = 0, v = 0;
        for (uint64_t i = 0; i < sec->n; i++) {
            CHECK(sl_gguf_arr_i64(sec, i, &v) && v >= 0);
            sum += v;
        }
        CHECK_EQ_INT(sum, 2);
    }

    /* ssm_a = -exp(A_log): strictly negative, of moderate size; the dt bias
     * near 0; conv weights std 1/sqrt(K) = 0.5 over the 2 x 4 x 128 taps. */
    for (int l = 0; l < 4; l += 2) {
        char name[64];
        uint64_t n = 0;
        snprintf(name, sizeof name, "blk.%d.ssm_a", l);
        float *a = read_f32(g, name, &n);
        CHECK(a && n == 4);
        for (uint64_t i = 0; a && i < n; i++)
            CHECK_MSG(a[i] < 0 && a[i] > -20, "%s[%llu] = %g", name, (unsigned long long)i, a[i]);
        free(a);
        snprintf(name, sizeof name, "blk.%d.ssm_dt.bias", l);
        float *dt = read_f32(g, name, &n);
        CHECK(dt && n == 4);
        for (uint64_t i = 0; dt && i < n; i++) CHECK_MSG(fabsf(dt[i]) < 3, "%s = %g", name, dt[i]);
        free(dt);
        snprintf(name, sizeof name, "blk.%d.ssm_conv1d.weight", l);
        float *cw = read_f32(g, name, &n);
        CHECK(cw && n == 512);
        if (cw) {
            double m, sd;
            mean_std(cw, n, &m, &sd);
            CHECK_MSG(fabs(sd - 0.5) < 0.1 && fabs(m) < 0.15, "%s mean %g std %g", name, m, sd);
        }
        free(cw);
    }
    sl_gguf_close(g);
    remove(path);
}

TEST(qwen35moe_every_type)
{
    /* Norms, biases, ssm_a, ssm_dt, routers and ssm_conv1d stay F32 at every
     * type; every other tensor takes the type asked for (tiny-k: all rows a
     * multiple of 256) - q4_k_m: attn_qkv Q5_K, output Q6_K. */
    static const struct { sl_synth_type t; sl_type want; } cases[] = {
        {SL_SYNTH_F32, SL_TYPE_F32},   {SL_SYNTH_F16, SL_TYPE_F16},   {SL_SYNTH_Q8_0, SL_TYPE_Q8_0},
        {SL_SYNTH_Q4_0, SL_TYPE_Q4_0}, {SL_SYNTH_Q4_K, SL_TYPE_Q4_K}, {SL_SYNTH_Q5_K, SL_TYPE_Q5_K},
        {SL_SYNTH_Q6_K, SL_TYPE_Q6_K}, {SL_SYNTH_Q4_K_M, SL_TYPE_Q4_K},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512], fname[64];
        snprintf(fname, sizeof fname, "q35-%d.gguf", (int)cases[i].t);
        if (write_model("qwen35moe", "tiny-k", cases[i].t, 3, 2, fname, path, sizeof path)) {
            CHECK_MSG(0, "could not write qwen35moe tiny-k %s", sl_synth_type_name(cases[i].t));
            continue;
        }
        sl_gguf *g = open_model(path);
        CHECK(g != NULL);
        for (uint64_t k = 0; g && k < sl_gguf_tensor_count(g); k++) {
            const sl_gguf_tensor *t = sl_gguf_tensor_at(g, k);
            const char *nm = t->name.ptr;
            bool keep_f32 = t->n_dims == 1 || strstr(nm, "ssm_conv1d") || strstr(nm, "ffn_gate_inp.");
            sl_type want = keep_f32 ? SL_TYPE_F32 : cases[i].want;
            if (cases[i].t == SL_SYNTH_Q4_K_M && !keep_f32) {
                if (strstr(nm, "attn_qkv")) want = SL_TYPE_Q5_K;
                if (!strcmp(nm, "output.weight")) want = SL_TYPE_Q6_K;
                if (strstr(nm, "attn_v.") || strstr(nm, "ffn_down")) want = t->type; /* layer rule */
            }
            CHECK_MSG(t->type == want, "%s at %s: %s, want %s", nm,
                      sl_synth_type_name(cases[i].t), sl_type_name(t->type), sl_type_name(want));
        }
        /* the values survive: ssm_a stays negative at every type */
        uint64_t n = 0;
        float *a = g ? read_f32(g, "blk.0.ssm_a", &n) : NULL;
        CHECK(a && n == 4);
        for (uint64_t j = 0; a && j < n; j++) CHECK(a[j] < 0);
        free(a);
        sl_gguf_close(g);
        remove(path);
    }
}

TEST(qwen35moe_35b_a3b_shapes)
{
    /* Qwen3.6-35B-A3B's published dimensions; the plan only, no file. */
    sl_synth_config c;
    sl_err err = {0};
    CHECK(!sl_synth_config_init(&c, "qwen35moe", "35b-a3b", &err));
    CHECK_EQ_INT(c.n_layer, 40);
    CHECK_EQ_INT(c.n_embd, 2048);
    CHECK_EQ_INT(c.n_head, 16);
    CHECK_EQ_INT(c.n_head_kv, 2);
    CHECK_EQ_INT(c.head_dim, 256);
    CHECK_EQ_INT(c.rope_dim, 64);
    CHECK_EQ_INT(c.full_attn_interval, 4);
    CHECK_EQ_INT(c.ssm_conv_kernel, 4);
    CHECK_EQ_INT(c.ssm_state, 128);
    CHECK_EQ_INT(c.ssm_groups, 16);
    CHECK_EQ_INT(c.ssm_v_heads, 32);
    CHECK_EQ_INT(c.n_expert, 256);
    CHECK_EQ_INT(c.n_expert_used, 8);
    CHECK_EQ_INT(c.n_ff_exp, 512);
    CHECK_EQ_INT(c.n_ff_shexp, 512);
    CHECK_EQ_INT(c.n_vocab, 248320);
    int32_t sec[4];
    sl_synth_rope_sections(&c, sec);
    CHECK(sec[0] == 11 && sec[1] == 11 && sec[2] == 10 && sec[3] == 0); /* converter default */
    c.n_layer = 8;
    CHECK(!sl_synth_config_validate(&c, &err));
    sl_synth_tensor *ts = NULL;
    size_t nt = 0;
    CHECK(!sl_synth_plan_build(&c, &ts, &nt, &err));
    /* per 4 layers: 3 x 19 + 16; plus 3 global */
    CHECK_EQ_INT(nt, 2 * (3 * 19 + 16) + 3);
    static const struct { const char *name; uint64_t ne0, ne1, ne2; } want[] = {
        {"blk.0.attn_qkv.weight", 2048, 8192, 1},   /* 2 x 16 x 128 + 32 x 128 */
        {"blk.0.attn_gate.weight", 2048, 4096, 1},
        {"blk.0.ssm_conv1d.weight", 4, 8192, 1},
        {"blk.0.ssm_a", 32, 1, 1},
        {"blk.0.ssm_beta.weight", 2048, 32, 1},
        {"blk.0.ssm_norm.weight", 128, 1, 1},
        {"blk.0.ssm_out.weight", 4096, 2048, 1},
        {"blk.3.attn_q.weight", 2048, 8192, 1},     /* 2 x 16 x 256 */
        {"blk.3.attn_k.weight", 2048, 512, 1},
        {"blk.3.attn_output.weight", 4096, 2048, 1},
        {"blk.3.attn_q_norm.weight", 256, 1, 1},
        {"blk.7.ffn_gate_exps.weight", 2048, 512, 256},
        {"blk.7.ffn_down_exps.weight", 512, 2048, 256},
        {"blk.7.ffn_gate_inp_shexp.weight", 2048, 1, 1},
        {"blk.7.ffn_down_shexp.weight", 512, 2048, 1},
        {"token_embd.weight", 2048, 248320, 1},
    };
    for (size_t i = 0; ts && i < sizeof want / sizeof want[0]; i++) {
        const sl_synth_tensor *t = NULL;
        for (size_t j = 0; j < nt; j++)
            if (!strcmp(ts[j].name, want[i].name)) t = &ts[j];
        CHECK_MSG(t != NULL, "%s missing", want[i].name);
        if (t)
            CHECK_MSG(t->ne[0] == want[i].ne0 && t->ne[1] == want[i].ne1 && t->ne[2] == want[i].ne2,
                      "%s: %llu x %llu x %llu", want[i].name, (unsigned long long)t->ne[0],
                      (unsigned long long)t->ne[1], (unsigned long long)t->ne[2]);
    }
    free(ts);
    /* nv must be a multiple of nk (tiled q/k-to-v head mapping) */
    c.ssm_v_heads = 24;
    c.ssm_groups = 16;
    CHECK(sl_synth_config_validate(&c, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "not a multiple");
}

/* gpt-oss (ARCHS.md section 2): sinks, q/k/v/o, router and per-expert
 * biases, the FFN pre-norm named post_attention_norm; mxfp4 puts the
 * experts in MXFP4 and every other matrix in Q8_0 as llama-quantize's
 * MXFP4_MOE does; the head stays untied. */
TEST(gptoss_plan)
{
    sl_synth_config c;
    sl_err err = {0};
    CHECK(sl_synth_config_init(&c, "gpt-oss", "tiny", &err) == SL_OK);
    CHECK(c.n_swa == 8 && c.swa_period == 2);
    c.type = SL_SYNTH_MXFP4;
    CHECK(sl_synth_config_validate(&c, &err) == SL_OK);
    sl_synth_tensor *t = NULL;
    size_t n = 0;
    CHECK(sl_synth_plan_build(&c, &t, &n, &err) == SL_OK);
    int sinks = 0, exp_bias = 0, mx = 0, q8 = 0, output = 0;
    for (size_t i = 0; i < n; i++) {
        if (strstr(t[i].name, "attn_sinks.weight")) {
            sinks++;
            CHECK(t[i].ne[0] == c.n_head && t[i].type == SL_TYPE_F32);
        }
        if (strstr(t[i].name, "_exps.bias")) {
            exp_bias++;
            CHECK(t[i].n_dims == 2 && t[i].ne[1] == c.n_expert && t[i].type == SL_TYPE_F32);
        }
        if (strstr(t[i].name, "_exps.weight")) mx += t[i].type == SL_TYPE_MXFP4;
        if (strstr(t[i].name, "attn_q.weight")) q8 += t[i].type == SL_TYPE_Q8_0;
        if (!strcmp(t[i].name, "output.weight")) output++;
        CHECK(!strstr(t[i].name, "ffn_norm"));
    }
    CHECK(sinks == (int)c.n_layer && exp_bias == 3 * (int)c.n_layer);
    CHECK(mx == 3 * (int)c.n_layer && q8 == (int)c.n_layer && output == 1);
    free(t);
    CHECK(sl_synth_file_type(SL_SYNTH_MXFP4) == 38);
    c.tied = true;
    CHECK(sl_synth_config_validate(&c, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "untied");
    c.tied = false;
    c.n_layer = 1;
    CHECK(sl_synth_config_validate(&c, &err) == SL_EINVAL);
    CHECK(sl_synth_config_init(&c, "gpt-oss", "120b", &err) == SL_OK);
    CHECK(c.n_layer == 36 && c.n_expert == 128 && c.n_expert_used == 4 && c.n_swa == 128);
}

int main(void)
{
    RUN(every_arch_tiny_has_expected_tensors_and_hparams);
    RUN(tied_omits_output);
    RUN(q4_k_m_types_in_file);
    RUN(q4_k_m_layer_rule);
    RUN(fallback_when_rows_do_not_fit);
    RUN(deterministic_across_threads_and_seeds);
    RUN(deterministic_with_multi_chunk_tensors);
    RUN(generation_identical_on_both_paths);
    RUN(same_weights_at_every_type);
    RUN(weight_statistics);
    RUN(routing_varies_between_tokens);
    RUN(tokenizer_metadata);
    RUN(larger_vocab_gets_pads);
    RUN(config_errors_are_clear);
    RUN(gptoss_plan);
    RUN(unwritable_path_fails_cleanly);
    RUN(cancel_removes_partial_file);
    RUN(stats_report_sizes);
    RUN(qwen35moe_tiny_tensors_and_keys);
    RUN(qwen35moe_every_type);
    RUN(qwen35moe_35b_a3b_shapes);
    return TEST_REPORT();
}
