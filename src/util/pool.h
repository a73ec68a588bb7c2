/* pool.h - a persistent pool of compute threads with dynamic chunking.
 *
 * sl_pool_run(p, fn, ctx, n_chunks) calls fn(ctx, chunk, n_chunks, tid) once
 * for every chunk in [0, n_chunks), on whichever threads get there first
 * (the caller, tid 0, takes part), and returns when all chunks are done.
 * Each thread owns a contiguous share of the chunks and, when its share
 * runs out, steals single chunks from the far ends of the others' (pool.c),
 * so a worker that the OS has descheduled delays the job by at most the
 * chunk it holds. Results must not depend on which thread runs a chunk
 * (each chunk writes its own outputs); tid only selects per-thread scratch.
 * Workers spin briefly between jobs and then sleep.
 * Several threads may share one pool (a model's sessions do): their jobs
 * run one after another, each whole. sl_pool_run is not reentrant (a
 * chunk must not start a job on its own pool). */
#ifndef SL_UTIL_POOL_H
#define SL_UTIL_POOL_H

#include "util/status.h"

typedef struct sl_pool sl_pool;
typedef void (*sl_pool_fn)(void *ctx, int chunk, int n_chunks, int tid);

/* The most chunks one sl_pool_run takes (more is a programming error). */
#define SL_POOL_MAX_CHUNKS 0xffff

/* Starts n_threads - 1 workers (n_threads >= 1). */
int sl_pool_create(sl_pool **out, int n_threads, sl_err *err);
void sl_pool_run(sl_pool *p, sl_pool_fn fn, void *ctx, int n_chunks);
int sl_pool_size(const sl_pool *p);
/* Stops and joins the workers; NULL allowed. */
void sl_pool_free(sl_pool *p);

/* Splits [0, n) into parts near-equal contiguous parts; part i is [*lo, *hi). */
static inline void sl_split_range(long long n, int i, int parts, long long *lo, long long *hi)
{
    *lo = n * i / parts;
    *hi = n * (i + 1) / parts;
}

/* Number of CPUs this process may run on (at least 1). */
int sl_cpu_count(void);

/* Number of physical cores among those CPUs (SMT siblings counted once),
 * the default compute thread count: two threads on one core share its
 * load units and gain nothing on bandwidth-bound kernels. Linux reads the
 * sysfs topology; elsewhere, or if it is unreadable, sl_cpu_count(). */
int sl_cpu_core_count(void);

#endif
