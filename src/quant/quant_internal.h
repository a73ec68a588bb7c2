/* quant_internal.h - helpers and kernel declarations shared inside src/quant/.
 *
 * Owns: inline scalar conversions used by hot loops, the rounding rule every
 * quantiser uses, and the names of each family's row functions and kernels
 * so that quant.c can build the traits table. Must not be included outside
 * src/quant/ (tests may include it to compare kernel variants). */
#ifndef SL_QUANT_QUANT_INTERNAL_H
#define SL_QUANT_QUANT_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "quant/quant.h"
#include "quant/quant_blocks.h"
#include "util/bits.h"

/* IEEE half -> float, exact for every input (zeros, subnormals, inf, NaN).
 * Inline because dot kernels convert one scale per block. */
static inline float sl_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in float */
        float f = (float)mant * 5.9604644775390625e-8f;
        memcpy(&bits, &f, 4);
        bits |= sign;
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    float out;
    memcpy(&out, &bits, 4);
    return out;
}


/* Round to nearest, ties to even, for |x| < 2^22: adding 1.5 * 2^23 leaves
 * the integer in the low mantissa bits with the FPU's default rounding. Used
 * by every quantiser so that scalar and SIMD paths (which use the same
 * rounding instruction semantics) give identical quants. */
static inline int sl_round_int(float x)
{
    float v = x + 12582912.0f;
    return (int)(sl_f2bits(v) & 0x007FFFFFu) - 0x00400000;
}

/* Rounds v to the nearest level in [lo, hi], clamping in float first so that
 * huge or infinite v cannot escape the rounding trick's range. NaN -> lo.
 * Branch-free (maxss/minss): quantisers call this in their inner loops. */
static inline int sl_round_clamp(float v, int lo, int hi)
{
    float c = v >= (float)lo ? v : (float)lo; /* NaN compares false -> lo */
    c = c <= (float)hi ? c : (float)hi;
    return sl_round_int(c);
}

/* MXFP4 scale: E8M0 exponent e as 2^(e-128) (half of 2^(e-127), because the
 * value table is doubled). e = 0 and 1 are float subnormals. */
static inline float sl_e8m0_half(uint8_t e)
{
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    return sl_bits2f(bits);
}

/* 6-bit scale and min k (0..7) of a Q4_K / Q5_K block (see quant_blocks.h). */
static inline void sl_k4_scale_min(const uint8_t *s, int k, uint8_t *sc, uint8_t *m)
{
    if (k < 4) {
        *sc = s[k] & 63;
        *m = s[k + 4] & 63;
    } else {
        *sc = (uint8_t)((s[k + 4] & 0x0F) | ((s[k - 4] >> 6) << 4));
        *m = (uint8_t)((s[k + 4] >> 4) | ((s[k] >> 6) << 4));
    }
}

/* The 16 signed scales (sc - 32, in -32..31) of a Q3_K block. */
static inline void sl_q3k_scales(const uint8_t *s, int8_t out[16])
{
    for (int k = 0; k < 16; k++) {
        int lo = k < 8 ? (s[k] & 0x0F) : (s[k - 8] >> 4);
        int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
        out[k] = (int8_t)((lo | (hi << 4)) - 32);
    }
}

/* ---- row functions per family (scalar; "ref" = the reference twin) ---- */

/* quant_fp.c */
void sl_f32_to_float_row(const void *src, float *dst, int64_t n);
void sl_f32_from_float_row(const float *src, void *dst, int64_t n);
void sl_f16_to_float_row(const void *src, float *dst, int64_t n);
void sl_f16_from_float_row(const float *src, void *dst, int64_t n);
void sl_bf16_to_float_row(const void *src, float *dst, int64_t n);
void sl_bf16_from_float_row(const float *src, void *dst, int64_t n);

/* quant_legacy.c */
void sl_dequant_q4_0(const void *src, float *dst, int64_t n);
void sl_dequant_q4_1(const void *src, float *dst, int64_t n);
void sl_dequant_q5_0(const void *src, float *dst, int64_t n);
void sl_dequant_q5_1(const void *src, float *dst, int64_t n);
void sl_dequant_q8_0(const void *src, float *dst, int64_t n);
void sl_dequant_q8_1(const void *src, float *dst, int64_t n);
void sl_quant_q4_0(const float *src, void *dst, int64_t n);
void sl_quant_q4_1(const float *src, void *dst, int64_t n);
void sl_quant_q5_0(const float *src, void *dst, int64_t n);
void sl_quant_q5_1(const float *src, void *dst, int64_t n);
void sl_quant_q8_0_ref(const float *src, void *dst, int64_t n);
/* Q8_0 for weights (bulk writers): levels from the stored f16 scale. */
void sl_quant_q8_0_weights(const float *src, void *dst, int64_t n);
/* single-candidate variants for sl_quantize_fast (Q4_0: quant_fast.c) */
void sl_quant_q4_1_fast(const float *src, void *dst, int64_t n);
void sl_quant_q5_0_fast(const float *src, void *dst, int64_t n);
void sl_quant_q5_1_fast(const float *src, void *dst, int64_t n);
void sl_quant_q8_1_ref(const float *src, void *dst, int64_t n);

/* quant_k.c */
void sl_dequant_q2_K(const void *src, float *dst, int64_t n);
void sl_dequant_q3_K(const void *src, float *dst, int64_t n);
void sl_dequant_q4_K(const void *src, float *dst, int64_t n);
void sl_dequant_q5_K(const void *src, float *dst, int64_t n);
void sl_dequant_q6_K(const void *src, float *dst, int64_t n);
void sl_dequant_q8_K(const void *src, float *dst, int64_t n);
void sl_quant_q8_K_ref(const float *src, void *dst, int64_t n);

/* quant_k_quantize.c */
void sl_quant_q2_K(const float *src, void *dst, int64_t n);
void sl_quant_q3_K(const float *src, void *dst, int64_t n);
void sl_quant_q4_K(const float *src, void *dst, int64_t n);
void sl_quant_q5_K(const float *src, void *dst, int64_t n);
void sl_quant_q6_K(const float *src, void *dst, int64_t n);
void sl_quant_q2_K_fast(const float *src, void *dst, int64_t n);
void sl_quant_q3_K_fast(const float *src, void *dst, int64_t n);
/* Packing of levels (one byte per element) and sub-block codes into a
 * block; shared by the full-effort and the fast quantisers. */
void sl_k_pack_k4_scales(const uint8_t sc[8], const uint8_t mc[8], uint8_t out[12]);
void sl_k_pack_q4_K(const uint8_t L[256], const uint8_t sc[8], const uint8_t mc[8], void *blk);
void sl_k_pack_q5_K(const uint8_t L[256], const uint8_t sc[8], const uint8_t mc[8], void *blk);
void sl_k_pack_q6_K(const int8_t L[256], const int8_t sc[16], void *blk);

/* quant_iq.c */
void sl_dequant_iq4_nl(const void *src, float *dst, int64_t n);
void sl_dequant_iq4_xs(const void *src, float *dst, int64_t n);
void sl_dequant_mxfp4(const void *src, float *dst, int64_t n);
void sl_quant_iq4_nl(const float *src, void *dst, int64_t n);
void sl_quant_iq4_xs(const float *src, void *dst, int64_t n);
void sl_quant_mxfp4(const float *src, void *dst, int64_t n);
void sl_quant_iq4_nl_fast(const float *src, void *dst, int64_t n);
void sl_quant_iq4_xs_fast(const float *src, void *dst, int64_t n);

/* ---- kernels per instruction set ----------------------------------------
 * A kernel set lists, per type id, the vec_dot for that weight type and the
 * from_float used for it when it is an activation type (Q8_0, Q8_1, Q8_K).
 * NULL entries fall back to the scalar set. */
typedef struct sl_quant_kernels {
    sl_vec_dot_fn vec_dot[SL_TYPE_COUNT];
    sl_from_float_fn from_float[SL_TYPE_COUNT];
    /* multi-token twins of vec_dot (same set, same bits); NULL: none */
    sl_vec_dot_n_fn vec_dot_n[SL_TYPE_COUNT];
    int vec_dot_n_max[SL_TYPE_COUNT];
    /* bulk quantisers of sl_quantize_fast (same bytes in every set); NULL:
     * the type's single-candidate scalar function */
    sl_from_float_fn quantize_fast[SL_TYPE_COUNT];
} sl_quant_kernels;

/* vec_dot_*_ref.c fill the scalar set; always complete. */
void sl_vec_dot_fill_legacy_ref(sl_quant_kernels *k);
void sl_vec_dot_fill_k_ref(sl_quant_kernels *k);
void sl_vec_dot_fill_iq_ref(sl_quant_kernels *k);
void sl_vec_dot_fill_fp_ref(sl_quant_kernels *k);

/* vec_dot_*_avx2.c fill the AVX2/FMA/F16C set; return false (and leave k
 * untouched) when built for a target without those instructions. */
bool sl_vec_dot_fill_legacy_avx2(sl_quant_kernels *k);
bool sl_vec_dot_fill_k_avx2(sl_quant_kernels *k);
bool sl_vec_dot_fill_iq_avx2(sl_quant_kernels *k);
bool sl_vec_dot_fill_fp_avx2(sl_quant_kernels *k);

/* vec_dot_n_*.c fill the multi-token kernels (vec_dot_n, vec_dot_n_max) of
 * the same sets; a type may have none. */
void sl_vec_dot_n_fill_ref(sl_quant_kernels *k);
bool sl_vec_dot_n_fill_avx2(sl_quant_kernels *k);
/* The x86 multi-token Q6_K kernels, for the tests: out[0] the AVX2 form,
 * out[1] the AVX-512BW form when this CPU runs it (the one the AVX2 set
 * then takes), else NULL. Returns how many are set (0 off x86). Both give
 * the bits of the AVX2 set's single-token vec_dot. */
int sl_vec_dot_n_q6_K_forms_avx2(sl_vec_dot_n_fn out[2]);

/* quant_fast.c / quant_fast_avx2.c fill quantize_fast (F16, Q4_0, Q4_K,
 * Q5_K, Q6_K); the two sets produce identical bytes. */
void sl_quant_fast_fill_ref(sl_quant_kernels *k);
bool sl_quant_fast_fill_avx2(sl_quant_kernels *k);

#endif
