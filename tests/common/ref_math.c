/* ref_math.c - see ref_math.h. */
#include "common/ref_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

int ref_w_read(sl_gguf *g, const sl_gguf_tensor *t, ref_w *out)
{
    *out = (ref_w){NULL, -1, {1, 1, 1}};
    const sl_type_traits *tr = sl_type_get(t->type);
    void *raw = malloc(t->nbytes);
    float *f = malloc(t->n_elements * sizeof(float));
    sl_err err;
    if (!tr || !tr->to_float || !raw || !f ||
        sl_gguf_read_tensor(g, t, 0, raw, t->nbytes, &err) != 0) {
        free(raw);
        free(f);
        return -1;
    }
    tr->to_float(raw, f, (int64_t)t->n_elements);
    free(raw);
    out->w = f;
    if (tr->vec_dot && tr->vec_dot_type != SL_TYPE_F32) out->act_type = (int)tr->vec_dot_type;
    for (int d = 0; d < 3; d++) out->ne[d] = t->ne[d];
    return 0;
}

void ref_round_act(int act_type, float *x, int n)
{
    if (act_type < 0) return;
    const sl_type_traits *at = sl_type_get((uint32_t)act_type);
    void *q = malloc((size_t)n * 4 + 64);
    at->from_float(x, q, n);
    at->to_float(q, x, n);
    free(q);
}

void ref_matvec(float *y, const float *w, int act_type, const float *x, int rows, int cols)
{
    float *xr = malloc(sizeof(float) * (size_t)cols);
    memcpy(xr, x, sizeof(float) * (size_t)cols);
    ref_round_act(act_type, xr, cols);
    for (int r = 0; r < rows; r++) {
        double acc = 0.0;
        for (int c = 0; c < cols; c++) acc += (double)w[(size_t)r * cols + c] * xr[c];
        y[r] = (float)acc;
    }
    free(xr);
}

void ref_rmsnorm(float *o, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float mean = (float)(ss / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int i = 0; i < n; i++) o[i] = w ? (x[i] * scale) * w[i] : x[i] * scale;
}

float ref_silu(float x) { return x / (1.0f + expf(-x)); }
