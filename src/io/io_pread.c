/* io_pread.c - the pread-lane backend: one thread per lane, one read at a time.
 *
 * Owns: the lane loop "take a request, pread its window (retrying through
 * io_op), post the completion". Each lane has its own descriptors, so lanes
 * never share a file position or a lock below the queue. Must not know about
 * io_uring or about what the bytes are. */
#include "io/io_internal.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

void sl_io_read_now(io_lane *ln, io_op *op, const io_item *it)
{
    uint64_t delay = 0;
    if (sl_io_op_begin(ln, op, it, &delay) == SL_OK) {
        if (delay) sleep_ns(delay);
        for (;;) {
            void *buf;
            size_t len;
            uint64_t off;
            sl_io_op_next(ln, op, &buf, &len, &off);
            ssize_t n = pread(op->fd, buf, len, (off_t)off);
            if (sl_io_op_account(ln, op, n < 0 ? -(int64_t)errno : (int64_t)n) != 1) break;
        }
    }
    sl_io_op_finish(ln, op);
    sl_io_lane_post(ln, &op->d);
}

static void *pread_lane_main(void *arg)
{
    io_lane *ln = arg;
    io_op op;
    io_item it;
    while (sl_io_lane_take(ln, &it, 1, true) == 1) sl_io_read_now(ln, &op, &it);
    return NULL;
}

const io_backend_ops sl_io_pread_ops = {
    .name = "pread",
    .lane_init = NULL,
    .lane_main = pread_lane_main,
    .lane_wake = NULL,
    .lane_fini = NULL,
};
