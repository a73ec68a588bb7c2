/* file.c - POSIX implementation of file.h. */
#include "util/file.h"
#include "util/open_inputs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kind of file a mode describes, for messages. */
static const char *mode_kind(mode_t m)
{
    if (S_ISREG(m)) return "regular file";
    if (S_ISDIR(m)) return "directory";
    if (S_ISFIFO(m)) return "FIFO";
    if (S_ISCHR(m)) return "character device";
    if (S_ISBLK(m)) return "block device";
    if (S_ISSOCK(m)) return "socket";
    if (S_ISLNK(m)) return "symbolic link";
    return "special file";
}

static int not_regular(sl_err *err, const char *path, mode_t m)
{
    return sl_err_set(err, SL_EINVAL, "'%s' is a %s, not a regular file", path, mode_kind(m));
}

int sl_file_open_read(sl_file *f, const char *path, sl_err *err)
{
    f->fd = -1;
    f->size = 0;
    f->path = NULL;
    f->input = false;
    /* stat first: opening a device can have side effects, and a FIFO would
     * block until a writer comes; the open itself is non-blocking in case
     * the path changes in between, and fstat has the last word */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return not_regular(err, path, st.st_mode);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return sl_err_set(err, SL_EIO, "cannot open '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sl_err_set(err, SL_EIO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return not_regular(err, path, st.st_mode);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return sl_err_set(err, SL_EIO, "cannot open '%s': %s", path, strerror(e));
    }
    f->path = strdup(path);
    if (!f->path || !sl_open_inputs_add((uint64_t)st.st_dev, (uint64_t)st.st_ino, path)) {
        close(fd);
        free(f->path);
        f->path = NULL;
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    f->fd = fd;
    f->size = (uint64_t)st.st_size;
    f->input = true;
    f->dev = (uint64_t)st.st_dev;
    f->ino = (uint64_t)st.st_ino;
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
    if (f->fd >= 0 && f->input) sl_open_inputs_drop(f->dev, f->ino);
    f->input = false;
    f->fd = -1;
    free(f->path);
    f->path = NULL;
}

int sl_file_open_write(sl_file *f, const char *path, sl_err *err)
{
    f->fd = -1;
    f->size = 0;
    f->path = NULL;
    f->input = false;
    /* non-blocking: a FIFO without a reader fails (ENXIO) instead of
     * waiting for one; cleared again below */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0 && errno == ENXIO)
        return sl_err_set(err, SL_EIO, "cannot write '%s': it is a FIFO with no reader", path);
    if (fd < 0)
        return sl_err_set(err, SL_EIO, "cannot create '%s': %s", path, strerror(errno));
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return sl_err_set(err, SL_EIO, "cannot create '%s': %s", path, strerror(e));
    }
    f->path = strdup(path);
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
        if (n == 0) /* not for regular files; a device that takes nothing */
            return sl_err_set(err, SL_EIO, "write to '%s' failed: no bytes written", f->path);
        p += n;
        len -= (size_t)n;
        f->size += (uint64_t)n;
    }
    return SL_OK;
}

int sl_file_sync(sl_file *f, sl_err *err)
{
    if (fsync(f->fd) == 0 || errno == EINVAL || errno == EROFS) return SL_OK;
    return sl_err_set(err, SL_EIO, "writing '%s' failed: %s", f->path ? f->path : "?",
                      strerror(errno));
}

int sl_file_close_checked(sl_file *f, sl_err *err)
{
    int rc = SL_OK;
    /* Linux releases the descriptor even when close fails, EINTR included;
     * only a real error (EIO, ENOSPC, EDQUOT) is worth reporting */
    if (f->fd >= 0 && close(f->fd) != 0 && errno != EINTR)
        rc = sl_err_set(err, SL_EIO, "writing '%s' failed on close: %s",
                        f->path ? f->path : "?", strerror(errno));
    if (f->fd >= 0 && f->input) sl_open_inputs_drop(f->dev, f->ino);
    f->input = false;
    f->fd = -1;
    free(f->path);
    f->path = NULL;
    return rc;
}

static void id_from_stat(const struct stat *st, sl_file_id *id)
{
    id->exists = true;
    id->dev = (uint64_t)st->st_dev;
    id->ino = (uint64_t)st->st_ino;
    id->regular = S_ISREG(st->st_mode);
    id->stream = S_ISFIFO(st->st_mode) || S_ISCHR(st->st_mode);
    id->kind = mode_kind(st->st_mode);
}

int sl_file_identity(const char *path, sl_file_id *id, sl_err *err)
{
    memset(id, 0, sizeof *id);
    id->kind = "nothing";
    struct stat st;
    if (stat(path, &st) == 0) {
        id_from_stat(&st, id);
        return SL_OK;
    }
    if (errno == ENOENT) return SL_OK;
    return sl_err_set(err, SL_EIO, "cannot stat '%s': %s", path, strerror(errno));
}

void sl_file_fd_identity(int fd, sl_file_id *id)
{
    memset(id, 0, sizeof *id);
    id->kind = "nothing";
    struct stat st;
    if (fstat(fd, &st) == 0) id_from_stat(&st, id);
}

bool sl_file_id_same(const sl_file_id *a, const sl_file_id *b)
{
    return a->exists && b->exists && a->dev == b->dev && a->ino == b->ino;
}

/* Reads a stream (standard input) to its end, at most limit bytes. */
static int read_stream(int fd, const char *name, uint64_t limit, char **buf, size_t *len,
                       sl_err *err)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (!b) return sl_err_set(err, SL_ENOMEM, "out of memory reading %s", name);
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return sl_err_set(err, SL_ENOMEM, "out of memory reading %s (%zu bytes)", name,
                                  n);
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - 1 - n);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            free(b);
            return sl_err_set(err, SL_EIO, "cannot read %s: %s", name, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
        if ((uint64_t)n > limit) {
            free(b);
            return sl_err_set(err, SL_EINVAL, "%s holds more than %llu bytes, the limit for an "
                              "input text", name, (unsigned long long)limit);
        }
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return SL_OK;
}

int sl_file_read_all(const char *path, uint64_t limit, char **buf, size_t *len, sl_err *err)
{
    *buf = NULL;
    *len = 0;
    if (!strcmp(path, "-")) {
        struct stat st;
        if (fstat(0, &st) != 0)
            return sl_err_set(err, SL_EIO, "cannot read standard input: %s", strerror(errno));
        if (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode) ||
            (S_ISCHR(st.st_mode) && !isatty(0)))
            return sl_err_set(err, SL_EINVAL, "standard input is a %s; give a regular file, a "
                              "pipe or a terminal", mode_kind(st.st_mode));
        return read_stream(0, "standard input", limit, buf, len, err);
    }
    sl_file f;
    int rc = sl_file_open_read(&f, path, err);
    if (rc) return rc;
    if (f.size > limit || f.size > (uint64_t)SIZE_MAX - 1) {
        rc = sl_err_set(err, SL_EINVAL, "'%s' has %llu bytes, more than %llu, the limit for an "
                        "input text", path, (unsigned long long)f.size,
                        (unsigned long long)limit);
        sl_file_close(&f);
        return rc;
    }
    char *b = malloc((size_t)f.size + 1);
    if (!b) {
        sl_file_close(&f);
        return sl_err_set(err, SL_ENOMEM, "out of memory reading '%s' (%llu bytes)", path,
                          (unsigned long long)f.size);
    }
    rc = sl_file_pread_full(&f, b, (size_t)f.size, 0, err);
    if (rc) {
        free(b);
        sl_file_close(&f);
        return rc;
    }
    b[f.size] = '\0';
    *buf = b;
    *len = (size_t)f.size;
    sl_file_close(&f);
    return SL_OK;
}

int sl_file_temp_beside(const char *final_path, char **tmp_path, char **dest, sl_err *err)
{
    *tmp_path = NULL;
    *dest = NULL;
    struct stat st;
    mode_t mode;
    char *target = NULL;
    if (stat(final_path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return sl_err_set(err, SL_EINVAL, "'%s' is a %s; this output must be a regular file "
                              "(it is written beside and renamed over)", final_path,
                              mode_kind(st.st_mode));
        mode = st.st_mode & 07777;
        target = realpath(final_path, NULL); /* a symlink: replace what it points to */
    } else {
        const mode_t um = umask(0);
        umask(um);
        mode = 0666 & ~um;
    }
    if (!target) target = strdup(final_path);
    if (!target) return sl_err_set(err, SL_ENOMEM, "out of memory");
    const char *slash = strrchr(target, '/');
    const size_t dir_len = slash ? (size_t)(slash - target) + 1 : 0;
    const char *base = slash ? slash + 1 : target;
    const size_t need = dir_len + 1 + strlen(base) + sizeof ".tmp-XXXXXX";
    char *tmp = malloc(need);
    if (!tmp) {
        free(target);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    snprintf(tmp, need, "%.*s.%s.tmp-XXXXXX", (int)dir_len, target, base);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        free(target);
        return sl_err_set(err, SL_EIO, "cannot create a temporary file beside '%s': %s",
                          final_path, strerror(e));
    }
    if (fchmod(fd, mode) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        free(target);
        return sl_err_set(err, SL_EIO, "cannot create a temporary file beside '%s': %s",
                          final_path, strerror(e));
    }
    *tmp_path = tmp;
    *dest = target;
    return SL_OK;
}

FILE *sl_file_fopen_write(const char *path, sl_err *err)
{
    sl_file f;
    if (sl_file_open_write(&f, path, err)) return NULL;
    FILE *s = fdopen(f.fd, "w");
    if (!s) {
        sl_err_set(err, SL_EIO, "cannot create '%s': %s", path, strerror(errno));
        sl_file_close(&f);
        return NULL;
    }
    f.fd = -1; /* the stream owns it now */
    sl_file_close(&f);
    return s;
}

int sl_file_rename(const char *from, const char *to, sl_err *err)
{
    if (rename(from, to) == 0) return SL_OK;
    return sl_err_set(err, SL_EIO, "cannot rename '%s' to '%s': %s", from, to, strerror(errno));
}

void sl_file_remove(const char *path)
{
    if (path) unlink(path);
}

bool sl_file_stamp(const char *path, uint64_t *size, int64_t *mtime_s, int64_t *mtime_ns)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return false;
#if defined(__APPLE__) /* macOS names the modification time st_mtimespec */
    const struct timespec mt = sb.st_mtimespec;
#else
    const struct timespec mt = sb.st_mtim;
#endif
    *size = (uint64_t)sb.st_size;
    *mtime_s = (int64_t)mt.tv_sec;
    *mtime_ns = (int64_t)mt.tv_nsec;
    return true;
}

void sl_file_sync_dir(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int sl_file_read_head(const char *path, void *buf, size_t cap, size_t *got, sl_err *err)
{
    *got = 0;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return not_regular(err, path, st.st_mode);
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return sl_err_set(err, SL_EIO, "cannot open '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        close(fd);
        return sl_err_set(err, SL_EIO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return not_regular(err, path, st.st_mode);
    }
    uint8_t *p = buf;
    size_t n = 0;
    while (n < cap) {
        const ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            const int e = errno;
            close(fd);
            return sl_err_set(err, SL_EIO, "cannot read '%s': %s", path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    *got = n;
    return SL_OK;
}

unsigned sl_file_guard_std_fds(void)
{
    unsigned closed = 0;
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        closed |= 1u << fd;
        int nfd = open("/dev/null", O_RDONLY);
        if (nfd >= 0 && nfd != fd) {
            dup2(nfd, fd);
            close(nfd);
        }
    }
    return closed;
}

bool sl_file_set_direct(sl_file *f, bool on)
{
#ifdef O_DIRECT
    int fl = fcntl(f->fd, F_GETFL);
    if (fl < 0) return false;
    int want = on ? fl | O_DIRECT : fl & ~O_DIRECT;
    return want == fl || fcntl(f->fd, F_SETFL, want) == 0;
#elif defined(F_NOCACHE)
    /* macOS: no O_DIRECT; F_NOCACHE keeps the reads out of the cache */
    return fcntl(f->fd, F_NOCACHE, on ? 1 : 0) != -1;
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
