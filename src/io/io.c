/* io.c - the io handle: configuration, lanes' lifetime, the two queues.
 *
 * Owns: sl_io_open/close, submit/wait/poll and the rings between callers
 * and lanes. Must not know how a lane reads (io_pread.c, io_uring.c) or how
 * descriptors are opened (io_files.c). */
#include "io/io_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/timer.h"

const char *sl_io_backend_name(sl_io_backend b)
{
    return b == SL_IO_URING ? "io_uring" : sl_io_pread_ops.name; /* "overlapped" on Windows */
}

bool sl_io_window_for(uint32_t align, uint64_t offset, uint64_t len, sl_io_window *w)
{
    SL_ASSERT(align > 0 && (align & (align - 1)) == 0);
    uint64_t end, end_up;
    if (!sl_add_u64(offset, len, &end) || !sl_align_up_u64(end, align, &end_up))
        return false;
    w->offset = offset & ~(uint64_t)(align - 1);
    w->len = end_up - w->offset;
    w->inner = offset - w->offset;
    return true;
}

bool sl_io_window_at(const sl_io *io, uint64_t offset, uint64_t len, sl_io_window *w)
{
    return sl_io_window_for(io->info.align, offset, len, w);
}

uint64_t sl_io_window_cap(const sl_io *io, uint64_t len)
{
    /* A window starts at most align-1 bytes before the offset and ends at
     * most align-1 bytes after offset+len, and is a multiple of align:
     * align_up(len) + align bounds it. */
    uint64_t up, cap;
    if (!sl_align_up_u64(len, io->info.align, &up) || !sl_add_u64(up, io->info.align, &cap))
        return 0;
    return cap;
}

const sl_io_info *sl_io_get_info(const sl_io *io) { return &io->info; }

uint32_t sl_io_file_count(const sl_io *io) { return io->n_files; }

uint64_t sl_io_file_size(const sl_io *io, uint32_t i)
{
    return i < io->n_files ? io->files[i].size : 0;
}

/* ---- lifetime ------------------------------------------------------------ */

static int check_config(const sl_io_config *cfg, uint32_t n_paths, sl_err *err)
{
    if (cfg->lanes < 1 || cfg->lanes > SL_IO_MAX_LANES)
        return sl_err_set(err, SL_EINVAL, "io lanes must be 1..%u, got %u", SL_IO_MAX_LANES,
                          cfg->lanes);
    if (cfg->queue_depth > SL_IO_MAX_QD)
        return sl_err_set(err, SL_EINVAL, "io queue depth must be 1..%u, got %u", SL_IO_MAX_QD,
                          cfg->queue_depth);
    if (cfg->backend != SL_IO_PREAD && cfg->backend != SL_IO_URING)
        return sl_err_set(err, SL_EINVAL, "unknown io backend %d", (int)cfg->backend);
    if (n_paths == 0) return sl_err_set(err, SL_EINVAL, "io needs at least one file");
    if (cfg->max_inflight > (1u << 20))
        return sl_err_set(err, SL_EINVAL, "io max_inflight %u is too large (max %u)",
                          cfg->max_inflight, 1u << 20);
    return SL_OK;
}

static void stop_lanes(sl_io *io)
{
    pthread_mutex_lock(&io->mu);
    io->stop = true;
    pthread_cond_broadcast(&io->sq_cond);
    pthread_mutex_unlock(&io->mu);
    for (unsigned i = 0; i < io->info.lanes; i++) {
        io_lane *ln = &io->lanes[i];
        if (!ln->started) continue;
        if (io->ops->lane_wake) io->ops->lane_wake(ln);
        pthread_join(ln->thread, NULL);
        ln->started = false;
    }
}

static void fini_lanes(sl_io *io)
{
    if (!io->lanes) return;
    for (unsigned i = 0; i < io->info.lanes; i++) {
        if (io->ops && io->ops->lane_fini) io->ops->lane_fini(&io->lanes[i]);
        sl_io_lane_close_fds(io, &io->lanes[i]);
    }
}

/* Prepares every lane for ops; on failure undoes what it did. */
static int init_lanes(sl_io *io, const io_backend_ops *ops, char *reason, size_t cap)
{
    unsigned i;
    for (i = 0; i < io->info.lanes; i++)
        if (ops->lane_init && ops->lane_init(&io->lanes[i], reason, cap) < 0) break;
    if (i == io->info.lanes) return SL_OK;
    while (i-- > 0)
        if (ops->lane_fini) ops->lane_fini(&io->lanes[i]);
    return SL_EUNSUPPORTED;
}

static void choose_backend(sl_io *io)
{
    char reason[256] = "";
    io->ops = &sl_io_pread_ops;
    io->info.backend = SL_IO_PREAD;
    if (io->cfg.backend != SL_IO_URING) {
        init_lanes(io, io->ops, reason, sizeof reason); /* pread lanes cannot fail */
        return;
    }
#ifdef SL_HAVE_URING
    if (io->cfg.test_flags & SL_IO_TEST_REFUSE_URING) {
        snprintf(reason, sizeof reason, "io_uring_queue_init refused (test hook)");
    } else if (!sl_io_uring_allowed(reason, sizeof reason)) {
        /* the probe's reason: calling io_uring here would end the process */
    } else if (init_lanes(io, &sl_io_uring_ops, reason, sizeof reason) == SL_OK) {
        io->ops = &sl_io_uring_ops;
        io->info.backend = SL_IO_URING;
        return;
    }
#else
    snprintf(reason, sizeof reason, "this build has no liburing");
#endif
    io->info.uring_fell_back = true;
    snprintf(io->info.uring_reason, sizeof io->info.uring_reason,
             "%.200s; using pread lanes", reason);
    init_lanes(io, io->ops, reason, sizeof reason);
}

int sl_io_open(sl_io **out, const sl_io_config *cfg, const char *const *paths,
               uint32_t n_paths, sl_err *err)
{
    *out = NULL;
    int rc = check_config(cfg, n_paths, err);
    if (rc) return rc;
    sl_io *io = calloc(1, sizeof *io);
    if (!io) return sl_err_set(err, SL_ENOMEM, "out of memory for the io handle");
    io->cfg = *cfg;
    if (cfg->fault) {
        io->fault = *cfg->fault;
        io->has_fault = true;
        io->cfg.fault = &io->fault;
    }
    io->info.lanes = cfg->lanes;
    io->info.queue_depth = cfg->backend == SL_IO_URING && cfg->queue_depth ? cfg->queue_depth : 1;
    io->cap = cfg->max_inflight ? cfg->max_inflight : 4u * cfg->lanes * io->info.queue_depth;
    if (io->cap < 64) io->cap = 64;
    io->next_seq = 1;
    pthread_mutex_init(&io->mu, NULL);
    pthread_cond_init(&io->sq_cond, NULL);
    pthread_cond_init(&io->cq_cond, NULL);

    io->sq = calloc(io->cap, sizeof *io->sq);
    io->cq = calloc(io->cap, sizeof *io->cq);
    io->aq = calloc(io->cap, sizeof *io->aq);
    io->lanes = calloc(cfg->lanes, sizeof *io->lanes);
    if (!io->sq || !io->cq || !io->aq || !io->lanes) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory for io queues of %zu entries", io->cap);
        goto err;
    }
    rc = sl_io_files_open(io, paths, n_paths, err);
    if (rc) goto err;
    for (unsigned i = 0; i < cfg->lanes; i++) {
        io->lanes[i].io = io;
        io->lanes[i].id = i;
        rc = sl_io_lane_open_fds(io, &io->lanes[i], err);
        if (rc) goto err;
    }
    io->caller.io = io;
    io->caller.id = cfg->lanes;
    rc = sl_io_lane_open_fds(io, &io->caller, err);
    if (rc) goto err;
    choose_backend(io);
    for (unsigned i = 0; i < cfg->lanes; i++) {
        io_lane *ln = &io->lanes[i];
        int e = pthread_create(&ln->thread, NULL, io->ops->lane_main, ln);
        if (e) {
            rc = sl_err_set(err, SL_ENOMEM, "cannot start io lane %u: %s", i, strerror(e));
            goto err;
        }
        ln->started = true;
    }
    *out = io;
    return SL_OK;
err:
    sl_io_close(io);
    return rc;
}

void sl_io_files_close(sl_io *io)
{
    if (!io->files) return;
    for (uint32_t i = 0; i < io->n_files; i++) free(io->files[i].path);
    free(io->files);
    io->files = NULL;
    io->n_files = 0;
}

void sl_io_close(sl_io *io)
{
    if (!io) return;
    if (io->lanes) {
        if (io->ops) stop_lanes(io);
        fini_lanes(io);
    }
    if (io->caller.io) sl_io_lane_close_fds(io, &io->caller);
    sl_io_files_close(io);
    free(io->lanes);
    free(io->sq);
    free(io->aq);
    free(io->cq);
    pthread_cond_destroy(&io->cq_cond);
    pthread_cond_destroy(&io->sq_cond);
    pthread_mutex_destroy(&io->mu);
    free(io);
}

int sl_io_reopen(sl_io *io, sl_err *err)
{
    pthread_mutex_lock(&io->mu);
    uint64_t busy = io->outstanding;
    pthread_mutex_unlock(&io->mu);
    if (busy)
        return sl_err_set(err, SL_EINVAL,
                          "cannot reopen io descriptors with %llu requests outstanding",
                          (unsigned long long)busy);
    /* No request is outstanding, so no lane touches its descriptors until
     * the next submit, whose lock orders these writes before the reads. */
    for (unsigned i = 0; i < io->info.lanes; i++) {
        sl_io_lane_close_fds(io, &io->lanes[i]);
        int rc = sl_io_lane_open_fds(io, &io->lanes[i], err);
        if (rc) return rc;
    }
    sl_io_lane_close_fds(io, &io->caller);
    return sl_io_lane_open_fds(io, &io->caller, err);
}

/* ---- submission ------------------------------------------------------------ */

static int check_req(const sl_io *io, const sl_io_req *r, io_item *it, sl_err *err)
{
    if (r->file >= io->n_files)
        return sl_err_set(err, SL_EINVAL, "read names file %u but only %u are open", r->file,
                          io->n_files);
    const io_file *f = &io->files[r->file];
    uint64_t end;
    if (r->len == 0 || !sl_add_u64(r->offset, r->len, &end) || end > f->size)
        return sl_err_set(err, SL_EINVAL,
                          "read of %llu bytes at offset %llu is outside '%s' (%llu bytes)",
                          (unsigned long long)r->len, (unsigned long long)r->offset, f->path,
                          (unsigned long long)f->size);
    if (((uintptr_t)r->dst & (io->info.mem_align - 1)) != 0)
        return sl_err_set(err, SL_EINVAL,
                          "read destination %p is not aligned to %u bytes (direct I/O needs it)",
                          r->dst, io->info.mem_align);
    if (!sl_io_window_at(io, r->offset, r->len, &it->w))
        return sl_err_set(err, SL_EINVAL, "read window overflows");
    if (r->dst_cap < it->w.len)
        return sl_err_set(err, SL_EINVAL,
                          "read destination holds %llu bytes but the aligned window needs %llu",
                          (unsigned long long)r->dst_cap, (unsigned long long)it->w.len);
    uint64_t wend = it->w.offset + it->w.len;
    it->want = (wend > f->size ? f->size : wend) - it->w.offset;
    it->req = *r;
    return SL_OK;
}

int sl_io_submit_many(sl_io *io, const sl_io_req *reqs, size_t n, sl_err *err)
{
    if (n == 0) return SL_OK;
    /* All-or-nothing: check every request before queueing any. The checks
     * are cheap, so they run again under the lock to fill the items. */
    io_item tmp;
    for (size_t i = 0; i < n; i++) {
        int rc = check_req(io, &reqs[i], &tmp, err);
        if (rc) return rc;
    }
    uint64_t now = sl_now_ns();
    io_lane *wake[SL_IO_MAX_LANES];
    unsigned n_wake = 0;
    pthread_mutex_lock(&io->mu);
    if (io->outstanding + n > io->cap) {
        uint64_t o = io->outstanding;
        pthread_mutex_unlock(&io->mu);
        return sl_err_set(err, SL_EINVAL,
                          "too many reads outstanding (%llu + %zu > cap %zu); take completions first",
                          (unsigned long long)o, n, io->cap);
    }
    for (size_t i = 0; i < n; i++) {
        io_item *it = reqs[i].ahead ? &io->aq[(io->aq_head + io->aq_count++) % io->cap]
                                    : &io->sq[(io->sq_head + io->sq_count++) % io->cap];
        check_req(io, &reqs[i], it, NULL);
        it->seq = io->next_seq++;
        it->t_submit = now;
    }
    io->outstanding += n;
    io->stats.submitted += n;
    for (unsigned i = 0; i < io->info.lanes; i++)
        if (io->lanes[i].kwait_room) {
            io->lanes[i].kwait_room = false;
            wake[n_wake++] = &io->lanes[i];
        }
    if (n == 1) pthread_cond_signal(&io->sq_cond);
    else pthread_cond_broadcast(&io->sq_cond);
    pthread_mutex_unlock(&io->mu);
    for (unsigned i = 0; i < n_wake; i++) io->ops->lane_wake(wake[i]);
    return SL_OK;
}

int sl_io_submit(sl_io *io, const sl_io_req *req, sl_err *err)
{
    return sl_io_submit_many(io, req, 1, err);
}

/* ---- the read-ahead queue ------------------------------------------------------ */

/* Index (from aq_head) of the queued read ahead tagged tag, or -1. */
static long find_ahead(const sl_io *io, uint64_t tag)
{
    for (size_t i = 0; i < io->aq_count; i++)
        if (io->aq[(io->aq_head + i) % io->cap].req.tag == tag) return (long)i;
    return -1;
}

/* Removes entry i (from aq_head) of the read-ahead ring, keeping the order. */
static io_item remove_ahead(sl_io *io, size_t i)
{
    io_item it = io->aq[(io->aq_head + i) % io->cap];
    for (size_t j = i; j + 1 < io->aq_count; j++)
        io->aq[(io->aq_head + j) % io->cap] = io->aq[(io->aq_head + j + 1) % io->cap];
    io->aq_count--;
    return it;
}

int sl_io_promote(sl_io *io, uint64_t tag)
{
    pthread_mutex_lock(&io->mu);
    const long i = find_ahead(io, tag);
    if (i >= 0) {
        /* outstanding <= cap bounds the two queues together */
        io->sq[(io->sq_head + io->sq_count++) % io->cap] = remove_ahead(io, (size_t)i);
        pthread_cond_signal(&io->sq_cond);
    }
    pthread_mutex_unlock(&io->mu);
    return i >= 0;
}

int sl_io_cancel(sl_io *io, uint64_t tag)
{
    pthread_mutex_lock(&io->mu);
    const long i = find_ahead(io, tag);
    if (i >= 0) {
        const io_item it = remove_ahead(io, (size_t)i);
        sl_io_done *d = &io->cq[(io->cq_head + io->cq_count++) % io->cap];
        memset(d, 0, sizeof *d);
        d->tag = it.req.tag;
        d->status = SL_EINVAL;
        d->file = it.req.file;
        d->offset = it.req.offset;
        d->len = it.req.len;
        d->window_offset = it.w.offset;
        d->seq = it.seq;
        d->t_submit_ns = d->t_start_ns = d->t_end_ns = it.t_submit;
        d->cancelled = true;
        snprintf(d->err.msg, sizeof d->err.msg, "read ahead of %llu bytes at offset %llu "
                 "cancelled before it started", (unsigned long long)it.req.len,
                 (unsigned long long)it.req.offset);
        d->err.code = SL_EINVAL;
        io->stats.completed++;
        io->stats.cancelled++;
        pthread_cond_signal(&io->cq_cond);
    }
    pthread_mutex_unlock(&io->mu);
    return i >= 0;
}

/* ---- completions ------------------------------------------------------------ */

static size_t take_locked(sl_io *io, io_item *out, size_t max, bool ahead_ok);

static void pop_done(sl_io *io, sl_io_done *done)
{
    *done = io->cq[io->cq_head];
    io->cq_head = (io->cq_head + 1) % io->cap;
    io->cq_count--;
    io->outstanding--;
}

int sl_io_wait(sl_io *io, sl_io_done *done, sl_err *err)
{
    pthread_mutex_lock(&io->mu);
    while (io->cq_count == 0) {
        if (io->outstanding == 0) {
            pthread_mutex_unlock(&io->mu);
            return sl_err_set(err, SL_EINVAL, "waiting for a read but none is outstanding");
        }
        pthread_cond_wait(&io->cq_cond, &io->mu);
    }
    pop_done(io, done);
    pthread_mutex_unlock(&io->mu);
    return SL_OK;
}

int sl_io_wait_reading(sl_io *io, sl_io_done *done, sl_err *err)
{
    pthread_mutex_lock(&io->mu);
    while (io->cq_count == 0) {
        if (io->outstanding == 0) {
            pthread_mutex_unlock(&io->mu);
            return sl_err_set(err, SL_EINVAL, "waiting for a read but none is outstanding");
        }
        if (io->sq_count > 0 && !io->caller_busy && !io->stop) {
            io_item it;
            io_op op;
            take_locked(io, &it, 1, false);
            io->caller_busy = true;
            pthread_mutex_unlock(&io->mu);
            sl_io_read_now(&io->caller, &op, &it); /* posts under the lock */
            pthread_mutex_lock(&io->mu);
            io->caller_busy = false;
            continue;
        }
        pthread_cond_wait(&io->cq_cond, &io->mu);
    }
    pop_done(io, done);
    pthread_mutex_unlock(&io->mu);
    return SL_OK;
}

int sl_io_poll(sl_io *io, sl_io_done *done)
{
    pthread_mutex_lock(&io->mu);
    int got = io->cq_count > 0;
    if (got) pop_done(io, done);
    pthread_mutex_unlock(&io->mu);
    return got;
}

uint64_t sl_io_outstanding(sl_io *io)
{
    pthread_mutex_lock(&io->mu);
    uint64_t n = io->outstanding;
    pthread_mutex_unlock(&io->mu);
    return n;
}

void sl_io_get_stats(sl_io *io, sl_io_stats *st)
{
    pthread_mutex_lock(&io->mu);
    *st = io->stats;
    pthread_mutex_unlock(&io->mu);
}

/* ---- lane side --------------------------------------------------------------- */

/* Demand requests first; one read ahead only if allowed (an idle lane)
 * and no demand request is queued. */
static size_t take_locked(sl_io *io, io_item *out, size_t max, bool ahead_ok)
{
    size_t n = 0;
    while (n < max && io->sq_count > 0) {
        out[n++] = io->sq[io->sq_head];
        io->sq_head = (io->sq_head + 1) % io->cap;
        io->sq_count--;
    }
    if (n == 0 && max > 0 && ahead_ok && io->aq_count > 0) {
        out[n++] = io->aq[io->aq_head];
        io->aq_head = (io->aq_head + 1) % io->cap;
        io->aq_count--;
    }
    return n;
}

size_t sl_io_lane_take(io_lane *ln, io_item *out, size_t max, bool block)
{
    sl_io *io = ln->io;
    pthread_mutex_lock(&io->mu);
    while (block && io->sq_count == 0 && io->aq_count == 0 && !io->stop)
        pthread_cond_wait(&io->sq_cond, &io->mu);
    size_t n = io->stop ? 0 : take_locked(io, out, max, true);
    pthread_mutex_unlock(&io->mu);
    return n;
}

size_t sl_io_lane_take_or_mark(io_lane *ln, io_item *out, size_t max, bool *stop)
{
    sl_io *io = ln->io;
    pthread_mutex_lock(&io->mu);
    *stop = io->stop;
    size_t n = io->stop ? 0 : take_locked(io, out, max, false);
    ln->kwait_room = !io->stop && n < max; /* drained with room to spare */
    pthread_mutex_unlock(&io->mu);
    return n;
}

bool sl_io_stopping(sl_io *io)
{
    pthread_mutex_lock(&io->mu);
    bool s = io->stop;
    pthread_mutex_unlock(&io->mu);
    return s;
}

void sl_io_lane_post(io_lane *ln, const sl_io_done *d)
{
    sl_io *io = ln->io;
    pthread_mutex_lock(&io->mu);
    SL_ASSERT(io->cq_count < io->cap); /* submit keeps outstanding <= cap */
    io->cq[(io->cq_head + io->cq_count) % io->cap] = *d;
    io->cq_count++;
    io->stats.completed++;
    io->stats.retries += d->retries;
    if (d->status == SL_OK) io->stats.window_bytes += d->window_bytes;
    else io->stats.failed++;
    pthread_cond_signal(&io->cq_cond);
    pthread_mutex_unlock(&io->mu);
}
