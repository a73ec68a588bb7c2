/* vec_dot_fp_ref.c - scalar reference dot kernels of the float weight types
 * (F32, F16, BF16); F32 weights take f32 activations, F16 and BF16 weights
 * activations rounded to their own type (llama.cpp's vec_dot_type).
 *
 * Owns: every kernel in its AVX2 twin's order (bit-identical).
 * Must not know: instruction sets. */
#include <math.h>

#include "quant/quant_internal.h"
#include "quant/vec_dot_fp_steps.h"
#include "util/hsum.h"

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
    float sum = sl_hsum8(lane);
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    *s = sum;
}

/* f16 x f16: the f32 kernel's lanes over the converted values. */
static void vec_dot_f16_f16(int64_t n, float *s, const void *vx, const void *vy)
{
    *s = sl_fp_lanes8(n, vx, vy, sl_h2f);
}

/* bf16 x bf16 in the AVX2 kernel's order: four 8-lane sums of rounded
 * products over steps of 32, (1+3)+(2+4), the lanes summed, then in double
 * with the tail's products. */
static void vec_dot_bf16_bf16(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx, *y = vy;
    float t[8];
    int64_t i = sl_fp_steps32(n, x, y, sl_bf2f, false, t);
    double sum = (double)sl_hsum8(t);
    for (; i < n; i++) sum += (double)(sl_bf2f(x[i]) * sl_bf2f(y[i]));
    *s = (float)sum;
}

void sl_vec_dot_fill_fp_ref(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_F32] = vec_dot_f32_f32;
    k->vec_dot[SL_TYPE_F16] = vec_dot_f16_f16;
    k->vec_dot[SL_TYPE_BF16] = vec_dot_bf16_bf16;
}
