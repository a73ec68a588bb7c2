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
    sl_io_done *done;   /* finished reads not yet published (2 * qd) */
    unsigned n_done;
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
    free(r->done);
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
    r->done = calloc(2 * (size_t)r->qd, sizeof *r->done);
    if (!r->ops || !r->free_ids || !r->taken || !r->done) {
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

static void publish_done(ring_lane *r, io_lane *ln)
{
    for (unsigned i = 0; i < r->n_done; i++) sl_io_lane_post(ln, &r->done[i]);
    r->n_done = 0;
}

/* Moves a finished read's completion aside and frees its slot at once, so
 * the slot can carry the next request before the completion is published
 * (publishing wakes the consumer, which may take this CPU for a while). */
static void finish_op(ring_lane *r, io_lane *ln, unsigned id)
{
    io_op *op = &r->ops[id];
    sl_io_op_finish(ln, op);
    if (r->n_done == 2 * r->qd) publish_done(r, ln); /* many failed at once */
    r->done[r->n_done++] = op->d;
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

/* Takes new requests into free slots. Never sleeps on the queue while
 * completions wait to be published: their consumer may be the submitter we
 * would be waiting for. Leaves the lane marked for an eventfd wake-up when
 * it has room and the queue is empty. */
static void take_new(ring_lane *r, io_lane *ln, bool *stop)
{
    if (*stop || r->n_free == 0) return;
    if (r->n_free == r->qd) {
        size_t n = sl_io_lane_take(ln, r->taken, r->qd, false);
        if (n == 0) {
            publish_done(r, ln);
            /* Nothing in flight: sleep on the queue, not in the ring. */
            n = sl_io_lane_take(ln, r->taken, r->qd, true);
            *stop = n == 0;
        }
        start_items(r, ln, n);
        /* All failed at once (nothing in flight): go round again. */
        if (*stop || r->n_free == 0 || r->n_free == r->qd) return;
    }
    size_t n = sl_io_lane_take_or_mark(ln, r->taken, r->n_free, stop);
    start_items(r, ln, n);
}

static void *ring_lane_main(void *arg)
{
    io_lane *ln = arg;
    ring_lane *r = ln->backend;
    bool stop = false;
    for (;;) {
        take_new(r, ln, &stop);
        unsigned inflight = r->qd - r->n_free;
        /* The eventfd read wakes a lane that sleeps in the kernel with room
         * for more; a full lane (always, at queue depth 1) needs none. */
        if (!stop && !r->efd_armed && inflight > 0 && inflight < r->qd) arm_efd(r);
        /* Sleep in the ring only for reads in flight, or, when stopping, for
         * the armed eventfd read (close writes the eventfd after setting
         * stop, so it completes). With nothing in flight the next request
         * arrives through the queue instead. */
        bool wait = inflight > 0 || (stop && r->efd_armed);
        if (r->n_done) {
            /* The device gets its next reads before the consumer is woken. */
            submit_all(r, false);
            publish_done(r, ln);
        } else {
            if (stop && !wait) break;
            submit_all(r, wait);
        }
        if (wait) {
            reap(r, ln);
            if (!stop) stop = sl_io_stopping(ln->io);
        }
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
