/* bench_vecdot.c - GB/s of weight bytes of the dot kernels, per type.
 *
 * For each weight type with a kernel and each instruction set the CPU runs
 * (scalar, avx2): a matrix-vector product row by row (one vec_dot per row,
 * the way ops/matvec uses them) over
 *   - an in-cache matrix (~1 MiB of weights, repeated), the kernel's own
 *     speed, and
 *   - a matrix of --mib MiB (default 256), larger than every cache: what
 *     memory lets the kernel reach;
 * on one thread, and the large matrix on --threads threads (default 2,
 * rows split in halves) next to a read-bandwidth roofline measured the same
 * way (a plain sum over the same number of bytes). "% roof" is the best of
 * --reps paired runs of (roofline, kernel), each pair back to back so that
 * both see the same machine load.
 *
 *   make bench && build/rel/bench/bench_vecdot [--mib N] [--threads T]
 *       [--types q4_K,q6_K,...] [--reps R]
 *
 * Prints one line per type; figures are GB/s (1e9 bytes/s) of weight bytes
 * read, best of --reps runs; one-thread figures use thread CPU time (robust
 * on a busy machine), --threads figures wall time. Not a test: nothing is
 * asserted. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quant/quant.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Single-thread runs are timed in thread CPU time: on a shared machine the
 * time this thread was descheduled is not the kernel's. Multi-thread runs
 * need the wall clock. */
static int g_clock = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct job {
    sl_vec_dot_fn dot;
    const uint8_t *w;
    size_t row_bytes;
    int64_t cols, r0, r1, reps;
    const void *act;
    float *out;
    /* roofline mode */
    const uint64_t *mem;
    size_t words;
    uint64_t sink;
} job;

static void *run_rows(void *p)
{
    job *j = p;
    for (int64_t k = 0; k < j->reps; k++)
        for (int64_t r = j->r0; r < j->r1; r++)
            j->dot(j->cols, &j->out[r], j->w + (size_t)r * j->row_bytes, j->act);
    return NULL;
}

/* Read roofline: a sum over the buffer with 32-byte loads when the CPU has
 * AVX2 (a scalar loop may not keep enough loads in flight to show the
 * memory's bandwidth), else 8-byte loads. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) static uint64_t sum_avx2(const uint64_t *p, size_t words)
{
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 16 <= words; i += 16) {
        a = _mm256_add_epi64(a, _mm256_loadu_si256((const __m256i *)(p + i)));
        b = _mm256_add_epi64(b, _mm256_loadu_si256((const __m256i *)(p + i + 4)));
        c = _mm256_add_epi64(c, _mm256_loadu_si256((const __m256i *)(p + i + 8)));
        d = _mm256_add_epi64(d, _mm256_loadu_si256((const __m256i *)(p + i + 12)));
    }
    a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *)out, a);
    return out[0] ^ out[1] ^ out[2] ^ out[3];
}
#define HAVE_SUM_AVX2 1
#endif

static void *run_read(void *p)
{
    job *j = p;
#ifdef HAVE_SUM_AVX2
    if (__builtin_cpu_supports("avx2")) {
        j->sink = sum_avx2(j->mem, j->words);
        return NULL;
    }
#endif
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i + 4 <= j->words; i += 4) {
        a += j->mem[i];
        b += j->mem[i + 1];
        c += j->mem[i + 2];
        d += j->mem[i + 3];
    }
    j->sink = a ^ b ^ c ^ d;
    return NULL;
}

/* Runs nt jobs (splitting rows [0, rows)) and returns seconds taken. */
static double timed_rows(job base, int64_t rows, int nt)
{
    pthread_t th[16];
    job js[16];
    g_clock = nt == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
    double t0 = now();
    for (int k = 0; k < nt; k++) {
        js[k] = base;
        js[k].r0 = rows * k / nt;
        js[k].r1 = rows * (k + 1) / nt;
        if (k > 0) pthread_create(&th[k], NULL, run_rows, &js[k]);
    }
    run_rows(&js[0]);
    for (int k = 1; k < nt; k++) pthread_join(th[k], NULL);
    return now() - t0;
}

static double read_bw(const uint8_t *mem, size_t bytes, int nt, int reps)
{
    double best = 0;
    for (int r = 0; r < reps; r++) {
        pthread_t th[16];
        job js[16];
        size_t words = bytes / 8;
        g_clock = nt == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
        double t0 = now();
        for (int k = 0; k < nt; k++) {
            memset(&js[k], 0, sizeof js[k]);
            js[k].mem = (const uint64_t *)mem + words * (size_t)k / (size_t)nt;
            js[k].words = words / (size_t)nt;
            if (k > 0) pthread_create(&th[k], NULL, run_read, &js[k]);
        }
        run_read(&js[0]);
        for (int k = 1; k < nt; k++) pthread_join(th[k], NULL);
        double gbs = (double)bytes / (now() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

int main(int argc, char **argv)
{
    int64_t mib = 256;
    int threads = 2, reps = 3;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--types") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--mib N] [--threads T] [--types a,b] [--reps R]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 1) threads = 1;
    if (threads > 16) threads = 16;
    sl_quant_init();

    const int64_t cols = 4096;
    size_t big_bytes = (size_t)mib << 20;
    uint8_t *big = malloc(big_bytes);
    float *x = malloc(sizeof(float) * (size_t)cols);
    float *rowf = malloc(sizeof(float) * (size_t)cols);
    void *act = malloc((size_t)cols * 4 + 4096);
    float *out = malloc(sizeof(float) * (big_bytes / 1024 + 1024));
    if (!big || !x || !rowf || !act || !out) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (int64_t i = 0; i < cols; i++) x[i] = frand();
    memset(big, 1, big_bytes); /* touch every page once */

    double bw1 = read_bw(big, big_bytes, 1, reps), bwn = read_bw(big, big_bytes, threads, reps);
    printf("# cols %lld, large matrix %lld MiB, threads %d, best of %d\n", (long long)cols,
           (long long)mib, threads, reps);
    printf("# read bandwidth (sum of u64 over the large buffer): 1 thread %.2f GB/s, "
           "%d threads %.2f GB/s\n", bw1, threads, bwn);
    printf("%-8s %-6s %10s %10s %12s %8s\n", "type", "isa", "cache GB/s", "mem GB/s",
           "mem GB/s xT", "% roof");

    static const sl_type types[] = {SL_TYPE_Q4_0, SL_TYPE_Q4_1, SL_TYPE_Q5_0, SL_TYPE_Q5_1,
                                    SL_TYPE_Q8_0, SL_TYPE_Q2_K, SL_TYPE_Q3_K, SL_TYPE_Q4_K,
                                    SL_TYPE_Q5_K, SL_TYPE_Q6_K, SL_TYPE_IQ4_NL, SL_TYPE_IQ4_XS,
                                    SL_TYPE_MXFP4, SL_TYPE_F16, SL_TYPE_BF16, SL_TYPE_F32};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const sl_type_traits *tr = sl_type_get(types[k]);
        if (only) {
            const char *p = strstr(only, tr->name);
            size_t l = strlen(tr->name);
            if (!p || (p[l] && p[l] != ',')) continue;
        }
        uint64_t rb;
        if (!sl_type_nbytes(types[k], (uint64_t)cols, &rb)) continue;
        size_t row_bytes = (size_t)rb;
        int64_t big_rows = (int64_t)(big_bytes / row_bytes);
        int64_t small_rows = (int64_t)((1u << 20) / row_bytes);
        /* fill the large matrix with quantised random rows (one row
         * quantised, then copied with variation in the scales' low bytes
         * would bias nothing measurable; copying keeps set-up fast) */
        for (int64_t i = 0; i < cols; i++) rowf[i] = frand();
        uint8_t *row0 = malloc(row_bytes);
        tr->from_float(rowf, row0, cols);
        for (int64_t r = 0; r < big_rows; r++) memcpy(big + (size_t)r * row_bytes, row0, row_bytes);
        free(row0);
        const sl_type_traits *at = sl_type_get(tr->vec_dot_type);
        if (tr->vec_dot_type == SL_TYPE_F32) memcpy(act, x, sizeof(float) * (size_t)cols);
        else at->from_float(x, act, cols);

        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            sl_vec_dot_fn f = sl_quant_vec_dot_isa(types[k], (sl_isa)isa);
            if (!f) continue;
            job base = {.dot = f, .w = big, .row_bytes = row_bytes, .cols = cols, .act = act,
                        .out = out, .reps = 1};
            /* in cache: the first ~1 MiB of rows, repeated to ~64 MiB read */
            job cj = base;
            cj.reps = (int64_t)(64 << 20) / (int64_t)(small_rows * (int64_t)row_bytes) + 1;
            double tc = 1e30, tm = 1e30, tt = 1e30, best_ratio = 0.0;
            timed_rows(cj, small_rows, 1); /* warm */
            for (int r = 0; r < reps; r++) {
                double t = timed_rows(cj, small_rows, 1);
                if (t < tc) tc = t;
            }
            double bytes = (double)big_rows * (double)row_bytes;
            for (int r = 0; r < reps; r++) {
                double t = timed_rows(base, big_rows, 1);
                if (t < tm) tm = t;
                /* the roofline right before, so that both see the same
                 * machine load: the ratio is steadier than either figure */
                double roof = read_bw(big, (size_t)bytes, threads, 1);
                t = timed_rows(base, big_rows, threads);
                if (t < tt) tt = t;
                double ratio = bytes / t / 1e9 / roof;
                if (ratio > best_ratio) best_ratio = ratio;
            }
            double cache = (double)cj.reps * (double)small_rows * (double)row_bytes / tc / 1e9;
            double mem1 = bytes / tm / 1e9;
            double memn = bytes / tt / 1e9;
            printf("%-8s %-6s %10.2f %10.2f %12.2f %7.0f%%\n", tr->name, sl_isa_name((sl_isa)isa),
                   cache, mem1, memn, 100.0 * best_ratio);
            fflush(stdout);
        }
    }
    free(big);
    free(x);
    free(rowf);
    free(act);
    free(out);
    return 0;
}
