/* expert_src.h - where a routed layer's expert weights come from.
 *
 * One protocol for resident and streamed experts, so the MoE block
 * (moe.c) has one code path for both:
 *
 *     sl_expert_src_begin(src, ids, n, &taken)     the set (or its first
 *                                                  `taken`, if the cache is
 *                                                  smaller than the set)
 *     while (sl_expert_src_next(src, &w) == 1)     ready experts first, then
 *         ... compute w ...                        each read as it lands
 *         sl_expert_src_release(src, w.e);
 *
 * Resident: the experts are views of the model's stacked tensors, all ready
 * at once. Streamed: the streamer's protocol (experts/streamer.h), pins and
 * all, each expert begun counted as a use in the routing's usage history;
 * the caller holds the runtime's lock (model_runtime.h) around a layer's
 * use.
 * Must not know: routing, the products, the session's scratch. */
#ifndef SL_ENGINE_EXPERT_SRC_H
#define SL_ENGINE_EXPERT_SRC_H

#include "engine/fwd_mm.h"
#include "experts/streamer.h"

typedef struct sl_expert_src {
    const sl_layer *L;
    int il;            /* the layer's index */
    sl_streamer *st;   /* NULL: resident */
    sl_usage *usage;   /* the routing's usage history, given every expert
                          begun (streamed only); NULL: none kept */
    const int *ids;    /* resident: the set begun, and how far next() is */
    int n, next;
} sl_expert_src;

/* The next layer's experts to read ahead while this layer computes: a
 * guess from the residual stream (one token: its top-k; a prompt batch:
 * the union over some of its rows), or none (n == 0: the streamer's
 * learned guesses, when they are on). Nothing is owned. */
typedef struct sl_expert_guess {
    const int *ids;
    int n;
    bool is_union;
} sl_expert_guess;

/* A source for layer il of s's model: its streamer when it has one, else
 * its resident tensors. */
void sl_expert_src_init(sl_expert_src *src, const sl_session *s, const sl_layer *L, int il);

/* Starts the set ids[0..n) (distinct): *taken of them will come from
 * next(). Fails when a streamed read cannot be submitted. */
int sl_expert_src_begin(sl_expert_src *src, const int *ids, int n, int *taken, sl_err *err);

/* Whether read-ahead wants a guess for layer il + 1 computed (its gate for
 * one token's guess, or for a batch's union); never for resident experts. */
bool sl_expert_src_wants_guess(const sl_expert_src *src, bool is_union);

/* The choice the n tokens made at this layer (ids[t * k + j]), for the
 * learned guesses; call before the first begin. Resident: nothing. */
void sl_expert_src_observe(sl_expert_src *src, const int *ids, int n, int k);

/* Hands the guess for layer il + 1 to the streamer, to be read behind this
 * layer's own misses (call after the first begin). Resident: nothing. */
void sl_expert_src_read_ahead(sl_expert_src *src, const sl_expert_guess *g);

/* The next expert of the set into *w: 1, or 0 when the set is done, or < 0
 * when a read failed (then call sl_expert_src_abort). May wait for a read. */
int sl_expert_src_next(sl_expert_src *src, sl_expert_w *w, sl_err *err);

/* How many experts next() can hand out without waiting. */
int sl_expert_src_ready(const sl_expert_src *src);

/* Expert e's weights are no longer used (streamed: its pin dropped). */
void sl_expert_src_release(sl_expert_src *src, int e);

/* Drops the set after a failure: reads drained, pins dropped. */
void sl_expert_src_abort(sl_expert_src *src);

#endif
