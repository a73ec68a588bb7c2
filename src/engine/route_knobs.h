/* route_knobs.h - the lossy routing knobs (opt-in, never default), applied
 * to a routed layer's choice after the router (or a replayed trace) made it,
 * and what they cost.
 *
 *   --n-expert-used K   fewer experts per token than the file's top-k: every
 *                       routed layer's top_k becomes K at load, so the router
 *                       itself picks K (renormalised as the file says) and
 *                       every buffer and the memory plan count K
 *   --cache-route J,M   keep the router's top J; fill the other K - J slots
 *                       with the best-ranked of its top M that are already in
 *                       the expert cache (or on their way, or already wanted
 *                       by an earlier token of the batch); when fewer are,
 *                       with the best-ranked of the rest. On a resident model
 *                       every expert is "cached", so the choice is the exact
 *                       one (no effect).
 *
 * On a sigmoid router with a selection bias (glm4moe, deepseek2) they mean
 * what llama.cpp's n_expert_used means there: the ranking is by score +
 * exp_probs_b (within the router's groups), the weights the unbiased scores
 * of the chosen, renormalised over them and scaled (expert_weights_scale);
 * --cache-route ranks its M candidates the same way (not on grouped
 * routers yet).
 *
 * The cost is measured against the exact run's choice (the file's top-k of
 * the same router output, or of the trace): the share of its routing weight
 * the chosen experts carry, and the share of its (token, layer, rank)
 * choices not made.
 *
 * Owns: the knob settings, the file's top-k per layer, the cost counters
 * (behind their own lock: sessions on several threads may route at once).
 * Must not know: files, I/O, how experts are computed. */
#ifndef SL_ENGINE_ROUTE_KNOBS_H
#define SL_ENGINE_ROUTE_KNOBS_H

#include <stdbool.h>

#include "engine/session.h"
#include "experts/route_trace.h"
#include "model/model.h"
#include "sluice.h"

/* Candidates a layer's choice is made from at most (the larger of the
 * file's top-k and M). */
#define SL_KNOB_MAX_CAND 256
/* Experts a layer may have for the knobs (the hyperparameters' own limit). */
#define SL_KNOB_MAX_EXPERTS 4096

typedef struct sl_route_knobs sl_route_knobs;

/* Reads the knobs of p (n_expert_used, cache_route_keep / cache_route_from)
 * for the model's bound and described layers. None set: *out = NULL and
 * SL_OK. Otherwise *out is the model's (sl_route_knobs_free) and, with
 * n_expert_used, every routed layer's top_k is lowered to it. Fails with
 * SL_EINVAL (naming the value, the layer and the file's top-k) when
 * n_expert_used is more than a routed layer's top-k or below 1, when J, M do
 * not satisfy 0 <= J < K < M <= experts (K: the experts used), when the model
 * has no routed layer, or when a layer's router scores in a way the knobs do
 * not know; SL_ENOMEM. */
int sl_route_knobs_create(sl_route_knobs **out, sl_layer *layers, int n_layer,
                          const sl_model_params *p, sl_err *err);
void sl_route_knobs_free(sl_route_knobs *k);

/* The file's top-k of layer il (before --n-expert-used), for a trace check. */
int sl_model_file_top_k(const sl_model *m, int il);

/* Rewrites layer il's choice for the n tokens of the batch in s->topk_ids /
 * s->topk_w (K = L's top_k entries per token), from the router's output in
 * s->router, or from the trace rt (not NULL: replay, whose k is the file's;
 * with --cache-route its M must be <= that k). Counts the cost. Takes the
 * model's stream lock around the cache lookups. Cannot fail. */
void sl_route_knobs_apply(sl_route_knobs *k, sl_session *s, const sl_layer *L, int il, int n,
                          const sl_route_trace *rt);

/* The choice rule, on ranks: of n_cand candidates in rank order, takes
 * ranks [0, keep), then the best-ranked ranks in [keep, n_cand) with
 * cached[r] set, then (if still fewer than k_used) the best-ranked of the
 * others, k_used in all (keep <= k_used <= n_cand). Writes the chosen ranks
 * ascending to pick[0..k_used) and returns how many of them are >= k_used
 * (experts chosen instead of a better-ranked one). Cannot fail. */
int sl_route_pick(int n_cand, int keep, int k_used, const bool *cached, int *pick);

#endif
