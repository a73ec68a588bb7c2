/* attn_kernels512.h - the 512-bit (AVX-512F) steps of the grouped-query
 * attention kernels in attn_kernels_avx2.c: the K tile's conversion, a
 * group's scores and its value step. Private to src/ops; each result is
 * bit for bit the AVX2 step's it replaces. */
#ifndef SL_OPS_ATTN_KERNELS512_H
#define SL_OPS_ATTN_KERNELS512_H

#include <stddef.h>
#include <stdint.h>

#include "ops/attn_kernels.h"

/* How many positions ahead of the K rows they convert the tiled kernels
 * ask for K and V rows: far enough for DRAM's latency to pass while half a
 * tile is computed, spread a row or two at a time (a burst of a whole
 * tile's requests at once measured no faster than none). */
enum { SL_ATTN_AHEAD = 32 };

/* Asks for the K and V rows of positions [p, p + n) (into L1), those below
 * end. Always inlined: GCC 12 takes an out-of-line function that only
 * prefetches for one without effects and deletes its calls. */
__attribute__((always_inline)) static inline void sl_attn_prefetch_rows(const sl_attn_block *b,
                                                                        int p, int n, int end)
{
    for (int i = p; i < p + n && i < end; i++) {
        const char *k = (const char *)b->k + (size_t)i * b->k_stride;
        const char *v = (const char *)b->v + (size_t)i * b->v_stride;
        for (size_t x = 0; x < b->k_stride; x += 64) __builtin_prefetch(k + x, 0, 3);
        for (size_t x = 0; x < b->v_stride; x += 64) __builtin_prefetch(v + x, 0, 3);
    }
}

/* Whether this CPU runs the steps below (AVX-512F); 0 off x86-64. */
int sl_attn512_usable(void);

/* The tile's K rows t in [0, SL_ATTN_TILE) at cache position ic + t as f32
 * in pairs: kp[t dk + 2 d + j] = K[ic + t + j][d] for even t, j = 0, 1
 * (rows outside [t_lo, kv) zero). kp holds SL_ATTN_TILE x dk floats. As it
 * goes it asks the memory for the K and V rows a little ahead, never at or
 * past position pf_end (the cache's rows end there). */
void sl_attn512_k_pairs(const sl_attn_block *b, int ic, int t_lo, int kv, int f16, int pf_end,
                        float *kp);

/* Raw scores of eight query rows against the 32 positions [t0, t0 + 32) of
 * a pair tile (sl_attn512_k_pairs; t0 a multiple of 32): p[t 8 + h] =
 * q_h . k_t, one FMA chain over d from zero per score. qt holds the rows
 * transposed, qt[d 8 + h]. */
void sl_attn512_scores32(const float *qt, const float *kp, int dk, int t0, float *p);

/* acc[h dv + d] += sum over t in [0, n) of pw[t 8 + h] V_t[d] for eight
 * rows h, one FMA chain over t per accumulator; V_t at v + t v_stride (f16
 * when v16, else f32). dv a multiple of 32. */
void sl_attn512_values8(const uint8_t *v, size_t v_stride, int v16, int n, const float *pw, int dv,
                        float *acc);

#endif
