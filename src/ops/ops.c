/* ops.c - elementwise operations (norms, softmax, activations) in
 * llama.cpp's arithmetic, and rotary embedding. */
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "ops/act_neon.h"
#include "ops/vexp.h"
#include "quant/quant.h"
#include "util/hsum.h"

void sl_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    /* llama.cpp's arithmetic: float squares summed in double, the mean
     * rounded to float, the scale in float */
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    const float mean = (float)(ss / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

/* e^(x - max) in place for x[0..n), returning their sum: eights with the
 * reference's polynomial exponential, each eight summed as an AVX2
 * horizontal add and added in double; the tail with expf (llama.cpp's
 * ggml_vec_soft_max_f32 on AVX2). */
static double softmax_sum_ref(float *x, int64_t n, float max)
{
    int64_t i = 0;
    double sum = 0.0;
    for (; i + 8 <= n; i += 8) {
        float *p = x + i;
        for (int j = 0; j < 8; j++) p[j] = sl_vexpf(p[j] - max);
        sum += (double)sl_hsum8(p);
    }
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    return sum;
}

static bool use_avx2(void)
{
#if defined(__x86_64__)
    return sl_quant_isa() == SL_ISA_AVX2;
#else
    return false;
#endif
}

/* the NEON forms (act_neon.c) where the quant dispatch chose NEON */
#if defined(__aarch64__)
static bool use_neon(void) { return sl_quant_isa() == SL_ISA_NEON; }
#else
static bool use_neon(void) { return false; }
#endif

void sl_add_rows_bias(float *rows, const float *bias, int64_t n, size_t width)
{
    if (!bias) return;
    for (int64_t r = 0; r < n; r++)
        for (size_t i = 0; i < width; i++) rows[(size_t)r * width + i] += bias[i];
}

void sl_softmax(float *x, int64_t n)
{
    float mx = x[0];
    for (int64_t i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    const double sum = use_avx2()   ? sl_softmax_sum_avx2(x, n, mx)
                       : use_neon() ? sl_softmax_sum_neon(x, n, mx)
                                    : softmax_sum_ref(x, n, mx);
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

float sl_dot_f32_untiled(const float *x, const float *y, int64_t n)
{
    if (use_avx2()) return sl_dot_f32_untiled_avx2(x, y, n);
    if (use_neon()) return sl_dot_f32_untiled_neon(x, y, n);
    float a[4][8] = {{0}};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) a[j][l] = fmaf(x[i + 8 * j + l], y[i + 8 * j + l], a[j][l]);
    float s[8], t0[4];
    for (int l = 0; l < 8; l++) s[l] = (a[0][l] + a[2][l]) + (a[1][l] + a[3][l]);
    for (int l = 0; l < 4; l++) t0[l] = s[l] + s[l + 4];
    float sum = (t0[0] + t0[1]) + (t0[2] + t0[3]);
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    return sum;
}

float sl_dot_f32_untiled_vtail(const float *x, const float *y, int64_t n)
{
    const int64_t np = n - n % 32;
    float sum = sl_dot_f32_untiled(x, y, np);
    int64_t i = np;
    for (int w = 8; w >= 4; w -= 4)
        while (n - i >= w) {
            float p[8];
            for (int l = 0; l < w; l++) p[l] = x[i + l] * y[i + l];
            for (int l = 0; l < w; l++) sum += p[l];
            i += w;
            if (w == 4) break; /* one four at most */
        }
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    return sum;
}

void sl_silu(float *x, int64_t n)
{
    if (use_avx2()) {
        sl_silu_avx2(x, n);
        return;
    }
    if (use_neon()) {
        sl_silu_neon(x, n);
        return;
    }
    const int64_t n8 = n - n % 8;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        x[i] = v / (1.0f + (i < n8 ? sl_vexpf(0.0f - v) : expf(-v)));
    }
}

float sl_shexp_gate(float g, bool silu_div)
{
    const float e = expf(-g);
    return silu_div ? g / (1.0f + e) / g : 1.0f / (1.0f + e);
}

void sl_swiglu_oai(float *x, const float *g, int64_t n)
{
    const float alpha = 1.702f, limit = 7.0f;
    for (int64_t i = 0; i < n; i++) {
        const float a = fminf(x[i], limit);
        const float u = fminf(fmaxf(g[i], -limit), limit);
        x[i] = a / (1.0f + expf(alpha * (-a))) * (u + 1.0f);
    }
}

void sl_swiglu(float *x, const float *g, int64_t n)
{
    if (use_avx2()) {
        sl_swiglu_avx2(x, g, n);
        return;
    }
    if (use_neon()) {
        sl_swiglu_neon(x, g, n);
        return;
    }
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int64_t j = i; j < i + 8; j++) {
            const float v = x[j];
            x[j] = v / (1.0f + sl_vexpf(0.0f - v)) * g[j];
        }
    for (; i < n; i++) {
        const float v = x[i];
        x[i] = v / (1.0f + expf(-v)) * g[i];
    }
}

/* YaRN: fraction of extrapolation for rotation pair i0/2, a linear ramp
 * between the correction dimensions low and high. */
static float yarn_ramp(float low, float high, int i0)
{
    const float y = ((float)i0 / 2.0f - low) / fmaxf(0.001f, high - low);
    return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

/* YaRN: the dimension whose wavelength completes n_rot turns over the
 * original context. */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base)
{
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2.0f * (float)M_PI)) /
           (2.0f * logf(base));
}

void sl_rope_apply(const sl_rope *r, float *x, int n_heads, int head_dim, int64_t pos)
{
    const int nd = r->n_dims;
    float corr_lo = 0.0f, corr_hi = 0.0f;
    if (r->ext_factor != 0.0f) {
        corr_lo = fmaxf(0.0f, floorf(yarn_corr_dim(nd, r->n_ctx_orig, r->beta_fast, r->freq_base)));
        corr_hi = fminf((float)(nd - 1),
                        ceilf(yarn_corr_dim(nd, r->n_ctx_orig, r->beta_slow, r->freq_base)));
    }
    const float theta_scale = powf(r->freq_base, -2.0f / (float)nd);
    float theta_extrap = (float)pos;
    const bool sectioned = r->sections[0] | r->sections[1] | r->sections[2] | r->sections[3];
    for (int i0 = 0; i0 < nd; i0 += 2) {
        /* IMROPE's "e" pairs: their position (and so every power of it) is 0 */
        const float th = sectioned && sl_rope_pair_at_zero(r, i0 / 2) ? 0.0f : theta_extrap;
        float theta = r->freq_scale * th;
        float mscale = r->attn_factor;
        if (r->ext_factor != 0.0f) {
            /* the reference's compiler fuses the first product and the
             * magnitude's multiply-add */
            const float mix = yarn_ramp(corr_lo, corr_hi, i0) * r->ext_factor;
            theta = fmaf(theta, 1.0f - mix, th * mix);
            mscale *= fmaf(0.1f, logf(1.0f / r->freq_scale), 1.0f);
        }
        const float c = cosf(theta) * mscale;
        const float s = r->inverse ? -(sinf(theta) * mscale) : sinf(theta) * mscale;
        const int a = r->neox ? i0 / 2 : i0;
        const int b = r->neox ? i0 / 2 + nd / 2 : i0 + 1;
        for (int h = 0; h < n_heads; h++) {
            float *v = x + (int64_t)h * head_dim;
            const float x0 = v[a], x1 = v[b];
            v[a] = fmaf(x0, c, -(x1 * s));
            v[b] = fmaf(x0, s, x1 * c);
        }
        theta_extrap *= theta_scale;
    }
}

/* The largest magnitude among x[0..64) as its bits with the sign cleared
 * (NaN above infinity above every finite value): a fixed-length max over
 * integers, which compilers vectorise. */
static uint32_t abs_bits_max_64(const float *x)
{
    uint32_t u[64];
    memcpy(u, x, sizeof u);
    uint32_t most = 0;
    for (int i = 0; i < 64; i++) {
        const uint32_t a = u[i] & 0x7fffffffu;
        most = a > most ? a : most;
    }
    return most;
}

int64_t sl_first_beyond(const float *x, int64_t n, float limit)
{
    uint32_t lim;
    memcpy(&lim, &limit, sizeof lim);
    lim &= 0x7fffffffu;
    int64_t i = 0;
    while (i + 64 <= n && abs_bits_max_64(x + i) < lim) i += 64;
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        if ((u & 0x7fffffffu) >= lim) return i;
    }
    return -1;
}

int64_t sl_first_nonfinite(const float *x, int64_t n)
{
    return sl_first_beyond(x, n, INFINITY);
}
