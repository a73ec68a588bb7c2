/* vec_dot_k_lanes.h - the K-quant dot products of one super-block in the
 * AVX2 kernels' lane arrangement, in scalar C, for the scalar twins
 * (vec_dot_k_ref.c, vec_dot_n_ref.c).
 *
 * The AVX2 kernels (which follow llama.cpp's) keep eight int32 lanes per
 * super-block: lane j holds, for every 32-element chunk, elements 4j..4j+3
 * times their sub-block's scale; then one float FMA per lane and
 * super-block with d, and a fixed horizontal sum at the end. The integer
 * lanes are exact, so computing the same lanes here and the same FMAs
 * (fmaf rounds once, like the instruction) in the same order gives the
 * AVX2 bits on any machine. Static inline: included by the two scalar
 * files only. */
#ifndef SL_QUANT_VEC_DOT_K_LANES_H
#define SL_QUANT_VEC_DOT_K_LANES_H

#include <math.h>

#include "quant/quant_internal.h"

/* lanes[j] = sum over the 8 chunks ch of sc[(32 ch + 4 j) / sb] * (the dot
 * of elements 32 ch + 4 j .. + 3 of q and a); sb = 32 (Q4_K, Q5_K) or 16
 * (Q2_K, Q3_K, Q6_K) elements per sub-block, sc[] that many scales. */
static inline void sl_k_lanes(const int8_t *q, const int8_t *a, const int *sc, int sb,
                              int32_t lanes[8])
{
    for (int j = 0; j < 8; j++) {
        int32_t s = 0;
        for (int ch = 0; ch < 8; ch++) {
            const int e = 32 * ch + 4 * j;
            int32_t d4 = q[e] * a[e] + q[e + 1] * a[e + 1] + q[e + 2] * a[e + 2] + q[e + 3] * a[e + 3];
            s += sc[e / sb] * d4;
        }
        lanes[j] = s;
    }
}

/* acc[j] = fma(d, lanes[j], acc[j]) */
static inline void sl_k_fma8(float acc[8], float d, const int32_t lanes[8])
{
    for (int j = 0; j < 8; j++) acc[j] = fmaf(d, (float)lanes[j], acc[j]);
}

/* the AVX2 sum of eight lanes: high half onto low, then pairs */
static inline float sl_k_hsum8(const float v[8])
{
    const float t0 = v[0] + v[4], t1 = v[1] + v[5], t2 = v[2] + v[6], t3 = v[3] + v[7];
    return (t0 + t2) + (t1 + t3);
}

/* of four lanes: (v0 + v2) + (v1 + v3) */
static inline float sl_k_hsum4(const float v[4])
{
    return (v[0] + v[2]) + (v[1] + v[3]);
}

/* md[l] = m[2l] * bs[2l] + m[2l+1] * bs[2l+1] with bs[k] = bsums[2k] +
 * bsums[2k+1]: the offset lanes of Q4_K / Q5_K (madd of mins with the
 * pair-summed bsums) */
static inline void sl_k4_min_lanes(const int m[8], const int16_t bsums[16], int32_t md[4])
{
    for (int l = 0; l < 4; l++)
        md[l] = m[2 * l] * (bsums[4 * l] + bsums[4 * l + 1]) +
                m[2 * l + 1] * (bsums[4 * l + 2] + bsums[4 * l + 3]);
}

/* o[j] = c[2j] * bsums[2j] + c[2j+1] * bsums[2j+1]: madd of sixteen
 * per-sub-block values with the sixteen bsums (Q2_K's mins, Q6_K's
 * scales for its -32) */
static inline void sl_k16_bsum_lanes(const int c[16], const int16_t bsums[16], int32_t o[8])
{
    for (int j = 0; j < 8; j++) o[j] = c[2 * j] * bsums[2 * j] + c[2 * j + 1] * bsums[2 * j + 1];
}

/* Levels of one super-block as the AVX2 kernels feed them to maddubs. */

/* Q4_K: 0..15; element 64c + l = lo(qs[32c + l]), 64c + 32 + l = hi */
static inline void sl_k_levels_q4_K(const sl_block_q4_K *x, int8_t q[SL_QK_K])
{
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            q[64 * c + l] = (int8_t)(x->qs[32 * c + l] & 0x0F);
            q[64 * c + 32 + l] = (int8_t)(x->qs[32 * c + l] >> 4);
        }
}

/* Q5_K: 0..31, bit 4 from qh */
static inline void sl_k_levels_q5_K(const sl_block_q5_K *x, int8_t q[SL_QK_K])
{
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int h0 = (x->qh[l] >> (2 * c)) & 1, h1 = (x->qh[l] >> (2 * c + 1)) & 1;
            q[64 * c + l] = (int8_t)((x->qs[32 * c + l] & 0x0F) | h0 << 4);
            q[64 * c + 32 + l] = (int8_t)((x->qs[32 * c + l] >> 4) | h1 << 4);
        }
}

/* Q6_K: unsigned 0..63 (the -32 goes through bsums, as on AVX2) */
static inline void sl_k_levels_q6_K(const sl_block_q6_K *x, int8_t q[SL_QK_K])
{
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = x->ql + 64 * h, *qh = x->qh + 32 * h;
        int8_t *o = q + 128 * h;
        for (int l = 0; l < 32; l++) {
            o[l] = (int8_t)((ql[l] & 0x0F) | ((qh[l] >> 0) & 3) << 4);
            o[l + 32] = (int8_t)((ql[l + 32] & 0x0F) | ((qh[l] >> 2) & 3) << 4);
            o[l + 64] = (int8_t)((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4);
            o[l + 96] = (int8_t)((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4);
        }
    }
}

/* Q2_K: 0..3 */
static inline void sl_k_levels_q2_K(const sl_block_q2_K *x, int8_t q[SL_QK_K])
{
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++)
                q[128 * h + 32 * j + l] = (int8_t)((x->qs[32 * h + l] >> (2 * j)) & 3);
}

/* Q3_K: signed -4..3 (the AVX2 kernel subtracts the 4 inside each lane) */
static inline void sl_k_levels_q3_K(const sl_block_q3_K *x, int8_t q[SL_QK_K])
{
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                int v = (x->qs[32 * h + l] >> (2 * j)) & 3;
                int hb = (x->hmask[l] >> (4 * h + j)) & 1;
                q[128 * h + 32 * j + l] = (int8_t)(v - 4 + 4 * hb);
            }
}

/* ---- one super-block's contribution, per type -----------------------------
 * Each updates the accumulators of one (row, token) pair exactly as the
 * AVX2 kernel's iteration does. sc / m: the decoded scales (and mins). */

/* Q4_K: acc (8 lanes) and accm (4 lanes) */
static inline void sl_k_step_q4_K(const int8_t *q, const int sc[8], const int m[8], float xd,
                                  float xdmin, const sl_block_q8_K *y, float acc[8], float accm[4])
{
    const float d = y->d * xd, dmin = -y->d * xdmin;
    int32_t md[4], lanes[8];
    sl_k4_min_lanes(m, y->bsums, md);
    for (int l = 0; l < 4; l++) accm[l] = fmaf(dmin, (float)md[l], accm[l]);
    sl_k_lanes(q, y->qs, sc, 32, lanes);
    sl_k_fma8(acc, d, lanes);
}

/* Q5_K: acc (8 lanes) and the scalar offset chain summs */
static inline void sl_k_step_q5_K(const int8_t *q, const int sc[8], const int m[8], float xd,
                                  float xdmin, const sl_block_q8_K *y, float acc[8], float *summs)
{
    const float d = y->d * xd, dmin = -y->d * xdmin;
    int32_t md[4], lanes[8];
    sl_k4_min_lanes(m, y->bsums, md);
    *summs = fmaf(dmin, (float)(md[0] + md[1] + md[2] + md[3]), *summs);
    sl_k_lanes(q, y->qs, sc, 32, lanes);
    sl_k_fma8(acc, d, lanes);
}

/* Q6_K: lanes of unsigned levels minus 32 * (scales . bsums) lanes */
static inline void sl_k_step_q6_K(const int8_t *q, const int sc[16], float xd,
                                  const sl_block_q8_K *y, float acc[8])
{
    int32_t lanes[8], corr[8];
    sl_k_lanes(q, y->qs, sc, 16, lanes);
    sl_k16_bsum_lanes(sc, y->bsums, corr);
    for (int j = 0; j < 8; j++) lanes[j] -= 32 * corr[j];
    sl_k_fma8(acc, y->d * xd, lanes);
}

/* Q2_K: the mins' FMA first, then the levels', into one accumulator */
static inline void sl_k_step_q2_K(const int8_t *q, const int sc[16], const int mn[16], float xd,
                                  float xdmin, const sl_block_q8_K *y, float acc[8])
{
    int32_t lanes[8], md[8];
    sl_k16_bsum_lanes(mn, y->bsums, md);
    sl_k_fma8(acc, -y->d * xdmin, md);
    sl_k_lanes(q, y->qs, sc, 16, lanes);
    sl_k_fma8(acc, y->d * xd, lanes);
}

/* Q3_K: signed levels, no offset term */
static inline void sl_k_step_q3_K(const int8_t *q, const int sc[16], float xd,
                                  const sl_block_q8_K *y, float acc[8])
{
    int32_t lanes[8];
    sl_k_lanes(q, y->qs, sc, 16, lanes);
    sl_k_fma8(acc, y->d * xd, lanes);
}

/* decoded scales */
static inline void sl_k_scales_q4_K(const uint8_t s[12], int sc[8], int m[8])
{
    for (int k = 0; k < 8; k++) {
        uint8_t a, b;
        sl_k4_scale_min(s, k, &a, &b);
        sc[k] = a;
        m[k] = b;
    }
}

static inline void sl_k_scales_q3_K(const uint8_t s[12], int sc[16])
{
    int8_t v[16];
    sl_q3k_scales(s, v);
    for (int k = 0; k < 16; k++) sc[k] = v[k];
}

#endif
