/* fwht.c - the Walsh-Hadamard rotation of attention rows (see ops.h). */
#include <math.h>

#include "ops/ops.h"

void sl_fwht_rows(float *x, int64_t n_rows, int n)
{
    const float scale = 1.0f / sqrtf((float)n);
    for (int64_t r = 0; r < n_rows; r++) {
        float *y = x + r * n;
        for (int j = 0; j < n; j++) y[j] *= scale;
        for (int len = 1; len < n; len <<= 1)
            for (int i = 0; i < n; i += 2 * len)
                for (int j = i; j < i + len; j++) {
                    const float u = y[j], v = y[j + len];
                    y[j] = u + v;
                    y[j + len] = u - v;
                }
    }
}
