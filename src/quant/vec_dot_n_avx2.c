/* vec_dot_n_avx2.c - AVX2/FMA multi-token dot kernels: one weight row
 * against up to NT activation rows (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL,
 * MXFP4 x Q8_0; Q2_K .. Q6_K, IQ4_XS x Q8_K): every type with an integer
 * vec_dot.
 *
 * Owns: the arithmetic of vec_dot_legacy_avx2.c, vec_dot_k_avx2.c and
 * vec_dot_iq_avx2.c with the weight-side work (loading, unpacking levels,
 * decoding scales, the block scale) done once per block and shared by
 * every token. Per token the
 * vectors are the single kernel's: the same maddubs/madd pairings, the
 * same int32 lanes, one accumulator per single-kernel accumulator updated
 * in the same block order, the same final reduction. So s[t] has exactly
 * the single kernel's bits; only the interleaving across tokens differs.
 * If a single kernel changes its arithmetic, its twin here must follow
 * (tests/unit/test_quant_dot_n.c compares them with memcmp).
 *
 * Each kernel is written once for a compile-time token count (an inlined
 * function with a constant nt) so the per-token accumulators live in
 * registers; a switch picks the instance.
 * Must not know: threads, matrices. Which CPU we run on it asks util/cpu.h,
 * for the 512-bit forms (Q6_K's multi-token, Q4_K's eight-row). */
#include <math.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"
#include "util/cpu.h"

#ifdef SL_HAVE_AVX2_BUILD

#define NT 8 /* tokens per call at most: accumulators for more spill */

/* Loops over tokens and chunks must unroll completely so that the
 * per-token arrays below become registers. */
#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#else
#define INLINE static inline
#define UNROLL
#endif

/* Makes v live in a register at this point. Without it GCC hoists the
 * multiplies of all chunks ahead of their sums and spills dozens of
 * vectors per super-block (K-quants ran ~15% slower). Changes no value. */
#if defined(__GNUC__) || defined(__clang__)
#define KEEP(v) __asm__("" : "+x"(v))
#else
#define KEEP(v) ((void)0)
#endif

/* ---- 32-element blocks against Q8_0: Q8_0, Q4_0, IQ4_NL, MXFP4 ----------
 * The single kernels take blocks in pairs into two accumulators (acc0 for
 * even blocks, acc1 for odd, an odd last block into acc0) and return
 * hsum(acc0 + acc1). sl_avx2_dot_i8(x, y) = madd(maddubs(|x|, sign(y, x)),
 * 1): |x| is the shared part. The block scale is xd * yd, xd the f16 d
 * (MXFP4: 2^(e-128), the value vec_dot_iq_avx2.c's table holds). */

enum { K_Q8_0, K_Q4_0, K_IQ4_NL, K_MXFP4 };

/* One block's i32 lanes for one token: the body of sl_avx2_dot_i8 with
 * |x| precomputed. */
static inline __m256i dot_i8_abs(__m256i ax, __m256i x, const int8_t *a)
{
    __m256i sy = _mm256_sign_epi8(sl_avx2_load256(a), x);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}

/* x levels of block i: Q8_0 loads them, Q4_0 unpacks nibbles minus 8, the
 * table types look nibbles up in tab (the 16 values in both lanes) */
INLINE __m256i legacy_levels(const void *vx, int64_t i, int kind, __m256i tab)
{
    switch (kind) {
    case K_Q4_0:
        return _mm256_sub_epi8(sl_avx2_nibbles32(((const sl_block_q4_0 *)vx)[i].qs),
                               _mm256_set1_epi8(8));
    case K_IQ4_NL:
        return _mm256_shuffle_epi8(tab, sl_avx2_nibbles32(((const sl_block_iq4_nl *)vx)[i].qs));
    case K_MXFP4:
        return _mm256_shuffle_epi8(tab, sl_avx2_nibbles32(((const sl_block_mxfp4 *)vx)[i].qs));
    default:
        return sl_avx2_load256(((const sl_block_q8_0 *)vx)[i].qs);
    }
}

INLINE float legacy_scale(const void *vx, int64_t i, int kind)
{
    switch (kind) {
    case K_Q4_0: return sl_avx2_h2f(((const sl_block_q4_0 *)vx)[i].d);
    case K_IQ4_NL: return sl_avx2_h2f(((const sl_block_iq4_nl *)vx)[i].d);
    case K_MXFP4: return sl_e8m0_half(((const sl_block_mxfp4 *)vx)[i].e);
    default: return sl_avx2_h2f(((const sl_block_q8_0 *)vx)[i].d);
    }
}

static inline __m256i table256(const int8_t t[16])
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)t));
}

INLINE void legacy_n(int64_t n, float *s, const void *vx, const void *const *ys, const int nt,
                     const int kind)
{
    const __m256i tab = table256(kind == K_MXFP4 ? sl_mxfp4_values : sl_iq4nl_values);
    const bool pair = kind == K_IQ4_NL || kind == K_MXFP4;
    const sl_block_q8_0 *y[NT];
    __m256 acc0[NT], acc1[NT];
    UNROLL
    for (int t = 0; t < nt; t++) {
        y[t] = ys[t];
        acc0[t] = _mm256_setzero_ps();
        acc1[t] = _mm256_setzero_ps();
    }
    int64_t nb = n / SL_QK, i = 0;
    for (; i + 1 < nb; i += 2) {
        __m256i x0 = legacy_levels(vx, i, kind, tab), x1 = legacy_levels(vx, i + 1, kind, tab);
        __m256i ax0 = _mm256_sign_epi8(x0, x0), ax1 = _mm256_sign_epi8(x1, x1);
        float xd0 = legacy_scale(vx, i, kind), xd1 = legacy_scale(vx, i + 1, kind);
        UNROLL
        for (int t = 0; t < nt; t++) {
            __m256i p0 = dot_i8_abs(ax0, x0, y[t][i].qs);
            __m256i p1 = dot_i8_abs(ax1, x1, y[t][i + 1].qs);
            __m256 d0 = _mm256_set1_ps(xd0 * sl_avx2_h2f(y[t][i].d));
            __m256 d1 = _mm256_set1_ps(xd1 * sl_avx2_h2f(y[t][i + 1].d));
            acc0[t] = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(p0), acc0[t]);
            /* the reference's kernels: one accumulator chain for Q8_0 and
             * Q4_0, even and odd blocks apart for IQ4_NL and MXFP4 */
            if (pair) acc1[t] = _mm256_fmadd_ps(d1, _mm256_cvtepi32_ps(p1), acc1[t]);
            else acc0[t] = _mm256_fmadd_ps(d1, _mm256_cvtepi32_ps(p1), acc0[t]);
        }
    }
    for (; i < nb; i++) {
        __m256i x0 = legacy_levels(vx, i, kind, tab);
        __m256i ax0 = _mm256_sign_epi8(x0, x0);
        float xd0 = legacy_scale(vx, i, kind);
        UNROLL
        for (int t = 0; t < nt; t++) {
            __m256i p = dot_i8_abs(ax0, x0, y[t][i].qs);
            __m256 d = _mm256_set1_ps(xd0 * sl_avx2_h2f(y[t][i].d));
            acc0[t] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc0[t]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) s[t] = sl_avx2_hsum_ps(_mm256_add_ps(acc0[t], acc1[t]));
}

/* ---- Q5_0, Q4_1, Q5_1 against Q8_0 ---------------------------------------
 * One block per step. Q5_0: signed levels (five bits minus 16), one
 * accumulator. Q4_1 / Q5_1 (x = d q + m): unsigned levels; d * dy * sum q
 * a into acc and m * dy * sum a into accm (both madd(maddubs(., a), 1)),
 * result hsum(acc + accm). */

enum { K_Q5_0, K_Q4_1, K_Q5_1 };

/* 32 bits -> 32 bytes, 0xFF where bit i of bits is set (byte i): byte i
 * takes byte i/8 of the word, every bit but i%8 is forced to 1, and the
 * byte is all ones exactly when bit i%8 was set. */
static inline __m256i bits_to_bytes(const uint8_t qh[4])
{
    uint32_t bits;
    memcpy(&bits, qh, 4);
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

INLINE void offset_n(int64_t n, float *s, const void *vx, const void *const *ys, const int nt,
                     const int kind)
{
    const sl_block_q8_0 *y[NT];
    __m256 acc[NT], accm[NT];
    UNROLL
    for (int t = 0; t < nt; t++) {
        y[t] = ys[t];
        acc[t] = _mm256_setzero_ps();
        accm[t] = _mm256_setzero_ps();
    }
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < n / SL_QK; i++) {
        __m256i q;
        float xd, xm = 0.0f;
        if (kind == K_Q5_0) {
            const sl_block_q5_0 *x = (const sl_block_q5_0 *)vx + i;
            q = _mm256_sub_epi8(q5_unsigned(x->qs, x->qh), _mm256_set1_epi8(16));
            xd = sl_avx2_h2f(x->d);
        } else if (kind == K_Q4_1) {
            const sl_block_q4_1 *x = (const sl_block_q4_1 *)vx + i;
            q = sl_avx2_nibbles32(x->qs);
            xd = sl_avx2_h2f(x->d);
            xm = sl_avx2_h2f(x->m);
        } else {
            const sl_block_q5_1 *x = (const sl_block_q5_1 *)vx + i;
            q = q5_unsigned(x->qs, x->qh);
            xd = sl_avx2_h2f(x->d);
            xm = sl_avx2_h2f(x->m);
        }
        if (kind == K_Q5_0) {
            const __m256i aq = _mm256_sign_epi8(q, q);
            UNROLL
            for (int t = 0; t < nt; t++) {
                __m256i p = dot_i8_abs(aq, q, y[t][i].qs);
                __m256 d = _mm256_set1_ps(xd * sl_avx2_h2f(y[t][i].d));
                acc[t] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[t]);
            }
        } else {
            UNROLL
            for (int t = 0; t < nt; t++) {
                __m256i a = sl_avx2_load256(y[t][i].qs);
                __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q, a), ones);
                __m256i sa = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), a), ones);
                float dy = sl_avx2_h2f(y[t][i].d);
                acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xd * dy), _mm256_cvtepi32_ps(p), acc[t]);
                accm[t] = _mm256_fmadd_ps(_mm256_set1_ps(xm * dy), _mm256_cvtepi32_ps(sa), accm[t]);
            }
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++)
        s[t] = kind == K_Q5_0 ? sl_avx2_hsum_ps(acc[t])
                              : sl_avx2_hsum_ps(_mm256_add_ps(acc[t], accm[t]));
}

/* ---- Q4_K / Q5_K against Q8_K --------------------------------------------
 * Per super-block the single kernels take: an offset term dmin * (mins .
 * pair-summed bsums) into a 4-lane accumulator, and for each 64-element
 * chunk c, madd(maddubs(lo, a), scale 2c) + madd(maddubs(hi, a + 32),
 * scale 2c + 1) summed into eight int32 lanes, one FMA with d per
 * super-block; the result is hsum(acc) + hsum(accm). Q5_K keeps the offset
 * term in a scalar chain instead (fma(dmin, sum of the 4 lanes)), added
 * after hsum(acc). */

/* Sum of four int32 lanes (exact). */
static inline int hsum4_epi32(__m128i v)
{
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4E));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xB1));
    return _mm_cvtsi128_si32(v);
}

/* Eight 6-bit scales and mins from 12 bytes (layout in quant_blocks.h), as
 * 8 bytes each: the word form of sl_k4_scale_min. */
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

/* Levels (0..31) of chunk c: lo = sub-block 2c, hi = 2c + 1. Q4_K takes
 * the nibbles; Q5_K adds bit 2c / 2c + 1 of qh as bit 4. */
INLINE void k4_levels(const void *vx, int64_t i, int c, int is_q5, __m256i *lo, __m256i *hi)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    if (!is_q5) {
        __m256i q4 = sl_avx2_load256(((const sl_block_q4_K *)vx)[i].qs + 32 * c);
        *lo = _mm256_and_si256(q4, m4);
        *hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
        return;
    }
    const sl_block_q5_K *x = (const sl_block_q5_K *)vx + i;
    __m256i q4 = sl_avx2_load256(x->qs + 32 * c);
    __m256i hb = _mm256_srli_epi16(sl_avx2_load256(x->qh), 2 * c);
    __m256i hlo = _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(0x01)), 4);
    __m256i hhi = _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(0x02)), 3);
    *lo = _mm256_or_si256(_mm256_and_si256(q4, m4), hlo);
    *hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4), hhi);
}

/* Q4_K and Q5_K blocks share the d, dmin, scales prefix (quant_blocks.h),
 * but read it through the right type anyway. */
INLINE const uint8_t *k4_scales(const void *vx, int64_t i, int is_q5)
{
    return is_q5 ? ((const sl_block_q5_K *)vx)[i].scales : ((const sl_block_q4_K *)vx)[i].scales;
}

INLINE uint16_t k4_d(const void *vx, int64_t i, int is_q5)
{
    return is_q5 ? ((const sl_block_q5_K *)vx)[i].d : ((const sl_block_q4_K *)vx)[i].d;
}

INLINE uint16_t k4_dmin(const void *vx, int64_t i, int is_q5)
{
    return is_q5 ? ((const sl_block_q5_K *)vx)[i].dmin : ((const sl_block_q4_K *)vx)[i].dmin;
}

INLINE void k4_n(int64_t n, float *s, const void *vx, const void *const *ys, const int nt,
                 const int is_q5)
{
    const sl_block_q8_K *y[NT];
    __m256 acc[NT];
    __m128 accm[NT];
    float summs[NT];
    UNROLL
    for (int t = 0; t < nt; t++) {
        y[t] = ys[t];
        acc[t] = _mm256_setzero_ps();
        accm[t] = _mm_setzero_ps();
        summs[t] = 0.0f;
    }
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const float xd = sl_avx2_h2f(k4_d(vx, i, is_q5));
        const float xdmin = sl_avx2_h2f(k4_dmin(vx, i, is_q5));
        uint32_t sc[2], mn[2];
        k4_unpack(k4_scales(vx, i, is_q5), sc, mn);
        const __m128i m16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)mn[1], (int)mn[0]));
        const __m128i sc16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)sc[1], (int)sc[0]));
        const __m256i sc256 = _mm256_broadcastsi128_si256(sc16);
        __m256i sumi[NT];
        UNROLL
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *b = y[t] + i;
            float dmin = -b->d * xdmin;
            __m128i b0 = _mm_loadu_si128((const __m128i *)b->bsums);
            __m128i b1 = _mm_loadu_si128((const __m128i *)(b->bsums + 8));
            __m128i md = _mm_madd_epi16(m16, _mm_hadd_epi16(b0, b1));
            if (is_q5) summs[t] = fmaf(dmin, (float)hsum4_epi32(md), summs[t]);
            else accm[t] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(md), accm[t]);
            sumi[t] = _mm256_setzero_si256();
        }
        UNROLL
        for (int c = 0; c < 4; c++) {
            __m256i lo, hi;
            k4_levels(vx, i, c, is_q5, &lo, &hi);
            const __m256i slo = sl_avx2_scale_of(sc256, 2 * c), shi = sl_avx2_scale_of(sc256, 2 * c + 1);
            UNROLL
            for (int t = 0; t < nt; t++) {
                const int8_t *a = y[t][i].qs + 64 * c;
                __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, sl_avx2_load256(a)), slo);
                __m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, sl_avx2_load256(a + 32)), shi);
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(plo, phi));
                KEEP(sumi[t]);
            }
        }
        UNROLL
        for (int t = 0; t < nt; t++) {
            float d = y[t][i].d * xd;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) {
        __m128 am = _mm_add_ps(accm[t], _mm_movehl_ps(accm[t], accm[t]));
        am = _mm_add_ss(am, _mm_movehdup_ps(am));
        s[t] = sl_avx2_hsum_ps(acc[t]) + (is_q5 ? summs[t] : _mm_cvtss_f32(am));
    }
}

/* ---- Q4_K in the reference's repacked orders (vec_dot_rp.h) -------------
 * The integer lanes of k4_n, summed to exact ints per 64-element chunk
 * (gemm order: I_c, J_c for c = 0..3, four FMAs per chain and super-block)
 * or per super-block (gemv order: one FMA per chain); A - M at the end.
 * The chains are scalar FMAs in lane 0 of xmm registers. */

INLINE void q4k_rp_n(int64_t n, float *s, const void *vx, const void *const *ys, const int nt,
                     const int per_chunk)
{
    const sl_block_q4_K *x = vx;
    const sl_block_q8_K *y[NT];
    __m128 A[NT], M[NT]; /* the chains, in lane 0 */
    UNROLL
    for (int t = 0; t < nt; t++) {
        y[t] = ys[t];
        A[t] = _mm_setzero_ps();
        M[t] = _mm_setzero_ps();
    }
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const float xd = sl_avx2_h2f(x[i].d);
        const float xdmin = sl_avx2_h2f(x[i].dmin);
        uint32_t sc[2], mn[2];
        k4_unpack(x[i].scales, sc, mn);
        const __m128i m16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)mn[1], (int)mn[0]));
        const __m128i sc16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)sc[1], (int)sc[0]));
        const __m256i sc256 = _mm256_broadcastsi128_si256(sc16);
        /* per token: h01 = hadd(chunk 0, chunk 1) lanes, then h23, then
         * hadd(h01, h23) + its high half = [I_0, I_1, I_2, I_3] (exact);
         * pairing chunks as they come keeps two vectors live per token */
        __m256i h01[NT], cur[NT];
        UNROLL
        for (int c = 0; c < 4; c++) {
            __m256i lo, hi;
            k4_levels(vx, i, c, 0, &lo, &hi);
            const __m256i slo = sl_avx2_scale_of(sc256, 2 * c), shi = sl_avx2_scale_of(sc256, 2 * c + 1);
            UNROLL
            for (int t = 0; t < nt; t++) {
                const int8_t *a = y[t][i].qs + 64 * c;
                __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, sl_avx2_load256(a)), slo);
                __m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, sl_avx2_load256(a + 32)), shi);
                __m256i sc_ = _mm256_add_epi32(plo, phi);
                if (c % 2 == 0) cur[t] = sc_;
                else if (c == 1) h01[t] = _mm256_hadd_epi32(cur[t], sc_);
                else cur[t] = _mm256_hadd_epi32(cur[t], sc_); /* h23 */
                KEEP(cur[t]);
            }
        }
        UNROLL
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *b = y[t] + i;
            __m128i b0 = _mm_loadu_si128((const __m128i *)b->bsums);
            __m128i b1 = _mm_loadu_si128((const __m128i *)(b->bsums + 8));
            const __m128i J = _mm_madd_epi16(m16, _mm_hadd_epi16(b0, b1)); /* J_0..J_3 */
            const __m256i h = _mm256_hadd_epi32(h01[t], cur[t]);
            const __m128i I = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            const __m128 pd = _mm_set_ss(xd * b->d), pm = _mm_set_ss(xdmin * b->d);
            __m128 fi = _mm_cvtepi32_ps(I), fj = _mm_cvtepi32_ps(J);
            if (per_chunk) {
                UNROLL
                for (int c = 0; c < 4; c++) {
                    A[t] = _mm_fmadd_ss(fi, pd, A[t]);
                    M[t] = _mm_fmadd_ss(fj, pm, M[t]);
                    fi = _mm_shuffle_ps(fi, fi, 0x39); /* next lane to lane 0 */
                    fj = _mm_shuffle_ps(fj, fj, 0x39);
                }
            } else {
                A[t] = _mm_fmadd_ss(_mm_cvtepi32_ps(_mm_set1_epi32(hsum4_epi32(I))), pd, A[t]);
                M[t] = _mm_fmadd_ss(_mm_cvtepi32_ps(_mm_set1_epi32(hsum4_epi32(J))), pm, M[t]);
            }
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) s[t] = _mm_cvtss_f32(_mm_sub_ss(A[t], M[t]));
}

/* The float steps of one super-block and token of the eight-row kernels:
 * each row pair's chunk sums u[pr] and min products jv[pr] transposed into
 * chunk order (lanes 0, 2, 4, 6 | 1, 3, 5, 7: rows), the rows' d and dmin
 * (xdv, xmv, in that lane order) times the token's d, then the FMAs into A
 * and M, per chunk or once over the chunks' sum (llama.cpp's two repacked
 * orders). */
INLINE void q4k_rp_rows8_float(const __m256i u[4], const __m256i jv[4], __m256 xdv, __m256 xmv,
                               float y_d, const int per_chunk, __m256 *A, __m256 *M)
{
    __m256i I[4], Jc[4];
    __m256i t0 = _mm256_unpacklo_epi32(u[0], u[1]), t1 = _mm256_unpackhi_epi32(u[0], u[1]);
    __m256i t2 = _mm256_unpacklo_epi32(u[2], u[3]), t3 = _mm256_unpackhi_epi32(u[2], u[3]);
    I[0] = _mm256_unpacklo_epi64(t0, t2);
    I[1] = _mm256_unpackhi_epi64(t0, t2);
    I[2] = _mm256_unpacklo_epi64(t1, t3);
    I[3] = _mm256_unpackhi_epi64(t1, t3);
    t0 = _mm256_unpacklo_epi32(jv[0], jv[1]);
    t1 = _mm256_unpackhi_epi32(jv[0], jv[1]);
    t2 = _mm256_unpacklo_epi32(jv[2], jv[3]);
    t3 = _mm256_unpackhi_epi32(jv[2], jv[3]);
    Jc[0] = _mm256_unpacklo_epi64(t0, t2);
    Jc[1] = _mm256_unpackhi_epi64(t0, t2);
    Jc[2] = _mm256_unpacklo_epi64(t1, t3);
    Jc[3] = _mm256_unpackhi_epi64(t1, t3);
    const __m256 yd = _mm256_set1_ps(y_d);
    const __m256 pd = _mm256_mul_ps(xdv, yd), pm = _mm256_mul_ps(xmv, yd);
    if (per_chunk) {
        UNROLL
        for (int c = 0; c < 4; c++) {
            *A = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I[c]), pd, *A);
            *M = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Jc[c]), pm, *M);
        }
    } else {
        __m256i it = _mm256_add_epi32(_mm256_add_epi32(I[0], I[1]), _mm256_add_epi32(I[2], I[3]));
        __m256i jt = _mm256_add_epi32(_mm256_add_epi32(Jc[0], Jc[1]), _mm256_add_epi32(Jc[2], Jc[3]));
        *A = _mm256_fmadd_ps(_mm256_cvtepi32_ps(it), pd, *A);
        *M = _mm256_fmadd_ps(_mm256_cvtepi32_ps(jt), pm, *M);
    }
}

/* The eight rows' A - M of one token into s[0..8) in row order (the
 * float steps keep them in lane order 0, 2, 4, 6, 1, 3, 5, 7). */
INLINE void q4k_rp_rows8_store(float *s, __m256 A, __m256 M)
{
    _mm256_storeu_ps(s, _mm256_permutevar8x32_ps(_mm256_sub_ps(A, M),
                                                 _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/* Row r's scalar part of a super-block in the eight-row kernels: its d
 * and dmin into the f16 lanes hd / hm (rows 0, 2, 4, 6 then 1, 3, 5, 7:
 * q4k_rp_rows8_float's order), its eight sub-block mins as i16 into *mn16
 * and its eight sub-block scales as i16 (returned). */
INLINE __m128i q4k_row_unpack(const sl_block_q4_K *x, int r, uint16_t hd[8], uint16_t hm[8],
                              __m128i *mn16)
{
    hd[r / 2 + 4 * (r % 2)] = x->d;
    hm[r / 2 + 4 * (r % 2)] = x->dmin;
    uint32_t sc[2], mn[2];
    k4_unpack(x->scales, sc, mn);
    *mn16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)mn[1], (int)mn[0]));
    return _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)sc[1], (int)sc[0]));
}

/* Eight consecutive rows against nt tokens, the same bits per (row,
 * token) as q4k_rp_n: each row's chunk lanes reduced to [I_0..I_3]
 * (hadd), the eight rows' values transposed to one vector per chunk with a
 * lane per row, and the chains run as vector FMAs across the rows.
 * Rows outermost within a super-block: each row's nibbles are unpacked and
 * its scales decoded once per chunk, then applied to every token (the
 * per-token lanes of a row go to qv, 1 KB of stack); only then does each
 * token transpose its eight rows and run its chains. The integer lanes of
 * each (row, token) are those of the one-token form, so the sums are the
 * same exact integers and every float operation is unchanged. Lanes hold
 * rows in the order 0, 2, 4, 6, 1, 3, 5, 7 until the final permute;
 * s[8 t + r] is row r against token t. nt <= SL_VEC_DOT_ROWS8_MAX. */
INLINE void q4k_rp_rows8(int64_t n, float *s, const uint8_t *x0, size_t rbytes,
                         const void *const *ys, const int nt, const int per_chunk)
{
    __m256 A[SL_VEC_DOT_ROWS8_MAX], M[SL_VEC_DOT_ROWS8_MAX];
    UNROLL
    for (int t = 0; t < nt; t++) {
        A[t] = _mm256_setzero_ps();
        M[t] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const sl_block_q8_K *b[SL_VEC_DOT_ROWS8_MAX];
        UNROLL
        for (int t = 0; t < nt; t++) b[t] = (const sl_block_q8_K *)ys[t] + i;
        __m256i qv[8][SL_VEC_DOT_ROWS8_MAX]; /* row r, token t: partial [I_0..I_3] x 2 */
        __m128i m16[8];
        uint16_t hd[8], hm[8];
        for (int r = 0; r < 8; r++) {
            const sl_block_q4_K *x = (const sl_block_q4_K *)(x0 + (size_t)r * rbytes) + i;
            const __m256i sc256 = _mm256_broadcastsi128_si256(q4k_row_unpack(x, r, hd, hm, &m16[r]));
            __m256i h01[SL_VEC_DOT_ROWS8_MAX], cur[SL_VEC_DOT_ROWS8_MAX];
            UNROLL
            for (int c = 0; c < 4; c++) {
                const __m256i m4 = _mm256_set1_epi8(0x0F);
                const __m256i q4 = sl_avx2_load256(x->qs + 32 * c);
                const __m256i lo = _mm256_and_si256(q4, m4);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
                const __m256i slo = sl_avx2_scale_of(sc256, 2 * c);
                const __m256i shi = sl_avx2_scale_of(sc256, 2 * c + 1);
                UNROLL
                for (int t = 0; t < nt; t++) {
                    const int8_t *a = b[t]->qs + 64 * c;
                    __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, sl_avx2_load256(a)), slo);
                    __m256i phi =
                        _mm256_madd_epi16(_mm256_maddubs_epi16(hi, sl_avx2_load256(a + 32)), shi);
                    __m256i sc_ = _mm256_add_epi32(plo, phi);
                    if (c % 2 == 0) cur[t] = sc_;
                    else if (c == 1) h01[t] = _mm256_hadd_epi32(cur[t], sc_);
                    else cur[t] = _mm256_hadd_epi32(cur[t], sc_);
                    KEEP(cur[t]);
                }
            }
            UNROLL
            for (int t = 0; t < nt; t++) qv[r][t] = _mm256_hadd_epi32(h01[t], cur[t]);
        }
        const __m256 xdv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)hd));
        const __m256 xmv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)hm));
        UNROLL
        for (int t = 0; t < nt; t++) {
            const __m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)b[t]->bsums),
                                              _mm_loadu_si128((const __m128i *)(b[t]->bsums + 8)));
            __m256i u[4], jv[4];
            UNROLL
            for (int pr = 0; pr < 4; pr++) {
                const __m256i q0 = qv[2 * pr][t], q1 = qv[2 * pr + 1][t];
                /* [row 2pr: I_0..I_3 | row 2pr + 1: I_0..I_3] */
                u[pr] = _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20),
                                         _mm256_permute2x128_si256(q0, q1, 0x31));
                jv[pr] = _mm256_set_m128i(_mm_madd_epi16(m16[2 * pr + 1], bs),
                                          _mm_madd_epi16(m16[2 * pr], bs));
            }
            q4k_rp_rows8_float(u, jv, xdv, xmv, b[t]->d, per_chunk, &A[t], &M[t]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) q4k_rp_rows8_store(s + 8 * t, A[t], M[t]);
}

/* q4k_row_unpack for the one-token kernels: the mins' products with the token's paired
 * bsums bs into *J. */
INLINE __m128i q4k_row_scales(const sl_block_q4_K *x, int r, __m128i bs, uint16_t hd[8],
                              uint16_t hm[8], __m128i *J)
{
    __m128i mn16;
    const __m128i sc16 = q4k_row_unpack(x, r, hd, hm, &mn16);
    *J = _mm_madd_epi16(mn16, bs);
    return sc16;
}

/* The one-token case, scales decoded where they are used (fewer live
 * vectors: ~6 % faster than q4k_rp_rows8 with nt = 1). Same arithmetic. */
INLINE void q4k_rp_rows8_1(int64_t n, float *s, const uint8_t *x0, size_t rbytes,
                           const sl_block_q8_K *y, const int per_chunk)
{
    __m256 A = _mm256_setzero_ps(), M = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const sl_block_q8_K *b = y + i;
        const __m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)b->bsums),
                                          _mm_loadu_si128((const __m128i *)(b->bsums + 8)));
        __m256i u[4], jv[4];
        uint16_t hd[8], hm[8];
        UNROLL
        for (int pr = 0; pr < 4; pr++) {
            __m256i q[2];
            __m128i J[2];
            UNROLL
            for (int k = 0; k < 2; k++) {
                const int r = 2 * pr + k;
                const sl_block_q4_K *x = (const sl_block_q4_K *)(x0 + (size_t)r * rbytes) + i;
                const __m256i sc256 =
                    _mm256_broadcastsi128_si256(q4k_row_scales(x, r, bs, hd, hm, &J[k]));
                __m256i h01 = _mm256_setzero_si256(), cur = _mm256_setzero_si256();
                UNROLL
                for (int c = 0; c < 4; c++) {
                    const __m256i m4 = _mm256_set1_epi8(0x0F);
                    __m256i q4 = sl_avx2_load256(x->qs + 32 * c);
                    __m256i lo = _mm256_and_si256(q4, m4);
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
                    const int8_t *a = b->qs + 64 * c;
                    __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, sl_avx2_load256(a)),
                                                    sl_avx2_scale_of(sc256, 2 * c));
                    __m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, sl_avx2_load256(a + 32)),
                                                    sl_avx2_scale_of(sc256, 2 * c + 1));
                    __m256i sc_ = _mm256_add_epi32(plo, phi);
                    if (c % 2 == 0) cur = sc_;
                    else if (c == 1) h01 = _mm256_hadd_epi32(cur, sc_);
                    else cur = _mm256_hadd_epi32(cur, sc_);
                }
                q[k] = _mm256_hadd_epi32(h01, cur);
            }
            u[pr] = _mm256_add_epi32(_mm256_permute2x128_si256(q[0], q[1], 0x20),
                                     _mm256_permute2x128_si256(q[0], q[1], 0x31));
            jv[pr] = _mm256_set_m128i(J[1], J[0]);
        }
        q4k_rp_rows8_float(u, jv, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)hd)),
                           _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)hm)), b->d, per_chunk,
                           &A, &M);
    }
    q4k_rp_rows8_store(s, A, M);
}

/* q4k_rp_rows8_1 with 512-bit integer vectors, on CPUs with AVX-512BW
 * (chosen at run time: sl_vec_dot_rows8_q4_K_rp_avx2). A zmm holds a pair
 * of rows side by side (row 2pr in the low 256 bits, 2pr + 1 in the high),
 * so each chunk of 64 levels takes one nibble split, two maddubs and two
 * madd for both rows (the 256-bit form: twice that); the token's
 * activations are loaded once per super-block into both halves. The
 * horizontal adds are the 256-bit form's, lane for lane (an even/odd
 * shuffle and an add per 128-bit lane), and every i32 that reaches the
 * float steps is the same exact integer sum (no lane mixes rows, levels
 * times activations stay far inside i32); from there the float steps are
 * q4k_rp_rows8_1's, so s has its bits. */
#define SL_T512 __attribute__((target("avx512f,avx512bw")))

/* hadd_epi32 of a and b in each 128-bit lane: a0+a1, a2+a3, b0+b1, b2+b3. */
SL_T512 INLINE __m512i hadd512(__m512i a, __m512i b)
{
    const __m512 fa = _mm512_castsi512_ps(a), fb = _mm512_castsi512_ps(b);
    const __m512i even = _mm512_castps_si512(_mm512_shuffle_ps(fa, fb, _MM_SHUFFLE(2, 0, 2, 0)));
    const __m512i odd = _mm512_castps_si512(_mm512_shuffle_ps(fa, fb, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_epi32(even, odd);
}

/* A pair of rows' i16 sub-block scales in a zmm: [row a's x2 | row b's x2],
 * one copy per 128-bit lane. */
SL_T512 INLINE __m512i q4k_pair_scales512(__m128i sc_a, __m128i sc_b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(sc_a)),
                              _mm256_broadcastsi128_si256(sc_b), 1);
}

/* Chunk c (64 levels) of a pair of rows, row a in the low 256 bits and b
 * in the high: the low and high nibbles, and the sub-block scales that go
 * with each (2c and 2c + 1), from q4k_pair_scales512's sc512. */
typedef struct q4k_pair_chunk {
    __m512i lo, hi, slo, shi;
} q4k_pair_chunk;

SL_T512 INLINE q4k_pair_chunk q4k_pair_chunk512(const sl_block_q4_K *xa, const sl_block_q4_K *xb,
                                                __m512i sc512, int c)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i q4 = _mm512_inserti64x4(_mm512_castsi256_si512(sl_avx2_load256(xa->qs + 32 * c)),
                                          sl_avx2_load256(xb->qs + 32 * c), 1);
    q4k_pair_chunk k;
    k.lo = _mm512_and_si512(q4, m4);
    k.hi = _mm512_and_si512(_mm512_srli_epi16(q4, 4), m4);
    k.slo = _mm512_shuffle_epi8(sc512,
                                _mm512_broadcast_i64x4(sl_avx2_load256(sl_avx2_i16_bcast[2 * c])));
    k.shi = _mm512_shuffle_epi8(
        sc512, _mm512_broadcast_i64x4(sl_avx2_load256(sl_avx2_i16_bcast[2 * c + 1])));
    return k;
}

/* One token's products with chunk k: the low nibbles against activations
 * alo (32, in both halves), the high against ahi, each scaled, i32 sums. */
SL_T512 INLINE __m512i q4k_pair_dot512(const q4k_pair_chunk *k, __m512i alo, __m512i ahi)
{
    const __m512i plo = _mm512_madd_epi16(_mm512_maddubs_epi16(k->lo, alo), k->slo);
    const __m512i phi = _mm512_madd_epi16(_mm512_maddubs_epi16(k->hi, ahi), k->shi);
    return _mm512_add_epi32(plo, phi);
}

/* One token's four chunk sums S of a pair of rows folded into the 256-bit
 * form's lanes: [row a: I_0..I_3 | row b: I_0..I_3]. The horizontal adds
 * are the 256-bit form's lane for lane, then each row's two halves (128-bit
 * lanes 0 + 1 and 2 + 3) are added. Without per_chunk the float steps use
 * only each row's sum of its four lanes (an exact integer whatever the
 * order), so S[0] holds the chunks already added lane by lane
 * (q4k_pair_step512) instead of the horizontal adds: four lanes per row
 * that hold the same total. */
SL_T512 INLINE __m256i q4k_pair_fold512(const __m512i S[4], const int per_chunk)
{
    const __m512i q = per_chunk ? hadd512(hadd512(S[0], S[1]), hadd512(S[2], S[3])) : S[0];
    const __m512i qa = _mm512_shuffle_i32x4(q, q, _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i qb = _mm512_shuffle_i32x4(q, q, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm512_castsi512_si256(_mm512_add_epi32(qa, qb));
}

/* the two bodies for AVX-512BW, and again with VNNI's vpdpwssd */
#define Q4K512_ATTR SL_T512
#define Q4K512_NAME(x) x
#define Q4K512_VNNI 0
#include "quant/vec_dot_q4k512_body.h"
#undef Q4K512_ATTR
#undef Q4K512_NAME
#undef Q4K512_VNNI

#define SL_T512V __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define Q4K512_ATTR SL_T512V
#define Q4K512_NAME(x) x##_vnni
#define Q4K512_VNNI 1
#include "quant/vec_dot_q4k512_body.h"
#undef Q4K512_ATTR
#undef Q4K512_NAME
#undef Q4K512_VNNI

/* The eight-row kernels called through sl_vec_dot_rows8_fn: one token by
 * the one-token form `one`, more by `multi`; ATTR the function's target
 * (empty for the AVX2 forms). */
#define ROWS8_INSTANCES(name, ATTR, one, multi, per_chunk)                                     \
    ATTR static void name(int64_t n, float *s, const void *x, size_t rb,                      \
                          const void *const *ys, int nt)                                      \
    {                                                                                          \
        switch (nt) {                                                                          \
        case 1: one(n, s, x, rb, ys[0], per_chunk); break;                                     \
        case 2: multi(n, s, x, rb, ys, 2, per_chunk); break;                                   \
        case 3: multi(n, s, x, rb, ys, 3, per_chunk); break;                                   \
        default: multi(n, s, x, rb, ys, 4, per_chunk); break;                                  \
        }                                                                                      \
    }

ROWS8_INSTANCES(rows8_q4_K_rp64, , q4k_rp_rows8_1, q4k_rp_rows8, 1)
ROWS8_INSTANCES(rows8_q4_K_rp256, , q4k_rp_rows8_1, q4k_rp_rows8, 0)
ROWS8_INSTANCES(rows8_q4_K_rp64_512, SL_T512, q4k_rp_rows8_1_512, q4k_rp_rows8_512, 1)
ROWS8_INSTANCES(rows8_q4_K_rp256_512, SL_T512, q4k_rp_rows8_1_512, q4k_rp_rows8_512, 0)
ROWS8_INSTANCES(rows8_q4_K_rp64_vnni, SL_T512V, q4k_rp_rows8_1_512_vnni, q4k_rp_rows8_512_vnni, 1)
ROWS8_INSTANCES(rows8_q4_K_rp256_vnni, SL_T512V, q4k_rp_rows8_1_512_vnni, q4k_rp_rows8_512_vnni, 0)

/* ---- Q6_K against Q8_K ---------------------------------------------------
 * Levels 0..63 unsigned into maddubs; per 128-element half h, chunks
 * k = 0..3 scaled by the pair of sub-block scales 4h + k, summed as
 * (p0 + p1) + (p2 + p3); the -32 returns as 32 * scales . bsums. */

INLINE void q6k_n(int64_t n, float *s, const void *vx, const void *const *ys, const int nt)
{
    const sl_block_q6_K *x = vx;
    const sl_block_q8_K *y[NT];
    __m256 acc[NT];
    UNROLL
    for (int t = 0; t < nt; t++) {
        y[t] = ys[t];
        acc[t] = _mm256_setzero_ps();
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m2 = _mm256_set1_epi8(0x03), m2_2 = _mm256_set1_epi8(0x0C);
    const __m256i m2_4 = _mm256_set1_epi8(0x30);
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const float xd = sl_avx2_h2f(x[i].d);
        const __m128i sc = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc);
        __m256i sumi[NT];
        UNROLL
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        UNROLL
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h;
            __m256i qh = sl_avx2_load256(x[i].qh + 32 * h);
            __m256i la = sl_avx2_load256(ql), lb = sl_avx2_load256(ql + 32);
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(la, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(lb, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(qh, m2_2), 2));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
                                   _mm256_and_si256(qh, m2_4));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2_4));
            __m256i ps[4];
            UNROLL
            for (int k = 0; k < 4; k++) ps[k] = sl_avx2_pair_scales_i8(sc, 4 * h + k);
            UNROLL
            for (int t = 0; t < nt; t++) {
                const int8_t *a = y[t][i].qs + 128 * h;
                __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(q[0], sl_avx2_load256(a)), ps[0]);
                __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(q[1], sl_avx2_load256(a + 32)), ps[1]);
                __m256i p2 = _mm256_madd_epi16(_mm256_maddubs_epi16(q[2], sl_avx2_load256(a + 64)), ps[2]);
                __m256i p3 = _mm256_madd_epi16(_mm256_maddubs_epi16(q[3], sl_avx2_load256(a + 96)), ps[3]);
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(_mm256_add_epi32(p0, p1),
                                                                     _mm256_add_epi32(p2, p3)));
                KEEP(sumi[t]);
            }
        }
        UNROLL
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *b = y[t] + i;
            __m256i corr = _mm256_madd_epi16(sc16, sl_avx2_load256(b->bsums));
            __m256i si = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(corr, 5));
            float d = b->d * xd;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(si), acc[t]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) s[t] = sl_avx2_hsum_ps(acc[t]);
}

/* The same kernel with 512-bit integer vectors, on CPUs with AVX-512BW
 * (chosen at run time: sl_vec_dot_n_fill_avx2). A zmm holds two of the
 * 32-element chunks of a half side by side: levels of chunks (0, 1) and
 * (2, 3) come from one 64-byte load of ql each and qh in both halves (the
 * high half shifted right by 2, which turns chunk 1's and 3's masks and
 * shifts into chunk 0's and 2's), the pair scales of the two chunks side by
 * side, the token's 128 activations in two loads. Per token and half: two
 * maddubs, two madd and one add (the 256-bit form: four, four and four).
 * The i32 lanes of the two halves of the zmm sum are added at the end of
 * the super-block: every lane of sumi is the same integer as in q6k_n
 * (exact integer sums, no lane mixed with another), and from there the
 * float steps are q6k_n's, so s[t] has the single kernel's bits. */

SL_T512 INLINE void q6k_n512(int64_t n, float *s, const void *vx, const void *const *ys,
                                    const int nt)
{
    const sl_block_q6_K *x = vx;
    const sl_block_q8_K *y[NT];
    __m256 acc[NT];
    UNROLL
    for (int t = 0; t < nt; t++) {
        y[t] = ys[t];
        acc[t] = _mm256_setzero_ps();
    }
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
    const __m512i m2_4 = _mm512_set1_epi8(0x30);
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const float xd = sl_avx2_h2f(x[i].d);
        const __m128i sc = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc);
        __m512i sumi[NT];
        UNROLL
        for (int t = 0; t < nt; t++) sumi[t] = _mm512_setzero_si512();
        UNROLL
        for (int h = 0; h < 2; h++) {
            const __m256i qh = sl_avx2_load256(x[i].qh + 32 * h);
            /* [qh | qh >> 2]: chunk 1's bits 2-3 (3's: 6-7) where chunk 0's (2's) are */
            const __m512i qh2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh),
                                                   _mm256_srli_epi16(qh, 2), 1);
            const __m512i l = _mm512_loadu_si512((const void *)(x[i].ql + 64 * h)); /* [la | lb] */
            const __m512i q01 = _mm512_or_si512(_mm512_and_si512(l, m4),
                                                _mm512_slli_epi16(_mm512_and_si512(qh2, m2), 4));
            const __m512i q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                                _mm512_and_si512(qh2, m2_4));
            const __m512i ps01 = _mm512_inserti64x4(
                _mm512_castsi256_si512(sl_avx2_pair_scales_i8(sc, 4 * h)),
                sl_avx2_pair_scales_i8(sc, 4 * h + 1), 1);
            const __m512i ps23 = _mm512_inserti64x4(
                _mm512_castsi256_si512(sl_avx2_pair_scales_i8(sc, 4 * h + 2)),
                sl_avx2_pair_scales_i8(sc, 4 * h + 3), 1);
            UNROLL
            for (int t = 0; t < nt; t++) {
                const int8_t *a = y[t][i].qs + 128 * h;
                __m512i p01 = _mm512_madd_epi16(
                    _mm512_maddubs_epi16(q01, _mm512_loadu_si512((const void *)a)), ps01);
                __m512i p23 = _mm512_madd_epi16(
                    _mm512_maddubs_epi16(q23, _mm512_loadu_si512((const void *)(a + 64))), ps23);
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_add_epi32(p01, p23));
            }
        }
        UNROLL
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *b = y[t] + i;
            const __m256i si32 = _mm256_add_epi32(_mm512_castsi512_si256(sumi[t]),
                                                  _mm512_extracti64x4_epi64(sumi[t], 1));
            __m256i corr = _mm256_madd_epi16(sc16, sl_avx2_load256(b->bsums));
            __m256i si = _mm256_sub_epi32(si32, _mm256_slli_epi32(corr, 5));
            float d = b->d * xd;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(si), acc[t]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) s[t] = sl_avx2_hsum_ps(acc[t]);
}

/* ---- Q2_K / Q3_K against Q8_K --------------------------------------------
 * Sixteen 16-element sub-blocks; each 32-element chunk (h, j) (h = half,
 * j = 2-bit field) is madd(maddubs(levels, a), pair scales 4h + j), the
 * four of a half summed as (s0 + s1) + (s2 + s3). Q2_K: levels 0..3, the
 * mins through bsums, FMA'd into the same accumulator before the levels'
 * lanes. Q3_K: signed levels -4..3 through maddubs(|v|, sign(a, v)). */

/* Levels of chunk (h, j), unsigned: Q2_K's 2-bit field j of qs[32h..];
 * Q3_K adds hmask bit 4h + j as bit 2. */
INLINE __m256i k16_levels(__m256i q, __m256i hm, int h, int j, int is_q3)
{
    __m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), _mm256_set1_epi8(0x03));
    if (!is_q3) return lo;
    int bit = 4 * h + j; /* moved to bit 2, then the signed level: - 4 */
    __m256i hb = bit >= 2 ? _mm256_srli_epi16(hm, bit - 2) : _mm256_slli_epi16(hm, 2 - bit);
    const __m256i b2 = _mm256_set1_epi8(0x04);
    return _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_and_si256(hb, b2)), b2);
}

/* The sixteen signed Q3_K scales (sc - 32), as vec_dot_k_avx2.c builds
 * them: low nibbles from bytes 0..7, high pairs from bytes 8..11. */
static inline __m128i q3k_scales(const uint8_t s[12])
{
    uint32_t A, B, C;
    memcpy(&A, s, 4);
    memcpy(&B, s + 4, 4);
    memcpy(&C, s + 8, 4);
    uint32_t w0 = (A & 0x0F0F0F0Fu) | ((C >> 0) & 0x03030303u) << 4;
    uint32_t w1 = (B & 0x0F0F0F0Fu) | ((C >> 2) & 0x03030303u) << 4;
    uint32_t w2 = ((A >> 4) & 0x0F0F0F0Fu) | ((C >> 4) & 0x03030303u) << 4;
    uint32_t w3 = ((B >> 4) & 0x0F0F0F0Fu) | ((C >> 6) & 0x03030303u) << 4;
    return _mm_sub_epi8(_mm_set_epi32((int)w3, (int)w2, (int)w1, (int)w0), _mm_set1_epi8(32));
}

INLINE void k16_n(int64_t n, float *s, const void *vx, const void *const *ys, const int nt,
                  const int is_q3)
{
    const sl_block_q8_K *y[NT];
    __m256 acc[NT];
    UNROLL
    for (int t = 0; t < nt; t++) {
        y[t] = ys[t];
        acc[t] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const sl_block_q2_K *x2 = (const sl_block_q2_K *)vx + i;
        const sl_block_q3_K *x3 = (const sl_block_q3_K *)vx + i;
        const float xd = sl_avx2_h2f(is_q3 ? x3->d : x2->d);
        const uint8_t *qs = is_q3 ? x3->qs : x2->qs;
        __m128i sc;
        __m256i hm = _mm256_setzero_si256();
        __m256i sumi[NT];
        if (is_q3) {
            sc = q3k_scales(x3->scales);
            hm = sl_avx2_load256(x3->hmask);
            UNROLL
            for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        } else {
            const __m128i raw = _mm_loadu_si128((const __m128i *)x2->scales);
            sc = _mm_and_si128(raw, _mm_set1_epi8(0x0F));
            const __m128i mn = _mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F));
            const __m256i mn16 = _mm256_cvtepu8_epi16(mn);
            const float xdmin = sl_avx2_h2f(x2->dmin);
            UNROLL
            for (int t = 0; t < nt; t++) {
                const sl_block_q8_K *b = y[t] + i;
                __m256i od = _mm256_madd_epi16(mn16, sl_avx2_load256(b->bsums));
                float dmin = -b->d * xdmin;
                acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(od), acc[t]);
                sumi[t] = _mm256_setzero_si256();
            }
        }
        UNROLL
        for (int h = 0; h < 2; h++) {
            const __m256i q = sl_avx2_load256(qs + 32 * h);
            UNROLL
            for (int j = 0; j < 4; j++) {
                const __m256i lv = k16_levels(q, hm, h, j, is_q3);
                const __m256i av = is_q3 ? _mm256_sign_epi8(lv, lv) : lv;
                const __m256i ps = sl_avx2_pair_scales_i8(sc, 4 * h + j);
                UNROLL
                for (int t = 0; t < nt; t++) {
                    const int8_t *a = y[t][i].qs + 128 * h + 32 * j;
                    __m256i ya = sl_avx2_load256(a);
                    if (is_q3) ya = _mm256_sign_epi8(ya, lv);
                    __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(av, ya), ps);
                    sumi[t] = _mm256_add_epi32(sumi[t], p);
                    KEEP(sumi[t]);
                }
            }
        }
        UNROLL
        for (int t = 0; t < nt; t++) {
            float d = y[t][i].d * xd;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++)
        s[t] = sl_avx2_hsum_ps(acc[t]);
}

/* ---- IQ4_XS against Q8_K ------------------------------------------------
 * Eight 32-element sub-blocks of table values v; per sub-block
 * madd(maddubs(|v|, sign(a, v)), ls - 32) summed in order; one FMA per
 * lane with d * y.d per super-block, the lanes summed at the end (the
 * order of vec_dot_iq_avx2.c's single-token kernel). */
INLINE void iq4xs_n(int64_t n, float *s, const void *vx, const void *const *ys, const int nt)
{
    const sl_block_iq4_xs *x = vx;
    const __m256i tab = table256(sl_iq4nl_values);
    const sl_block_q8_K *y[NT];
    __m256 acc[NT];
    UNROLL
    for (int t = 0; t < nt; t++) {
        y[t] = ys[t];
        acc[t] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const float xd = sl_avx2_h2f(x[i].d);
        const uint16_t sh = x[i].scales_h;
        __m256i sumi[NT];
        UNROLL
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int k = 0; k < 8; k++) {
            int ls = ((x[i].scales_l[k / 2] >> (4 * (k % 2))) & 0x0F) | ((sh >> (2 * k)) & 3) << 4;
            const __m256i v = _mm256_shuffle_epi8(tab, sl_avx2_nibbles32(x[i].qs + 16 * k));
            const __m256i av = _mm256_sign_epi8(v, v);
            const __m256i sc = _mm256_set1_epi16((short)(ls - 32));
            UNROLL
            for (int t = 0; t < nt; t++) {
                __m256i a = sl_avx2_load256(y[t][i].qs + 32 * k);
                __m256i p16 = _mm256_maddubs_epi16(av, _mm256_sign_epi8(a, v));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p16, sc));
                KEEP(sumi[t]);
            }
        }
        UNROLL
        for (int t = 0; t < nt; t++)
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xd * y[t][i].d), _mm256_cvtepi32_ps(sumi[t]),
                                     acc[t]);
    }
    UNROLL
    for (int t = 0; t < nt; t++) s[t] = sl_avx2_hsum_ps(acc[t]);
}

/* ---- instances ----------------------------------------------------------- */

#define INSTANCES(name, body)                                                                  \
    static void name(int64_t n, float *s, const void *x, const void *const *ys, int nt)       \
    {                                                                                          \
        switch (nt) {                                                                          \
        case 1: body(1); break;                                                                \
        case 2: body(2); break;                                                                \
        case 3: body(3); break;                                                                \
        case 4: body(4); break;                                                                \
        case 5: body(5); break;                                                                \
        case 6: body(6); break;                                                                \
        case 7: body(7); break;                                                                \
        default: body(NT); break;                                                              \
        }                                                                                      \
    }

#define Q8_0_BODY(k) legacy_n(n, s, x, ys, k, K_Q8_0)
#define Q4_0_BODY(k) legacy_n(n, s, x, ys, k, K_Q4_0)
#define IQ4_NL_BODY(k) legacy_n(n, s, x, ys, k, K_IQ4_NL)
#define MXFP4_BODY(k) legacy_n(n, s, x, ys, k, K_MXFP4)
#define IQ4_XS_BODY(k) iq4xs_n(n, s, x, ys, k)
#define Q5_0_BODY(k) offset_n(n, s, x, ys, k, K_Q5_0)
#define Q4_1_BODY(k) offset_n(n, s, x, ys, k, K_Q4_1)
#define Q5_1_BODY(k) offset_n(n, s, x, ys, k, K_Q5_1)
#define Q4_K_BODY(k) k4_n(n, s, x, ys, k, 0)
#define Q5_K_BODY(k) k4_n(n, s, x, ys, k, 1)
#define Q6_K_BODY(k) q6k_n(n, s, x, ys, k)
#define Q4_K_RP64_BODY(k) q4k_rp_n(n, s, x, ys, k, 1)
#define Q4_K_RP256_BODY(k) q4k_rp_n(n, s, x, ys, k, 0)
#define Q2_K_BODY(k) k16_n(n, s, x, ys, k, 0)
#define Q3_K_BODY(k) k16_n(n, s, x, ys, k, 1)

INSTANCES(vec_dot_n_q8_0, Q8_0_BODY)
INSTANCES(vec_dot_n_q4_0, Q4_0_BODY)
INSTANCES(vec_dot_n_iq4_nl, IQ4_NL_BODY)
INSTANCES(vec_dot_n_mxfp4, MXFP4_BODY)
INSTANCES(vec_dot_n_iq4_xs, IQ4_XS_BODY)
INSTANCES(vec_dot_n_q5_0, Q5_0_BODY)
INSTANCES(vec_dot_n_q4_1, Q4_1_BODY)
INSTANCES(vec_dot_n_q5_1, Q5_1_BODY)
INSTANCES(vec_dot_n_q4_K, Q4_K_BODY)
INSTANCES(vec_dot_n_q5_K, Q5_K_BODY)
INSTANCES(vec_dot_n_q6_K, Q6_K_BODY)

SL_T512 static void vec_dot_n_q6_K_512(int64_t n, float *s, const void *x, const void *const *ys,
                                       int nt)
{
    switch (nt) {
    case 1: q6k_n512(n, s, x, ys, 1); break;
    case 2: q6k_n512(n, s, x, ys, 2); break;
    case 3: q6k_n512(n, s, x, ys, 3); break;
    case 4: q6k_n512(n, s, x, ys, 4); break;
    case 5: q6k_n512(n, s, x, ys, 5); break;
    case 6: q6k_n512(n, s, x, ys, 6); break;
    case 7: q6k_n512(n, s, x, ys, 7); break;
    default: q6k_n512(n, s, x, ys, NT); break;
    }
}

/* AVX-512F and BW with the OS saving the opmask and zmm state. */
static bool have_avx512bw(void)
{
    sl_cpu_features cpu;
    sl_cpu_detect(&cpu);
    return cpu.avx512bw;
}

int sl_vec_dot_n_q6_K_forms_avx2(sl_vec_dot_n_fn out[2])
{
    out[0] = vec_dot_n_q6_K;
    out[1] = have_avx512bw() ? vec_dot_n_q6_K_512 : NULL;
    return out[1] ? 2 : 1;
}
INSTANCES(vec_dot_n_q4_K_rp64, Q4_K_RP64_BODY)
INSTANCES(vec_dot_n_q4_K_rp256, Q4_K_RP256_BODY)
INSTANCES(vec_dot_n_q2_K, Q2_K_BODY)
INSTANCES(vec_dot_n_q3_K, Q3_K_BODY)

_Static_assert(NT == 8 && NT <= SL_VEC_DOT_N_MAX, "the switch above lists 1..NT");
_Static_assert(NT == SL_VEC_DOT_RP_MAX, "vec_dot_rp.h's bound");

sl_vec_dot_n_fn sl_vec_dot_n_q4_K_rp_avx2(sl_rp_order order)
{
    return order == SL_RP_GEMM ? vec_dot_n_q4_K_rp64 : vec_dot_n_q4_K_rp256;
}

int sl_vec_dot_rows8_q4_K_rp_forms_avx2(sl_rp_order order, sl_vec_dot_rows8_fn out[3])
{
    const bool gemm = order == SL_RP_GEMM;
    sl_cpu_features cpu;
    sl_cpu_detect(&cpu);
    out[0] = gemm ? rows8_q4_K_rp64 : rows8_q4_K_rp256;
    out[1] = !cpu.avx512bw ? NULL : gemm ? rows8_q4_K_rp64_512 : rows8_q4_K_rp256_512;
    out[2] = !cpu.avx512vnni ? NULL : gemm ? rows8_q4_K_rp64_vnni : rows8_q4_K_rp256_vnni;
    return out[2] ? 3 : out[1] ? 2 : 1;
}

sl_vec_dot_rows8_fn sl_vec_dot_rows8_q4_K_rp_avx2(sl_rp_order order)
{
    sl_vec_dot_rows8_fn forms[3];
    return forms[sl_vec_dot_rows8_q4_K_rp_forms_avx2(order, forms) - 1];
}

bool sl_vec_dot_n_fill_avx2(sl_quant_kernels *k)
{
    k->vec_dot_n[SL_TYPE_Q8_0] = vec_dot_n_q8_0;
    k->vec_dot_n[SL_TYPE_Q4_0] = vec_dot_n_q4_0;
    k->vec_dot_n[SL_TYPE_IQ4_NL] = vec_dot_n_iq4_nl;
    k->vec_dot_n[SL_TYPE_MXFP4] = vec_dot_n_mxfp4;
    k->vec_dot_n[SL_TYPE_IQ4_XS] = vec_dot_n_iq4_xs;
    k->vec_dot_n[SL_TYPE_Q5_0] = vec_dot_n_q5_0;
    /* Q4_1 / Q5_1 pair with Q8_1 now: their multi-token kernels are set by
     * vec_dot_legacy_*.c; these Q8_0 forms are out of the table */
    (void)vec_dot_n_q4_1;
    (void)vec_dot_n_q5_1;
    k->vec_dot_n[SL_TYPE_Q4_K] = vec_dot_n_q4_K;
    k->vec_dot_n[SL_TYPE_Q5_K] = vec_dot_n_q5_K;
    k->vec_dot_n[SL_TYPE_Q6_K] = have_avx512bw() ? vec_dot_n_q6_K_512 : vec_dot_n_q6_K;
    k->vec_dot_n[SL_TYPE_Q2_K] = vec_dot_n_q2_K;
    k->vec_dot_n[SL_TYPE_Q3_K] = vec_dot_n_q3_K;
    for (int t = 0; t < SL_TYPE_COUNT; t++)
        if (k->vec_dot_n[t]) k->vec_dot_n_max[t] = NT;
    return true;
}

#else

bool sl_vec_dot_n_fill_avx2(sl_quant_kernels *k)
{
    (void)k;
    return false;
}

int sl_vec_dot_n_q6_K_forms_avx2(sl_vec_dot_n_fn out[2])
{
    out[0] = out[1] = NULL;
    return 0;
}

sl_vec_dot_n_fn sl_vec_dot_n_q4_K_rp_avx2(sl_rp_order order)
{
    (void)order;
    return NULL;
}

sl_vec_dot_rows8_fn sl_vec_dot_rows8_q4_K_rp_avx2(sl_rp_order order)
{
    (void)order;
    return NULL;
}

int sl_vec_dot_rows8_q4_K_rp_forms_avx2(sl_rp_order order, sl_vec_dot_rows8_fn out[3])
{
    (void)order;
    out[0] = out[1] = out[2] = NULL;
    return 0;
}

#endif
