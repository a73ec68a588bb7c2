/* rope_ff.c - rotary embedding with per-pair frequency divisors (llama.cpp's
 * rope_freqs "freq_factors"; gemma4's proportional rope on full layers).
 * Pair i's angle is pos * base^(-2i/n_dims) / ff[i], the power built by
 * repeated float multiplication as ggml builds it; no YaRN. */
#include <math.h>

#include "ops/ops.h"

void sl_rope_apply_ff(const sl_rope *r, const float *ff, float *x, int n_heads, int head_dim,
                      int64_t pos)
{
    const int nd = r->n_dims;
    const float theta_scale = powf(r->freq_base, -2.0f / (float)nd);
    float theta_base = (float)pos;
    for (int i0 = 0; i0 < nd; i0 += 2) {
        const float theta = r->freq_scale * (theta_base / ff[i0 / 2]);
        const float c = cosf(theta) * r->attn_factor, s = sinf(theta) * r->attn_factor;
        const int a = r->neox ? i0 / 2 : i0;
        const int b = r->neox ? i0 / 2 + nd / 2 : i0 + 1;
        for (int h = 0; h < n_heads; h++) {
            float *v = x + (int64_t)h * head_dim;
            const float x0 = v[a], x1 = v[b];
            v[a] = fmaf(x0, c, -(x1 * s));
            v[b] = fmaf(x0, s, x1 * c);
        }
        theta_base *= theta_scale;
    }
}
