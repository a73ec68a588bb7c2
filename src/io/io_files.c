/* io_files.c - opening the files behind an io handle, and choosing how.
 *
 * Owns: the alignment direct reads need (statx STATX_DIOALIGN when the
 * kernel reports it, else 4096 confirmed by a probe read), the check that
 * a direct read returns what a buffered read does, the decision direct /
 * buffered fallback, and each lane's descriptors. Must not know
 * about queues or backends. */
#include "io/io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif

#define DEFAULT_ALIGN 4096u

const char sl_io_direct_flag[] = "O_DIRECT";
const char sl_io_direct_word[] = "direct";

/* Opens path read-only for direct reads: O_DIRECT where it exists (Linux,
 * Android, the BSDs); on macOS, which has none, a plain descriptor with
 * F_NOCACHE (reads bypass the cache, no alignment rule). -1 and errno on
 * failure. */
static int open_direct(const char *path)
{
#if defined(O_DIRECT)
    return open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
#elif defined(F_NOCACHE)
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && fcntl(fd, F_NOCACHE, 1) == -1) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
#else
    (void)path;
    errno = EINVAL; /* no direct reads on this platform: buffered */
    return -1;
#endif
}

/* Alignment the kernel reports for direct reads of path: offset and memory.
 * Returns 1 if reported, 0 if the kernel does not say (or says 0, see
 * below): the open-time probe decides then. */
static int query_dio_align(const char *path, uint32_t *off_align, uint32_t *mem_align)
{
#ifdef STATX_DIOALIGN
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        /* 0 means no direct I/O; but a translation layer that copies the
         * mask and not the fields (qemu-user 7.2) says 0 too, so 0 only
         * means "ask the probe", which refuses where O_DIRECT fails */
        if (sx.stx_dio_offset_align == 0) return 0;
        *off_align = sx.stx_dio_offset_align;
        *mem_align = sx.stx_dio_mem_align ? sx.stx_dio_mem_align : sx.stx_dio_offset_align;
        return 1;
    }
#else
    (void)path; (void)off_align; (void)mem_align;
#endif
    return 0;
}

/* Bytes the open-time check compares (one window at offset 0). */
#define CHECK_WINDOW (64u * 1024u)

/* One direct read of the first window of fd (opened O_DIRECT) compared
 * with a buffered read of the same bytes: some storage (Android FUSE
 * mounts among them) accepts O_DIRECT and returns wrong data. Returns
 * SL_OK if they agree, SL_EUNSUPPORTED with a reason if the direct read is
 * refused (EINVAL: the alignment is wrong, or O_DIRECT is accepted at open
 * and not honoured) or returns other bytes, SL_EIO / SL_ENOMEM otherwise. */
static int check_direct_read(sl_io *io, int fd, const char *path, uint32_t align, char *reason,
                             size_t cap, sl_err *err)
{
    const size_t win = CHECK_WINDOW > align ? CHECK_WINDOW / align * align : align;
    void *dbuf = NULL;
    unsigned char *bbuf = malloc(win);
    if (!bbuf || posix_memalign(&dbuf, align > DEFAULT_ALIGN ? align : DEFAULT_ALIGN, win) != 0) {
        free(bbuf);
        return sl_err_set(err, SL_ENOMEM, "out of memory for the direct-read check");
    }
    int rc = SL_OK;
    ssize_t n;
    do n = pread(fd, dbuf, win, 0); while (n < 0 && errno == EINTR);
    if (n < 0) {
        int e = errno;
        if (e == EINVAL) {
            snprintf(reason, cap, "O_DIRECT probe read of %zu bytes from '%s' failed: %s", win,
                     path, strerror(e));
            rc = SL_EUNSUPPORTED;
        } else {
            rc = sl_err_set(err, SL_EIO, "probe read of '%s' failed: %s", path, strerror(e));
        }
    } else {
        if (io->has_fault) sl_io_fault_direct_check(&io->fault, dbuf, n);
        int bfd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t m = -1, got = 0;
        if (bfd >= 0) {
            while (got < n) {
                do m = pread(bfd, bbuf + got, (size_t)(n - got), got); while (m < 0 && errno == EINTR);
                if (m <= 0) break;
                got += m;
            }
            close(bfd);
        }
        if (bfd < 0 || m < 0) {
            rc = sl_err_set(err, SL_EIO, "cannot read '%s' for the direct-read check: %s", path,
                            strerror(errno));
        } else if (got != n || memcmp(dbuf, bbuf, (size_t)n) != 0) {
            snprintf(reason, cap,
                     "a direct read of '%s' returned other bytes than a buffered read of the "
                     "same %zd bytes (O_DIRECT not trusted)",
                     path, n);
            rc = SL_EUNSUPPORTED;
        }
    }
    free(dbuf);
    free(bbuf);
    return rc;
}

/* The file systems where O_DIRECT is accepted and cannot be trusted to
 * keep pages out of memory, named for the report, or NULL. FUSE (Android's
 * /sdcard and shared storage): the daemon decides whether a direct read
 * bypasses the cache, and many go through it, so the probe read cannot
 * tell; buffered reads with POSIX_FADV_DONTNEED are what bounds the cache
 * there. tmpfs (and ramfs): the file is memory already, so streaming it
 * saves nothing and a direct read is a copy like any other. */
static const char *untrusted_direct_fs(const char *path)
{
#ifdef __linux__
    struct statfs sf;
    if (statfs(path, &sf) != 0) return NULL; /* open reports the error */
    switch ((unsigned long)sf.f_type) {
    case 0x65735546ul: return "a FUSE file system (direct reads may go through its page cache)";
    case 0x01021994ul: return "tmpfs (the file is in memory already)";
    case 0x858458f6ul: return "ramfs (the file is in memory already)";
    default: return NULL;
    }
#else
    (void)path;
    return NULL;
#endif
}

/* Tries O_DIRECT on path: open, then the direct-read check (which also
 * confirms the alignment when the kernel did not report one). Returns
 * SL_OK if usable, SL_EUNSUPPORTED with a reason if the filesystem refuses
 * it or its direct reads cannot be trusted, SL_EIO for other failures. */
static int probe_direct(sl_io *io, const char *path, uint32_t align, char *reason, size_t cap,
                        sl_err *err)
{
    if (io->cfg.test_flags & SL_IO_TEST_REFUSE_DIRECT) {
        snprintf(reason, cap, "O_DIRECT refused for '%s' (test hook)", path);
        return SL_EUNSUPPORTED;
    }
    const char *fs = untrusted_direct_fs(path);
    if (fs) {
        snprintf(reason, cap, "O_DIRECT is not used on %s ('%s')", fs, path);
        return SL_EUNSUPPORTED;
    }
    int fd = open_direct(path);
    if (fd < 0) {
        int e = errno;
        if (e == EINVAL || e == EOPNOTSUPP) {
            snprintf(reason, cap, "O_DIRECT refused for '%s': %s", path, strerror(e));
            return SL_EUNSUPPORTED;
        }
        return sl_err_set(err, SL_EIO, "cannot open '%s': %s", path, strerror(e));
    }
    int rc = check_direct_read(io, fd, path, align, reason, cap, err);
    close(fd);
    return rc;
}

int sl_io_files_open(sl_io *io, const char *const *paths, uint32_t n, sl_err *err)
{
    io->files = calloc(n, sizeof *io->files);
    if (!io->files) return sl_err_set(err, SL_ENOMEM, "out of memory for %u io files", n);
    io->n_files = n;
    uint32_t align = 512, mem_align = 512;
    bool direct = !io->cfg.buffered;
    char reason[256] = "";
    for (uint32_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0)
            return sl_err_set(err, SL_EIO, "cannot open '%s': %s", paths[i], strerror(errno));
        if (!S_ISREG(st.st_mode))
            return sl_err_set(err, SL_EINVAL, "'%s' is not a regular file", paths[i]);
        io->files[i].path = strdup(paths[i]);
        if (!io->files[i].path) return sl_err_set(err, SL_ENOMEM, "out of memory");
        io->files[i].size = (uint64_t)st.st_size;

        uint32_t fa = DEFAULT_ALIGN, fm = DEFAULT_ALIGN;
        int q = query_dio_align(paths[i], &fa, &fm);
        if (q == 1 && ((fa & (fa - 1)) || (fm & (fm - 1)) || fa > 65536 || fm > 65536)) {
            fa = fm = DEFAULT_ALIGN; /* implausible report: use the safe default */
            q = 0;
        }
        if (fa > align) align = fa;
        if (fm > mem_align) mem_align = fm;
        if (direct) {
            int rc = probe_direct(io, paths[i], fa, reason, sizeof reason, err);
            if (rc == SL_EUNSUPPORTED) direct = false;
            else if (rc) return rc;
        }
    }
    io->info.align = align;
    io->info.mem_align = mem_align;
    io->info.direct = direct;
    if (!direct && !io->cfg.buffered) {
        io->info.direct_fell_back = true;
        snprintf(io->info.direct_reason, sizeof io->info.direct_reason,
                 "%.200s; using buffered reads with POSIX_FADV_DONTNEED", reason);
    }
    return SL_OK;
}

int sl_io_lane_open_fds(sl_io *io, io_lane *ln, sl_err *err)
{
    if (!ln->fds) {
        ln->fds = malloc(io->n_files * sizeof *ln->fds);
        if (!ln->fds) return sl_err_set(err, SL_ENOMEM, "out of memory for lane descriptors");
        for (uint32_t i = 0; i < io->n_files; i++) ln->fds[i] = -1;
    }
    for (uint32_t i = 0; i < io->n_files; i++) {
        int fd = io->info.direct ? open_direct(io->files[i].path)
                                 : open(io->files[i].path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return sl_err_set(err, SL_EIO, "io lane %u cannot open '%s': %s", ln->id,
                              io->files[i].path, strerror(errno));
        /* After a fallback, readahead would read bytes nobody asked for and
         * keep them cached: say the access is random. */
#if defined(POSIX_FADV_RANDOM)
        if (io->info.direct_fell_back) posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
#elif defined(F_RDAHEAD) /* macOS: no posix_fadvise; readahead off instead */
        if (io->info.direct_fell_back) fcntl(fd, F_RDAHEAD, 0);
#endif
        ln->fds[i] = fd;
    }
    return SL_OK;
}

void sl_io_lane_close_fds(sl_io *io, io_lane *ln)
{
    if (!ln->fds) return;
    for (uint32_t i = 0; i < io->n_files; i++)
        if (ln->fds[i] >= 0) close(ln->fds[i]);
    free(ln->fds);
    ln->fds = NULL;
}
