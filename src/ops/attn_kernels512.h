/* attn_kernels512.h - the 512-bit (AVX-512F) steps of the grouped-query
 * attention kernels in attn_kernels_avx2.c: the K tile's conversion, a
 * group's scores and its value step. Private to src/ops; each result is
 * bit for bit the AVX2 step's it replaces. */
#ifndef SL_OPS_ATTN_KERNELS512_H
#define SL_OPS_ATTN_KERNELS512_H

#include <stddef.h>
#include <stdint.h>

#include "ops/attn_ahead.h"
#include "ops/attn_kernels.h"

/* Whether this CPU runs the steps below (AVX-512F); 0 off x86-64. */
int sl_attn512_usable(void);

/* The tile's K rows t in [0, SL_ATTN_TILE) at cache position ic + t as f32
 * in pairs: kp[t dk + 2 d + j] = K[ic + t + j][d] for even t, j = 0, 1
 * (rows outside [t_lo, kv) zero). kp holds SL_ATTN_TILE x dk floats. */
void sl_attn512_k_pairs(const sl_attn_block *b, int ic, int t_lo, int kv, int f16, float *kp);

/* Raw scores of eight query rows against the 32 positions [t0, t0 + 32) of
 * a pair tile (sl_attn512_k_pairs; t0 a multiple of 32): p[t 8 + h] =
 * q_h . k_t, one FMA chain over d from zero per score. qt holds the rows
 * transposed, qt[d 8 + h]. Asks for up to dk of ahead's lines. */
void sl_attn512_scores32(const float *qt, const float *kp, int dk, int t0, float *p,
                         sl_attn_ahead *ahead);

/* acc[h dv + d] += sum over t in [0, n) of pw[t 8 + h] V_t[d] for eight
 * rows h, one FMA chain over t per accumulator; V_t at v + t v_stride (f16
 * when v16, else f32). dv a multiple of 32. Asks for up to n dv / 32 of
 * ahead's lines. */
void sl_attn512_values8(const uint8_t *v, size_t v_stride, int v16, int n, const float *pw, int dv,
                        float *acc, sl_attn_ahead *ahead);

#endif
