/* io_internal.h - what the io core, its backends and the fault injector share.
 *
 * Owns: the layout of sl_io, of a lane and of one read in progress (io_op),
 * and the functions that move requests between the queues and the lanes.
 * Not part of the public API: only the files of src/io include it.
 *
 * Locking: one mutex (io->mu) guards both queues, the counters, `stop` and
 * each lane's `kwait_room`. Everything else in a lane belongs to its thread,
 * except `fds`, which the opener writes while no request is outstanding (the
 * queue mutex orders those writes before any lane reads them). */
#ifndef SL_IO_IO_INTERNAL_H
#define SL_IO_IO_INTERNAL_H

#include <pthread.h>

#include "io/io.h"

typedef struct io_file {
    char *path;
    uint64_t size;
} io_file;

/* A queued request with what submit computed for it. */
typedef struct io_item {
    sl_io_req req;
    uint64_t seq;
    uint64_t t_submit;
    sl_io_window w;
    uint64_t want;  /* bytes of the window inside the file (EOF-clamped) */
} io_item;

/* One read in progress inside a lane: a small state machine shared by the
 * backends so retry and fault rules are written once. */
typedef struct io_op {
    io_item it;
    int fd;
    uint64_t got;      /* window bytes known good, from the window start */
    uint64_t pos;      /* start (within window) of the raw read in flight */
    uint64_t len;      /* length of that raw read */
    uint32_t attempt;  /* raw reads issued so far */
    uint32_t stalls;   /* consecutive raw reads that added nothing */
    sl_io_done d;      /* the completion being built */
} io_op;

typedef struct io_lane {
    struct sl_io *io;
    unsigned id;
    int *fds;          /* one per file */
    pthread_t thread;
    bool started;
    bool kwait_room;   /* uring: sleeping in the kernel with room for more
                          requests; submit must wake it (guarded by io->mu) */
    void *backend;     /* backend-private state (the ring) */
} io_lane;

typedef struct io_backend_ops {
    const char *name;
    /* Prepares lane state before its thread starts; on failure writes a
     * reason and returns < 0 (the core may fall back to pread). */
    int (*lane_init)(io_lane *ln, char *reason, size_t cap);
    void *(*lane_main)(void *arg);
    /* Wakes a lane sleeping in the kernel (called without io->mu). */
    void (*lane_wake)(io_lane *ln);
    void (*lane_fini)(io_lane *ln);
} io_backend_ops;

struct sl_io {
    sl_io_config cfg;
    sl_io_fault fault;
    bool has_fault;
    sl_io_info info;
    uint32_t n_files;
    io_file *files;
    io_lane *lanes;
    const io_backend_ops *ops;

    pthread_mutex_t mu;
    pthread_cond_t sq_cond;  /* lanes wait here for requests */
    pthread_cond_t cq_cond;  /* callers wait here for completions */
    size_t cap;              /* max outstanding; both rings have this size */
    io_item *sq;             /* ring of queued demand requests */
    size_t sq_head, sq_count;
    io_item *aq;             /* ring of queued reads ahead (req.ahead) */
    size_t aq_head, aq_count;
    sl_io_done *cq;          /* ring of completions */
    size_t cq_head, cq_count;
    io_lane caller;          /* the descriptors a waiting caller reads with
                                (sl_io_wait_reading); its id is info.lanes */
    bool caller_busy;        /* a caller is reading with them */
    uint64_t outstanding;    /* submitted, completion not yet taken */
    uint64_t next_seq;
    bool stop;
    sl_io_stats stats;
};

extern const io_backend_ops sl_io_pread_ops;
#ifdef SL_HAVE_URING
extern const io_backend_ops sl_io_uring_ops;

/* Whether this process may call io_uring at all: false (with a reason)
 * when a probe process was ended by calling io_uring_setup or
 * io_uring_enter (a seccomp filter, as on Android). Probes once per process
 * (io_ring_probe.c, SL_HAVE_URING builds only); true when it cannot tell,
 * leaving the verdict to the ring's set-up. Thread-safe. */
bool sl_io_uring_allowed(char *reason, size_t cap);
#endif

/* --- queues (io.c) --- */

/* Takes up to max queued requests into out[]: demand requests first; only
 * when none is queued, one read ahead (the caller is an idle lane). If block
 * and none is queued, waits until one is or the handle stops. Returns how
 * many were taken; 0 with block set means "stop". */
size_t sl_io_lane_take(io_lane *ln, io_item *out, size_t max, bool block);

/* Uring lanes with reads in flight: takes up to max demand requests (no
 * read ahead: the lane is not idle) and, if that drained the queue with
 * room to spare, marks the lane kwait_room in the same critical section, so
 * the next submit wakes it. Returns 0 and leaves the mark clear when
 * stopping (*stop set). */
size_t sl_io_lane_take_or_mark(io_lane *ln, io_item *out, size_t max, bool *stop);

/* Publishes a finished read's completion and wakes a waiter. */
void sl_io_lane_post(io_lane *ln, const sl_io_done *d);

bool sl_io_stopping(sl_io *io);

/* Reads item it on lane ln from the calling thread, start to end, and posts
 * its completion (io_pread.c / io_win.c: the platform's blocking read). */
void sl_io_read_now(io_lane *ln, io_op *op, const io_item *it);

/* --- one read (io_op.c) --- */

/* Starts op for item on lane: fills the completion's fixed fields and the
 * start time. Returns SL_OK to go on, or < 0 if the read already failed
 * (injected EIO; op->d filled). *delay_ns: sleep this long before reading. */
int sl_io_op_begin(io_lane *ln, io_op *op, const io_item *it, uint64_t *delay_ns);

/* The next raw read to issue: into *buf, *len bytes at file offset *off. */
void sl_io_op_next(io_lane *ln, io_op *op, void **buf, size_t *len, uint64_t *off);

/* Accounts one raw read's result (bytes, or -errno). Returns 1 if another
 * raw read is needed, 0 when the window is complete, < 0 on failure (op->d
 * filled with status and message). */
int sl_io_op_account(io_lane *ln, io_op *op, int64_t res);

/* Stamps the end time and, after a buffered fallback read, drops the range
 * from the page cache. Call once before sl_io_lane_post. */
void sl_io_op_finish(io_lane *ln, io_op *op);

/* --- descriptors (io_files.c) --- */

/* Stats each path, chooses alignment and direct/buffered mode (probing
 * O_DIRECT), fills io->files and io->info. */
int sl_io_files_open(sl_io *io, const char *const *paths, uint32_t n, sl_err *err);
/* Frees io->files (their paths); the lanes' own descriptors are closed
 * before (io.c, the same on every platform). */
void sl_io_files_close(sl_io *io);

/* Opens / closes a lane's descriptors in the mode io->info says. */
int sl_io_lane_open_fds(sl_io *io, io_lane *ln, sl_err *err);
void sl_io_lane_close_fds(sl_io *io, io_lane *ln);

/* --- faults (io_fault.c) --- */

bool sl_io_fault_eio(const sl_io_fault *f, uint64_t seq);
/* The direct read of the open-time check (n bytes in buf) as the fault
 * says: changed bytes when f->corrupt_direct. */
void sl_io_fault_direct_check(const sl_io_fault *f, void *buf, int64_t n);
uint64_t sl_io_fault_delay_ns(const sl_io_fault *f, uint64_t seq);
/* Given a raw read that returned res >= 1 bytes into buf, maybe pretends it
 * returned fewer (scribbling over the rest). Returns the bytes to report. */
int64_t sl_io_fault_short(const sl_io_fault *f, uint64_t seq, uint32_t attempt,
                          void *buf, int64_t res);

#endif
