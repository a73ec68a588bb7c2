/* vec_dot_iq_dotprod.c - the NEON kernel set's dots of the table types
 * (IQ4_NL, MXFP4, IQ4_XS) with the ARMv8.2 dot-product extension: the
 * four-element integer dot of vec_dot_iq_neon.h is one SDOT. Built with
 * -march=armv8.2-a+dotprod (mk/aarch64.mk's *_dotprod.c rule); reached only
 * through sl_vec_dot_iq_dotprod_fill, which the dispatch calls when
 * getauxval says the CPU has SDOT. Same integers as the plain kernels, so
 * the same bits.
 * Must not know: which CPU we run on. */
#include "quant/quant_neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#define SL_IQ_DOT4(acc, q, a) vdotq_s32((acc), (q), (a))
#define SL_IQ_NAME(x) sdot_##x
#include "quant/vec_dot_iq_neon.h"

void sl_vec_dot_iq_dotprod_fill(sl_quant_kernels *k) { sdot_fill(k); }
#elif defined(__aarch64__)
#error "vec_dot_iq_dotprod.c needs -march=armv8.2-a+dotprod (see mk/aarch64.mk)"
#else
/* other targets never call it (sl_vec_dot_fill_iq_neon is a stub there) */
void sl_vec_dot_iq_dotprod_fill(sl_quant_kernels *k) { (void)k; }
#endif
