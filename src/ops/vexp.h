/* vexp.h - e^x as llama.cpp's vectorised exponential (ggml_v_expf, from
 * the Arm optimized-routines algorithm) computes it, one lane at a time:
 * x = n ln2 + b with n = round(x / ln2), a degree-5 polynomial in b, and
 * 2^n put into the exponent, with the same fused multiply-adds, so every
 * result has the reference's bits (it differs from libm's expf in the last
 * place for some inputs). -inf gives 0, large inputs overflow to inf.
 * The AVX2 kernels use the 8-lane form of the same steps. */
#ifndef SL_OPS_VEXP_H
#define SL_OPS_VEXP_H

#include <math.h>
#include <stdint.h>

#include "util/bits.h"

static inline float sl_vexpf(float x)
{
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const uint32_t e = sl_f2bits(z) << 23;
    const float k = sl_bits2f(e + sl_f2bits(1.0f));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                              fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                         u, 0x1.ffffecp-1f * b);
    if (!(fabsf(n) > 126.0f)) return fmaf(k, j, k);
    const uint32_t g = n <= 0.0f ? 0x82000000u : 0u;
    const float s1 = sl_bits2f(g + 0x7f000000u);
    const float s2 = sl_bits2f(e - g);
    if (fabsf(n) > 192.0f) return s1 * s1;
    return fmaf(s2, j, s2) * s1;
}

#endif
