/* act_neon.h - the NEON forms of sl_silu, sl_swiglu, sl_softmax's
 * exponentials and sum, and sl_dot_f32_untiled (act_neon.c), bit-identical
 * to the scalar forms in ops.c. ops.c calls them only when the quant
 * dispatch chose NEON (elsewhere they are empty stubs). */
#ifndef SL_OPS_ACT_NEON_H
#define SL_OPS_ACT_NEON_H

#include <stdint.h>

void sl_silu_neon(float *x, int64_t n);
void sl_swiglu_neon(float *x, const float *g, int64_t n);
double sl_softmax_sum_neon(float *x, int64_t n, float max);
float sl_dot_f32_untiled_neon(const float *x, const float *y, int64_t n);

#endif
