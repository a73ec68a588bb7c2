/* vec_dot_iq_neon.h - the NEON dot kernels of the table types (IQ4_NL and
 * MXFP4 against Q8_0, IQ4_XS against Q8_K), single- and multi-token,
 * written once for two inner products.
 *
 * Included by vec_dot_iq_neon.c (ARMv8.0: a widening multiply and two
 * pairwise adds) and vec_dot_iq_dotprod.c (SDOT), which define
 * SL_IQ_DOT4(acc, q, a) -> acc + (int32x4_t lane j = q[4j..4j+3] .
 * a[4j..4j+3]) and SL_IQ_NAME(x) (the suffix of the function names) before
 * including it. A nibble becomes its table value by one TBL (the 16-entry
 * table is one register), in the element order of the blocks (low nibbles
 * are elements 0..15).
 *
 * Orders (the bits every kernel set gives):
 * - IQ4_XS: per super-block eight lanes of exact integer sums (lane l:
 *   elements 4l..4l+3 of every sub-block times its scale; here lanes 0-3
 *   from the low sixteen elements, 4-7 from the high), one FMA per lane
 *   with d * y.d, summed as sl_hsum8 at the end, as vec_dot_iq_ref.c and
 *   vec_dot_iq_avx2.c (llama.cpp's AVX2 order).
 * - IQ4_NL, MXFP4: the AVX2 kernels' (vec_dot_iq_avx2.c, which follow
 *   llama.cpp's x86 build): eight lanes of exact four-element sums per
 *   block, one FMA per lane with dx * dy, even blocks into one set of
 *   lanes and odd blocks into another, the two added lane by lane and
 *   summed as sl_hsum8 at the end. Here the eight lanes are two int32x4
 *   halves. (vec_dot_iq_ref.c still sums these two types block by block;
 *   test_neon_bits checks the NEON kernels against the lane order written
 *   out in scalar C, and the AVX2 kernels against the same.)
 * The multi-token forms decode a block's table values once and give each
 * token the single kernel's steps, so s[t] has its bits.
 * Must not know: threads, matrices, which CPU we run on. */
#ifndef SL_QUANT_VEC_DOT_IQ_NEON_H
#define SL_QUANT_VEC_DOT_IQ_NEON_H

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"

enum { SL_IQ_NL = 0, SL_IQ_MXFP4 = 1 };

/* the IQ4_NL / MXFP4 bodies take the type as a constant: inlined into each
 * kernel, so the per-block type test folds away */
#define SL_IQ_INLINE static inline __attribute__((always_inline))

/* f16 -> f32 by FCVT (ARMv8.0): exact, the value of sl_h2f for every
 * finite and infinite half (a NaN stays a NaN) */
static inline float sl_iq_h2f(uint16_t h)
{
    __fp16 f;
    memcpy(&f, &h, sizeof f);
    return (float)f;
}

/* 2^(e-128) for every E8M0 byte (sl_e8m0_half), one load per block; filled
 * by the fill functions, which run inside sl_quant_init's pthread_once,
 * before any kernel is reachable */
static float sl_iq_e8m0_tab[256];

/* the table values of 16 packed nibbles: elements 0..15 (low nibbles) in
 * *v0, 16..31 (high nibbles) in *v1 */
static inline void sl_iq_lookup32(int8x16_t tab, const uint8_t qs[16], int8x16_t *v0,
                                  int8x16_t *v1)
{
    const uint8x16_t b = vld1q_u8(qs);
    *v0 = vqtbl1q_s8(tab, vandq_u8(b, vdupq_n_u8(0x0F)));
    *v1 = vqtbl1q_s8(tab, vshrq_n_u8(b, 4));
}

/* block i of an IQ4_NL or MXFP4 row: its table values and its scale (the
 * f16 d, or MXFP4's 2^(e-128) that goes with the doubled table) */
static inline float sl_iq_block32(int kind, const void *vx, int64_t i, int8x16_t tab,
                                  int8x16_t *v0, int8x16_t *v1)
{
    if (kind == SL_IQ_NL) {
        const sl_block_iq4_nl *b = (const sl_block_iq4_nl *)vx + i;
        sl_iq_lookup32(tab, b->qs, v0, v1);
        return sl_iq_h2f(b->d);
    }
    const sl_block_mxfp4 *b = (const sl_block_mxfp4 *)vx + i;
    sl_iq_lookup32(tab, b->qs, v0, v1);
    return sl_iq_e8m0_tab[b->e];
}

/* sl_hsum8 of the eight lanes lo[0..3], hi[0..3]: (t0 + t2) + (t1 + t3)
 * for t = lo + hi */
static inline float sl_iq_hsum8(float32x4_t lo, float32x4_t hi)
{
    const float32x4_t t = vaddq_f32(lo, hi);
    const float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
    return vget_lane_f32(u, 0) + vget_lane_f32(u, 1);
}

/* the 6-bit scale of sub-block k of an IQ4_XS block, minus 32 */
static inline int sl_iq4_xs_scale(const sl_block_iq4_xs *x, int k)
{
    return (((x->scales_l[k / 2] >> (4 * (k % 2))) & 0x0F) | ((x->scales_h >> (2 * k)) & 3) << 4) -
           32;
}

#endif /* SL_QUANT_VEC_DOT_IQ_NEON_H */

/* ---- the kernels (once per includer) -------------------------------------- */

/* lo / hi = fma(dx * dy, lanes of v . y.qs, lo / hi): one block's step */
static inline void SL_IQ_NAME(b32_step)(float32x4_t *lo, float32x4_t *hi, float dx,
                                        int8x16_t v0, int8x16_t v1, const sl_block_q8_0 *y)
{
    const int32x4_t z = vdupq_n_s32(0);
    const int32x4_t p0 = SL_IQ_DOT4(z, v0, vld1q_s8(y->qs));
    const int32x4_t p1 = SL_IQ_DOT4(z, v1, vld1q_s8(y->qs + 16));
    const float32x4_t d = vdupq_n_f32(dx * sl_iq_h2f(y->d));
    *lo = vfmaq_f32(*lo, d, vcvtq_f32_s32(p0));
    *hi = vfmaq_f32(*hi, d, vcvtq_f32_s32(p1));
}

SL_IQ_INLINE void SL_IQ_NAME(b32_one)(int kind, int64_t n, float *s, const void *vx,
                                       const void *vy)
{
    const sl_block_q8_0 *y = vy;
    const int8x16_t tab = vld1q_s8(kind == SL_IQ_MXFP4 ? sl_mxfp4_values : sl_iq4nl_values);
    float32x4_t e_lo = vdupq_n_f32(0), e_hi = e_lo, o_lo = e_lo, o_hi = e_lo;
    const int64_t nb = n / SL_QK;
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        int8x16_t a0, a1, b0, b1;
        const float da = sl_iq_block32(kind, vx, i, tab, &a0, &a1);
        const float db = sl_iq_block32(kind, vx, i + 1, tab, &b0, &b1);
        SL_IQ_NAME(b32_step)(&e_lo, &e_hi, da, a0, a1, y + i);
        SL_IQ_NAME(b32_step)(&o_lo, &o_hi, db, b0, b1, y + i + 1);
    }
    if (i < nb) { /* an odd count: the last block is even */
        int8x16_t a0, a1;
        const float da = sl_iq_block32(kind, vx, i, tab, &a0, &a1);
        SL_IQ_NAME(b32_step)(&e_lo, &e_hi, da, a0, a1, y + i);
    }
    *s = sl_iq_hsum8(vaddq_f32(e_lo, o_lo), vaddq_f32(e_hi, o_hi));
}

SL_IQ_INLINE void SL_IQ_NAME(b32_n)(int kind, int64_t n, float *s, const void *vx,
                                     const void *const *ys, int nt)
{
    const int8x16_t tab = vld1q_s8(kind == SL_IQ_MXFP4 ? sl_mxfp4_values : sl_iq4nl_values);
    float32x4_t e_lo[SL_VEC_DOT_N_MAX], e_hi[SL_VEC_DOT_N_MAX], o_lo[SL_VEC_DOT_N_MAX],
        o_hi[SL_VEC_DOT_N_MAX];
    for (int t = 0; t < nt; t++) e_lo[t] = e_hi[t] = o_lo[t] = o_hi[t] = vdupq_n_f32(0);
    const int64_t nb = n / SL_QK;
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        int8x16_t a0, a1, b0, b1;
        const float da = sl_iq_block32(kind, vx, i, tab, &a0, &a1);
        const float db = sl_iq_block32(kind, vx, i + 1, tab, &b0, &b1);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_0 *y = (const sl_block_q8_0 *)ys[t] + i;
            SL_IQ_NAME(b32_step)(&e_lo[t], &e_hi[t], da, a0, a1, y);
            SL_IQ_NAME(b32_step)(&o_lo[t], &o_hi[t], db, b0, b1, y + 1);
        }
    }
    if (i < nb) {
        int8x16_t a0, a1;
        const float da = sl_iq_block32(kind, vx, i, tab, &a0, &a1);
        for (int t = 0; t < nt; t++)
            SL_IQ_NAME(b32_step)(&e_lo[t], &e_hi[t], da, a0, a1, (const sl_block_q8_0 *)ys[t] + i);
    }
    for (int t = 0; t < nt; t++)
        s[t] = sl_iq_hsum8(vaddq_f32(e_lo[t], o_lo[t]), vaddq_f32(e_hi[t], o_hi[t]));
}

static void SL_IQ_NAME(iq4_nl)(int64_t n, float *s, const void *vx, const void *vy)
{
    SL_IQ_NAME(b32_one)(SL_IQ_NL, n, s, vx, vy);
}

static void SL_IQ_NAME(mxfp4)(int64_t n, float *s, const void *vx, const void *vy)
{
    SL_IQ_NAME(b32_one)(SL_IQ_MXFP4, n, s, vx, vy);
}

static void SL_IQ_NAME(n_iq4_nl)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    SL_IQ_NAME(b32_n)(SL_IQ_NL, n, s, vx, ys, nt);
}

static void SL_IQ_NAME(n_mxfp4)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    SL_IQ_NAME(b32_n)(SL_IQ_MXFP4, n, s, vx, ys, nt);
}

/* (ls - 32) times the lanes of one 32-element sub-block added to lo (its
 * elements 0..15) and hi (16..31); exact: |lane| <= 4 * 127 * 127, times
 * 32, times 8 sub-blocks < 2^31 */
static inline void SL_IQ_NAME(xs_sub)(int32x4_t *lo, int32x4_t *hi, int8x16_t v0, int8x16_t v1,
                                      const int8_t *a, int ls)
{
    const int32x4_t z = vdupq_n_s32(0);
    *lo = vmlaq_n_s32(*lo, SL_IQ_DOT4(z, v0, vld1q_s8(a)), ls);
    *hi = vmlaq_n_s32(*hi, SL_IQ_DOT4(z, v1, vld1q_s8(a + 16)), ls);
}

static void SL_IQ_NAME(iq4_xs)(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_iq4_xs *x = vx;
    const sl_block_q8_K *y = vy;
    const int8x16_t tab = vld1q_s8(sl_iq4nl_values);
    float32x4_t acc_lo = vdupq_n_f32(0), acc_hi = acc_lo;
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int32x4_t lo = vdupq_n_s32(0), hi = lo;
        _Pragma("GCC unroll 8") /* the scale's shifts become constants */
        for (int k = 0; k < 8; k++) {
            int8x16_t v0, v1;
            sl_iq_lookup32(tab, x[i].qs + 16 * k, &v0, &v1);
            SL_IQ_NAME(xs_sub)(&lo, &hi, v0, v1, y[i].qs + 32 * k, sl_iq4_xs_scale(&x[i], k));
        }
        const float32x4_t d = vdupq_n_f32(sl_iq_h2f(x[i].d) * y[i].d);
        acc_lo = vfmaq_f32(acc_lo, d, vcvtq_f32_s32(lo));
        acc_hi = vfmaq_f32(acc_hi, d, vcvtq_f32_s32(hi));
    }
    *s = sl_iq_hsum8(acc_lo, acc_hi);
}

static void SL_IQ_NAME(n_iq4_xs)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_iq4_xs *x = vx;
    const int8x16_t tab = vld1q_s8(sl_iq4nl_values);
    float32x4_t acc_lo[SL_VEC_DOT_N_MAX], acc_hi[SL_VEC_DOT_N_MAX];
    for (int t = 0; t < nt; t++) acc_lo[t] = acc_hi[t] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int32x4_t lo[SL_VEC_DOT_N_MAX], hi[SL_VEC_DOT_N_MAX];
        for (int t = 0; t < nt; t++) lo[t] = hi[t] = vdupq_n_s32(0);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < 8; k++) {
            int8x16_t v0, v1;
            sl_iq_lookup32(tab, x[i].qs + 16 * k, &v0, &v1);
            const int ls = sl_iq4_xs_scale(&x[i], k);
            for (int t = 0; t < nt; t++) {
                const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
                SL_IQ_NAME(xs_sub)(&lo[t], &hi[t], v0, v1, y->qs + 32 * k, ls);
            }
        }
        const float xd = sl_iq_h2f(x[i].d);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
            const float32x4_t d = vdupq_n_f32(xd * y->d);
            acc_lo[t] = vfmaq_f32(acc_lo[t], d, vcvtq_f32_s32(lo[t]));
            acc_hi[t] = vfmaq_f32(acc_hi[t], d, vcvtq_f32_s32(hi[t]));
        }
    }
    for (int t = 0; t < nt; t++) s[t] = sl_iq_hsum8(acc_lo[t], acc_hi[t]);
}

/* fills the kernels of this inner product into k */
static void SL_IQ_NAME(fill)(sl_quant_kernels *k)
{
    for (int e = 0; e < 256; e++) sl_iq_e8m0_tab[e] = sl_e8m0_half((uint8_t)e);
    k->vec_dot[SL_TYPE_IQ4_NL] = SL_IQ_NAME(iq4_nl);
    k->vec_dot[SL_TYPE_MXFP4] = SL_IQ_NAME(mxfp4);
    k->vec_dot[SL_TYPE_IQ4_XS] = SL_IQ_NAME(iq4_xs);
    k->vec_dot_n[SL_TYPE_IQ4_NL] = SL_IQ_NAME(n_iq4_nl);
    k->vec_dot_n[SL_TYPE_MXFP4] = SL_IQ_NAME(n_mxfp4);
    k->vec_dot_n[SL_TYPE_IQ4_XS] = SL_IQ_NAME(n_iq4_xs);
    k->vec_dot_n_max[SL_TYPE_IQ4_NL] = SL_VEC_DOT_N_MAX;
    k->vec_dot_n_max[SL_TYPE_MXFP4] = SL_VEC_DOT_N_MAX;
    k->vec_dot_n_max[SL_TYPE_IQ4_XS] = SL_VEC_DOT_N_MAX;
}
