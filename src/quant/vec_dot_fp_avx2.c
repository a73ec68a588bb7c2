/* vec_dot_fp_avx2.c - AVX2/FMA/F16C dot kernels of the float weight types
 * (F32, F16, BF16) against f32 activations.
 *
 * Owns: F32 in the reference's order (below); F16 and BF16: 32 elements
 * per iteration into four independent FMA accumulators (hides the FMA
 * latency), then a scalar tail for n not a multiple of 32.
 * Must not know: threads, matrices, which CPU we run on. */
#include <math.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"

#ifdef SL_HAVE_AVX2_BUILD

static inline float sum4(__m256 a, __m256 b, __m256 c, __m256 d)
{
    return sl_avx2_hsum_ps(_mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
}

/* llama.cpp's batched f32 product (tinyBLAS on AVX2): one 8-lane FMA chain
 * over the row in steps of 8, then the lanes summed (halves, pairs, last
 * two); a tail past the last 8 (the reference then takes another path)
 * is added with scalar FMAs in order. vec_dot_fp_ref.c has the same
 * order. */
static void vec_dot_f32_f32(int64_t n, float *s, const void *vx, const void *vy)
{
    const float *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc);
    float sum = sl_avx2_hsum_ps(acc);
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    *s = sum;
}

static inline __m256 load_f16x8(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static void vec_dot_f16_f32(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx;
    const float *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_f16x8(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(load_f16x8(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_f16x8(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_f16x8(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);
    }
    float sum = sum4(a0, a1, a2, a3);
    for (; i < n; i++) sum += sl_h2f(x[i]) * y[i];
    *s = sum;
}

static inline __m256 load_bf16x8(const uint16_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

static void vec_dot_bf16_f32(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx;
    const float *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_bf16x8(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(load_bf16x8(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_bf16x8(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_bf16x8(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);
    }
    float sum = sum4(a0, a1, a2, a3);
    for (; i < n; i++) sum += sl_bf16_to_f32(x[i]) * y[i];
    *s = sum;
}

bool sl_vec_dot_fill_fp_avx2(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_F32] = vec_dot_f32_f32;
    k->vec_dot[SL_TYPE_F16] = vec_dot_f16_f32;
    k->vec_dot[SL_TYPE_BF16] = vec_dot_bf16_f32;
    return true;
}

#else

bool sl_vec_dot_fill_fp_avx2(sl_quant_kernels *k)
{
    (void)k;
    return false;
}

#endif
