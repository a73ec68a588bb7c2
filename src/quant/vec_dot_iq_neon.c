/* vec_dot_iq_neon.c - the NEON kernel set's dots of the table types
 * (IQ4_NL, MXFP4 x Q8_0; IQ4_XS x Q8_K) for plain ARMv8.0: the four-element
 * integer dot of vec_dot_iq_neon.h as a widening multiply (int8 x int8 ->
 * int16, exact) and pairwise adds; and the fill of these types into the
 * NEON set (taking the SDOT kernels of vec_dot_iq_dotprod.c when the CPU
 * has the extension).
 * Must not know: which CPU we run on (the dispatch says dotprod or not). */
#include "quant/quant_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

/* acc + (lane j = q[4j..4j+3] . a[4j..4j+3]) */
static inline int32x4_t dot4_acc(int32x4_t acc, int8x16_t q, int8x16_t a)
{
    const int16x8_t p0 = vmull_s8(vget_low_s8(q), vget_low_s8(a));
    const int16x8_t p1 = vmull_high_s8(q, a);
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1)));
}

#define SL_IQ_DOT4(acc, q, a) dot4_acc((acc), (q), (a))
#define SL_IQ_NAME(x) neon_##x
#include "quant/vec_dot_iq_neon.h"

bool sl_vec_dot_fill_iq_neon(sl_quant_kernels *k, bool dotprod)
{
    if (dotprod) sl_vec_dot_iq_dotprod_fill(k);
    else neon_fill(k);
    return true;
}
#else
bool sl_vec_dot_fill_iq_neon(sl_quant_kernels *k, bool dotprod)
{
    (void)k;
    (void)dotprod;
    return false;
}
#endif
