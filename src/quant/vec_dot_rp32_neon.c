/* vec_dot_rp32_neon.c - the NEON kernels of the rp32 order (Q4_0, IQ4_NL,
 * MXFP4 x Q8_0, plain and x8 layouts: vec_dot_rp32_neon.h) for plain
 * ARMv8.0, and the getter that hands out these or the SDOT ones
 * (vec_dot_rp32_neon_dotprod.c).
 *
 * Without SDOT an exact four-element dot is a widening multiply (int8 x
 * int8 -> int16) and pairwise adds. Two products share an int16 lane before
 * widening (VMLAL): |w y| <= 127 * 128, so two stay below 2^15 for every
 * level table (IQ4_NL reaches -127) and every int8 activation.
 * Must not know: which CPU we run on (the dispatch says dotprod or not). */
#include "quant/quant_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

/* lanes adding up to v0 . y0 + v1 . y1 (elements 0..15 and 16..31) */
static inline __attribute__((always_inline)) int32x4_t rp_dot32(int8x16_t v0, int8x16_t v1, int8x16_t y0, int8x16_t y1)
{
    int16x8_t a = vmull_s8(vget_low_s8(v0), vget_low_s8(y0));
    a = vmlal_s8(a, vget_low_s8(v1), vget_low_s8(y1));
    int16x8_t b = vmull_high_s8(v0, y0);
    b = vmlal_high_s8(b, v1, y1);
    return vpadalq_s16(vpaddlq_s16(a), b);
}

/* the four bytes of y at lane c (0..3), twice in a d-register */
#define BCAST(y, c) vreinterpret_s8_s32(vdup_laneq_s32(vreinterpretq_s32_s8(y), c))

/* rows 0..3 / 4..7 block sums of an x8 block: per chunk c the low-nibble
 * levels meet y[4c..4c+3] and the high ones y[16+4c..], both products of a
 * row's byte k in the same int16 lane (two rows per d-register half), then
 * pairwise into int32 (two lanes per row), and one pairwise add at the end */
#define X8_CHUNK(c)                                                                            \
    do {                                                                                       \
        const int8x8_t bl = BCAST(y0, c), bh = BCAST(y1, c);                                   \
        r01 = vpadalq_s16(r01, vmlal_s8(vmull_s8(vget_low_s8(w[2 * c]), bl),                  \
                                         vget_low_s8(w[8 + 2 * c]), bh));                      \
        r23 = vpadalq_s16(r23, vmlal_s8(vmull_s8(vget_high_s8(w[2 * c]), bl),                 \
                                         vget_high_s8(w[8 + 2 * c]), bh));                     \
        r45 = vpadalq_s16(r45, vmlal_s8(vmull_s8(vget_low_s8(w[2 * c + 1]), bl),              \
                                         vget_low_s8(w[8 + 2 * c + 1]), bh));                  \
        r67 = vpadalq_s16(r67, vmlal_s8(vmull_s8(vget_high_s8(w[2 * c + 1]), bl),             \
                                         vget_high_s8(w[8 + 2 * c + 1]), bh));                 \
    } while (0)

static inline __attribute__((always_inline)) void rp_x8_sums(const int8x16_t w[16], int8x16_t y0, int8x16_t y1, int32x4_t *lo,
                              int32x4_t *hi)
{
    int32x4_t r01 = vdupq_n_s32(0), r23 = r01, r45 = r01, r67 = r01;
    X8_CHUNK(0);
    X8_CHUNK(1);
    X8_CHUNK(2);
    X8_CHUNK(3);
    *lo = vpaddq_s32(r01, r23);
    *hi = vpaddq_s32(r45, r67);
}
#undef X8_CHUNK
#undef BCAST

#define SL_RP_X8_UNROLL "GCC unroll 1"
#define SL_RP_NAME(x) neon_rp_##x
#include "quant/vec_dot_rp32_neon.h"

bool sl_rp32_neon_get(sl_type type, bool dotprod, sl_rp32_neon *k)
{
    if (dotprod) return sl_rp32_sdot_get(type, k);
    return neon_rp_get(type, k);
}

bool sl_rp_q4k_neon_get(sl_rp_order order, bool dotprod, sl_rp32_neon *k)
{
    if (dotprod) return sl_rp_q4k_sdot_get(order, k);
    neon_rp_q4k_get(order, k);
    return true;
}
#else
bool sl_rp32_neon_get(sl_type type, bool dotprod, sl_rp32_neon *k)
{
    (void)type;
    (void)dotprod;
    (void)k;
    return false;
}

bool sl_rp_q4k_neon_get(sl_rp_order order, bool dotprod, sl_rp32_neon *k)
{
    (void)order;
    (void)dotprod;
    (void)k;
    return false;
}
#endif
