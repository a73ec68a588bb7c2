/* quant_k.c - dequantisation of the K-quant super-blocks (Q2_K .. Q6_K,
 * Q8_K) and the Q8_K activation quantiser.
 *
 * Owns: turning each 256-element super-block back into floats, following the
 * layouts drawn in quant_blocks.h. Quantisers of the weight types live in
 * quant_k_quantize.c. Must not know: files, models, dot products. */
#include <math.h>

#include "quant/quant_internal.h"

void sl_dequant_q2_K(const void *src, float *dst, int64_t n)
{
    const sl_block_q2_K *b = src;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++) {
        float d = sl_h2f(b->d), dmin = sl_h2f(b->dmin);
        for (int h = 0; h < 2; h++) {
            const uint8_t *q = b->qs + 32 * h;
            for (int j = 0; j < 4; j++) {
                for (int l = 0; l < 32; l++) {
                    uint8_t sc = b->scales[8 * h + 2 * j + (l >= 16)];
                    int v = (q[l] >> (2 * j)) & 3;
                    *dst++ = d * (float)(sc & 0x0F) * (float)v - dmin * (float)(sc >> 4);
                }
            }
        }
    }
}

void sl_dequant_q3_K(const void *src, float *dst, int64_t n)
{
    const sl_block_q3_K *b = src;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++) {
        float d = sl_h2f(b->d);
        int8_t sc[16];
        sl_q3k_scales(b->scales, sc);
        for (int h = 0; h < 2; h++) {
            const uint8_t *q = b->qs + 32 * h;
            for (int j = 0; j < 4; j++) {
                int hbit = 4 * h + j;
                for (int l = 0; l < 32; l++) {
                    int v = (q[l] >> (2 * j)) & 3;
                    if (!((b->hmask[l] >> hbit) & 1)) v -= 4;
                    *dst++ = d * (float)sc[8 * h + 2 * j + (l >= 16)] * (float)v;
                }
            }
        }
    }
}

void sl_dequant_q4_K(const void *src, float *dst, int64_t n)
{
    const sl_block_q4_K *b = src;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++) {
        float d = sl_h2f(b->d), dmin = sl_h2f(b->dmin);
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            sl_k4_scale_min(b->scales, 2 * c, &sc0, &m0);
            sl_k4_scale_min(b->scales, 2 * c + 1, &sc1, &m1);
            float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
            const uint8_t *q = b->qs + 32 * c;
            for (int l = 0; l < 32; l++) dst[l] = d0 * (float)(q[l] & 0x0F) - mm0;
            for (int l = 0; l < 32; l++) dst[32 + l] = d1 * (float)(q[l] >> 4) - mm1;
            dst += 64;
        }
    }
}

void sl_dequant_q5_K(const void *src, float *dst, int64_t n)
{
    const sl_block_q5_K *b = src;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++) {
        float d = sl_h2f(b->d), dmin = sl_h2f(b->dmin);
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            sl_k4_scale_min(b->scales, 2 * c, &sc0, &m0);
            sl_k4_scale_min(b->scales, 2 * c + 1, &sc1, &m1);
            float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
            const uint8_t *q = b->qs + 32 * c;
            for (int l = 0; l < 32; l++) {
                int v = (q[l] & 0x0F) | ((b->qh[l] >> (2 * c)) & 1) << 4;
                dst[l] = d0 * (float)v - mm0;
            }
            for (int l = 0; l < 32; l++) {
                int v = (q[l] >> 4) | ((b->qh[l] >> (2 * c + 1)) & 1) << 4;
                dst[32 + l] = d1 * (float)v - mm1;
            }
            dst += 64;
        }
    }
}

void sl_dequant_q6_K(const void *src, float *dst, int64_t n)
{
    const sl_block_q6_K *b = src;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++) {
        float d = sl_h2f(b->d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = b->ql + 64 * h;
            const uint8_t *qh = b->qh + 32 * h;
            const int8_t *sc = b->scales + 8 * h;
            for (int l = 0; l < 32; l++) {
                int q0 = ((ql[l] & 0x0F) | ((qh[l] >> 0) & 3) << 4) - 32;
                int q1 = ((ql[l + 32] & 0x0F) | ((qh[l] >> 2) & 3) << 4) - 32;
                int q2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                dst[l] = d * (float)sc[l / 16] * (float)q0;
                dst[l + 32] = d * (float)sc[2 + l / 16] * (float)q1;
                dst[l + 64] = d * (float)sc[4 + l / 16] * (float)q2;
                dst[l + 96] = d * (float)sc[6 + l / 16] * (float)q3;
            }
            dst += 128;
        }
    }
}

void sl_dequant_q8_K(const void *src, float *dst, int64_t n)
{
    const sl_block_q8_K *b = src;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, dst += SL_QK_K)
        for (int j = 0; j < SL_QK_K; j++) dst[j] = b->d * (float)b->qs[j];
}

/* Q8_K keeps d in f32, so no rounding of the scale: d = amax / 127 and
 * levels round(x * 127 / amax) in [-127, 127] (never -128, so the SIMD
 * kernels may negate a level without overflow). Keep the operation sequence
 * in step with the AVX2 twin: the two must produce identical bytes. */
void sl_quant_q8_K_ref(const float *src, void *dst, int64_t n)
{
    sl_block_q8_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        float amax = 0.0f;
        for (int j = 0; j < SL_QK_K; j++) amax = fmaxf(amax, fabsf(src[j]));
        /* Below 1e-30 the block is stored as zeros: 127 / amax could
         * overflow, and the error (< 1e-30) is far below any use. */
        if (!(amax >= 1e-30f)) amax = 0.0f;
        /* llama.cpp's quantize_row_q8_K_ref (the x86 path too): levels
         * x * 127 / amax half to even, d = 1 / (127 / amax), not amax / 127.
         * (It scales by -127 / max, max the signed extreme; that flips the
         * sign of every level and of d together, the same products.) */
        float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        b->d = amax > 0.0f ? 1.0f / id : 0.0f;
        for (int j = 0; j < SL_QK_K; j++) b->qs[j] = (int8_t)sl_round_clamp(src[j] * id, -127, 127);
        for (int k = 0; k < SL_QK_K / 16; k++) {
            int s = 0;
            for (int j = 0; j < 16; j++) s += b->qs[16 * k + j];
            b->bsums[k] = (int16_t)s;
        }
    }
}
