/* test_attn_sinks.c - the attention sinks' last step in the two forms
 * llama.cpp's CPU build computes: its tiled flash attention (a batch of
 * SL_ATTN_QTILE+ queries over an f16 / f32 cache) adds the sink with the
 * sum updated as fma(S, ms, vs), one rounding (its compiler contracts that
 * line); its one-chunk form as S x ms + vs, two roundings. They differ only
 * when the sink exceeds the row's maximum. The gpt-oss-MXFP4_MOE fixture
 * meets such a case (layer 2, chunk 25, position 115, head 6): with two
 * roundings its last 12 rows of that chunk were off by up to 4e-5 in KLD.
 * Twins written here: the step at the fixture's values, and a two-position
 * block through every tiled kernel set and the one-chunk form. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attn_kernels.h"
#include "ops/attn_kernels_neon.h"
#include "ops/vexp.h"
#include "quant/quant.h"
#include "test.h"

/* The fixture's row at the sinks: running sum, maximum, sink (hex floats as
 * sluice held them there, the same as llama.cpp's up to this step). */
static const float FIX_S = 0x1.a6791ep+0f, FIX_M = -0x1.978072p-2f, FIX_SINK = 0x1.41115ap+0f;

TEST(tiled_sinks_step_fuses_at_the_fixture_values)
{
    float acc[4] = {0.5f, -0.25f, 1.0f, 3.0f}, mx = FIX_M, sum = FIX_S;
    const float sink = FIX_SINK;
    sl_attn_block b = {.dv = 4, .n_q = 1, .sinks = &sink};
    sl_attn_sinks_tiled(&b, acc, &mx, &sum);
    const float ms = expf(FIX_M - FIX_SINK);
    CHECK(sum == fmaf(FIX_S, ms, 1.0f));
    /* the values that tell the forms apart: llama.cpp's (fused) and the
     * two-rounding one sluice had */
    CHECK_MSG(sum == 0x1.50f6c6p+0f, "sum %a", (double)sum);
    CHECK(FIX_S * ms + 1.0f == 0x1.50f6c4p+0f);
    CHECK(acc[0] == 0.5f * ms && acc[3] == 3.0f * ms);
    /* a sink under the maximum: the sum gains e^(sink - max), no rescale */
    float acc2[4] = {0.5f, -0.25f, 1.0f, 3.0f}, mx2 = 2.0f, sum2 = FIX_S;
    sl_attn_sinks_tiled(&b, acc2, &mx2, &sum2);
    CHECK(sum2 == FIX_S + expf(FIX_SINK - 2.0f) && acc2[3] == 3.0f);
}

enum { D = 8 };

/* The sink against the window's maximum a, as every form takes it: when
 * it exceeds a, the values are rescaled by ms = e^(a - sink) and the sink
 * weighs 1; else it weighs vs = e^(sink - a). */
static void sink_scales(float a, float sink, float *acc, float *ms, float *vs)
{
    *ms = 1.0f;
    *vs = 1.0f;
    if (sink > a) {
        *ms = expf(a - sink);
        for (int d = 0; d < D; d++) acc[d] *= *ms;
    } else {
        *vs = expf(sink - a);
    }
}

/* Twin of a tiled kernel on two positions with scores a >= c (q = e0,
 * keys a e0 and c e0, scale 1: exact scores), values v0, v1: one tile, the
 * weights by ggml's vector exponential, summed, the values as an FMA chain
 * over positions, then the sink (fused) and the division. */
static void twin_tiled(float a, float c, const float *v0, const float *v1, float sink,
                       float *out)
{
    const float w0 = sl_vexpf(a - a), w1 = sl_vexpf(c - a);
    float sum = (float)(0.0 + (double)(w0 + w1)), acc[D];
    for (int d = 0; d < D; d++) acc[d] = fmaf(w1, v1[d], fmaf(w0, v0[d], 0.0f));
    float ms, vs;
    sink_scales(a, sink, acc, &ms, &vs);
    sum = fmaf(sum, ms, vs);
    const float inv = 1.0f / sum;
    for (int d = 0; d < D; d++) out[d] = acc[d] * inv;
}

/* Twin of the one-chunk form (f32 cache): position by position, the sum
 * and the sink's step in two roundings. */
static void twin_seq(float a, float c, const float *v0, const float *v1, float sink, float *out)
{
    float acc[D], S = 1.0f; /* position 0: new maximum a, weight 1 */
    for (int d = 0; d < D; d++) acc[d] = fmaf(v0[d], 1.0f, 0.0f);
    const float vs1 = expf(c - a);
    for (int d = 0; d < D; d++) acc[d] = fmaf(v1[d], vs1, acc[d]);
    S = S * 1.0f + vs1;
    float ms, vs;
    sink_scales(a, sink, acc, &ms, &vs);
    S = S * ms + vs;
    const float inv = 1.0f / S;
    for (int d = 0; d < D; d++) out[d] = acc[d] * inv;
}

TEST(tiled_kernels_take_the_fused_sinks_the_one_chunk_form_not)
{
    const sl_attn_kernels *sets[4] = {sl_attn_kernels_ref(), sl_attn_kernels_avx2(),
                                      sl_attn_kernels_avx512(), sl_attn_kernels_neon()};
    float q[D] = {1.0f}, keys[2 * D] = {0}, vals[2 * D], out[D], want[D];
    for (int d = 0; d < D; d++) {
        vals[d] = 0.125f * (float)(d + 1);
        vals[D + d] = -0.5f + 0.0625f * (float)d;
    }
    const size_t sf = sl_attn_scratch_floats(D, D, 1);
    float *scratch = malloc(sizeof(float) * sf);
    CHECK(scratch != NULL);
    int n_case = 0, n_trigger = 0;
    for (int i = 1; i <= 192 && scratch; i++) {
        const float a = FIX_M, c = FIX_M - 0.015625f * (float)i, sink = FIX_SINK;
        keys[0] = a, keys[D] = c;
        sl_attn_block b = {.q = q, .q_stride = D, .k = keys, .v = vals, .k_stride = D * 4,
                           .v_stride = D * 4, .dk = D, .dv = D, .n_q = 1, .n_pos = 2,
                           .scale = 1.0f, .out = out, .out_stride = D, .scratch = scratch,
                           .sinks = &sink, .n_tok = 1, .q_tok = D, .out_tok = D};
        /* does this case tell the two roundings of the sum apart? */
        const float w1 = sl_vexpf(c - a), s2 = (float)(0.0 + (double)(1.0f + w1));
        const float ms = expf(a - sink);
        n_trigger += fmaf(s2, ms, 1.0f) != s2 * ms + 1.0f;
        twin_tiled(a, c, vals, vals + D, sink, want);
        for (int k = 0; k < 4; k++) {
            if (!sets[k]) continue;
            memset(out, 0, sizeof out);
            sets[k]->attend_f32(&b);
            CHECK_MSG(!memcmp(out, want, sizeof out), "set %d case %d: %a vs %a", k, i,
                      (double)out[0], (double)want[0]);
            memset(out, 0, sizeof out);
            sl_attn_attend_tokens(sets[k], &b, 0);
            CHECK_MSG(!memcmp(out, want, sizeof out), "set %d tokens case %d", k, i);
        }
        twin_seq(a, c, vals, vals + D, sink, want);
        sl_attn_attend_seq(sl_attn_kernels_get(), &b, SL_TYPE_F32, SL_TYPE_F32);
        CHECK_MSG(!memcmp(out, want, sizeof out), "one-chunk case %d: %a vs %a", i,
                  (double)out[0], (double)want[0]);
        n_case++;
    }
    /* the cases must include some where the fused and two-rounding sums
     * differ, or the test would pass with either */
    CHECK_MSG(n_trigger >= 8, "%d of %d cases tell the forms apart", n_trigger, n_case);
    free(scratch);
}

int main(void)
{
    RUN(tiled_sinks_step_fuses_at_the_fixture_values);
    RUN(tiled_kernels_take_the_fused_sinks_the_one_chunk_form_not);
    return TEST_REPORT();
}
