/* file.c - POSIX implementation of file.h. */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

int sl_file_open_read(sl_file *f, const char *path, sl_err *err)
{
    f->fd = -1;
    f->size = 0;
    f->path = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_err_set(err, SL_EIO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sl_err_set(err, SL_EIO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sl_err_set(err, SL_EINVAL, "'%s' is not a regular file", path);
    }
    f->path = dup_str(path);
    if (!f->path) {
        close(fd);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    f->fd = fd;
    f->size = (uint64_t)st.st_size;
    return SL_OK;
}

int sl_file_pread_full(const sl_file *f, void *dst, size_t len, uint64_t offset,
                       sl_err *err)
{
    uint8_t *p = dst;
    while (len > 0) {
        ssize_t n = pread(f->fd, p, len, (off_t)offset);
        if (n < 0) {
            if (errno == EINTR) continue;
            return sl_err_set(err, SL_EIO, "read of %zu bytes at offset %llu in '%s' failed: %s",
                              len, (unsigned long long)offset, f->path, strerror(errno));
        }
        if (n == 0)
            return sl_err_set(err, SL_EFORMAT,
                              "unexpected end of file in '%s' at offset %llu (%zu bytes missing)",
                              f->path, (unsigned long long)offset, len);
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return SL_OK;
}

void sl_file_close(sl_file *f)
{
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    free(f->path);
    f->path = NULL;
}

int sl_file_open_write(sl_file *f, const char *path, sl_err *err)
{
    f->fd = -1;
    f->size = 0;
    f->path = NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return sl_err_set(err, SL_EIO, "cannot create '%s': %s", path, strerror(errno));
    f->path = dup_str(path);
    if (!f->path) {
        close(fd);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    f->fd = fd;
    return SL_OK;
}

int sl_file_write_full(sl_file *f, const void *src, size_t len, sl_err *err)
{
    const uint8_t *p = src;
    while (len > 0) {
        ssize_t n = write(f->fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return sl_err_set(err, SL_EIO, "write to '%s' failed: %s", f->path, strerror(errno));
        }
        p += n;
        len -= (size_t)n;
        f->size += (uint64_t)n;
    }
    return SL_OK;
}

bool sl_file_set_direct(sl_file *f, bool on)
{
#ifdef O_DIRECT
    int fl = fcntl(f->fd, F_GETFL);
    if (fl < 0) return false;
    int want = on ? fl | O_DIRECT : fl & ~O_DIRECT;
    return want == fl || fcntl(f->fd, F_SETFL, want) == 0;
#else
    (void)f;
    return !on;
#endif
}

int sl_file_map_read(const char *path, void **addr, uint64_t *size, sl_err *err)
{
    *addr = NULL;
    *size = 0;
    sl_file f;
    int rc = sl_file_open_read(&f, path, err);
    if (rc) return rc;
    if (f.size == 0 || f.size > SIZE_MAX) {
        sl_file_close(&f);
        return sl_err_set(err, SL_EINVAL, "cannot map '%s': size %llu", path,
                          (unsigned long long)f.size);
    }
    void *p = mmap(NULL, (size_t)f.size, PROT_READ, MAP_SHARED, f.fd, 0);
    const int e = errno;
    const uint64_t sz = f.size;
    sl_file_close(&f);
    if (p == MAP_FAILED) return sl_err_set(err, SL_EIO, "cannot map '%s': %s", path, strerror(e));
    *addr = p;
    *size = sz;
    return SL_OK;
}

void sl_file_unmap(void *addr, uint64_t size)
{
    if (addr) munmap(addr, (size_t)size);
}
