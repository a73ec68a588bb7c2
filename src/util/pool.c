/* pool.c - fork-join thread pool: each thread owns a contiguous share of a
 * job's chunks and steals from the others' when its own run out.
 *
 * Why owned shares: a thread that works through consecutive chunks reads
 * consecutive weight rows, which the hardware prefetchers stream well; when
 * two threads took alternate chunks from one shared counter, every chunk
 * started a new stream and paid a contended atomic, and a decode step ran
 * 25-30 % slower. Why stealing: a thread the OS has descheduled still holds
 * back at most the chunk it is running; the others take the rest of its
 * share, one chunk at a time from the far end.
 *
 * Each share is one 64-bit word, generation << 32 | end << 16 | next, on a
 * cache line of its own: the owner claims `next` and thieves claim `end - 1`
 * by compare-and-swap, so a chunk runs exactly once. The generation in
 * every word means a worker that wakes late, still holding an old
 * generation, can never claim a chunk of a newer job: its compare-and-swap
 * fails once the word moved on. (An earlier version kept the chunk count
 * in a separate atomic; a late worker could pair an old generation with a
 * new job's count and let the caller return while its chunk still ran.) */
#include "util/pool.h"
#include "util/aligned.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPIN_ITERS 4000

typedef struct share {
    _Alignas(64) _Atomic uint64_t w; /* generation << 32 | end << 16 | next */
} share;

struct sl_pool {
    int n;                       /* threads including the caller */
    pthread_t *threads;          /* n - 1 workers */
    share *shares;               /* (n) one per thread */
    sl_pool_fn fn;
    void *ctx;
    _Alignas(64) _Atomic uint64_t job; /* generation << 32 | chunks */
    _Alignas(64) atomic_int done;      /* chunks finished in the current job */
    atomic_int sleepers;         /* workers blocked on cv_job */
    atomic_bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv_job;
    pthread_mutex_t run_mu;      /* one job at a time from any number of callers */
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

#define MAX_CHUNKS SL_POOL_MAX_CHUNKS

static inline uint32_t w_gen(uint64_t v) { return (uint32_t)(v >> 32); }
static inline int w_end(uint64_t v) { return (int)((v >> 16) & MAX_CHUNKS); }
static inline int w_next(uint64_t v) { return (int)(v & MAX_CHUNKS); }

/* Claims one chunk of share s under generation gen: from the front for its
 * owner, from the back for a thief. Returns the chunk, or -1 when the share
 * is empty or belongs to another job. */
static int claim(share *s, uint32_t gen, bool owner)
{
    uint64_t v = atomic_load_explicit(&s->w, memory_order_acquire);
    for (;;) {
        if (w_gen(v) != gen || w_next(v) >= w_end(v)) return -1;
        const uint64_t nv = owner ? v + 1 : v - ((uint64_t)1 << 16);
        if (atomic_compare_exchange_weak_explicit(&s->w, &v, nv, memory_order_acq_rel,
                                                  memory_order_acquire))
            return owner ? w_next(v) : w_end(v) - 1;
    }
}

/* Runs chunks of generation gen: the thread's own share front to back, then
 * the others' from their back ends, until none is left. */
static void run_chunks(sl_pool *p, uint32_t gen, int n_chunks, int tid)
{
    int ran = 0, c;
    for (int k = 0; k < p->n; k++) { /* k == 0: its own share */
        share *s = &p->shares[(tid + k) % p->n];
        while ((c = claim(s, gen, k == 0)) >= 0) {
            p->fn(p->ctx, c, n_chunks, tid);
            ran++;
        }
    }
    if (ran) atomic_fetch_add_explicit(&p->done, ran, memory_order_release);
}

static void *worker_main(void *argp)
{
    worker_arg *arg = argp;
    sl_pool *p = arg->p;
    const int tid = arg->tid;
    free(arg);
    uint32_t seen = 0;
    for (;;) {
        uint64_t job;
        int spins = 0;
        while (w_gen(job = atomic_load_explicit(&p->job, memory_order_acquire)) == seen &&
               !atomic_load(&p->stop)) {
            if (++spins < SPIN_ITERS) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (w_gen(atomic_load(&p->job)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv_job, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = w_gen(job);
        run_chunks(p, seen, (int)(job & 0xffffffffu), tid);
    }
}

int sl_pool_create(sl_pool **out, int n_threads, sl_err *err)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return sl_err_set(err, SL_EINVAL, "thread count %d is out of range [1, 1024]", n_threads);
    /* aligned: the pool's atomics sit on cache lines of their own */
    sl_pool *p = sl_aligned_alloc(64, (sizeof *p + 63) & ~(size_t)63);
    if (!p) return sl_err_set(err, SL_ENOMEM, "out of memory");
    memset(p, 0, sizeof *p);
    p->n = n_threads;
    atomic_init(&p->job, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->stop, false);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_job, NULL);
    pthread_mutex_init(&p->run_mu, NULL);
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    p->shares = sl_aligned_alloc(64, (size_t)n_threads * sizeof *p->shares);
    if (!p->threads || !p->shares) {
        free(p->threads);
        sl_aligned_free(p->shares);
        sl_aligned_free(p);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n_threads; i++) atomic_init(&p->shares[i].w, 0);
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
    SL_ASSERT(n_chunks <= MAX_CHUNKS);
    pthread_mutex_lock(&p->run_mu);
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    const uint32_t gen = w_gen(atomic_load(&p->job)) + 1;
    for (int t = 0; t < p->n; t++) {
        long long lo, hi;
        sl_split_range(n_chunks, t, p->n, &lo, &hi);
        atomic_store_explicit(&p->shares[t].w, (uint64_t)gen << 32 | (uint64_t)hi << 16 |
                              (uint64_t)lo, memory_order_relaxed);
    }
    /* publishing the job releases fn, ctx and the shares; seq_cst so the
     * sleepers check below cannot move before it */
    atomic_store(&p->job, (uint64_t)gen << 32 | (uint64_t)n_chunks);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv_job);
        pthread_mutex_unlock(&p->mu);
    }
    run_chunks(p, gen, n_chunks, 0);
    /* only chunks another thread is executing right now remain */
    int spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < n_chunks) {
        if (++spins < SPIN_ITERS) cpu_relax();
        else sched_yield(); /* the holder was descheduled: let it run */
    }
    pthread_mutex_unlock(&p->run_mu);
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
    pthread_mutex_destroy(&p->run_mu);
    free(p->threads);
    sl_aligned_free(p->shares);
    sl_aligned_free(p);
}

int sl_cpu_core_count(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return sl_cpu_count();
    /* a core is named by the lowest CPU of its sibling list */
    bool seen[CPU_SETSIZE] = {false};
    int cores = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
                 c);
        FILE *f = fopen(path, "r");
        int first = -1;
        if (f) {
            if (fscanf(f, "%d", &first) != 1) first = -1;
            fclose(f);
        }
        if (first < 0 || first >= CPU_SETSIZE) return sl_cpu_count(); /* no topology */
        if (!seen[first]) {
            seen[first] = true;
            cores++;
        }
    }
    return cores > 0 ? cores : 1;
#else
    return sl_cpu_count();
#endif
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
