/* ref_math.h - the arithmetic the independent reference passes share
 * (ref_forward.c, ref_gemma4.c, ref_qwen35.c, ref_mla.c): the weight they
 * hold, a matrix-vector product that rounds its input as a quantised
 * weight's product does, the float-scale RMS norm, SiLU. Written from the
 * rules (ARCHS.md), not from the engine; the passes' own choices (norm
 * forms that differ, rope variants) stay in their files. */
#ifndef SL_TESTS_REF_MATH_H
#define SL_TESTS_REF_MATH_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

/* A weight dequantised to f32 (row-major: ne[1] (x ne[2]) rows of ne[0]),
 * its shape, and the type its products round the activations to (-1: they
 * stay f32). The reference pass that loaded it owns w. */
typedef struct ref_w {
    float *w;
    int act_type;
    uint64_t ne[3];
} ref_w;

/* Reads tensor t of g dequantised to f32 into *out: w (malloc'd, the
 * caller's), ne (t's shape, unused dimensions 1) and act_type (the type its
 * vec_dot rounds activations to, -1 for f32). 0 on success; -1 when t's
 * type has no dequantiser, memory runs out or the read fails, *out then
 * {NULL, -1, {1, 1, 1}}. */
int ref_w_read(sl_gguf *g, const sl_gguf_tensor *t, ref_w *out);

/* x[0..n) rounded through activation type act_type in place (quantised,
 * then dequantised with the separately tested reference routines); nothing
 * for act_type < 0. */
void ref_round_act(int act_type, float *x, int n);

/* y[r] = sum_c w[r * cols + c] * xr[c] for r < rows, the sums in double,
 * xr being x rounded through act_type (ref_round_act; x is not changed).
 * w points at the first row used. */
void ref_matvec(float *y, const float *w, int act_type, const float *x, int rows, int cols);

/* RMS norm as ggml's rms_norm_f32: the sum of squares in double, the scale
 * 1 / sqrt(mean + eps) in float, then the weight (w NULL: none). o may
 * alias x. */
void ref_rmsnorm(float *o, const float *x, const float *w, int n, float eps);

/* x / (1 + e^-x) in float. */
float ref_silu(float x);

#endif
