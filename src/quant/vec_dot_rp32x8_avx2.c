/* vec_dot_rp32x8_avx2.c - AVX2/FMA Q4_0 / IQ4_NL / MXFP4 x Q8_0 kernel over
 * the eight-row interleaved layout (x8, vec_dot_rp.h), the bits of the
 * scalar twin vec_dot_rp32x8_ref.c.
 *
 * A 32-byte chunk of an x8 block holds 4 nibble bytes of each of the 8
 * rows, one row per 32-bit lane; against the token's matching 4 activation
 * bytes broadcast to every lane, maddubs + madd leave each lane a partial
 * sum of its own row, so the eight chunks (low and high nibbles of four)
 * add up to the eight rows' exact block sums with no reduction across
 * lanes, and the 8 scales are one load. The integer sums are exact in any
 * grouping (the 16-bit partial sums are bounded below 2^15 as noted), and
 * each block's one FMA per (row, token) rounds as the scalar fmaf does.
 * Must not know: threads, matrices, which CPU. */
#include <string.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"

#ifdef SL_HAVE_AVX2_BUILD

#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#define X8_UNROLL _Pragma("GCC unroll 8")
#else
#define INLINE static inline
#define X8_UNROLL
#endif

enum { K_Q4_0, K_IQ4_NL, K_MXFP4 };

/* Levels as the kernel multiplies them. Q4_0: the nibble q (0..15), the
 * block sum then sum(q y) - 8 sum(y). MXFP4: the doubled E2M1 value + 12
 * (0..24), then sum(w y) - 12 sum(y). IQ4_NL: the signed table value (the
 * |w| * sign(y, w) form; its levels reach -127, too wide for an offset). */
static const int8_t k_mxfp4_u[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

INLINE int offset_of(int kind) { return kind == K_Q4_0 ? 8 : kind == K_MXFP4 ? 12 : 0; }

/* the 8 scales of an x8 block at p */
INLINE __m256 scales8(int kind, const uint8_t *p)
{
    if (kind == K_MXFP4) {
        /* sl_e8m0_half lane-wise: 2^(e-128) is the float with exponent field
         * e - 1 for e >= 2, the subnormal 2^21 << e bits below that */
        const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
        const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
        const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
        const __m256i is_tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
        return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, is_tiny));
    }
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

INLINE __m256i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* off times the sum of the 32 activation levels, in every lane: the
 * offset rides in maddubs (|off * (a + b)| <= 12 * 254, no saturation) and
 * the lanes are summed with shuffles, never leaving the vector unit (no
 * extract, broadcast or 32-bit multiply); integer, so exact as before */
INLINE __m256i off_sum_y(int off, const int8_t *qs)
{
    const __m256i a = _mm256_loadu_si256((const __m256i *)qs);
    __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8((char)off), a),
                                  _mm256_set1_epi16(1));
    s = _mm256_add_epi32(s, _mm256_permute2x128_si256(s, s, 1));
    s = _mm256_add_epi32(s, _mm256_shuffle_epi32(s, 0x4E));
    return _mm256_add_epi32(s, _mm256_shuffle_epi32(s, 0xB1));
}

/* ysum: NULL, or per token the table sl_rp32_x8_offset_sums fills (the
 * offset times each block's activation sum), read instead of summing.
 * Chunk by chunk: one 32-byte load gives the low and the high nibbles'
 * levels of 4 elements of each row, multiplied at once into every token's
 * two 16-bit sums (low / high halves of the block), so no more than a
 * chunk's levels are live (the whole block's eight vectors spilled to the
 * stack when they were formed first). The loops are unrolled by pragma:
 * GCC -O2 otherwise keeps them as loops with the levels in memory. */
INLINE void x8_kernel(int kind, int64_t n, float *s, const uint8_t *x, const void *const *ys,
                      const int32_t *const *ysum, const int sums, const int nt)
{
    const size_t bb = kind == K_MXFP4 ? sizeof(sl_block_mxfp4) : sizeof(sl_block_q4_0);
    const size_t sb = kind == K_MXFP4 ? 1 : 2;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(
        (const __m128i *)(kind == K_MXFP4 ? k_mxfp4_u : sl_iq4nl_values)));
    const __m256i ones16 = _mm256_set1_epi16(1);
    const sl_block_q8_0 *y[SL_VEC_DOT_ROWS8_MAX];
    __m256 acc[SL_VEC_DOT_ROWS8_MAX];
    X8_UNROLL
    for (int t = 0; t < nt; t++) {
        acc[t] = _mm256_setzero_ps();
        y[t] = ys[t];
    }
    for (int64_t i = 0; i < n / SL_QK; i++) {
        const uint8_t *p = x + (size_t)i * 8 * bb;
        const uint8_t *q = p + 8 * sb;
        /* lo: elements 0..15 of each row, hi: 16..31 (IQ4_NL: lo only,
         * 32-bit sums, its signed levels through sl_avx2_dot_i8) */
        __m256i lo[SL_VEC_DOT_ROWS8_MAX], hi[SL_VEC_DOT_ROWS8_MAX];
        X8_UNROLL
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(q + 32 * c));
            __m256i wl = _mm256_and_si256(v, m4);
            __m256i wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if (kind != K_Q4_0) {
                wl = _mm256_shuffle_epi8(table, wl);
                wh = _mm256_shuffle_epi8(table, wh);
            }
            X8_UNROLL
            for (int t = 0; t < nt; t++) {
                const __m256i al = bcast4(y[t][i].qs + 4 * c);
                const __m256i ah = bcast4(y[t][i].qs + 16 + 4 * c);
                if (kind == K_IQ4_NL) {
                    const __m256i d = _mm256_add_epi32(sl_avx2_dot_i8(wl, al), sl_avx2_dot_i8(wh, ah));
                    lo[t] = c ? _mm256_add_epi32(lo[t], d) : d;
                } else {
                    /* Q4_0: |pair| <= 2 * 15 * 127, all eight chunks in one
                     * 16-bit sum stay < 2^15; MXFP4: |pair| <= 2 * 24 * 127,
                     * four chunks a sum (lo, hi) */
                    const __m256i pl = _mm256_maddubs_epi16(wl, al);
                    const __m256i ph = _mm256_maddubs_epi16(wh, ah);
                    if (kind == K_Q4_0) {
                        const __m256i d = _mm256_add_epi16(pl, ph);
                        lo[t] = c ? _mm256_add_epi16(lo[t], d) : d;
                    } else {
                        lo[t] = c ? _mm256_add_epi16(lo[t], pl) : pl;
                        hi[t] = c ? _mm256_add_epi16(hi[t], ph) : ph;
                    }
                }
            }
        }
        const __m256 dx = scales8(kind, p);
        X8_UNROLL
        for (int t = 0; t < nt; t++) {
            __m256i I;
            if (kind == K_IQ4_NL)
                I = lo[t];
            else if (kind == K_Q4_0)
                I = _mm256_madd_epi16(lo[t], ones16);
            else
                I = _mm256_add_epi32(_mm256_madd_epi16(lo[t], ones16),
                                     _mm256_madd_epi16(hi[t], ones16));
            if (offset_of(kind) && sums)
                I = _mm256_sub_epi32(I, _mm256_set1_epi32(ysum[t][i]));
            else if (offset_of(kind))
                I = _mm256_sub_epi32(I, off_sum_y(offset_of(kind), y[t][i].qs));
            const __m256 dxy = _mm256_mul_ps(dx, _mm256_set1_ps(sl_avx2_h2f(y[t][i].d)));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I), dxy, acc[t]);
        }
    }
    X8_UNROLL
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(s + 8 * t, acc[t]);
}

/* nt as a constant in each case so the token loops unroll */
#define X8_CASES(kind, sums)                                                                    \
    switch (nt) {                                                                               \
    case 1: x8_kernel(kind, n, s, vx, ys, ysum, sums, 1); break;                                \
    case 2: x8_kernel(kind, n, s, vx, ys, ysum, sums, 2); break;                                \
    case 3: x8_kernel(kind, n, s, vx, ys, ysum, sums, 3); break;                                \
    default: x8_kernel(kind, n, s, vx, ys, ysum, sums, 4); break;                               \
    }

static void x8_q4_0(int64_t n, float *s, const void *vx, size_t rb, const void *const *ys, int nt)
{
    (void)rb;
    const int32_t *const *ysum = NULL;
    X8_CASES(K_Q4_0, 0)
}

static void x8_iq4_nl(int64_t n, float *s, const void *vx, size_t rb, const void *const *ys,
                      int nt)
{
    (void)rb;
    const int32_t *const *ysum = NULL;
    X8_CASES(K_IQ4_NL, 0)
}

static void x8_mxfp4(int64_t n, float *s, const void *vx, size_t rb, const void *const *ys,
                     int nt)
{
    (void)rb;
    const int32_t *const *ysum = NULL;
    X8_CASES(K_MXFP4, 0)
}

static void x8s_q4_0(int64_t n, float *s, const void *vx, const void *const *ys,
                     const int32_t *const *ysum, int nt)
{
    X8_CASES(K_Q4_0, 1)
}

static void x8s_mxfp4(int64_t n, float *s, const void *vx, const void *const *ys,
                      const int32_t *const *ysum, int nt)
{
    X8_CASES(K_MXFP4, 1)
}

sl_vec_dot_x8s_fn sl_vec_dot_x8s_b32_rp_avx2(sl_type type)
{
    switch (type) {
    case SL_TYPE_Q4_0: return x8s_q4_0;
    case SL_TYPE_MXFP4: return x8s_mxfp4;
    default: return NULL;
    }
}

sl_vec_dot_rows8_fn sl_vec_dot_x8_b32_rp_avx2(sl_type type)
{
    switch (type) {
    case SL_TYPE_Q4_0: return x8_q4_0;
    case SL_TYPE_IQ4_NL: return x8_iq4_nl;
    case SL_TYPE_MXFP4: return x8_mxfp4;
    default: return NULL;
    }
}

#else

sl_vec_dot_rows8_fn sl_vec_dot_x8_b32_rp_avx2(sl_type type)
{
    (void)type;
    return NULL;
}

sl_vec_dot_x8s_fn sl_vec_dot_x8s_b32_rp_avx2(sl_type type)
{
    (void)type;
    return NULL;
}

#endif
