/* quant_fp.c - IEEE half, bfloat16 and f32 element conversions.
 *
 * Owns: exact scalar conversions between f32 and the 16-bit float formats
 * (round to nearest even, infinities, NaNs and subnormals kept), and the
 * row functions of the F32, F16 and BF16 types.
 * Must not know: blocks of the quantised types, files, models. */
#include "quant/quant_internal.h"

float sl_fp16_to_f32(uint16_t h)
{
    return sl_h2f(h);
}

uint16_t sl_f32_to_fp16(float f)
{
    uint32_t u = sl_f2bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;

    if (a >= 0x7F800000u) {
        if (a == 0x7F800000u) return sign | 0x7C00u;
        /* NaN: keep the top payload bits, force quiet so it stays a NaN */
        return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    }
    /* 65520 is halfway between the largest half (65504) and 2^16; ties go to
     * the even neighbour, which is the overflow, so >= 65520 is infinity. */
    if (a >= 0x477FF000u) return sign | 0x7C00u;
    if (a < 0x38800000u) {
        /* result is subnormal or zero: units of 2^-24. At or below 2^-25
         * (half a unit, tie to even 0) it rounds to zero. */
        if (a <= 0x33000000u) return sign;
        uint32_t e = a >> 23;             /* 102..112 */
        uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - e;        /* 14..24 */
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r); /* r may carry into the smallest normal */
    }
    uint32_t h = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3FFu);
    uint32_t rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* carry is correct */
    return (uint16_t)(sign | h);
}

float sl_bf16_to_f32(uint16_t h)
{
    return sl_bits2f((uint32_t)h << 16);
}

uint16_t sl_f32_to_bf16(float f)
{
    uint32_t u = sl_f2bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: truncation could make it inf */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7FFFu + ((u >> 16) & 1u); /* overflow into the exponent is correct */
    return (uint16_t)(u >> 16);
}

void sl_f32_to_float_row(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void sl_f32_from_float_row(const float *src, void *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void sl_f16_to_float_row(const void *src, float *dst, int64_t n)
{
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++) dst[i] = sl_h2f(h[i]);
}

void sl_f16_from_float_row(const float *src, void *dst, int64_t n)
{
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = sl_f32_to_fp16(src[i]);
}

void sl_bf16_to_float_row(const void *src, float *dst, int64_t n)
{
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++) dst[i] = sl_bf16_to_f32(h[i]);
}

void sl_bf16_from_float_row(const float *src, void *dst, int64_t n)
{
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = sl_f32_to_bf16(src[i]);
}
