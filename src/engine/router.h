/* router.h - a routed layer's choice of experts for each token of a batch.
 *
 * Owns: the router's scoring as the layer's description says (softmax then
 * top-k, or top-k of the logits then softmax over the k), the top-k
 * selection and its renormalisation. The scores of every architecture live
 * here, so a new scoring rule (sigmoid, selection bias, expert groups,
 * scaling) is one more case in one file.
 * Must not know: experts' weights, streaming, how the choice is used. */
#ifndef SL_ENGINE_ROUTER_H
#define SL_ENGINE_ROUTER_H

#include "engine/session.h"

/* Picks the k largest of p[0..n) (ties: lower index first), in rank order,
 * into ids[0..k) and their values into w[0..k); renormalises w to sum to 1
 * when renorm is set (summed in double, clamped to 2^-14, as llama.cpp).
 * Needs k <= n; cannot fail. */
void sl_router_topk(const float *p, int n, int k, bool renorm, int *ids, float *w);

/* gemma4's router input (sl_router_desc.own_norm) for the n rows of x
 * (n, n_embd): each row's unweighted RMS norm, times 1/sqrt(n_embd), times
 * L's per-channel router scale, into out (n, n_embd). Cannot fail. */
void sl_router_own_input(const sl_layer *L, const float *x, int n, int n_embd, float eps,
                         float *out);

/* Routes the n tokens of the batch through layer L's router: the logits of
 * s->xb (the FFN's normalised input; with own_norm, sl_router_own_input of
 * the residual stream s->x, built in s->ffn_out) into s->router (with the router's bias
 * if the layer has one), then for each token t its top_k experts into
 * s->topk_ids[t * top_k ...] and their weights into s->topk_w. Cannot fail. */
void sl_route_batch(sl_session *s, const sl_layer *L, int n);

#endif
