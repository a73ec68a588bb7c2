/* vec_dot_rp32_neon.h - the NEON kernels of the rp32 order (Q4_0, IQ4_NL,
 * MXFP4 x Q8_0, vec_dot_rp.h) on both layouts, written once for two inner
 * products.
 *
 * Included by vec_dot_rp32_neon.c (ARMv8.0: widening multiplies and
 * pairwise adds) and vec_dot_rp32_neon_dotprod.c (SDOT), which define
 * before including it
 *   SL_RP_NAME(x)         the prefix of this copy's function names,
 *   rp_dot32(v0, v1, y0, y1)  an int32x4_t whose four lanes add up to the
 *                         exact 32-element dot of levels v0|v1 with
 *                         activations y0|y1 (elements 0..15 | 16..31),
 *   rp_x8_sums(w, y0, y1, lo, hi)  the exact block sums of the eight rows
 *                         of an x8 block (w as x8_levels leaves it) with
 *                         one token: rows 0..3 in *lo, 4..7 in *hi,
 *   SL_RP_X8_UNROLL       the pragma string unrolling the x8 token loop.
 * The order is the scalar twins' (vec_dot_rp32_ref.c, vec_dot_rp32x8_ref.c):
 * per (row, token) an exact integer sum per 32-element block (exact in any
 * grouping: |sum| <= 32 * 127 * 128 < 2^24, so its float conversion is
 * exact too), then acc = fma(float(I), dx * dy, acc) in block order, dx * dy
 * one float product. The multi-token plain kernel keeps that chain in
 * scalar fmaf per token; the eight-row kernels keep one lane per row
 * (vfmaq_f32 is fmaf lane by lane). So the bits are the twins', and the
 * AVX2 kernels'. Levels: Q4_0 nibble - 8; IQ4_NL and MXFP4 by one TBL of
 * their 16-entry tables (sl_iq4nl_values, the doubled sl_mxfp4_values with
 * dx = 2^(e-128)).
 * Must not know: threads, matrices, which CPU we run on. */
#ifndef SL_QUANT_VEC_DOT_RP32_NEON_H
#define SL_QUANT_VEC_DOT_RP32_NEON_H

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"

enum { SL_RP_Q4_0 = 0, SL_RP_IQ4_NL = 1, SL_RP_MXFP4 = 2 };

#define SL_RP_INLINE static inline __attribute__((always_inline))

SL_RP_INLINE size_t sl_rp_bb(int kind)
{
    return kind == SL_RP_MXFP4 ? sizeof(sl_block_mxfp4) : sizeof(sl_block_q4_0);
}

SL_RP_INLINE size_t sl_rp_sb(int kind) { return kind == SL_RP_MXFP4 ? 1 : 2; }

/* the 16-entry level table of kind (unused for Q4_0) */
SL_RP_INLINE int8x16_t sl_rp_table(int kind)
{
    return vld1q_s8(kind == SL_RP_MXFP4 ? sl_mxfp4_values : sl_iq4nl_values);
}

/* the levels of 16 nibble bytes: low nibbles in *lo, high in *hi */
SL_RP_INLINE void sl_rp_levels(int kind, int8x16_t tab, uint8x16_t b, int8x16_t *lo,
                               int8x16_t *hi)
{
    const uint8x16_t l = vandq_u8(b, vdupq_n_u8(0x0F)), h = vshrq_n_u8(b, 4);
    if (kind == SL_RP_Q4_0) {
        *lo = vsubq_s8(vreinterpretq_s8_u8(l), vdupq_n_s8(8));
        *hi = vsubq_s8(vreinterpretq_s8_u8(h), vdupq_n_s8(8));
    } else {
        *lo = vqtbl1q_s8(tab, l);
        *hi = vqtbl1q_s8(tab, h);
    }
}

/* f16 -> f32 by FCVT: sl_h2f's value for every finite and infinite half
 * (a NaN stays a NaN), without its branches */
SL_RP_INLINE float sl_rp_h2f(uint16_t h)
{
    __fp16 f;
    memcpy(&f, &h, sizeof f);
    return (float)f;
}

/* the weight scale of a plain block at p (sl_h2f / sl_e8m0_half) */
SL_RP_INLINE float sl_rp_scale(int kind, const uint8_t *p)
{
    if (kind == SL_RP_MXFP4) return sl_e8m0_half(p[0]);
    uint16_t h;
    memcpy(&h, p, 2);
    return sl_rp_h2f(h);
}

/* the 8 scales of an x8 block at p: rows 0..3 in *lo, 4..7 in *hi. f16 by
 * FCVTL (exact, sl_h2f's value); E8M0 lane-wise as sl_e8m0_half: exponent
 * field e - 1 for e >= 2, the subnormal 0x00200000 << e below that */
SL_RP_INLINE void sl_rp_scales8(int kind, const uint8_t *p, float32x4_t *lo, float32x4_t *hi)
{
    if (kind == SL_RP_MXFP4) {
        const uint16x8_t e16 = vmovl_u8(vld1_u8(p));
        const uint32x4_t e[2] = {vmovl_u16(vget_low_u16(e16)), vmovl_high_u16(e16)};
        float32x4_t out[2];
        for (int h = 0; h < 2; h++) {
            const uint32x4_t normal = vshlq_n_u32(vsubq_u32(e[h], vdupq_n_u32(1)), 23);
            const uint32x4_t tiny =
                vshlq_u32(vdupq_n_u32(0x00200000u), vreinterpretq_s32_u32(e[h]));
            const uint32x4_t is_tiny = vcltq_u32(e[h], vdupq_n_u32(2));
            out[h] = vreinterpretq_f32_u32(vbslq_u32(is_tiny, tiny, normal));
        }
        *lo = out[0];
        *hi = out[1];
        return;
    }
    const uint16x8_t h = vld1q_u16((const uint16_t *)(const void *)p);
    *lo = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h)));
    *hi = vcvt_high_f32_f16(vreinterpretq_f16_u16(h));
}

/* the levels of x8 block at p (its nibble chunks after the 8 scales):
 * w[2c + h] low nibbles of chunk c, w[8 + 2c + h] its high nibbles, h = 0
 * rows 0..3, h = 1 rows 4..7 (32-bit lane r of each: 4 elements of row r:
 * 4c..4c+3, or 16+4c..16+4c+3) */
SL_RP_INLINE void sl_rp_x8_levels(int kind, int8x16_t tab, const uint8_t *p, int8x16_t w[16])
{
    const uint8_t *q = p + 8 * sl_rp_sb(kind);
    _Pragma("GCC unroll 4")
    for (int c = 0; c < 4; c++)
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++)
            sl_rp_levels(kind, tab, vld1q_u8(q + 32 * c + 16 * h), &w[2 * c + h], &w[8 + 2 * c + h]);
}

#endif /* SL_QUANT_VEC_DOT_RP32_NEON_H */

/* ---- the kernels (once per includer) -------------------------------------- */

/* plain layout, one row against nt <= SL_VEC_DOT_RP_MAX tokens */
SL_RP_INLINE void SL_RP_NAME(n_body)(int kind, int64_t n, float *s, const void *vx,
                                      const void *const *ys, int nt)
{
    const uint8_t *x = vx;
    const size_t bb = sl_rp_bb(kind), sb = sl_rp_sb(kind);
    const int8x16_t tab = sl_rp_table(kind);
    float acc[SL_VEC_DOT_RP_MAX];
    for (int t = 0; t < nt; t++) acc[t] = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++) {
        const uint8_t *p = x + (size_t)i * bb;
        int8x16_t v0, v1;
        sl_rp_levels(kind, tab, vld1q_u8(p + sb), &v0, &v1);
        const float dx = sl_rp_scale(kind, p);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_0 *y = (const sl_block_q8_0 *)ys[t] + i;
            const int32x4_t d = rp_dot32(v0, v1, vld1q_s8(y->qs), vld1q_s8(y->qs + 16));
            acc[t] = fmaf((float)vaddvq_s32(d), dx * sl_rp_h2f(y->d), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = acc[t];
}

/* lane r = the sum of the four lanes of d[r], r = 0..3 */
SL_RP_INLINE int32x4_t SL_RP_NAME(reduce4)(const int32x4_t d[4])
{
    return vpaddq_s32(vpaddq_s32(d[0], d[1]), vpaddq_s32(d[2], d[3]));
}

/* plain layout, eight rows row_bytes apart against nt <= ROWS8_MAX tokens */
SL_RP_INLINE void SL_RP_NAME(rows8_body)(int kind, int64_t n, float *s, const uint8_t *x,
                                          size_t row_bytes, const void *const *ys, const int nt)
{
    const size_t bb = sl_rp_bb(kind), sb = sl_rp_sb(kind);
    const int8x16_t tab = sl_rp_table(kind);
    float32x4_t acc[SL_VEC_DOT_ROWS8_MAX][2];
    for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / SL_QK; i++) {
        int8x16_t v[8][2];
        float dx[8];
        _Pragma("GCC unroll 8")
        for (int r = 0; r < 8; r++) {
            const uint8_t *p = x + (size_t)r * row_bytes + (size_t)i * bb;
            sl_rp_levels(kind, tab, vld1q_u8(p + sb), &v[r][0], &v[r][1]);
            dx[r] = sl_rp_scale(kind, p);
        }
        const float32x4_t dlo = vld1q_f32(dx), dhi = vld1q_f32(dx + 4);
        _Pragma("GCC unroll 4") /* nt is a constant: the accumulators stay in registers */
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_0 *y = (const sl_block_q8_0 *)ys[t] + i;
            const int8x16_t y0 = vld1q_s8(y->qs), y1 = vld1q_s8(y->qs + 16);
            int32x4_t d[8];
            _Pragma("GCC unroll 8")
            for (int r = 0; r < 8; r++) d[r] = rp_dot32(v[r][0], v[r][1], y0, y1);
            const float dy = sl_rp_h2f(y->d);
            acc[t][0] = vfmaq_f32(acc[t][0], vcvtq_f32_s32(SL_RP_NAME(reduce4)(d)),
                                  vmulq_n_f32(dlo, dy));
            acc[t][1] = vfmaq_f32(acc[t][1], vcvtq_f32_s32(SL_RP_NAME(reduce4)(d + 4)),
                                  vmulq_n_f32(dhi, dy));
        }
    }
    for (int t = 0; t < nt; t++) {
        vst1q_f32(s + 8 * t, acc[t][0]);
        vst1q_f32(s + 8 * t + 4, acc[t][1]);
    }
}

/* x8 layout: the eight rows of the group at x against nt <= ROWS8_MAX
 * tokens, the block's levels decoded once for all tokens */
SL_RP_INLINE void SL_RP_NAME(x8_body)(int kind, int64_t n, float *s, const uint8_t *x,
                                       const void *const *ys, const int nt)
{
    const size_t bb = sl_rp_bb(kind);
    const int8x16_t tab = sl_rp_table(kind);
    float32x4_t acc[SL_VEC_DOT_ROWS8_MAX][2];
    for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / SL_QK; i++) {
        const uint8_t *p = x + (size_t)i * 8 * bb;
        int8x16_t w[16];
        sl_rp_x8_levels(kind, tab, p, w);
        float32x4_t dlo, dhi;
        sl_rp_scales8(kind, p, &dlo, &dhi);
        /* SL_RP_X8_UNROLL: the includer's token unroll (SDOT: all tokens,
         * the accumulators in registers; ARMv8.0: one, its sums need more
         * registers than four tokens leave) */
        _Pragma(SL_RP_X8_UNROLL)
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_0 *y = (const sl_block_q8_0 *)ys[t] + i;
            int32x4_t lo, hi;
            rp_x8_sums(w, vld1q_s8(y->qs), vld1q_s8(y->qs + 16), &lo, &hi);
            const float dy = sl_rp_h2f(y->d);
            acc[t][0] = vfmaq_f32(acc[t][0], vcvtq_f32_s32(lo), vmulq_n_f32(dlo, dy));
            acc[t][1] = vfmaq_f32(acc[t][1], vcvtq_f32_s32(hi), vmulq_n_f32(dhi, dy));
        }
    }
    for (int t = 0; t < nt; t++) {
        vst1q_f32(s + 8 * t, acc[t][0]);
        vst1q_f32(s + 8 * t + 4, acc[t][1]);
    }
}

/* nt as a constant in each case so the token loops unroll */
SL_RP_INLINE void SL_RP_NAME(rows8_nt)(int kind, int64_t n, float *s, const void *vx, size_t rb,
                                        const void *const *ys, int nt)
{
    switch (nt) {
    case 1: SL_RP_NAME(rows8_body)(kind, n, s, vx, rb, ys, 1); break;
    case 2: SL_RP_NAME(rows8_body)(kind, n, s, vx, rb, ys, 2); break;
    case 3: SL_RP_NAME(rows8_body)(kind, n, s, vx, rb, ys, 3); break;
    default: SL_RP_NAME(rows8_body)(kind, n, s, vx, rb, ys, 4); break;
    }
}

SL_RP_INLINE void SL_RP_NAME(x8_nt)(int kind, int64_t n, float *s, const void *vx,
                                     const void *const *ys, int nt)
{
    switch (nt) {
    case 1: SL_RP_NAME(x8_body)(kind, n, s, vx, ys, 1); break;
    case 2: SL_RP_NAME(x8_body)(kind, n, s, vx, ys, 2); break;
    case 3: SL_RP_NAME(x8_body)(kind, n, s, vx, ys, 3); break;
    default: SL_RP_NAME(x8_body)(kind, n, s, vx, ys, 4); break;
    }
}

static void SL_RP_NAME(n_q4_0)(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    SL_RP_NAME(n_body)(SL_RP_Q4_0, n, s, vx, ys, nt);
}

static void SL_RP_NAME(n_iq4_nl)(int64_t n, float *s, const void *vx, const void *const *ys,
                                 int nt)
{
    SL_RP_NAME(n_body)(SL_RP_IQ4_NL, n, s, vx, ys, nt);
}

static void SL_RP_NAME(n_mxfp4)(int64_t n, float *s, const void *vx, const void *const *ys,
                                int nt)
{
    SL_RP_NAME(n_body)(SL_RP_MXFP4, n, s, vx, ys, nt);
}

static void SL_RP_NAME(rows8_q4_0)(int64_t n, float *s, const void *vx, size_t rb,
                                   const void *const *ys, int nt)
{
    SL_RP_NAME(rows8_nt)(SL_RP_Q4_0, n, s, vx, rb, ys, nt);
}

static void SL_RP_NAME(rows8_iq4_nl)(int64_t n, float *s, const void *vx, size_t rb,
                                     const void *const *ys, int nt)
{
    SL_RP_NAME(rows8_nt)(SL_RP_IQ4_NL, n, s, vx, rb, ys, nt);
}

static void SL_RP_NAME(rows8_mxfp4)(int64_t n, float *s, const void *vx, size_t rb,
                                    const void *const *ys, int nt)
{
    SL_RP_NAME(rows8_nt)(SL_RP_MXFP4, n, s, vx, rb, ys, nt);
}

static void SL_RP_NAME(x8_q4_0)(int64_t n, float *s, const void *vx, size_t rb,
                                const void *const *ys, int nt)
{
    (void)rb;
    SL_RP_NAME(x8_nt)(SL_RP_Q4_0, n, s, vx, ys, nt);
}

static void SL_RP_NAME(x8_iq4_nl)(int64_t n, float *s, const void *vx, size_t rb,
                                  const void *const *ys, int nt)
{
    (void)rb;
    SL_RP_NAME(x8_nt)(SL_RP_IQ4_NL, n, s, vx, ys, nt);
}

static void SL_RP_NAME(x8_mxfp4)(int64_t n, float *s, const void *vx, size_t rb,
                                 const void *const *ys, int nt)
{
    (void)rb;
    SL_RP_NAME(x8_nt)(SL_RP_MXFP4, n, s, vx, ys, nt);
}

/* this copy's kernels of type into *k; false for other types */
static bool SL_RP_NAME(get)(sl_type type, sl_rp32_neon *k)
{
    switch (type) {
    case SL_TYPE_Q4_0:
        *k = (sl_rp32_neon){SL_RP_NAME(n_q4_0), SL_RP_NAME(rows8_q4_0), SL_RP_NAME(x8_q4_0)};
        return true;
    case SL_TYPE_IQ4_NL:
        *k = (sl_rp32_neon){SL_RP_NAME(n_iq4_nl), SL_RP_NAME(rows8_iq4_nl),
                            SL_RP_NAME(x8_iq4_nl)};
        return true;
    case SL_TYPE_MXFP4:
        *k = (sl_rp32_neon){SL_RP_NAME(n_mxfp4), SL_RP_NAME(rows8_mxfp4), SL_RP_NAME(x8_mxfp4)};
        return true;
    default: return false;
    }
}

/* ---- Q4_K in the repacked orders (vec_dot_rp.h: SL_RP_GEMM, SL_RP_GEMV) ----
 * The scalar twin (vec_dot_n_ref.c's q4k_rp): per (row, token) the exact
 * integers I = sum_k sc_k (q_k . a_k) and J = sum_k m_k (bsums of sub-block
 * k) over a 64-element chunk (gemm) or the super-block (gemv), then
 * A = fma(float(I), xd * yd, A), M = fma(float(J), xdmin * yd, M), and
 * A - M. Here a sub-block's dot is rp_dot32 (four lanes, exact), scaled by
 * sc_k into int32 lanes (|I| < 8 * 63 * 32 * 15 * 128 < 2^31), summed
 * across lanes at the FMA; J in scalar integers as the twin does. */
SL_RP_INLINE void SL_RP_NAME(q4k_body)(int per_chunk, int64_t n, float *s, const void *vx,
                                        const void *const *ys, int nt)
{
    const sl_block_q4_K *x = vx;
    float A[SL_VEC_DOT_RP_MAX], M[SL_VEC_DOT_RP_MAX];
    for (int t = 0; t < nt; t++) A[t] = M[t] = 0.0f;
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        /* q[2k], q[2k + 1]: elements 32k..32k+15, 32k+16..32k+31 */
        int8x16_t q[16];
        for (int c = 0; c < 4; c++)
            for (int h = 0; h < 2; h++) {
                const uint8x16_t b = vld1q_u8(x[i].qs + 32 * c + 16 * h);
                q[4 * c + h] = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0F)));
                q[4 * c + 2 + h] = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));
            }
        uint8_t sc[8], m[8];
        for (int k = 0; k < 8; k++) sl_k4_scale_min(x[i].scales, k, &sc[k], &m[k]);
        const float xd = sl_rp_h2f(x[i].d), xdmin = sl_rp_h2f(x[i].dmin);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
            const float pd = xd * y->d, pm = xdmin * y->d;
            int32x4_t I = vdupq_n_s32(0);
            int J = 0;
            _Pragma("GCC unroll 8") /* the chunk ends become straight code */
            for (int k = 0; k < 8; k++) {
                const int32x4_t d = rp_dot32(q[2 * k], q[2 * k + 1], vld1q_s8(y->qs + 32 * k),
                                             vld1q_s8(y->qs + 32 * k + 16));
                I = vmlaq_n_s32(I, d, sc[k]);
                J += m[k] * (y->bsums[2 * k] + y->bsums[2 * k + 1]);
                if (per_chunk && k % 2 == 1) {
                    A[t] = fmaf((float)vaddvq_s32(I), pd, A[t]);
                    M[t] = fmaf((float)J, pm, M[t]);
                    I = vdupq_n_s32(0);
                    J = 0;
                }
            }
            if (!per_chunk) {
                A[t] = fmaf((float)vaddvq_s32(I), pd, A[t]);
                M[t] = fmaf((float)J, pm, M[t]);
            }
        }
    }
    for (int t = 0; t < nt; t++) s[t] = A[t] - M[t];
}

static void SL_RP_NAME(q4k_gemm)(int64_t n, float *s, const void *vx, const void *const *ys,
                                 int nt)
{
    SL_RP_NAME(q4k_body)(1, n, s, vx, ys, nt);
}

static void SL_RP_NAME(q4k_gemv)(int64_t n, float *s, const void *vx, const void *const *ys,
                                 int nt)
{
    SL_RP_NAME(q4k_body)(0, n, s, vx, ys, nt);
}

/* eight rows: the one-row kernel per row, as the scalar twin does */
SL_RP_INLINE void SL_RP_NAME(q4k_rows8)(int per_chunk, int64_t n, float *s, const void *x,
                                         size_t row_bytes, const void *const *ys, int nt)
{
    float v[SL_VEC_DOT_ROWS8_MAX];
    for (int r = 0; r < 8; r++) {
        SL_RP_NAME(q4k_body)(per_chunk, n, v, (const uint8_t *)x + (size_t)r * row_bytes, ys, nt);
        for (int t = 0; t < nt; t++) s[8 * t + r] = v[t];
    }
}

static void SL_RP_NAME(q4k_rows8_gemm)(int64_t n, float *s, const void *x, size_t rb,
                                       const void *const *ys, int nt)
{
    SL_RP_NAME(q4k_rows8)(1, n, s, x, rb, ys, nt);
}

static void SL_RP_NAME(q4k_rows8_gemv)(int64_t n, float *s, const void *x, size_t rb,
                                       const void *const *ys, int nt)
{
    SL_RP_NAME(q4k_rows8)(0, n, s, x, rb, ys, nt);
}

/* this copy's Q4_K kernels of order into *k (x8 stays NULL: no such layout) */
static void SL_RP_NAME(q4k_get)(sl_rp_order order, sl_rp32_neon *k)
{
    const bool gemm = order == SL_RP_GEMM;
    *k = (sl_rp32_neon){gemm ? SL_RP_NAME(q4k_gemm) : SL_RP_NAME(q4k_gemv),
                        gemm ? SL_RP_NAME(q4k_rows8_gemm) : SL_RP_NAME(q4k_rows8_gemv), NULL};
}
