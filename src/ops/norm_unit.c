/* norm_unit.c - the RMS norm without a weight (llama.cpp's bare
 * ggml_rms_norm: gemma4's v and its router input). */
#include <math.h>

#include "ops/ops.h"

void sl_rmsnorm_unit(float *out, const float *x, int64_t n, float eps)
{
    double ss = 0.0; /* float squares summed in double, as sl_rmsnorm */
    for (int64_t i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    const float mean = (float)(ss / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale;
}
