/* quant_legacy.c - the 32-element block types: Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0 and Q8_1 (layouts in quant_blocks.h).
 *
 * Owns: scalar dequantisation and quantisation of these blocks. The Q8_0 and
 * Q8_1 quantisers double as the activation quantisers of the dot kernels
 * (their AVX2 twins must produce identical bytes).
 * Must not know: files, models, dot products. */
#include <math.h>

#include "quant/quant_fit.h"
#include "quant/quant_internal.h"

/* Candidate scales per legacy block (2 * ntry + 1): enough to matter,
 * cheap enough for a model writer that quantises gigabytes. The _fast
 * entry points use one candidate. */
#define LEGACY_NTRY 6

static uint32_t qh_word(const uint8_t qh[4])
{
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
           (uint32_t)qh[3] << 24;
}

static void put_qh_word(uint8_t qh[4], uint32_t v)
{
    for (int i = 0; i < 4; i++) qh[i] = (uint8_t)(v >> (8 * i));
}

/* ---- dequantisation ---- */

void sl_dequant_q4_0(const void *src, float *dst, int64_t n)
{
    const sl_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, dst += SL_QK) {
        float d = sl_h2f(b->d);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)((b->qs[j] & 0x0F) - 8);
            dst[j + 16] = d * (float)((b->qs[j] >> 4) - 8);
        }
    }
}

void sl_dequant_q4_1(const void *src, float *dst, int64_t n)
{
    const sl_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, dst += SL_QK) {
        float d = sl_h2f(b->d), m = sl_h2f(b->m);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)(b->qs[j] & 0x0F) + m;
            dst[j + 16] = d * (float)(b->qs[j] >> 4) + m;
        }
    }
}

void sl_dequant_q5_0(const void *src, float *dst, int64_t n)
{
    const sl_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, dst += SL_QK) {
        float d = sl_h2f(b->d);
        uint32_t qh = qh_word(b->qh);
        for (int j = 0; j < 16; j++) {
            int lo = (b->qs[j] & 0x0F) | (int)((qh >> j) & 1u) << 4;
            int hi = (b->qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4;
            dst[j] = d * (float)(lo - 16);
            dst[j + 16] = d * (float)(hi - 16);
        }
    }
}

void sl_dequant_q5_1(const void *src, float *dst, int64_t n)
{
    const sl_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, dst += SL_QK) {
        float d = sl_h2f(b->d), m = sl_h2f(b->m);
        uint32_t qh = qh_word(b->qh);
        for (int j = 0; j < 16; j++) {
            int lo = (b->qs[j] & 0x0F) | (int)((qh >> j) & 1u) << 4;
            int hi = (b->qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4;
            dst[j] = d * (float)lo + m;
            dst[j + 16] = d * (float)hi + m;
        }
    }
}

void sl_dequant_q8_0(const void *src, float *dst, int64_t n)
{
    const sl_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, dst += SL_QK) {
        float d = sl_h2f(b->d);
        for (int j = 0; j < SL_QK; j++) dst[j] = d * (float)b->qs[j];
    }
}

void sl_dequant_q8_1(const void *src, float *dst, int64_t n)
{
    const sl_block_q8_1 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, dst += SL_QK) {
        float d = sl_h2f(b->d);
        for (int j = 0; j < SL_QK; j++) dst[j] = d * (float)b->qs[j];
    }
}

/* ---- quantisation ---- */

/* Symmetric blocks (Q4_0, Q5_0): search the scale, store it as f16, then
 * re-derive the levels against the stored scale so the round trip is as
 * close as the stored scale allows. Returns levels offset to unsigned. */
static uint16_t quant_sym_block(const float *x, int nmax, int ntry, uint8_t q[SL_QK])
{
    int8_t L[SL_QK];
    float s = sl_fit_sym(x, NULL, SL_QK, nmax, ntry, L);
    uint16_t dh = sl_f32_to_fp16(s);
    float d = sl_h2f(dh);
    float id = d != 0.0f && isfinite(d) ? 1.0f / d : 0.0f;
    for (int j = 0; j < SL_QK; j++)
        q[j] = (uint8_t)(sl_round_clamp(x[j] * id, -nmax, nmax - 1) + nmax);
    return dh;
}

/* Affine blocks (Q4_1, Q5_1): x ~ d * q + m with any sign of m. */
static void quant_affine_block(const float *x, int nmax, int ntry, uint16_t *dh, uint16_t *mh,
                               uint8_t q[SL_QK])
{
    uint8_t L[SL_QK];
    float b;
    float s = sl_fit_affine(x, NULL, SL_QK, nmax, ntry, false, L, &b);
    *dh = sl_f32_to_fp16(s);
    *mh = sl_f32_to_fp16(b);
    float d = sl_h2f(*dh), m = sl_h2f(*mh);
    float id = d != 0.0f && isfinite(d) ? 1.0f / d : 0.0f;
    for (int j = 0; j < SL_QK; j++)
        q[j] = (uint8_t)sl_round_clamp((x[j] - m) * id, 0, nmax);
}

static void q4_0_rows(const float *src, void *dst, int64_t n, int ntry)
{
    sl_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        uint8_t q[SL_QK];
        b->d = quant_sym_block(src, 8, ntry, q);
        for (int j = 0; j < 16; j++) b->qs[j] = (uint8_t)(q[j] | q[j + 16] << 4);
    }
}

static void q4_1_rows(const float *src, void *dst, int64_t n, int ntry)
{
    sl_block_q4_1 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        uint8_t q[SL_QK];
        quant_affine_block(src, 15, ntry, &b->d, &b->m, q);
        for (int j = 0; j < 16; j++) b->qs[j] = (uint8_t)(q[j] | q[j + 16] << 4);
    }
}

static void pack_q5(const uint8_t q[SL_QK], uint8_t qs[16], uint8_t qh[4])
{
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
        h |= (uint32_t)(q[j] >> 4) << j;
        h |= (uint32_t)(q[j + 16] >> 4) << (j + 16);
    }
    put_qh_word(qh, h);
}

static void q5_0_rows(const float *src, void *dst, int64_t n, int ntry)
{
    sl_block_q5_0 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        uint8_t q[SL_QK];
        b->d = quant_sym_block(src, 16, ntry, q);
        pack_q5(q, b->qs, b->qh);
    }
}

static void q5_1_rows(const float *src, void *dst, int64_t n, int ntry)
{
    sl_block_q5_1 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        uint8_t q[SL_QK];
        quant_affine_block(src, 31, ntry, &b->d, &b->m, q);
        pack_q5(q, b->qs, b->qh);
    }
}

#define LEGACY_ENTRY(t)                                                            \
    void sl_quant_##t(const float *src, void *dst, int64_t n)                      \
    {                                                                              \
        t##_rows(src, dst, n, LEGACY_NTRY);                                        \
    }                                                                              \
    void sl_quant_##t##_fast(const float *src, void *dst, int64_t n)               \
    {                                                                              \
        t##_rows(src, dst, n, 0);                                                  \
    }

/* Q4_0's bulk quantiser is in quant_fast.c. */
void sl_quant_q4_0(const float *src, void *dst, int64_t n)
{
    q4_0_rows(src, dst, n, LEGACY_NTRY);
}

LEGACY_ENTRY(q4_1)
LEGACY_ENTRY(q5_0)
LEGACY_ENTRY(q5_1)

/* Q8: d = amax / 127 stored as f16; the levels are x * (127 / amax) rounded
 * half to even, i.e. scaled by the exact block maximum, not by the
 * f16-rounded d (llama.cpp's x86 quantize_row_q8_0 does the same, and its
 * activations are what the reference numbers are made of). The level
 * magnitude never exceeds 127: |x| <= amax. Also the activation quantiser:
 * keep the exact operation sequence in step with the AVX2 twin. *df gets
 * the unrounded d (Q8_1 scales its sum with it). */
static uint16_t q8_block(const float *x, int8_t *q, float *df)
{
    float amax = 0.0f;
    for (int j = 0; j < SL_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f;
    if (d > 65504.0f) d = 65504.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < SL_QK; j++) q[j] = (int8_t)sl_round_clamp(x[j] * id, -127, 127);
    *df = d;
    return sl_f32_to_fp16(d);
}

void sl_quant_q8_0_ref(const float *src, void *dst, int64_t n)
{
    sl_block_q8_0 *b = dst;
    float d;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) b->d = q8_block(src, b->qs, &d);
}

/* Q8_0 weights: levels from the stored (f16-rounded) scale, so every
 * element lies within half a step of its reconstruction (clamped to +-127
 * where f16 rounding made the scale a hair small). Weights have no
 * reference-path constraint; this is the more accurate rule. */
void sl_quant_q8_0_weights(const float *src, void *dst, int64_t n)
{
    sl_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        float amax = 0.0f;
        for (int j = 0; j < SL_QK; j++) amax = fmaxf(amax, fabsf(src[j]));
        float d = amax / 127.0f;
        if (d > 65504.0f) d = 65504.0f;
        b->d = sl_f32_to_fp16(d);
        const float dr = sl_h2f(b->d);
        const float id = dr != 0.0f ? 1.0f / dr : 0.0f;
        for (int j = 0; j < SL_QK; j++) b->qs[j] = (int8_t)sl_round_clamp(src[j] * id, -127, 127);
    }
}

void sl_quant_q8_1_ref(const float *src, void *dst, int64_t n)
{
    sl_block_q8_1 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        float d;
        b->d = q8_block(src, b->qs, &d);
        int sum = 0;
        for (int j = 0; j < SL_QK; j++) sum += b->qs[j];
        b->s = sl_f32_to_fp16(d * (float)sum); /* unrounded d, as the reference */
    }
}
