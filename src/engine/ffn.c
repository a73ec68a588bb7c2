/* ffn.c - the feed-forward products shared by dense layers, shared experts
 * and routed experts (ffn.h). */
#include <math.h>

#include "engine/ffn.h"
#include "engine/fwd_mm.h"

void sl_ffn_prepare_down(sl_session *s, const sl_mat *down, const int *idx, int n,
                         const void **acts, sl_activation act)
{
    const size_t F = (size_t)down->cols;
    if (act == SL_ACT_GEGLU) /* combined here, then prepared as plain rows */
        for (int t = 0; t < n; t++) {
            const size_t row = (size_t)(idx ? idx[t] : t);
            sl_geglu(s->hb + row * F, s->hb2 + row * F, (int64_t)F);
        }
    sl_prep p = {down, s->hb, F, act == SL_ACT_GEGLU ? NULL : s->hb2, idx, n,
                 s->act_down, sl_fwd_act_stride(down->type, down->cols),
                 (size_t)s->layout.bytes[SL_SB_act_down], acts, act == SL_ACT_SWIGLU_OAI};
    sl_fwd_prepare(s, &p);
}

void sl_ffn_clamp_swiglu(float *g, float *u, size_t F, float lim)
{
    for (size_t i = 0; i < F; i++) {
        g[i] = fminf(g[i], lim);
        u[i] = fminf(fmaxf(u[i], -lim), lim);
    }
}

void sl_ffn_swiglu_clamp_op(float *g, const float *u, size_t F, float lim)
{
    for (size_t i = 0; i < F; i++) {
        const float gc = fminf(g[i], lim);
        const float uc = fminf(fmaxf(u[i], -lim), lim);
        const float silu = gc / (1.0f + expf(-gc));
        g[i] = silu * uc;
    }
}

void sl_ffn_prepare_down_rows(sl_session *s, const sl_mat *down, const int *idx, int n,
                              const void **acts)
{
    const size_t F = (size_t)down->cols;
    sl_prep p = {down, s->hb, F, NULL, idx, n,
                 s->act_down, sl_fwd_act_stride(down->type, down->cols),
                 (size_t)s->layout.bytes[SL_SB_act_down], acts, false};
    sl_fwd_prepare(s, &p);
}

void sl_ffn_swiglu(sl_session *s, const sl_mat *gate, const sl_mat *up, const sl_mat *down,
                   const float *x, int n, float *out, float clamp, bool clamp_op)
{
    const sl_mat *gu[2] = {gate, up};
    float *gu_out[2] = {s->hb, s->hb2};
    sl_fwd_mm_shared(s, gu, gu_out, 2, x, n);
    const size_t F = (size_t)down->cols;
    if (clamp > 0.0f && clamp_op) {
        for (int t = 0; t < n; t++)
            sl_ffn_swiglu_clamp_op(s->hb + (size_t)t * F, s->hb2 + (size_t)t * F, F, clamp);
        sl_ffn_prepare_down_rows(s, down, NULL, n, s->down_acts);
    } else {
        if (clamp > 0.0f)
            for (int t = 0; t < n; t++)
                sl_ffn_clamp_swiglu(s->hb + (size_t)t * F, s->hb2 + (size_t)t * F, F, clamp);
        sl_ffn_prepare_down(s, down, NULL, n, s->down_acts, SL_ACT_SWIGLU);
    }
    const sl_mm_item d = {down, s->down_acts, n, out, (size_t)down->rows, sl_fwd_form(s, n)};
    sl_fwd_mm_run(s, &d, 1);
}
