/* test_io_fault.c - injected short reads, EIO and delays through the io layer.
 *
 * Short reads must still give exact bytes (the injector scribbles past the
 * cut, so only a real retry passes); EIO must fail exactly the chosen request
 * with a message and never hang; delays may reorder completions but every
 * tag must still carry its own bytes. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/aligned.h"
#include "io/io.h"
#include "test.h"
#include "common/testutil.h"
#include "test_io_common.h"

#define FILE_SIZE ((uint64_t)(3u << 19) + 333u) /* 1.5 MiB + 333 */
#define SALT 0xA7u
#define N_REQ 48

static char *g_path;

typedef struct run_out {
    int completed, ok, failed, bad_data, bad_meta, out_of_order;
    uint64_t retries;
    uint64_t failed_seqs[N_REQ];
    char first_msg[SL_ERR_MSG_MAX];
} run_out;

/* Opens io with the fault spec, reads N_REQ ranges (shapes from seed),
 * verifies every successful one against the pattern. */
static run_out run(sl_io_backend b, unsigned lanes, unsigned qd, unsigned flags,
                   const sl_io_fault *f, uint64_t seed)
{
    run_out o;
    memset(&o, 0, sizeof o);
    sl_io_config cfg = {.backend = b, .lanes = lanes, .queue_depth = qd, .test_flags = flags,
                        .fault = f};
    sl_io *io = NULL;
    sl_err err = {0};
    int rc = sl_io_open(&io, &cfg, (const char *const *)&g_path, 1, &err);
    CHECK_MSG(rc == SL_OK, "%s", err.msg);
    if (rc) return o;
    sl_io_req reqs[N_REQ];
    void *bufs[N_REQ];
    int seen[N_REQ] = {0};
    uint64_t s = seed;
    for (int i = 0; i < N_REQ; i++) {
        uint64_t len = 1 + t_rng(&s) % 200000;
        uint64_t off = t_rng(&s) % (FILE_SIZE - len + 1);
        if (i % 9 == 4) off = FILE_SIZE - len;
        uint64_t cap = sl_io_window_cap(io, len);
        CHECK((bufs[i] = sl_aligned_alloc(4096, cap)) != NULL);
        reqs[i] = (sl_io_req){.file = 0, .offset = off, .len = len, .dst = bufs[i],
                              .dst_cap = cap, .tag = (uint64_t)i};
    }
    CHECK_EQ_INT(sl_io_submit_many(io, reqs, N_REQ, &err), SL_OK);
    uint64_t last_seq = 0;
    for (int k = 0; k < N_REQ; k++) {
        sl_io_done d;
        if (sl_io_wait(io, &d, &err) != SL_OK) {
            CHECK_MSG(0, "%s", err.msg);
            break;
        }
        o.completed++;
        o.retries += d.retries;
        if (d.seq < last_seq) o.out_of_order++;
        last_seq = d.seq;
        if (d.tag >= N_REQ || seen[d.tag]) {
            o.bad_meta++;
            continue;
        }
        seen[d.tag] = 1;
        /* Submitted in one batch in tag order, so seq = tag + 1. */
        if (d.seq != d.tag + 1) o.bad_meta++;
        if (d.status != SL_OK) {
            o.failed_seqs[o.failed++] = d.seq;
            if (!o.first_msg[0]) memcpy(o.first_msg, d.err.msg, sizeof o.first_msg);
            continue;
        }
        o.ok++;
        if (!pattern_matches(d.data, reqs[d.tag].offset, reqs[d.tag].len, SALT)) o.bad_data++;
    }
    sl_io_close(io);
    for (int i = 0; i < N_REQ; i++) sl_aligned_free(bufs[i]);
    return o;
}

TEST(short_reads_still_give_exact_bytes)
{
    sl_io_fault f = {.seed = 11, .short_p = 0.6};
    struct { sl_io_backend b; unsigned lanes, qd, flags; } cases[] = {
        {SL_IO_PREAD, 1, 1, 0},
        {SL_IO_PREAD, 3, 1, 0},
        {SL_IO_PREAD, 2, 1, SL_IO_TEST_REFUSE_DIRECT}, /* buffered: retry at the cut */
        {SL_IO_URING, 1, 4, 0},
        {SL_IO_URING, 2, 3, SL_IO_TEST_REFUSE_DIRECT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_out o = run(cases[i].b, cases[i].lanes, cases[i].qd, cases[i].flags, &f, 100 + i);
        CHECK_EQ_INT(o.completed, N_REQ);
        CHECK_EQ_INT(o.ok, N_REQ);
        CHECK_EQ_INT(o.bad_data, 0);
        CHECK_EQ_INT(o.bad_meta, 0);
        /* With p = 0.6 over 48 reads, some retries must have happened
         * (all first attempts passing has probability 0.4^48). */
        CHECK(o.retries > 0);
    }
}

TEST(eio_on_nth_fails_exactly_that_request)
{
    sl_io_fault f = {.seed = 5, .eio_nth = 7};
    sl_io_backend bs[] = {SL_IO_PREAD, SL_IO_URING};
    for (int k = 0; k < 2; k++) {
        run_out o = run(bs[k], 2, 2, 0, &f, 77);
        CHECK_EQ_INT(o.completed, N_REQ);
        CHECK_EQ_INT(o.failed, 1);
        CHECK_EQ_INT(o.failed_seqs[0], 7);
        CHECK_EQ_INT(o.ok, N_REQ - 1);
        CHECK_EQ_INT(o.bad_data, 0);
        CHECK_STR_CONTAINS(o.first_msg, "Input/output error");
        CHECK_STR_CONTAINS(o.first_msg, g_path);
    }
}

TEST(eio_by_probability_is_deterministic_and_clean)
{
    sl_io_fault f = {.seed = 1234, .eio_p = 0.25, .short_p = 0.3};
    run_out a = run(SL_IO_PREAD, 4, 1, 0, &f, 9);
    run_out b = run(SL_IO_URING, 2, 4, 0, &f, 9);
    CHECK_EQ_INT(a.completed, N_REQ);
    CHECK_EQ_INT(b.completed, N_REQ);
    /* p = 0.25 over 48: none failing has probability 0.75^48 ~ 1e-6. */
    CHECK(a.failed > 0);
    CHECK_EQ_INT(a.failed + a.ok, N_REQ);
    CHECK_EQ_INT(a.bad_data + b.bad_data, 0);
    /* Same seed, same failing sequence numbers, whatever backend and lanes. */
    CHECK_EQ_INT(a.failed, b.failed);
    int same = 1;
    for (int i = 0; i < a.failed && i < b.failed; i++) {
        int found = 0;
        for (int j = 0; j < b.failed; j++) found |= a.failed_seqs[i] == b.failed_seqs[j];
        same &= found;
    }
    CHECK(same);
}

TEST(delays_keep_each_tag_with_its_bytes)
{
    sl_io_fault f = {.seed = 3, .delay_p = 0.8, .delay_us_max = 3000, .short_p = 0.2};
    run_out o = run(SL_IO_PREAD, 4, 1, 0, &f, 55);
    CHECK_EQ_INT(o.completed, N_REQ);
    CHECK_EQ_INT(o.ok, N_REQ);
    CHECK_EQ_INT(o.bad_data, 0);
    CHECK_EQ_INT(o.bad_meta, 0);
    run_out u = run(SL_IO_URING, 2, 4, 0, &f, 56);
    CHECK_EQ_INT(u.completed, N_REQ);
    CHECK_EQ_INT(u.ok, N_REQ);
    CHECK_EQ_INT(u.bad_data, 0);
    CHECK_EQ_INT(u.bad_meta, 0);
}

TEST(all_requests_failing_never_hangs)
{
    sl_io_fault f = {.seed = 8, .eio_p = 1.0};
    run_out o = run(SL_IO_URING, 3, 2, 0, &f, 4);
    CHECK_EQ_INT(o.completed, N_REQ);
    CHECK_EQ_INT(o.failed, N_REQ);
    CHECK_EQ_INT(o.ok, 0);
}

TEST(one_read_at_a_time_never_stalls)
{
    /* The consumer submits the next read only after taking the previous
     * completion: a lane that slept holding an unpublished completion would
     * hang here. Every third request fails at once (injected EIO), which
     * exercises completions produced before any read is issued. */
    sl_io_fault f = {.seed = 2, .eio_p = 0.34};
    struct { sl_io_backend b; unsigned qd; } cases[] = {
        {SL_IO_PREAD, 1}, {SL_IO_URING, 1}, {SL_IO_URING, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sl_io_config cfg = {.backend = cases[c].b, .lanes = 1, .queue_depth = cases[c].qd,
                            .fault = &f};
        sl_io *io = NULL;
        sl_err err = {0};
        CHECK_EQ_INT(sl_io_open(&io, &cfg, (const char *const *)&g_path, 1, &err), SL_OK);
        if (!io) return;
        void *buf = NULL;
        CHECK((buf = sl_aligned_alloc(4096, 65536)) != NULL);
        int ok = 0, failed = 0;
        for (int i = 0; i < 40; i++) {
            uint64_t off = (uint64_t)i * 12345;
            sl_io_req q = {.file = 0, .offset = off, .len = 20000, .dst = buf, .dst_cap = 65536,
                           .tag = (uint64_t)i};
            CHECK_EQ_INT(sl_io_submit(io, &q, &err), SL_OK);
            sl_io_done d;
            CHECK_EQ_INT(sl_io_wait(io, &d, &err), SL_OK);
            CHECK_EQ_INT(d.tag, i);
            if (d.status == SL_OK) {
                ok++;
                CHECK(pattern_matches(d.data, off, 20000, SALT));
            } else {
                failed++;
            }
        }
        CHECK_EQ_INT(ok + failed, 40);
        CHECK(failed > 0); /* p = 0.34 over 40: none failing ~ 6e-8 */
        sl_aligned_free(buf);
        sl_io_close(io);
    }
}

int main(void)
{
    g_path = make_pattern_file(t_tmpdir(), FILE_SIZE, SALT);
    if (!g_path) {
        fprintf(stderr, "cannot create a test file in %s\n", t_tmpdir());
        return 1;
    }
    RUN(short_reads_still_give_exact_bytes);
    RUN(eio_on_nth_fails_exactly_that_request);
    RUN(eio_by_probability_is_deterministic_and_clean);
    RUN(delays_keep_each_tag_with_its_bytes);
    RUN(all_requests_failing_never_hangs);
    RUN(one_read_at_a_time_never_stalls);
    unlink(g_path);
    free(g_path);
    return TEST_REPORT();
}
