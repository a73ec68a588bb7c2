/* synth_stream.c - see synth_stream.h.
 *
 * Pipeline: the data of all tensors, in file order, is cut into chunks of
 * about CHUNK_ELEMS elements (whole rows). Chunk number s goes into ring
 * slot s % n_slots. Worker threads take chunk numbers in increasing order,
 * wait until their slot is free, fill it; the calling thread writes slots
 * strictly in chunk order. Chunk contents depend only on (config, tensor,
 * rows), so the bytes written never depend on the thread count or timing.
 * Memory: n_slots output buffers plus one f32 scratch per worker (a batch
 * of rows, see BATCH_ELEMS), plus the GGUF writer's two 8 MiB buffers.
 *
 * No deadlock: a worker holding chunk s may fill its slot once chunk
 * s - n_slots is written (s < written + n_slots). The writer waits for chunk
 * w = written, the lowest unwritten one, whose worker never waits since
 * w < written + n_slots; and no other chunk maps to that slot inside the
 * window, so nothing can take it first. */
#include "synth/synth_stream.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"

/* ~1 MB of f32 per chunk: large enough for efficient writes, small enough
 * that a few in flight cost nothing. */
#define CHUNK_ELEMS (1u << 18)

static uint64_t rows_per_chunk(const sl_synth_tensor *t)
{
    uint64_t r = CHUNK_ELEMS / t->ne[0];
    return r ? r : 1;
}

static uint64_t row_bytes(const sl_synth_tensor *t)
{
    uint64_t b = 0;
    SL_ASSERT(sl_type_nbytes(t->type, t->ne[0], &b));
    return b;
}

/* Converts n f32 values (whole rows) to t's type. */
static void encode(const sl_synth_tensor *t, const float *src, uint64_t n, void *dst)
{
    if (t->type == SL_TYPE_F32) {
        memcpy(dst, src, n * sizeof(float));
    } else if (t->type == SL_TYPE_I32) { /* a table of small integers */
        for (uint64_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)src[i];
    } else {
        /* The fast variant (F16 included: F16C where the CPU has it): one
         * candidate scale per group. Synthetic weights gain nothing from a
         * finer search, and the full one would make a 30B-shaped model take
         * ~10x longer. Same bytes on every machine. */
        SL_ASSERT(sl_quantize_fast(t->type, src, dst, (int64_t)n));
    }
}

/* ---- the pipeline -------------------------------------------------------- */

enum { SLOT_FREE = 0, SLOT_BUSY, SLOT_READY };

typedef struct slot {
    uint8_t *buf;
    size_t nbytes;
    uint64_t seq;
    int state;
} slot;

typedef struct pipe {
    const sl_synth_config *c;
    const sl_synth_tensor *t;
    size_t nt;
    /* next chunk to hand out */
    size_t cur_t;
    uint64_t cur_row;
    uint64_t next_seq;
    uint64_t written;        /* chunks written so far */
    slot *slots;
    unsigned n_slots;
    bool abort;
    pthread_mutex_t mu;
    pthread_cond_t cv_ready; /* a slot became READY (writer waits) */
    pthread_cond_t cv_free;  /* a slot became FREE (workers wait) */
    size_t scratch_elems;
} pipe_t;

/* Hands out the next chunk; false when all are out. Caller holds mu (or is
 * the only thread). */
static bool next_chunk(pipe_t *p, size_t *ti, uint64_t *row0, uint64_t *nrows)
{
    if (p->cur_t >= p->nt) return false;
    const sl_synth_tensor *t = &p->t[p->cur_t];
    uint64_t rows = sl_synth_tensor_rows(t), rpc = rows_per_chunk(t);
    *ti = p->cur_t;
    *row0 = p->cur_row;
    *nrows = rows - p->cur_row < rpc ? rows - p->cur_row : rpc;
    p->cur_row += *nrows;
    if (p->cur_row == rows) {
        p->cur_t++;
        p->cur_row = 0;
    }
    return true;
}

/* Rows generated and encoded at a time inside a chunk: about 64 KB of f32,
 * so the values are still in L1/L2 when the quantiser reads them (a whole
 * 1 MB chunk would round-trip through L3), and a multiple of four rows
 * (the vector generator's batch). Rows are whole blocks, so encoding a
 * chunk in pieces gives the same bytes as encoding it at once. */
#define BATCH_ELEMS (1u << 14)

static uint64_t rows_per_batch(const sl_synth_tensor *t)
{
    uint64_t batch = (BATCH_ELEMS / t->ne[0]) & ~(uint64_t)3;
    return batch < 4 ? 4 : batch;
}

static size_t fill_chunk(const pipe_t *p, size_t ti, uint64_t row0, uint64_t nrows,
                         float *scratch, uint8_t *out)
{
    const sl_synth_tensor *t = &p->t[ti];
    const uint64_t rb = row_bytes(t);
    const uint64_t batch = rows_per_batch(t);
    for (uint64_t r = 0; r < nrows; r += batch) {
        uint64_t m = nrows - r < batch ? nrows - r : batch;
        sl_synth_gen_rows(p->c, t, row0 + r, m, scratch);
        encode(t, scratch, m * t->ne[0], out + r * rb);
    }
    return (size_t)(nrows * rb);
}

static void *worker_main(void *arg)
{
    pipe_t *p = arg;
    float *scratch = malloc(p->scratch_elems * sizeof(float));
    pthread_mutex_lock(&p->mu);
    if (!scratch) {
        p->abort = true; /* the writer reports it */
        pthread_cond_broadcast(&p->cv_ready);
        pthread_cond_broadcast(&p->cv_free);
    }
    for (;;) {
        size_t ti;
        uint64_t row0, nrows;
        if (p->abort || !next_chunk(p, &ti, &row0, &nrows)) break;
        uint64_t seq = p->next_seq++;
        slot *s = &p->slots[seq % p->n_slots];
        /* Wait for the window, not merely a free slot: otherwise chunk
         * seq + n_slots could take the slot before chunk seq does. */
        while (seq >= p->written + p->n_slots && !p->abort)
            pthread_cond_wait(&p->cv_free, &p->mu);
        if (p->abort) break;
        s->state = SLOT_BUSY;
        s->seq = seq;
        pthread_mutex_unlock(&p->mu);
        size_t nb = fill_chunk(p, ti, row0, nrows, scratch, s->buf);
        pthread_mutex_lock(&p->mu);
        s->nbytes = nb;
        s->state = SLOT_READY;
        pthread_cond_broadcast(&p->cv_ready);
    }
    pthread_mutex_unlock(&p->mu);
    free(scratch);
    return NULL;
}

typedef struct sink {
    sl_gguf_writer *w;
    uint64_t done, total;
    sl_synth_progress_fn progress;
    void *ud;
} sink;

static int sink_write(sink *k, const void *buf, size_t n, sl_err *err)
{
    int rc = sl_gguf_writer_write(k->w, buf, n, err);
    if (rc) return rc;
    k->done += n;
    if (k->progress && k->progress(k->ud, k->done, k->total))
        return sl_err_set(err, SL_EINVAL, "cancelled");
    return SL_OK;
}

static int run_inline(pipe_t *p, sink *k, sl_err *err)
{
    float *scratch = malloc(p->scratch_elems * sizeof(float));
    uint8_t *out = p->slots[0].buf;
    if (!scratch) return sl_err_set(err, SL_ENOMEM, "out of memory for the generator scratch");
    int rc = SL_OK;
    size_t ti;
    uint64_t row0, nrows;
    while (!rc && next_chunk(p, &ti, &row0, &nrows)) {
        size_t nb = fill_chunk(p, ti, row0, nrows, scratch, out);
        rc = sink_write(k, out, nb, err);
    }
    free(scratch);
    return rc;
}

static int run_threads(pipe_t *p, sink *k, uint64_t n_chunks, sl_err *err)
{
    unsigned nw = p->c->threads;
    pthread_t *th = calloc(nw, sizeof *th);
    if (!th) return sl_err_set(err, SL_ENOMEM, "out of memory for generator threads");
    unsigned started = 0;
    int rc = SL_OK;
    for (; started < nw; started++) {
        if (pthread_create(&th[started], NULL, worker_main, p)) {
            rc = sl_err_set(err, SL_ENOMEM, "cannot start generator thread %u", started);
            break;
        }
    }
    for (uint64_t seq = 0; !rc && seq < n_chunks; seq++) {
        slot *s = &p->slots[seq % p->n_slots];
        pthread_mutex_lock(&p->mu);
        while (!(s->state == SLOT_READY && s->seq == seq) && !p->abort)
            pthread_cond_wait(&p->cv_ready, &p->mu);
        bool aborted = p->abort;
        pthread_mutex_unlock(&p->mu);
        if (aborted) {
            rc = sl_err_set(err, SL_ENOMEM, "out of memory in a generator thread");
            break;
        }
        rc = sink_write(k, s->buf, s->nbytes, err);
        pthread_mutex_lock(&p->mu);
        s->state = SLOT_FREE;
        p->written = seq + 1;
        pthread_cond_broadcast(&p->cv_free);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    p->abort = true; /* normal end: workers found no more chunks anyway */
    pthread_cond_broadcast(&p->cv_free);
    pthread_cond_broadcast(&p->cv_ready);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(th);
    return rc;
}

int sl_synth_stream_measure(const sl_synth_tensor *t, size_t nt, sl_synth_stream_size *out,
                            sl_err *err)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < nt; i++) {
        const sl_type_traits *tr = sl_type_get(t[i].type);
        if (!tr || (t[i].type != SL_TYPE_F32 && t[i].type != SL_TYPE_F16 &&
                    t[i].type != SL_TYPE_I32 && !tr->from_float))
            return sl_err_set(err, SL_EUNSUPPORTED, "tensor '%s': no quantiser for type %s",
                              t[i].name, sl_type_name(t[i].type));
        uint64_t rows = sl_synth_tensor_rows(&t[i]), rpc = rows_per_chunk(&t[i]), nb;
        if (!sl_mul_u64(rows, row_bytes(&t[i]), &nb) ||
            !sl_add_u64(out->data_bytes, nb, &out->data_bytes))
            return sl_err_set(err, SL_EINVAL, "model size overflows");
        out->n_chunks += (rows + rpc - 1) / rpc;
        if (rpc * row_bytes(&t[i]) > out->max_out) out->max_out = (size_t)(rpc * row_bytes(&t[i]));
        uint64_t in_rows = rpc < rows_per_batch(&t[i]) ? rpc : rows_per_batch(&t[i]);
        if (in_rows * t[i].ne[0] > out->max_in) out->max_in = (size_t)(in_rows * t[i].ne[0]);
        if (t[i].fell_back) out->n_fallback++;
    }
    return SL_OK;
}

int sl_synth_stream_write(sl_gguf_writer *w, const sl_synth_config *g, const sl_synth_tensor *t,
                          size_t nt, const sl_synth_stream_size *sz,
                          sl_synth_progress_fn progress, void *progress_ud, sl_err *err)
{
    pipe_t p;
    memset(&p, 0, sizeof p);
    p.c = g;
    p.t = t;
    p.nt = nt;
    p.scratch_elems = sz->max_in;
    p.n_slots = g->threads > 1 ? 2 * g->threads + 2 : 1;
    int rc = SL_OK;
    p.slots = calloc(p.n_slots, sizeof *p.slots);
    for (unsigned i = 0; p.slots && i < p.n_slots; i++) {
        p.slots[i].buf = malloc(sz->max_out ? sz->max_out : 1);
        if (!p.slots[i].buf) rc = SL_ENOMEM;
    }
    if (!p.slots || rc) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory for generator buffers");
    } else {
        pthread_mutex_init(&p.mu, NULL);
        pthread_cond_init(&p.cv_ready, NULL);
        pthread_cond_init(&p.cv_free, NULL);
        sink k = {w, 0, sz->data_bytes, progress, progress_ud};
        rc = g->threads > 1 ? run_threads(&p, &k, sz->n_chunks, err) : run_inline(&p, &k, err);
        pthread_mutex_destroy(&p.mu);
        pthread_cond_destroy(&p.cv_ready);
        pthread_cond_destroy(&p.cv_free);
    }
    if (p.slots)
        for (unsigned i = 0; i < p.n_slots; i++) free(p.slots[i].buf);
    free(p.slots);
    return rc;
}
