/* test_attn_split.c - sl_attn_attend_seq's split form (sl_attn_block.split_n:
 * llama.cpp's one-token decode over a cache view of 512+ positions, one
 * chunk of positions per thread, the chunks' states combined by
 * ggml_flash_attn_ext_reduce_partials) against a twin written here from the
 * reference kernels' element loops: each chunk's one-chunk online softmax
 * (f16 query and accumulator for an f16 cache), the sinks in the first
 * chunk, then the combination x e_old + y e_new with the first product
 * fused. Shapes of a decode at 300 and 700 positions split 2, 3 and 4 ways,
 * f16 and f32 caches, with and without sinks. bench/llama_fattn.c compares
 * the same form with llama.cpp's op itself (FATTN_SEQ=1 FATTN_THREADS=N). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "ops/attn_kernels.h"
#include "ops/ops.h"
#include "quant/quant.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

enum { DK = 64, DV = 64, NQ = 4, NPOS = 700 };

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* The twin: row r of the block, the positions [lo, hi) of chunk c. */
static void twin_chunk(const sl_attn_kernels *kr, const sl_attn_block *b, bool f16, int r, int lo,
                       int hi, bool sinks, float *acc, float *m_out, float *s_out)
{
    uint16_t q16[DK], a16[DV];
    const float *q = b->q + (size_t)r * b->q_stride;
    for (int d = 0; d < DK; d++) q16[d] = sl_f32_to_fp16(q[d]);
    memset(a16, 0, sizeof a16);
    memset(acc, 0, sizeof(float) * DV);
    float M = -INFINITY, S = 0.0f;
    for (int p = lo; p < hi; p++) {
        const char *kp = (const char *)b->k + (size_t)p * b->k_stride;
        const char *vp = (const char *)b->v + (size_t)p * b->v_stride;
        const float s = (f16 ? kr->dot_f16f16((const uint16_t *)kp, q16, DK)
                             : sl_dot_f32_untiled((const float *)kp, q, DK)) * b->scale;
        float ms = 1.0f, vs = 1.0f;
        if (s > M) {
            ms = expf(M - s);
            M = s;
            if (f16) kr->scale_f16(a16, ms, DV);
            else kr->scale_f32(acc, ms, DV);
        } else {
            vs = expf(s - M);
        }
        if (f16) kr->mad_f16(a16, (const uint16_t *)vp, vs, DV);
        else kr->mad_f32(acc, (const float *)vp, vs, DV);
        S = S * ms + vs;
    }
    if (f16)
        for (int d = 0; d < DV; d++) acc[d] = sl_fp16_to_f32(a16[d]);
    if (sinks) {
        const float sk = b->sinks[r];
        float ms = 1.0f, vs = 1.0f;
        if (sk > M) {
            ms = expf(M - sk);
            M = sk;
            for (int d = 0; d < DV; d++) acc[d] *= ms;
        } else {
            vs = expf(sk - M);
        }
        S = S * ms + vs;
    }
    *m_out = M;
    *s_out = S;
}

static void twin(const sl_attn_kernels *kr, const sl_attn_block *b, bool f16, float *out)
{
    for (int r = 0; r < NQ; r++) {
        float fin[DV] = {0}, acc[DV], M = -INFINITY, S = 0.0f;
        for (int c = 0; c < b->split_n; c++) {
            int lo = c * b->split_len, hi = lo + b->split_len;
            if (hi > b->n_pos) hi = b->n_pos;
            float m, s;
            twin_chunk(kr, b, f16, r, lo, hi > lo ? hi : lo, c == 0 && b->sinks, acc, &m, &s);
            if (s == 0.0f) continue;
            const float mn = fmaxf(M, m), eo = expf(M - mn), en = expf(m - mn);
            for (int d = 0; d < DV; d++) fin[d] = fmaf(fin[d], eo, acc[d] * en);
            S = fmaf(S, eo, s * en);
            M = mn;
        }
        const float inv = S == 0.0f ? 0.0f : 1.0f / S;
        for (int d = 0; d < DV; d++) out[r * DV + d] = fin[d] * inv;
    }
}

TEST(split_decode_matches_its_twin)
{
    static float q[NQ * DK], kf[NPOS * DK], vf[NPOS * DV], sinks[NQ];
    static uint16_t kh[NPOS * DK], vh[NPOS * DV];
    unsigned seed = 99;
    for (int i = 0; i < NQ * DK; i++) q[i] = 2.0f * frand(&seed);
    for (int i = 0; i < NPOS * DK; i++) kh[i] = sl_f32_to_fp16(kf[i] = 1.5f * frand(&seed));
    for (int i = 0; i < NPOS * DV; i++) vh[i] = sl_f32_to_fp16(vf[i] = frand(&seed));
    for (int r = 0; r < NQ; r++) sinks[r] = 0.5f * frand(&seed);
    const size_t scratch_n = sl_attn_scratch_floats(DK, DV, NQ);
    float *scratch = malloc(sizeof(float) * scratch_n);
    float got[NQ * DV], want[NQ * DV], whole[NQ * DV];
    const int views[2][2] = {{300, 512}, {700, 768}}; /* positions used, llama.cpp's view */
    int n_diff = 0, n_cases = 0, n_split_differs = 0;
    for (int f16 = 0; f16 < 2; f16++)
        for (int v = 0; v < 2; v++)
            for (int nth = 2; nth <= 4; nth++)
                for (int sk = 0; sk < 2; sk++) {
                    sl_attn_block b = {
                        .q = q, .q_stride = DK, .k = f16 ? (const void *)kh : (const void *)kf,
                        .v = f16 ? (const void *)vh : (const void *)vf,
                        .k_stride = f16 ? DK * 2 : DK * 4, .v_stride = f16 ? DV * 2 : DV * 4,
                        .dk = DK, .dv = DV, .n_q = NQ, .n_pos = views[v][0], .scale = 0.125f,
                        .out = got, .out_stride = DV, .scratch = scratch, .n_tok = 1,
                        .sinks = sk ? sinks : NULL, .split_n = nth,
                        .split_len = (views[v][1] + nth - 1) / nth};
                    const int ty = f16 ? SL_TYPE_F16 : SL_TYPE_F32;
                    sl_attn_attend_seq(sl_attn_kernels_get(), &b, ty, ty);
                    twin(sl_attn_kernels_ref(), &b, f16, want);
                    n_diff += memcmp(got, want, sizeof got) != 0;
                    b.split_n = 0, b.out = whole;
                    sl_attn_attend_seq(sl_attn_kernels_get(), &b, ty, ty);
                    n_split_differs += memcmp(got, whole, sizeof got) != 0;
                    for (int i = 0; i < NQ * DV; i++)
                        CHECK_MSG(fabsf(got[i] - whole[i]) <= 1e-3f, "split %d: %g vs %g", nth,
                                  (double)got[i], (double)whole[i]);
                    n_cases++;
                }
    CHECK_MSG(n_diff == 0, "%d of %d split cases differ from the twin", n_diff, n_cases);
    /* the split is a different order: it must change bits somewhere */
    CHECK_MSG(n_split_differs > 0, "the split gave the one-chunk bits in all %d cases", n_cases);
    free(scratch);
}

/* A view whose used positions all fall in the first chunk: the other
 * chunks are empty and skipped, the result the one-chunk form's. */
TEST(one_full_chunk_is_the_unsplit_form)
{
    static float q[NQ * DK], kf[NPOS * DK], vf[NPOS * DV];
    unsigned seed = 7;
    for (int i = 0; i < NQ * DK; i++) q[i] = frand(&seed);
    for (int i = 0; i < NPOS * DK; i++) kf[i] = frand(&seed);
    for (int i = 0; i < NPOS * DV; i++) vf[i] = frand(&seed);
    float *scratch = malloc(sizeof(float) * sl_attn_scratch_floats(DK, DV, NQ));
    float a[NQ * DV], b2[NQ * DV];
    sl_attn_block b = {.q = q, .q_stride = DK, .k = kf, .v = vf, .k_stride = DK * 4,
                       .v_stride = DV * 4, .dk = DK, .dv = DV, .n_q = NQ, .n_pos = 200,
                       .scale = 0.125f, .out = a, .out_stride = DV, .scratch = scratch,
                       .n_tok = 1, .split_n = 2, .split_len = 256};
    sl_attn_attend_seq(sl_attn_kernels_get(), &b, SL_TYPE_F32, SL_TYPE_F32);
    b.split_n = 0, b.out = b2;
    sl_attn_attend_seq(sl_attn_kernels_get(), &b, SL_TYPE_F32, SL_TYPE_F32);
    CHECK(memcmp(a, b2, sizeof a) == 0);
    free(scratch);
}

/* The last decode step's logits of a generated qwen3moe after a 256-token
 * prompt (batches of 64, sl_session_set_prompt 256) and 8 generated tokens
 * (single, or one batch as a drafted verify), n_ctx 512, with decode_split
 * split on threads threads; NULL on failure. */
static float *engine_decode(const char *path, int split, int threads, bool verify, int *V)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = threads;
    sl_model *m = NULL;
    sl_session *s = NULL;
    sl_err err;
    float *out = NULL;
    if (sl_model_load(&m, path, &mp, &err)) return NULL;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 512;
    sp.n_batch_max = 64;
    sp.decode_split = split;
    if (!sl_session_create(&s, m, &sp, &err)) {
        int32_t t[264];
        for (int i = 0; i < 264; i++) t[i] = (int32_t)((i * 37 + 11) % 200);
        int rc = 0;
        sl_session_set_prompt(s, 256);
        for (int i = 0; i < 256 && !rc; i += 64) rc = sl_session_eval(s, t + i, 64, &err);
        if (verify && !rc) rc = sl_session_eval(s, t + 256, 8, &err);
        for (int i = 256; i < 264 && !rc && !verify; i++) rc = sl_session_eval(s, t + i, 1, &err);
        *V = sl_model_n_vocab(m);
        if (!rc && (out = malloc(sizeof(float) * (size_t)*V)))
            memcpy(out, sl_session_logits(s), sizeof(float) * (size_t)*V);
    }
    sl_session_free(s);
    sl_model_free(m);
    return out;
}

/* In the engine: past 256 positions (llama.cpp's view 512) a decode_split
 * of 2 changes the bits against one chunk, and neither sluice's thread
 * count nor a drafted verify's batch (generated rows split as llama.cpp's
 * one-token decode) does. */
TEST(engine_split_follows_the_setting_not_the_threads)
{
    char path[512];
    sl_synth_config c;
    sl_err err;
    CHECK(sl_synth_config_init(&c, "qwen3moe", "tiny-k", &err) == 0);
    c.type = SL_SYNTH_Q8_0;
    c.seed = 5;
    t_path(path, sizeof path, "attn_split.gguf");
    CHECK(sl_synth_config_validate(&c, &err) == 0 && sl_synth_write(&c, path, NULL, NULL, NULL, &err) == 0);
    int V = 0;
    float *one = engine_decode(path, 1, 2, false, &V), *two1 = engine_decode(path, 2, 1, false, &V),
          *two2 = engine_decode(path, 2, 2, false, &V), *twov = engine_decode(path, 2, 2, true, &V);
    CHECK(one && two1 && two2 && twov && V > 0);
    if (one && two1 && two2 && twov && V > 0) {
        CHECK_MSG(memcmp(two1, two2, sizeof(float) * (size_t)V) == 0, "the thread count changed the split decode");
        CHECK_MSG(memcmp(one, two1, sizeof(float) * (size_t)V) != 0, "decode_split 2 gave one chunk's bits");
        CHECK_MSG(memcmp(two2, twov, sizeof(float) * (size_t)V) == 0, "a drafted verify differs from the split decode");
    }
    free(one), free(two1), free(two2), free(twov);
    remove(path);
}

int main(void)
{
    RUN(split_decode_matches_its_twin);
    RUN(one_full_chunk_is_the_unsplit_form);
    RUN(engine_split_follows_the_setting_not_the_threads);
    return TEST_REPORT();
}
