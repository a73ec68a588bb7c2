/* test_io_ahead.c - the read-ahead queue of src/io: a read submitted ahead
 * (a guess, a preload) waits behind every demand read, even one submitted
 * after it; sl_io_promote turns a queued one into a demand read (it then
 * overtakes the other reads ahead); sl_io_cancel drops a queued one at once
 * (its completion says cancelled, nothing is read) and refuses a demand read
 * or one a lane has started. Every read that is not cancelled brings the
 * right bytes. pread and io_uring lanes. */
#include <stdlib.h>
#include <string.h>

#include "util/aligned.h"
#include "common/testutil.h"
#include "io/io.h"
#include "io/io_internal.h"
#include "test.h"
#include "test_io_common.h"

#define FILE_SIZE ((uint64_t)(1u << 20))
#define SALT 0x77u
#define N 5
#define LEN 8192u

static char *g_path;

/* A fault seed whose first request (the demand read that keeps the one lane
 * busy) sleeps at least 40 ms, so every later submit happens while it is
 * in flight; the others sleep whatever the seed says. */
static sl_io_fault slow_first(void)
{
    sl_io_fault f = {.delay_p = 1.0, .delay_us_max = 60000};
    for (f.seed = 1; sl_io_fault_delay_ns(&f, 1) < 40000000ull; f.seed++) {}
    return f;
}

static void run_backend(sl_io_backend b)
{
    const sl_io_fault f = slow_first();
    sl_io_config cfg = {.backend = b, .lanes = 1, .queue_depth = 4, .fault = &f};
    sl_io *io = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_io_open(&io, &cfg, (const char *const *)&g_path, 1, &err), SL_OK);
    if (!io) return;
    void *buf = NULL;
    CHECK((buf = sl_aligned_alloc(4096, N * 2 * LEN)) != NULL);
    /* tag i: D0 (demand), A1, A2, A3 (ahead), D4 (demand, submitted last) */
    sl_io_req q[N];
    for (int i = 0; i < N; i++)
        q[i] = (sl_io_req){.file = 0, .offset = (uint64_t)i * 3 * LEN + 100, .len = LEN,
                           .dst = (char *)buf + (size_t)i * 2 * LEN, .dst_cap = 2 * LEN,
                           .tag = (uint64_t)i, .ahead = i >= 1 && i <= 3};
    for (int i = 0; i < N; i++) CHECK_EQ_INT(sl_io_submit(io, &q[i], &err), SL_OK);
    CHECK_EQ_INT(sl_io_promote(io, 3), 1);  /* A3 becomes a demand read after D4 */
    CHECK_EQ_INT(sl_io_promote(io, 3), 0);  /* no longer a queued read ahead */
    CHECK_EQ_INT(sl_io_cancel(io, 2), 1);   /* A2 dropped */
    CHECK_EQ_INT(sl_io_cancel(io, 4), 0);   /* a demand read is never cancelled */
    CHECK_EQ_INT(sl_io_cancel(io, 0), 0);   /* nor one in flight */
    int order[N], n = 0;
    bool cancelled_seen = false;
    for (int k = 0; k < N; k++) {
        sl_io_done d;
        if (sl_io_wait(io, &d, &err) != SL_OK) break;
        if (d.tag == 2) {
            CHECK(d.cancelled && d.status == SL_EINVAL);
            cancelled_seen = true;
            continue;
        }
        CHECK(!d.cancelled && d.status == SL_OK);
        if (d.status == SL_OK) CHECK(pattern_matches(d.data, q[d.tag].offset, LEN, SALT));
        order[n++] = (int)d.tag;
    }
    CHECK(cancelled_seen);
    CHECK_EQ_INT(n, 4);
    /* D0 in flight first; then the demand queue (D4, then the promoted A3:
     * one after the other on a pread lane, together on an io_uring lane of
     * depth 4, so in either order there); the read ahead A1 only when
     * nothing else is left */
    if (n == 4) {
        CHECK_MSG(order[0] == 0, "%s: first completion is tag %d", sl_io_backend_name(b),
                  order[0]);
        if (b == SL_IO_PREAD) CHECK(order[1] == 4 && order[2] == 3);
        else CHECK((order[1] == 4 && order[2] == 3) || (order[1] == 3 && order[2] == 4));
        CHECK_MSG(order[3] == 1, "%s: the read ahead came back as completion %d",
                  sl_io_backend_name(b), order[3] == 1 ? 3 : -1);
    }
    sl_io_stats st;
    sl_io_get_stats(io, &st);
    CHECK_EQ_INT(st.cancelled, 1);
    CHECK_EQ_INT(st.completed, 5);
    CHECK_EQ_INT(sl_io_outstanding(io), 0);
    sl_aligned_free(buf);
    sl_io_close(io);
}

TEST(demand_reads_overtake_reads_ahead_pread) { run_backend(SL_IO_PREAD); }

TEST(demand_reads_overtake_reads_ahead_uring)
{
#ifdef SL_HAVE_URING
    run_backend(SL_IO_URING);
#endif
}

int main(void)
{
    g_path = make_pattern_file(t_tmpdir(), FILE_SIZE, SALT);
    if (!g_path) {
        fprintf(stderr, "cannot write the test file\n");
        return 1;
    }
    RUN(demand_reads_overtake_reads_ahead_pread);
    RUN(demand_reads_overtake_reads_ahead_uring);
    unlink(g_path);
    free(g_path);
    return TEST_REPORT();
}
