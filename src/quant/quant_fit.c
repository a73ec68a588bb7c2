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
    float best_score = -1.0f, best_s = 0.0f;
    for (int k = -ntry; k <= ntry; k++) {
        float iscale = -((float)nmax + 0.1f * (float)k) / vmax;
        float sxl = 0.0f, sll = 0.0f;
        for (int i = 0; i < n; i++) {
            float wi = w ? w[i] : 1.0f;
            int l = sl_round_clamp(iscale * x[i], -nmax, nmax - 1);
            sxl += wi * x[i] * (float)l;
            sll += wi * (float)(l * l);
        }
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
    float sw = 0.0f, sx = 0.0f, sx2 = 0.0f;
    for (int i = 0; i < n; i++) {
        float wi = w ? w[i] : 1.0f;
        sw += wi;
        sx += wi * x[i];
        sx2 += wi * x[i] * x[i];
    }
    float range = xmax - xmin;
    float best_err = INFINITY, best_s = range / (float)nmax, best_b = xmin;
    /* Candidate k stretches the level grid by up to one level either way:
     * k = 0 maps [xmin, xmax] exactly onto [0, nmax]. */
    for (int k = -ntry; k <= ntry; k++) {
        float iscale = ((float)nmax + (float)k / (float)(ntry ? ntry : 1)) / range;
        float sl = 0.0f, sl2 = 0.0f, sxl = 0.0f;
        for (int i = 0; i < n; i++) {
            float wi = w ? w[i] : 1.0f;
            int l = sl_round_clamp(iscale * (x[i] - xmin), 0, nmax);
            sl += wi * (float)l;
            sl2 += wi * (float)(l * l);
            sxl += wi * x[i] * (float)l;
        }
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
 * Counts the midpoints below v (branch-free; ties go to the lower entry). */
int sl_nearest16(const int8_t *table, float v)
{
    int idx = 0;
    for (int k = 0; k < 15; k++) idx += v > 0.5f * (float)(table[k] + table[k + 1]);
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
    float best_score = -1.0f, best_s = vmax / (float)table[0];
    for (int k = -ntry; k <= ntry; k++) {
        float iscale = ((float)table[0] + (float)k) / vmax;
        float sxq = 0.0f, sqq = 0.0f;
        for (int i = 0; i < n; i++) {
            float wi = w ? w[i] : 1.0f;
            float q = table[sl_nearest16(table, iscale * x[i])];
            sxq += wi * x[i] * q;
            sqq += wi * q * q;
        }
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
