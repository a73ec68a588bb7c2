/* attn_kernels_neon.h - the NEON attention kernel set (attn_kernels_neon.c):
 * attend_f16 / attend_f32 in NEON with the scalar set's bits, the single
 * q . k and axpy helpers from the scalar set. NULL when not built for
 * aarch64. */
#ifndef SL_OPS_ATTN_KERNELS_NEON_H
#define SL_OPS_ATTN_KERNELS_NEON_H

#include "ops/attn_kernels.h"

const sl_attn_kernels *sl_attn_kernels_neon(void);

#endif
