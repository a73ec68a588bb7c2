/* vec_dot_legacy_neon_dotprod.c - the NEON kernel set's dots of the legacy
 * types (Q4_0, Q5_0 x Q8_0; Q4_1, Q5_1 x Q8_1: vec_dot_legacy_neon.h) with
 * the ARMv8.2 dot-product extension: a lane's four-element integer dot is
 * one SDOT. Built with -march=armv8.2-a+dotprod (mk/aarch64.mk's
 * *_dotprod.c rule); reached only through sl_vec_dot_legacy_dotprod_fill,
 * which sl_vec_dot_fill_legacy_neon calls when the dispatch says the CPU
 * has SDOT. Same integers as the ARMv8.0 copy, so the same bits.
 * Must not know: which CPU we run on. */
#include "quant/quant_neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#define SL_LEG_DOT4(q, a) vdotq_s32(vdupq_n_s32(0), (q), (a))
#define SL_LEG_NAME(x) sdot_##x
#include "quant/vec_dot_legacy_neon.h"

void sl_vec_dot_legacy_dotprod_fill(sl_quant_kernels *k) { sdot_fill(k); }
#elif defined(__aarch64__)
#error "vec_dot_legacy_neon_dotprod.c needs -march=armv8.2-a+dotprod (see mk/aarch64.mk)"
#else
/* other targets never call it (sl_vec_dot_fill_legacy_neon is a stub there) */
void sl_vec_dot_legacy_dotprod_fill(sl_quant_kernels *k) { (void)k; }
#endif
