/* quant_avx2.h - small AVX2 helpers shared by the *_avx2.c kernel files.
 *
 * Include only from files compiled with -mavx2 -mfma -mf16c (the *_avx2.c
 * files); everything here is guarded so that a build for another target
 * sees nothing. Must not know: block layouts beyond bytes and nibbles. */
#ifndef SL_QUANT_QUANT_AVX2_H
#define SL_QUANT_QUANT_AVX2_H

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define SL_HAVE_AVX2_BUILD 1
#include <immintrin.h>
#include <stdint.h>

static inline float sl_avx2_hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int sl_avx2_hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

static inline float sl_avx2_hmax_ps(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* 16 bytes of packed nibbles -> 32 bytes: low nibbles first (elements
 * 0..15), then high nibbles (16..31), the Q4_0 element order. */
static inline __m256i sl_avx2_nibbles32(const uint8_t *p)
{
    __m128i q = _mm_loadu_si128((const __m128i *)p);
    __m128i m4 = _mm_set1_epi8(0x0F);
    __m128i lo = _mm_and_si128(q, m4);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

/* Sum of products of signed bytes x, y, in eight i32 lanes (each lane the
 * sum of 4 products). Uses |x| * sign(y, x) so that maddubs (u8 x s8) can
 * do it: exact while no y byte is -128 (activation quantisers never emit
 * -128) -- |x| may be 128. */
static inline __m256i sl_avx2_dot_i8(__m256i x, __m256i y)
{
    __m256i ax = _mm256_sign_epi8(x, x);
    __m256i sy = _mm256_sign_epi8(y, x);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}

/* Same for unsigned x (0..127 keeps maddubs's i16 pair sums exact). */
static inline __m256i sl_avx2_dot_u8i8(__m256i x, __m256i y)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

/* Byte-shuffle masks: mask k puts byte 2k in bytes 0..7 and byte 2k+1 in
 * bytes 8..15. Applied to 16 per-sub-block scale bytes and widened to i16,
 * it gives the 16 x i16 multiplier for one 32-element chunk whose first 16
 * elements belong to sub-block 2k and last 16 to sub-block 2k + 1 (maddubs
 * output lanes 0..7 cover elements 0..15, lanes 8..15 elements 16..31). */
static const uint8_t sl_avx2_pair_shuf[8][16] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5},
    {6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
    {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9},
    {10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13},
    {14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15},
};

/* i16 multiplier for chunk k from 16 signed scale bytes. */
static inline __m256i sl_avx2_pair_scales_i8(__m128i sc, int k)
{
    __m128i s = _mm_shuffle_epi8(sc, _mm_loadu_si128((const __m128i *)sl_avx2_pair_shuf[k]));
    return _mm256_cvtepi8_epi16(s);
}

static inline __m256i sl_avx2_load256(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

/* Byte-shuffle masks broadcasting 16-bit lane j (bytes 2j, 2j+1) of each
 * 128-bit half: with the eight i16 scales of a Q4_K / Q5_K block in both
 * halves, mask j gives sub-block j's scale in all 16 lanes. */
static const uint8_t sl_avx2_i16_bcast[8][32] = {
#define SL_B(j) {2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1,          \
                 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1,          \
                 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1,          \
                 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1}
    SL_B(0), SL_B(1), SL_B(2), SL_B(3), SL_B(4), SL_B(5), SL_B(6), SL_B(7),
#undef SL_B
};

/* Scale j of sc256 (eight i16 scales in each half) in all 16 lanes. */
static inline __m256i sl_avx2_scale_of(__m256i sc256, int j)
{
    return _mm256_shuffle_epi8(sc256, sl_avx2_load256(sl_avx2_i16_bcast[j]));
}

static inline float sl_avx2_h2f(uint16_t h)
{
    return _cvtsh_ss(h);
}

/* Converts 32 floats (four vectors, already clamped to [-127, 127] and
 * rounded to integers) into 32 int8 in order. */
static inline __m256i sl_avx2_pack_i8(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256i ia = _mm256_cvtps_epi32(a), ib = _mm256_cvtps_epi32(b);
    __m256i ic = _mm256_cvtps_epi32(c), id = _mm256_cvtps_epi32(d);
    /* packs work within 128-bit lanes: the result's dwords come out in the
     * order 0 2 4 6 1 3 5 7 and are put back by the permute */
    __m256i ab = _mm256_packs_epi32(ia, ib);
    __m256i cd = _mm256_packs_epi32(ic, id);
    __m256i abcd = _mm256_packs_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* round(clamp(v * id, -127, 127)) with the same semantics as the scalar
 * sl_round_clamp: NaN -> -127, ties to even. */
static inline __m256 sl_avx2_q8_level(__m256 v, __m256 id)
{
    __m256 x = _mm256_mul_ps(v, id);
    x = _mm256_max_ps(x, _mm256_set1_ps(-127.0f)); /* NaN in x -> -127 */
    x = _mm256_min_ps(x, _mm256_set1_ps(127.0f));
    return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

#endif
#endif
