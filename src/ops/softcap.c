/* softcap.c - the final logit softcap: cap * tanh(x / cap), as llama.cpp's
 * three ops (a scale by 1/cap, tanhf, a scale by cap). */
#include <math.h>

#include "ops/ops.h"

void sl_softcap(float *x, int64_t n, float cap)
{
    const float inv = 1.0f / cap;
    for (int64_t i = 0; i < n; i++) x[i] = tanhf(x[i] * inv) * cap;
}
