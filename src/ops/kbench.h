/* kbench.h - kernel and memory-bandwidth measurements behind
 * `sluice bench --kernels`. Library code: returns figures, prints nothing. */
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

#endif
