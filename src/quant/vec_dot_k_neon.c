/* vec_dot_k_neon.c - the NEON kernel set's K-quant and Q8_0 dots for plain
 * ARMv8.0 (no SDOT): the four-element integer dot of vec_dot_k_neon.h as a
 * widening multiply (int8 x int8 -> int16, exact) and pairwise adds, and
 * the fill of the whole NEON set's K-quant part (taking the SDOT kernels
 * of vec_dot_k_dotprod.c when the CPU has the extension), which also fills
 * the table types (vec_dot_iq_neon.c).
 * Must not know: which CPU we run on (the dispatch says dotprod or not). */
#include "quant/quant_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

/* lane j = q[4j..4j+3] . a[4j..4j+3] */
static inline int32x4_t dot4_base(int8x16_t q, int8x16_t a)
{
    const int16x8_t p0 = vmull_s8(vget_low_s8(q), vget_low_s8(a));
    const int16x8_t p1 = vmull_high_s8(q, a);
    return vpaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1));
}

#define SL_NEON_DOT4(q, a) dot4_base((q), (a))
#define SL_NEON_NAME(x) neon_##x
#include "quant/vec_dot_k_neon.h"

bool sl_vec_dot_fill_k_neon(sl_quant_kernels *k, bool dotprod)
{
    if (dotprod) sl_vec_dot_k_dotprod_fill(k);
    else neon_fill(k);
    k->from_float[SL_TYPE_Q8_K] = sl_quant_q8_K_neon;
    /* the table types IQ4_NL, MXFP4, IQ4_XS (vec_dot_iq_neon.c): filled
     * here, where the dispatch already says dotprod or not */
    return sl_vec_dot_fill_iq_neon(k, dotprod);
}
#else
bool sl_vec_dot_fill_k_neon(sl_quant_kernels *k, bool dotprod)
{
    (void)k;
    (void)dotprod;
    return false;
}
#endif
