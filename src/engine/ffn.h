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

/* deepseek4's clamped SwiGLU as llama.cpp 2026-09's ggml_swiglu_clamp op
 * computes it, into g: gc = min(g, lim), g = gc / (1 + expf(-gc)) *
 * clamp(u, -lim, lim), libm expf, every element alike (the older build
 * clamps the inputs and takes ggml's vectorised SwiGLU: the function
 * above, then sl_ffn_prepare_down's SwiGLU). One row of F. */
void sl_ffn_swiglu_clamp_op(float *g, const float *u, size_t F, float lim);

/* The combined rows of s->hb (as sl_ffn_swiglu_clamp_op leaves them)
 * prepared for down, as sl_ffn_prepare_down does for an activation. */
void sl_ffn_prepare_down_rows(sl_session *s, const sl_mat *down, const int *idx, int n,
                              const void **acts);

/* out(n, rows of down) = down(silu(gate x) * up x) for the n rows of x;
 * clamp > 0: deepseek4's clamped form (clamp_op: sl_ffn_swiglu_clamp_op's
 * arithmetic, else the inputs clamped). Uses s->hb, s->hb2 and the
 * session's activation sets as scratch. */
void sl_ffn_swiglu(sl_session *s, const sl_mat *gate, const sl_mat *up, const sl_mat *down,
                   const float *x, int n, float *out, float clamp, bool clamp_op);

#endif
