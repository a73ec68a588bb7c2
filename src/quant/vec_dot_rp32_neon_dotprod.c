/* vec_dot_rp32_neon_dotprod.c - the NEON kernels of the rp32 order (Q4_0,
 * IQ4_NL, MXFP4 x Q8_0, plain and x8 layouts: vec_dot_rp32_neon.h) with the
 * ARMv8.2 dot-product extension. On the plain layout a block's dot is two
 * SDOTs; on the x8 layout a 16-byte half-chunk holds four bytes of each of
 * four rows, and SDOT by element (the token's four matching bytes as lane
 * c of its activation register) gives each row's partial sum in its own
 * lane: 16 SDOTs per block and token for eight rows, no reduction across
 * lanes. Built with -march=armv8.2-a+dotprod (mk/aarch64.mk's *_dotprod.c
 * rule); reached only through sl_rp32_neon_get(.., true, ..), which the
 * dispatch asks for only when the CPU has SDOT. Same integers, same bits.
 * Must not know: which CPU we run on. */
#include "quant/quant_neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

static inline __attribute__((always_inline)) int32x4_t rp_dot32(int8x16_t v0, int8x16_t v1, int8x16_t y0, int8x16_t y1)
{
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), v0, y0), v1, y1);
}

/* chunk c: low nibbles (elements 4c..) against lane c of y0, high nibbles
 * (16+4c..) against lane c of y1; four independent chains */
#define X8_CHUNK(c)                                                                            \
    do {                                                                                       \
        a0 = vdotq_laneq_s32(a0, w[2 * c], y0, c);                                             \
        b0 = vdotq_laneq_s32(b0, w[2 * c + 1], y0, c);                                         \
        a1 = vdotq_laneq_s32(a1, w[8 + 2 * c], y1, c);                                         \
        b1 = vdotq_laneq_s32(b1, w[8 + 2 * c + 1], y1, c);                                     \
    } while (0)

static inline __attribute__((always_inline)) void rp_x8_sums(const int8x16_t w[16], int8x16_t y0, int8x16_t y1, int32x4_t *lo,
                              int32x4_t *hi)
{
    int32x4_t a0 = vdupq_n_s32(0), a1 = a0, b0 = a0, b1 = a0;
    X8_CHUNK(0);
    X8_CHUNK(1);
    X8_CHUNK(2);
    X8_CHUNK(3);
    *lo = vaddq_s32(a0, a1);
    *hi = vaddq_s32(b0, b1);
}
#undef X8_CHUNK

#define SL_RP_X8_UNROLL "GCC unroll 4"
#define SL_RP_NAME(x) sdot_rp_##x
#include "quant/vec_dot_rp32_neon.h"

bool sl_rp32_sdot_get(sl_type type, sl_rp32_neon *k) { return sdot_rp_get(type, k); }

bool sl_rp_q4k_sdot_get(sl_rp_order order, sl_rp32_neon *k)
{
    sdot_rp_q4k_get(order, k);
    return true;
}
#elif defined(__aarch64__)
#error "vec_dot_rp32_neon_dotprod.c needs -march=armv8.2-a+dotprod (see mk/aarch64.mk)"
#else
/* other targets never call it (sl_rp32_neon_get answers false there) */
bool sl_rp32_sdot_get(sl_type type, sl_rp32_neon *k)
{
    (void)type;
    (void)k;
    return false;
}

bool sl_rp_q4k_sdot_get(sl_rp_order order, sl_rp32_neon *k)
{
    (void)order;
    (void)k;
    return false;
}
#endif
