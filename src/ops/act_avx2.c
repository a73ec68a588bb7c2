/* act_avx2.c - the element-wise activations llama.cpp vectorises, with
 * AVX2 and FMA: eight lanes with the reference's polynomial exponential,
 * the tail with libm's expf, exactly as the reference splits them.
 * Compiled with -mavx2 -mfma; only called when the CPU has them. */
#include "ops/ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "ops/vexp_avx2.h"

void sl_swiglu_avx2(float *x, const float *g, int64_t n)
{
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 e = sl_vexp8(_mm256_sub_ps(_mm256_setzero_ps(), v));
        const __m256 silu = _mm256_div_ps(v, _mm256_add_ps(one, e));
        _mm256_storeu_ps(x + i, _mm256_mul_ps(silu, _mm256_loadu_ps(g + i)));
    }
    for (; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i])) * g[i];
}

void sl_silu_avx2(float *x, int64_t n)
{
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 e = sl_vexp8(_mm256_sub_ps(_mm256_setzero_ps(), v));
        _mm256_storeu_ps(x + i, _mm256_div_ps(v, _mm256_add_ps(one, e)));
    }
    for (; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i]));
}

double sl_softmax_sum_avx2(float *x, int64_t n, float max)
{
    int64_t i = 0;
    double sum = 0.0;
    const __m256 m = _mm256_set1_ps(max);
    for (; i + 8 <= n; i += 8) {
        const __m256 p = sl_vexp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, p);
        __m128 s = _mm_add_ps(_mm256_extractf128_ps(p, 1), _mm256_castps256_ps128(p));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        sum += (double)_mm_cvtss_f32(s);
    }
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    return sum;
}

float sl_dot_f32_untiled_avx2(const float *x, const float *y, int64_t n)
{
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            a[j] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8 * j), _mm256_loadu_ps(y + i + 8 * j), a[j]);
    const __m256 s = _mm256_add_ps(_mm256_add_ps(a[0], a[2]), _mm256_add_ps(a[1], a[3]));
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    float sum = _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    return sum;
}
#endif
