/* kv_ring.h - where a position's K/V rows live in a layer's row streams:
 * at the position itself (the whole context), or in a sliding-window
 * layer's mirrored ring.
 *
 * A ring of capacity C (ring_cap) stores 2 C rows: position p is written to
 * slot p % C and to slot p % C + C. Any run of at most C consecutive
 * positions [a, a + k) then sits in consecutive slots from a % C, so the
 * rows a micro-batch attends to (its first token's window through its last
 * token: n_swa + n - 1 <= C positions) are one contiguous run, and the
 * attention kernels read them exactly as they read the full cache: same
 * positions, same order, with a base pointer moved so that base + p * stride
 * is position p's row. Rows of [ring_lo, n_past) are intact: a position is
 * overwritten only by one C later.
 * Must not know: models, the kernels' arithmetic. */
#ifndef SL_ENGINE_KV_RING_H
#define SL_ENGINE_KV_RING_H

#include <stddef.h>
#include <stdint.h>

#include "engine/mixer.h"

/* The slot (row index in stream storage) of position pos's first copy. */
static inline size_t sl_kv_slot(const sl_layer_state *st, int pos)
{
    return st->ring_cap > 0 ? (size_t)pos % (size_t)st->ring_cap : (size_t)pos;
}

/* Row of position pos in stream r, for writing (first copy). */
static inline uint8_t *sl_kv_row(const sl_layer_state *st, int r, int pos)
{
    return st->rows[r] + sl_kv_slot(st, pos) * st->row_bytes[r];
}

/* The second copy of a ring row (NULL when the layer is not a ring). */
static inline uint8_t *sl_kv_row_mirror(const sl_layer_state *st, int r, int pos)
{
    if (st->ring_cap <= 0) return NULL;
    return sl_kv_row(st, r, pos) + (size_t)st->ring_cap * st->row_bytes[r];
}

/* The address from which base + p * row_bytes[r] is position p's row, for
 * every p in [start, start + ring_cap) (every p for a whole-context
 * stream). For a ring it lies before the storage when start >= ring_cap:
 * it is computed as an integer, and only the rows of that run are ever
 * dereferenced through it. */
static inline const void *sl_kv_base(const sl_layer_state *st, int r, int start)
{
    if (st->ring_cap <= 0) return st->rows[r];
    const uintptr_t first = (uintptr_t)(st->rows[r] + sl_kv_slot(st, start) * st->row_bytes[r]);
    return (const void *)(first - (uintptr_t)start * (uintptr_t)st->row_bytes[r]);
}

#endif
