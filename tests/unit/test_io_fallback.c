/* test_io_fallback.c - when O_DIRECT cannot be used, the buffered reads
 * that replace it leave no expert bytes in the page cache, and the file
 * systems whose O_DIRECT is not trusted (tmpfs; FUSE where mounted) are
 * recognised with one-line reasons.
 *
 * Page-cache residency is measured with mincore on a read-only mapping of
 * the file: first made non-resident (fsync + POSIX_FADV_DONTNEED; the test
 * says so and checks nothing more where the kernel keeps the pages), then
 * read whole through sl_io with the refused-O_DIRECT hook, which must leave
 * (almost) nothing resident, while the same reads with plain buffered I/O
 * (iobench --buffered) leave it resident: the measurement can fail. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif
#include <unistd.h>

#include "util/aligned.h"
#include "io/io.h"
#include "test.h"
#include "test_io_common.h"

#define FILE_SIZE ((uint64_t)8 << 20)
#define READ_LEN ((uint64_t)256 << 10)
#define SALT 0x37u

static char *g_path;

#ifdef __linux__ /* POSIX_FADV_DONTNEED and statfs types: Linux (and Android) */

/* Pages of path resident in the page cache, or -1 if it cannot be told. */
static long resident_pages(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    void *p = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return -1;
    const long page = sysconf(_SC_PAGESIZE);
    const size_t n = (size_t)((FILE_SIZE + (uint64_t)page - 1) / (uint64_t)page);
    unsigned char *v = malloc(n);
    long count = -1;
    if (v && mincore(p, FILE_SIZE, v) == 0) {
        count = 0;
        for (size_t i = 0; i < n; i++) count += v[i] & 1;
    }
    free(v);
    munmap(p, FILE_SIZE);
    return count;
}

/* Drops the file's clean pages from the page cache; true if none is left. */
static bool drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return resident_pages(path) == 0;
}

/* Reads the whole file through io in READ_LEN pieces and checks the bytes. */
static void read_all(sl_io *io)
{
    const uint64_t cap = sl_io_window_cap(io, READ_LEN);
    unsigned char *buf = sl_aligned_alloc(4096, cap);
    CHECK(buf != NULL);
    if (!buf) return;
    sl_err err = {0};
    int bad = 0;
    for (uint64_t off = 0; off < FILE_SIZE; off += READ_LEN) {
        sl_io_req r = {.file = 0, .offset = off, .len = READ_LEN, .dst = buf, .dst_cap = cap,
                       .tag = off};
        CHECK_MSG(sl_io_submit(io, &r, &err) == SL_OK, "%s", err.msg);
        sl_io_done d;
        CHECK(sl_io_wait(io, &d, &err) == SL_OK);
        CHECK_EQ_INT(d.status, SL_OK);
        const unsigned char *got = buf + (off - d.window_offset);
        for (uint64_t k = 0; k < READ_LEN; k++) bad += got[k] != pat_byte(off + k, SALT);
    }
    CHECK_EQ_INT(bad, 0);
    sl_aligned_free(buf);
}

static sl_io *open_with(const char *path, bool buffered, unsigned flags)
{
    sl_io_config cfg = {.backend = SL_IO_PREAD, .lanes = 2, .buffered = buffered,
                        .test_flags = flags};
    sl_io *io = NULL;
    sl_err err = {0};
    CHECK_MSG(sl_io_open(&io, &cfg, &path, 1, &err) == SL_OK, "%s", err.msg);
    return io;
}

TEST(refused_direct_leaves_no_pages)
{
    if (!drop_cache(g_path)) {
        printf("     (this kernel keeps the file's pages after POSIX_FADV_DONTNEED: not measured)\n");
        return;
    }
    sl_io *io = open_with(g_path, false, SL_IO_TEST_REFUSE_DIRECT);
    if (!io) return;
    const sl_io_info *in = sl_io_get_info(io);
    CHECK(!in->direct && in->direct_fell_back);
    CHECK_STR_CONTAINS(in->direct_reason, "POSIX_FADV_DONTNEED");
    CHECK(strchr(in->direct_reason, '\n') == NULL);
    read_all(io);
    sl_io_close(io);
    const long after = resident_pages(g_path);
    /* the open-time check reads no pages when refused; allow a few stray */
    CHECK_MSG(after >= 0 && after <= 16, "%ld of %llu pages resident after the fallback reads",
              after, (unsigned long long)(FILE_SIZE / 4096));

    /* the control: plain buffered reads (no fallback) keep the pages */
    CHECK(drop_cache(g_path));
    io = open_with(g_path, true, 0);
    if (!io) return;
    CHECK(!sl_io_get_info(io)->direct_fell_back);
    read_all(io);
    sl_io_close(io);
    const long kept = resident_pages(g_path);
    CHECK_MSG(kept >= (long)(FILE_SIZE / 4096 / 2), "%ld pages resident after buffered reads",
              kept);
}

TEST(tmpfs_is_not_read_direct)
{
    struct statfs sf;
    if (statfs("/dev/shm", &sf) != 0 || sf.f_type != 0x01021994 || access("/dev/shm", W_OK)) {
        printf("     (no writable tmpfs at /dev/shm: skipped)\n");
        return;
    }
    char *p = make_pattern_file("/dev/shm", FILE_SIZE, SALT);
    CHECK(p != NULL);
    if (!p) return;
    sl_io *io = open_with(p, false, 0);
    if (io) {
        const sl_io_info *in = sl_io_get_info(io);
        CHECK(!in->direct && in->direct_fell_back);
        CHECK_STR_CONTAINS(in->direct_reason, "tmpfs");
        read_all(io);
        sl_io_close(io);
    }
    unlink(p);
    free(p);
}

#endif

int main(void)
{
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    g_path = make_pattern_file(dir, FILE_SIZE, SALT);
    if (!g_path) {
        fprintf(stderr, "cannot write a test file in %s\n", dir);
        return 1;
    }
#ifdef __linux__
    RUN(refused_direct_leaves_no_pages);
    RUN(tmpfs_is_not_read_direct);
#else
    printf("     (Linux only: the page cache is not measured here)\n");
#endif
    unlink(g_path);
    free(g_path);
    return TEST_REPORT();
}
