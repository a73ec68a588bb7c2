/* quant_fit.h - scale searches shared by the quantisers (internal).
 *
 * Each function fits a group of n values x (weights w, NULL = all ones) to
 * integer levels times a scale, minimising sum w * (x - xhat)^2 over a small
 * fixed set of candidate scales, each refined by least squares. The caller
 * then rounds the scale to its stored precision and re-derives the levels.
 * Groups: n a multiple of 4, at most SL_FIT_MAX. */
#ifndef SL_QUANT_QUANT_FIT_H
#define SL_QUANT_QUANT_FIT_H

#include <stdbool.h>
#include <stdint.h>

#define SL_FIT_MAX 32

/* x ~ s * L with L in [-nmax, nmax - 1]; 2 * ntry + 1 candidates. Returns s
 * (may be negative, 0 for an all-zero group) and writes L. */
float sl_fit_sym(const float *x, const float *w, int n, int nmax, int ntry, int8_t *L);

/* x ~ s * L + b with L in [0, nmax] and s >= 0. With nonpos_offset, b <= 0
 * (the K-quants store -b as an unsigned min). Returns s, writes b and L. */
float sl_fit_affine(const float *x, const float *w, int n, int nmax, int ntry,
                    bool nonpos_offset, uint8_t *L, float *offset);

/* x ~ s * table[L], table sorted ascending with 16 entries. Returns s. */
float sl_fit_table(const float *x, const float *w, int n, const int8_t *table, int ntry,
                   uint8_t *L);

/* Index of the entry of a 16-entry ascending table nearest v (ties: lower). */
int sl_nearest16(const int8_t *table, float v);

/* Importance weights for a group: rms(x) + |x|, so larger values are fitted
 * more closely without ignoring the small ones. */
void sl_k_weights(const float *x, int n, float *w);

#endif
