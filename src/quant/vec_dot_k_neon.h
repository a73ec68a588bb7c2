/* vec_dot_k_neon.h - the K-quant dot kernels (Q2_K .. Q6_K against Q8_K)
 * and the Q8_0 dot in NEON, written once for two inner products.
 *
 * Included by vec_dot_k_neon.c (ARMv8.0: SL_NEON_DOT4 is a widening
 * multiply and two pairwise adds) and vec_dot_k_dotprod.c (SDOT), which
 * define SL_NEON_DOT4(q, a) -> int32x4_t, lane j = q[4j..4j+3] .
 * a[4j..4j+3], and SL_NEON_NAME(x) (the suffix of the function names)
 * before including it. Both compute the scalar twins' integers
 * (vec_dot_k_lanes.h: eight int32 lanes per super-block, lane j holding
 * elements 4j..4j+3 of every 32-element chunk, here as two int32x4 halves)
 * and then the twins' float steps: one fused multiply-add per lane (vfmaq
 * rounds once, like fmaf), the same horizontal sums. Integer sums are exact
 * in any order, so the bits are the twins'.
 * Must not know: threads, matrices, which CPU we run on. */
#ifndef SL_QUANT_VEC_DOT_K_NEON_H
#define SL_QUANT_VEC_DOT_K_NEON_H

#include <arm_neon.h>

#include "quant/quant_internal.h"
#include "quant/vec_dot_k_lanes.h"

/* (t0 + t2) + (t1 + t3) for t = lo + hi: sl_k_hsum8 of the eight lanes */
static inline float sl_neon_hsum8(float32x4_t lo, float32x4_t hi)
{
    const float32x4_t t = vaddq_f32(lo, hi);
    const float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
    return vget_lane_f32(u, 0) + vget_lane_f32(u, 1);
}

/* sl_k_hsum4: (v0 + v2) + (v1 + v3) */
static inline float sl_neon_hsum4(float32x4_t v)
{
    const float32x2_t u = vadd_f32(vget_low_f32(v), vget_high_f32(v));
    return vget_lane_f32(u, 0) + vget_lane_f32(u, 1);
}

/* acc = fma(d, (float)lanes, acc), lane by lane */
static inline float32x4_t sl_neon_fma_lanes(float32x4_t acc, float d, int32x4_t lanes)
{
    return vfmaq_f32(acc, vdupq_n_f32(d), vcvtq_f32_s32(lanes));
}

/* The eight float lanes of a K-quant kernel (vec_dot_k_lanes.h) as two
 * halves: lanes 0..3 in lo, 4..7 in hi. */
typedef struct sl_neon_acc8 {
    float32x4_t lo, hi;
} sl_neon_acc8;

static inline sl_neon_acc8 sl_neon_acc8_zero(void)
{
    const sl_neon_acc8 a = {vdupq_n_f32(0), vdupq_n_f32(0)};
    return a;
}

/* sl_neon_fma_lanes on both halves with one d */
static inline void sl_neon_acc8_fma(sl_neon_acc8 *a, float d, int32x4_t lo, int32x4_t hi)
{
    a->lo = sl_neon_fma_lanes(a->lo, d, lo);
    a->hi = sl_neon_fma_lanes(a->hi, d, hi);
}

/* sl_neon_hsum8 of the eight lanes */
static inline float sl_neon_acc8_sum(const sl_neon_acc8 *a) { return sl_neon_hsum8(a->lo, a->hi); }

#endif /* SL_QUANT_VEC_DOT_K_NEON_H */

/* ---- the kernels (once per includer) -------------------------------------- */

/* One 32-element chunk: q0 / q1 its two halves of levels, a its
 * activations; s0 / s1 the scales of the halves (equal when a sub-block is
 * 32 elements). */
static inline void SL_NEON_NAME(chunk)(int32x4_t *lo, int32x4_t *hi, int8x16_t q0, int8x16_t q1,
                                       const int8_t *a, int s0, int s1)
{
    *lo = vmlaq_n_s32(*lo, SL_NEON_DOT4(q0, vld1q_s8(a)), s0);
    *hi = vmlaq_n_s32(*hi, SL_NEON_DOT4(q1, vld1q_s8(a + 16)), s1);
}

static void SL_NEON_NAME(q4_K)(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_K *x = vx;
    const sl_block_q8_K *y = vy;
    sl_neon_acc8 acc = sl_neon_acc8_zero();
    float32x4_t accm = vdupq_n_f32(0);
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[8], m[8];
        int32_t md[4];
        sl_k_scales_q4_K(x[i].scales, sc, m);
        const float d = y[i].d * sl_h2f(x[i].d), dmin = -y[i].d * sl_h2f(x[i].dmin);
        sl_k4_min_lanes(m, y[i].bsums, md);
        accm = sl_neon_fma_lanes(accm, dmin, vld1q_s32(md));
        int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
        const int8_t *a = y[i].qs;
        for (int c = 0; c < 4; c++) {
            const uint8x16_t b0 = vld1q_u8(x[i].qs + 32 * c), b1 = vld1q_u8(x[i].qs + 32 * c + 16);
            SL_NEON_NAME(chunk)(&lo, &hi, vreinterpretq_s8_u8(vandq_u8(b0, m4)),
                                vreinterpretq_s8_u8(vandq_u8(b1, m4)), a + 64 * c, sc[2 * c],
                                sc[2 * c]);
            SL_NEON_NAME(chunk)(&lo, &hi, vreinterpretq_s8_u8(vshrq_n_u8(b0, 4)),
                                vreinterpretq_s8_u8(vshrq_n_u8(b1, 4)), a + 64 * c + 32,
                                sc[2 * c + 1], sc[2 * c + 1]);
        }
        sl_neon_acc8_fma(&acc, d, lo, hi);
    }
    *s = sl_neon_acc8_sum(&acc) + sl_neon_hsum4(accm);
}

static void SL_NEON_NAME(q5_K)(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_K *x = vx;
    const sl_block_q8_K *y = vy;
    sl_neon_acc8 acc = sl_neon_acc8_zero();
    float summs = 0.0f;
    const uint8x16_t m4 = vdupq_n_u8(0x0F), b4 = vdupq_n_u8(0x10);
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[8], m[8];
        int32_t md[4];
        sl_k_scales_q4_K(x[i].scales, sc, m);
        const float d = y[i].d * sl_h2f(x[i].d), dmin = -y[i].d * sl_h2f(x[i].dmin);
        sl_k4_min_lanes(m, y[i].bsums, md);
        summs = fmaf(dmin, (float)(md[0] + md[1] + md[2] + md[3]), summs);
        const uint8x16_t h0 = vld1q_u8(x[i].qh), h1 = vld1q_u8(x[i].qh + 16);
        int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
        const int8_t *a = y[i].qs;
        for (int c = 0; c < 4; c++) {
            const uint8x16_t b0 = vld1q_u8(x[i].qs + 32 * c), b1 = vld1q_u8(x[i].qs + 32 * c + 16);
            const uint8x16_t ml = vdupq_n_u8((uint8_t)(1u << (2 * c)));
            const uint8x16_t mh = vdupq_n_u8((uint8_t)(2u << (2 * c)));
            const uint8x16_t l0 = vorrq_u8(vandq_u8(b0, m4), vandq_u8(vtstq_u8(h0, ml), b4));
            const uint8x16_t l1 = vorrq_u8(vandq_u8(b1, m4), vandq_u8(vtstq_u8(h1, ml), b4));
            const uint8x16_t u0 = vorrq_u8(vshrq_n_u8(b0, 4), vandq_u8(vtstq_u8(h0, mh), b4));
            const uint8x16_t u1 = vorrq_u8(vshrq_n_u8(b1, 4), vandq_u8(vtstq_u8(h1, mh), b4));
            SL_NEON_NAME(chunk)(&lo, &hi, vreinterpretq_s8_u8(l0), vreinterpretq_s8_u8(l1),
                                a + 64 * c, sc[2 * c], sc[2 * c]);
            SL_NEON_NAME(chunk)(&lo, &hi, vreinterpretq_s8_u8(u0), vreinterpretq_s8_u8(u1),
                                a + 64 * c + 32, sc[2 * c + 1], sc[2 * c + 1]);
        }
        sl_neon_acc8_fma(&acc, d, lo, hi);
    }
    *s = sl_neon_acc8_sum(&acc) + summs;
}

static void SL_NEON_NAME(q6_K)(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q6_K *x = vx;
    const sl_block_q8_K *y = vy;
    sl_neon_acc8 acc = sl_neon_acc8_zero();
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(3);
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16];
        for (int k = 0; k < 16; k++) sc[k] = x[i].scales[k];
        int32_t corr[8];
        sl_k16_bsum_lanes(sc, y[i].bsums, corr);
        int32x4_t lo = vmulq_n_s32(vld1q_s32(corr), -32), hi = vmulq_n_s32(vld1q_s32(corr + 4), -32);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            const int8_t *a = y[i].qs + 128 * h;
            const int *s16 = sc + 8 * h;
            const uint8x16_t q0 = vld1q_u8(ql), q1 = vld1q_u8(ql + 16);
            const uint8x16_t q2 = vld1q_u8(ql + 32), q3 = vld1q_u8(ql + 48);
            const uint8x16_t e0 = vld1q_u8(qh), e1 = vld1q_u8(qh + 16);
            /* the four 32-element chunks of this half: low nibbles of
             * ql[0..31] / ql[32..63], then the high nibbles, each with two
             * bits of qh (shift 0, 2, 4, 6) */
            const uint8x16_t c0a = vorrq_u8(vandq_u8(q0, m4), vshlq_n_u8(vandq_u8(e0, m3), 4));
            const uint8x16_t c0b = vorrq_u8(vandq_u8(q1, m4), vshlq_n_u8(vandq_u8(e1, m3), 4));
            const uint8x16_t c1a =
                vorrq_u8(vandq_u8(q2, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(e0, 2), m3), 4));
            const uint8x16_t c1b =
                vorrq_u8(vandq_u8(q3, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(e1, 2), m3), 4));
            const uint8x16_t c2a =
                vorrq_u8(vshrq_n_u8(q0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(e0, 4), m3), 4));
            const uint8x16_t c2b =
                vorrq_u8(vshrq_n_u8(q1, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(e1, 4), m3), 4));
            const uint8x16_t c3a = vorrq_u8(vshrq_n_u8(q2, 4), vshlq_n_u8(vshrq_n_u8(e0, 6), 4));
            const uint8x16_t c3b = vorrq_u8(vshrq_n_u8(q3, 4), vshlq_n_u8(vshrq_n_u8(e1, 6), 4));
            SL_NEON_NAME(chunk)(&lo, &hi, vreinterpretq_s8_u8(c0a), vreinterpretq_s8_u8(c0b), a,
                                s16[0], s16[1]);
            SL_NEON_NAME(chunk)(&lo, &hi, vreinterpretq_s8_u8(c1a), vreinterpretq_s8_u8(c1b),
                                a + 32, s16[2], s16[3]);
            SL_NEON_NAME(chunk)(&lo, &hi, vreinterpretq_s8_u8(c2a), vreinterpretq_s8_u8(c2b),
                                a + 64, s16[4], s16[5]);
            SL_NEON_NAME(chunk)(&lo, &hi, vreinterpretq_s8_u8(c3a), vreinterpretq_s8_u8(c3b),
                                a + 96, s16[6], s16[7]);
        }
        const float d = y[i].d * sl_h2f(x[i].d);
        sl_neon_acc8_fma(&acc, d, lo, hi);
    }
    *s = sl_neon_acc8_sum(&acc);
}

static void SL_NEON_NAME(q2_K)(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q2_K *x = vx;
    const sl_block_q8_K *y = vy;
    sl_neon_acc8 acc = sl_neon_acc8_zero();
    const uint8x16_t m3 = vdupq_n_u8(3);
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16], mn[16];
        for (int k = 0; k < 16; k++) {
            sc[k] = x[i].scales[k] & 0x0F;
            mn[k] = x[i].scales[k] >> 4;
        }
        int32_t md[8];
        sl_k16_bsum_lanes(mn, y[i].bsums, md);
        const float dm = -y[i].d * sl_h2f(x[i].dmin), d = y[i].d * sl_h2f(x[i].d);
        sl_neon_acc8_fma(&acc, dm, vld1q_s32(md), vld1q_s32(md + 4));
        int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
        for (int h = 0; h < 2; h++) {
            const uint8x16_t b0 = vld1q_u8(x[i].qs + 32 * h), b1 = vld1q_u8(x[i].qs + 32 * h + 16);
            for (int j = 0; j < 4; j++) {
                const int8x16_t shift = vdupq_n_s8((int8_t)(-2 * j));
                const uint8x16_t l0 = vandq_u8(vshlq_u8(b0, shift), m3);
                const uint8x16_t l1 = vandq_u8(vshlq_u8(b1, shift), m3);
                const int k = 8 * h + 2 * j; /* sub-block of the chunk's first half */
                SL_NEON_NAME(chunk)(&lo, &hi, vreinterpretq_s8_u8(l0), vreinterpretq_s8_u8(l1),
                                    y[i].qs + 128 * h + 32 * j, sc[k], sc[k + 1]);
            }
        }
        sl_neon_acc8_fma(&acc, d, lo, hi);
    }
    *s = sl_neon_acc8_sum(&acc);
}

static void SL_NEON_NAME(q3_K)(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q3_K *x = vx;
    const sl_block_q8_K *y = vy;
    sl_neon_acc8 acc = sl_neon_acc8_zero();
    const uint8x16_t m3 = vdupq_n_u8(3), four = vdupq_n_u8(4);
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16];
        sl_k_scales_q3_K(x[i].scales, sc);
        const uint8x16_t hm0 = vld1q_u8(x[i].hmask), hm1 = vld1q_u8(x[i].hmask + 16);
        int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
        for (int h = 0; h < 2; h++) {
            const uint8x16_t b0 = vld1q_u8(x[i].qs + 32 * h), b1 = vld1q_u8(x[i].qs + 32 * h + 16);
            for (int j = 0; j < 4; j++) {
                const int8x16_t shift = vdupq_n_s8((int8_t)(-2 * j));
                const uint8x16_t hb = vdupq_n_u8((uint8_t)(1u << (4 * h + j)));
                /* v - 4 + 4 * hb = v - (hb ? 0 : 4) */
                const uint8x16_t o0 = vbicq_u8(four, vtstq_u8(hm0, hb));
                const uint8x16_t o1 = vbicq_u8(four, vtstq_u8(hm1, hb));
                const int8x16_t l0 = vsubq_s8(
                    vreinterpretq_s8_u8(vandq_u8(vshlq_u8(b0, shift), m3)), vreinterpretq_s8_u8(o0));
                const int8x16_t l1 = vsubq_s8(
                    vreinterpretq_s8_u8(vandq_u8(vshlq_u8(b1, shift), m3)), vreinterpretq_s8_u8(o1));
                const int k = 8 * h + 2 * j;
                SL_NEON_NAME(chunk)(&lo, &hi, l0, l1, y[i].qs + 128 * h + 32 * j, sc[k], sc[k + 1]);
            }
        }
        const float d = y[i].d * sl_h2f(x[i].d);
        sl_neon_acc8_fma(&acc, d, lo, hi);
    }
    *s = sl_neon_acc8_sum(&acc);
}

/* Q8_0 x Q8_0: lane l of a block = elements 4l..4l+3 (exact), one FMA chain
 * per lane over the blocks with d = dx * dy, the lanes summed at the end
 * (vec_dot_legacy_ref.c) */
static void SL_NEON_NAME(q8_0)(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q8_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    sl_neon_acc8 acc = sl_neon_acc8_zero();
    for (int64_t i = 0; i < n / SL_QK; i++) {
        const float d = sl_h2f(x[i].d) * sl_h2f(y[i].d);
        const int32x4_t lo = SL_NEON_DOT4(vld1q_s8(x[i].qs), vld1q_s8(y[i].qs));
        const int32x4_t hi = SL_NEON_DOT4(vld1q_s8(x[i].qs + 16), vld1q_s8(y[i].qs + 16));
        sl_neon_acc8_fma(&acc, d, lo, hi);
    }
    *s = sl_neon_acc8_sum(&acc);
}

/* ---- multi-token forms (one weight row, up to SL_VEC_DOT_N_MAX tokens) ----
 * The scalar multi-token kernels (vec_dot_n_ref.c) unpack a super-block's
 * levels once (sl_k_levels_*) and run the single kernel's step per token;
 * here the same unpacking, then per token the NEON lanes and the step's
 * float operations in its order, so s[t] has the single kernel's bits. */

#define SL_NEON_NMAX SL_VEC_DOT_N_MAX

/* the eight lanes of sl_k_lanes added to *lo / *hi: levels q (256), the
 * token's activations a, scales sc of sub-blocks of sb elements */
static inline void SL_NEON_NAME(lanes)(const int8_t *q, const int8_t *a, const int *sc, int sb,
                                       int32x4_t *lo, int32x4_t *hi)
{
    int32x4_t l = *lo, h = *hi;
    for (int e = 0; e < SL_QK_K; e += 32) {
        l = vmlaq_n_s32(l, SL_NEON_DOT4(vld1q_s8(q + e), vld1q_s8(a + e)), sc[e / sb]);
        h = vmlaq_n_s32(h, SL_NEON_DOT4(vld1q_s8(q + e + 16), vld1q_s8(a + e + 16)),
                        sc[(e + 16) / sb]);
    }
    *lo = l;
    *hi = h;
}

static void SL_NEON_NAME(n_q4_K)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q4_K *x = vx;
    sl_neon_acc8 acc[SL_NEON_NMAX];
    float32x4_t am[SL_NEON_NMAX];
    for (int t = 0; t < nt; t++) {
        acc[t] = sl_neon_acc8_zero();
        am[t] = vdupq_n_f32(0);
    }
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[8], m[8];
        sl_k_scales_q4_K(x[i].scales, sc, m);
        sl_k_levels_q4_K(&x[i], q);
        const float xd = sl_h2f(x[i].d), xdmin = sl_h2f(x[i].dmin);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
            const float d = y->d * xd, dmin = -y->d * xdmin;
            int32_t md[4];
            sl_k4_min_lanes(m, y->bsums, md);
            am[t] = sl_neon_fma_lanes(am[t], dmin, vld1q_s32(md));
            int32x4_t l = vdupq_n_s32(0), h = vdupq_n_s32(0);
            SL_NEON_NAME(lanes)(q, y->qs, sc, 32, &l, &h);
            sl_neon_acc8_fma(&acc[t], d, l, h);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = sl_neon_acc8_sum(&acc[t]) + sl_neon_hsum4(am[t]);
}

static void SL_NEON_NAME(n_q5_K)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q5_K *x = vx;
    sl_neon_acc8 acc[SL_NEON_NMAX];
    float summs[SL_NEON_NMAX];
    for (int t = 0; t < nt; t++) {
        acc[t] = sl_neon_acc8_zero();
        summs[t] = 0.0f;
    }
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[8], m[8];
        sl_k_scales_q4_K(x[i].scales, sc, m);
        sl_k_levels_q5_K(&x[i], q);
        const float xd = sl_h2f(x[i].d), xdmin = sl_h2f(x[i].dmin);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
            const float d = y->d * xd, dmin = -y->d * xdmin;
            int32_t md[4];
            sl_k4_min_lanes(m, y->bsums, md);
            summs[t] = fmaf(dmin, (float)(md[0] + md[1] + md[2] + md[3]), summs[t]);
            int32x4_t l = vdupq_n_s32(0), h = vdupq_n_s32(0);
            SL_NEON_NAME(lanes)(q, y->qs, sc, 32, &l, &h);
            sl_neon_acc8_fma(&acc[t], d, l, h);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = sl_neon_acc8_sum(&acc[t]) + summs[t];
}

static void SL_NEON_NAME(n_q6_K)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q6_K *x = vx;
    sl_neon_acc8 acc[SL_NEON_NMAX];
    for (int t = 0; t < nt; t++) acc[t] = sl_neon_acc8_zero();
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16];
        for (int k = 0; k < 16; k++) sc[k] = x[i].scales[k];
        sl_k_levels_q6_K(&x[i], q);
        const float xd = sl_h2f(x[i].d);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
            int32_t corr[8];
            sl_k16_bsum_lanes(sc, y->bsums, corr);
            int32x4_t l = vmulq_n_s32(vld1q_s32(corr), -32), h = vmulq_n_s32(vld1q_s32(corr + 4), -32);
            SL_NEON_NAME(lanes)(q, y->qs, sc, 16, &l, &h);
            const float d = y->d * xd;
            sl_neon_acc8_fma(&acc[t], d, l, h);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = sl_neon_acc8_sum(&acc[t]);
}

static void SL_NEON_NAME(n_q2_K)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q2_K *x = vx;
    sl_neon_acc8 acc[SL_NEON_NMAX];
    for (int t = 0; t < nt; t++) acc[t] = sl_neon_acc8_zero();
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16], mn[16];
        for (int k = 0; k < 16; k++) {
            sc[k] = x[i].scales[k] & 0x0F;
            mn[k] = x[i].scales[k] >> 4;
        }
        sl_k_levels_q2_K(&x[i], q);
        const float xd = sl_h2f(x[i].d), xdmin = sl_h2f(x[i].dmin);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
            int32_t md[8];
            sl_k16_bsum_lanes(mn, y->bsums, md);
            const float dm = -y->d * xdmin, d = y->d * xd;
            sl_neon_acc8_fma(&acc[t], dm, vld1q_s32(md), vld1q_s32(md + 4));
            int32x4_t l = vdupq_n_s32(0), h = vdupq_n_s32(0);
            SL_NEON_NAME(lanes)(q, y->qs, sc, 16, &l, &h);
            sl_neon_acc8_fma(&acc[t], d, l, h);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = sl_neon_acc8_sum(&acc[t]);
}

static void SL_NEON_NAME(n_q3_K)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q3_K *x = vx;
    sl_neon_acc8 acc[SL_NEON_NMAX];
    for (int t = 0; t < nt; t++) acc[t] = sl_neon_acc8_zero();
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16];
        sl_k_scales_q3_K(x[i].scales, sc);
        sl_k_levels_q3_K(&x[i], q);
        const float xd = sl_h2f(x[i].d);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
            int32x4_t l = vdupq_n_s32(0), h = vdupq_n_s32(0);
            SL_NEON_NAME(lanes)(q, y->qs, sc, 16, &l, &h);
            const float d = y->d * xd;
            sl_neon_acc8_fma(&acc[t], d, l, h);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = sl_neon_acc8_sum(&acc[t]);
}

/* Q8_0: the single kernel token by token (as the scalar multi-token form) */
static void SL_NEON_NAME(n_q8_0)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    for (int t = 0; t < nt; t++) SL_NEON_NAME(q8_0)(n, &s[t], vx, ys[t]);
}

/* fills the kernels of this inner product into k */
static void SL_NEON_NAME(fill)(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_Q2_K] = SL_NEON_NAME(q2_K);
    k->vec_dot[SL_TYPE_Q3_K] = SL_NEON_NAME(q3_K);
    k->vec_dot[SL_TYPE_Q4_K] = SL_NEON_NAME(q4_K);
    k->vec_dot[SL_TYPE_Q5_K] = SL_NEON_NAME(q5_K);
    k->vec_dot[SL_TYPE_Q6_K] = SL_NEON_NAME(q6_K);
    k->vec_dot[SL_TYPE_Q8_0] = SL_NEON_NAME(q8_0);
    k->vec_dot_n[SL_TYPE_Q2_K] = SL_NEON_NAME(n_q2_K);
    k->vec_dot_n[SL_TYPE_Q3_K] = SL_NEON_NAME(n_q3_K);
    k->vec_dot_n[SL_TYPE_Q4_K] = SL_NEON_NAME(n_q4_K);
    k->vec_dot_n[SL_TYPE_Q5_K] = SL_NEON_NAME(n_q5_K);
    k->vec_dot_n[SL_TYPE_Q6_K] = SL_NEON_NAME(n_q6_K);
    k->vec_dot_n[SL_TYPE_Q8_0] = SL_NEON_NAME(n_q8_0);
    static const sl_type multi[] = {SL_TYPE_Q2_K, SL_TYPE_Q3_K, SL_TYPE_Q4_K,
                                    SL_TYPE_Q5_K, SL_TYPE_Q6_K, SL_TYPE_Q8_0};
    for (size_t j = 0; j < sizeof multi / sizeof multi[0]; j++)
        k->vec_dot_n_max[multi[j]] = SL_NEON_NMAX;
}
