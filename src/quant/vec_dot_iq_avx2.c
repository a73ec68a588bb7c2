/* vec_dot_iq_avx2.c - AVX2/FMA dot kernels of the table types: IQ4_NL and
 * MXFP4 against Q8_0, IQ4_XS against Q8_K.
 *
 * Owns: nibble -> table value by a byte shuffle (the 16-entry table fits a
 * register lane), then a signed byte dot product, as in vec_dot_iq_ref.c.
 * Must not know: threads, matrices, which CPU we run on. */
#include <math.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"

#ifdef SL_HAVE_AVX2_BUILD

static inline __m256i table256(const int8_t t[16])
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)t));
}

/* 16 packed nibbles -> 32 table values in element order */
static inline __m256i lookup32(__m256i table, const uint8_t *qs)
{
    return _mm256_shuffle_epi8(table, sl_avx2_nibbles32(qs));
}

static void vec_dot_iq4_nl_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_iq4_nl *x = vx;
    const sl_block_q8_0 *y = vy;
    const __m256i t = table256(sl_iq4nl_values);
    int64_t nb = n / SL_QK, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 1 < nb; i += 2) {
        __m256i p0 = sl_avx2_dot_i8(lookup32(t, x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256i p1 = sl_avx2_dot_i8(lookup32(t, x[i + 1].qs),
                                    _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(sl_avx2_h2f(x[i].d) * sl_avx2_h2f(y[i].d)),
                               _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(sl_avx2_h2f(x[i + 1].d) * sl_avx2_h2f(y[i + 1].d)),
                               _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; i < nb; i++) {
        __m256i p = sl_avx2_dot_i8(lookup32(t, x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(sl_avx2_h2f(x[i].d) * sl_avx2_h2f(y[i].d)),
                               _mm256_cvtepi32_ps(p), acc0);
    }
    *s = sl_avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

/* 2^(e-128) for every E8M0 byte: one load per block instead of the
 * branchy bit construction. Filled once by the fill function, which runs
 * inside sl_quant_init's pthread_once, before any kernel is reachable. */
static float e8m0_half_tab[256];

static void vec_dot_mxfp4_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_mxfp4 *x = vx;
    const sl_block_q8_0 *y = vy;
    const __m256i t = table256(sl_mxfp4_values);
    int64_t nb = n / SL_QK, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 1 < nb; i += 2) {
        __m256i p0 = sl_avx2_dot_i8(lookup32(t, x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256i p1 = sl_avx2_dot_i8(lookup32(t, x[i + 1].qs),
                                    _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(e8m0_half_tab[x[i].e] * sl_avx2_h2f(y[i].d)),
                               _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(e8m0_half_tab[x[i + 1].e] * sl_avx2_h2f(y[i + 1].d)),
                               _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; i < nb; i++) {
        __m256i p = sl_avx2_dot_i8(lookup32(t, x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(e8m0_half_tab[x[i].e] * sl_avx2_h2f(y[i].d)),
                               _mm256_cvtepi32_ps(p), acc0);
    }
    *s = sl_avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

/* Sub-block scales (ls - 32) enter as the i16 multiplier of madd in place of
 * the usual ones: |pair sum| <= 2 * 127 * 127, times 32, fits i32. Lane l
 * of a super-block is the exact integer sum of elements 4l..4l+3 of its
 * eight sub-blocks, times their scales; one FMA per lane with d * y.d, the
 * lanes summed at the end: llama.cpp's ggml_vec_dot_iq4_xs_q8_K on AVX2,
 * what the reference fixtures' build computes for every IQ4_XS product. */
static void vec_dot_iq4_xs_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_iq4_xs *x = vx;
    const sl_block_q8_K *y = vy;
    const __m256i t = table256(sl_iq4nl_values);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        uint16_t sh = x[i].scales_h;
        __m256i sumi = _mm256_setzero_si256();
        for (int k = 0; k < 8; k++) {
            int ls = ((x[i].scales_l[k / 2] >> (4 * (k % 2))) & 0x0F) | ((sh >> (2 * k)) & 3) << 4;
            __m256i v = lookup32(t, x[i].qs + 16 * k);
            __m256i a = _mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * k));
            __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(a, v));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, _mm256_set1_epi16((short)(ls - 32))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(sl_avx2_h2f(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi),
                              acc);
    }
    *s = sl_avx2_hsum_ps(acc);
}

bool sl_vec_dot_fill_iq_avx2(sl_quant_kernels *k)
{
    for (int e = 0; e < 256; e++) e8m0_half_tab[e] = sl_e8m0_half((uint8_t)e);
    k->vec_dot[SL_TYPE_IQ4_NL] = vec_dot_iq4_nl_q8_0;
    k->vec_dot[SL_TYPE_MXFP4] = vec_dot_mxfp4_q8_0;
    k->vec_dot[SL_TYPE_IQ4_XS] = vec_dot_iq4_xs_q8_K;
    return true;
}

#else

bool sl_vec_dot_fill_iq_avx2(sl_quant_kernels *k)
{
    (void)k;
    return false;
}

#endif
