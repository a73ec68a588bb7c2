/* vec_dot_legacy_neon.c - the NEON kernel set's dots of the 32-element
 * legacy types: Q4_0 and Q5_0 against Q8_0, Q4_1 and Q5_1 against Q8_1,
 * single- and multi-token, for plain ARMv8.0.
 *
 * Owns: each kernel in its scalar twin's order (vec_dot_legacy_ref.c):
 * lane l of a block is the exact integer sum of elements 4l..4l+3 (here a
 * widening multiply and two pairwise adds, as two int32x4 halves), one FMA
 * per lane and block with the twin's d, the lanes summed at the end in
 * sl_hsum8's order; Q4_1 / Q5_1 add the twin's scalar FMA chain m * y.s.
 * Integer sums are exact in any order, so the bits are the twins'.
 * Must not know: which CPU we run on, threads, matrices. */
#include "quant/quant_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <math.h>

/* lane j = q[4j..4j+3] . a[4j..4j+3] (exact in int32) */
static inline int32x4_t dot4(int8x16_t q, int8x16_t a)
{
    const int16x8_t p0 = vmull_s8(vget_low_s8(q), vget_low_s8(a));
    const int16x8_t p1 = vmull_high_s8(q, a);
    return vpaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1));
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

/* acc_lo / acc_hi = fma(d, lanes of q . a, acc), lane by lane */
static inline void block_fma(float32x4_t *acc_lo, float32x4_t *acc_hi, float d, int8x16_t q0,
                             int8x16_t q1, const int8_t a[32])
{
    const float32x4_t vd = vdupq_n_f32(d);
    *acc_lo = vfmaq_f32(*acc_lo, vd, vcvtq_f32_s32(dot4(q0, vld1q_s8(a))));
    *acc_hi = vfmaq_f32(*acc_hi, vd, vcvtq_f32_s32(dot4(q1, vld1q_s8(a + 16))));
}

static void neon_q4_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float32x4_t lo = vdupq_n_f32(0), hi = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / SL_QK; i++) {
        int8x16_t q0, q1;
        levels(x[i].qs, NULL, 8, &q0, &q1);
        block_fma(&lo, &hi, sl_h2f(x[i].d) * sl_h2f(y[i].d), q0, q1, y[i].qs);
    }
    *s = hsum8(lo, hi);
}

static void neon_q5_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float32x4_t lo = vdupq_n_f32(0), hi = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / SL_QK; i++) {
        int8x16_t q0, q1;
        levels(x[i].qs, x[i].qh, 16, &q0, &q1);
        block_fma(&lo, &hi, sl_h2f(x[i].d) * sl_h2f(y[i].d), q0, q1, y[i].qs);
    }
    *s = hsum8(lo, hi);
}

static void neon_q4_1(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_1 *x = vx;
    const sl_block_q8_1 *y = vy;
    float32x4_t lo = vdupq_n_f32(0), hi = vdupq_n_f32(0);
    float summs = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++) {
        int8x16_t q0, q1;
        levels(x[i].qs, NULL, 0, &q0, &q1);
        summs = fmaf(sl_h2f(x[i].m), sl_h2f(y[i].s), summs);
        block_fma(&lo, &hi, sl_h2f(x[i].d) * sl_h2f(y[i].d), q0, q1, y[i].qs);
    }
    *s = hsum8(lo, hi) + summs;
}

static void neon_q5_1(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_1 *x = vx;
    const sl_block_q8_1 *y = vy;
    float32x4_t lo = vdupq_n_f32(0), hi = vdupq_n_f32(0);
    float summs = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++) {
        int8x16_t q0, q1;
        levels(x[i].qs, x[i].qh, 0, &q0, &q1);
        summs = fmaf(sl_h2f(x[i].m), sl_h2f(y[i].s), summs);
        block_fma(&lo, &hi, sl_h2f(x[i].d) * sl_h2f(y[i].d), q0, q1, y[i].qs);
    }
    *s = hsum8(lo, hi) + summs;
}

/* the multi-token forms: the single kernel token by token, as the scalar
 * twins (vec_dot_n_ref.c), so s[t] has its bits by construction */
#define NEON_N(name, one)                                                                      \
    static void name(int64_t n, float *s, const void *vx, const void *const *ys, int nt)      \
    {                                                                                          \
        for (int t = 0; t < nt; t++) one(n, &s[t], vx, ys[t]);                                \
    }
NEON_N(neon_n_q4_0, neon_q4_0)
NEON_N(neon_n_q5_0, neon_q5_0)
NEON_N(neon_n_q4_1, neon_q4_1)
NEON_N(neon_n_q5_1, neon_q5_1)
#undef NEON_N

bool sl_vec_dot_fill_legacy_neon(sl_quant_kernels *k)
{
    static const struct {
        sl_type t;
        sl_vec_dot_fn one;
        sl_vec_dot_n_fn many;
    } tab[] = {{SL_TYPE_Q4_0, neon_q4_0, neon_n_q4_0},
               {SL_TYPE_Q5_0, neon_q5_0, neon_n_q5_0},
               {SL_TYPE_Q4_1, neon_q4_1, neon_n_q4_1},
               {SL_TYPE_Q5_1, neon_q5_1, neon_n_q5_1}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        k->vec_dot[tab[i].t] = tab[i].one;
        k->vec_dot_n[tab[i].t] = tab[i].many;
        k->vec_dot_n_max[tab[i].t] = SL_VEC_DOT_N_MAX;
    }
    return true;
}
#else
bool sl_vec_dot_fill_legacy_neon(sl_quant_kernels *k)
{
    (void)k;
    return false;
}
#endif
