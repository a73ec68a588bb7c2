/* route_knobs.c - see route_knobs.h. */
#include "engine/route_knobs.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model_runtime.h"
#include "engine/router.h"
#include "experts/route_trace.h"
#include "experts/streamer.h"

struct sl_route_knobs {
    int n_layer;
    int *file_k;          /* (n_layer) the file's top-k; 0 for a dense layer */
    int k_used;           /* n_expert_used, or 0 */
    int keep, from;       /* --cache-route J, M; from == 0: off */
    int first_k;          /* the file's top-k of the first routed layer */
    pthread_mutex_t mu;   /* the counters below */
    uint64_t routings, choices, changed, substituted;
    double kept_sum;      /* sum over routings of the share of weight kept */
};

int sl_route_pick(int n_cand, int keep, int k_used, const bool *cached, int *pick)
{
    bool chosen[SL_KNOB_MAX_CAND] = {false};
    int count = 0;
    for (int r = 0; r < keep; r++) chosen[r] = true, count++;
    for (int r = keep; r < n_cand && count < k_used; r++)
        if (cached[r]) chosen[r] = true, count++;
    for (int r = keep; r < n_cand && count < k_used; r++)
        if (!chosen[r]) chosen[r] = true, count++;
    int n = 0, subst = 0;
    for (int r = 0; r < n_cand; r++)
        if (chosen[r]) {
            pick[n++] = r;
            if (r >= k_used) subst++;
        }
    return subst;
}

int sl_route_knobs_create(sl_route_knobs **out, sl_layer *layers, int n_layer,
                          const sl_model_params *p, sl_err *err)
{
    *out = NULL;
    if (!p || (p->n_expert_used == 0 && p->cache_route_from == 0)) return SL_OK;
    const int K = p->n_expert_used, J = p->cache_route_keep, M = p->cache_route_from;
    int first = -1;
    for (int il = 0; il < n_layer; il++) {
        const sl_ffn_desc *f = &layers[il].d.ffn;
        if (f->kind != SL_FFN_ROUTED) continue;
        if (first < 0) first = il;
        const int fk = f->router.top_k, X = f->router.n_expert, used = K > 0 ? K : fk;
        const sl_router_score sc = f->router.score;
        if (sc != SL_SCORE_SOFTMAX && sc != SL_SCORE_TOPK_SOFTMAX && sc != SL_SCORE_SIGMOID)
            return sl_err_set(err, SL_EUNSUPPORTED, "layer %d's router scores its experts in a "
                              "way the lossy routing knobs do not handle yet", il);
        if (sc == SL_SCORE_SIGMOID && M != 0 && f->router.n_group > 1)
            return sl_err_set(err, SL_EUNSUPPORTED, "cache-route does not choose within expert "
                              "groups yet (layer %d routes by %d groups)", il, f->router.n_group);
        if (K < 0 || K > fk)
            return sl_err_set(err, SL_EINVAL, "n_expert_used %d is not in 1..%d, the experts per "
                              "token the file routes to (layer %d): it can only be lowered",
                              K, fk, il);
        if (M != 0 && !(J >= 0 && J < used && used < M && M <= X))
            return sl_err_set(err, SL_EINVAL, "cache-route %d,%d needs 0 <= J < K < M <= "
                              "experts, here K = %d experts used and %d experts (layer %d)",
                              J, M, used, X, il);
        if (fk > SL_KNOB_MAX_CAND || M > SL_KNOB_MAX_CAND || X > SL_KNOB_MAX_EXPERTS)
            return sl_err_set(err, SL_EUNSUPPORTED, "the lossy routing knobs choose among at "
                              "most %d of at most %d experts (layer %d: top-k %d, M %d, %d "
                              "experts)", SL_KNOB_MAX_CAND, SL_KNOB_MAX_EXPERTS, il, fk, M, X);
    }
    if (first < 0)
        return sl_err_set(err, SL_EINVAL, "the lossy routing knobs need routed experts, and "
                          "this model has none");
    sl_route_knobs *k = calloc(1, sizeof *k);
    if (!k || !(k->file_k = calloc((size_t)n_layer, sizeof *k->file_k))) {
        free(k);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    k->n_layer = n_layer;
    k->k_used = K;
    k->keep = J;
    k->from = M;
    k->first_k = layers[first].d.ffn.router.top_k;
    for (int il = 0; il < n_layer; il++) {
        sl_router_desc *r = &layers[il].d.ffn.router;
        if (layers[il].d.ffn.kind != SL_FFN_ROUTED) continue;
        k->file_k[il] = r->top_k;
        if (K > 0) r->top_k = K;
    }
    pthread_mutex_init(&k->mu, NULL);
    *out = k;
    return SL_OK;
}

void sl_route_knobs_free(sl_route_knobs *k)
{
    if (!k) return;
    pthread_mutex_destroy(&k->mu);
    free(k->file_k);
    free(k);
}

int sl_model_file_top_k(const sl_model *m, int il)
{
    const sl_route_knobs *k = m->rt ? m->rt->routing.knobs : NULL;
    if (k && k->file_k[il] > 0) return k->file_k[il];
    return m->layers[il].d.ffn.router.top_k;
}

/* The router's renormalisation (router.c): summed in double, clamped. */
static void renorm(float *w, int n)
{
    double sum = 0.0;
    for (int r = 0; r < n; r++) sum += (double)w[r];
    const float s = fmaxf((float)sum, 6.103515625e-5f);
    for (int r = 0; r < n; r++) w[r] /= s;
}

void sl_route_knobs_apply(sl_route_knobs *k, sl_session *s, const sl_layer *L, int il, int n,
                          const sl_route_trace *rt)
{
    const sl_router_desc *rd = &L->d.ffn.router;
    const int K = rd->top_k, X = rd->n_expert, fk = k->file_k[il];
    const bool topk_softmax = rd->score == SL_SCORE_TOPK_SOFTMAX;
    /* sigmoid scores (glm4moe, deepseek2): the router's ranking is by score +
     * exp_probs_b within its groups, its weights the unbiased scores of the
     * chosen, renormalised and scaled (sl_router_select) */
    const bool sigmoid = rd->score == SL_SCORE_SIGMOID;
    const float *bias = sigmoid && rd->sel_bias ? L->exp_probs_b.data : NULL;
    float sel[SL_KNOB_MAX_EXPERTS];
    /* the candidates: the trace's k, or the router's top max(k, M) */
    const int n_cand = rt ? fk : (k->from > fk ? k->from : fk);
    const int keep = k->from ? k->keep : K;
    sl_streamer *st = k->from ? s->m->rt->streamer : NULL;
    int cand[SL_KNOB_MAX_CAND], pick[SL_KNOB_MAX_CAND];
    float base[SL_KNOB_MAX_CAND];
    bool cached[SL_KNOB_MAX_CAND];
    uint64_t wanted[(SL_KNOB_MAX_EXPERTS + 63) / 64] = {0}; /* experts the batch chose so far */
    uint64_t changed = 0, subst_total = 0;
    double kept_sum = 0.0;
    if (st) pthread_mutex_lock(&s->m->rt->mu);
    for (int t = 0; t < n; t++) {
        int *ids = s->topk_ids + (size_t)t * K;
        float *w = s->topk_w + (size_t)t * K;
        if (rt) {
            sl_route_trace_choice(rt, sl_route_trace_cursor(rt) + t, il, cand, base);
        } else {
            const float *p = s->router + (size_t)t * X; /* probabilities, or logits */
            if (sigmoid) { /* ranked by score + bias, weighted by the score */
                for (int e = 0; e < X; e++) sel[e] = bias ? p[e] + bias[e] : p[e];
                if (rd->n_group > 1) sl_router_group_limit(sel, X, rd->n_group, rd->n_group_used);
                sl_router_topk(sel, X, n_cand, false, cand, base);
                for (int r = 0; r < n_cand; r++) base[r] = p[cand[r]];
            } else {
                sl_router_topk(p, X, n_cand, false, cand, base);
            }
            if (topk_softmax) /* the weight of each is exp(l - l_max) before the softmax's sum */
                for (int r = n_cand - 1; r >= 0; r--) base[r] = expf(base[r] - base[0]);
        }
        for (int r = 0; r < n_cand; r++)
            cached[r] = r >= keep && (!st || sl_streamer_has(st, il, cand[r]) ||
                                      (wanted[cand[r] / 64] >> (cand[r] % 64)) & 1);
        int subst = k->from ? sl_route_pick(n_cand, keep, K, cached, pick) : 0;
        if (!k->from)
            for (int r = 0; r < K; r++) pick[r] = r;
        /* the cost, against the exact run's fk choices */
        double all = 0.0, kept = 0.0;
        int made = 0;
        for (int r = 0; r < fk; r++) all += (double)base[r];
        for (int i = 0; i < K; i++)
            if (pick[i] < fk) kept += (double)base[pick[i]], made++;
        kept_sum += all > 0.0 ? kept / all : 1.0;
        changed += (uint64_t)(fk - made);
        subst_total += (uint64_t)subst;
        for (int i = 0; i < K; i++) {
            const int e = cand[pick[i]];
            wanted[e / 64] |= 1ull << (e % 64);
        }
        /* the router already wrote its top K; a replay or a substitution is written here */
        if (!rt && subst == 0) continue;
        for (int i = 0; i < K; i++) {
            ids[i] = cand[pick[i]];
            w[i] = base[pick[i]];
        }
        if (sigmoid) { /* a trace's weights are final: redone only when the set changed */
            if (!rt || ((K < fk || subst) && rd->renorm)) sl_router_weights(rd, w);
        } else if (rt ? (K < fk || subst) && rd->renorm : (rd->renorm || topk_softmax)) {
            renorm(w, K);
        }
    }
    if (st) pthread_mutex_unlock(&s->m->rt->mu);
    pthread_mutex_lock(&k->mu);
    k->routings += (uint64_t)n;
    k->choices += (uint64_t)n * (uint64_t)fk;
    k->changed += changed;
    k->substituted += subst_total;
    k->kept_sum += kept_sum;
    pthread_mutex_unlock(&k->mu);
}

void sl_model_knob_stats(const sl_model *m, sl_knob_stats *out)
{
    memset(out, 0, sizeof *out);
    out->weight_kept = 1.0;
    sl_route_knobs *k = m->rt->routing.knobs;
    if (!k) return;
    out->active = true;
    out->file_top_k = k->first_k;
    out->n_expert_used = k->k_used > 0 ? k->k_used : k->first_k;
    out->cache_route_keep = k->keep;
    out->cache_route_from = k->from;
    pthread_mutex_lock(&k->mu);
    out->routings = k->routings;
    out->choices = k->choices;
    out->changed = k->changed;
    out->substituted = k->substituted;
    if (k->routings) out->weight_kept = k->kept_sum / (double)k->routings;
    pthread_mutex_unlock(&k->mu);
}
