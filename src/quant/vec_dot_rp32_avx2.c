/* vec_dot_rp32_avx2.c - AVX2/FMA Q4_0 / IQ4_NL / MXFP4 x Q8_0 kernels in the
 * order of llama.cpp's repacked 8x8 gemm and gemv (vec_dot_rp.h), the same
 * bits as vec_dot_rp32_ref.c: integer block sums are exact in any order,
 * and each block's single FMA rounds the same as the scalar fmaf.
 *
 * The eight-row kernel keeps a lane per weight row, as the reference's
 * kernel does: the eight rows' 8-lane integer dots of a block are reduced
 * to one vector of eight block sums, converted, and FMA'd into one
 * accumulator per token. Must not know: threads, matrices, which CPU. */
#include <math.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"

#ifdef SL_HAVE_AVX2_BUILD

#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

enum { K_Q4_0, K_IQ4_NL, K_MXFP4 };

INLINE size_t block_bytes(int kind)
{
    return kind == K_MXFP4 ? sizeof(sl_block_mxfp4) : sizeof(sl_block_q4_0);
}

/* the 32 signed levels of the block at p */
INLINE __m256i levels(int kind, const uint8_t *p, __m256i table)
{
    if (kind == K_Q4_0) return _mm256_sub_epi8(sl_avx2_nibbles32(p + 2), _mm256_set1_epi8(8));
    return _mm256_shuffle_epi8(table, sl_avx2_nibbles32(p + (kind == K_MXFP4 ? 1 : 2)));
}

INLINE float wscale(int kind, const uint8_t *p)
{
    if (kind == K_MXFP4) return sl_e8m0_half(p[0]);
    uint16_t h;
    memcpy(&h, p, 2);
    return sl_avx2_h2f(h);
}

INLINE __m256i table_of(int kind)
{
    const int8_t *t = kind == K_MXFP4 ? sl_mxfp4_values : sl_iq4nl_values;
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)t));
}

INLINE void rp32_n(int kind, int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const uint8_t *x = vx;
    const size_t bb = block_bytes(kind);
    const __m256i table = table_of(kind);
    float acc[SL_VEC_DOT_RP_MAX] = {0};
    for (int64_t i = 0; i < n / SL_QK; i++) {
        const uint8_t *p = x + (size_t)i * bb;
        const __m256i w = levels(kind, p, table);
        const float dx = wscale(kind, p);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_0 *y = (const sl_block_q8_0 *)ys[t] + i;
            const int I = sl_avx2_hsum_epi32(sl_avx2_dot_i8(w, _mm256_loadu_si256((const __m256i *)y->qs)));
            acc[t] = fmaf((float)I, dx * sl_avx2_h2f(y->d), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = acc[t];
}

/* lane r = the sum of the eight lanes of p[r] */
INLINE __m256i reduce8(const __m256i p[8])
{
    const __m256i t0 = _mm256_hadd_epi32(p[0], p[1]), t1 = _mm256_hadd_epi32(p[2], p[3]);
    const __m256i t2 = _mm256_hadd_epi32(p[4], p[5]), t3 = _mm256_hadd_epi32(p[6], p[7]);
    /* u0: rows 0..3, lanes 0..3 in the low half, lanes 4..7 in the high */
    const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
                            _mm256_permute2x128_si256(u0, u1, 0x31));
}

INLINE __m256 wscale8(int kind, const uint8_t *p, size_t rbytes)
{
    if (kind == K_MXFP4) {
        /* sl_e8m0_half for eight exponents at once: 2^(e-128) is the float
         * with exponent field e - 1 for e >= 2, the subnormal 2^21 << e bits
         * below that */
        const __m256i e = _mm256_setr_epi32(p[0], p[rbytes], p[2 * rbytes], p[3 * rbytes],
                                            p[4 * rbytes], p[5 * rbytes], p[6 * rbytes], p[7 * rbytes]);
        const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
        const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
        const __m256i is_tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
        return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, is_tiny));
    }
    uint16_t h[8];
    for (int r = 0; r < 8; r++) memcpy(&h[r], p + (size_t)r * rbytes, 2);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}

INLINE void rp32_rows8(int kind, int64_t n, float *s, const uint8_t *x, size_t rbytes,
                       const void *const *ys, const int nt)
{
    const size_t bb = block_bytes(kind);
    const __m256i table = table_of(kind);
    __m256 acc[SL_VEC_DOT_ROWS8_MAX];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK; i++) {
        const uint8_t *p = x + (size_t)i * bb;
        __m256i w[8];
        for (int r = 0; r < 8; r++) w[r] = levels(kind, p + (size_t)r * rbytes, table);
        const __m256 dx = wscale8(kind, p, rbytes);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_0 *y = (const sl_block_q8_0 *)ys[t] + i;
            const __m256i a = _mm256_loadu_si256((const __m256i *)y->qs);
            __m256i d[8];
            for (int r = 0; r < 8; r++) d[r] = sl_avx2_dot_i8(w[r], a);
            const __m256 dxy = _mm256_mul_ps(dx, _mm256_set1_ps(sl_avx2_h2f(y->d)));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(reduce8(d)), dxy, acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(s + 8 * t, acc[t]);
}

/* nt as a constant in each case so the token loops unroll */
#define RP32_ROWS8(kind)                                                                        \
    switch (nt) {                                                                               \
    case 1: rp32_rows8(kind, n, s, x, rb, ys, 1); break;                                        \
    case 2: rp32_rows8(kind, n, s, x, rb, ys, 2); break;                                        \
    case 3: rp32_rows8(kind, n, s, x, rb, ys, 3); break;                                        \
    default: rp32_rows8(kind, n, s, x, rb, ys, 4); break;                                       \
    }

static void rows8_q4_0(int64_t n, float *s, const void *vx, size_t rb, const void *const *ys, int nt)
{
    const uint8_t *x = vx;
    RP32_ROWS8(K_Q4_0)
}

static void rows8_iq4_nl(int64_t n, float *s, const void *vx, size_t rb, const void *const *ys,
                         int nt)
{
    const uint8_t *x = vx;
    RP32_ROWS8(K_IQ4_NL)
}

static void rows8_mxfp4(int64_t n, float *s, const void *vx, size_t rb, const void *const *ys,
                        int nt)
{
    const uint8_t *x = vx;
    RP32_ROWS8(K_MXFP4)
}

static void n_q4_0(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    rp32_n(K_Q4_0, n, s, vx, ys, nt);
}

static void n_iq4_nl(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    rp32_n(K_IQ4_NL, n, s, vx, ys, nt);
}

static void n_mxfp4(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    rp32_n(K_MXFP4, n, s, vx, ys, nt);
}

sl_vec_dot_n_fn sl_vec_dot_n_b32_rp_avx2(sl_type type)
{
    switch (type) {
    case SL_TYPE_Q4_0: return n_q4_0;
    case SL_TYPE_IQ4_NL: return n_iq4_nl;
    case SL_TYPE_MXFP4: return n_mxfp4;
    default: return NULL;
    }
}

sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp_avx2(sl_type type)
{
    switch (type) {
    case SL_TYPE_Q4_0: return rows8_q4_0;
    case SL_TYPE_IQ4_NL: return rows8_iq4_nl;
    case SL_TYPE_MXFP4: return rows8_mxfp4;
    default: return NULL;
    }
}

#else

sl_vec_dot_n_fn sl_vec_dot_n_b32_rp_avx2(sl_type type)
{
    (void)type;
    return NULL;
}

sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp_avx2(sl_type type)
{
    (void)type;
    return NULL;
}

#endif
