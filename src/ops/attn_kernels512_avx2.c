/* attn_kernels512_avx2.c - the two heavy steps of grouped-query attention
 * (a group's scores against a K tile, and its weighted sum of V rows) with
 * 512-bit vectors (AVX-512F), for CPUs that have them. Compiled with the
 * AVX2 flags like every *_avx2.c; each function here carries its own
 * AVX-512 target and is called only after sl_attn512_usable() said yes.
 *
 * The arithmetic is the AVX2 kernels' (attn_kernels_avx2.c), lane for lane:
 * a score is one FMA chain over d from zero, a value accumulator one FMA
 * chain over positions; only the packing of lanes into registers differs
 * (two positions' eight heads in one register for the scores, sixteen
 * dimensions for the values), so the bits are the same. */
#include "ops/attn_kernels512.h"
#include "util/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#define SL_T512 __attribute__((target("avx512f")))
#define UNROLL _Pragma("GCC unroll 16")

int sl_attn512_usable(void)
{
    sl_cpu_features cpu;
    sl_cpu_detect(&cpu);
    return cpu.avx512f;
}

/* Sixteen values of a K or V row (f16 or f32) from element d, as f32. */
SL_T512 static __m512 load_row16(const uint8_t *row, int d, int f16)
{
    return f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + d)))
               : _mm512_loadu_ps((const float *)row + d);
}

SL_T512 void sl_attn512_k_pairs(const sl_attn_block *b, int ic, int t_lo, int kv, int f16,
                                float *kp)
{
    const int T = SL_ATTN_TILE, dk = b->dk, d16 = dk - dk % 16;
    /* lanes 0..15 of (a, b) interleaved: a0 b0 a1 b1 ... */
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    const __m512 zero = _mm512_setzero_ps();
    for (int t = 0; t < T; t += 2) {
        float *o = kp + (size_t)t * dk;
        const int in0 = t >= t_lo && t < kv, in1 = t + 1 >= t_lo && t + 1 < kv;
        if (!in0 && !in1) {
            memset(o, 0, 2 * (size_t)dk * sizeof(float));
            continue;
        }
        const uint8_t *r0 = (const uint8_t *)b->k + (size_t)(ic + t) * b->k_stride;
        const uint8_t *r1 = r0 + b->k_stride;
        int d = 0;
        for (; d < d16; d += 16) {
            const __m512 a = in0 ? load_row16(r0, d, f16) : zero;
            const __m512 c = in1 ? load_row16(r1, d, f16) : zero;
            _mm512_storeu_ps(o + 2 * d, _mm512_permutex2var_ps(a, lo, c));
            _mm512_storeu_ps(o + 2 * d + 16, _mm512_permutex2var_ps(a, hi, c));
        }
        for (; d < dk; d++) {
            float a = 0.0f, c = 0.0f;
            if (f16) {
                if (in0) a = _cvtsh_ss(((const uint16_t *)r0)[d]);
                if (in1) c = _cvtsh_ss(((const uint16_t *)r1)[d]);
            } else {
                if (in0) a = ((const float *)r0)[d];
                if (in1) c = ((const float *)r1)[d];
            }
            o[2 * d] = a, o[2 * d + 1] = c;
        }
    }
}

/* The pair (k_t[d], k_t+1[d]) at p, in every 64-bit lane. */
SL_T512 static __m512 pair_bcast(const float *p)
{
    double x;
    memcpy(&x, p, sizeof x);
    return _mm512_castpd_ps(_mm512_set1_pd(x));
}

SL_T512 void sl_attn512_scores32(const float *qt, const float *kp, int dk, int t0, float *p,
                                 sl_attn_ahead *ahead)
{
    /* lane 2h + j of a score register: head h against the pair's position j */
    const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i split = _mm512_set_epi32(15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
    const size_t n = (size_t)dk;
    const float *k = kp + (size_t)t0 * n;
    __m512 s[16];
    UNROLL for (int j = 0; j < 16; j++) s[j] = _mm512_setzero_ps();
    for (size_t d = 0; d < n; d++) {
        sl_attn_ask_one(ahead);
        const __m512 q = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(qt + 8 * d)));
        UNROLL for (int j = 0; j < 16; j++)
            s[j] = _mm512_fmadd_ps(q, pair_bcast(k + (size_t)j * 2 * n + 2 * d), s[j]);
    }
    /* positions t0 + 2j and t0 + 2j + 1, eight heads each, side by side */
    UNROLL for (int j = 0; j < 16; j++)
        _mm512_storeu_ps(p + (size_t)(t0 + 2 * j) * 8, _mm512_permutexvar_ps(split, s[j]));
}

SL_T512 void sl_attn512_values8(const uint8_t *v, size_t v_stride, int v16, int n,
                                const float *pw, int dv, float *acc, sl_attn_ahead *ahead)
{
    for (int d = 0; d < dv; d += 32) {
        __m512 o[8][2];
        UNROLL for (int h = 0; h < 8; h++) {
            o[h][0] = _mm512_loadu_ps(acc + (size_t)h * dv + d);
            o[h][1] = _mm512_loadu_ps(acc + (size_t)h * dv + d + 16);
        }
        const uint8_t *vr = v;
        for (int t = 0; t < n; t++, vr += v_stride) {
            sl_attn_ask_one(ahead);
            const __m512 x0 = load_row16(vr, d, v16), x1 = load_row16(vr, d + 16, v16);
            const float *w = pw + (size_t)t * 8;
            UNROLL for (int h = 0; h < 8; h++) {
                const __m512 wh = _mm512_set1_ps(w[h]);
                o[h][0] = _mm512_fmadd_ps(wh, x0, o[h][0]);
                o[h][1] = _mm512_fmadd_ps(wh, x1, o[h][1]);
            }
        }
        UNROLL for (int h = 0; h < 8; h++) {
            _mm512_storeu_ps(acc + (size_t)h * dv + d, o[h][0]);
            _mm512_storeu_ps(acc + (size_t)h * dv + d + 16, o[h][1]);
        }
    }
}
#else
int sl_attn512_usable(void) { return 0; }
#endif
