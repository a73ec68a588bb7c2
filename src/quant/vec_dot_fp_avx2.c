/* vec_dot_fp_avx2.c - AVX2/FMA/F16C dot kernels of the float weight types:
 * F32 x f32, F16 x f16 and BF16 x bf16 activations.
 *
 * Owns: each in llama.cpp's float order on AVX2 (below); vec_dot_fp_ref.c
 * has the same orders.
 * Must not know: threads, matrices, which CPU we run on. */
#include <math.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"

#ifdef SL_HAVE_AVX2_BUILD


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

/* f16 x f16 in llama.cpp's batched order (tinyBLAS with F16C): one
 * 8-lane FMA chain, the lanes summed as for f32; a tail by FMA in order. */
static void vec_dot_f16_f16(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(load_f16x8(x + i), load_f16x8(y + i), acc);
    float sum = sl_avx2_hsum_ps(acc);
    for (; i < n; i++) sum = fmaf(sl_h2f(x[i]), sl_h2f(y[i]), sum);
    *s = sum;
}

static inline __m256 load_bf16x8(const uint16_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* bf16 x bf16 as llama.cpp's ggml_vec_dot_bf16 on AVX2 (its only path
 * there): four 8-lane sums of rounded products (multiply, then add) over
 * steps of 32, combined (1+3)+(2+4), the lanes summed, then in double with
 * the tail's float products. */
static void vec_dot_bf16_bf16(int64_t n, float *s, const void *vx, const void *vy)
{
    const uint16_t *x = vx, *y = vy;
    __m256 c[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            c[j] = _mm256_add_ps(_mm256_mul_ps(load_bf16x8(x + i + 8 * j), load_bf16x8(y + i + 8 * j)), c[j]);
    const __m256 t = _mm256_add_ps(_mm256_add_ps(c[0], c[2]), _mm256_add_ps(c[1], c[3]));
    double sum = (double)sl_avx2_hsum_ps(t);
    for (; i < n; i++) sum += (double)(sl_bf16_to_f32(x[i]) * sl_bf16_to_f32(y[i]));
    *s = (float)sum;
}


bool sl_vec_dot_fill_fp_avx2(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_F32] = vec_dot_f32_f32;
    k->vec_dot[SL_TYPE_F16] = vec_dot_f16_f16;
    k->vec_dot[SL_TYPE_BF16] = vec_dot_bf16_bf16;
    return true;
}

#else

bool sl_vec_dot_fill_fp_avx2(sl_quant_kernels *k)
{
    (void)k;
    return false;
}

#endif
