/* pool.h - a persistent pool of compute threads.
 *
 * sl_pool_run(p, fn, ctx) calls fn(ctx, ith, nth) once on each of the nth
 * threads (the caller is thread 0) and returns when all have finished: a
 * fork-join with a cheap barrier. Workers spin briefly between jobs and
 * then sleep, so back-to-back small jobs (one matvec each) cost microseconds.
 * Work is split by the callee using ith/nth, so the split is deterministic.
 * One pool serves one thread of control: sl_pool_run is not reentrant. */
#ifndef SL_UTIL_POOL_H
#define SL_UTIL_POOL_H

#include "util/status.h"

typedef struct sl_pool sl_pool;
typedef void (*sl_pool_fn)(void *ctx, int ith, int nth);

/* Starts n_threads - 1 workers (n_threads >= 1). */
int sl_pool_create(sl_pool **out, int n_threads, sl_err *err);
void sl_pool_run(sl_pool *p, sl_pool_fn fn, void *ctx);
int sl_pool_size(const sl_pool *p);
/* Stops and joins the workers; NULL allowed. */
void sl_pool_free(sl_pool *p);

/* Splits [0, n) into nth near-equal contiguous parts; part ith is [*lo, *hi). */
static inline void sl_split_range(long long n, int ith, int nth, long long *lo, long long *hi)
{
    *lo = n * ith / nth;
    *hi = n * (ith + 1) / nth;
}

/* Number of CPUs this process may run on (at least 1). */
int sl_cpu_count(void);

#endif
