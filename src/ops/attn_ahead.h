/* attn_ahead.h - asking the memory for the next K/V tile while this one
 * computes (the tiled attention kernels of attn_kernels_avx2.c and
 * attn_kernels512_avx2.c). Private to src/ops. */
#ifndef SL_OPS_ATTN_AHEAD_H
#define SL_OPS_ATTN_AHEAD_H

#include <stddef.h>

#include "ops/attn_kernels.h"

/* Memory still to ask for: n more 64-byte lines from p. The kernels' inner
 * loops take one line per iteration (sl_attn_ask_one), so a tile's worth
 * of requests spreads over the tile's computing instead of arriving as a
 * burst the memory cannot queue. */
typedef struct sl_attn_ahead {
    const char *p;
    int n;
} sl_attn_ahead;

/* The rows [p, min(p + SL_ATTN_TILE, end)) of a K or V stream (base, stride
 * bytes a row) as lines to ask for; none when p >= end (rows at or past end
 * may not exist). */
static inline sl_attn_ahead sl_attn_ahead_rows(const void *base, size_t stride, int p, int end)
{
    sl_attn_ahead a = {NULL, 0};
    if (p >= end) return a;
    const int n = end - p < SL_ATTN_TILE ? end - p : SL_ATTN_TILE;
    a.p = (const char *)base + (size_t)p * stride;
    a.n = (int)(((size_t)n * stride + 63) / 64);
    return a;
}

/* Asks for a's next line, if any is left (into L1). Always inlined: GCC 12
 * takes an out-of-line function that only prefetches for one without
 * effects and deletes its calls. */
__attribute__((always_inline)) static inline void sl_attn_ask_one(sl_attn_ahead *a)
{
    if (a->n <= 0) return;
    __builtin_prefetch(a->p, 0, 3);
    a->p += 64;
    a->n--;
}

#endif
