/* vec_dot_fp_order_ref.c - the F16 and BF16 dot kernels in each of the two
 * float orders llama.cpp's CPU backend uses for them (quant.h,
 * sl_fp_order), scalar; the AVX2 twins in vec_dot_fp_order_avx2.c give
 * the same bits. One order of each type is the traits' kernel already
 * (F16: tinyBLAS's, BF16: ggml_vec_dot_bf16's); the other two live here:
 *   F16, ggml_vec_dot_f16 (AVX2 + F16C): four 8-lane FMA sums over steps
 *     of 32 (sum j takes elements 32 i + 8 j + l), reduced as
 *     (s0 + s2) + (s1 + s3), the two 128-bit halves added, then two
 *     horizontal adds ((t0 + t1) + (t2 + t3)); the tail past the last 32
 *     added in double, each product rounded to float first;
 *   BF16, tinyBLAS: one 8-lane FMA chain in steps of 8, the lanes summed
 *     as sluice's other tinyBLAS kernels do (halves, pairs, last two); a
 *     tail past the last 8 (the reference then takes the other order) by
 *     FMA in order.
 * Must not know: instruction sets, matrices. */
#include <math.h>

#include "quant/quant_internal.h"
#include "quant/vec_dot_fp_order.h"
#include "quant/vec_dot_fp_steps.h"
#include "util/hsum.h"

static void f16_vecdot(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx, *y = vy;
    float t[8];
    int64_t i = sl_fp_steps32(n, x, y, sl_h2f, true, t);
    /* the 128-bit halves added, then two horizontal adds */
    const float h0 = t[0] + t[4], h1 = t[1] + t[5], h2 = t[2] + t[6], h3 = t[3] + t[7];
    double sum = (double)((h0 + h1) + (h2 + h3));
    for (; i < n; i++) sum += (double)(sl_h2f(x[i]) * sl_h2f(y[i]));
    *s = (float)sum;
}

static void bf16_tinyblas(int64_t n, float *s, const void *vx, const void *vy)
{
    *s = sl_fp_lanes8(n, vx, vy, sl_bf2f);
}

sl_vec_dot_fn sl_vec_dot_fp_order_ref(sl_type t, sl_fp_order o)
{
    if (t == SL_TYPE_F16)
        return o == SL_FP_VECDOT ? f16_vecdot : sl_quant_vec_dot_isa(SL_TYPE_F16, SL_ISA_SCALAR);
    if (t == SL_TYPE_BF16)
        return o == SL_FP_TINYBLAS ? bf16_tinyblas : sl_quant_vec_dot_isa(SL_TYPE_BF16, SL_ISA_SCALAR);
    return NULL;
}

sl_vec_dot_fn sl_vec_dot_fp_order_isa(sl_type t, sl_fp_order o, sl_isa isa)
{
    if (isa == SL_ISA_SCALAR) return sl_vec_dot_fp_order_ref(t, o);
    if (!sl_vec_dot_fp_order_ref(t, o) || !sl_quant_vec_dot_isa((uint32_t)t, isa)) return NULL;
    /* the traits' own order: the traits' kernel of that set */
    if ((t == SL_TYPE_F16) == (o == SL_FP_TINYBLAS)) return sl_quant_vec_dot_isa((uint32_t)t, isa);
    return isa == SL_ISA_AVX2 ? sl_vec_dot_fp_order_avx2(t, o) : NULL;
}

sl_vec_dot_fn sl_vec_dot_fp_order(sl_type t, sl_fp_order o)
{
    sl_vec_dot_fn f = sl_vec_dot_fp_order_isa(t, o, sl_quant_isa());
    return f ? f : sl_vec_dot_fp_order_ref(t, o);
}
