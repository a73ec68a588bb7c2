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

typedef struct mv_job {
    const sl_mat *mat;
    const void *act;
    float *y;
    float *tmp;
} mv_job;

static void mv_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    mv_job *j = ctx;
    long long lo, hi;
    sl_split_range(j->mat->rows, chunk, n_chunks, &lo, &hi);
    sl_matvec_rows(j->mat, j->act, j->y, lo, hi, j->tmp + (size_t)tid * (size_t)j->mat->cols);
}

int sl_kbench_matvec_gbs(sl_pool *pool, sl_type t, size_t bytes, int reps, double *gbs,
                         sl_err *err)
{
    return sl_kbench_matvec_layout_gbs(pool, t, false, bytes, reps, gbs, err);
}

int sl_kbench_matvec_layout_gbs(sl_pool *pool, sl_type t, bool x8, size_t bytes, int reps,
                                double *gbs, sl_err *err)
{
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
    uint8_t *w = malloc((size_t)rows * row_bytes);
    float *row = malloc(sizeof(float) * (size_t)cols);
    float *x = malloc(sizeof(float) * (size_t)cols);
    float *y = malloc(sizeof(float) * (size_t)rows);
    void *act = malloc(sl_matvec_act_bytes(t, cols) + 64);
    float *tmp = malloc(sizeof(float) * (size_t)cols * (size_t)sl_pool_size(pool));
    int rc = SL_OK;
    if (!w || !row || !x || !y || !act || !tmp) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory for a %zu-byte matrix", bytes);
        goto done;
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
    sl_mat mat = {.type = t, .rows = rows, .cols = cols, .row_bytes = row_bytes, .data = w};
    if (x8) { /* the engine's resident form: eight rows interleaved at load */
        uint8_t *scratch = malloc(8 * row_bytes);
        if (!scratch) {
            rc = sl_err_set(err, SL_ENOMEM, "out of memory for the x8 interleave");
            goto done;
        }
        sl_rp32_x8_interleave(t, w, rows, cols, row_bytes, scratch);
        free(scratch);
        mat.layout = SL_MAT_X8;
    }
    sl_matvec_prepare(&mat, x, act);
    mv_job j = {&mat, act, y, tmp};
    double best = 0.0;
    for (int r = 0; r < reps + 1; r++) {
        uint64_t t0 = sl_now_ns();
        sl_pool_run(pool, mv_worker, &j, 256);
        double g = (double)rows * (double)row_bytes / sl_ns_to_s(sl_now_ns() - t0) / 1e9;
        if (r > 0 && g > best) best = g; /* run 0 warms the pages */
    }
    *gbs = best;
done:
    free(w);
    free(row);
    free(x);
    free(y);
    free(act);
    free(tmp);
    return rc;
}
