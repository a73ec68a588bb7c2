/* pool.c - fork-join thread pool with dynamic chunk claiming.
 *
 * The job's identity, its chunk count and its next free chunk live in one
 * 64-bit atomic (generation << 32 | chunks << 16 | next chunk), so a worker
 * that wakes late can never claim a chunk of a job other than the one it
 * read: its compare-and-swap fails once the word moved on. (An earlier
 * version kept the chunk count in a separate atomic; a late worker could
 * pair the old generation with the new job's count, claim a chunk of the
 * new job under the old word, and let the caller return while it still
 * ran. The suite caught it as a use-after-scope under load.) */
#include "util/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define SPIN_ITERS 4000

struct sl_pool {
    int n;                       /* threads including the caller */
    pthread_t *threads;          /* n - 1 workers */
    sl_pool_fn fn;
    void *ctx;
    _Atomic uint64_t claim;      /* generation << 32 | chunks << 16 | next chunk */
    atomic_int done;             /* chunks finished in the current job */
    atomic_int sleepers;         /* workers blocked on cv_job */
    atomic_bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv_job;
};

typedef struct worker_arg {
    sl_pool *p;
    int tid;
} worker_arg;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#define MAX_CHUNKS 0xffff

/* Claims and runs chunks of generation gen until none is left. */
static void run_chunks(sl_pool *p, uint32_t gen, int tid)
{
    uint64_t v = atomic_load_explicit(&p->claim, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(v >> 32) != gen) return;
        const int n_chunks = (int)((v >> 16) & MAX_CHUNKS);
        const int next = (int)(v & MAX_CHUNKS);
        if (next >= n_chunks) return;
        if (!atomic_compare_exchange_weak_explicit(&p->claim, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        p->fn(p->ctx, next, n_chunks, tid);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
        v = atomic_load_explicit(&p->claim, memory_order_acquire);
    }
}

static void *worker_main(void *argp)
{
    worker_arg *arg = argp;
    sl_pool *p = arg->p;
    const int tid = arg->tid;
    free(arg);
    uint32_t seen = 0;
    for (;;) {
        uint32_t gen;
        int spins = 0;
        while ((gen = (uint32_t)(atomic_load_explicit(&p->claim, memory_order_acquire) >> 32)) ==
                   seen &&
               !atomic_load(&p->stop)) {
            if (++spins < SPIN_ITERS) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while ((uint32_t)(atomic_load(&p->claim) >> 32) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv_job, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = gen;
        run_chunks(p, gen, tid);
    }
}

int sl_pool_create(sl_pool **out, int n_threads, sl_err *err)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return sl_err_set(err, SL_EINVAL, "thread count %d is out of range [1, 1024]", n_threads);
    sl_pool *p = calloc(1, sizeof *p);
    if (!p) return sl_err_set(err, SL_ENOMEM, "out of memory");
    p->n = n_threads;
    atomic_init(&p->claim, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->stop, false);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_job, NULL);
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (a) {
            a->p = p;
            a->tid = i;
        }
        if (!a || pthread_create(&p->threads[i - 1], NULL, worker_main, a) != 0) {
            free(a);
            p->n = i; /* join only those started */
            sl_pool_free(p);
            return sl_err_set(err, SL_ENOMEM, "cannot start compute thread %d", i);
        }
    }
    *out = p;
    return SL_OK;
}

void sl_pool_run(sl_pool *p, sl_pool_fn fn, void *ctx, int n_chunks)
{
    if (n_chunks <= 0) return;
    if (p->n == 1 || n_chunks == 1) {
        for (int c = 0; c < n_chunks; c++) fn(ctx, c, n_chunks, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    SL_ASSERT(n_chunks <= MAX_CHUNKS);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    const uint32_t gen = (uint32_t)(atomic_load(&p->claim) >> 32) + 1;
    /* publishing the new word releases fn/ctx; seq_cst so the sleepers
     * check below cannot move before it */
    atomic_store(&p->claim, (uint64_t)gen << 32 | (uint64_t)n_chunks << 16);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv_job);
        pthread_mutex_unlock(&p->mu);
    }
    run_chunks(p, gen, 0);
    /* only chunks a worker is executing right now remain */
    int spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < n_chunks) {
        if (++spins < SPIN_ITERS) cpu_relax();
        else sched_yield(); /* the holder was descheduled: let it run */
    }
}

int sl_pool_size(const sl_pool *p) { return p->n; }

void sl_pool_free(sl_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->cv_job);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_job);
    free(p->threads);
    free(p);
}

int sl_cpu_count(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
