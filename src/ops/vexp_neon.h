/* vexp_neon.h - sl_vexpf (ops/vexp.h) for four lanes at once, for aarch64
 * NEON: the same steps lane for lane (vfmaq / vfmsq are the scalar form's
 * fmaf, each rounding once), so every lane has the scalar bits. */
#ifndef SL_OPS_VEXP_NEON_H
#define SL_OPS_VEXP_NEON_H

#include <arm_neon.h>

static inline float32x4_t sl_vexp4(float32x4_t x)
{
    const float32x4_t r = vdupq_n_f32(0x1.8p23f);
    const float32x4_t z = vfmaq_f32(r, x, vdupq_n_f32(0x1.715476p+0f));
    const float32x4_t n = vsubq_f32(z, r);
    const float32x4_t b = vfmsq_f32(vfmsq_f32(x, n, vdupq_n_f32(0x1.62e4p-1f)), n,
                                    vdupq_n_f32(0x1.7f7d1cp-20f));
    const uint32x4_t e = vshlq_n_u32(vreinterpretq_u32_f32(z), 23);
    const float32x4_t k = vreinterpretq_f32_u32(vaddq_u32(e, vreinterpretq_u32_f32(vdupq_n_f32(1))));
    const float32x4_t u = vmulq_f32(b, b);
    const float32x4_t j = vfmaq_f32(
        vmulq_f32(vdupq_n_f32(0x1.ffffecp-1f), b),
        vfmaq_f32(vfmaq_f32(vdupq_n_f32(0x1.fffdb6p-2f), vdupq_n_f32(0x1.555e66p-3f), b),
                  vfmaq_f32(vdupq_n_f32(0x1.573e2ep-5f), vdupq_n_f32(0x1.0e4020p-7f), b), u),
        u);
    const float32x4_t normal = vfmaq_f32(k, k, j);
    const float32x4_t an = vabsq_f32(n);
    const uint32x4_t big = vcgtq_f32(an, vdupq_n_f32(126.0f));
    if (vmaxvq_u32(big) == 0) return normal;
    const uint32x4_t g = vandq_u32(vcleq_f32(n, vdupq_n_f32(0.0f)), vdupq_n_u32(0x82000000u));
    const float32x4_t s1 = vreinterpretq_f32_u32(vaddq_u32(g, vdupq_n_u32(0x7f000000u)));
    const float32x4_t s2 = vreinterpretq_f32_u32(vsubq_u32(e, g));
    const uint32x4_t huge = vcgtq_f32(an, vdupq_n_f32(192.0f));
    const float32x4_t mid = vmulq_f32(vfmaq_f32(s2, s2, j), s1);
    const float32x4_t out = vbslq_f32(huge, vmulq_f32(s1, s1), mid);
    return vbslq_f32(big, out, normal);
}

#endif
