/* vec_dot_fp_order_avx2.c - AVX2/FMA/F16C twins of vec_dot_fp_order_ref.c
 * (the F16 kernel in ggml_vec_dot_f16's order, the BF16 one in tinyBLAS's),
 * bit-identical to it. Must not know: matrices, which CPU. */
#include <math.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_fp_order.h"

#ifdef SL_HAVE_AVX2_BUILD

static void f16_vecdot(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx, *y = vy;
    __m256 c[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            c[j] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i + 8 * j))),
                                   _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(y + i + 8 * j))), c[j]);
    const __m256 r = _mm256_add_ps(_mm256_add_ps(c[0], c[2]), _mm256_add_ps(c[1], c[3]));
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    double sum = (double)_mm_cvtss_f32(_mm_hadd_ps(t1, t1));
    for (; i < n; i++) sum += (double)(sl_h2f(x[i]) * sl_h2f(y[i]));
    *s = (float)sum;
}

static inline __m256 bf16x8(const uint16_t *p)
{
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

static void bf16_tinyblas(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(bf16x8(x + i), bf16x8(y + i), acc);
    float sum = sl_avx2_hsum_ps(acc);
    for (; i < n; i++) sum = fmaf(sl_bits2f((uint32_t)x[i] << 16), sl_bits2f((uint32_t)y[i] << 16), sum);
    *s = sum;
}

sl_vec_dot_fn sl_vec_dot_fp_order_avx2(sl_type t, sl_fp_order o)
{
    if (t == SL_TYPE_F16 && o == SL_FP_VECDOT) return f16_vecdot;
    if (t == SL_TYPE_BF16 && o == SL_FP_TINYBLAS) return bf16_tinyblas;
    return NULL;
}

#else

sl_vec_dot_fn sl_vec_dot_fp_order_avx2(sl_type t, sl_fp_order o)
{
    (void)t;
    (void)o;
    return NULL;
}

#endif
