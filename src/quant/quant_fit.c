/* quant_fit.c - choosing a scale (and offset) for a group of values.
 *
 * Owns: the small searches every quantiser shares: for a group of n values
 * and integer levels, try a few candidate scales, give each its least-
 * squares optimum for the levels it produced, and keep the one with the
 * smallest weighted squared error. Deterministic (fixed candidate order,
 * ties keep the earlier candidate).
 * Must not know: block layouts, how scales are stored. */
#include <math.h>

#include "quant/quant_fit.h"
#include "quant/quant_internal.h"
#include "util/status.h"

/* Inner loops keep four partial sums (one per element i % 4) so that the
 * float additions are not one long dependency chain; the summation order is
 * fixed by the code, so results do not depend on compiler or machine. */
#define LANES 4

/* weights (all ones for NULL) and w * x for a group of n <= SL_FIT_MAX */
static void prep(const float *x, const float *w, int n, float *wv, float *wx)
{
    SL_ASSERT(n % LANES == 0 && n <= SL_FIT_MAX);
    for (int i = 0; i < n; i++) {
        wv[i] = w ? w[i] : 1.0f;
        wx[i] = wv[i] * x[i];
    }
}

float sl_fit_sym(const float *x, const float *w, int n, int nmax, int ntry, int8_t *L)
{
    float amax = 0.0f, vmax = 0.0f;
    for (int i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (a > amax) { amax = a; vmax = x[i]; }
    }
    if (!(amax > 0.0f)) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    /* Candidates map the largest magnitude to about -nmax (the level range
     * is lopsided, [-nmax, nmax-1]; the lone extra negative level is only
     * usable by the value that sets the scale). */
    float wv[SL_FIT_MAX], wx[SL_FIT_MAX];
    prep(x, w, n, wv, wx);
    float best_score = -1.0f, best_s = 0.0f;
    for (int k = -ntry; k <= ntry; k++) {
        float iscale = -((float)nmax + 0.1f * (float)k) / vmax;
        float pxl[LANES] = {0}, pll[LANES] = {0};
        for (int i = 0; i < n; i += LANES)
            for (int u = 0; u < LANES; u++) {
                float l = (float)sl_round_clamp(iscale * x[i + u], -nmax, nmax - 1);
                pxl[u] += wx[i + u] * l;
                pll[u] += wv[i + u] * l * l;
            }
        float sxl = (pxl[0] + pxl[1]) + (pxl[2] + pxl[3]);
        float sll = (pll[0] + pll[1]) + (pll[2] + pll[3]);
        /* error = sum w x^2 - sxl^2 / sll at the optimal s = sxl / sll */
        if (sll > 0.0f) {
            float score = sxl * sxl / sll;
            if (score > best_score) { best_score = score; best_s = sxl / sll; }
        }
    }
    float inv = best_s != 0.0f ? 1.0f / best_s : 0.0f;
    for (int i = 0; i < n; i++) L[i] = (int8_t)sl_round_clamp(inv * x[i], -nmax, nmax - 1);
    return best_s;
}

float sl_fit_affine(const float *x, const float *w, int n, int nmax, int ntry,
                    bool nonpos_offset, uint8_t *L, float *offset)
{
    float xmin = x[0], xmax = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < xmin) xmin = x[i];
        if (x[i] > xmax) xmax = x[i];
    }
    if (nonpos_offset && xmin > 0.0f) xmin = 0.0f;
    if (nonpos_offset && xmax < 0.0f) xmax = 0.0f;
    if (!(xmax > xmin)) {
        for (int i = 0; i < n; i++) L[i] = 0;
        *offset = xmin;
        return 0.0f;
    }
    float wv[SL_FIT_MAX], wx[SL_FIT_MAX];
    prep(x, w, n, wv, wx);
    float sw = 0.0f, sx = 0.0f, sx2 = 0.0f;
    for (int i = 0; i < n; i++) {
        sw += wv[i];
        sx += wx[i];
        sx2 += wx[i] * x[i];
    }
    float range = xmax - xmin;
    float best_err = INFINITY, best_s = range / (float)nmax, best_b = xmin;
    /* Candidate k stretches the level grid by up to one level either way:
     * k = 0 maps [xmin, xmax] exactly onto [0, nmax]. */
    for (int k = -ntry; k <= ntry; k++) {
        float iscale = ((float)nmax + (float)k / (float)(ntry ? ntry : 1)) / range;
        float pl[LANES] = {0}, pl2[LANES] = {0}, pxl[LANES] = {0};
        for (int i = 0; i < n; i += LANES)
            for (int u = 0; u < LANES; u++) {
                float l = (float)sl_round_clamp(iscale * (x[i + u] - xmin), 0, nmax);
                pl[u] += wv[i + u] * l;
                pl2[u] += wv[i + u] * l * l;
                pxl[u] += wx[i + u] * l;
            }
        float sl = (pl[0] + pl[1]) + (pl[2] + pl[3]);
        float sl2 = (pl2[0] + pl2[1]) + (pl2[2] + pl2[3]);
        float sxl = (pxl[0] + pxl[1]) + (pxl[2] + pxl[3]);
        float det = sw * sl2 - sl * sl;
        float s, b;
        if (det > 0.0f) {
            s = (sw * sxl - sx * sl) / det;
            b = (sl2 * sx - sl * sxl) / det;
        } else {
            s = 0.0f;
            b = sx / sw;
        }
        if (nonpos_offset && b > 0.0f) {
            b = 0.0f;
            s = sl2 > 0.0f ? sxl / sl2 : 0.0f;
        }
        if (s < 0.0f) continue; /* levels inverted: never better than k = 0 */
        float err = sx2 - 2.0f * s * sxl - 2.0f * b * sx + s * s * sl2 + 2.0f * s * b * sl +
                    b * b * sw;
        if (err < best_err) {
            best_err = err;
            best_s = s;
            best_b = b;
        }
    }
    /* Levels for the chosen (s, b) itself: the best for its own grid. */
    for (int i = 0; i < n; i++)
        L[i] = (uint8_t)(best_s > 0.0f ? sl_round_clamp((x[i] - best_b) / best_s, 0, nmax)
                                       : 0);
    *offset = best_b;
    return best_s;
}

/* Index of the table entry nearest v; table sorted ascending, 16 entries.
 * A four-step binary search over the midpoints between neighbours (ties go
 * to the lower entry), written so the compiler can use conditional moves. */
int sl_nearest16(const int8_t *table, float v)
{
    int idx = 0;
    for (int step = 8; step >= 1; step /= 2) {
        int k = idx + step - 1; /* midpoint between entries k and k + 1 */
        float mid = 0.5f * (float)(table[k] + table[k + 1]);
        idx += v > mid ? step : 0;
    }
    return idx;
}

float sl_fit_table(const float *x, const float *w, int n, const int8_t *table, int ntry,
                   uint8_t *L)
{
    float amax = 0.0f, vmax = 0.0f;
    for (int i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (a > amax) { amax = a; vmax = x[i]; }
    }
    if (!(amax > 0.0f)) {
        int z = sl_nearest16(table, 0.0f);
        for (int i = 0; i < n; i++) L[i] = (uint8_t)z;
        return 0.0f;
    }
    /* The table's extreme entry is table[0] (the most negative, e.g. -127);
     * candidates map vmax near it and step inwards. */
    float wv[SL_FIT_MAX], wx[SL_FIT_MAX];
    prep(x, w, n, wv, wx);
    float best_score = -1.0f, best_s = vmax / (float)table[0];
    for (int k = -ntry; k <= ntry; k++) {
        float iscale = ((float)table[0] + (float)k) / vmax;
        float pxq[LANES] = {0}, pqq[LANES] = {0};
        for (int i = 0; i < n; i += LANES)
            for (int u = 0; u < LANES; u++) {
                float q = table[sl_nearest16(table, iscale * x[i + u])];
                pxq[u] += wx[i + u] * q;
                pqq[u] += wv[i + u] * q * q;
            }
        float sxq = (pxq[0] + pxq[1]) + (pxq[2] + pxq[3]);
        float sqq = (pqq[0] + pqq[1]) + (pqq[2] + pqq[3]);
        if (sqq > 0.0f) {
            float score = sxq * sxq / sqq;
            if (score > best_score) { best_score = score; best_s = sxq / sqq; }
        }
    }
    float inv = best_s != 0.0f ? 1.0f / best_s : 0.0f;
    for (int i = 0; i < n; i++) L[i] = (uint8_t)sl_nearest16(table, inv * x[i]);
    return best_s;
}

void sl_k_weights(const float *x, int n, float *w)
{
    float s2 = 0.0f;
    for (int i = 0; i < n; i++) s2 += x[i] * x[i];
    float av = sqrtf(s2 / (float)n);
    for (int i = 0; i < n; i++) w[i] = av + fabsf(x[i]);
}
