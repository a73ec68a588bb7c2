/* test_glm_dsa.c - glm-dsa (GLM-5.x): the lightning indexer's selection,
 * the attention over a selection, bit identity of the whole model over
 * batch splits and thread counts, and the state bytes with the indexer's
 * key cache.
 *
 * The model tests run llama.cpp's reference file glm-dsa-Q8_0 (4 layers,
 * the last one a shared indexer layer, top-k 8, kv_lora 64, rope 32,
 * indexer keys of 64); its logits against llama.cpp's are
 * test_reference_kld's business. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/testutil.h"
#include "families/glm_dsa/mla_indexer.h"
#include "ops/attn_kernels.h"
#include "quant/quant.h"
#include "sluice.h"
#include "test.h"

static int sel_of(const float *score, int n, int k, int *pos)
{
    float sc[64];
    int cnt = 0;
    for (int p = 0; p < n; p++) sl_mla_sel_push(pos, sc, &cnt, k, p, score[p]);
    sl_mla_sel_finish(pos, cnt);
    return cnt;
}

/* ggml_top_k is std::partial_sort with "greater": a heap select whose
 * moves decide which of equal scores stay. Worked by hand for [0 0 0 1 1],
 * k 3: the heap of positions 0 1 2 (all 0) is made with 2 at the root;
 * position 3 (1 > 0) replaces it, leaving 0 at the root (1 and 3 below);
 * position 4 replaces 0. So {1, 3, 4}, not the lower positions {0, 3, 4}.
 * (GCC's std::partial_sort gives the same sets for both cases, checked
 * outside the tree.) Fewer visible keys than k: all of them. */
TEST(selection_keeps_equal_scores_as_ggml_top_k)
{
    int pos[8];
    const float a[] = {0, 0, 0, 1, 1};
    CHECK_EQ_INT(sel_of(a, 5, 3, pos), 3);
    CHECK(pos[0] == 1 && pos[1] == 3 && pos[2] == 4);
    const float b[] = {0.5f, 0, 0, 0, 0.25f, 0, 0.75f, 0, 0};
    CHECK_EQ_INT(sel_of(b, 9, 4, pos), 4);
    CHECK(pos[0] == 0 && pos[1] == 1 && pos[2] == 4 && pos[3] == 6);
    const float c[] = {-1.0f, 3.0f, 2.0f};
    CHECK_EQ_INT(sel_of(c, 3, 8, pos), 3);
    CHECK(pos[0] == 0 && pos[1] == 1 && pos[2] == 2);
    /* distinct scores: the k highest */
    const float d[] = {0.1f, 0.9f, 0.3f, 0.8f, 0.2f, 0.7f};
    CHECK_EQ_INT(sel_of(d, 6, 3, pos), 3);
    CHECK(pos[0] == 1 && pos[1] == 3 && pos[2] == 5);
}

static float frand(unsigned *st)
{
    *st = *st * 1103515245u + 12345u;
    return (float)((*st >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* With every position selected the sparse attention is the tiled kernel,
 * bit for bit; with a selection it is the softmax over the selected keys
 * only (checked in double). 150 positions: three tiles, the last partial. */
TEST(sparse_attention_is_the_kernel_over_the_selection)
{
    enum { NP = 150, DK = 40, DV = 32, NQ = 3 };
    static uint16_t kv[NP][DK];
    static float q[NQ][DK], full[NQ][DV], sparse[NQ][DV];
    unsigned st = 7;
    for (int p = 0; p < NP; p++)
        for (int d = 0; d < DK; d++) kv[p][d] = sl_f32_to_fp16(frand(&st));
    for (int r = 0; r < NQ; r++)
        for (int d = 0; d < DK; d++) q[r][d] = 2.0f * frand(&st);
    const size_t sf = sl_attn_scratch_floats(DK, DV, NQ);
    float *scratch = malloc(sf * sizeof(float));
    sl_attn_block b = {.q = &q[0][0], .q_stride = DK, .k = kv, .v = kv,
                       .k_stride = sizeof kv[0], .v_stride = sizeof kv[0], .dk = DK, .dv = DV,
                       .n_q = NQ, .n_pos = NP, .scale = 0.3f, .out = &full[0][0],
                       .out_stride = DV, .scratch = scratch};
    sl_attn_kernels_get()->attend_f16(&b);
    int all[NP];
    for (int p = 0; p < NP; p++) all[p] = p;
    b.out = &sparse[0][0];
    sl_mla_attend_sparse(&b, true, all, NP);
    CHECK(memcmp(full, sparse, sizeof full) == 0);

    const int sel[] = {3, 40, 63, 64, 100, 149};
    const int ns = (int)(sizeof sel / sizeof *sel);
    sl_mla_attend_sparse(&b, true, sel, ns);
    for (int r = 0; r < NQ; r++) {
        double s[6], mx = -INFINITY, z = 0.0;
        for (int i = 0; i < ns; i++) {
            double dot = 0.0;
            for (int d = 0; d < DK; d++) dot += (double)q[r][d] * sl_fp16_to_f32(kv[sel[i]][d]);
            s[i] = dot * 0.3;
            if (s[i] > mx) mx = s[i];
        }
        for (int i = 0; i < ns; i++) z += (s[i] = exp(s[i] - mx));
        for (int d = 0; d < DV; d++) {
            double o = 0.0;
            for (int i = 0; i < ns; i++) o += s[i] / z * sl_fp16_to_f32(kv[sel[i]][d]);
            CHECK_NEAR(sparse[r][d], o, 2e-6);
        }
    }
    free(scratch);
}

static const char *fixture(void)
{
    static char path[512];
    return t_fixture(path, sizeof path, "glm-dsa-Q8_0.gguf");
}

#define N_TOK 100

/* Logits of N_TOK tokens in batches of `batch` on `threads` threads. */
static float *run(int batch, int threads)
{
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = (int32_t)(3 + (i * 37) % 500);
    const t_logits_run r = {.path = fixture(), .ids = ids, .n_tok = N_TOK, .batch = batch,
                            .threads = threads, .kv = sl_session_default_params().kv_type,
                            .n_ctx = 128};
    return t_batched_logits(&r);
}

/* 100 tokens: past the top-k of 8 and across a tile boundary, so the
 * selection and the shared layer matter. */
TEST(batches_and_threads_do_not_change_bits)
{
    if (!fixture()) {
        CHECK_MSG(0, "glm-dsa-Q8_0.gguf not found in ../shared/fixtures/reference");
        return;
    }
    float *a = run(1, 1), *b = run(7, 2), *c = run(N_TOK, 2), *d = run(64, 1);
    CHECK(a && b && c && d);
    if (a && b && c && d) {
        const size_t n = 512 * (size_t)N_TOK * sizeof(float); /* vocab 512 */
        CHECK_MSG(memcmp(a, b, n) == 0, "batch 7 / 2 threads differ from batch 1");
        CHECK_MSG(memcmp(a, c, n) == 0, "one batch differs from batch 1");
        CHECK_MSG(memcmp(a, d, n) == 0, "batches of 64 differ from batch 1");
    }
    free(a);
    free(b);
    free(c);
    free(d);
}

/* Per position: every layer's latent 2 (kv_lora 64 + rope 32) bytes, and
 * each full indexer layer's key 2 x 64 (layers 0-2; layer 3 is shared and
 * caches none): 4 x 192 + 3 x 128 = 1152. f32 doubles it. */
TEST(state_bytes_count_the_indexer_cache)
{
    if (!fixture()) {
        CHECK_MSG(0, "glm-dsa-Q8_0.gguf not found");
        return;
    }
    sl_model_params mp = sl_model_default_params();
    mp.describe_only = true;
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, fixture(), &mp, &err) == 0);
    if (!m) return;
    uint64_t tokb = 0, seqb = 0;
    sl_model_state_bytes(m, &tokb, &seqb);
    CHECK_EQ_INT((int)tokb, 4 * 2 * (64 + 32) + 3 * 2 * 64);
    CHECK_EQ_INT((int)seqb, 0);
    for (int il = 0; il < 4; il++) CHECK(!strcmp(sl_model_layer_mixer(m, il), "mla"));
    sl_model_free(m);
}

/* The indexer keys are state like the latent: a rewind, and a session
 * saved at 30 tokens and loaded into a fresh one, give the logits of the
 * uninterrupted run bit for bit (40 tokens: past the top-k of 8, so the
 * restored keys decide the selection). */
TEST(indexer_cache_truncates_saves_and_restores)
{
    if (!fixture()) {
        CHECK_MSG(0, "glm-dsa-Q8_0.gguf not found");
        return;
    }
    char saved[512];
    t_path(saved, sizeof saved, "dsa-session.bin");
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, fixture(), NULL, &err) == 0);
    if (!m) return;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = 32;
    sl_session *a, *b;
    CHECK(sl_session_create(&a, m, &sp, &err) == 0);
    CHECK(sl_session_create(&b, m, &sp, &err) == 0);
    const size_t V = (size_t)sl_model_n_vocab(m);
    float *want = malloc(V * sizeof(float)), *got = malloc(V * sizeof(float));
    int32_t ids[40];
    for (int i = 0; i < 40; i++) ids[i] = (int32_t)(3 + (i * 53) % 500);
    CHECK(sl_session_eval(a, ids, 30, &err) == 0);
    CHECK(sl_session_save(a, saved, ids, 30, &err) == 0);
    CHECK(sl_session_eval(a, ids + 30, 10, &err) == 0);
    memcpy(want, sl_session_logits(a), V * sizeof(float));
    CHECK_EQ_INT(sl_session_truncate(a, 17), SL_OK);
    CHECK(sl_session_eval(a, ids + 17, 23, &err) == 0);
    memcpy(got, sl_session_logits(a), V * sizeof(float));
    CHECK_MSG(memcmp(want, got, V * sizeof(float)) == 0, "a rewind to 17 changed the logits");
    int32_t back[40];
    CHECK_EQ_INT(sl_session_load(b, saved, back, 40, &err), 30);
    CHECK(sl_session_eval(b, ids + 30, 10, &err) == 0);
    memcpy(got, sl_session_logits(b), V * sizeof(float));
    CHECK_MSG(memcmp(want, got, V * sizeof(float)) == 0, "the restored session differs");
    free(want);
    free(got);
    sl_session_free(a);
    sl_session_free(b);
    sl_model_free(m);
}

int main(void)
{
    RUN(selection_keeps_equal_scores_as_ggml_top_k);
    RUN(sparse_attention_is_the_kernel_over_the_selection);
    RUN(batches_and_threads_do_not_change_bits);
    RUN(state_bytes_count_the_indexer_cache);
    RUN(indexer_cache_truncates_saves_and_restores);
    return TEST_REPORT();
}
