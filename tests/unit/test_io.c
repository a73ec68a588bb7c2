/* test_io.c - the io layer reads exact bytes through every backend and mode.
 *
 * Each test writes a pattern file (byte i = pat_byte(i), see
 * test_io_common.h), reads ranges of it through sl_io and compares with the
 * formula. Offsets and lengths are deliberately unaligned so the wanted
 * bytes sit inside a larger aligned window. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/aligned.h"
#include "io/io.h"
#include "test.h"
#include "common/testutil.h"
#include "test_io_common.h"

/* 1 MiB + 1234 bytes: not a multiple of any block size, so reads that end
 * at end of file have a window that the file does not fill. */
#define FILE_SIZE ((uint64_t)(1u << 20) + 1234u)
#define SALT 0x51u

static char *g_path;

typedef struct batch_result {
    int completed, failed, bad_data, bad_meta;
    uint64_t retries;
} batch_result;

/* Submits n reads (random offsets and lengths from seed, the last few ending
 * exactly at end of file), waits for all, checks every byte and field. */
static batch_result run_batch(sl_io *io, uint64_t file_size, uint32_t salt, int n,
                              uint64_t seed, uint64_t max_len)
{
    batch_result r = {0};
    const sl_io_info *info = sl_io_get_info(io);
    void **bufs = calloc((size_t)n, sizeof *bufs);
    sl_io_req *reqs = calloc((size_t)n, sizeof *reqs);
    char *seen = calloc((size_t)n, 1);
    uint64_t s = seed;
    for (int i = 0; i < n; i++) {
        uint64_t len = 1 + t_rng(&s) % max_len;
        if (len > file_size) len = file_size;
        uint64_t off = t_rng(&s) % (file_size - len + 1);
        if (i % 7 == 3) off = file_size - len; /* ends exactly at EOF */
        if (i % 11 == 5) off &= ~(uint64_t)4095; /* aligned start */
        uint64_t cap = sl_io_window_cap(io, len);
        CHECK((bufs[i] = sl_aligned_alloc(4096, cap)) != NULL);
        memset(bufs[i], 0xCD, cap);
        reqs[i] = (sl_io_req){.file = 0, .offset = off, .len = len, .dst = bufs[i],
                              .dst_cap = cap, .tag = 1000 + (uint64_t)i};
    }
    int next = 0, pending = 0;
    sl_err err = {0};
    while (next < n || pending > 0) {
        /* Keep at most 32 outstanding: below any cap, several per lane. */
        while (next < n && pending < 32) {
            int k = n - next < 8 ? n - next : 8;
            if (k > 32 - pending) k = 32 - pending;
            int rc = sl_io_submit_many(io, &reqs[next], (size_t)k, &err);
            CHECK_MSG(rc == SL_OK, "%s", err.msg);
            if (rc) goto out;
            next += k;
            pending += k;
        }
        sl_io_done d;
        CHECK(sl_io_wait(io, &d, &err) == SL_OK);
        pending--;
        r.completed++;
        r.retries += d.retries;
        int i = (int)(d.tag - 1000);
        if (i < 0 || i >= n || seen[i]) {
            r.bad_meta++;
            continue;
        }
        seen[i] = 1;
        if (d.status != SL_OK) {
            r.failed++;
            continue;
        }
        const sl_io_req *q = &reqs[i];
        /* Expected window, by hand: start rounded down, end rounded up to
         * the alignment, clamped at end of file. */
        uint64_t a = info->align;
        uint64_t wo = q->offset / a * a;
        uint64_t we = (q->offset + q->len + a - 1) / a * a;
        if (we > file_size) we = file_size;
        if (d.window_offset != wo || d.window_bytes != we - wo ||
            d.data != (unsigned char *)q->dst + (q->offset - wo) || d.offset != q->offset ||
            d.len != q->len || d.lane >= info->lanes || d.t_start_ns < d.t_submit_ns ||
            d.t_end_ns < d.t_start_ns)
            r.bad_meta++;
        if (!pattern_matches(d.data, q->offset, q->len, salt) ||
            !pattern_matches(q->dst, wo, we - wo, salt))
            r.bad_data++;
    }
out:
    for (int i = 0; i < n; i++) sl_aligned_free(bufs[i]);
    free(bufs);
    free(reqs);
    free(seen);
    return r;
}

static sl_io *open_one(const char *path, sl_io_backend b, unsigned lanes, unsigned qd,
                       bool buffered, unsigned flags)
{
    sl_io_config cfg = {.backend = b, .lanes = lanes, .queue_depth = qd, .buffered = buffered,
                        .test_flags = flags};
    sl_io *io = NULL;
    sl_err err = {0};
    int rc = sl_io_open(&io, &cfg, &path, 1, &err);
    CHECK_MSG(rc == SL_OK, "%s", err.msg);
    return io;
}

TEST(window_arithmetic)
{
    sl_io_window w;
    /* 5000 rounds down to 4096 (inner 904); end 5100 rounds up to 8192. */
    CHECK(sl_io_window_for(4096, 5000, 100, &w));
    CHECK_EQ_INT(w.offset, 4096);
    CHECK_EQ_INT(w.len, 4096);
    CHECK_EQ_INT(w.inner, 904);
    /* Already aligned: the window is the request. */
    CHECK(sl_io_window_for(512, 1024, 512, &w));
    CHECK_EQ_INT(w.offset, 1024);
    CHECK_EQ_INT(w.len, 512);
    CHECK_EQ_INT(w.inner, 0);
    /* Two bytes straddling a block boundary need two blocks. */
    CHECK(sl_io_window_for(4096, 4095, 2, &w));
    CHECK_EQ_INT(w.offset, 0);
    CHECK_EQ_INT(w.len, 8192);
    CHECK_EQ_INT(w.inner, 4095);
    /* The end overflows 64 bits. */
    CHECK(!sl_io_window_for(4096, UINT64_MAX - 10, 100, &w));
}

TEST(window_cap_bounds_every_offset)
{
    sl_io *io = open_one(g_path, SL_IO_PREAD, 1, 1, false, 0);
    if (!io) return;
    uint32_t a = sl_io_get_info(io)->align;
    CHECK(a >= 512 && (a & (a - 1)) == 0);
    uint64_t lens[] = {1, 100, a - 1, a, a + 1, 3 * (uint64_t)a + 17};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        uint64_t cap = sl_io_window_cap(io, lens[i]);
        /* align_up(len) + align, by hand */
        CHECK_EQ_INT(cap, (lens[i] + a - 1) / a * a + a);
        for (uint64_t off = 0; off < 2 * (uint64_t)a; off += 7) {
            sl_io_window w;
            CHECK(sl_io_window_at(io, off, lens[i], &w));
            CHECK(w.len <= cap);
        }
    }
    sl_io_close(io);
}

static void exact_reads(sl_io_backend b, unsigned lanes, unsigned qd, bool buffered)
{
    sl_io *io = open_one(g_path, b, lanes, qd, buffered, 0);
    if (!io) return;
    const sl_io_info *info = sl_io_get_info(io);
    CHECK(info->lanes == lanes);
    CHECK_EQ_INT(info->direct, !buffered);
    CHECK(!info->direct_fell_back);
    batch_result r = run_batch(io, FILE_SIZE, SALT, 150, 42 + lanes * 10 + qd, 70000);
    CHECK_EQ_INT(r.completed, 150);
    CHECK_EQ_INT(r.failed, 0);
    CHECK_EQ_INT(r.bad_data, 0);
    CHECK_EQ_INT(r.bad_meta, 0);
    sl_io_stats st;
    sl_io_get_stats(io, &st);
    CHECK_EQ_INT(st.submitted, 150);
    CHECK_EQ_INT(st.completed, 150);
    CHECK_EQ_INT(st.failed, 0);
    CHECK_EQ_INT(sl_io_outstanding(io), 0);
    sl_io_close(io);
}

TEST(pread_lanes_exact_bytes)
{
    unsigned lanes[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) exact_reads(SL_IO_PREAD, lanes[i], 1, false);
}

TEST(uring_lanes_exact_bytes)
{
#ifdef SL_HAVE_URING
    unsigned lanes[] = {1, 2, 4};
    unsigned qds[] = {1, 4};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            sl_io *io = open_one(g_path, SL_IO_URING, lanes[i], qds[j], false, 0);
            if (!io) return;
            bool have = sl_io_get_info(io)->backend == SL_IO_URING;
            if (!have) /* the kernel refused io_uring: the fallback must say why */
                CHECK(sl_io_get_info(io)->uring_fell_back &&
                      sl_io_get_info(io)->uring_reason[0]);
            sl_io_close(io);
            exact_reads(SL_IO_URING, lanes[i], qds[j], false);
        }
#else
    sl_io *io = open_one(g_path, SL_IO_URING, 2, 4, false, 0);
    if (!io) return;
    CHECK(sl_io_get_info(io)->backend == SL_IO_PREAD);
    CHECK(sl_io_get_info(io)->uring_fell_back);
    sl_io_close(io);
#endif
}

TEST(buffered_by_choice_is_not_a_fallback)
{
    exact_reads(SL_IO_PREAD, 2, 1, true);
    exact_reads(SL_IO_URING, 2, 2, true);
}

TEST(forced_direct_refusal_falls_back_to_buffered)
{
    sl_io_backend bs[] = {SL_IO_PREAD, SL_IO_URING};
    for (int k = 0; k < 2; k++) {
        sl_io *io = open_one(g_path, bs[k], 3, 2, false, SL_IO_TEST_REFUSE_DIRECT);
        if (!io) return;
        const sl_io_info *info = sl_io_get_info(io);
        CHECK(!info->direct);
        CHECK(info->direct_fell_back);
        CHECK_STR_CONTAINS(info->direct_reason, sl_io_direct_flag); /* O_DIRECT, or Windows' flag */
        CHECK_STR_CONTAINS(info->direct_reason, "buffered");
        batch_result r = run_batch(io, FILE_SIZE, SALT, 80, 7, 50000);
        CHECK_EQ_INT(r.completed, 80);
        CHECK_EQ_INT(r.failed + r.bad_data + r.bad_meta, 0);
        sl_io_close(io);
    }
}

TEST(dev_shm_file_reads_exact_whatever_the_mode)
{
    /* tmpfs refuses O_DIRECT on older kernels and accepts it on newer
     * ones; either way the bytes must be exact, and a refusal must be
     * reported as a fallback. */
    if (access("/dev/shm", W_OK) != 0) return;
    char *p = make_pattern_file("/dev/shm", 300000, 0x77);
    CHECK(p != NULL);
    if (!p) return;
    sl_io *io = open_one(p, SL_IO_PREAD, 2, 1, false, 0);
    if (io) {
        const sl_io_info *info = sl_io_get_info(io);
        CHECK(info->direct || (info->direct_fell_back && info->direct_reason[0]));
        batch_result r = run_batch(io, 300000, 0x77, 60, 9, 40000);
        CHECK_EQ_INT(r.completed, 60);
        CHECK_EQ_INT(r.failed + r.bad_data + r.bad_meta, 0);
        sl_io_close(io);
    }
    unlink(p);
    free(p);
}

TEST(forced_uring_refusal_runs_pread_lanes)
{
    sl_io *io = open_one(g_path, SL_IO_URING, 2, 8, false, SL_IO_TEST_REFUSE_URING);
    if (!io) return;
    const sl_io_info *info = sl_io_get_info(io);
    CHECK(info->backend == SL_IO_PREAD);
    CHECK(info->uring_fell_back);
    CHECK_STR_CONTAINS(info->uring_reason, "pread");
    batch_result r = run_batch(io, FILE_SIZE, SALT, 40, 3, 30000);
    CHECK_EQ_INT(r.completed, 40);
    CHECK_EQ_INT(r.failed + r.bad_data + r.bad_meta, 0);
    sl_io_close(io);
}

TEST(bad_requests_are_refused_at_submit)
{
    sl_io *io = open_one(g_path, SL_IO_PREAD, 1, 1, false, 0);
    if (!io) return;
    uint32_t a = sl_io_get_info(io)->mem_align;
    void *buf = NULL;
    CHECK((buf = sl_aligned_alloc(4096, 65536)) != NULL);
    sl_err err = {0};
    sl_io_req q = {.file = 0, .offset = 10, .len = 100, .dst = buf, .dst_cap = 65536};

    q.file = 1; /* only one file open */
    CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "file 1");
    q.file = 0;
    q.offset = FILE_SIZE - 50; /* 100 bytes from here run 50 past the end */
    CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "outside");
    q.offset = 10;
    q.len = 0;
    CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_EINVAL);
    q.len = 100;
    if (a > 1) {
        q.dst = (char *)buf + 1; /* misaligned for direct I/O */
        CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_EINVAL);
        CHECK_STR_CONTAINS(err.msg, "aligned");
        q.dst = buf;
    }
    q.dst_cap = 100; /* the window is a whole block at least */
    CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "window");
    q.dst_cap = 65536;

    sl_io_done d;
    CHECK_EQ_INT(sl_io_wait(io, &d, &err), SL_EINVAL); /* nothing outstanding */
    CHECK_EQ_INT(sl_io_poll(io, &d), 0);

    /* All-or-nothing: a bad request in a batch queues none of it. */
    sl_io_req two[2] = {q, q};
    two[1].file = 9;
    CHECK_EQ_INT(sl_io_submit_many(io, two, 2, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_io_outstanding(io), 0);

    /* The good request still works after the refusals. */
    CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_OK);
    CHECK_EQ_INT(sl_io_wait(io, &d, &err), SL_OK);
    CHECK_EQ_INT(d.status, SL_OK);
    CHECK(pattern_matches(d.data, 10, 100, SALT));
    sl_aligned_free(buf);
    sl_io_close(io);
}

TEST(outstanding_cap_is_enforced)
{
    sl_io_config cfg = {.backend = SL_IO_PREAD, .lanes = 1, .max_inflight = 64};
    sl_io *io = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_io_open(&io, &cfg, (const char *const *)&g_path, 1, &err), SL_OK);
    if (!io) return;
    /* 65 slots of 8 KiB, one per read, so no two reads share memory. */
    void *buf = NULL;
    CHECK((buf = sl_aligned_alloc(4096, 65 * 8192)) != NULL);
    sl_io_req q = {.file = 0, .offset = 0, .len = 4096, .dst = buf, .dst_cap = 8192};
    /* The 65th read must be refused until one completion is taken. */
    for (int i = 0; i < 64; i++) {
        q.dst = (char *)buf + i * 8192;
        CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_OK);
    }
    q.dst = (char *)buf + 64 * 8192;
    CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "outstanding");
    sl_io_done d;
    CHECK_EQ_INT(sl_io_wait(io, &d, &err), SL_OK);
    CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_OK);
    int got = 0;
    while (sl_io_outstanding(io) > 0) {
        CHECK_EQ_INT(sl_io_wait(io, &d, &err), SL_OK);
        got += d.status == SL_OK;
    }
    CHECK_EQ_INT(got, 64);
    sl_io_close(io);
    sl_aligned_free(buf);
}

TEST(poll_eventually_delivers)
{
    sl_io *io = open_one(g_path, SL_IO_URING, 1, 2, false, 0);
    if (!io) return;
    void *buf = NULL;
    CHECK((buf = sl_aligned_alloc(4096, 16384)) != NULL);
    sl_err err = {0};
    sl_io_req q = {.file = 0, .offset = 777, .len = 5000, .dst = buf, .dst_cap = 16384,
                   .tag = 99};
    CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_OK);
    sl_io_done d;
    int spins = 0;
    while (!sl_io_poll(io, &d) && spins < 2000000) {
        spins++;
        usleep(10);
    }
    CHECK_EQ_INT(d.tag, 99);
    CHECK_EQ_INT(d.status, SL_OK);
    CHECK(pattern_matches(d.data, 777, 5000, SALT));
    CHECK_EQ_INT(sl_io_poll(io, &d), 0);
    sl_aligned_free(buf);
    sl_io_close(io);
}

/* A caller waiting in sl_io_wait_reading reads queued demand reads itself:
 * with one slow lane (every read delayed up to 40 ms) and eight reads
 * queued, some complete on the caller's lane (id = info.lanes), and every
 * byte, whoever read it, is the file's. Reads ahead are left to the lane. */
TEST(a_waiting_caller_reads_queued_demand_reads_itself)
{
    sl_io_backend bs[] = {SL_IO_PREAD, SL_IO_URING};
    for (int k = 0; k < 2; k++) {
        const sl_io_fault f = {.seed = 3, .delay_p = 1.0, .delay_us_max = 40000};
        sl_io_config cfg = {.backend = bs[k], .lanes = 1, .queue_depth = 1, .fault = &f};
        sl_io *io = NULL;
        sl_err err = {0};
        CHECK_MSG(sl_io_open(&io, &cfg, (const char *const *)&g_path, 1, &err) == SL_OK, "%s",
                  err.msg);
        if (!io) return;
        enum { N = 8 };
        void *buf[N + 1];
        sl_io_req q[N + 1];
        for (int i = 0; i <= N; i++) {
            CHECK((buf[i] = sl_aligned_alloc(4096, 16384)) != NULL);
            q[i] = (sl_io_req){.file = 0, .offset = 1000u * (uint64_t)i + 17u, .len = 5000,
                               .dst = buf[i], .dst_cap = 16384, .tag = (uint64_t)i,
                               .ahead = i == N};
        }
        CHECK_EQ_INT(sl_io_submit_many(io, q, N + 1, &err), SL_OK);
        int by_caller = 0, ahead_by_caller = 0;
        for (int i = 0; i <= N; i++) {
            sl_io_done d;
            CHECK_EQ_INT(sl_io_wait_reading(io, &d, &err), SL_OK);
            CHECK_EQ_INT(d.status, SL_OK);
            CHECK(d.tag <= N && pattern_matches(d.data, q[d.tag].offset, 5000, SALT));
            if (d.lane == 1) {
                by_caller++;
                if (d.tag == N) ahead_by_caller++;
            } else {
                CHECK_EQ_INT(d.lane, 0);
            }
        }
        CHECK_MSG(by_caller > 0, "backend %d: no read done by the waiting caller", k);
        CHECK_EQ_INT(ahead_by_caller, 0);
        CHECK_EQ_INT(sl_io_outstanding(io), 0);
        CHECK_EQ_INT(sl_io_wait_reading(io, &(sl_io_done){0}, &err), SL_EINVAL);
        for (int i = 0; i <= N; i++) sl_aligned_free(buf[i]);
        sl_io_close(io);
    }
}

TEST(reopen_keeps_reading)
{
    sl_io_backend bs[] = {SL_IO_PREAD, SL_IO_URING};
    for (int k = 0; k < 2; k++) {
        sl_io *io = open_one(g_path, bs[k], 2, 2, false, 0);
        if (!io) return;
        batch_result r = run_batch(io, FILE_SIZE, SALT, 20, 5, 20000);
        CHECK_EQ_INT(r.completed - r.failed - r.bad_data - r.bad_meta, 20);
        sl_err err = {0};
        CHECK_EQ_INT(sl_io_reopen(io, &err), SL_OK);
        r = run_batch(io, FILE_SIZE, SALT, 20, 6, 20000);
        CHECK_EQ_INT(r.completed - r.failed - r.bad_data - r.bad_meta, 20);

        void *buf = NULL;
        CHECK((buf = sl_aligned_alloc(4096, 8192)) != NULL);
        sl_io_req q = {.file = 0, .offset = 0, .len = 4096, .dst = buf, .dst_cap = 8192};
        CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_OK);
        /* Outstanding read: reopening now would pull descriptors from under it. */
        if (sl_io_outstanding(io) > 0) CHECK_EQ_INT(sl_io_reopen(io, &err), SL_EINVAL);
        sl_io_done d;
        CHECK_EQ_INT(sl_io_wait(io, &d, &err), SL_OK);
        sl_aligned_free(buf);
        sl_io_close(io);
    }
}

TEST(two_files_each_read_from_its_own)
{
    char *p2 = make_pattern_file(t_tmpdir(), 200000, 0x99);
    CHECK(p2 != NULL);
    if (!p2) return;
    const char *paths[2] = {g_path, p2};
    sl_io_config cfg = {.backend = SL_IO_URING, .lanes = 2, .queue_depth = 2};
    sl_io *io = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_io_open(&io, &cfg, paths, 2, &err), SL_OK);
    if (io) {
        CHECK_EQ_INT(sl_io_file_count(io), 2);
        CHECK_EQ_INT(sl_io_file_size(io, 1), 200000);
        void *b[2];
        CHECK((b[0] = sl_aligned_alloc(4096, 65536)) != NULL);
        CHECK((b[1] = sl_aligned_alloc(4096, 65536)) != NULL);
        sl_io_req q[2] = {
            {.file = 0, .offset = 123457, .len = 30000, .dst = b[0], .dst_cap = 65536, .tag = 0},
            {.file = 1, .offset = 123457, .len = 30000, .dst = b[1], .dst_cap = 65536, .tag = 1},
        };
        CHECK_EQ_INT(sl_io_submit_many(io, q, 2, &err), SL_OK);
        for (int i = 0; i < 2; i++) {
            sl_io_done d;
            CHECK_EQ_INT(sl_io_wait(io, &d, &err), SL_OK);
            CHECK_EQ_INT(d.status, SL_OK);
            CHECK(pattern_matches(d.data, 123457, 30000, d.tag == 0 ? SALT : 0x99));
        }
        sl_aligned_free(b[0]);
        sl_aligned_free(b[1]);
        sl_io_close(io);
    }
    unlink(p2);
    free(p2);
}

TEST(file_shrunk_after_open_fails_the_read_not_the_data)
{
    char *p = make_pattern_file(t_tmpdir(), 100000, 0x33);
    CHECK(p != NULL);
    if (!p) return;
    sl_io_backend bs[] = {SL_IO_PREAD, SL_IO_URING};
    for (int k = 0; k < 2; k++) {
        sl_io *io = open_one(p, bs[k], 1, 1, false, 0);
        if (!io) break;
        /* Shrink to 40000 bytes; a read at 60000 was valid at open time. */
        CHECK(truncate(p, 40000) == 0);
        void *buf = NULL;
        CHECK((buf = sl_aligned_alloc(4096, 16384)) != NULL);
        sl_err err = {0};
        sl_io_req q = {.file = 0, .offset = 60000, .len = 1000, .dst = buf, .dst_cap = 16384};
        CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_OK);
        sl_io_done d;
        CHECK_EQ_INT(sl_io_wait(io, &d, &err), SL_OK);
        CHECK(d.status != SL_OK);
        CHECK_STR_CONTAINS(d.err.msg, "ended");
        sl_aligned_free(buf);
        sl_io_close(io);
        CHECK(truncate(p, 100000) == 0); /* the tail now reads as zeros; fine for k=1 */
    }
    unlink(p);
    free(p);
}

TEST(close_with_reads_outstanding_does_not_hang)
{
    sl_io_backend bs[] = {SL_IO_PREAD, SL_IO_URING};
    for (int k = 0; k < 2; k++) {
        sl_io *io = open_one(g_path, bs[k], 2, 4, false, 0);
        if (!io) return;
        /* Each read gets its own 80 KiB slot (a 64 KiB window fits). */
        void *buf = NULL;
        CHECK((buf = sl_aligned_alloc(4096, 40 * 81920)) != NULL);
        sl_err err = {0};
        for (int i = 0; i < 40; i++) {
            sl_io_req q = {.file = 0, .offset = (uint64_t)i * 4096, .len = 65536,
                           .dst = (char *)buf + i * 81920, .dst_cap = 81920};
            CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_OK);
        }
        sl_io_close(io); /* must return; ASan checks nothing writes buf later */
        sl_aligned_free(buf);
    }
}

TEST(config_out_of_range_is_refused)
{
    sl_io *io = NULL;
    sl_err err = {0};
    sl_io_config cfg = {.backend = SL_IO_PREAD, .lanes = 0};
    CHECK_EQ_INT(sl_io_open(&io, &cfg, (const char *const *)&g_path, 1, &err), SL_EINVAL);
    CHECK(io == NULL);
    cfg.lanes = SL_IO_MAX_LANES + 1;
    CHECK_EQ_INT(sl_io_open(&io, &cfg, (const char *const *)&g_path, 1, &err), SL_EINVAL);
    cfg.lanes = 1;
    const char *missing = "/nonexistent/sluice-io-test";
    CHECK_EQ_INT(sl_io_open(&io, &cfg, &missing, 1, &err), SL_EIO);
    CHECK_STR_CONTAINS(err.msg, missing);
    CHECK(io == NULL);
}

int main(void)
{
    g_path = make_pattern_file(t_tmpdir(), FILE_SIZE, SALT);
    if (!g_path) {
        fprintf(stderr, "cannot create a test file in %s\n", t_tmpdir());
        return 1;
    }
    RUN(window_arithmetic);
    RUN(window_cap_bounds_every_offset);
    RUN(pread_lanes_exact_bytes);
    RUN(uring_lanes_exact_bytes);
    RUN(buffered_by_choice_is_not_a_fallback);
    RUN(forced_direct_refusal_falls_back_to_buffered);
    RUN(dev_shm_file_reads_exact_whatever_the_mode);
    RUN(forced_uring_refusal_runs_pread_lanes);
    RUN(bad_requests_are_refused_at_submit);
    RUN(outstanding_cap_is_enforced);
    RUN(poll_eventually_delivers);
    RUN(a_waiting_caller_reads_queued_demand_reads_itself);
    RUN(reopen_keeps_reading);
    RUN(two_files_each_read_from_its_own);
    RUN(file_shrunk_after_open_fails_the_read_not_the_data);
    RUN(close_with_reads_outstanding_does_not_hang);
    RUN(config_out_of_range_is_refused);
    unlink(g_path);
    free(g_path);
    return TEST_REPORT();
}
