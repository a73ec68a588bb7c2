/* act_neon.c - NEON forms of the activation helpers (see act_neon.h): the
 * scalar forms' expressions lane for lane (sl_vexp4 is sl_vexpf, vdivq
 * rounds like /), the same eights, the same sums and scalar tails. */
#include "ops/act_neon.h"

#if defined(__aarch64__)
#include <math.h>

#include "ops/vexp_neon.h"

void sl_silu_neon(float *x, int64_t n)
{
    const int64_t n8 = n - n % 8;
    const float32x4_t one = vdupq_n_f32(1.0f);
    for (int64_t i = 0; i < n8; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        vst1q_f32(x + i, vdivq_f32(v, vaddq_f32(one, sl_vexp4(vsubq_f32(vdupq_n_f32(0.0f), v)))));
    }
    for (int64_t i = n8; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i]));
}

void sl_swiglu_neon(float *x, const float *g, int64_t n)
{
    const int64_t n8 = n - n % 8;
    const float32x4_t one = vdupq_n_f32(1.0f);
    for (int64_t i = 0; i < n8; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        const float32x4_t q = vdivq_f32(v, vaddq_f32(one, sl_vexp4(vsubq_f32(vdupq_n_f32(0.0f), v))));
        vst1q_f32(x + i, vmulq_f32(q, vld1q_f32(g + i)));
    }
    for (int64_t i = n8; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i])) * g[i];
}

double sl_softmax_sum_neon(float *x, int64_t n, float max)
{
    const float32x4_t m = vdupq_n_f32(max);
    int64_t i = 0;
    double sum = 0.0;
    for (; i + 8 <= n; i += 8) {
        const float32x4_t lo = sl_vexp4(vsubq_f32(vld1q_f32(x + i), m));
        const float32x4_t hi = sl_vexp4(vsubq_f32(vld1q_f32(x + i + 4), m));
        vst1q_f32(x + i, lo);
        vst1q_f32(x + i + 4, hi);
        /* sl_hsum8: (p0+p4 + p2+p6) + (p1+p5 + p3+p7) */
        const float32x4_t t = vaddq_f32(lo, hi);
        const float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
        sum += (double)(vget_lane_f32(u, 0) + vget_lane_f32(u, 1));
    }
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    return sum;
}

float sl_dot_f32_untiled_neon(const float *x, const float *y, int64_t n)
{
    float32x4_t a[4][2];
    for (int j = 0; j < 4; j++) a[j][0] = a[j][1] = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            for (int h = 0; h < 2; h++)
                a[j][h] = vfmaq_f32(a[j][h], vld1q_f32(x + i + 8 * j + 4 * h),
                                    vld1q_f32(y + i + 8 * j + 4 * h));
    /* s = (a0 + a2) + (a1 + a3); t0 = s[0..3] + s[4..7]; (t0+t1) + (t2+t3) */
    float32x4_t s[2];
    for (int h = 0; h < 2; h++) s[h] = vaddq_f32(vaddq_f32(a[0][h], a[2][h]), vaddq_f32(a[1][h], a[3][h]));
    const float32x4_t t0 = vaddq_f32(s[0], s[1]);
    float sum = (vgetq_lane_f32(t0, 0) + vgetq_lane_f32(t0, 1)) +
                (vgetq_lane_f32(t0, 2) + vgetq_lane_f32(t0, 3));
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    return sum;
}
#else
/* other targets: never called (ops.c asks use_neon() first) */
void sl_silu_neon(float *x, int64_t n) { (void)x, (void)n; }
void sl_swiglu_neon(float *x, const float *g, int64_t n) { (void)x, (void)g, (void)n; }
double sl_softmax_sum_neon(float *x, int64_t n, float max)
{
    (void)x, (void)n, (void)max;
    return 0.0;
}
float sl_dot_f32_untiled_neon(const float *x, const float *y, int64_t n)
{
    (void)x, (void)y, (void)n;
    return 0.0f;
}
#endif
