/* vec_dot_k_avx2.c - AVX2/FMA dot kernels of the K-quants (Q2_K .. Q6_K)
 * against Q8_K activations, and the AVX2 Q8_K activation quantiser.
 *
 * Owns: the float order of llama.cpp's x86 AVX2 kernels (arch/x86/quants.c),
 * which the scalar twins (vec_dot_k_ref.c) reproduce bit for bit. Per
 * super-block the integer part is exact int32 in eight lanes (the
 * sub-block scales enter through madd with 16-bit scale vectors); offsets
 * (mins, the -32 of Q6_K) go through the activation's bsums, Q3_K's -4
 * inside each lane, as the reference takes them. One float FMA per lane
 * and super-block (Q2_K: two, mins first); Q4_K's offset term in a 4-lane
 * accumulator, Q5_K's in a scalar FMA chain.
 * Must not know: threads, matrices, which CPU we run on. */
#include <math.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"

#ifdef SL_HAVE_AVX2_BUILD

/* Q4_K / Q5_K: eight 6-bit scales and mins from 12 bytes (layout in
 * quant_blocks.h), as 8 bytes each. Word form of sl_k4_scale_min. */
static inline void k4_unpack(const uint8_t s[12], uint32_t sc[2], uint32_t mn[2])
{
    uint32_t a0, a1, a2;
    memcpy(&a0, s, 4);
    memcpy(&a1, s + 4, 4);
    memcpy(&a2, s + 8, 4);
    sc[0] = a0 & 0x3F3F3F3Fu;
    mn[0] = a1 & 0x3F3F3F3Fu;
    sc[1] = (a2 & 0x0F0F0F0Fu) | ((a0 >> 6) & 0x03030303u) << 4;
    mn[1] = ((a2 >> 4) & 0x0F0F0F0Fu) | ((a1 >> 6) & 0x03030303u) << 4;
}

/* Sum of the four int32 lanes (exact). */
static inline int hsum4_epi32(__m128i v)
{
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4E));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xB1));
    return _mm_cvtsi128_si32(v);
}

/* Sum over the eight 32-element sub-blocks of min_k * (sum of activation
 * quants in sub-block k), the offset term of Q4_K / Q5_K. */
static inline __m128i k4_min_dot(const uint32_t mn[2], const int16_t bsums[16])
{
    __m128i m16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)mn[1], (int)mn[0]));
    __m128i b0 = _mm_loadu_si128((const __m128i *)bsums);
    __m128i b1 = _mm_loadu_si128((const __m128i *)(bsums + 8));
    return _mm_madd_epi16(m16, _mm_hadd_epi16(b0, b1)); /* hadd: pairs of 16 = 32 */
}

/* One 64-element chunk c of a Q4_K / Q5_K block: lo (sub-block 2c) and hi
 * (2c + 1) hold levels 0..31; a points at the chunk's activations. */
static inline __m256i k4_chunk(__m256i lo, __m256i hi, const int8_t *a, __m256i sc256, int c)
{
    __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, sl_avx2_load256(a)), sl_avx2_scale_of(sc256, 2 * c));
    __m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, sl_avx2_load256(a + 32)),
                                    sl_avx2_scale_of(sc256, 2 * c + 1));
    return _mm256_add_epi32(plo, phi);
}

/* Offset term and scale vector shared by Q4_K and Q5_K. */
static inline __m256i k4_prologue(const uint8_t scales[12], const int16_t bsums[16], float dmin,
                                  __m128 *accm)
{
    uint32_t sc[2], mn[2];
    k4_unpack(scales, sc, mn);
    *accm = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_min_dot(mn, bsums)), *accm);
    __m128i sc16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)sc[1], (int)sc[0]));
    return _mm256_broadcastsi128_si256(sc16);
}

static inline float k4_finish(__m256 acc, __m128 accm)
{
    __m128 am = _mm_add_ps(accm, _mm_movehl_ps(accm, accm));
    am = _mm_add_ss(am, _mm_movehdup_ps(am));
    return sl_avx2_hsum_ps(acc) + _mm_cvtss_f32(am);
}

static inline __m256i q4k_chunk(const uint8_t *q, const int8_t *a, __m256i sc256, int c)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i q4 = sl_avx2_load256(q + 32 * c);
    __m256i lo = _mm256_and_si256(q4, m4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
    return k4_chunk(lo, hi, a + 64 * c, sc256, c);
}

static void vec_dot_q4_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_K *x = vx;
    const sl_block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        float d = y[i].d * sl_avx2_h2f(x[i].d);
        float dmin = -y[i].d * sl_avx2_h2f(x[i].dmin);
        __m256i sc256 = k4_prologue(x[i].scales, y[i].bsums, dmin, &accm);
        const uint8_t *q = x[i].qs;
        const int8_t *a = y[i].qs;
        __m256i s01 = _mm256_add_epi32(q4k_chunk(q, a, sc256, 0), q4k_chunk(q, a, sc256, 1));
        __m256i s23 = _mm256_add_epi32(q4k_chunk(q, a, sc256, 2), q4k_chunk(q, a, sc256, 3));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(s01, s23)),
                              acc);
    }
    *s = k4_finish(acc, accm);
}

/* Bit 4 of chunk c's levels: bit 2c (lo) and 2c + 1 (hi) of qh[l]. */
static inline __m256i q5k_chunk(const uint8_t *q, __m256i qh, const int8_t *a, __m256i sc256,
                                int c)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i q4 = sl_avx2_load256(q + 32 * c);
    __m256i hb = _mm256_srli_epi16(qh, 2 * c); /* bits from the next byte stay above bit 1 */
    __m256i hlo = _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(0x01)), 4);
    __m256i hhi = _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(0x02)), 3);
    __m256i lo = _mm256_or_si256(_mm256_and_si256(q4, m4), hlo);
    __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4), hhi);
    return k4_chunk(lo, hi, a + 64 * c, sc256, c);
}

/* Q5_K: the reference's AVX2 kernel sums the offset term in a scalar
 * chain, one FMA per super-block of dmin and the (exact) integer sum of
 * mins . pair-summed bsums, added after the lanes' hsum. */
static void vec_dot_q5_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_K *x = vx;
    const sl_block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        float d = y[i].d * sl_avx2_h2f(x[i].d);
        float dmin = -y[i].d * sl_avx2_h2f(x[i].dmin);
        uint32_t sc[2], mn[2];
        k4_unpack(x[i].scales, sc, mn);
        summs = fmaf(dmin, (float)hsum4_epi32(k4_min_dot(mn, y[i].bsums)), summs);
        __m128i sc16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)sc[1], (int)sc[0]));
        __m256i sc256 = _mm256_broadcastsi128_si256(sc16);
        const uint8_t *q = x[i].qs;
        const int8_t *a = y[i].qs;
        __m256i qh = sl_avx2_load256(x[i].qh);
        __m256i s01 = _mm256_add_epi32(q5k_chunk(q, qh, a, sc256, 0), q5k_chunk(q, qh, a, sc256, 1));
        __m256i s23 = _mm256_add_epi32(q5k_chunk(q, qh, a, sc256, 2), q5k_chunk(q, qh, a, sc256, 3));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(s01, s23)),
                              acc);
    }
    *s = sl_avx2_hsum_ps(acc) + summs;
}

/* Q6_K: levels 0..63 unsigned into maddubs; the -32 comes back as
 * 32 * sum_k sc_k * bsums_k. Max |i16 pair| 2 * 63 * 127 = 16002. */
static void vec_dot_q6_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q6_K *x = vx;
    const sl_block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m2 = _mm256_set1_epi8(0x03), m2_2 = _mm256_set1_epi8(0x0C);
    const __m256i m2_4 = _mm256_set1_epi8(0x30);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        float d = y[i].d * sl_avx2_h2f(x[i].d);
        __m128i sc = _mm_loadu_si128((const __m128i *)x[i].scales);
        __m256i corr = _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc),
                                         sl_avx2_load256(y[i].bsums));
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h;
            const int8_t *a = y[i].qs + 128 * h;
            __m256i qh = sl_avx2_load256(x[i].qh + 32 * h);
            __m256i la = sl_avx2_load256(ql), lb = sl_avx2_load256(ql + 32);
            __m256i q0 = _mm256_or_si256(_mm256_and_si256(la, m4),
                                         _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
            __m256i q1 = _mm256_or_si256(_mm256_and_si256(lb, m4),
                                         _mm256_slli_epi16(_mm256_and_si256(qh, m2_2), 2));
            __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
                                         _mm256_and_si256(qh, m2_4));
            __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
                                         _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2_4));
            __m256i p0 = _mm256_maddubs_epi16(q0, sl_avx2_load256(a));
            __m256i p1 = _mm256_maddubs_epi16(q1, sl_avx2_load256(a + 32));
            __m256i p2 = _mm256_maddubs_epi16(q2, sl_avx2_load256(a + 64));
            __m256i p3 = _mm256_maddubs_epi16(q3, sl_avx2_load256(a + 96));
            p0 = _mm256_madd_epi16(p0, sl_avx2_pair_scales_i8(sc, 4 * h + 0));
            p1 = _mm256_madd_epi16(p1, sl_avx2_pair_scales_i8(sc, 4 * h + 1));
            p2 = _mm256_madd_epi16(p2, sl_avx2_pair_scales_i8(sc, 4 * h + 2));
            p3 = _mm256_madd_epi16(p3, sl_avx2_pair_scales_i8(sc, 4 * h + 3));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(_mm256_add_epi32(p0, p1),
                                                           _mm256_add_epi32(p2, p3)));
        }
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(corr, 5));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = sl_avx2_hsum_ps(acc);
}

/* One 32-element chunk (h, j) of a Q2_K / Q3_K block: levels 0..7 in q,
 * sub-block scales (i8) for its two halves from sc via shuffle k = 4h + j. */
static inline __m256i k16_chunk(__m256i q, const int8_t *a, __m128i sc, int k)
{
    __m256i p = _mm256_maddubs_epi16(q, sl_avx2_load256(a));
    return _mm256_madd_epi16(p, sl_avx2_pair_scales_i8(sc, k));
}

/* 128 elements (half h) of a Q2_K block: the four 2-bit fields of q. */
static inline __m256i q2k_half(const uint8_t *qs, const int8_t *a, __m128i sc, int h)
{
    const __m256i m3 = _mm256_set1_epi8(0x03);
    __m256i q = sl_avx2_load256(qs + 32 * h);
    a += 128 * h;
    __m256i s0 = k16_chunk(_mm256_and_si256(q, m3), a, sc, 4 * h + 0);
    __m256i s1 = k16_chunk(_mm256_and_si256(_mm256_srli_epi16(q, 2), m3), a + 32, sc, 4 * h + 1);
    __m256i s2 = k16_chunk(_mm256_and_si256(_mm256_srli_epi16(q, 4), m3), a + 64, sc, 4 * h + 2);
    __m256i s3 = k16_chunk(_mm256_and_si256(_mm256_srli_epi16(q, 6), m3), a + 96, sc, 4 * h + 3);
    return _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3));
}

/* Q2_K: levels 0..3; scale and min nibbles per 16-element sub-block. As
 * the reference's AVX2 kernel: one accumulator, per super-block first the
 * FMA of dmin with the mins . bsums lanes, then that of d with the levels'
 * lanes. */
static void vec_dot_q2_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q2_K *x = vx;
    const sl_block_q8_K *y = vy;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        float d = y[i].d * sl_avx2_h2f(x[i].d);
        float dmin = -y[i].d * sl_avx2_h2f(x[i].dmin);
        __m128i raw = _mm_loadu_si128((const __m128i *)x[i].scales);
        __m128i sc = _mm_and_si128(raw, m4);
        __m128i mn = _mm_and_si128(_mm_srli_epi16(raw, 4), m4);
        __m256i mdot = _mm256_madd_epi16(_mm256_cvtepu8_epi16(mn), sl_avx2_load256(y[i].bsums));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(mdot), acc);
        __m256i sumi = _mm256_add_epi32(q2k_half(x[i].qs, y[i].qs, sc, 0),
                                        q2k_half(x[i].qs, y[i].qs, sc, 1));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = sl_avx2_hsum_ps(acc);
}

/* Q3_K chunk (h, j): low bits from field j of q, high bit = bit 4h + j of
 * hmask placed at bit 2: u = level + 4 in 0..7. The reference's AVX2
 * kernel subtracts the 4 inside each lane (maddubs of the low bits minus
 * maddubs of 4 * (1 - high bit)), not through bsums; the same i16 pairs
 * are maddubs(u, a) - maddubs(4, a), so every int32 lane holds exactly the
 * signed sum of its four elements times the sub-block scale, as there. */
static inline __m256i q3k_chunk(__m256i q, __m256i hm, const int8_t *a, __m128i sc, int h, int j)
{
    const __m256i m3 = _mm256_set1_epi8(0x03);
    const __m256i b2 = _mm256_set1_epi8(0x04);
    __m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3);
    int bit = 4 * h + j; /* move it to bit 2 */
    __m256i hb = bit >= 2 ? _mm256_srli_epi16(hm, bit - 2) : _mm256_slli_epi16(hm, 2 - bit);
    __m256i u = _mm256_or_si256(lo, _mm256_and_si256(hb, b2));
    __m256i ya = sl_avx2_load256(a + 32 * j);
    __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(u, ya), _mm256_maddubs_epi16(b2, ya));
    return _mm256_madd_epi16(p, sl_avx2_pair_scales_i8(sc, 4 * h + j));
}

static inline __m256i q3k_half(const uint8_t *qs, __m256i hm, const int8_t *a, __m128i sc, int h)
{
    __m256i q = sl_avx2_load256(qs + 32 * h);
    a += 128 * h;
    __m256i s0 = q3k_chunk(q, hm, a, sc, h, 0), s1 = q3k_chunk(q, hm, a, sc, h, 1);
    __m256i s2 = q3k_chunk(q, hm, a, sc, h, 2), s3 = q3k_chunk(q, hm, a, sc, h, 3);
    return _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3));
}

/* Q3_K: signed levels -4..3, lanes as the reference's (see q3k_chunk). */
static void vec_dot_q3_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q3_K *x = vx;
    const sl_block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        float d = y[i].d * sl_avx2_h2f(x[i].d);
        /* sixteen 6-bit scales (quant_blocks.h): low nibbles from bytes
         * 0..7, high pairs from bytes 8..11, built as four words in a
         * register (not through memory: a store-forwarding stall) */
        uint32_t A, B, C;
        memcpy(&A, x[i].scales, 4);
        memcpy(&B, x[i].scales + 4, 4);
        memcpy(&C, x[i].scales + 8, 4);
        uint32_t w0 = (A & 0x0F0F0F0Fu) | ((C >> 0) & 0x03030303u) << 4;
        uint32_t w1 = (B & 0x0F0F0F0Fu) | ((C >> 2) & 0x03030303u) << 4;
        uint32_t w2 = ((A >> 4) & 0x0F0F0F0Fu) | ((C >> 4) & 0x03030303u) << 4;
        uint32_t w3 = ((B >> 4) & 0x0F0F0F0Fu) | ((C >> 6) & 0x03030303u) << 4;
        __m128i sc = _mm_sub_epi8(_mm_set_epi32((int)w3, (int)w2, (int)w1, (int)w0),
                                  _mm_set1_epi8(32));
        __m256i hm = sl_avx2_load256(x[i].hmask);
        __m256i sumi = _mm256_add_epi32(q3k_half(x[i].qs, hm, y[i].qs, sc, 0),
                                        q3k_half(x[i].qs, hm, y[i].qs, sc, 1));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = sl_avx2_hsum_ps(acc);
}

/* The scalar twin (sl_quant_q8_K_ref) step for step, elementwise work in
 * vectors: identical bytes. */
static void quant_q8_K_avx2(const float *src, void *dst, int64_t n)
{
    sl_block_q8_K *b = dst;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < SL_QK_K; j += 8)
            m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(src + j)), m);
        float amax = sl_avx2_hmax_ps(m);
        if (!(amax >= 1e-30f)) amax = 0.0f;
        const float ids = amax > 0.0f ? 127.0f / amax : 0.0f;
        __m256 id = _mm256_set1_ps(ids);
        b->d = amax > 0.0f ? 1.0f / ids : 0.0f;
        for (int j = 0; j < SL_QK_K; j += 32) {
            __m256 l0 = sl_avx2_q8_level(_mm256_loadu_ps(src + j), id);
            __m256 l1 = sl_avx2_q8_level(_mm256_loadu_ps(src + j + 8), id);
            __m256 l2 = sl_avx2_q8_level(_mm256_loadu_ps(src + j + 16), id);
            __m256 l3 = sl_avx2_q8_level(_mm256_loadu_ps(src + j + 24), id);
            _mm256_storeu_si256((__m256i *)(b->qs + j), sl_avx2_pack_i8(l0, l1, l2, l3));
            b->bsums[j / 16] = (int16_t)sl_avx2_hsum_ps(_mm256_add_ps(l0, l1));
            b->bsums[j / 16 + 1] = (int16_t)sl_avx2_hsum_ps(_mm256_add_ps(l2, l3));
        }
    }
}

bool sl_vec_dot_fill_k_avx2(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_Q2_K] = vec_dot_q2_K_q8_K;
    k->vec_dot[SL_TYPE_Q3_K] = vec_dot_q3_K_q8_K;
    k->vec_dot[SL_TYPE_Q4_K] = vec_dot_q4_K_q8_K;
    k->vec_dot[SL_TYPE_Q5_K] = vec_dot_q5_K_q8_K;
    k->vec_dot[SL_TYPE_Q6_K] = vec_dot_q6_K_q8_K;
    k->from_float[SL_TYPE_Q8_K] = quant_q8_K_avx2;
    return true;
}

#else

bool sl_vec_dot_fill_k_avx2(sl_quant_kernels *k)
{
    (void)k;
    return false;
}

#endif
