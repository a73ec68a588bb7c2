/* attn_kernels_avx2.c - attention inner loops with AVX2, FMA and F16C.
 * Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them. */
#include "ops/attn_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

static float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static float dot_f16(const float *q, const uint16_t *k, int n)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 k0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i)));
        __m256 k1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i + 8)));
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), k0, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), k1, acc1);
    }
    float acc = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) acc += q[i] * _cvtsh_ss(k[i]);
    return acc;
}

static void axpy_f16(float *out, float a, const uint16_t *v, int n)
{
    const __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i)));
        _mm256_storeu_ps(out + i, _mm256_fmadd_ps(va, x, _mm256_loadu_ps(out + i)));
    }
    for (; i < n; i++) out[i] += a * _cvtsh_ss(v[i]);
}

static float dot_f32(const float *q, const float *k, int n)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), acc1);
    }
    float acc = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) acc += q[i] * k[i];
    return acc;
}

static void axpy_f32(float *out, float a, const float *v, int n)
{
    const __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(v + i),
                                                  _mm256_loadu_ps(out + i)));
    for (; i < n; i++) out[i] += a * v[i];
}

static const sl_attn_kernels avx2 = {dot_f16, axpy_f16, dot_f32, axpy_f32};

const sl_attn_kernels *sl_attn_kernels_avx2(void) { return &avx2; }
#endif
