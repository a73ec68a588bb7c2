/* test_deepseek4.c - deepseek4 (DeepSeek-V4) on generated models
 * (synth_ds4.c): the engine against the independent reference of
 * tests/common/ref_ds4.c over 140 tokens (the first ratio-128 block
 * completes at position 127, the window and the ratio-4 indexer are busy
 * throughout); results identical for any batch split (1, 5, 140 tokens
 * per batch), thread count and with streamed experts; the state's bytes
 * per token and per sequence; rewinding to the snapshot, refusing other
 * positions, save and restore; a loader limit refused with its reason.
 * (Agreement with llama.cpp on its own file is test_reference_kld's.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/ref_ds4.h"
#include "common/testutil.h"
#include "common/vs_ref.h"
#include "sluice.h"
#include "synth/synth_ds.h"
#include "test.h"

#define N_TOK 140
#define N_CTX 160
/* score gaps the f32 engine (float order, ~1e-6 of a score) cannot flip */
#define NEAR_TIE 5e-5f

static int32_t tok(int i) { return (int32_t)(5 + (i * 37 + i / 7) % 300); }

/* tiny deepseek4 of type t (seed 23) as NAME.gguf. */
static int make(const char *name, sl_synth_type t, char *path, size_t cap)
{
    sl_synth_ds c;
    sl_err err;
    if (sl_synth_ds_init(&c, "deepseek4", "tiny", &err)) return -1;
    c.type = t;
    c.seed = 23;
    return t_write_synth_ds(&c, name, path, cap);
}

static float *run(const char *path, int batch, int threads, int cache_experts, sl_kv_type kv)
{
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = tok(i);
    const t_logits_run r = {.path = path, .ids = ids, .n_tok = N_TOK, .batch = batch,
                            .threads = threads, .cache_experts = cache_experts, .kv = kv,
                            .n_ctx = N_CTX};
    return t_batched_logits(&r);
}

/* The reference pass of tests/common/ref_ds4.c (t_ref_pass). */
T_REF_PASS(ref_pass, ref_ds4)

/* Max |engine - reference| relative to the reference's largest logit over
 * the positions before the first near-tie; -1 on failure. */
static double vs_reference(const char *path, int *compared)
{
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = tok(i);
    /* the reference keeps f32 */
    const t_logits_run r = {.path = path, .ids = ids, .n_tok = N_TOK, .batch = 32,
                            .threads = 2, .kv = SL_KV_F32, .n_ctx = N_CTX};
    return t_vs_reference(&r, ref_pass, NEAR_TIE, compared);
}

TEST(engine_matches_the_reference)
{
    char path[512];
    CHECK(make("ds4-f32", SL_SYNTH_F32, path, sizeof path) == 0);
    int n = 0;
    double rel = vs_reference(path, &n);
    printf("   f32: max|dlogit| / max|logit| %.2e over %d/%d positions\n", rel, n, N_TOK);
    CHECK(rel >= 0);
    CHECK_MSG(rel <= 1e-4, "f32: %.3g above 1e-4", rel);
    /* the first ratio-128 block (position 127) is inside the compared run */
    CHECK_MSG(n > 128, "only %d positions before a near-tie", n);
    /* indexer keys as wide as the heads (D == di = 128): llama.cpp then
     * rotates q, k and the compressed rows too (undone on the output), a
     * no-op the reference leaves out */
    sl_synth_ds c;
    sl_err err;
    CHECK(sl_synth_ds_init(&c, "deepseek4", "tiny", &err) == 0);
    c.seed = 29;
    c.idx_dim = 128;
    CHECK(t_write_synth_ds(&c, "ds4-f32-di128", path, sizeof path) == 0);
    rel = vs_reference(path, &n);
    printf("   f32, di = D: max|dlogit| / max|logit| %.2e over %d/%d positions\n", rel, n, N_TOK);
    CHECK(rel >= 0 && rel <= 1e-4);
    CHECK_MSG(n >= 64, "di = D: only %d positions before a near-tie", n);
}

/* Batch splits (including across the ratio-128 block's last token),
 * thread counts and streamed experts never change a bit. */
TEST(batches_threads_and_streaming_do_not_change_bits)
{
    char path[512];
    CHECK(make("ds4-q8", SL_SYNTH_Q8_0, path, sizeof path) == 0);
    const sl_kv_type kv = sl_session_default_params().kv_type;
    float *a = run(path, 1, 1, 0, kv), *b = run(path, 5, 2, 0, kv);
    float *c = run(path, N_TOK, 2, 0, kv), *d = run(path, 7, 2, 3, kv);
    CHECK(a && b && c && d);
    if (a && b && c && d) {
        const size_t sz = 512 * (size_t)N_TOK * sizeof(float); /* tiny: vocab 512 */
        CHECK_MSG(memcmp(a, b, sz) == 0, "batch 5 / 2 threads differ from batch 1");
        CHECK_MSG(memcmp(a, c, sz) == 0, "one batch differs from batch 1");
        CHECK_MSG(memcmp(a, d, sz) == 0, "streamed experts differ");
    }
    free(a), free(b), free(c), free(d);
}

/* Per token: the compressed rows, (D + di) / 2 bytes on ratio-4 layers,
 * D / 64 on ratio-128 ones (f16, rounded up to whole bytes per position),
 * nothing on ratio-0 ones. Per sequence: the compressor state, 128 (D +
 * di) bytes (ratio 4) and 1024 D (ratio 128), as ARCHS.md section 9
 * counts them, and every layer's window ring of n_swa raw keys (room for
 * f32: 4 D n_swa bytes). */
TEST(state_bytes_and_layer_kinds)
{
    char path[512];
    CHECK(make("ds4-desc", SL_SYNTH_Q8_0, path, sizeof path) == 0);
    sl_model_params mp = sl_model_default_params();
    mp.describe_only = true;
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, path, &mp, &err) == 0);
    if (!m) return;
    uint64_t tokb = 0, seqb = 0;
    sl_model_state_bytes(m, &tokb, &seqb);
    /* tiny: D 128, di 64, ratios 0 / 4 / 128 / 4 */
    CHECK_EQ_INT((int)tokb, 2 * 96 + 2);
    CHECK_EQ_INT((int)seqb, 2 * 128 * (128 + 64) + 1024 * 128 + 4 * 4 * 128 * 8);
    CHECK(!strcmp(sl_model_layer_mixer(m, 0), "ds4-window"));
    CHECK(!strcmp(sl_model_layer_mixer(m, 1), "ds4-ratio4"));
    CHECK(!strcmp(sl_model_layer_mixer(m, 2), "ds4-ratio128"));
    sl_model_free(m);
}

/* The compressor state has no history: a session rewinds only to its
 * snapshot (the end of its last multi-token batch) or to 0, and says so
 * otherwise; a saved session restores to the same next logits. */
TEST(rewind_to_snapshot_save_and_restore)
{
    char path[512], saved[512];
    CHECK(make("ds4-state", SL_SYNTH_Q8_0, path, sizeof path) == 0);
    t_path(saved, sizeof saved, "ds4-session.bin");
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, path, NULL, &err) == 0);
    if (!m) return;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = N_CTX;
    sp.n_batch_max = 16;
    sl_session *a, *b;
    CHECK(sl_session_create(&a, m, &sp, &err) == 0);
    CHECK(sl_session_create(&b, m, &sp, &err) == 0);
    const size_t V = (size_t)sl_model_n_vocab(m);
    float *want = malloc(V * sizeof(float)), *got = malloc(V * sizeof(float));
    int32_t ids[24];
    for (int i = 0; i < 24; i++) ids[i] = tok(i);
    CHECK(sl_session_eval(a, ids, 10, &err) == 0); /* snapshot at 10 */
    CHECK(sl_session_save(a, saved, ids, 10, &err) == 0);
    CHECK(sl_session_eval(a, ids + 10, 1, &err) == 0);
    CHECK(sl_session_eval(a, ids + 11, 1, &err) == 0);
    memcpy(want, sl_session_logits(a), V * sizeof(float));
    CHECK(sl_session_truncate_err(a, 11, &err) != SL_OK); /* not the snapshot */
    CHECK(strstr(err.msg, "snapshot") != NULL);
    CHECK_EQ_INT(sl_session_truncate(a, 10), SL_OK);
    CHECK(sl_session_eval(a, ids + 10, 1, &err) == 0);
    CHECK(sl_session_eval(a, ids + 11, 1, &err) == 0);
    memcpy(got, sl_session_logits(a), V * sizeof(float));
    CHECK(memcmp(want, got, V * sizeof(float)) == 0);
    int32_t back[24];
    CHECK(sl_session_load(b, saved, back, 24, &err) == 10);
    CHECK(sl_session_eval(b, ids + 10, 1, &err) == 0);
    CHECK(sl_session_eval(b, ids + 11, 1, &err) == 0);
    CHECK(memcmp(want, sl_session_logits(b), V * sizeof(float)) == 0);
    free(want), free(got);
    sl_session_free(a), sl_session_free(b);
    sl_model_free(m);
}

/* An MTP block (ratio 0, after the main layers) is recognised, not run
 * and not refused: the main pass has the preset's 4 layers and the logits
 * are those of the file without it. */
TEST(mtp_block_loaded_not_run)
{
    sl_synth_ds c;
    sl_err err;
    CHECK(sl_synth_ds_init(&c, "deepseek4", "tiny", &err) == 0);
    c.type = SL_SYNTH_Q8_0;
    c.seed = 23;
    c.n_nextn = 1;
    char path[512], plain[512];
    CHECK(t_write_synth_ds(&c, "ds4-mtp", path, sizeof path) == 0);
    CHECK(make("ds4-q8", SL_SYNTH_Q8_0, plain, sizeof plain) == 0);
    sl_model *m = NULL;
    CHECK(sl_model_load(&m, path, NULL, &err) == 0);
    if (m) {
        CHECK_EQ_INT(sl_model_n_layer(m), 4);
        sl_model_free(m);
    }
    const sl_kv_type kv = sl_session_default_params().kv_type;
    float *a = run(path, 16, 2, 0, kv), *b = run(plain, 16, 2, 0, kv);
    CHECK(a && b);
    if (a && b) CHECK(memcmp(a, b, 512 * (size_t)N_TOK * sizeof(float)) == 0);
    free(a), free(b);
}

/* A limit llama.cpp enforces is refused with its reason, not run. */
TEST(other_gating_is_refused)
{
    sl_synth_ds c;
    sl_err err;
    CHECK(sl_synth_ds_init(&c, "deepseek4", "tiny", &err) == 0);
    c.gating = 2; /* sigmoid */
    char path[512];
    CHECK(t_write_synth_ds(&c, "ds4-sigmoid", path, sizeof path) == 0);
    sl_model *m = NULL;
    CHECK(sl_model_load(&m, path, NULL, &err) != SL_OK);
    CHECK(m == NULL);
    CHECK(strstr(err.msg, "sqrt-softplus") != NULL);
}

int main(void)
{
    RUN(engine_matches_the_reference);
    RUN(batches_threads_and_streaming_do_not_change_bits);
    RUN(state_bytes_and_layer_kinds);
    RUN(rewind_to_snapshot_save_and_restore);
    RUN(mtp_block_loaded_not_run);
    RUN(other_gating_is_refused);
    return TEST_REPORT();
}
