/* vec_dot_legacy_neon.h - the NEON dots of the 32-element legacy types
 * (Q4_0, Q5_0 x Q8_0; Q4_1, Q5_1 x Q8_1), single- and multi-token, written
 * once for two inner products.
 *
 * Included by vec_dot_legacy_neon.c (ARMv8.0: a widening multiply and two
 * pairwise adds) and vec_dot_legacy_neon_dotprod.c (SDOT), which define
 * SL_LEG_DOT4(q, a) -> int32x4_t lane j = q[4j..4j+3] . a[4j..4j+3] (exact)
 * and SL_LEG_NAME(x) (the prefix of this copy's names) before including it.
 * Each kernel follows its scalar twin's order (vec_dot_legacy_ref.c): lane l
 * of a block is the exact integer sum of elements 4l..4l+3 (two int32x4
 * halves of the twin's eight lanes), one FMA per lane and block with the
 * twin's d, the lanes summed at the end in sl_hsum8's order; Q4_1 / Q5_1
 * add the twin's scalar FMA chain m * y.s. Integer sums are exact in any
 * order, so both copies give the twins' bits.
 * Must not know: which CPU we run on, threads, matrices. */
#ifndef SL_QUANT_VEC_DOT_LEGACY_NEON_H
#define SL_QUANT_VEC_DOT_LEGACY_NEON_H

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"

/* f16 -> f32 by FCVT: sl_h2f's value for every finite and infinite half
 * (a NaN stays a NaN), without its branches */
static inline float sl_leg_h2f(uint16_t h)
{
    __fp16 f;
    memcpy(&f, &h, sizeof f);
    return (float)f;
}

/* (t0 + t2) + (t1 + t3) for t = lo + hi: sl_hsum8 of the eight lanes */
static inline float hsum8(float32x4_t lo, float32x4_t hi)
{
    const float32x4_t t = vaddq_f32(lo, hi);
    const float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
    return vget_lane_f32(u, 0) + vget_lane_f32(u, 1);
}

/* 0x10 in byte j of the result where bit (base + j) of the qh word is set */
static inline uint8x16_t high_bits(const uint8_t qh[4], int base)
{
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const int b = base / 8;
    const uint8x16_t v = vcombine_u8(vdup_n_u8(qh[b]), vdup_n_u8(qh[b + 1]));
    return vandq_u8(vtstq_u8(v, vld1q_u8(bit)), vdupq_n_u8(0x10));
}

/* the block's levels minus off, elements 0..15 in *q0 and 16..31 in *q1
 * (Q4_0 order: low nibbles first); qh adds the fifth bit (Q5_0 / Q5_1) */
static inline void levels(const uint8_t qs[16], const uint8_t *qh, int off, int8x16_t *q0,
                          int8x16_t *q1)
{
    const uint8x16_t b = vld1q_u8(qs);
    uint8x16_t lo = vandq_u8(b, vdupq_n_u8(0x0F)), hi = vshrq_n_u8(b, 4);
    if (qh) {
        lo = vorrq_u8(lo, high_bits(qh, 0));
        hi = vorrq_u8(hi, high_bits(qh, 16));
    }
    *q0 = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8((int8_t)off));
    *q1 = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8((int8_t)off));
}

#endif /* SL_QUANT_VEC_DOT_LEGACY_NEON_H */

/* ---- the kernels (once per includer) -------------------------------------- */

/* acc_lo / acc_hi = fma(d, lanes of q . a, acc), lane by lane */
static inline void SL_LEG_NAME(block_fma)(float32x4_t *acc_lo, float32x4_t *acc_hi, float d,
                                          int8x16_t q0, int8x16_t q1, const int8_t a[32])
{
    const float32x4_t vd = vdupq_n_f32(d);
    *acc_lo = vfmaq_f32(*acc_lo, vd, vcvtq_f32_s32(SL_LEG_DOT4(q0, vld1q_s8(a))));
    *acc_hi = vfmaq_f32(*acc_hi, vd, vcvtq_f32_s32(SL_LEG_DOT4(q1, vld1q_s8(a + 16))));
}

/* one row of type t (Q4_0, Q5_0: against Q8_0; Q4_1, Q5_1: against Q8_1)
 * against nt tokens: the block's levels decoded once, then each token the
 * twin's steps (its own lanes, its own m * y.s chain), so s[t] has the
 * single kernel's bits for every nt */
static inline __attribute__((always_inline)) void SL_LEG_NAME(body)(sl_type t, int64_t n,
                                                                      float *s, const void *vx,
                                                                      const void *const *ys,
                                                                      int nt)
{
    const bool q5 = t == SL_TYPE_Q5_0 || t == SL_TYPE_Q5_1;
    const bool offset = t == SL_TYPE_Q4_1 || t == SL_TYPE_Q5_1;
    const size_t bb = t == SL_TYPE_Q4_0   ? sizeof(sl_block_q4_0)
                      : t == SL_TYPE_Q5_0 ? sizeof(sl_block_q5_0)
                      : t == SL_TYPE_Q4_1 ? sizeof(sl_block_q4_1)
                                          : sizeof(sl_block_q5_1);
    /* where the block's fields sit: d (and m) first, then qh, then qs */
    const size_t qh_at = offset ? 4 : 2, qs_at = qh_at + (q5 ? 4 : 0);
    const int off = t == SL_TYPE_Q4_0 ? 8 : t == SL_TYPE_Q5_0 ? 16 : 0;
    float32x4_t lo[SL_VEC_DOT_N_MAX], hi[SL_VEC_DOT_N_MAX];
    float summs[SL_VEC_DOT_N_MAX];
    for (int k = 0; k < nt; k++) {
        lo[k] = hi[k] = vdupq_n_f32(0);
        summs[k] = 0.0f;
    }
    for (int64_t i = 0; i < n / SL_QK; i++) {
        const uint8_t *b = (const uint8_t *)vx + (size_t)i * bb;
        int8x16_t q0, q1;
        levels(b + qs_at, q5 ? b + qh_at : NULL, off, &q0, &q1);
        uint16_t dh, mh;
        memcpy(&dh, b, 2);
        memcpy(&mh, b + 2, 2);
        const float d = sl_leg_h2f(dh);
        for (int k = 0; k < nt; k++) {
            if (offset) {
                const sl_block_q8_1 *y = (const sl_block_q8_1 *)ys[k] + i;
                summs[k] = fmaf(sl_leg_h2f(mh), sl_leg_h2f(y->s), summs[k]);
                SL_LEG_NAME(block_fma)(&lo[k], &hi[k], d * sl_leg_h2f(y->d), q0, q1, y->qs);
            } else {
                const sl_block_q8_0 *y = (const sl_block_q8_0 *)ys[k] + i;
                SL_LEG_NAME(block_fma)(&lo[k], &hi[k], d * sl_leg_h2f(y->d), q0, q1, y->qs);
            }
        }
    }
    for (int k = 0; k < nt; k++) s[k] = offset ? hsum8(lo[k], hi[k]) + summs[k] : hsum8(lo[k], hi[k]);
}

#define SL_LEG_KERNELS(name, type)                                                             \
    static void SL_LEG_NAME(name)(int64_t n, float *s, const void *vx, const void *vy)       \
    {                                                                                          \
        SL_LEG_NAME(body)(type, n, s, vx, &vy, 1);                                             \
    }                                                                                          \
    static void SL_LEG_NAME(n_##name)(int64_t n, float *s, const void *vx,                    \
                                      const void *const *ys, int nt)                          \
    {                                                                                          \
        SL_LEG_NAME(body)(type, n, s, vx, ys, nt);                                             \
    }
SL_LEG_KERNELS(q4_0, SL_TYPE_Q4_0)
SL_LEG_KERNELS(q5_0, SL_TYPE_Q5_0)
SL_LEG_KERNELS(q4_1, SL_TYPE_Q4_1)
SL_LEG_KERNELS(q5_1, SL_TYPE_Q5_1)
#undef SL_LEG_KERNELS

/* fills this copy's kernels into k */
static void SL_LEG_NAME(fill)(sl_quant_kernels *k)
{
    static const struct {
        sl_type t;
        sl_vec_dot_fn one;
        sl_vec_dot_n_fn many;
    } tab[] = {{SL_TYPE_Q4_0, SL_LEG_NAME(q4_0), SL_LEG_NAME(n_q4_0)},
               {SL_TYPE_Q5_0, SL_LEG_NAME(q5_0), SL_LEG_NAME(n_q5_0)},
               {SL_TYPE_Q4_1, SL_LEG_NAME(q4_1), SL_LEG_NAME(n_q4_1)},
               {SL_TYPE_Q5_1, SL_LEG_NAME(q5_1), SL_LEG_NAME(n_q5_1)}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        k->vec_dot[tab[i].t] = tab[i].one;
        k->vec_dot_n[tab[i].t] = tab[i].many;
        k->vec_dot_n_max[tab[i].t] = SL_VEC_DOT_N_MAX;
    }
}
