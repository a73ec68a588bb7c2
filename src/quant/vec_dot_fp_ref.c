/* vec_dot_fp_ref.c - scalar reference dot kernels of the float weight types
 * (F32, F16, BF16), all against f32 activations (vec_dot_type F32: the
 * activation vector is used as is, no quantisation).
 *
 * Owns: F32 in the AVX2 kernel's order (bit-identical); F16 and BF16 a
 * plain sequential float sum. Must not know: instruction sets. */
#include <math.h>

#include "quant/quant_internal.h"

/* The order of the AVX2 kernel (llama.cpp's batched f32 product): eight
 * lane sums, lane l taking elements l, l+8, l+16, ... by FMA, summed as an
 * AVX2 horizontal add; the tail past the last 8 by FMA in order. */
static void vec_dot_f32_f32(int64_t n, float *s, const void *vx, const void *vy)
{
    const float *x = vx, *y = vy;
    float lane[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) lane[l] = fmaf(x[i + l], y[i + l], lane[l]);
    const float a0 = lane[0] + lane[4], a1 = lane[1] + lane[5];
    const float a2 = lane[2] + lane[6], a3 = lane[3] + lane[7];
    float sum = (a0 + a2) + (a1 + a3);
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    *s = sum;
}

static void vec_dot_f16_f32(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx;
    const float *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += sl_h2f(x[i]) * y[i];
    *s = sum;
}

static void vec_dot_bf16_f32(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx;
    const float *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += sl_bits2f((uint32_t)x[i] << 16) * y[i];
    *s = sum;
}

void sl_vec_dot_fill_fp_ref(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_F32] = vec_dot_f32_f32;
    k->vec_dot[SL_TYPE_F16] = vec_dot_f16_f32;
    k->vec_dot[SL_TYPE_BF16] = vec_dot_bf16_f32;
}
