/* route_trace.h - a recorded expert choice (which experts, with which
 * weights, each token chose at each layer), replayed instead of the router.
 *
 * Format `# route_trace v1` (see ../shared/traces/README.md):
 *
 *     # route_trace v1
 *     # model=... arch=... n_layer=L n_expert=X n_expert_used=K
 *     # layer=l expert_bytes=B dense_bytes=D          (optional, one per layer)
 *     turn,phase,step,layer,slot,expert,weight,residency,expert_bytes
 *     0,0,0,0,0,49,0.221297,0,3059712                 (one row per slot)
 *
 * Steps are the tokens in evaluation order: phase 0 (prompt) steps 0..P-1,
 * then phase 1 (generation) steps P..N-1; rows may come in any order (the
 * recorder writes the prompt layer by layer). Every (step, layer) must have its
 * K slots, distinct experts, weights in [0, 1] not increasing with the slot
 * and summing to 1. One gap is accepted, the recording engine's: a prompt
 * step other than the last one may lack the last layer (llama.cpp computes
 * that layer's FFN only for the tokens whose logits it keeps); it replays
 * the last prompt step's choice there (that layer's output for those tokens
 * reaches nothing, only the bytes read count).
 *
 * Owns: the parsed table and a cursor (the next step to replay), which
 * advances by the tokens each batch evaluated and wraps past the end. Not
 * thread-safe: one session replays at a time. */
#ifndef SL_EXPERTS_ROUTE_TRACE_H
#define SL_EXPERTS_ROUTE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef struct sl_route_trace sl_route_trace;

/* Parses the text[0..len) of a trace; name (the path) is used in messages.
 * Fails with SL_EFORMAT naming the line and field of the first problem, or
 * SL_ENOMEM. On success *out is the caller's (sl_route_trace_free). */
int sl_route_trace_parse(sl_route_trace **out, const char *text, size_t len, const char *name,
                         sl_err *err);

/* Reads and parses the trace file at path (at most 1 GiB). */
int sl_route_trace_load(sl_route_trace **out, const char *path, sl_err *err);

void sl_route_trace_free(sl_route_trace *t);

/* Fails (SL_EINVAL, naming the trace, the field and both values) unless
 * the trace has n_layer layers of n_expert experts and top-k top_k. */
int sl_route_trace_check(const sl_route_trace *t, int n_layer, int n_expert, int top_k,
                         sl_err *err);

int sl_route_trace_n_layer(const sl_route_trace *t);
int sl_route_trace_n_expert(const sl_route_trace *t);
int sl_route_trace_top_k(const sl_route_trace *t);
int sl_route_trace_n_steps(const sl_route_trace *t);   /* prompt + generation */
int sl_route_trace_n_prompt(const sl_route_trace *t);
/* (step, layer) pairs filled by the last-layer rule above */
int sl_route_trace_n_filled(const sl_route_trace *t);

/* The choice at step (taken modulo the trace's steps) and layer: ids[0..K)
 * and weights w[0..K), in slot order. */
void sl_route_trace_choice(const sl_route_trace *t, int64_t step, int layer, int *ids, float *w);

/* The replay cursor: steps replayed so far (not wrapped); the next batch's
 * token i replays step cursor + i. */
int64_t sl_route_trace_cursor(const sl_route_trace *t);
void sl_route_trace_advance(sl_route_trace *t, int n);
/* How many times the cursor went past the trace's end. */
int64_t sl_route_trace_wraps(const sl_route_trace *t);

#endif
