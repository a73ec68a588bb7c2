/* vec_dot_legacy_avx2.c - AVX2/FMA dot kernels of the 32-element types
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, all x Q8_0) and the AVX2 Q8_0 / Q8_1
 * activation quantisers.
 *
 * Owns: the same arithmetic as vec_dot_legacy_ref.c (exact int32 sum per
 * block, then scale) with 32 lanes per block. Quantisers produce the same
 * bytes as their scalar twins.
 * Must not know: threads, matrices, which CPU we run on (quant.c checks). */
#include <math.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"

#ifdef SL_HAVE_AVX2_BUILD

/* One accumulator chain over the blocks, in block order, then the
 * horizontal sum: the order of the reference's AVX2 kernel (and of its
 * batched gemm), so each float rounds as it does there. Measured on
 * llama.cpp's dense1-Q8_0 file: mean KLD against its base 8.0e-5 with two
 * interleaved chains, 4.7e-5 with one. */
static void vec_dot_q8_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q8_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK; i++) {
        __m256i p = sl_avx2_dot_i8(_mm256_loadu_si256((const __m256i *)x[i].qs),
                                   _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256 d = _mm256_set1_ps(sl_avx2_h2f(x[i].d) * sl_avx2_h2f(y[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    *s = sl_avx2_hsum_ps(acc);
}

static inline __m256i q4_0_signed(const uint8_t *qs)
{
    return _mm256_sub_epi8(sl_avx2_nibbles32(qs), _mm256_set1_epi8(8));
}

/* One accumulator chain, as vec_dot_q8_0_q8_0 and the reference. */
static void vec_dot_q4_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK; i++) {
        __m256i p = sl_avx2_dot_i8(q4_0_signed(x[i].qs),
                                   _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256 d = _mm256_set1_ps(sl_avx2_h2f(x[i].d) * sl_avx2_h2f(y[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    *s = sl_avx2_hsum_ps(acc);
}

/* 32 bits -> 32 bytes, 0xFF where bit i of bits is set (byte i). */
static inline __m256i bits_to_bytes(const uint8_t qh[4])
{
    uint32_t bits;
    memcpy(&bits, qh, 4);
    /* byte i takes byte i/8 of the word, then every bit but i%8 is forced
     * to 1: the byte is all ones exactly when bit i%8 was set */
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits),
                                    _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                                       0x0202020202020202, 0x0303030303030303));
    v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7FBFDFEFF7FBFDFE));
    return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

static inline __m256i q5_unsigned(const uint8_t *qs, const uint8_t *qh)
{
    __m256i hb = _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(sl_avx2_nibbles32(qs), hb);
}

static void vec_dot_q5_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    int64_t nb = n / SL_QK;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i q = _mm256_sub_epi8(q5_unsigned(x[i].qs, x[i].qh), _mm256_set1_epi8(16));
        __m256i p = sl_avx2_dot_i8(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256 d = _mm256_set1_ps(sl_avx2_h2f(x[i].d) * sl_avx2_h2f(y[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    *s = sl_avx2_hsum_ps(acc);
}

/* Q4_1 / Q5_1 against Q8_1 in the reference's AVX2 order: the unsigned
 * levels' lanes FMA'd with d * y.d, the offset m * y.s a scalar FMA chain,
 * added to the lane sum at the end (same bits as vec_dot_legacy_ref.c). */
static inline float offset_q8_1_block(__m256i q, const sl_block_q8_1 *y, float d, float m,
                                      __m256 *acc, float summs)
{
    __m256i p = sl_avx2_dot_u8i8(q, _mm256_loadu_si256((const __m256i *)y->qs));
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(d * sl_avx2_h2f(y->d)), _mm256_cvtepi32_ps(p), *acc);
    return fmaf(m, sl_avx2_h2f(y->s), summs);
}

static void vec_dot_q4_1_q8_1(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_1 *x = vx;
    const sl_block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++)
        summs = offset_q8_1_block(sl_avx2_nibbles32(x[i].qs), &y[i], sl_avx2_h2f(x[i].d),
                                  sl_avx2_h2f(x[i].m), &acc, summs);
    *s = sl_avx2_hsum_ps(acc) + summs;
}

static void vec_dot_q5_1_q8_1(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_1 *x = vx;
    const sl_block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++)
        summs = offset_q8_1_block(q5_unsigned(x[i].qs, x[i].qh), &y[i], sl_avx2_h2f(x[i].d),
                                  sl_avx2_h2f(x[i].m), &acc, summs);
    *s = sl_avx2_hsum_ps(acc) + summs;
}

/* Their multi-token forms, the same bits as the single-token kernel per
 * token (test_quant_dot_n checks them). Q4_1's unpacking is two
 * instructions, so it runs the single kernel per token (its weight row stays
 * in L1); Q5_1's is a dozen, so each block is unpacked once and applied to up
 * to four tokens, each with its own lane accumulator and offset chain, step
 * for step as alone (bench_matmul q5_1 n=8: +16 %; the same form for Q4_1
 * measured -12 to -18 %). */
#define SL_LEGACY_N_TOKENS 4

static void vec_dot_n_q4_1_q8_1(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    for (int t = 0; t < nt; t++) vec_dot_q4_1_q8_1(n, &s[t], vx, ys[t]);
}

static void vec_dot_n_q5_1_q8_1(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q5_1 *x = vx;
    for (int t0 = 0; t0 < nt; t0 += SL_LEGACY_N_TOKENS) {
        int m = nt - t0 < SL_LEGACY_N_TOKENS ? nt - t0 : SL_LEGACY_N_TOKENS;
        __m256 acc[SL_LEGACY_N_TOKENS];
        float summs[SL_LEGACY_N_TOKENS];
        for (int t = 0; t < m; t++) {
            acc[t] = _mm256_setzero_ps();
            summs[t] = 0.0f;
        }
        for (int64_t i = 0; i < n / SL_QK; i++) {
            __m256i q = q5_unsigned(x[i].qs, x[i].qh);
            float d = sl_avx2_h2f(x[i].d), mn = sl_avx2_h2f(x[i].m);
            for (int t = 0; t < m; t++) {
                const sl_block_q8_1 *y = ys[t0 + t];
                summs[t] = offset_q8_1_block(q, &y[i], d, mn, &acc[t], summs[t]);
            }
        }
        for (int t = 0; t < m; t++) s[t0 + t] = sl_avx2_hsum_ps(acc[t]) + summs[t];
    }
}

/* One Q8_0/Q8_1 block: the scalar twin's steps (quant_legacy.c q8_block)
 * with the elementwise work in vectors. Returns the f16 scale; writes the
 * levels, the unrounded scale and, if sum != NULL, the levels' sum. */
static uint16_t q8_block_avx2(const float *x, int8_t *q, int *sum, float *df)
{
    __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
    float amax = sl_avx2_hmax_ps(m);
    float d = amax / 127.0f;
    if (d > 65504.0f) d = 65504.0f;
    __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256 l0 = sl_avx2_q8_level(v0, id), l1 = sl_avx2_q8_level(v1, id);
    __m256 l2 = sl_avx2_q8_level(v2, id), l3 = sl_avx2_q8_level(v3, id);
    _mm256_storeu_si256((__m256i *)q, sl_avx2_pack_i8(l0, l1, l2, l3));
    if (sum) {
        __m256 t = _mm256_add_ps(_mm256_add_ps(l0, l1), _mm256_add_ps(l2, l3));
        *sum = (int)sl_avx2_hsum_ps(t); /* small integers: exact in float */
    }
    *df = d;
    return sl_f32_to_fp16(d);
}

static void quant_q8_0_avx2(const float *src, void *dst, int64_t n)
{
    sl_block_q8_0 *b = dst;
    float d;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK)
        b->d = q8_block_avx2(src, b->qs, NULL, &d);
}

static void quant_q8_1_avx2(const float *src, void *dst, int64_t n)
{
    sl_block_q8_1 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        int sum;
        float d;
        b->d = q8_block_avx2(src, b->qs, &sum, &d);
        b->s = sl_f32_to_fp16(d * (float)sum);
    }
}

bool sl_vec_dot_fill_legacy_avx2(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_Q4_0] = vec_dot_q4_0_q8_0;
    k->vec_dot[SL_TYPE_Q4_1] = vec_dot_q4_1_q8_1;
    k->vec_dot[SL_TYPE_Q5_0] = vec_dot_q5_0_q8_0;
    k->vec_dot[SL_TYPE_Q5_1] = vec_dot_q5_1_q8_1;
    k->vec_dot_n[SL_TYPE_Q4_1] = vec_dot_n_q4_1_q8_1; /* kept by the vec_dot_n fill */
    k->vec_dot_n[SL_TYPE_Q5_1] = vec_dot_n_q5_1_q8_1;
    k->vec_dot[SL_TYPE_Q8_0] = vec_dot_q8_0_q8_0;
    k->from_float[SL_TYPE_Q8_0] = quant_q8_0_avx2;
    k->from_float[SL_TYPE_Q8_1] = quant_q8_1_avx2;
    return true;
}

#else

bool sl_vec_dot_fill_legacy_avx2(sl_quant_kernels *k)
{
    (void)k;
    return false;
}

#endif
