/* io_bulk.c - many file ranges read in place into one buffer (io.h, "bulk
 * reads"): the resident weights of a model at the drive's speed.
 *
 * A run is a stretch of one file holding ranges no more than SL_IO_BULK_GAP
 * apart, widened to the alignment at both ends; it lands in the buffer at
 * an aligned offset, byte for byte as in the file, so each range's bytes
 * are at run start + (offset - run's file start). Reads are cut at the
 * buffer's 2 MiB boundaries, so each one fills part of a single huge page. */
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "util/checked.h"

#define CHUNK (2u * 1024u * 1024u)

typedef struct key {
    uint32_t file;
    uint64_t offset;
    size_t i;
} key;

static int by_place(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The ranges' indices in (file, offset) order, malloc'ed. */
static size_t *sorted(const sl_io_range *r, size_t n)
{
    key *k = malloc(sizeof *k * (n ? n : 1));
    size_t *ix = malloc(sizeof *ix * (n ? n : 1));
    if (!k || !ix) {
        free(k);
        free(ix);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) k[i] = (key){r[i].file, r[i].offset, i};
    qsort(k, n, sizeof *k, by_place);
    for (size_t i = 0; i < n; i++) ix[i] = k[i].i;
    free(k);
    return ix;
}

static uint64_t down(uint64_t v, uint64_t a) { return v & ~(a - 1); }

int sl_io_bulk_plan(sl_io_range *r, size_t n, uint32_t align, uint64_t *bytes, sl_err *err)
{
    *bytes = 0;
    size_t *ix = sorted(r, n);
    if (!ix) return sl_err_set(err, SL_ENOMEM, "out of memory planning the weight reads");
    uint64_t at = 0; /* where the next run starts in the buffer */
    for (size_t i = 0; i < n;) {
        const sl_io_range *first = &r[ix[i]];
        const uint64_t start = down(first->offset, align);
        uint64_t end = 0;
        size_t j = i;
        for (; j < n; j++) {
            const sl_io_range *q = &r[ix[j]];
            uint64_t q_end, reach;
            if (!sl_add_u64(q->offset, q->len, &q_end) ||
                !sl_add_u64(end, SL_IO_BULK_GAP, &reach)) {
                free(ix);
                return sl_err_set(err, SL_ENOMEM, "a weight range overflows 64 bits");
            }
            if (j > i && (q->file != first->file || q->offset > reach)) break;
            r[ix[j]].at = at + (q->offset - start);
            if (q_end > end) end = q_end;
        }
        uint64_t end_al, span;
        if (!sl_align_up_u64(end, align, &end_al) || !sl_add_u64(at, end_al - start, &span)) {
            free(ix);
            return sl_err_set(err, SL_ENOMEM, "the weight reads overflow 64 bits");
        }
        at = span;
        i = j;
    }
    free(ix);
    *bytes = at;
    return SL_OK;
}

/* The reads in flight and what they have brought so far. */
typedef struct bulk {
    sl_io *io;
    uint64_t inflight, cap, done, total, window;
    int rc;
    sl_err first;
    sl_io_bulk_progress progress;
    void *ud;
} bulk;

/* Takes one completion (waits for it). */
static void reap(bulk *b)
{
    sl_io_done d;
    sl_err e;
    if (sl_io_wait(b->io, &d, &e)) { /* nothing outstanding: a bookkeeping slip */
        if (!b->rc) b->rc = e.code, b->first = e;
        b->inflight = 0;
        return;
    }
    b->inflight--;
    if (d.status != SL_OK) {
        if (!b->rc) b->rc = d.status, b->first = d.err;
        return;
    }
    b->done += d.window_bytes;
    b->window += d.window_bytes;
    if (b->progress) b->progress(b->ud, b->done, b->total);
}

/* Queues the read of file [off, off + len) into dst (room: cap bytes). */
static void issue(bulk *b, uint32_t file, uint64_t off, uint64_t len, uint8_t *dst, uint64_t cap)
{
    while (!b->rc && b->inflight >= b->cap) reap(b);
    if (b->rc) return;
    const sl_io_req q = {file, off, len, dst, cap, 0, false};
    sl_err e;
    if (sl_io_submit(b->io, &q, &e)) {
        b->rc = e.code;
        b->first = e;
        return;
    }
    b->inflight++;
}

int sl_io_bulk_read(sl_io *io, const sl_io_range *r, size_t n, void *buf, uint64_t bytes,
                    sl_io_bulk_progress progress, void *ud, uint64_t *read_bytes, sl_err *err)
{
    if (read_bytes) *read_bytes = 0;
    if (sl_io_outstanding(io))
        return sl_err_set(err, SL_EINVAL, "bulk read on an io handle with reads outstanding");
    const sl_io_info *info = sl_io_get_info(io);
    const uint64_t align = info->align;
    if (align > CHUNK || ((uintptr_t)buf & (info->mem_align - 1)))
        return sl_err_set(err, SL_EINVAL, "bulk read: buffer or alignment unusable (align %u)",
                          info->align);
    size_t *ix = sorted(r, n);
    if (!ix) return sl_err_set(err, SL_ENOMEM, "out of memory for the weight reads");
    bulk b = {.io = io, .cap = 2u * info->lanes * (info->queue_depth ? info->queue_depth : 1),
              .progress = progress, .ud = ud};
    uint8_t *base = buf;
    /* pass 0 counts the bytes (for progress), pass 1 reads them */
    for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < n && !b.rc;) {
        /* one run: same file, same distance between file and buffer */
        const sl_io_range *first = &r[ix[i]];
        const uint64_t delta = first->at - first->offset; /* wraps: only compared */
        uint64_t end = first->offset + first->len;
        size_t j = i + 1;
        for (; j < n; j++) {
            const sl_io_range *q = &r[ix[j]];
            if (q->file != first->file || q->at - q->offset != delta) break;
            if (q->offset + q->len > end) end = q->offset + q->len;
        }
        const uint64_t fsize = sl_io_file_size(io, first->file);
        const uint64_t f0 = down(first->offset, align);
        const uint64_t b0 = first->at - (first->offset - f0);
        const uint64_t f1 = end > fsize ? fsize : end;
        if (f1 < end || b0 + ((end - f0 + align - 1) & ~(align - 1)) > bytes) {
            b.rc = sl_err_set(&b.first, SL_EINVAL, "bulk read: a range lies outside its file "
                              "or the buffer");
            break;
        }
        if (pass == 0) {
            b.total += f1 - f0;
            i = j;
            continue;
        }
        for (uint64_t c = b0; c < b0 + (f1 - f0) && !b.rc;) {
            const uint64_t stop = down(c + CHUNK, CHUNK);
            const uint64_t c_end = stop < b0 + (f1 - f0) ? stop : b0 + (f1 - f0);
            const uint64_t room = (c_end - c + align - 1) & ~(align - 1);
            issue(&b, first->file, f0 + (c - b0), c_end - c, base + c, room);
            c = c_end;
        }
        i = j;
    }
    while (b.inflight > 0) reap(&b);
    free(ix);
    if (read_bytes) *read_bytes = b.window;
    if (b.rc) {
        *err = b.first;
        return b.rc;
    }
    return SL_OK;
}
