/* test_deepseek2.c - deepseek2 (MLA) and glm4moe on generated models
 * (synth_ds.h): the engine against the independent reference of
 * tests/common/ref_mla.c (its MLA computed in the expanded form, so the
 * absorption is checked too), for q-lora and not, leading dense layers,
 * expert groups or none, selection bias or none, softmax or sigmoid
 * scores; the router's rules on hand-worked scores; results identical for
 * any batch split, thread count and with streamed experts; the latent
 * cache's bytes per position, its rewind, save and restore; an MTP block
 * loaded, not run; the deepseek-v3 and glm4 pre-tokenizers' splits.
 * (Agreement with llama.cpp on its own files is test_reference_kld's.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/ref_mla.h"
#include "engine/router.h"
#include "common/testutil.h"
#include "common/vs_ref.h"
#include "sluice.h"
#include "synth/synth_ds.h"
#include "tok/tok_internal.h"
#include "test.h"

#define N_TOK 20
#define NEAR_TIE 1e-3f

static int32_t tok(int i) { return (int32_t)(5 + (i * 37) % 250); }

/* Logits of tokens 0..N_TOK-1 evaluated in batches of `batch` (malloc'ed). */
static float *run_kv(const char *path, int batch, int threads, int cache_experts,
                     sl_kv_type kv)
{
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = tok(i);
    const t_logits_run r = {.path = path, .ids = ids, .n_tok = N_TOK, .batch = batch,
                            .threads = threads, .cache_experts = cache_experts, .kv = kv};
    return t_batched_logits(&r);
}

/* The same with the default (f16) cache. */
static float *run(const char *path, int batch, int threads, int cache_experts)
{
    return run_kv(path, batch, threads, cache_experts, SL_KV_F16);
}

/* The reference pass of tests/common/ref_mla.c (t_ref_pass). */
T_REF_PASS(ref_pass, ref_ds)

/* Max |engine - reference| over the positions before the first routing
 * near-tie, relative to the reference's largest logit; -1 on failure. */
static double vs_reference(const char *path, int *compared)
{
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = tok(i);
    /* the reference caches f32 */
    const t_logits_run r = {.path = path, .ids = ids, .n_tok = N_TOK, .batch = 7,
                            .threads = 2, .kv = SL_KV_F32};
    return t_vs_reference(&r, ref_pass, NEAR_TIE, compared);
}

typedef struct variant {
    const char *name, *arch;
    sl_synth_type type;
    int q_lora;       /* -1: the preset's */
    int groups;       /* -1: the preset's; else expert_group_count (used: half) */
    int dense;        /* -1: the preset's */
    int bias;         /* -1: the preset's */
    int gating;       /* 0: the preset's */
    double tol;       /* of the largest |logit| */
} variant;

static const variant variants[] = {
    /* f32: the engine's float order against double (measured <= 2.1e-6);
     * q8_0: an activation may round the other way (5.6e-3 measured) */
    {"ds-f32", "deepseek2", SL_SYNTH_F32, -1, -1, -1, -1, 0, 2e-5},
    {"ds-f32-nolora", "deepseek2", SL_SYNTH_F32, 0, -1, -1, -1, 0, 2e-5},
    {"ds-f32-nogroups-nobias", "deepseek2", SL_SYNTH_F32, -1, 1, -1, 0, 0, 2e-5},
    {"ds-f32-nodense-softmax", "deepseek2", SL_SYNTH_F32, -1, -1, 0, -1, 1, 2e-5},
    {"ds-q8_0", "deepseek2", SL_SYNTH_Q8_0, -1, -1, -1, -1, 0, 5e-2},
    {"glm-f32", "glm4moe", SL_SYNTH_F32, -1, -1, -1, -1, 0, 2e-5},
    {"glm-f32-groups-2dense", "glm4moe", SL_SYNTH_F32, -1, 2, 2, -1, 0, 2e-5},
    {"glm-q8_0", "glm4moe", SL_SYNTH_Q8_0, -1, -1, -1, -1, 0, 5e-2},
};

static int make_variant(const variant *v, char *path, size_t cap)
{
    sl_synth_ds c;
    sl_err err;
    if (sl_synth_ds_init(&c, v->arch, "tiny", &err)) return -1;
    c.type = v->type;
    c.seed = 17;
    if (v->q_lora >= 0) c.q_lora = (uint32_t)v->q_lora;
    if (v->groups >= 0) {
        c.n_group = (uint32_t)v->groups;
        c.n_group_used = v->groups > 1 ? (uint32_t)v->groups / 2 : 1;
    }
    if (v->dense >= 0) c.n_dense_lead = (uint32_t)v->dense;
    if (v->bias >= 0) c.sel_bias = v->bias != 0;
    if (v->gating) c.gating = (uint32_t)v->gating;
    return t_write_synth_ds(&c, v->name, path, cap);
}

/* The router's selection rules on hand-made scores (values worked out by
 * hand from ARCHS.md section 0): the bias moves expert 3 up for the
 * selection only, groups of two scored by their top two keep groups 2
 * and 1, the weights are the unbiased scores renormalised and scaled. */
TEST(router_bias_groups_renorm_scale)
{
    const float p[8] = {0.9f, 0.15f, 0.2f, 0.3f, 0.85f, 0.7f, 0.05f, 0.6f};
    const float bias[8] = {0, 0, 0, 0.7f, 0, 0, 0, 0};
    sl_router_desc rd = {.score = SL_SCORE_SIGMOID, .n_expert = 8, .top_k = 2, .renorm = true,
                         .sel_bias = true, .n_group = 4, .n_group_used = 2, .w_scale = 2.5f};
    int ids[2];
    float w[2];
    /* groups: {1.05, 1.2, 1.55, 0.65} -> keep 2 and 1 -> experts 3 (1.0), 4 (0.85) */
    sl_router_select(&rd, p, bias, ids, w);
    CHECK_EQ_INT(ids[0], 3);
    CHECK_EQ_INT(ids[1], 4);
    CHECK(fabsf(w[0] - 2.5f * 0.3f / 1.15f) < 1e-6f);  /* 0.652174: p, not p + bias */
    CHECK(fabsf(w[1] - 2.5f * 0.85f / 1.15f) < 1e-6f); /* 1.847826 */
    /* no group limit: the two best biased scores, 3 (1.0) and 0 (0.9) */
    rd.n_group = 1;
    sl_router_select(&rd, p, bias, ids, w);
    CHECK_EQ_INT(ids[0], 3);
    CHECK_EQ_INT(ids[1], 0);
    /* groups without the bias: {1.05, 0.5, 1.55, 0.65} keep 2 and 0 -> 0, 4 */
    rd.n_group = 4;
    sl_router_select(&rd, p, NULL, ids, w);
    CHECK_EQ_INT(ids[0], 0);
    CHECK_EQ_INT(ids[1], 4);
    /* no renorm, no scale: the raw sigmoids */
    rd.renorm = false;
    rd.w_scale = 0.0f;
    sl_router_select(&rd, p, NULL, ids, w);
    CHECK(w[0] == 0.9f && w[1] == 0.85f);
    /* a group's score is its top two: one high expert does not carry it */
    float q[8] = {0.99f, 0.0f, 0.5f, 0.5f, 0.1f, 0.1f, 0.1f, 0.1f};
    sl_router_group_limit(q, 8, 4, 1); /* groups 0.99, 1.0, 0.2, 0.2: group 1 is kept */
    CHECK(isinf(q[0]) && isinf(q[1]) && q[2] == 0.5f && q[3] == 0.5f && isinf(q[4]) &&
          isinf(q[7]));
}

TEST(engine_matches_the_reference_in_every_variant)
{
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        char path[512];
        if (make_variant(&variants[i], path, sizeof path)) {
            CHECK_MSG(0, "could not write %s", variants[i].name);
            continue;
        }
        int n = 0;
        const double rel = vs_reference(path, &n);
        printf("   %-24s max|dlogit| / max|logit| %.2e over %d/%d positions\n",
               variants[i].name, rel, n, N_TOK);
        CHECK_MSG(rel >= 0, "%s: could not run", variants[i].name);
        CHECK_MSG(rel <= variants[i].tol, "%s: %.3g above %.3g", variants[i].name, rel,
                  variants[i].tol);
        CHECK_MSG(n >= 4, "%s: only %d positions before a routing near-tie", variants[i].name, n);
    }
}

/* Batch splits, thread counts and streamed experts never change a bit. */
static void check_bits(const variant *v)
{
    char path[512];
    CHECK(make_variant(v, path, sizeof path) == 0);
    float *a = run(path, 1, 1, 0), *b = run(path, 5, 2, 0), *c = run(path, N_TOK, 2, 0);
    float *d = run(path, 7, 2, 3);
    CHECK(a && b && c && d);
    if (a && b && c && d) {
        const size_t n = 512 * (size_t)N_TOK * sizeof(float); /* tiny: vocab 512 */
        CHECK_MSG(memcmp(a, b, n) == 0, "%s: batch 5 / 2 threads differ from batch 1", v->name);
        CHECK_MSG(memcmp(a, c, n) == 0, "%s: one batch differs from batch 1", v->name);
        CHECK_MSG(memcmp(a, d, n) == 0, "%s: streamed experts differ", v->name);
    }
    free(a);
    free(b);
    free(c);
    free(d);
}

TEST(batches_threads_and_streaming_do_not_change_bits)
{
    check_bits(&variants[4]); /* deepseek2 q8_0 */
    check_bits(&variants[1]); /* deepseek2 without q lora */
    check_bits(&variants[7]); /* glm4moe q8_0 */
}

/* The cache is the latent and the roped key only: 2 (kv_lora + rope)
 * bytes per position per layer; glm4moe's K and V 4 HK D. Layer kinds
 * from the description. */
TEST(state_bytes_and_layer_kinds)
{
    char path[512];
    CHECK(make_variant(&variants[0], path, sizeof path) == 0);
    sl_model_params mp = sl_model_default_params();
    mp.describe_only = true;
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, path, &mp, &err) == 0);
    if (m) {
        uint64_t tokb = 0, seqb = 0;
        sl_model_state_bytes(m, &tokb, &seqb);
        CHECK_EQ_INT((int)tokb, 3 * 2 * (64 + 16)); /* tiny: 3 layers, kv_lora 64, rope 16 */
        CHECK_EQ_INT((int)seqb, 0);
        CHECK(!strcmp(sl_model_layer_mixer(m, 0), "mla"));
        sl_model_free(m);
    }
    CHECK(make_variant(&variants[5], path, sizeof path) == 0);
    CHECK(sl_model_load(&m, path, &mp, &err) == 0);
    if (m) {
        uint64_t tokb = 0, seqb = 0;
        sl_model_state_bytes(m, &tokb, &seqb);
        CHECK_EQ_INT((int)tokb, 3 * 4 * 2 * 32); /* 3 layers, 2 KV heads of 32 */
        CHECK(!strcmp(sl_model_layer_mixer(m, 0), "attention"));
        sl_model_free(m);
    }
}

/* DeepSeek-V3's latent: 2 (512 + 64) = 1152 bytes per layer, 70,272 per
 * token over its 61 layers (~68.6 KiB). The cache depends only on
 * kv_lora_rank and the rope width, so the preset's MLA dimensions on a
 * narrow one-layer model (2 heads, n_embd 256, no q lora) give the figure
 * without writing gigabytes. And an MTP block in the file is loaded as
 * weights, not run and not refused. */
TEST(published_latent_and_mtp_block)
{
    sl_synth_ds c;
    sl_err err;
    CHECK(sl_synth_ds_init(&c, "deepseek2", "deepseek-v3", &err) == 0);
    c.n_layer = 1;
    c.n_dense_lead = 1;
    c.n_embd = 256;
    c.n_head = 2;
    c.q_lora = 0;
    c.n_ff = 256;
    c.n_vocab = 512;
    c.type = SL_SYNTH_Q8_0;
    char path[512];
    CHECK(t_write_synth_ds(&c, "ds-v3-latent", path, sizeof path) == 0);
    sl_model_params mp = sl_model_default_params();
    mp.describe_only = true;
    sl_model *m;
    CHECK(sl_model_load(&m, path, &mp, &err) == 0);
    if (m) {
        uint64_t tokb = 0, seqb = 0;
        sl_model_state_bytes(m, &tokb, &seqb);
        CHECK_EQ_INT((int)tokb, 1152);
        CHECK_EQ_INT((int)(tokb * 61), 70272);
        sl_model_free(m);
    }
    /* tiny with one MTP block: the main pass has the 3 layers and runs */
    CHECK(sl_synth_ds_init(&c, "deepseek2", "tiny", &err) == 0);
    c.n_nextn = 1;
    CHECK(t_write_synth_ds(&c, "ds-mtp", path, sizeof path) == 0);
    CHECK(sl_model_load(&m, path, NULL, &err) == 0);
    if (m) {
        CHECK_EQ_INT(sl_model_n_layer(m), 3);
        sl_model_free(m);
    }
    float *a = run(path, 4, 2, 0);
    CHECK(a != NULL);
    free(a);
}

/* The latent cache rewinds anywhere and survives save and restore: the
 * next tokens' logits after truncating to 6 and re-evaluating, or after
 * loading a file saved at 10 into a fresh session, equal those of one
 * uninterrupted run. */
TEST(latent_cache_truncates_saves_and_restores)
{
    char path[512], saved[512];
    CHECK(make_variant(&variants[4], path, sizeof path) == 0); /* deepseek2 q8_0 */
    t_path(saved, sizeof saved, "mla-session.bin");
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, path, NULL, &err) == 0);
    if (!m) return;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = 16;
    sl_session *a, *b;
    CHECK(sl_session_create(&a, m, &sp, &err) == 0);
    CHECK(sl_session_create(&b, m, &sp, &err) == 0);
    const size_t V = (size_t)sl_model_n_vocab(m);
    float *want = malloc(V * sizeof(float)), *got = malloc(V * sizeof(float));
    int32_t ids[14];
    for (int i = 0; i < 14; i++) ids[i] = tok(i);
    CHECK(sl_session_eval(a, ids, 10, &err) == 0);
    CHECK(sl_session_save(a, saved, ids, 10, &err) == 0);
    CHECK(sl_session_eval(a, ids + 10, 4, &err) == 0);
    memcpy(want, sl_session_logits(a), V * sizeof(float));
    /* rewind to 6 and evaluate the rest again */
    CHECK_EQ_INT(sl_session_truncate(a, 6), SL_OK);
    CHECK(sl_session_eval(a, ids + 6, 8, &err) == 0);
    memcpy(got, sl_session_logits(a), V * sizeof(float));
    CHECK(memcmp(want, got, V * sizeof(float)) == 0);
    /* a fresh session from the file saved at 10 */
    int32_t back[16];
    CHECK_EQ_INT(sl_session_load(b, saved, back, 16, &err), 10);
    CHECK(memcmp(back, ids, 10 * sizeof(int32_t)) == 0);
    CHECK(sl_session_eval(b, ids + 10, 4, &err) == 0);
    memcpy(got, sl_session_logits(b), V * sizeof(float));
    CHECK(memcmp(want, got, V * sizeof(float)) == 0);
    free(want);
    free(got);
    sl_session_free(a);
    sl_session_free(b);
    sl_model_free(m);
}

/* The pieces pre-tokenizer `pre` cuts text into equal want[0..n). */
static bool splits_as(const char *pre, const char *text, const char *const *want, size_t n)
{
    int set;
    bool im, ab;
    if (!sl_tok_pre_lookup(pre, &set, &im, &ab)) return false;
    sl_tok_pretok p;
    sl_err err = {0};
    if (sl_tok_pretok_init(&p, set, &err)) return false;
    sl_tok_spans sp = {0};
    bool same = sl_tok_pretok_split(&p, text, strlen(text), &sp, &err) == 0 && sp.n == n;
    for (size_t i = 0; same && i < n; i++)
        same = sp.v[i].len == strlen(want[i]) && !memcmp(text + sp.v[i].off, want[i], sp.v[i].len);
    if (!same) {
        fprintf(stderr, "  %s: got", pre);
        for (size_t i = 0; i < sp.n; i++)
            fprintf(stderr, " [%.*s]", (int)sp.v[i].len, text + sp.v[i].off);
        fprintf(stderr, "\n");
    }
    sl_tok_spans_free(&sp);
    sl_tok_pretok_free(&p);
    return same;
}

/* deepseek-v3 (three patterns in sequence: \p{N}{1,3}; kana and CJK; the
 * main one) and glm4 (Llama 3's pattern), worked out by hand: digits in
 * threes first, the CJK and katakana run cut out whole, an ASCII
 * punctuation mark leads the ASCII letters after it (".Net"), a space
 * joins the word after it, "!\n" is one punctuation run with its newline. */
TEST(pre_tokenizers)
{
    static const char *const ds[] = {"Hello", ",", " world", " ", "123", "45", " ",
                                     "\xE6\x97\xA5\xE6\x9C\xAC\xE3\x83\x86\xE3\x82\xB9",
                                     "!\n", "x", ".Net"};
    CHECK(splits_as("deepseek-v3",
                    "Hello, world 12345 \xE6\x97\xA5\xE6\x9C\xAC\xE3\x83\x86\xE3\x82\xB9!\nx.Net",
                    ds, sizeof ds / sizeof *ds));
    /* glm4: [^\r\n\p{L}\p{N}]?\p{L}+ lets the "." lead "Net" too */
    static const char *const glm[] = {"Hello", " ", "123", "45", " x", ".Net"};
    CHECK(splits_as("glm4", "Hello 12345 x.Net", glm, sizeof glm / sizeof *glm));
}

int main(void)
{
    RUN(pre_tokenizers);
    RUN(router_bias_groups_renorm_scale);
    RUN(engine_matches_the_reference_in_every_variant);
    RUN(batches_threads_and_streaming_do_not_change_bits);
    RUN(state_bytes_and_layer_kinds);
    RUN(latent_cache_truncates_saves_and_restores);
    RUN(published_latent_and_mtp_block);
    return TEST_REPORT();
}
