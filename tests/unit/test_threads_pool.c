/* test_threads_pool.c - the compute pool: every chunk of every job runs
 * exactly once, jobs never bleed into each other, per-thread ids stay in
 * range, and a job whose chunks sleep (a stand-in for a descheduled worker)
 * still completes with the right result; several threads of control
 * sharing one pool (a model's sessions do) each get exactly their own
 * job's chunks. Also run under ThreadSanitizer by `make tsan`. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test.h"
#include "util/pool.h"

typedef struct job {
    atomic_int *hits; /* (n_chunks) how often each chunk ran */
    int nth;
    atomic_int bad_tid;
    int sleep_every;  /* chunk % sleep_every == 0 sleeps 200 us; 0: never */
    long long *sum;   /* (n_chunks) chunk-owned output */
} job;

static void work(void *ctx, int chunk, int n_chunks, int tid)
{
    job *j = ctx;
    atomic_fetch_add(&j->hits[chunk], 1);
    if (tid < 0 || tid >= j->nth) atomic_store(&j->bad_tid, 1);
    if (j->sleep_every && chunk % j->sleep_every == 0) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    long long lo, hi, s = 0;
    sl_split_range(100000, chunk, n_chunks, &lo, &hi);
    for (long long i = lo; i < hi; i++) s += i;
    j->sum[chunk] = s;
}

static void run_jobs(int nth, int sleep_every)
{
    sl_pool *p;
    sl_err err;
    CHECK(sl_pool_create(&p, nth, &err) == 0);
    for (int round = 0; round < 300; round++) {
        const int n_chunks = 1 + (round * 7) % 97;
        atomic_int hits[97];
        long long sum[97];
        for (int c = 0; c < 97; c++) atomic_init(&hits[c], 0);
        job j = {hits, nth, 0, sleep_every, sum};
        sl_pool_run(p, work, &j, n_chunks);
        long long total = 0;
        for (int c = 0; c < n_chunks; c++) {
            CHECK_MSG(atomic_load(&hits[c]) == 1, "round %d chunk %d ran %d times", round, c,
                      atomic_load(&hits[c]));
            total += sum[c];
        }
        for (int c = n_chunks; c < 97; c++) CHECK(atomic_load(&hits[c]) == 0);
        CHECK(atomic_load(&j.bad_tid) == 0);
        CHECK(total == 100000LL * 99999LL / 2); /* sum of 0..99999 */
    }
    sl_pool_free(p);
}

TEST(one_thread) { run_jobs(1, 0); }
TEST(two_threads) { run_jobs(2, 0); }
TEST(four_threads_oversubscribed) { run_jobs(4, 0); }
TEST(sleeping_chunks_still_complete) { run_jobs(3, 5); }

/* One caller of a shared pool: 150 jobs of its own sizes; counts the jobs
 * in which a chunk ran other than once, a tid was out of range or the sum
 * was wrong. */
typedef struct caller {
    sl_pool *p;
    int nth, offset, bad;
} caller;

static void *caller_main(void *arg)
{
    caller *c = arg;
    for (int round = 0; round < 150; round++) {
        const int n_chunks = 2 + (round * 13 + c->offset) % 96;
        atomic_int hits[97];
        long long sum[97];
        for (int k = 0; k < 97; k++) atomic_init(&hits[k], 0);
        job j = {hits, c->nth, 0, 0, sum};
        sl_pool_run(c->p, work, &j, n_chunks);
        long long total = 0;
        int wrong = atomic_load(&j.bad_tid);
        for (int k = 0; k < 97; k++) {
            wrong |= atomic_load(&hits[k]) != (k < n_chunks);
            if (k < n_chunks) total += sum[k];
        }
        c->bad += wrong || total != 100000LL * 99999LL / 2;
    }
    return NULL;
}

TEST(three_callers_share_one_pool)
{
    enum { NC = 3, NTH = 3 };
    sl_pool *p;
    sl_err err;
    CHECK(sl_pool_create(&p, NTH, &err) == 0);
    caller cs[NC];
    pthread_t th[NC];
    int started = 0;
    for (int i = 0; i < NC; i++) {
        cs[i] = (caller){p, NTH, 31 * i, 0};
        if (pthread_create(&th[i], NULL, caller_main, &cs[i]) == 0) started++;
    }
    CHECK_EQ_INT(started, NC);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < started; i++) CHECK_MSG(cs[i].bad == 0, "caller %d: %d bad jobs", i, cs[i].bad);
    sl_pool_free(p);
}

TEST(split_range_covers_everything_once)
{
    for (int parts = 1; parts <= 9; parts++) {
        long long prev_hi = 0;
        for (int i = 0; i < parts; i++) {
            long long lo, hi;
            sl_split_range(1000, i, parts, &lo, &hi);
            CHECK(lo == prev_hi && hi >= lo);
            prev_hi = hi;
        }
        CHECK(prev_hi == 1000);
    }
}

/* Cores never outnumber CPUs; on Linux each counted core is a distinct
 * sibling group read from sysfs (checked here against the same files). */
TEST(core_count_is_within_the_cpu_count)
{
    const int cpus = sl_cpu_count(), cores = sl_cpu_core_count();
    CHECK(cores >= 1);
    CHECK(cores <= cpus);
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "r");
    if (f) {
        /* cpu0's siblings form one core: with n siblings listed "0-1" or "0,8"
         * the core count is at most cpus - (n - 1) */
        char buf[64] = {0};
        CHECK(fgets(buf, sizeof buf, f) != NULL);
        fclose(f);
        int extra = 0;
        for (char *p = buf; *p; p++) extra += *p == ',' || *p == '-';
        CHECK(cores <= cpus - extra || extra == 0);
    }
}

TEST(bad_thread_counts_are_refused)
{
    sl_pool *p;
    sl_err err;
    CHECK(sl_pool_create(&p, 0, &err) == SL_EINVAL);
    CHECK(sl_pool_create(&p, 5000, &err) == SL_EINVAL);
}

int main(void)
{
    RUN(one_thread);
    RUN(two_threads);
    RUN(four_threads_oversubscribed);
    RUN(sleeping_chunks_still_complete);
    RUN(three_callers_share_one_pool);
    RUN(split_range_covers_everything_once);
    RUN(core_count_is_within_the_cpu_count);
    RUN(bad_thread_counts_are_refused);
    return TEST_REPORT();
}
