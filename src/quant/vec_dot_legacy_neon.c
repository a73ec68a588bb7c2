/* vec_dot_legacy_neon.c - the NEON kernel set's dots of the 32-element
 * legacy types (Q4_0 and Q5_0 against Q8_0, Q4_1 and Q5_1 against Q8_1,
 * single- and multi-token: vec_dot_legacy_neon.h) for plain ARMv8.0, where
 * a four-element integer dot is a widening multiply and two pairwise adds;
 * and the fill of these types into the NEON set (the SDOT copy of
 * vec_dot_legacy_neon_dotprod.c when the CPU has the extension).
 * Must not know: which CPU we run on (the dispatch says dotprod or not). */
#include "quant/quant_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

/* lane j = q[4j..4j+3] . a[4j..4j+3] (exact in int32) */
static inline int32x4_t dot4(int8x16_t q, int8x16_t a)
{
    const int16x8_t p0 = vmull_s8(vget_low_s8(q), vget_low_s8(a));
    const int16x8_t p1 = vmull_high_s8(q, a);
    return vpaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1));
}

#define SL_LEG_DOT4(q, a) dot4((q), (a))
#define SL_LEG_NAME(x) neon_##x
#include "quant/vec_dot_legacy_neon.h"

bool sl_vec_dot_fill_legacy_neon(sl_quant_kernels *k, bool dotprod)
{
    if (dotprod) sl_vec_dot_legacy_dotprod_fill(k);
    else neon_fill(k);
    return true;
}
#else
bool sl_vec_dot_fill_legacy_neon(sl_quant_kernels *k, bool dotprod)
{
    (void)k;
    (void)dotprod;
    return false;
}
#endif
