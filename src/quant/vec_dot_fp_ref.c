/* vec_dot_fp_ref.c - scalar reference dot kernels of the float weight types
 * (F32, F16, BF16), all against f32 activations (vec_dot_type F32: the
 * activation vector is used as is, no quantisation).
 *
 * Owns: a plain sequential float sum. Must not know: instruction sets. */
#include "quant/quant_internal.h"

static void vec_dot_f32_f32(int64_t n, float *s, const void *vx, const void *vy)
{
    const float *x = vx, *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += x[i] * y[i];
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
