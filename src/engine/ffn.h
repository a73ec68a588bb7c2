/* ffn.h - the feed-forward products that dense layers, shared experts and
 * routed experts have in common: the gated activation of gate and up rows
 * prepared for down, and a whole SwiGLU FFN on a batch of rows.
 * Must not know: routing, experts, where weights come from. */
#ifndef SL_ENGINE_FFN_H
#define SL_ENGINE_FFN_H

#include "engine/session.h"

/* The activation act (SwiGLU, gpt-oss's clamped SwiGLU or GeGLU) of the
 * rows of s->hb (gate) and s->hb2 (up), prepared for down: rows idx[0..n)
 * (or 0..n-1 when idx is NULL) of width down->cols, into s->act_down, with
 * acts[row] pointing at each. GeGLU combines the rows in place first. */
void sl_ffn_prepare_down(sl_session *s, const sl_mat *down, const int *idx, int n,
                         const void **acts, sl_activation act);

/* deepseek4's clamped SwiGLU inputs: the gate min(g, lim) (before silu),
 * the up clamp(u, -lim, lim), over one row of F. */
void sl_ffn_clamp_swiglu(float *g, float *u, size_t F, float lim);

/* out(n, rows of down) = down(silu(gate x) * up x) for the n rows of x;
 * clamp > 0: deepseek4's clamped form. Uses s->hb, s->hb2 and the
 * session's activation sets as scratch. */
void sl_ffn_swiglu(sl_session *s, const sl_mat *gate, const sl_mat *up, const sl_mat *down,
                   const float *x, int n, float *out, float clamp);

#endif
