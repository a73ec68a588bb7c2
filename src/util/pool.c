/* pool.c - fork-join thread pool with a spin-then-sleep barrier. */
#include "util/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define SPIN_ITERS 20000

struct sl_pool {
    int n;                       /* threads including the caller */
    pthread_t *threads;          /* n - 1 workers */
    sl_pool_fn fn;
    void *ctx;
    atomic_uint generation;      /* bumped once per job */
    atomic_int pending;          /* workers still running the current job */
    atomic_bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv_job;       /* workers sleep here between jobs */
    pthread_cond_t cv_done;      /* the caller sleeps here for stragglers */
};

typedef struct worker_arg {
    sl_pool *p;
    int ith;
} worker_arg;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void *worker_main(void *argp)
{
    worker_arg *arg = argp;
    sl_pool *p = arg->p;
    const int ith = arg->ith;
    free(arg);
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
               !atomic_load(&p->stop)) {
            if (++spins < SPIN_ITERS) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv_job, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = g;
        p->fn(p->ctx, ith, p->n);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->cv_done);
            pthread_mutex_unlock(&p->mu);
        }
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
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, false);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_job, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (a) {
            a->p = p;
            a->ith = i;
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

void sl_pool_run(sl_pool *p, sl_pool_fn fn, void *ctx)
{
    if (p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->cv_job);
    pthread_mutex_unlock(&p->mu);
    fn(ctx, 0, p->n);
    int spins = 0;
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0) {
        if (++spins < SPIN_ITERS) {
            cpu_relax();
            continue;
        }
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) != 0) pthread_cond_wait(&p->cv_done, &p->mu);
        pthread_mutex_unlock(&p->mu);
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
    pthread_cond_destroy(&p->cv_done);
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
