/* vec_dot_q4k512_body.h - the 512-bit eight-row Q4_K kernels' bodies
 * (q4k_rp_rows8_1_512 for one token, q4k_rp_rows8_512 for 2-4), included
 * by vec_dot_n_avx2.c once per instruction set they are built for:
 * Q4K512_ATTR the target, Q4K512_NAME(x) the instance's name for x, and
 * Q4K512_VNNI 1 where VNNI's vpdpwssd (madd and add in one) may take the
 * place of a madd and the add after it. Each (row, token)'s i32 lanes that
 * reach the float steps are the same exact integer sums either way (no
 * product or partial sum comes near the i32 range), so every instance has
 * the one-token forms' bits. Needs vec_dot_n_avx2.c's helpers
 * (q4k_pair_*, q4k_row_*, q4k_rp_rows8_float) in scope. */

/* One token's products with chunk c of a pair of rows into S: with the
 * per-chunk order (gemm) S[c] gets the chunk's own sums; without it (the
 * expert order, where the float steps see only each row's total) S[0]
 * accumulates every chunk, and S[1..3] go unused. */
Q4K512_ATTR INLINE void Q4K512_NAME(q4k_pair_step512)(__m512i S[4], const int c,
                                                      const q4k_pair_chunk *k, __m512i alo,
                                                      __m512i ahi, const int per_chunk)
{
#if Q4K512_VNNI
    const __m512i plo = _mm512_maddubs_epi16(k->lo, alo), phi = _mm512_maddubs_epi16(k->hi, ahi);
    if (per_chunk) {
        S[c] = _mm512_dpwssd_epi32(_mm512_madd_epi16(plo, k->slo), phi, k->shi);
    } else {
        const __m512i acc =
            c ? _mm512_dpwssd_epi32(S[0], plo, k->slo) : _mm512_madd_epi16(plo, k->slo);
        S[0] = _mm512_dpwssd_epi32(acc, phi, k->shi);
    }
#else
    const __m512i d = q4k_pair_dot512(k, alo, ahi);
    if (per_chunk) S[c] = d;
    else S[0] = c ? _mm512_add_epi32(S[0], d) : d;
#endif
}

#define Q4K512_STEP(S, c, k, alo, ahi) Q4K512_NAME(q4k_pair_step512)(S, c, k, alo, ahi, per_chunk)

Q4K512_ATTR INLINE void Q4K512_NAME(q4k_rp_rows8_1_512)(int64_t n, float *s, const uint8_t *x0,
                                                        size_t rbytes, const sl_block_q8_K *y,
                                                        const int per_chunk)
{
    __m256 A = _mm256_setzero_ps(), M = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const sl_block_q8_K *b = y + i;
        const __m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)b->bsums),
                                          _mm_loadu_si128((const __m128i *)(b->bsums + 8)));
        __m512i act[8]; /* chunk c's low and high 32 activations, in both halves */
        UNROLL
        for (int c = 0; c < 8; c++)
            act[c] = _mm512_broadcast_i64x4(sl_avx2_load256(b->qs + 32 * c));
        __m256i u[4], jv[4];
        uint16_t hd[8], hm[8];
        UNROLL
        for (int pr = 0; pr < 4; pr++) {
            const sl_block_q4_K *xr[2];
            __m128i J[2], scv[2];
            UNROLL
            for (int k = 0; k < 2; k++) {
                const int r = 2 * pr + k;
                xr[k] = (const sl_block_q4_K *)(x0 + (size_t)r * rbytes) + i;
                scv[k] = q4k_row_scales(xr[k], r, bs, hd, hm, &J[k]);
            }
            const __m512i sc512 = q4k_pair_scales512(scv[0], scv[1]);
            __m512i S[4];
            UNROLL
            for (int c = 0; c < 4; c++) {
                const q4k_pair_chunk k = q4k_pair_chunk512(xr[0], xr[1], sc512, c);
                Q4K512_STEP(S, c, &k, act[2 * c], act[2 * c + 1]);
            }
            u[pr] = q4k_pair_fold512(S, per_chunk);
            jv[pr] = _mm256_set_m128i(J[1], J[0]);
        }
        q4k_rp_rows8_float(u, jv, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)hd)),
                           _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)hm)), b->d, per_chunk,
                           &A, &M);
    }
    q4k_rp_rows8_store(s, A, M);
}

/* q4k_rp_rows8 with 512-bit integer vectors (AVX-512BW): each pair of
 * rows is unpacked once per chunk into a zmm as in q4k_rp_rows8_1_512,
 * then every token takes two maddubs and two madd for both rows (the
 * 256-bit form: four and four). Each (row, token)'s i32 lanes are
 * q4k_rp_rows8_1_512's for that token alone, and the float steps are
 * q4k_rp_rows8_float per token, so s has the one-token forms' bits.
 * nt <= SL_VEC_DOT_ROWS8_MAX. */
Q4K512_ATTR INLINE void Q4K512_NAME(q4k_rp_rows8_512)(int64_t n, float *s, const uint8_t *x0,
                                                      size_t rbytes, const void *const *ys,
                                                      const int nt, const int per_chunk)
{
    __m256 A[SL_VEC_DOT_ROWS8_MAX], M[SL_VEC_DOT_ROWS8_MAX];
    UNROLL
    for (int t = 0; t < nt; t++) {
        A[t] = _mm256_setzero_ps();
        M[t] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        const sl_block_q8_K *b[SL_VEC_DOT_ROWS8_MAX];
        __m128i bs[SL_VEC_DOT_ROWS8_MAX];
        UNROLL
        for (int t = 0; t < nt; t++) {
            b[t] = (const sl_block_q8_K *)ys[t] + i;
            bs[t] = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)b[t]->bsums),
                                   _mm_loadu_si128((const __m128i *)(b[t]->bsums + 8)));
        }
        __m256i u[SL_VEC_DOT_ROWS8_MAX][4], jv[SL_VEC_DOT_ROWS8_MAX][4];
        uint16_t hd[8], hm[8];
        UNROLL
        for (int pr = 0; pr < 4; pr++) {
            const sl_block_q4_K *xr[2];
            __m128i scv[2], mn16[2];
            UNROLL
            for (int k = 0; k < 2; k++) {
                const int r = 2 * pr + k;
                xr[k] = (const sl_block_q4_K *)(x0 + (size_t)r * rbytes) + i;
                scv[k] = q4k_row_unpack(xr[k], r, hd, hm, &mn16[k]);
            }
            const __m512i sc512 = q4k_pair_scales512(scv[0], scv[1]);
            __m512i S[SL_VEC_DOT_ROWS8_MAX][4];
            UNROLL
            for (int c = 0; c < 4; c++) {
                const q4k_pair_chunk k = q4k_pair_chunk512(xr[0], xr[1], sc512, c);
                UNROLL
                for (int t = 0; t < nt; t++) {
                    const int8_t *a = b[t]->qs + 64 * c;
                    Q4K512_STEP(S[t], c, &k, _mm512_broadcast_i64x4(sl_avx2_load256(a)),
                                _mm512_broadcast_i64x4(sl_avx2_load256(a + 32)));
                }
            }
            UNROLL
            for (int t = 0; t < nt; t++) {
                u[t][pr] = q4k_pair_fold512(S[t], per_chunk);
                jv[t][pr] = _mm256_set_m128i(_mm_madd_epi16(mn16[1], bs[t]),
                                             _mm_madd_epi16(mn16[0], bs[t]));
            }
        }
        const __m256 xdv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)hd));
        const __m256 xmv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)hm));
        UNROLL
        for (int t = 0; t < nt; t++)
            q4k_rp_rows8_float(u[t], jv[t], xdv, xmv, b[t]->d, per_chunk, &A[t], &M[t]);
    }
    UNROLL
    for (int t = 0; t < nt; t++) q4k_rp_rows8_store(s + 8 * t, A[t], M[t]);
}

#undef Q4K512_STEP
