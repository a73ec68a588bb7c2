/* io_files.c - opening the files behind an io handle, and choosing how.
 *
 * Owns: the alignment direct reads need (statx STATX_DIOALIGN when the
 * kernel reports it, else 4096 confirmed by a probe read), the decision
 * direct / buffered fallback, and each lane's descriptors. Must not know
 * about queues or backends. */
#include "io/io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_ALIGN 4096u

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* Alignment the kernel reports for direct reads of path: offset and memory.
 * Returns 1 if reported, 0 if the kernel does not say, -1 if it says direct
 * I/O is not supported for this file. */
static int query_dio_align(const char *path, uint32_t *off_align, uint32_t *mem_align)
{
#ifdef STATX_DIOALIGN
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        if (sx.stx_dio_offset_align == 0) return -1;
        *off_align = sx.stx_dio_offset_align;
        *mem_align = sx.stx_dio_mem_align ? sx.stx_dio_mem_align : sx.stx_dio_offset_align;
        return 1;
    }
#else
    (void)path; (void)off_align; (void)mem_align;
#endif
    return 0;
}

/* Tries O_DIRECT on path. Returns SL_OK if usable, SL_EUNSUPPORTED with a
 * reason if the filesystem refuses it, SL_EIO for other open failures. */
static int probe_direct(sl_io *io, const char *path, bool reported, uint32_t align,
                        char *reason, size_t cap, sl_err *err)
{
    if (io->cfg.test_flags & SL_IO_TEST_REFUSE_DIRECT) {
        snprintf(reason, cap, "O_DIRECT refused for '%s' (test hook)", path);
        return SL_EUNSUPPORTED;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0) {
        int e = errno;
        if (e == EINVAL || e == EOPNOTSUPP) {
            snprintf(reason, cap, "O_DIRECT refused for '%s': %s", path, strerror(e));
            return SL_EUNSUPPORTED;
        }
        return sl_err_set(err, SL_EIO, "cannot open '%s': %s", path, strerror(e));
    }
    int rc = SL_OK;
    if (!reported) {
        /* The kernel did not tell the alignment: confirm the assumed one by
         * reading one aligned block (EINVAL means it is wrong or O_DIRECT
         * is accepted at open but not honoured for reads). */
        void *buf = NULL;
        if (posix_memalign(&buf, DEFAULT_ALIGN, align) != 0) {
            close(fd);
            return sl_err_set(err, SL_ENOMEM, "out of memory for a probe read");
        }
        ssize_t n;
        do n = pread(fd, buf, align, 0); while (n < 0 && errno == EINTR);
        if (n < 0) {
            int e = errno;
            if (e == EINVAL) {
                snprintf(reason, cap, "O_DIRECT probe read of %u bytes from '%s' failed: %s",
                         align, path, strerror(e));
                rc = SL_EUNSUPPORTED;
            } else {
                rc = sl_err_set(err, SL_EIO, "probe read of '%s' failed: %s", path, strerror(e));
            }
        }
        free(buf);
    }
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
        io->files[i].path = dup_str(paths[i]);
        if (!io->files[i].path) return sl_err_set(err, SL_ENOMEM, "out of memory");
        io->files[i].size = (uint64_t)st.st_size;

        uint32_t fa = DEFAULT_ALIGN, fm = DEFAULT_ALIGN;
        int q = query_dio_align(paths[i], &fa, &fm);
        if (q == 1 && ((fa & (fa - 1)) || (fm & (fm - 1)) || fa > 65536 || fm > 65536)) {
            fa = fm = DEFAULT_ALIGN; /* implausible report: use the safe default */
            q = 0;
        }
        if (q < 0) {
            fa = fm = DEFAULT_ALIGN;
            if (direct) {
                snprintf(reason, sizeof reason,
                         "the filesystem of '%s' reports no direct I/O support", paths[i]);
                direct = false;
            }
        }
        if (fa > align) align = fa;
        if (fm > mem_align) mem_align = fm;
        if (direct) {
            int rc = probe_direct(io, paths[i], q == 1, fa, reason, sizeof reason, err);
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

void sl_io_files_close(sl_io *io)
{
    if (!io->files) return;
    for (uint32_t i = 0; i < io->n_files; i++) free(io->files[i].path);
    free(io->files);
    io->files = NULL;
    io->n_files = 0;
}

int sl_io_lane_open_fds(sl_io *io, io_lane *ln, sl_err *err)
{
    if (!ln->fds) {
        ln->fds = malloc(io->n_files * sizeof *ln->fds);
        if (!ln->fds) return sl_err_set(err, SL_ENOMEM, "out of memory for lane descriptors");
        for (uint32_t i = 0; i < io->n_files; i++) ln->fds[i] = -1;
    }
    int flags = O_RDONLY | O_CLOEXEC | (io->info.direct ? O_DIRECT : 0);
    for (uint32_t i = 0; i < io->n_files; i++) {
        int fd = open(io->files[i].path, flags);
        if (fd < 0)
            return sl_err_set(err, SL_EIO, "io lane %u cannot open '%s': %s", ln->id,
                              io->files[i].path, strerror(errno));
        /* After a fallback, readahead would read bytes nobody asked for and
         * keep them cached: say the access is random. */
        if (io->info.direct_fell_back) posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
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
