/* io_ring.c - the io_uring backend: one thread per lane, each driving its own
 * ring with up to queue_depth reads in flight.
 *
 * Owns: the ring of each lane, the lane loop (take requests while there is
 * room, submit, reap completions, re-issue short reads through io_op) and the
 * eventfd that lets a submitter wake a lane that sleeps in the kernel with
 * room for more requests. Every ring call happens on the lane's own thread.
 * Must not know what the bytes are. Compiled only with SL_HAVE_URING. */
#ifdef SL_HAVE_URING

#include "io/io_internal.h"

#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define EFD_TAG UINT64_MAX

typedef struct ring_lane {
    struct io_uring ring;
    bool ring_ok;
    int efd;
    uint64_t efd_buf;   /* destination of the armed eventfd read */
    bool efd_armed;
    unsigned qd;
    io_op *ops;         /* qd slots */
    unsigned *free_ids; /* stack of free slot ids */
    unsigned n_free;
    io_item *taken;     /* qd items, scratch for sl_io_lane_take */
} ring_lane;

static void ring_lane_fini(io_lane *ln)
{
    ring_lane *r = ln->backend;
    if (!r) return;
    if (r->ring_ok) io_uring_queue_exit(&r->ring);
    if (r->efd >= 0) close(r->efd);
    free(r->ops);
    free(r->free_ids);
    free(r->taken);
    free(r);
    ln->backend = NULL;
}

static int ring_lane_init(io_lane *ln, char *reason, size_t cap)
{
    ring_lane *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(reason, cap, "out of memory for an io_uring lane");
        return -1;
    }
    ln->backend = r;
    r->efd = -1;
    r->qd = ln->io->info.queue_depth;
    r->ops = calloc(r->qd, sizeof *r->ops);
    r->free_ids = calloc(r->qd, sizeof *r->free_ids);
    r->taken = calloc(r->qd, sizeof *r->taken);
    if (!r->ops || !r->free_ids || !r->taken) {
        snprintf(reason, cap, "out of memory for an io_uring lane");
        goto err;
    }
    for (unsigned i = 0; i < r->qd; i++) r->free_ids[i] = r->qd - 1 - i;
    r->n_free = r->qd;
    /* One entry more than the reads: the armed eventfd read. */
    int e = io_uring_queue_init(r->qd + 1, &r->ring, 0);
    if (e < 0) {
        snprintf(reason, cap, "io_uring_queue_init(%u) failed: %s", r->qd + 1, strerror(-e));
        goto err;
    }
    r->ring_ok = true;
    r->efd = eventfd(0, EFD_CLOEXEC);
    if (r->efd < 0) {
        snprintf(reason, cap, "eventfd failed: %s", strerror(errno));
        goto err;
    }
    return 0;
err:
    ring_lane_fini(ln);
    return -1;
}

static void ring_lane_wake(io_lane *ln)
{
    ring_lane *r = ln->backend;
    uint64_t one = 1;
    ssize_t n;
    do n = write(r->efd, &one, sizeof one); while (n < 0 && errno == EINTR);
}

static struct io_uring_sqe *get_sqe(ring_lane *r)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) {
        /* Cannot happen while in-flight <= entries, but stay correct. */
        io_uring_submit(&r->ring);
        sqe = io_uring_get_sqe(&r->ring);
    }
    SL_ASSERT(sqe != NULL);
    return sqe;
}

static void arm_efd(ring_lane *r)
{
    struct io_uring_sqe *sqe = get_sqe(r);
    io_uring_prep_read(sqe, r->efd, &r->efd_buf, sizeof r->efd_buf, 0);
    io_uring_sqe_set_data64(sqe, EFD_TAG);
    r->efd_armed = true;
}

static void prep_op(ring_lane *r, io_lane *ln, unsigned id)
{
    io_op *op = &r->ops[id];
    void *buf;
    size_t len;
    uint64_t off;
    sl_io_op_next(ln, op, &buf, &len, &off);
    struct io_uring_sqe *sqe = get_sqe(r);
    io_uring_prep_read(sqe, op->fd, buf, (unsigned)len, off);
    io_uring_sqe_set_data64(sqe, id);
}

static void finish_op(ring_lane *r, io_lane *ln, unsigned id)
{
    io_op *op = &r->ops[id];
    sl_io_op_finish(ln, op);
    sl_io_lane_post(ln, op);
    r->free_ids[r->n_free++] = id;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void start_items(ring_lane *r, io_lane *ln, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        SL_ASSERT(r->n_free > 0);
        unsigned id = r->free_ids[--r->n_free];
        uint64_t delay = 0;
        if (sl_io_op_begin(ln, &r->ops[id], &r->taken[i], &delay) != SL_OK) {
            finish_op(r, ln, id);
            continue;
        }
        if (delay) sleep_ns(delay);
        prep_op(r, ln, id);
    }
}

/* Submits what is prepared and, if wait, sleeps until one completion is
 * there: one system call for both, as a lane does on every read. */
static void submit_all(ring_lane *r, bool wait)
{
    for (;;) {
        int e = wait ? io_uring_submit_and_wait(&r->ring, 1) : io_uring_submit(&r->ring);
        if (e >= 0) return;
        /* A ring that refuses valid SQEs is a bug here. */
        SL_ASSERT(e == -EINTR || e == -EAGAIN || e == -EBUSY);
    }
}

static void reap(ring_lane *r, io_lane *ln)
{
    struct io_uring_cqe *cqe;
    int e;
    do e = io_uring_wait_cqe(&r->ring, &cqe); while (e == -EINTR);
    SL_ASSERT(e == 0);
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&r->ring, head, cqe) {
        uint64_t ud = io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        seen++;
        if (ud == EFD_TAG) {
            r->efd_armed = false;
            continue;
        }
        unsigned id = (unsigned)ud;
        if (sl_io_op_account(ln, &r->ops[id], res) == 1) prep_op(r, ln, id);
        else finish_op(r, ln, id);
    }
    io_uring_cq_advance(&r->ring, seen);
}

static void *ring_lane_main(void *arg)
{
    io_lane *ln = arg;
    ring_lane *r = ln->backend;
    bool stop = false;
    for (;;) {
        unsigned inflight = r->qd - r->n_free;
        if (!stop && inflight < r->qd) {
            size_t n;
            if (inflight == 0) {
                /* Nothing in flight: sleep on the queue, not in the ring. */
                n = sl_io_lane_take(ln, r->taken, r->qd, true);
                stop = n == 0;
            } else {
                n = sl_io_lane_take_or_mark(ln, r->taken, r->qd - inflight, &stop);
            }
            start_items(r, ln, n);
        }
        inflight = r->qd - r->n_free;
        /* The eventfd read wakes a lane that sleeps in the kernel with room
         * for more; a full lane (always, at queue depth 1) needs none. */
        if (!stop && !r->efd_armed && inflight > 0 && inflight < r->qd) arm_efd(r);
        if (stop && inflight == 0 && !r->efd_armed) break;
        bool wait = inflight > 0 || r->efd_armed;
        submit_all(r, wait);
        if (!wait) continue;
        reap(r, ln);
        if (!stop) stop = sl_io_stopping(ln->io);
    }
    return NULL;
}

const io_backend_ops sl_io_uring_ops = {
    .name = "io_uring",
    .lane_init = ring_lane_init,
    .lane_main = ring_lane_main,
    .lane_wake = ring_lane_wake,
    .lane_fini = ring_lane_fini,
};

#else
/* Without liburing this file is empty; keep ISO C happy. */
typedef int sl_io_ring_unused;
#endif
