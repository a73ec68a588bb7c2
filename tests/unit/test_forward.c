/* test_forward.c - the engine against the reference forward pass.
 *
 * For every architecture and weight type, a tiny generated model is run by
 * the engine and by tests/common/ref_forward.c (f32 weights dequantised up
 * front, textbook loops in double). The logits must agree within a
 * tolerance stated per type, and the argmax must agree wherever the
 * reference's top two are further apart than that tolerance. Positions
 * from the first near-tie in routing on (the reference's last chosen and
 * first rejected expert within 1e-3 in router logit) are not compared: a
 * routing decision that close is flipped by any rounding, and the flip
 * propagates to later positions through the KV cache. Both sides round
 * activations through the weight type's activation format (Q8_0 / Q8_K),
 * so what remains is float summation order (~1e-7 relative) and, now and
 * then, an activation that lands on the other side of a rounding step
 * (measured up to 1.6e-2 relative on one logit), hence the wider bound for
 * quantised types. A real bug (a wrong rope, norm or expert) moves every
 * logit by O(1). The KV cache is f32 here (f16 separately below). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/ref_forward.h"
#include "common/ref_qwen35.h"
#include "common/retype.h"
#include "common/testutil.h"
#include "engine/session.h"
#include "synth/synth.h"
#include "sluice.h"
#include "test.h"

#define N_TOK 12

static const int32_t prompt[N_TOK] = {1, 72, 101, 108, 108, 111, 300, 44, 32, 119, 260, 33};

#define NEAR_TIE 1e-3f

typedef struct result {
    double max_abs;   /* max |engine - ref| over compared logits */
    double scale;     /* max |ref| */
    int argmax_mismatch;
    int compared;     /* positions compared (before the first near-tie) */
} result;

/* Writes the generated model c to <tmpdir>/<name>.gguf, path in path. */
static int write_model(char *path, size_t cap, const char *name, const sl_synth_config *c)
{
    sl_err err;
    char file[128];
    snprintf(file, sizeof file, "%s.gguf", name);
    t_path(path, cap, file);
    if (sl_synth_config_validate(c, &err) || sl_synth_write(c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel %s: %s\n", name, err.msg);
        return -1;
    }
    return 0;
}

static int make_model(char *path, size_t cap, const char *arch, const char *type, int tied)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, arch, "tiny", &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        return -1;
    }
    if (!sl_synth_type_from_name(type, &c.type)) return -1;
    c.tied = tied;
    c.seed = 7;
    /* rows of 256 so the K-quants are real, not a fallback to q8_0 */
    c.n_embd = 256;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.head_dim = 64;
    c.n_ff = 256;
    c.n_ff_exp = 256;
    if (c.n_ff_shexp) c.n_ff_shexp = 256;
    char name[96];
    snprintf(name, sizeof name, "%s-%s%s", arch, type, tied ? "-tied" : "");
    return write_model(path, cap, name, &c);
}

static int argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Runs the engine on prompt, all logits kept; returns malloc'ed logits. */
static float *engine_logits(const char *path, int threads, sl_kv_type kv, int batch)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = threads;
    sl_model *m;
    sl_err err;
    if (sl_model_load(&m, path, &mp, &err)) {
        fprintf(stderr, "  load %s: %s\n", path, err.msg);
        return NULL;
    }
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.type_k = sp.type_v = (int)kv;
    sp.all_logits = true;
    sp.n_batch_max = N_TOK;
    float *out = t_session_logits(m, &sp, prompt, N_TOK, batch, -1);
    sl_model_free(m);
    return out;
}

static int compare(const char *path, sl_kv_type kv, double rel_tol, result *r)
{
    char eb[256];
    ref_model *ref = ref_model_load(path, eb, sizeof eb);
    if (!ref) {
        fprintf(stderr, "  %s\n", eb);
        return -1;
    }
    const int V = ref_model_n_vocab(ref);
    float *want = malloc(sizeof(float) * (size_t)V * N_TOK);
    float margin[N_TOK];
    int rc = ref_forward(ref, prompt, N_TOK, want, margin);
    ref_model_free(ref);
    float *got = engine_logits(path, 2, kv, 5);
    if (rc || !got) {
        free(want);
        free(got);
        return -1;
    }
    memset(r, 0, sizeof *r);
    while (r->compared < N_TOK && margin[r->compared] >= NEAR_TIE) r->compared++;
    for (size_t i = 0; i < (size_t)V * r->compared; i++) {
        r->max_abs = fmax(r->max_abs, fabs((double)got[i] - want[i]));
        r->scale = fmax(r->scale, fabs((double)want[i]));
    }
    const double tol = rel_tol * r->scale;
    for (int p = 0; p < r->compared; p++) {
        const float *w = want + (size_t)p * V, *g = got + (size_t)p * V;
        int a = argmax(w, V), b = argmax(g, V);
        if (a == b) continue;
        /* a near-tie in the reference may flip: only a gap above tol counts */
        if (w[a] - w[b] > tol) r->argmax_mismatch++;
    }
    free(want);
    free(got);
    return 0;
}

static const char *archs[] = {"qwen3moe", "qwen2moe", "mixtral", "llama", "olmoe", "qwen3", "qwen2"};

typedef struct type_tol {
    const char *type;
    double rel_tol; /* of max |logit| */
} type_tol;

static const type_tol types[] = {
    /* measured worst cases (closing note of issue 3): f32 ~1e-6, quantised
       ~1e-7 typically and 1.6e-2 where one activation rounds the other way;
       f16 weights take f16-rounded activations (llama.cpp's rule, issue 11),
       so an activation may round the other way there too: 2.2e-3 measured */
    {"f32", 1e-5}, {"f16", 1e-2}, {"q8_0", 5e-2}, {"q4_k", 5e-2}, {"q6_k", 5e-2},
};

TEST(engine_matches_reference_every_arch_and_type)
{
    int total_compared = 0, total = 0;
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            char path[512];
            if (make_model(path, sizeof path, archs[a], types[t].type, 0)) {
                CHECK_MSG(0, "could not generate %s %s", archs[a], types[t].type);
                continue;
            }
            result r;
            if (compare(path, SL_KV_F32, types[t].rel_tol, &r)) {
                CHECK_MSG(0, "could not run %s %s", archs[a], types[t].type);
                continue;
            }
            printf("   %-9s %-5s max|dlogit| %.2e of max|logit| %.2f (rel %.2e), "
                   "argmax mismatches %d, positions compared %d/%d\n",
                   archs[a], types[t].type, r.max_abs, r.scale, r.max_abs / r.scale,
                   r.argmax_mismatch, r.compared, N_TOK);
            total_compared += r.compared;
            CHECK_MSG(r.max_abs <= types[t].rel_tol * r.scale, "%s %s: %.3g > %.3g", archs[a],
                      types[t].type, r.max_abs, types[t].rel_tol * r.scale);
            CHECK_EQ_INT(r.argmax_mismatch, 0);
            total += N_TOK;
        }
    }
    /* near-ties must stay rare, or the test would compare nothing */
    CHECK_MSG(total_compared * 4 >= total * 3, "only %d of %d positions compared",
              total_compared, total);
}

TEST(f16_kv_cache_stays_close)
{
    char path[512];
    CHECK(make_model(path, sizeof path, "qwen3moe", "f32", 0) == 0);
    result r;
    CHECK(compare(path, SL_KV_F16, 1e-2, &r) == 0);
    CHECK_MSG(r.max_abs <= 1e-2 * r.scale, "%.3g vs scale %.3g", r.max_abs, r.scale);
    CHECK_EQ_INT(r.argmax_mismatch, 0);
}

TEST(tied_output_head)
{
    char path[512];
    CHECK(make_model(path, sizeof path, "qwen3moe", "f32", 1) == 0);
    result r;
    CHECK(compare(path, SL_KV_F32, 1e-5, &r) == 0);
    CHECK(r.max_abs <= 1e-5 * r.scale);
}

/* Real quantised files mix types; when an expert's gate and up take
 * different activation formats (here Q8_0 and Q8_K), the engine prepares
 * the layer's inputs once per format. Also up in Q4_K, down in Q6_K and
 * q/k/v mixed, as llama.cpp's q4_k_m does to some layers. */
TEST(experts_and_attention_with_mixed_types)
{
    char base[512], mixed[512], mixed2[512];
    CHECK(make_model(base, sizeof base, "qwen3moe", "q8_0", 0) == 0);
    t_path(mixed, sizeof mixed, "qwen3moe-mixed-up.gguf");
    t_path(mixed2, sizeof mixed2, "qwen3moe-mixed-up-down-v.gguf");
    CHECK(t_gguf_retype(base, mixed, "ffn_up_exps", SL_TYPE_Q4_K) == 0);
    CHECK(t_gguf_retype(mixed, mixed2, "ffn_down_exps", SL_TYPE_Q6_K) == 0);
    CHECK(t_gguf_retype(mixed2, mixed, "attn_v", SL_TYPE_Q4_K) == 0);
    result r;
    CHECK(compare(mixed, SL_KV_F32, 5e-2, &r) == 0);
    printf("   mixed q8_0/q4_k/q6_k: max|dlogit| %.2e of %.2f, argmax mismatches %d, "
           "positions %d/%d\n", r.max_abs, r.scale, r.argmax_mismatch, r.compared, N_TOK);
    CHECK(r.compared >= N_TOK / 2);
    CHECK_MSG(r.max_abs <= 5e-2 * r.scale, "%.3g vs scale %.3g", r.max_abs, r.scale);
    CHECK_EQ_INT(r.argmax_mismatch, 0);
}

/* Shapes at the edges of what the loader accepts, each once a heap
 * overflow (issue 10, D1): a matrix of one output row reads a full input
 * row like any other, so every buffer of prepared inputs must count it.
 * Each model runs in batches of 5 (several tokens per product) and must
 * match the reference. */
typedef struct edge_case {
    const char *name;
    const char *arch;
    const char *type;
    uint32_t n_embd, n_head, n_head_kv, head_dim, n_ff, n_expert, n_expert_used, n_ff_exp,
        n_ff_shexp;
    double rel_tol;
} edge_case;

static const edge_case edges[] = {
    /* one expert, every token routed to it: the f32 router [n_embd, 1]
     * beside q8_0 experts (the llama.cpp file of the issue) */
    {"one-expert-q8_0", "mixtral", "q8_0", 256, 4, 2, 64, 0, 1, 1, 256, 0, 5e-2},
    /* n_embd 1: the attention output and the down projections have one row */
    {"embd-1", "llama", "f32", 1, 1, 1, 2, 8, 0, 0, 0, 0, 1e-5},
    /* dense FFN of width 1: gate and up have one row */
    {"ffn-1", "llama", "f32", 64, 2, 1, 32, 1, 0, 0, 0, 0, 1e-5},
    /* experts and shared expert of width 1, top-k = expert count */
    {"expert-1-shared-1", "qwen2moe", "f32", 64, 2, 2, 32, 0, 4, 4, 1, 1, 1e-5},
    /* expert width 1 with q8_0 elsewhere */
    {"expert-1-q8_0", "mixtral", "q8_0", 64, 2, 1, 32, 0, 3, 2, 1, 0, 5e-2},
};

TEST(edge_shapes_match_reference)
{
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        const edge_case *e = &edges[i];
        sl_synth_config c;
        sl_err err;
        CHECK(sl_synth_config_init(&c, e->arch, "tiny", &err) == 0);
        CHECK(sl_synth_type_from_name(e->type, &c.type));
        c.seed = 11;
        c.n_embd = e->n_embd;
        c.n_head = e->n_head;
        c.n_head_kv = e->n_head_kv;
        c.head_dim = e->head_dim;
        if (e->n_ff) c.n_ff = e->n_ff;
        if (e->n_expert) {
            c.moe = true;
            c.n_expert = e->n_expert;
            c.n_expert_used = e->n_expert_used;
            c.n_ff_exp = e->n_ff_exp;
        }
        if (e->n_ff_shexp) c.n_ff_shexp = e->n_ff_shexp;
        char path[512];
        if (write_model(path, sizeof path, e->name, &c)) {
            CHECK_MSG(0, "could not generate %s", e->name);
            continue;
        }
        result r;
        if (compare(path, SL_KV_F32, e->rel_tol, &r)) {
            CHECK_MSG(0, "could not run %s", e->name);
            continue;
        }
        printf("   %-18s max|dlogit| %.2e of %.2f, positions %d/%d\n", e->name, r.max_abs,
               r.scale, r.compared, N_TOK);
        CHECK_MSG(r.compared >= N_TOK / 2, "%s: %d positions compared", e->name, r.compared);
        CHECK_MSG(r.max_abs <= e->rel_tol * r.scale, "%s: %.3g > %.3g", e->name, r.max_abs,
                  e->rel_tol * r.scale);
        CHECK_EQ_INT(r.argmax_mismatch, 0);
    }
}

/* Last-token logits of a 128-token batch of ids 3..130, threads threads;
 * malloc'ed, or NULL. */
static float *last_logits_of_wide_batch(const char *path, int threads)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = threads;
    sl_model *m;
    sl_err err;
    if (sl_model_load(&m, path, &mp, &err)) return NULL;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 128;
    sp.n_batch_max = 128;
    sl_session *s;
    float *out = NULL;
    if (!sl_session_create(&s, m, &sp, &err)) {
        int32_t toks[128];
        for (int i = 0; i < 128; i++) toks[i] = 3 + i;
        const size_t V = (size_t)sl_model_n_vocab(m);
        if (!sl_session_eval(s, toks, 128, &err) && (out = malloc(V * sizeof *out)))
            memcpy(out, sl_session_logits(s), V * sizeof *out);
        sl_session_free(s);
    }
    sl_model_free(m);
    return out;
}

/* A batch whose tokens reach more than 512 experts of 2048 rows asks one
 * pool job for more chunks than the pool takes (issue 10, D3: an
 * assertion with 2+ threads). The job is now scaled down, and chunking
 * changes no bit: two threads give the single thread's logits. */
TEST(batch_touching_many_wide_experts)
{
    sl_synth_config c;
    sl_err err;
    CHECK(sl_synth_config_init(&c, "mixtral", "tiny", &err) == 0);
    c.type = SL_SYNTH_Q4_0;
    c.n_layer = 1;
    c.n_embd = 32;
    c.n_head = 1;
    c.n_head_kv = 1;
    c.head_dim = 32;
    c.n_expert = 1024; /* 128 tokens x top-32 reach more than 512 of them */
    c.n_expert_used = 32;
    c.n_ff_exp = 2048;
    c.seed = 5;
    char path[512];
    CHECK(write_model(path, sizeof path, "wide-experts", &c) == 0);
    float *one = last_logits_of_wide_batch(path, 1);
    float *two = last_logits_of_wide_batch(path, 2);
    CHECK(one && two);
    if (one && two) CHECK(memcmp(one, two, sizeof(float) * (size_t)c.n_vocab) == 0);
    free(one);
    free(two);
}

/* qwen35moe (issue 12): generated hybrid models (gated DeltaNet + gated
 * attention, 4 layers) against the independent reference pass of
 * tests/common/ref_qwen35.c, f32 and q8_0, the prompt in batches of 5 (the
 * recurrent state carried across evals); and batches of 1, 5 and 12 give
 * the same bits. */
TEST(qwen35moe_matches_reference)
{
    const struct {
        const char *type;
        double tol;
    } cases[] = {{"f32", 1e-5}, {"q8_0", 5e-2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_synth_config c;
        sl_err err;
        CHECK(sl_synth_config_init(&c, "qwen35moe", "tiny", &err) == 0);
        CHECK(sl_synth_type_from_name(cases[i].type, &c.type));
        c.seed = 23;
        char path[512], name[64];
        snprintf(name, sizeof name, "qwen35moe-%s", cases[i].type);
        if (write_model(path, sizeof path, name, &c)) {
            CHECK_MSG(0, "could not generate %s", name);
            continue;
        }
        char eb[256];
        ref_q35 *ref = ref_q35_load(path, eb, sizeof eb);
        CHECK_MSG(ref != NULL, "%s", eb);
        if (!ref) continue;
        const int V = ref_q35_n_vocab(ref);
        float *want = malloc(sizeof(float) * (size_t)V * N_TOK);
        float margin[N_TOK];
        CHECK(ref_q35_forward(ref, prompt, N_TOK, want, margin) == 0);
        ref_q35_free(ref);
        float *got = engine_logits(path, 2, SL_KV_F32, 5);
        float *one = engine_logits(path, 1, SL_KV_F32, 1);
        float *all = engine_logits(path, 2, SL_KV_F32, N_TOK);
        CHECK(got && one && all);
        if (got && one && all) {
            int compared = 0;
            while (compared < N_TOK && margin[compared] >= NEAR_TIE) compared++;
            double max_abs = 0, scale = 0;
            for (size_t k = 0; k < (size_t)V * (size_t)compared; k++) {
                max_abs = fmax(max_abs, fabs((double)got[k] - want[k]));
                scale = fmax(scale, fabs((double)want[k]));
            }
            printf("   %-15s max|dlogit| %.2e of %.2f, positions %d/%d\n", name, max_abs, scale,
                   compared, N_TOK);
            CHECK_MSG(compared >= N_TOK / 2, "%s: %d positions compared", name, compared);
            CHECK_MSG(max_abs <= cases[i].tol * scale, "%s: %.3g > %.3g", name, max_abs,
                      cases[i].tol * scale);
            const size_t bytes = sizeof(float) * (size_t)V * N_TOK;
            CHECK(memcmp(got, one, bytes) == 0);
            CHECK(memcmp(got, all, bytes) == 0);
        }
        free(want);
        free(got);
        free(one);
        free(all);
    }
}

TEST(threads_and_batching_do_not_change_bits)
{
    char path[512];
    CHECK(make_model(path, sizeof path, "qwen3moe", "q4_k", 0) == 0);
    float *a = engine_logits(path, 1, SL_KV_F16, 1);
    float *b = engine_logits(path, 2, SL_KV_F16, N_TOK);
    float *c = engine_logits(path, 3, SL_KV_F16, 4);
    CHECK(a && b && c);
    if (a && b && c) {
        sl_err err;
        sl_model *m;
        CHECK(sl_model_load(&m, path, NULL, &err) == 0);
        size_t n = (size_t)sl_model_n_vocab(m) * N_TOK;
        sl_model_free(m);
        CHECK(memcmp(a, b, n * sizeof(float)) == 0);
        CHECK(memcmp(a, c, n * sizeof(float)) == 0);
    }
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    RUN(engine_matches_reference_every_arch_and_type);
    RUN(f16_kv_cache_stays_close);
    RUN(tied_output_head);
    RUN(experts_and_attention_with_mixed_types);
    RUN(edge_shapes_match_reference);
    RUN(batch_touching_many_wide_experts);
    RUN(qwen35moe_matches_reference);
    RUN(threads_and_batching_do_not_change_bits);
    return TEST_REPORT();
}
