/* test_io_direct_check.c - the open-time direct-read check (io_files.c):
 * a direct read of the file's first window is compared with a buffered
 * read of the same bytes. With the fault backend's corrupt_direct (the
 * direct read returns changed bytes, as some Android FUSE storage does)
 * the handle must fall back to buffered reads, say why, and still read
 * exact bytes; without it, a filesystem that takes O_DIRECT keeps it. The
 * file holds a pattern the code under test never sees. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/aligned.h"
#include "io/io.h"
#include "test.h"
#include "common/testutil.h"
#include "test_io_common.h"

#define FILE_SIZE (300u * 1024u + 123u)
#define SALT 0x51u

static char *g_path;

/* one read of len bytes at off through io; 1 if it gives the pattern */
static int read_matches(sl_io *io, uint64_t off, uint64_t len)
{
    const sl_io_info *in = sl_io_get_info(io);
    const uint64_t cap = sl_io_window_cap(io, len);
    void *buf = NULL;
    if (!(buf = sl_aligned_alloc(in->mem_align < 4096 ? 4096 : in->mem_align, cap))) return 0;
    sl_io_req r = {.file = 0, .offset = off, .len = len, .dst = buf, .dst_cap = cap, .tag = 1};
    sl_err err = {0};
    int ok = 0;
    if (sl_io_submit(io, &r, &err) == SL_OK) {
        sl_io_done d;
        if (sl_io_wait(io, &d, &err) == SL_OK && d.status == SL_OK)
            ok = pattern_matches(d.data, off, len, SALT);
    }
    sl_aligned_free(buf);
    return ok;
}

static sl_io *open_with(const sl_io_fault *f)
{
    sl_io_config cfg = {.backend = SL_IO_PREAD, .lanes = 2, .queue_depth = 1, .fault = f};
    sl_io *io = NULL;
    sl_err err = {0};
    int rc = sl_io_open(&io, &cfg, (const char *const *)&g_path, 1, &err);
    CHECK_MSG(rc == SL_OK, "%s", err.msg);
    return rc == SL_OK ? io : NULL;
}

TEST(corrupt_direct_read_falls_back_to_buffered)
{
    sl_io_fault f = {.seed = 1, .corrupt_direct = true};
    sl_io *io = open_with(&f);
    if (!io) return;
    const sl_io_info *in = sl_io_get_info(io);
    CHECK(!in->direct);
    CHECK(in->direct_fell_back);
    /* either the check saw the changed bytes, or this filesystem refused
     * O_DIRECT before the check could run */
    CHECK_MSG(strstr(in->direct_reason, "other bytes than a buffered read") ||
                  strstr(in->direct_reason, "O_DIRECT"),
              "reason: %s", in->direct_reason);
    CHECK(read_matches(io, 0, 4096));
    CHECK(read_matches(io, 70000, 5000));
    CHECK(read_matches(io, FILE_SIZE - 10, 10));
    sl_io_close(io);
}

TEST(honest_direct_read_keeps_direct)
{
    sl_io_fault none = {.seed = 1};
    sl_io *io = open_with(&none);
    if (!io) return;
    const sl_io_info *in = sl_io_get_info(io);
    if (in->direct_fell_back) {
        printf("   (this filesystem refuses O_DIRECT: %s)\n", in->direct_reason);
        CHECK(strstr(in->direct_reason, "other bytes") == NULL);
    } else {
        CHECK(in->direct);
        CHECK_EQ_INT(in->direct_reason[0], 0);
    }
    CHECK(read_matches(io, 1, 65536));
    sl_io_close(io);
}

TEST(tiny_file_is_checked_too)
{
    /* a file shorter than one alignment block: the direct read is short */
    char *p = make_pattern_file(t_tmpdir(), 100, SALT);
    CHECK(p != NULL);
    if (!p) return;
    sl_io_fault f = {.seed = 1, .corrupt_direct = true};
    sl_io_config cfg = {.backend = SL_IO_PREAD, .lanes = 1, .queue_depth = 1, .fault = &f};
    sl_io *io = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_io_open(&io, &cfg, (const char *const *)&p, 1, &err), SL_OK);
    if (io) {
        CHECK(!sl_io_get_info(io)->direct);
        sl_io_close(io);
    }
    unlink(p);
    free(p);
}

int main(void)
{
    g_path = make_pattern_file(t_tmpdir(), FILE_SIZE, SALT);
    if (!g_path) {
        printf("cannot write a test file here\n0 passed, 1 failed\n");
        return 1;
    }
    RUN(corrupt_direct_read_falls_back_to_buffered);
    RUN(honest_direct_read_keeps_direct);
    RUN(tiny_file_is_checked_too);
    unlink(g_path);
    free(g_path);
    return TEST_REPORT();
}
