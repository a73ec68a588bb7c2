/* synth_gen_avx2.c - four xoshiro256** streams in the 64-bit lanes of a
 * ymm register, feeding the fast normal fill (see synth_gen.h).
 *
 * Owns: the vector form of sl_rng_next and of the Irwin-Hall sum of
 * synth_rng.c. Lane k holds row k's stream, so every row still sees its
 * own sequence of draws, in order; the results are bit-identical to the
 * scalar loop: the draws are integer arithmetic (x * 5 and x * 9 as shift
 * and add, exact mod 2^64), the centred sum is an exact int32, and the
 * float part is one conversion, one multiply and one add, each rounded as
 * the scalar's (explicit intrinsics, no fused multiply-add).
 * Must not know: tensors, rows, seeds (the caller seeds the streams), which
 * CPU we run on (the caller checks). */
#include "synth/synth_gen.h"

#if defined(__AVX2__)
#include <immintrin.h>

static inline __m256i rotl64(__m256i x, int k)
{
    return _mm256_or_si256(_mm256_slli_epi64(x, k), _mm256_srli_epi64(x, 64 - k));
}

/* One xoshiro256** step of the four lanes: returns rotl(s1 * 5, 7) * 9. */
static inline __m256i next4(__m256i *s0, __m256i *s1, __m256i *s2, __m256i *s3)
{
    __m256i a = _mm256_add_epi64(_mm256_slli_epi64(*s1, 2), *s1); /* s1 * 5 */
    a = rotl64(a, 7);
    __m256i result = _mm256_add_epi64(_mm256_slli_epi64(a, 3), a); /* * 9 */
    __m256i t = _mm256_slli_epi64(*s1, 17);
    *s2 = _mm256_xor_si256(*s2, *s0);
    *s3 = _mm256_xor_si256(*s3, *s1);
    *s1 = _mm256_xor_si256(*s1, *s2);
    *s0 = _mm256_xor_si256(*s0, *s3);
    *s2 = _mm256_xor_si256(*s2, t);
    *s3 = rotl64(*s3, 45);
    return result;
}

/* Sum of the four unsigned 16-bit fields of each 64-bit lane, minus
 * 131072, in the lane's low 32 bits (high 32 bits: don't care). Flipping
 * bit 15 makes each field a - 32768 as a signed 16-bit value, so madd with
 * ones adds field pairs exactly into 32-bit halves; adding the high half
 * to the low one finishes the sum. */
static inline __m256i centred_sum(__m256i x)
{
    __m256i y = _mm256_xor_si256(x, _mm256_set1_epi16((short)0x8000));
    __m256i m = _mm256_madd_epi16(y, _mm256_set1_epi16(1));
    return _mm256_add_epi32(m, _mm256_srli_epi64(m, 32));
}

/* Low 32 bits of the 64-bit lanes of a (element i) and b (element i + 1)
 * side by side: lane k becomes [a_k, b_k]. */
static inline __m256i pair(__m256i a, __m256i b)
{
    return _mm256_blend_epi32(a, _mm256_slli_epi64(b, 32), 0xAA);
}

size_t sl_rng_fill4_normal_avx2(sl_rng r[4], float *const dst[4], size_t n, float mean,
                                float scale)
{
    size_t m = n & ~(size_t)7;
    if (!m) return 0;
    __m256i s0 = _mm256_set_epi64x((long long)r[3].s[0], (long long)r[2].s[0],
                                   (long long)r[1].s[0], (long long)r[0].s[0]);
    __m256i s1 = _mm256_set_epi64x((long long)r[3].s[1], (long long)r[2].s[1],
                                   (long long)r[1].s[1], (long long)r[0].s[1]);
    __m256i s2 = _mm256_set_epi64x((long long)r[3].s[2], (long long)r[2].s[2],
                                   (long long)r[1].s[2], (long long)r[0].s[2]);
    __m256i s3 = _mm256_set_epi64x((long long)r[3].s[3], (long long)r[2].s[3],
                                   (long long)r[1].s[3], (long long)r[0].s[3]);
    const __m256 vmean = _mm256_set1_ps(mean), vscale = _mm256_set1_ps(scale);
    /* sum - 131070 = (sum - 131072) + 2 */
    const __m256i two = _mm256_set1_epi32(2);
    for (size_t i = 0; i < m; i += 8) {
        __m256i d[8];
        for (int j = 0; j < 8; j++) d[j] = centred_sum(next4(&s0, &s1, &s2, &s3));
        /* lane k of p01 holds elements i, i+1 of row k; likewise p23 ... */
        __m256i p01 = pair(d[0], d[1]), p23 = pair(d[2], d[3]);
        __m256i p45 = pair(d[4], d[5]), p67 = pair(d[6], d[7]);
        /* 4x4 transpose of 64-bit pairs: row k gets elements i .. i+7 */
        __m256i t0 = _mm256_unpacklo_epi64(p01, p23), t1 = _mm256_unpackhi_epi64(p01, p23);
        __m256i t2 = _mm256_unpacklo_epi64(p45, p67), t3 = _mm256_unpackhi_epi64(p45, p67);
        __m256i rows[4] = {
            _mm256_permute2x128_si256(t0, t2, 0x20),
            _mm256_permute2x128_si256(t1, t3, 0x20),
            _mm256_permute2x128_si256(t0, t2, 0x31),
            _mm256_permute2x128_si256(t1, t3, 0x31),
        };
        for (int k = 0; k < 4; k++) {
            __m256 z = _mm256_cvtepi32_ps(_mm256_add_epi32(rows[k], two));
            __m256 v = _mm256_add_ps(vmean, _mm256_mul_ps(z, vscale));
            _mm256_storeu_ps(dst[k] + i, v);
        }
    }
    uint64_t out[4][4];
    _mm256_storeu_si256((__m256i *)out[0], s0);
    _mm256_storeu_si256((__m256i *)out[1], s1);
    _mm256_storeu_si256((__m256i *)out[2], s2);
    _mm256_storeu_si256((__m256i *)out[3], s3);
    for (int k = 0; k < 4; k++)
        for (int w = 0; w < 4; w++) r[k].s[w] = out[w][k];
    return m;
}

#else

size_t sl_rng_fill4_normal_avx2(sl_rng r[4], float *const dst[4], size_t n, float mean,
                                float scale)
{
    (void)r;
    (void)dst;
    (void)n;
    (void)mean;
    (void)scale;
    return 0;
}

#endif
