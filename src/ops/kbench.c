/* kbench.c - see kbench.h. */
#include "ops/kbench.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "quant/vec_dot_rp.h"
#include "util/timer.h"

typedef struct mem_job {
    uint8_t *dst;
    const uint8_t *src;
    size_t bytes;
    double sums[64];
} mem_job;

static void copy_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    mem_job *j = ctx;
    long long lo, hi;
    sl_split_range((long long)(j->bytes / 64), chunk, n_chunks, &lo, &hi);
    memcpy(j->dst + lo * 64, j->src + lo * 64, (size_t)(hi - lo) * 64);
}

static void read_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    mem_job *j = ctx;
    long long lo, hi;
    sl_split_range((long long)(j->bytes / sizeof(uint64_t)), chunk, n_chunks, &lo, &hi);
    const uint64_t *p = (const uint64_t *)j->src;
    uint64_t a = 0, b = 0, c = 0, d = 0;
    long long i = lo;
    for (; i + 4 <= hi; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    for (; i < hi; i++) a += p[i];
    if (chunk < 64) j->sums[chunk] = (double)(a + b + c + d);
}

static double best_of(sl_pool *pool, sl_pool_fn fn, mem_job *j, int reps, double bytes_moved)
{
    double best = 0.0;
    for (int r = 0; r < reps; r++) {
        uint64_t t0 = sl_now_ns();
        sl_pool_run(pool, fn, j, 64);
        double gbs = bytes_moved / sl_ns_to_s(sl_now_ns() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

double sl_kbench_copy_gbs(sl_pool *pool, size_t bytes, int reps)
{
    mem_job j = {.bytes = bytes & ~(size_t)63};
    j.dst = malloc(j.bytes);
    uint8_t *src = malloc(j.bytes);
    if (!j.dst || !src) {
        free(j.dst);
        free(src);
        return 0.0;
    }
    memset(src, 1, j.bytes);
    memset(j.dst, 0, j.bytes);
    j.src = src;
    double g = best_of(pool, copy_worker, &j, reps, 2.0 * (double)j.bytes);
    free(j.dst);
    free(src);
    return g;
}

double sl_kbench_read_gbs(sl_pool *pool, size_t bytes, int reps)
{
    mem_job j = {.bytes = bytes & ~(size_t)63};
    uint8_t *src = malloc(j.bytes);
    if (!src) return 0.0;
    memset(src, 1, j.bytes);
    j.src = src;
    double g = best_of(pool, read_worker, &j, reps, (double)j.bytes);
    free(src);
    return g;
}

struct sl_kbench_item {
    /* matvec: the matrix (mat.data owned) and its prepared activation */
    sl_mat mat;
    void *act;
    float *y;
    float *tmp; /* cols floats per thread */
    int n_threads;
    /* read sweep (mat.data NULL) */
    mem_job read;
};

/* rows in groups of eight (the x8 layout's unit, the rows8 kernels'): a
 * chunk never cuts a group, whatever the layout, so every type is timed on
 * its whole-group path */
static void item_mv_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    sl_kbench_item *it = ctx;
    long long lo, hi;
    sl_split_range((it->mat.rows + 7) / 8, chunk, n_chunks, &lo, &hi);
    lo *= 8;
    hi = hi * 8 < it->mat.rows ? hi * 8 : it->mat.rows;
    if (lo < hi)
        sl_matvec_rows(&it->mat, it->act, it->y, lo, hi,
                       it->tmp + (size_t)tid * (size_t)it->mat.cols);
}

int sl_kbench_item_matvec(sl_kbench_item **out, sl_type t, bool x8, size_t bytes, int n_threads,
                          sl_err *err)
{
    *out = NULL;
    const sl_type_traits *tr = sl_type_get(t);
    if (!tr || !tr->from_float)
        return sl_err_set(err, SL_EUNSUPPORTED, "type %s has no quantiser", sl_type_name(t));
    const int64_t cols = 4096;
    const size_t row_bytes = (size_t)cols / tr->block_size * tr->type_size;
    int64_t rows = (int64_t)(bytes / row_bytes) > 0 ? (int64_t)(bytes / row_bytes) : 1;
    if (x8) {
        rows = rows / 8 * 8;
        if (rows == 0 || !sl_rp32_x8_applies(t, rows))
            return sl_err_set(err, SL_EUNSUPPORTED, "type %s has no x8 layout",
                              sl_type_name(t));
    }
    if (n_threads < 1) n_threads = 1;
    sl_kbench_item *it = calloc(1, sizeof *it);
    uint8_t *w = malloc((size_t)rows * row_bytes);
    float *row = malloc(sizeof(float) * (size_t)cols);
    float *x = malloc(sizeof(float) * (size_t)cols);
    uint8_t *scratch = x8 ? malloc(8 * row_bytes) : NULL;
    if (it) {
        it->y = malloc(sizeof(float) * (size_t)rows);
        it->act = malloc(sl_matvec_act_bytes(t, cols) + 64);
        it->tmp = malloc(sizeof(float) * (size_t)cols * (size_t)n_threads);
    }
    if (!it || !w || !row || !x || (x8 && !scratch) || !it->y || !it->act || !it->tmp) {
        free(w);
        free(row);
        free(x);
        free(scratch);
        sl_kbench_item_free(it);
        return sl_err_set(err, SL_ENOMEM, "out of memory for a %zu-byte matrix", bytes);
    }
    uint64_t seed = 12345;
    for (int64_t i = 0; i < cols; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        row[i] = (float)((double)(seed >> 11) / 9007199254740992.0 - 0.5);
        x[i] = row[i] * 0.5f + 0.1f;
    }
    /* one quantised row replicated: contents do not change the speed */
    tr->from_float(row, w, cols);
    for (int64_t r = 1; r < rows; r++) memcpy(w + (size_t)r * row_bytes, w, row_bytes);
    it->mat = (sl_mat){.type = t, .rows = rows, .cols = cols, .row_bytes = row_bytes, .data = w};
    if (x8) { /* the engine's resident form: eight rows interleaved at load */
        sl_rp32_x8_interleave(t, w, rows, cols, row_bytes, scratch);
        it->mat.layout = SL_MAT_X8;
    }
    sl_matvec_prepare(&it->mat, x, it->act);
    it->n_threads = n_threads;
    free(scratch);
    free(row);
    free(x);
    *out = it;
    return SL_OK;
}

int sl_kbench_item_read(sl_kbench_item **out, size_t bytes, sl_err *err)
{
    *out = NULL;
    sl_kbench_item *it = calloc(1, sizeof *it);
    uint8_t *src = NULL;
    const size_t b = bytes & ~(size_t)63;
    if (it && b) src = malloc(b);
    if (!it || !src) {
        free(it);
        return sl_err_set(err, SL_ENOMEM, "out of memory for a %zu-byte buffer", bytes);
    }
    memset(src, 1, b);
    it->read.src = src;
    it->read.bytes = b;
    *out = it;
    return SL_OK;
}

double sl_kbench_item_run(sl_kbench_item *it, sl_pool *pool)
{
    if (!it->mat.data) {
        uint64_t t0 = sl_now_ns();
        sl_pool_run(pool, read_worker, &it->read, 64);
        return (double)it->read.bytes / sl_ns_to_s(sl_now_ns() - t0) / 1e9;
    }
    SL_ASSERT(sl_pool_size(pool) <= it->n_threads);
    /* 16 groups (128 rows) a chunk at least, at most 256 chunks */
    const long long groups = (it->mat.rows + 7) / 8;
    const int chunks = groups / 16 < 1 ? 1 : groups / 16 > 256 ? 256 : (int)(groups / 16);
    uint64_t t0 = sl_now_ns();
    sl_pool_run(pool, item_mv_worker, it, chunks);
    return (double)it->mat.rows * (double)it->mat.row_bytes / sl_ns_to_s(sl_now_ns() - t0) / 1e9;
}

const float *sl_kbench_item_y(const sl_kbench_item *it, long long *rows)
{
    *rows = it->mat.data ? it->mat.rows : 0;
    return it->mat.data ? it->y : NULL;
}

void sl_kbench_item_free(sl_kbench_item *it)
{
    if (!it) return;
    free((void *)it->mat.data);
    free(it->act);
    free(it->y);
    free(it->tmp);
    free((void *)it->read.src);
    free(it);
}

void sl_kbench_rounds(sl_pool *pool, sl_kbench_item *const *items, int n, int rounds,
                      double *gbs)
{
    for (int i = 0; i < n; i++) (void)sl_kbench_item_run(items[i], pool);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < n; k++) {
            const int i = r % 2 ? n - 1 - k : k;
            gbs[(size_t)r * (size_t)n + (size_t)i] = sl_kbench_item_run(items[i], pool);
        }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double sl_kbench_quantile(const double *v, int count, int stride, double q)
{
    if (count <= 0) return 0.0;
    double *s = malloc(sizeof(double) * (size_t)count);
    if (!s) return 0.0;
    for (int i = 0; i < count; i++) s[i] = v[(size_t)i * (size_t)stride];
    qsort(s, (size_t)count, sizeof(double), cmp_double);
    q = q < 0.0 ? 0.0 : q > 1.0 ? 1.0 : q;
    const double pos = q * (double)(count - 1);
    const int lo = (int)pos;
    const double f = pos - (double)lo;
    const double r = lo + 1 < count ? s[lo] + f * (s[lo + 1] - s[lo]) : s[lo];
    free(s);
    return r;
}

double sl_kbench_median(const double *v, int count, int stride)
{
    return sl_kbench_quantile(v, count, stride, 0.5);
}

int sl_kbench_matvec_gbs(sl_pool *pool, sl_type t, size_t bytes, int reps, double *gbs,
                         sl_err *err)
{
    return sl_kbench_matvec_layout_gbs(pool, t, false, bytes, reps, gbs, err);
}

int sl_kbench_matvec_layout_gbs(sl_pool *pool, sl_type t, bool x8, size_t bytes, int reps,
                                double *gbs, sl_err *err)
{
    sl_kbench_item *it;
    int rc = sl_kbench_item_matvec(&it, t, x8, bytes, sl_pool_size(pool), err);
    if (rc) return rc;
    double best = 0.0;
    for (int r = 0; r < reps + 1; r++) {
        const double g = sl_kbench_item_run(it, pool);
        if (r > 0 && g > best) best = g; /* run 0 warms the pages */
    }
    *gbs = best;
    sl_kbench_item_free(it);
    return SL_OK;
}
