/* router.c - scoring and top-k selection of a routed layer's experts. */
#include <math.h>

#include "engine/router.h"

#include "engine/fwd_mm.h"

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
    if (renorm) { /* as llama.cpp: summed in double, clamped to 2^-14, divided */
        double sum = 0.0;
        for (int r = 0; r < k; r++) sum += (double)w[r];
        const float s = fmaxf((float)sum, 6.103515625e-5f);
        for (int r = 0; r < k; r++) w[r] /= s;
    }
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
        if (rd->score == SL_SCORE_TOPK_SOFTMAX) { /* the k largest logits, softmax over them */
            sl_router_topk(p, X, K, false, ids, w);
            sl_softmax(w, K);
        } else {
            sl_softmax(p, X);
            sl_router_topk(p, X, K, rd->renorm, ids, w);
        }
    }
}
