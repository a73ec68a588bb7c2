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

/* The most experts a router scores (hparams.c's expert_count bound). */
#define SL_ROUTER_MAX_EXPERTS 4096
/* The most expert groups of a group-limited router. */
#define SL_ROUTER_MAX_GROUPS 256

/* Group-limited selection (DeepSeek-V3): sel[0..n) in n_group equal groups;
 * each group scores the sum of its two largest values; all but the
 * n_group_used best groups (ties: lower group) are set to -infinity. Needs
 * n % n_group == 0, n / n_group >= 2, n_group_used <= n_group <=
 * SL_ROUTER_MAX_GROUPS (the family files check). Cannot fail. */
void sl_router_group_limit(float *sel, int n, int n_group, int n_group_used);

/* One token's choice from its expert scores p[0..n_expert) (sigmoids or a
 * softmax; ARCHS.md section 0, MoE block): the selection scores are p +
 * bias (bias may be NULL), group-limited when rd->n_group > 1; the top_k
 * by selection score go to ids in rank order, with the unbiased p as
 * weights, renormalised when rd->renorm and multiplied by rd->w_scale when
 * it is neither 0 nor 1. Cannot fail. */
void sl_router_select(const sl_router_desc *rd, const float *p, const float *bias, int *ids,
                      float *w);

/* The chosen experts' weights w[0..top_k) finished as rd says: renormalised
 * (rd->renorm) and scaled (rd->w_scale). Cannot fail. */
void sl_router_weights(const sl_router_desc *rd, float *w);

/* A guess of the experts layer L picks for one token from its router
 * logits (logits[0..n_expert), overwritten): the same selection as
 * sl_route_batch for sigmoid scores (bias and groups included), the top-k
 * of the logits otherwise (a softmax keeps their order); on a hash layer
 * (deepseek4) with token >= 0, that token's row of the table. For
 * read-ahead only. Cannot fail. */
void sl_router_guess(const sl_layer *L, float *logits, int32_t token, int *ids, float *w);
/* gemma4's router input (sl_router_desc.own_norm) for the n rows of x
 * (n, n_embd): each row's unweighted RMS norm, times 1/sqrt(n_embd), times
 * L's per-channel router scale, into out (n, n_embd). Cannot fail. */
void sl_router_own_input(const sl_layer *L, const float *x, int n, int n_embd, float eps,
                         float *out);

/* Routes the n tokens of the batch through layer L's router (a hash layer,
 * deepseek4's first ones: the experts are s->tokens[t]'s row of the
 * layer's table, weighted by their scores): the logits of
 * s->xb (the FFN's normalised input; with own_norm, sl_router_own_input of
 * the residual stream s->x, built in s->ffn_out) into s->router (with the router's bias
 * if the layer has one), then for each token t its top_k experts into
 * s->topk_ids[t * top_k ...] and their weights into s->topk_w. Cannot fail. */
void sl_route_batch(sl_session *s, const sl_layer *L, int n);

#endif
