/* router.c - scoring and top-k selection of a routed layer's experts. */
#include <math.h>

#include "engine/router.h"

#include "engine/fwd_mm.h"

/* w[0..k) /= max(their sum, 2^-14), the sum taken in double (llama.cpp's
 * sum_rows, clamp and div). */
static void renorm_weights(float *w, int k)
{
    double sum = 0.0;
    for (int r = 0; r < k; r++) sum += (double)w[r];
    const float s = fmaxf((float)sum, 6.103515625e-5f);
    for (int r = 0; r < k; r++) w[r] /= s;
}

void sl_router_topk(const float *p, int n, int k, bool renorm, int *ids, float *w)
{
    for (int r = 0; r < k; r++) {
        int best = -1;
        for (int e = 0; e < n; e++) {
            bool taken = false;
            for (int q = 0; q < r; q++)
                if (ids[q] == e) taken = true;
            if (taken) continue;
            if (best < 0 || p[e] > p[best]) best = e;
        }
        ids[r] = best;
        w[r] = p[best];
    }
    if (renorm) renorm_weights(w, k);
}

void sl_router_group_limit(float *sel, int n, int n_group, int n_group_used)
{
    const int per = n / n_group;
    float score[SL_ROUTER_MAX_GROUPS] = {0};
    int top[2], keep[SL_ROUTER_MAX_GROUPS];
    float tw[2];
    for (int g = 0; g < n_group; g++) {
        /* the group's two best, summed as llama.cpp's sum_rows (in double) */
        sl_router_topk(sel + (size_t)g * per, per, 2, false, top, tw);
        score[g] = (float)((double)tw[0] + (double)tw[1]);
    }
    float kw[SL_ROUTER_MAX_GROUPS];
    sl_router_topk(score, n_group, n_group_used, false, keep, kw);
    for (int g = 0; g < n_group; g++) {
        bool kept = false;
        for (int j = 0; j < n_group_used; j++) kept |= keep[j] == g;
        if (kept) continue;
        for (int e = 0; e < per; e++) sel[(size_t)g * per + e] = -INFINITY;
    }
}

void sl_router_select(const sl_router_desc *rd, const float *p, const float *bias, int *ids,
                      float *w)
{
    const int X = rd->n_expert, K = rd->top_k;
    float sel[SL_ROUTER_MAX_EXPERTS];
    for (int e = 0; e < X; e++) sel[e] = bias ? p[e] + bias[e] : p[e];
    if (rd->n_group > 1) sl_router_group_limit(sel, X, rd->n_group, rd->n_group_used);
    sl_router_topk(sel, X, K, false, ids, w);
    for (int r = 0; r < K; r++) w[r] = p[ids[r]]; /* the unbiased scores */
    sl_router_weights(rd, w);
}

void sl_router_weights(const sl_router_desc *rd, float *w)
{
    const int K = rd->top_k;
    if (rd->renorm) renorm_weights(w, K);
    if (rd->w_scale != 0.0f && rd->w_scale != 1.0f)
        for (int r = 0; r < K; r++) w[r] *= rd->w_scale;
}

void sl_router_own_input(const sl_layer *L, const float *x, int n, int n_embd, float eps,
                         float *out)
{
    const float inv = 1.0f / sqrtf((float)n_embd);
    const float *sc = L->router_s.data;
    for (int t = 0; t < n; t++) {
        float *o = out + (size_t)t * (size_t)n_embd;
        sl_rmsnorm_unit(o, x + (size_t)t * (size_t)n_embd, n_embd, eps);
        for (int i = 0; i < n_embd; i++) o[i] *= inv;
        for (int i = 0; i < n_embd; i++) o[i] *= sc[i];
    }
}

void sl_route_batch(sl_session *s, const sl_layer *L, int n)
{
    const sl_router_desc *rd = &L->d.ffn.router;
    const int K = rd->top_k, X = rd->n_expert;
    const float *in = s->xb;
    if (rd->own_norm) { /* gemma4: built in ffn_out, free until the experts' sum */
        sl_router_own_input(L, s->x, n, s->m->hp.n_embd, s->m->hp.rms_eps, s->ffn_out);
        in = s->ffn_out;
    }
    sl_fwd_mm_tensor(s, &L->router, in, n, s->router);
    sl_add_rows_bias(s->router, L->router_b.data, n, (size_t)X);
    for (int t = 0; t < n; t++) {
        float *p = s->router + (size_t)t * X;
        int *ids = s->topk_ids + (size_t)t * K;
        float *w = s->topk_w + (size_t)t * K;
        const float *bias = rd->sel_bias ? L->exp_probs_b.data : NULL;
        if (rd->score == SL_SCORE_SQRT_SOFTPLUS) { /* deepseek4: as ggml_softplus, ggml_sqrt */
            for (int e = 0; e < X; e++)
                p[e] = sqrtf(p[e] > 20.0f ? p[e] : logf(1.0f + expf(p[e])));
            if (rd->hash) { /* the token's row of the table (its first K when
                               --n-expert-used lowered K), weights from p */
                const int32_t *row = (const int32_t *)L->tid2eid.data +
                                     (size_t)s->tokens[t] * (size_t)L->tid2eid.ne[0];
                for (int r = 0; r < K; r++) { /* ids checked at load */
                    ids[r] = row[r];
                    w[r] = p[row[r]];
                }
                sl_router_weights(rd, w);
            } else {
                sl_router_select(rd, p, bias, ids, w);
            }
        } else if (rd->score == SL_SCORE_SIGMOID) { /* deepseek2, glm4moe: as ggml_sigmoid */
            for (int e = 0; e < X; e++) p[e] = 1.0f / (1.0f + expf(-p[e]));
            sl_router_select(rd, p, bias, ids, w);
        } else if (rd->score == SL_SCORE_SOFTMAX &&
                   (bias || rd->n_group > 1 || (rd->w_scale != 0.0f && rd->w_scale != 1.0f))) {
            sl_softmax(p, X); /* DeepSeek-V2: softmax scores, groups, scaling */
            sl_router_select(rd, p, bias, ids, w);
        } else if (rd->score == SL_SCORE_TOPK_SOFTMAX) { /* the k largest logits, softmax over them */
            sl_router_topk(p, X, K, false, ids, w);
            sl_softmax(w, K);
        } else {
            sl_softmax(p, X);
            sl_router_topk(p, X, K, rd->renorm, ids, w);
        }
    }
}

void sl_router_guess(const sl_layer *L, float *logits, int32_t token, int *ids, float *w)
{
    const sl_router_desc *rd = &L->d.ffn.router;
    if (rd->hash && token >= 0) { /* the table says it exactly */
        const int32_t *row = (const int32_t *)L->tid2eid.data + (size_t)token * L->tid2eid.ne[0];
        for (int r = 0; r < rd->top_k; r++) ids[r] = row[r], w[r] = 0.0f;
        return;
    }
    if (rd->score == SL_SCORE_SQRT_SOFTPLUS && !rd->hash) { /* monotone: as its scores */
        for (int e = 0; e < rd->n_expert; e++)
            logits[e] = sqrtf(logits[e] > 20.0f ? logits[e] : logf(1.0f + expf(logits[e])));
        sl_router_select(rd, logits, L->exp_probs_b.data, ids, w);
        return;
    }
    if (rd->score == SL_SCORE_SIGMOID) { /* the selection the layer will make */
        for (int e = 0; e < rd->n_expert; e++) logits[e] = 1.0f / (1.0f + expf(-logits[e]));
        sl_router_select(rd, logits, rd->sel_bias ? L->exp_probs_b.data : NULL, ids, w);
        return;
    }
    /* softmax keeps the order: the top-k of the logits is the top-k */
    sl_router_topk(logits, rd->n_expert, rd->top_k, false, ids, w);
}
