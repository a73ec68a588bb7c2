/* io_op.c - one read from start to completion, whatever the backend.
 *
 * Owns: turning a request's window into raw reads, the rules for short
 * reads (re-issue the rest; after a direct read, from the last aligned byte
 * so the retry is itself a valid direct read), EINTR/EAGAIN (re-issue), end
 * of file and errors (fail the request with a message), and applying the
 * fault injector to raw results. Must not know how raw reads are issued
 * (blocking pread or io_uring) or about queues. */
#include "io/io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "util/timer.h"

/* A raw read never asks for more than this (io_uring lengths are 32-bit and
 * Linux caps one read near 2 GiB); the remainder is read like a short read. */
#define RAW_MAX ((uint64_t)1 << 30)
/* Raw reads in a row that add no byte before the request is failed. */
#define MAX_STALLS 64

static void fail(io_lane *ln, io_op *op, int code, const char *why)
{
    const io_file *f = &ln->io->files[op->it.req.file];
    op->d.status = code;
    sl_err_set(&op->d.err, code, "read of %llu bytes at offset %llu in '%s' failed: %s",
               (unsigned long long)op->it.w.len, (unsigned long long)op->it.w.offset, f->path,
               why);
}

int sl_io_op_begin(io_lane *ln, io_op *op, const io_item *it, uint64_t *delay_ns)
{
    sl_io *io = ln->io;
    op->it = *it;
    op->fd = ln->fds[it->req.file];
    op->got = op->pos = op->len = 0;
    op->attempt = op->stalls = 0;
    memset(&op->d, 0, sizeof op->d);
    op->d.tag = it->req.tag;
    op->d.status = SL_OK;
    op->d.file = it->req.file;
    op->d.offset = it->req.offset;
    op->d.len = it->req.len;
    op->d.data = (unsigned char *)it->req.dst + it->w.inner;
    op->d.window_offset = it->w.offset;
    op->d.lane = ln->id;
    op->d.seq = it->seq;
    op->d.t_submit_ns = it->t_submit;
    op->d.t_start_ns = sl_now_ns();
    *delay_ns = 0;
    if (io->has_fault) {
        if (sl_io_fault_eio(&io->fault, it->seq)) {
            fail(ln, op, SL_EIO, "Input/output error (injected)");
            return SL_EIO;
        }
        *delay_ns = sl_io_fault_delay_ns(&io->fault, it->seq);
    }
    return SL_OK;
}

void sl_io_op_next(io_lane *ln, io_op *op, void **buf, size_t *len, uint64_t *off)
{
    const sl_io_info *info = &ln->io->info;
    uint64_t pos, end;
    if (info->direct) {
        /* Direct reads must start and end on the alignment; the window
         * does, so re-read from the last aligned byte to the window end
         * (the kernel stops at end of file by itself). */
        pos = op->got & ~(uint64_t)(info->align - 1);
        end = op->it.w.len;
    } else {
        pos = op->got;
        end = op->it.want;
    }
    uint64_t n = end - pos;
    if (n > RAW_MAX) n = RAW_MAX;
    op->pos = pos;
    op->len = n;
    op->attempt++;
    *buf = (unsigned char *)op->it.req.dst + pos;
    *len = (size_t)n;
    *off = op->it.w.offset + pos;
}

int sl_io_op_account(io_lane *ln, io_op *op, int64_t res)
{
    sl_io *io = ln->io;
    if (res < 0) {
        int e = (int)-res;
        if (e != EINTR && e != EAGAIN) {
            fail(ln, op, SL_EIO, strerror(e));
            return SL_EIO;
        }
        res = 0; /* interrupted: counts as a raw read that added nothing */
    } else if (res == 0) {
        char why[160];
        snprintf(why, sizeof why, "file ended %llu bytes into the window, %llu bytes early "
                 "(did it shrink?)", (unsigned long long)op->pos,
                 (unsigned long long)(op->it.want - op->got));
        fail(ln, op, SL_EFORMAT, why);
        return SL_EFORMAT;
    } else if (io->has_fault) {
        res = sl_io_fault_short(&io->fault, op->it.seq, op->attempt - 1,
                                (unsigned char *)op->it.req.dst + op->pos, res);
    }
    uint64_t end = op->pos + (uint64_t)res;
    if (end > op->it.want) end = op->it.want;
    if (end > op->got) {
        op->got = end;
        op->stalls = 0;
    } else {
        op->stalls++;
    }
    if (op->got >= op->it.want) {
        op->d.window_bytes = op->it.want;
        return 0;
    }
    op->d.retries++;
    if (op->stalls > MAX_STALLS) {
        char why[96];
        snprintf(why, sizeof why, "no progress after %u retries", (unsigned)op->d.retries);
        fail(ln, op, SL_EIO, why);
        return SL_EIO;
    }
    return 1;
}

void sl_io_op_finish(io_lane *ln, io_op *op)
{
    op->d.t_end_ns = sl_now_ns();
    /* Buffered fallback: the bytes now live in the caller's buffer; keeping
     * them in the page cache too would double their memory. */
#if defined(POSIX_FADV_DONTNEED) /* not on macOS: the pages stay until evicted */
    if (ln->io->info.direct_fell_back)
        posix_fadvise(op->fd, (off_t)op->it.w.offset, (off_t)op->it.want, POSIX_FADV_DONTNEED);
#else
    (void)ln;
#endif
}
