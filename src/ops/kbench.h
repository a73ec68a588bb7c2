/* kbench.h - kernel and memory-bandwidth measurements behind
 * `sluice bench --kernels`. Library code: returns figures, prints nothing.
 *
 * Two ways to measure. The one-shot functions (sl_kbench_copy_gbs, _read_gbs,
 * _matvec_gbs) build one buffer, time it a few times and free it: what the
 * default table of every type uses, one type after another. On a shared
 * machine whose memory bandwidth swings within seconds that compares
 * moments, not kernels; for ratios between types, build items
 * (sl_kbench_item_*) and time them in rounds (sl_kbench_rounds), each round
 * running every item once, so each round's ratio compares the items under
 * the same memory conditions. */
#ifndef SL_OPS_KBENCH_H
#define SL_OPS_KBENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "quant/quant.h"
#include "util/pool.h"
#include "util/status.h"

/* STREAM-style copy a[i] = b[i] over two arrays of `bytes` each, split over
 * the pool's threads; best of reps, in GB/s counting bytes read + written. */
double sl_kbench_copy_gbs(sl_pool *pool, size_t bytes, int reps);

/* Read-only sweep (sum of an array of `bytes`), best of reps, GB/s. */
double sl_kbench_read_gbs(sl_pool *pool, size_t bytes, int reps);

/* Matrix-vector products with a weight matrix of type t of about `bytes`
 * bytes (4096 columns, random weights quantised with the type's quantiser),
 * rows split over the pool; best of reps, GB/s of weight bytes.
 * SL_EUNSUPPORTED if t has no quantiser (the matrix cannot be made). */
int sl_kbench_matvec_gbs(sl_pool *pool, sl_type t, size_t bytes, int reps, double *gbs,
                         sl_err *err);

/* sl_kbench_matvec_gbs with the matrix in the eight-row interleaved
 * layout when x8 (quant/vec_dot_rp.h: Q4_0, IQ4_NL and MXFP4, the form the
 * engine keeps resident weights in), else the plain one. SL_EUNSUPPORTED
 * when x8 is asked of a type without that layout. */
int sl_kbench_matvec_layout_gbs(sl_pool *pool, sl_type t, bool x8, size_t bytes, int reps,
                                double *gbs, sl_err *err);

/* ---- items timed in interleaved rounds ---------------------------------- */

/* One measured pass: a matrix-vector product over a whole matrix, or a read
 * sweep over a buffer. Owns its buffers. */
typedef struct sl_kbench_item sl_kbench_item;

/* A matrix of type t (x8 layout when x8) of about `bytes` bytes, built as
 * sl_kbench_matvec_layout_gbs builds it, with scratch for up to n_threads
 * threads. Rows go to the pool in chunks of whole groups of eight rows, so
 * the x8 layout is never cut (the engine's split, ops/matmul.c, handles
 * cut groups a slower way). SL_EUNSUPPORTED as above, SL_ENOMEM. */
int sl_kbench_item_matvec(sl_kbench_item **out, sl_type t, bool x8, size_t bytes, int n_threads,
                          sl_err *err);

/* A read sweep over `bytes` bytes (the read_gbs pass). SL_ENOMEM. */
int sl_kbench_item_read(sl_kbench_item **out, size_t bytes, sl_err *err);

/* Runs the item once on the pool (whose size must not exceed the item's
 * n_threads) and returns GB/s: weight bytes (matvec) or bytes read. */
double sl_kbench_item_run(sl_kbench_item *it, sl_pool *pool);

/* The item's outputs after a matvec run: `rows` floats (NULL for a read
 * sweep), and its row count (0 for a read sweep). */
const float *sl_kbench_item_y(const sl_kbench_item *it, long long *rows);

/* Frees the item; NULL allowed. */
void sl_kbench_item_free(sl_kbench_item *it);

/* Times n items interleaved: one untimed pass of each (pages touched,
 * caches warm), then `rounds` rounds, each running every item once, in
 * order 0..n-1 in even rounds and n-1..0 in odd ones (a steady drift of
 * the machine then favours no item). gbs[r * n + i] gets item i's GB/s in
 * round r (gbs holds rounds * n doubles). */
void sl_kbench_rounds(sl_pool *pool, sl_kbench_item *const *items, int n, int rounds,
                      double *gbs);

/* The median of v[0], v[stride], ..., v[(count - 1) * stride] (the mean of
 * the middle two for an even count; 0 for count 0). v is not modified. */
double sl_kbench_median(const double *v, int count, int stride);

/* The q-quantile (0 <= q <= 1) of the same values, linear between the
 * sorted neighbours (q = 0.5: the median). */
double sl_kbench_quantile(const double *v, int count, int stride, double q);

#endif
