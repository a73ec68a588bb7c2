/* vec_dot_fp_neon.c - the NEON dots of the float weight types (F32, F16,
 * BF16), bit for bit their scalar twins (vec_dot_fp_ref.c): the same eight
 * lanes (two float32x4 halves) with one fused multiply-add per element
 * (F32, F16; vfmaq rounds once like fmaf), BF16's four 8-lane sums of
 * rounded products, the same horizontal sums and scalar tails. Half ->
 * float (FCVTL) and bf16 -> float (a shift) are exact.
 * Must not know: which CPU we run on. */
#include <math.h>

#include "quant/quant_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

static inline float hsum8(float32x4_t lo, float32x4_t hi)
{
    const float32x4_t t = vaddq_f32(lo, hi);
    const float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
    return vget_lane_f32(u, 0) + vget_lane_f32(u, 1);
}

static inline float32x4_t h2f4(const uint16_t *p)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

static inline float32x4_t bf2f4(const uint16_t *p)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

static void vec_dot_f32_f32(int64_t n, float *s, const void *vx, const void *vy)
{
    const float *x = vx, *y = vy;
    float32x4_t lo = vdupq_n_f32(0), hi = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        lo = vfmaq_f32(lo, vld1q_f32(x + i), vld1q_f32(y + i));
        hi = vfmaq_f32(hi, vld1q_f32(x + i + 4), vld1q_f32(y + i + 4));
    }
    float sum = hsum8(lo, hi);
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    *s = sum;
}

static void vec_dot_f16_f16(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx, *y = vy;
    float32x4_t lo = vdupq_n_f32(0), hi = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        lo = vfmaq_f32(lo, h2f4(x + i), h2f4(y + i));
        hi = vfmaq_f32(hi, h2f4(x + i + 4), h2f4(y + i + 4));
    }
    float sum = hsum8(lo, hi);
    for (; i < n; i++) sum = fmaf(sl_h2f(x[i]), sl_h2f(y[i]), sum);
    *s = sum;
}

static void vec_dot_bf16_bf16(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx, *y = vy;
    float32x4_t c[4][2];
    for (int j = 0; j < 4; j++) c[j][0] = c[j][1] = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            for (int h = 0; h < 2; h++) {
                const int64_t e = i + 8 * j + 4 * h;
                c[j][h] = vaddq_f32(vmulq_f32(bf2f4(x + e), bf2f4(y + e)), c[j][h]);
            }
    float32x4_t t[2];
    for (int h = 0; h < 2; h++)
        t[h] = vaddq_f32(vaddq_f32(c[0][h], c[2][h]), vaddq_f32(c[1][h], c[3][h]));
    double sum = (double)hsum8(t[0], t[1]);
    for (; i < n; i++)
        sum += (double)(sl_bits2f((uint32_t)x[i] << 16) * sl_bits2f((uint32_t)y[i] << 16));
    *s = (float)sum;
}

bool sl_vec_dot_fill_fp_neon(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_F32] = vec_dot_f32_f32;
    k->vec_dot[SL_TYPE_F16] = vec_dot_f16_f16;
    k->vec_dot[SL_TYPE_BF16] = vec_dot_bf16_bf16;
    return true;
}
#else
bool sl_vec_dot_fill_fp_neon(sl_quant_kernels *k)
{
    (void)k;
    return false;
}
#endif
