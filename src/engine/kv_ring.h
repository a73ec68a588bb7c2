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
 *
 * A stream may also be stored head-major (an attention layer's K and V:
 * sl_layer_state.heads): each of its heads keeps its own run of slots, in
 * the same slot order (ring included), so head h's rows are
 * sl_kv_head_bytes apart and a decode step reads each head's cache as one
 * sequential stream instead of one part in every row. Whole rows in the
 * position-major order (session files) go through sl_kv_rows_get / put.
 * Must not know: models, the kernels' arithmetic. */
#ifndef SL_ENGINE_KV_RING_H
#define SL_ENGINE_KV_RING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/mixer.h"

/* The slot (row index in stream storage) of position pos's first copy. */
static inline size_t sl_kv_slot(const sl_layer_state *st, int pos)
{
    return st->ring_cap > 0 ? (size_t)pos % (size_t)st->ring_cap : (size_t)pos;
}

/* Bytes of one head's part of a row of stream r (the whole row when the
 * stream is position-major). */
static inline size_t sl_kv_head_bytes(const sl_layer_state *st, int r)
{
    return st->row_bytes[r] / (size_t)st->heads[r];
}

/* Head h's part of position pos's row in stream r (first copy): in a
 * head-major stream (sl_layer_state.heads) head h's parts of every slot
 * lie together, n_slots of them. */
static inline uint8_t *sl_kv_head_row(const sl_layer_state *st, int r, int h, int pos)
{
    const size_t hb = sl_kv_head_bytes(st, r);
    return st->rows[r] + ((size_t)h * st->n_slots + sl_kv_slot(st, pos)) * hb;
}

/* Row of position pos in a position-major stream r (heads[r] == 1), for
 * writing (first copy). */
static inline uint8_t *sl_kv_row(const sl_layer_state *st, int r, int pos)
{
    return sl_kv_head_row(st, r, 0, pos);
}

/* The second copy of a ring row's head h part (NULL when the layer is
 * not a ring). */
static inline uint8_t *sl_kv_head_mirror(const sl_layer_state *st, int r, int h, int pos)
{
    if (st->ring_cap <= 0) return NULL;
    return sl_kv_head_row(st, r, h, pos) + (size_t)st->ring_cap * sl_kv_head_bytes(st, r);
}

/* The address from which base + p * sl_kv_head_bytes(st, r) is head h's
 * part of position p's row, for every p in [start, start + ring_cap)
 * (every p for a whole-context stream). For a ring it lies before the
 * storage when start >= ring_cap: it is computed as an integer, and only
 * the rows of that run are ever dereferenced through it. */
static inline const void *sl_kv_head_base(const sl_layer_state *st, int r, int h, int start)
{
    const size_t hb = sl_kv_head_bytes(st, r);
    const uintptr_t first = (uintptr_t)sl_kv_head_row(st, r, h, start);
    return (const void *)(first - (uintptr_t)start * (uintptr_t)hb);
}

/* Copies the rows of positions [pos, pos + n) of stream r, each whole
 * (row_bytes[r] bytes, heads side by side: the position-major order
 * whatever the storage order), to dst. The positions must be held. */
static inline void sl_kv_rows_get(const sl_layer_state *st, int r, int pos, int n, uint8_t *dst)
{
    const size_t hb = sl_kv_head_bytes(st, r);
    for (int p = pos; p < pos + n; p++)
        for (int h = 0; h < st->heads[r]; h++, dst += hb) memcpy(dst, sl_kv_head_row(st, r, h, p), hb);
}

/* Stores the whole rows src (as sl_kv_rows_get gives them) as positions
 * [pos, pos + n) of stream r, in both copies of a ring's slots. */
static inline void sl_kv_rows_put(const sl_layer_state *st, int r, int pos, int n,
                                  const uint8_t *src)
{
    const size_t hb = sl_kv_head_bytes(st, r);
    for (int p = pos; p < pos + n; p++)
        for (int h = 0; h < st->heads[r]; h++, src += hb) {
            memcpy(sl_kv_head_row(st, r, h, p), src, hb);
            if (st->ring_cap > 0) memcpy(sl_kv_head_mirror(st, r, h, p), src, hb);
        }
}

#endif
