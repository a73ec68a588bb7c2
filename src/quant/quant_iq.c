/* quant_iq.c - table-based 4-bit types: IQ4_NL, IQ4_XS and MXFP4.
 *
 * Owns: their value tables, dequantisation and quantisation (layouts in
 * quant_blocks.h). Quantisers search the scale (quant_fit.c) and map each
 * value to the nearest table entry against the stored scale.
 * Must not know: files, models, dot products. */
#include <math.h>

#include "quant/quant_fit.h"
#include "quant/quant_internal.h"

/* Non-linear levels: denser near zero, where most weights are. */
const int8_t sl_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};

/* E2M1 times two, indexed by the nibble s.e1e0.m:
 * 0.0 0.5 1.0 1.5 2.0 3.0 4.0 6.0, then the same negated. */
const int8_t sl_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

#define IQ_NTRY 7 /* 2 * IQ_NTRY + 1 candidate scales; _fast: one */

void sl_dequant_iq4_nl(const void *src, float *dst, int64_t n)
{
    const sl_block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, dst += SL_QK) {
        float d = sl_h2f(b->d);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)sl_iq4nl_values[b->qs[j] & 0x0F];
            dst[j + 16] = d * (float)sl_iq4nl_values[b->qs[j] >> 4];
        }
    }
}

void sl_dequant_iq4_xs(const void *src, float *dst, int64_t n)
{
    const sl_block_iq4_xs *b = src;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++) {
        float d = sl_h2f(b->d);
        for (int k = 0; k < 8; k++, dst += 32) {
            int ls = ((b->scales_l[k / 2] >> (4 * (k % 2))) & 0x0F) |
                     ((b->scales_h >> (2 * k)) & 3) << 4;
            float dl = d * (float)(ls - 32);
            const uint8_t *q = b->qs + 16 * k;
            for (int j = 0; j < 16; j++) {
                dst[j] = dl * (float)sl_iq4nl_values[q[j] & 0x0F];
                dst[j + 16] = dl * (float)sl_iq4nl_values[q[j] >> 4];
            }
        }
    }
}

void sl_dequant_mxfp4(const void *src, float *dst, int64_t n)
{
    const sl_block_mxfp4 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, dst += SL_QK) {
        float d = sl_e8m0_half(b->e);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)sl_mxfp4_values[b->qs[j] & 0x0F];
            dst[j + 16] = d * (float)sl_mxfp4_values[b->qs[j] >> 4];
        }
    }
}

/* Nearest IQ4_NL level for each x against scale d; packs 32 values. */
static void iq4_pack32(const float *x, float d, uint8_t qs[16])
{
    float id = d != 0.0f && isfinite(d) ? 1.0f / d : 0.0f;
    uint8_t L[32];
    for (int j = 0; j < 32; j++) L[j] = (uint8_t)sl_nearest16(sl_iq4nl_values, x[j] * id);
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
}

static void iq4_nl_rows(const float *src, void *dst, int64_t n, int ntry)
{
    sl_block_iq4_nl *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        float w[SL_QK];
        uint8_t L[SL_QK];
        sl_k_weights(src, SL_QK, w);
        float s = sl_fit_table(src, w, SL_QK, sl_iq4nl_values, ntry, L);
        b->d = sl_f32_to_fp16(s);
        iq4_pack32(src, sl_h2f(b->d), b->qs);
    }
}

static void iq4_xs_rows(const float *src, void *dst, int64_t n, int ntry)
{
    sl_block_iq4_xs *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        float w[SL_QK_K], s[8];
        uint8_t L[32];
        sl_k_weights(src, SL_QK_K, w);
        float amax = 0.0f, vmax = 0.0f;
        for (int k = 0; k < 8; k++) {
            s[k] = sl_fit_table(src + 32 * k, w + 32 * k, 32, sl_iq4nl_values, ntry, L);
            if (fabsf(s[k]) > amax) { amax = fabsf(s[k]); vmax = s[k]; }
        }
        /* 6-bit codes ls - 32 in [-32, 31]; the largest scale takes -32 */
        b->d = sl_f32_to_fp16(vmax / -32.0f);
        float d = sl_h2f(b->d);
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->scales_h = 0;
        for (int k = 0; k < 8; k++) {
            int c = sl_round_clamp(s[k] * id, -32, 31);
            int ls = c + 32;
            if (k % 2 == 0) b->scales_l[k / 2] = (uint8_t)(ls & 0x0F);
            else b->scales_l[k / 2] |= (uint8_t)((ls & 0x0F) << 4);
            b->scales_h |= (uint16_t)((ls >> 4) << (2 * k));
            iq4_pack32(src + 32 * k, d * (float)c, b->qs + 16 * k);
        }
    }
}

void sl_quant_iq4_nl(const float *src, void *dst, int64_t n)
{
    iq4_nl_rows(src, dst, n, IQ_NTRY);
}

void sl_quant_iq4_nl_fast(const float *src, void *dst, int64_t n)
{
    iq4_nl_rows(src, dst, n, 0);
}

void sl_quant_iq4_xs(const float *src, void *dst, int64_t n)
{
    iq4_xs_rows(src, dst, n, IQ_NTRY);
}

void sl_quant_iq4_xs_fast(const float *src, void *dst, int64_t n)
{
    iq4_xs_rows(src, dst, n, 0);
}

/* Nibble of the E2M1 value nearest v (v in units of the halved scale),
 * ties to the smaller magnitude: the search over the eight levels. */
static uint8_t mxfp4_nibble_search(float v)
{
    static const int8_t mag[8] = {0, 1, 2, 3, 4, 6, 8, 12}; /* nibbles 0..7 */
    float a = fabsf(v);
    int best = 0;
    for (int k = 1; k < 8; k++)
        if (fabsf(a - (float)mag[k]) < fabsf(a - (float)mag[best])) best = k;
    return (uint8_t)(best | (v < 0.0f && best ? 8 : 0));
}

/* The same nibble by comparing |v| with the midpoints between levels (the
 * search's subtractions are exact there: Sterbenz), branch-free so the
 * block loop vectorises; |v| >= 16, infinities and NaN take the search
 * (where its rounded subtractions decide). Checked equal to the search on
 * every one of the 2^32 floats (docs/perf-log.md, "mkmodel: MXFP4"). */
static uint8_t mxfp4_nibble(float v)
{
    const float a = fabsf(v);
    if (!(a < 16.0f)) return mxfp4_nibble_search(v);
    const int best = (a > 0.5f) + (a > 1.5f) + (a > 2.5f) + (a > 3.5f) + (a > 5.0f) +
                     (a > 7.0f) + (a > 10.0f);
    return (uint8_t)(best | (v < 0.0f && best ? 8 : 0));
}

static float mxfp4_block_err(const float *x, int e, uint8_t *qs)
{
    /* divide rather than multiply by 1/d: 1/2^-128 overflows float */
    float d = sl_e8m0_half((uint8_t)e), err = 0.0f;
    uint8_t L[32];
    for (int j = 0; j < 32; j++) {
        L[j] = mxfp4_nibble(x[j] / d);
        float r = x[j] - d * (float)sl_mxfp4_values[L[j]];
        err += r * r;
    }
    if (qs)
        for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
    return err;
}

void sl_quant_mxfp4(const float *src, void *dst, int64_t n)
{
    sl_block_mxfp4 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        float amax = 0.0f;
        for (int j = 0; j < SL_QK; j++) amax = fmaxf(amax, fabsf(src[j]));
        if (!(amax > 0.0f)) {
            b->e = 0;
            memset(b->qs, 0, sizeof b->qs);
            continue;
        }
        /* Smallest e whose largest level 12 * 2^(e-128) covers amax; the
         * next smaller e clips the top but halves the step: keep whichever
         * errs less. e = 255 is NaN in E8M0, so e stays in 0..254. */
        int k;
        float f = frexpf(amax / 12.0f, &k); /* amax/12 = f * 2^k, f in [0.5, 1) */
        int e = 128 + (f > 0.5f ? k : k - 1);
        if (e > 254) e = 254;
        if (e < 1) e = 1;
        uint8_t lo[16], hi[16];
        const float err_lo = mxfp4_block_err(src, e - 1, lo), err_hi = mxfp4_block_err(src, e, hi);
        if (err_lo < err_hi) e--;
        b->e = (uint8_t)e;
        memcpy(b->qs, err_lo < err_hi ? lo : hi, sizeof b->qs);
    }
}
