/* session_layout.h - the one place that sizes a session's memory.
 *
 * Every buffer a session owns (KV cache, activations, prepared inputs of
 * the matrix products, routing tables, logits) is sized here, from the
 * model's bound tensors (their types and shapes, one-row matrices
 * included) and the session's dimensions, in checked 64-bit arithmetic.
 * sl_session_create allocates exactly this layout as one arena, and the
 * memory plan (model_plan.c) reserves exactly its total, so the sizes
 * are written once. Each buffer is followed by a guard zone: a session
 * checks its guards after every batch (and under AddressSanitizer the
 * zones are poisoned), so a sizing mistake stops a test at the buffer it
 * overran instead of corrupting memory.
 * Must not know: files, tokenizers, how the buffers are used. */
#ifndef SL_ENGINE_SESSION_LAYOUT_H
#define SL_ENGINE_SESSION_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "sluice.h"

/* The largest context and micro-batch a session takes. */
#define SL_SESSION_MAX_CTX (1 << 24)
#define SL_SESSION_MAX_BATCH (1 << 16)

/* Every buffer of a session (a field of struct sl_session of that name),
 * in arena order. */
#define SL_SESSION_BUFFERS(X)                                                                   \
    X(k_cache) X(v_cache) X(x) X(xb) X(q) X(k) X(v) X(attn_out) X(ffn_out) X(tmp) X(hb)      \
    X(hb2) X(att) X(router) X(topk_ids) X(topk_w) X(exp_out) X(moe_count) X(moe_cursor)       \
    X(moe_slot) X(moe_pos) X(moe_rows) X(moe_xw) X(pf_x) X(pf_logits) X(pf_w) X(pf_ids)       \
    X(moe_acts_g) X(moe_acts_u) X(down_acts) X(act_down) X(acts) X(act) X(mm_items) X(mm_c0)  \
    X(row_tmp) X(logits) X(layer_state) X(seq_state) X(seq_snap) X(kind_scratch)

typedef enum sl_sbuf {
#define SL_SBUF_ID(name) SL_SB_##name,
    SL_SESSION_BUFFERS(SL_SBUF_ID)
#undef SL_SBUF_ID
    SL_SB_COUNT
} sl_sbuf;

/* Bytes of the guard zone after each buffer, and the arena's alignment. */
#define SL_SESSION_GUARD 64

/* What a session is created for. */
typedef struct sl_session_dims {
    int n_batch;       /* largest micro-batch, >= 1 */
    int n_ctx;         /* context length in tokens, >= 1 */
    int n_threads;     /* compute threads (per-thread scratch), >= 1 */
    int n_logit_rows;  /* rows of logits kept: 1, or n_batch for every token's */
    sl_kv_type type_k, type_v; /* the cache types: what every kind's rows hold
                                  (sl_cache_use, mixer.h) */
    bool swa_full;     /* sliding-window layers keep every position (no ring) */
} sl_session_dims;

/* How one layer's two state row streams are stored. */
typedef struct sl_layer_kv {
    uint64_t row_bytes[2]; /* bytes per position of each stream */
    uint64_t n_rows;       /* rows each stream stores: n_ctx, or 2 ring_cap */
    uint64_t ring_cap;     /* > 0: a mirrored ring of this capacity (kv_ring.h) */
} sl_layer_kv;

typedef struct sl_session_layout {
    uint64_t bytes[SL_SB_COUNT];  /* each buffer's size */
    uint64_t offset[SL_SB_COUNT]; /* where it starts in the arena (aligned) */
    uint64_t arena_bytes;         /* every buffer and guard */
    uint64_t kv_bytes;            /* k_cache + v_cache */
    uint64_t scratch_bytes;       /* the rest: arena_bytes - kv_bytes */
    size_t kv_elem;               /* bytes per value of SL_CACHE_K_PLAIN kinds' rows:
                                   * 4 when type_k is f32, else 2 (f16) */
    size_t act_stride;            /* bytes of one prepared input row of any matrix
                                   * reading the block input (the widest, cache-line
                                   * rounded) */
    int act_sets;                 /* 2 when some MoE layer's gate and up take
                                   * different activation types, else 1 */
    int mm_cap;                   /* products one pool job may hold */
    size_t row_tmp_stride;        /* floats per thread for dequantised rows */
    size_t att_floats;            /* floats per thread of attention block scratch (att) */
} sl_session_layout;

/* Sizes every buffer of a session of model m with dimensions d into *lay.
 * Reads only the model's hyperparameters and bound tensors (types and
 * shapes), so the memory plan can call it before any weight is placed.
 * Fails with SL_ENOMEM, naming the model's dimensions, when a size
 * overflows 64 bits or an index the forward pass keeps in an int; with
 * SL_EINVAL when a dimension is out of range. */
int sl_session_layout_make(sl_session_layout *lay, const sl_model *m, const sl_session_dims *d,
                           sl_err *err);

/* Bytes per value of an SL_CACHE_K_PLAIN kind's rows with K type tk: 4
 * for f32, else 2 (f16; a quantised tk is refused for such kinds). */
size_t sl_kv_plain_elem(sl_kv_type tk);

/* Bytes per position of layer il's two state row streams with cache types
 * tk and tv: an SL_CACHE_KV layer's K and V rows in tk and tv (its
 * mixer's row of f32 values converted, sl_kv_row_bytes), another kind's
 * state_rows for values of sl_kv_plain_elem(tk) bytes. The session's
 * k_cache and v_cache hold every layer's streams back to back, in layer
 * order. */
void sl_session_layer_rows(const sl_model *m, int il, sl_kv_type tk, sl_kv_type tv,
                           uint64_t rows[2]);

/* The first layer (or -1) that cannot cache K of type tk or V of type tv:
 * an attention layer whose head sizes a quantised type's blocks of 32 do
 * not divide, or a quantised tk on an SL_CACHE_K_PLAIN layer. */
int sl_session_kv_misfit(const sl_model *m, sl_kv_type tk, sl_kv_type tv);

/* SL_OK when every layer of m can cache K of type tk and V of type tv;
 * else SL_EINVAL with a sentence in err naming the layer, what it caches
 * and the types it can. */
int sl_session_kv_check(const sl_model *m, sl_kv_type tk, sl_kv_type tv, sl_err *err);

/* Every layer's state summed with cache types tk and tv: bytes per
 * position of each row stream (per_token[0]: K, per_token[1]: V) and
 * bytes of sequence state. False when a sum overflows 64 bits. */
bool sl_session_state_bytes(const sl_model *m, sl_kv_type tk, sl_kv_type tv,
                            uint64_t per_token[2], uint64_t *per_seq);

/* The capacity of the ring a layer with window n_swa keeps in a session of
 * n_ctx positions and micro-batches of n_batch: n_swa + n_batch - 1 (a
 * batch appends all its rows before its first token, which still needs
 * the n_swa - 1 before it, attends), stored twice (kv_ring.h); 0 when the
 * layer keeps the whole context instead: no window (n_swa <= 0), or a
 * context of at most twice that capacity, which the ring would not save.
 * Arguments are >= 1 (n_swa any). */
uint64_t sl_kv_ring_cap(int n_swa, int n_ctx, int n_batch);

/* THE per-layer KV sizing, used by sessions (sl_session_layout_make,
 * sl_session_create), the memory plan and the reports: layer il's row
 * sizes (sl_session_layer_rows with d's value types) and how many rows it
 * stores for d's context and batch (a ring for a sliding-window attention
 * layer unless d->swa_full). */
void sl_session_layer_kv(const sl_model *m, int il, const sl_session_dims *d, sl_layer_kv *out);

/* Bytes of every layer's K and V row streams for a context of n_ctx
 * positions and micro-batches of n_batch with cache types tk and tv
 * (sl_session_layer_rows), as sl_session_layer_kv stores
 * them: with ring, sliding-window layers keep their ring, else every layer
 * holds n_ctx. Sequence state is not counted. False when a product or sum
 * overflows 64 bits. */
bool sl_session_kv_bytes_at(const sl_model *m, sl_kv_type tk, sl_kv_type tv, int n_ctx,
                            int n_batch, bool ring, uint64_t *bytes);

/* The name of buffer b, for messages. */
const char *sl_session_buffer_name(sl_sbuf b);

/* Marks the guard zones of an arena laid out as lay: filled with a pattern,
 * and poisoned under AddressSanitizer. */
void sl_session_guards_arm(const sl_session_layout *lay, uint8_t *arena);

/* Checks the guard zones armed by sl_session_guards_arm: returns the
 * buffer whose guard was overwritten, or SL_SB_COUNT when all are intact.
 * (Under AddressSanitizer the write itself is reported; this returns
 * SL_SB_COUNT.) */
sl_sbuf sl_session_guards_check(const sl_session_layout *lay, const uint8_t *arena);

/* Aborts, naming the buffer, when sl_session_guards_check finds a guard
 * overwritten: a buffer smaller than what was written into it is a
 * programming error in this file's sizes, and memory is already corrupt. */
void sl_session_guards_verify(const sl_session_layout *lay, const uint8_t *arena);

/* Releases ASan's poison on the guards before the arena is freed. */
void sl_session_guards_disarm(const sl_session_layout *lay, uint8_t *arena);

#endif
