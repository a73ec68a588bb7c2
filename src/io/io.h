/* io.h - the read path from model files to memory: lanes of positional reads.
 *
 * Owns: descriptors opened for reading (one per lane per file, O_DIRECT when
 * the filesystem allows it), the block alignment those reads need, the lanes
 * (worker threads, or io_uring rings driven by worker threads) and the queues
 * between the callers and the lanes. Used by `sluice iobench` and the expert
 * streamer, which both see the same backends.
 * Must not know: what the bytes mean (no GGUF, no experts, no layers).
 *
 * Model of use
 *
 *     sl_io_open(&io, &cfg, paths, n, err)        lanes start, files opened
 *     sl_io_submit(io, &req, err)                 any thread; never blocks
 *     sl_io_wait(io, &done, err) / sl_io_poll     any thread; one completion each
 *     sl_io_close(io)                             waits for reads in flight
 *
 * A request names (file index, offset, length, destination, tag). Direct I/O
 * needs the file offset, the length and the destination aligned, so the read
 * actually issued covers the *window*: [offset rounded down, offset+length
 * rounded up) to the alignment, clamped at end of file. The caller's
 * destination receives the whole window; the wanted bytes start `inner` bytes
 * into it:
 *
 *     file:   |....:....[####wanted####]....:....|
 *                  ^ window.offset (aligned)      ^ window end (aligned or EOF)
 *     dst:    [....:....[####wanted####]....]
 *             ^ dst     ^ dst + window.inner  (== done.data)
 *
 * sl_io_window_at() tells the window for a request before submitting it, and
 * sl_io_window_cap() the largest window any read of `len` bytes can need, so a
 * cache can size its slots once.
 *
 * Destination memory matters: on the virtual disk measured in docs/perf-log.md,
 * reads into transparent huge pages (madvise(MADV_HUGEPAGE) on a 2 MiB-aligned
 * arena, each destination inside one 2 MiB page) ran 2.1-2.3x faster than
 * into 4 KiB pages, fewer scatter-gather segments per read being the likely
 * reason. The io layer does not allocate destinations; callers should.
 *
 * Failures of a read (EIO, end of file reached early, O_DIRECT refusing a
 * read) are reported per request: the completion carries status != SL_OK and
 * a message; its bytes must not be used. Short reads and EINTR are retried
 * inside the lane and never surface.
 *
 * Thread safety: every function except open/close/reopen may be called from
 * any thread concurrently. Completions can arrive in any order; the tag is the
 * caller's way to match them. */
#ifndef SL_IO_IO_H
#define SL_IO_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef enum sl_io_backend {
    SL_IO_PREAD = 0, /* N threads, each blocking in pread on its own descriptor */
    SL_IO_URING = 1, /* N threads, each driving an io_uring of queue_depth reads */
} sl_io_backend;

/* Fault injection for tests, applied to the raw read step of either backend.
 * Every decision is a pure function of (seed, request sequence number, retry
 * attempt), so a test sees the same faults whichever lane runs a request.
 * Sequence numbers count submissions from 1 in submit order. */
typedef struct sl_io_fault {
    uint64_t seed;
    double short_p;      /* probability a raw read reports fewer bytes than it
                            read (the bytes past the cut are overwritten with
                            garbage, so only a correct retry yields exact data) */
    uint64_t eio_nth;    /* the request with this sequence number fails with
                            EIO (0: none) */
    double eio_p;        /* probability any request fails with EIO */
    double delay_p;      /* probability a request is delayed before its read */
    uint32_t delay_us_max; /* delay drawn uniformly in [0, delay_us_max] us */
    bool corrupt_direct;   /* the open-time check's direct read returns wrong
                              bytes (as some Android FUSE storage does under
                              O_DIRECT): the handle must fall back to buffered */
} sl_io_fault;

/* Test hooks that exercise fallback paths a given machine may not produce. */
enum {
    SL_IO_TEST_REFUSE_DIRECT = 1u << 0, /* act as if open(O_DIRECT) gave EINVAL */
    SL_IO_TEST_REFUSE_URING = 1u << 1,  /* act as if io_uring_queue_init failed */
};

typedef struct sl_io_config {
    sl_io_backend backend;  /* wanted backend; see sl_io_info for the one used */
    unsigned lanes;         /* 1..SL_IO_MAX_LANES */
    unsigned queue_depth;   /* reads in flight per io_uring lane (1..256);
                               pread lanes always have one; 0 means 1 */
    unsigned max_inflight;  /* cap on submitted-but-not-yet-reaped requests;
                               0 = max(64, 4 * lanes * queue_depth) */
    bool buffered;          /* caller's choice: plain buffered reads, page
                               cache kept (iobench --buffered). Not a fallback. */
    unsigned test_flags;    /* SL_IO_TEST_* */
    const sl_io_fault *fault; /* NULL: no faults. Copied at open. */
} sl_io_config;

#define SL_IO_MAX_LANES 64u
#define SL_IO_MAX_QD 256u

/* What the opened handle actually does; fixed at open (and reopen). */
typedef struct sl_io_info {
    sl_io_backend backend;   /* backend in use (pread if io_uring fell back) */
    unsigned lanes, queue_depth;
    bool direct;             /* O_DIRECT reads */
    bool direct_fell_back;   /* O_DIRECT was wanted but refused: buffered
                                reads + POSIX_FADV_DONTNEED after each read */
    bool uring_fell_back;    /* io_uring was wanted but could not start */
    uint32_t align;          /* file offset/length alignment of windows */
    uint32_t mem_align;      /* destination alignment required */
    char direct_reason[256]; /* why O_DIRECT fell back ("" if it did not) */
    char uring_reason[256];  /* why io_uring fell back ("" if it did not) */
} sl_io_info;

/* How this platform names direct reads in reports: the flag ("O_DIRECT";
 * Windows "FILE_FLAG_NO_BUFFERING") and the mode word ("direct"; Windows
 * "unbuffered"). Defined by io_files.c / io_win.c. */
extern const char sl_io_direct_flag[];
extern const char sl_io_direct_word[];

typedef struct sl_io_req {
    uint32_t file;     /* index into the paths given at open */
    uint64_t offset;   /* first wanted byte */
    uint64_t len;      /* wanted bytes, > 0 */
    void *dst;         /* receives the window; aligned to info.mem_align */
    uint64_t dst_cap;  /* bytes available at dst, >= window length */
    uint64_t tag;      /* returned untouched in the completion */
    bool ahead;        /* a read ahead of need (a guess, a warm-start preload):
                          queued apart and started only by a lane with
                          nothing else to do, after every queued demand
                          read; sl_io_promote makes it a demand read,
                          sl_io_cancel drops it while it is still queued */
} sl_io_req;

typedef struct sl_io_done {
    uint64_t tag;
    int status;            /* SL_OK, or SL_EIO / SL_EFORMAT with err filled */
    uint32_t file;
    uint64_t offset, len;  /* as requested */
    void *data;            /* req.dst + inner: the wanted bytes (status OK) */
    uint64_t window_offset;/* where the window starts in the file */
    uint64_t window_bytes; /* bytes of the window read from the file (the
                              aligned window, clamped at end of file) */
    uint32_t lane;         /* lane that served it */
    uint32_t retries;      /* re-issued raw reads (short reads, EINTR) */
    uint64_t seq;          /* submission sequence number, from 1 */
    uint64_t t_submit_ns;  /* sl_now_ns() at submit */
    uint64_t t_start_ns;   /* the lane issued the first raw read */
    uint64_t t_end_ns;     /* the last byte arrived (or the read failed) */
    sl_err err;            /* the failure, when status != SL_OK */
    bool cancelled;        /* dropped by sl_io_cancel before any lane started
                              it (status SL_EINVAL, nothing read) */
} sl_io_done;

typedef struct sl_io_window {
    uint64_t offset; /* aligned start in the file */
    uint64_t len;    /* aligned length (before clamping at end of file) */
    uint64_t inner;  /* wanted bytes start this far into the window */
} sl_io_window;

typedef struct sl_io_stats {
    uint64_t submitted, completed, failed;
    uint64_t window_bytes;  /* sum of done.window_bytes of successful reads */
    uint64_t retries;       /* sum of done.retries */
    uint64_t cancelled;     /* reads ahead dropped by sl_io_cancel */
} sl_io_stats;

typedef struct sl_io sl_io;

/* Opens each path once per lane and starts the lanes. O_DIRECT is tried
 * unless cfg->buffered; if the filesystem refuses it, reads fall back to
 * buffered + DONTNEED and info.direct_fell_back says so. If io_uring is asked
 * for but cannot start, pread lanes run instead and info.uring_fell_back says
 * so. Fails (SL_EIO/SL_EINVAL/SL_ENOMEM, err filled, *out NULL) if a file
 * cannot be opened, the config is out of range, or threads cannot start. */
int sl_io_open(sl_io **out, const sl_io_config *cfg, const char *const *paths,
               uint32_t n_paths, sl_err *err);

/* Stops the lanes after the reads already issued finish (queued requests
 * that no lane has started are dropped), closes the descriptors and frees
 * the handle. Destination buffers may be freed after it returns. NULL ok. */
void sl_io_close(sl_io *io);

/* The handle's actual mode (backend, direct or not, alignment). */
const sl_io_info *sl_io_get_info(const sl_io *io);

/* Size in bytes of file i (taken at open); 0 if i is out of range. */
uint64_t sl_io_file_size(const sl_io *io, uint32_t i);
uint32_t sl_io_file_count(const sl_io *io);

/* The window a read of [offset, offset+len) issues with alignment `align`
 * (a power of two). Pure arithmetic; false on overflow. */
bool sl_io_window_for(uint32_t align, uint64_t offset, uint64_t len, sl_io_window *w);

/* The window for this handle's alignment. */
bool sl_io_window_at(const sl_io *io, uint64_t offset, uint64_t len, sl_io_window *w);

/* Smallest destination size that holds the window of any read of len bytes
 * at any offset with this handle: align_up(len) + align. 0 on overflow. */
uint64_t sl_io_window_cap(const sl_io *io, uint64_t len);

/* Queues one read. Checks the request (file index, range inside the file,
 * destination alignment and capacity) and fails with SL_EINVAL naming the
 * problem, queueing nothing, if it is wrong or if max_inflight requests are
 * already outstanding. Never blocks on I/O. */
int sl_io_submit(sl_io *io, const sl_io_req *req, sl_err *err);

/* Queues n reads all-or-nothing, waking the lanes once. */
int sl_io_submit_many(sl_io *io, const sl_io_req *reqs, size_t n, sl_err *err);

/* Read-ahead queue. A request submitted with .ahead waits behind every
 * demand request, and a lane takes it only when the demand queue is empty
 * and the lane has no read in flight (an io_uring lane: none of its queue
 * depth in use), so a guess never sits in front of a demand read.
 * sl_io_promote: if the read ahead tagged `tag` is still queued, moves it
 * to the tail of the demand queue (its completion comes as usual) and
 * returns 1; 0 when no queued read ahead has that tag (started, done, or
 * never ahead). sl_io_cancel: if it is still queued, removes it and posts
 * its completion at once with status SL_EINVAL and .cancelled set (the
 * caller takes it with wait/poll like any other; nothing was read) and
 * returns 1; else 0, and the read completes as usual. Tags should be
 * unique among outstanding reads ahead; the first match is taken. */
int sl_io_promote(sl_io *io, uint64_t tag);
int sl_io_cancel(sl_io *io, uint64_t tag);

/* Blocks until a completion is available and moves it to *done. Returns
 * SL_OK (look at done->status for the read's own outcome), or SL_EINVAL if
 * nothing is outstanding (waiting would never end). */
int sl_io_wait(sl_io *io, sl_io_done *done, sl_err *err);

/* sl_io_wait that, while no completion is there and a demand read is
 * queued (no lane has taken it yet), reads it on the calling thread with
 * descriptors of its own (one caller at a time; the others wait), so a
 * waiting caller never waits for a lane thread to be scheduled. Its
 * completion names lane info.lanes. */
int sl_io_wait_reading(sl_io *io, sl_io_done *done, sl_err *err);

/* Non-blocking: 1 and *done filled if a completion was ready, else 0. */
int sl_io_poll(sl_io *io, sl_io_done *done);

/* Submitted requests whose completion has not been taken yet. */
uint64_t sl_io_outstanding(sl_io *io);

/* Counters since open. */
void sl_io_get_stats(sl_io *io, sl_io_stats *st);

/* Closes and reopens every lane's descriptors in the same mode. Only when
 * nothing is outstanding (SL_EINVAL otherwise). Used by iobench to separate
 * "descriptor opened while a mapping existed" from "mapping exists". */
int sl_io_reopen(sl_io *io, sl_err *err);

const char *sl_io_backend_name(sl_io_backend b);

/* ---- bulk reads (io_bulk.c): many file ranges into one buffer, in place --

 * Loading a model's resident weights: the ranges (tensors) are laid out in
 * the buffer as they lie in the file, a run of neighbouring ranges sharing
 * one aligned stretch, so direct reads land where the bytes are used and
 * nothing is copied. Plan first (where each range lands, the buffer size),
 * allocate (2 MiB-aligned huge pages: each read stays inside one 2 MiB
 * page), then read with every lane busy. */
typedef struct sl_io_range {
    uint32_t file;     /* index into the io handle's paths */
    uint64_t offset;   /* first byte in the file */
    uint64_t len;      /* bytes (0 allowed: lands nowhere in particular) */
    uint64_t at;       /* set by sl_io_bulk_plan: where the first byte lands
                          in the buffer */
} sl_io_range;

/* Ranges closer than this in a file share one run (the gap is read too). */
#define SL_IO_BULK_GAP (64u * 1024u)

/* Sets r[i].at for the n ranges (any order) with direct-I/O alignment
 * `align` (a power of two, e.g. sl_io_get_info()->align) and the buffer
 * bytes they need in *bytes. Runs start at aligned buffer offsets and hold
 * whole aligned windows, so every read is aligned at both ends. Fails with
 * SL_ENOMEM on overflow or when scratch memory is short. */
int sl_io_bulk_plan(sl_io_range *r, size_t n, uint32_t align, uint64_t *bytes, sl_err *err);

/* Called after each completed read with the bytes read so far and the
 * bytes to read in all. */
typedef void (*sl_io_bulk_progress)(void *ud, uint64_t done, uint64_t total);

/* Reads the n planned ranges into buf (bytes long, aligned to
 * sl_io_get_info(io)->mem_align, at least the planned size) in reads of at
 * most 2 MiB that never cross a 2 MiB boundary of buf, keeping every lane
 * busy. Bytes of buf between runs are left as they were. *read_bytes (may
 * be NULL) receives the bytes read from the files (whole windows). Fails
 * with the first failed read's error (SL_EIO naming the file and offset)
 * after the reads in flight have finished, or SL_EINVAL / SL_ENOMEM. The
 * handle must have nothing outstanding. */
int sl_io_bulk_read(sl_io *io, const sl_io_range *r, size_t n, void *buf, uint64_t bytes,
                    sl_io_bulk_progress progress, void *ud, uint64_t *read_bytes, sl_err *err);

#endif
