/* fwd_mm.c - matrix products of the forward pass over the pool (see
 * fwd_mm.h). */
#include "engine/fwd_mm.h"

#include <string.h>
#include <time.h>

static sl_fwd_prof *g_prof;
static _Thread_local sl_fwd_hook *g_hook;

void sl_fwd_hook_set(sl_fwd_hook *h) { g_hook = h; }

/* Whether the hook's pre takes this call (fwd_mm.h). */
static bool hook_pre(const sl_session *s, const sl_mat *const *mats, int n_mats, int n)
{
    sl_fwd_hook *h = g_hook;
    if (!h || h->s != s || h->pre_used || h->n_pre != n_mats || h->n != n) return false;
    for (int i = 0; i < n_mats; i++)
        if (mats[i]->data != h->pre_data[i]) return false;
    return true;
}

const uint8_t *sl_fwd_form(const sl_session *s, int n)
{
    return s->mm_form && n == s->mm_form_n ? s->mm_form : NULL;
}

void sl_fwd_prof_set(sl_fwd_prof *p) { g_prof = p; }

sl_fwd_prof *sl_fwd_prof_get(void) { return g_prof; }

double sl_fwd_prof_now(const sl_fwd_prof *p)
{
    struct timespec t;
    clock_gettime(p->cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

size_t sl_fwd_act_stride(sl_type t, int64_t cols)
{
    return (sl_matvec_act_bytes(t, cols) + 63) & ~(size_t)63;
}

/* ---- preparing activations --------------------------------------------- */

static void prepare_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    (void)tid;
    const sl_prep *p = ctx;
    const int64_t cols = p->mat->cols;
    long long lo, hi;
    sl_split_range(p->n, chunk, n_chunks, &lo, &hi);
    for (long long t = lo; t < hi; t++) {
        const size_t i = (size_t)(p->idx ? p->idx[t] : t);
        float *x = p->x + i * p->ldx;
        if (p->gate && p->oai) sl_swiglu_oai(x, p->gate + i * p->ldx, cols);
        else if (p->gate) sl_swiglu(x, p->gate + i * p->ldx, cols);
        SL_ASSERT((i + 1) * p->stride <= p->cap);
        uint8_t *a = p->act + i * p->stride;
        sl_matvec_prepare(p->mat, x, a);
        p->acts[i] = a;
    }
}

void sl_fwd_prepare(sl_session *s, const sl_prep *p)
{
    SL_ASSERT(sl_matvec_act_bytes(p->mat->type, p->mat->cols) <= p->stride);
    /* a row takes about a microsecond: chunks of at least four rows */
    const int chunks = p->n < 8 ? 1 : p->n / 4 < 32 ? p->n / 4 : 32;
    sl_fwd_prof *prof = g_prof;
    const double t0 = prof ? sl_fwd_prof_now(prof) : 0.0;
    sl_pool_run(s->pool, prepare_worker, (void *)p, chunks);
    if (prof) prof->prepare[prof->phase] += sl_fwd_prof_now(prof) - t0;
}

/* ---- several products as one job --------------------------------------- */

typedef struct mm_job {
    sl_session *s;
    const sl_mm_item *items;
    int n_items;
    const int *c0; /* item i owns chunks [c0[i], c0[i + 1]) */
} mm_job;

/* Chunks for a product over `rows` weight rows: small enough that a
 * descheduled thread holds back little, large enough to amortise claiming. */
static int mm_chunks(int64_t rows)
{
    int64_t c = rows / 32;
    return (int)(c < 1 ? 1 : c > 64 ? 64 : c);
}

static void mm_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    (void)n_chunks;
    const mm_job *j = ctx;
    /* the last item whose first chunk is <= chunk: the owner (items without
     * work own no chunk, so they share their c0 with the next item) */
    int lo = 0, hi = j->n_items - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (j->c0[mid] <= chunk) lo = mid;
        else hi = mid - 1;
    }
    const sl_mm_item *it = &j->items[lo];
    long long r0, r1;
    if (it->mat->layout == SL_MAT_X8) {
        /* whole groups of eight rows: a share that cut an interleaved group
         * would take the cut rows one at a time, each copied back to the
         * plain layout first (ops/matmul.c; the same bits, far slower) */
        sl_split_range((it->mat->rows + 7) / 8, chunk - j->c0[lo], j->c0[lo + 1] - j->c0[lo],
                       &r0, &r1);
        r0 *= 8;
        r1 = r1 * 8 < it->mat->rows ? r1 * 8 : it->mat->rows;
    } else {
        sl_split_range(it->mat->rows, chunk - j->c0[lo], j->c0[lo + 1] - j->c0[lo], &r0, &r1);
    }
    float *tmp = j->s->row_tmp + (size_t)tid * j->s->row_tmp_stride;
    sl_matmul_rows_form(it->mat, it->acts, it->form, it->n, it->y, it->ldy, r0, r1, tmp);
}

/* Gives item i its first chunk in c0[i] and returns the total, each
 * product's chunks scaled by limit / total_wanted when the job would
 * exceed limit (every product with work keeps at least one chunk). */
static int assign_chunks(const sl_mm_item *items, int n_items, int *c0, long long wanted,
                         long long limit)
{
    int c = 0;
    for (int i = 0; i < n_items; i++) {
        c0[i] = c;
        if (items[i].n <= 0) continue;
        long long k = mm_chunks(items[i].mat->rows);
        if (wanted > limit) {
            k = k * limit / wanted;
            if (k < 1) k = 1;
        }
        c += (int)k;
    }
    c0[n_items] = c;
    return c;
}

void sl_fwd_mm_run(sl_session *s, const sl_mm_item *items, int n_items)
{
    SL_ASSERT(n_items >= 0 && n_items <= s->mm_cap);
    long long wanted = 0;
    for (int i = 0; i < n_items; i++)
        if (items[i].n > 0) wanted += mm_chunks(items[i].mat->rows);
    /* a batch touching thousands of experts would ask for more chunks than
     * a pool job holds; how rows are chunked never changes a result */
    int *c0 = s->mm_c0;
    const int c = assign_chunks(items, n_items, c0, wanted, SL_POOL_MAX_CHUNKS - n_items);
    mm_job j = {s, items, n_items, c0};
    sl_fwd_prof *prof = g_prof;
    const double t0 = prof ? sl_fwd_prof_now(prof) : 0.0;
    sl_pool_run(s->pool, mm_worker, &j, c);
    if (prof) {
        const bool expert = n_items > 0 && items[0].mat->n_experts > 1;
        (expert ? prof->mm_expert : prof->mm_dense)[prof->phase] += sl_fwd_prof_now(prof) - t0;
    }
}

void sl_fwd_mm_shared(sl_session *s, const sl_mat *const *mats, float *const *ys, int n_mats,
                      const float *x, int n)
{
    SL_ASSERT(n_mats >= 1 && n_mats <= 4);
    if (hook_pre(s, mats, n_mats, n)) { /* computed by the step for every member */
        for (int i = 0; i < n_mats; i++)
            memcpy(ys[i], g_hook->pre_src[i], sizeof(float) * (size_t)n * (size_t)mats[i]->rows);
        g_hook->pre_used = true;
        return;
    }
    bool done[4] = {false, false, false, false};
    /* one pass per distinct activation type among the matrices */
    for (int first = 0; first < n_mats; first++) {
        if (done[first]) continue;
        const sl_type at = sl_matvec_act_type(mats[first]->type);
        int64_t cols = mats[first]->cols;
        sl_prep p = {mats[first], (float *)x, (size_t)cols, NULL, NULL, n,
                     s->act, sl_fwd_act_stride(mats[first]->type, cols),
                     (size_t)s->n_batch_max * s->act_stride, s->acts, false};
        sl_fwd_prepare(s, &p);
        sl_mm_item items[4];
        int k = 0;
        for (int i = first; i < n_mats; i++) {
            if (done[i] || sl_matvec_act_type(mats[i]->type) != at) continue;
            SL_ASSERT(mats[i]->cols == cols);
            items[k++] = (sl_mm_item){mats[i], s->acts, n, ys[i], (size_t)mats[i]->rows,
                                      sl_fwd_form(s, n)};
            done[i] = true;
        }
        sl_fwd_mm_run(s, items, k);
    }
}

sl_mat sl_fwd_mat(const sl_tensor *t)
{
    sl_mat m = {.type = t->type, .rows = (int64_t)t->ne[1], .cols = (int64_t)t->ne[0],
                .row_bytes = (size_t)t->row_bytes, .data = t->data, .layout = t->layout,
                .iq_panel = t->iq_panel, .f32_vtail = t->f32_vtail};
    return m;
}

void sl_fwd_mm_tensor(sl_session *s, const sl_tensor *t, const float *x, int n, float *y)
{
    sl_fwd_hook *h = g_hook;
    if (h && h->s == s && h->def_data && !h->def_used && t->data == h->def_data && h->n == n &&
        (int64_t)t->ne[0] == h->def_cols) { /* the step computes y for every member */
        memcpy(h->def_x, x, sizeof(float) * (size_t)n * (size_t)h->def_cols);
        h->def_used = true;
        return;
    }
    const sl_mat m = sl_fwd_mat(t);
    const sl_mat *mats[1] = {&m};
    float *ys[1] = {y};
    sl_fwd_mm_shared(s, mats, ys, 1, x, n);
}
