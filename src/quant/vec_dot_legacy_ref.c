/* vec_dot_legacy_ref.c - scalar reference dot kernels of the 32-element
 * types against Q8_0 activations, and Q4_1 / Q5_1 against Q8_1 (the
 * reference's pairing: the offset term m * s from Q8_1's f16 block sum s,
 * which overflows to infinity in llama.cpp too when a block's activations
 * sum past 65504 / d).
 *
 * Owns: each kernel in its AVX2 twin's order (lanes of exact integer sums,
 * one FMA chain per lane over the blocks, the lanes summed at the end), so
 * the scalar build gives the same bits.
 * Must not know: instruction sets, threads, matrices. */
#include <math.h>

#include "quant/quant_internal.h"
#include "util/hsum.h"

static uint32_t qh_word(const uint8_t qh[4])
{
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
           (uint32_t)qh[3] << 24;
}

/* nibbles in the Q4_0 order (low nibbles first) minus off */
static inline void unpack4(const uint8_t qs[16], int off, int8_t q[SL_QK])
{
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((qs[j] & 0x0F) - off);
        q[j + 16] = (int8_t)((qs[j] >> 4) - off);
    }
}

/* five-bit levels (Q5_0 / Q5_1) minus off */
static inline void unpack5(const uint8_t qs[16], const uint8_t qh4[4], int off, int8_t q[SL_QK])
{
    uint32_t qh = qh_word(qh4);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(((qs[j] & 0x0F) | (int)((qh >> j) & 1u) << 4) - off);
        q[j + 16] = (int8_t)(((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4) - off);
    }
}

/* The lanes of the AVX2 kernels (and of llama.cpp's): lane l of a block
 * is the exact integer sum of the products of its elements 4l..4l+3; each
 * lane accumulates d * lane over the blocks by FMA, in block order; the
 * lanes are summed at the end (util/hsum.h). Same bits as the AVX2 twin. */
static inline void lanes_fma(float lane[8], float d, const int8_t *q, const int8_t *a)
{
    for (int l = 0; l < 8; l++) {
        int p = 0;
        for (int j = 4 * l; j < 4 * l + 4; j++) p += q[j] * a[j];
        lane[l] = fmaf(d, (float)p, lane[l]);
    }
}

static void vec_dot_q4_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float lane[8] = {0};
    int8_t q[SL_QK];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        unpack4(x[i].qs, 8, q);
        lanes_fma(lane, sl_h2f(x[i].d) * sl_h2f(y[i].d), q, y[i].qs);
    }
    *s = sl_hsum8(lane);
}

static void vec_dot_q5_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float lane[8] = {0};
    int8_t q[SL_QK];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        unpack5(x[i].qs, x[i].qh, 16, q);
        lanes_fma(lane, sl_h2f(x[i].d) * sl_h2f(y[i].d), q, y[i].qs);
    }
    *s = sl_hsum8(lane);
}

/* Q4_1 / Q5_1 against Q8_1, llama.cpp's pairing (ggml_vec_dot_q4_1_q8_1,
 * q5_1_q8_1 on AVX2): the levels' lanes as above with d * y.d, the offset
 * as one scalar FMA chain m * y.s over the blocks (y.s = f16 of y.d times
 * the block's level sum), added after the lanes are summed. */
static float offset_q8_1(const float lane[8], float summs) { return sl_hsum8(lane) + summs; }

static void vec_dot_q4_1_q8_1(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_1 *x = vx;
    const sl_block_q8_1 *y = vy;
    float lane[8] = {0}, summs = 0.0f;
    int8_t q[SL_QK];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        unpack4(x[i].qs, 0, q);
        summs = fmaf(sl_h2f(x[i].m), sl_h2f(y[i].s), summs);
        lanes_fma(lane, sl_h2f(x[i].d) * sl_h2f(y[i].d), q, y[i].qs);
    }
    *s = offset_q8_1(lane, summs);
}

static void vec_dot_q5_1_q8_1(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_1 *x = vx;
    const sl_block_q8_1 *y = vy;
    float lane[8] = {0}, summs = 0.0f;
    int8_t q[SL_QK];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        unpack5(x[i].qs, x[i].qh, 0, q);
        summs = fmaf(sl_h2f(x[i].m), sl_h2f(y[i].s), summs);
        lanes_fma(lane, sl_h2f(x[i].d) * sl_h2f(y[i].d), q, y[i].qs);
    }
    *s = offset_q8_1(lane, summs);
}

/* Their multi-token form: the single-token kernel per token (so the
 * same bits by construction; the weight row stays in L1 between tokens). */
static void vec_dot_n_q4_1_q8_1(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    for (int t = 0; t < nt; t++) vec_dot_q4_1_q8_1(n, &s[t], vx, ys[t]);
}

static void vec_dot_n_q5_1_q8_1(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    for (int t = 0; t < nt; t++) vec_dot_q5_1_q8_1(n, &s[t], vx, ys[t]);
}

static void vec_dot_q8_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q8_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float lane[8] = {0};
    for (int64_t i = 0; i < n / SL_QK; i++)
        lanes_fma(lane, sl_h2f(x[i].d) * sl_h2f(y[i].d), x[i].qs, y[i].qs);
    *s = sl_hsum8(lane);
}

void sl_vec_dot_fill_legacy_ref(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_Q4_0] = vec_dot_q4_0_q8_0;
    k->vec_dot[SL_TYPE_Q4_1] = vec_dot_q4_1_q8_1;
    k->vec_dot[SL_TYPE_Q5_0] = vec_dot_q5_0_q8_0;
    k->vec_dot[SL_TYPE_Q5_1] = vec_dot_q5_1_q8_1;
    k->vec_dot_n[SL_TYPE_Q4_1] = vec_dot_n_q4_1_q8_1; /* kept by the vec_dot_n fill */
    k->vec_dot_n[SL_TYPE_Q5_1] = vec_dot_n_q5_1_q8_1;
    k->vec_dot[SL_TYPE_Q8_0] = vec_dot_q8_0_q8_0;
    k->from_float[SL_TYPE_Q8_0] = sl_quant_q8_0_ref;
    k->from_float[SL_TYPE_Q8_1] = sl_quant_q8_1_ref;
}
